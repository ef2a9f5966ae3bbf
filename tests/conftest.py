"""Session-wide test set-up: offline, deterministic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from needs import missing

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the project; tests using it skip where it is absent (and fail under CI)."""
    if not SHARED_DATA.is_dir():
        missing("../shared/data is not present in this checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def vist_dir(shared_data: Path) -> Path:
    d = shared_data / "vist"
    if not d.is_dir():
        missing("../shared/data/vist is not present")
    return d
