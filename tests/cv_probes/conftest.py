"""A small real-image manifest of the CV-Probes tests (the tiny models are ``tests/conftest.py``'s; the manifest's
rows and writer are ``tests/support/probe_manifest.py``'s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.probe_manifest import write_manifest


@pytest.fixture()
def manifest(tmp_path) -> Path:
    return write_manifest(tmp_path / "data")
