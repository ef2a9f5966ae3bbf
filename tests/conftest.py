"""Session-wide test set-up: offline, deterministic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the project; tests using it skip where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present in this checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def vist_dir(shared_data: Path) -> Path:
    d = shared_data / "vist"
    if not d.is_dir():
        pytest.skip("../shared/data/vist is not present")
    return d
