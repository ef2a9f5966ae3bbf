"""Fixtures of the VIST tests (helpers live in ``tests.support.vist_fixtures``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.vist_fixtures import make_sis


@pytest.fixture
def sis_file(tmp_path: Path) -> Path:
    """Two albums; A1 has two stories (one annotated out of order), A2 a 4-storylet story."""
    return make_sis(tmp_path)
