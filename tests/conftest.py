"""Session-wide test set-up: offline, deterministic."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    # one torch thread per worker process (set before anything imports torch): the workers, one per core
    # (addopts -n auto), share the cores
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")

from tests.support.tiny_models import BUILDERS  # noqa: E402

#: Plugins every test folder shares: what a missing requirement does (skip; fail under CI=true), the fake
#: OpenAI-compatible server (``serve``) and the Potato/Chromium studies (one session fixture, served once, used
#: by tests/collect/ and the papers' study tests).
pytest_plugins = ["tests.support.needs", "tests.support.openai_server", "tests.support.potato_driver"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the project; tests using it skip where it is absent (and fail under CI)."""
    from tests.support.needs import (
        missing,  # (imported here: a plugin imported before pytest loads it is not rewritten)
    )

    if not SHARED_DATA.is_dir():
        missing("../shared/data is not present in this checkout")
    return SHARED_DATA


@pytest.fixture(scope="session")
def vist_dir(shared_data: Path) -> Path:
    d = shared_data / "vist"
    if not d.is_dir():
        from tests.support.needs import missing

        missing("../shared/data/vist is not present")
    return d


@pytest.fixture(scope="session")
def arel_format_files(vist_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(predictions in AREL's ``{album_id: ["  " + story]}`` layout, challenge-format gold) built from real text.

    The example file's human stories, read in place: of the first 100 albums (file order) with at least two
    stories, each album's first story is the hypothesis (two leading spaces, as AREL's released stories have) and
    its other stories are the gold, so a hypothesis is never among its own references.
    """
    human = json.loads((vist_dir / "example-submission-file.test.json").read_text(encoding="utf-8"))
    by_album: dict[str, list[dict]] = {}
    for s in human["output_stories"]:
        by_album.setdefault(s["album_id"], []).append(s)
    albums = [a for a, stories in by_album.items() if len(stories) >= 2][:100]
    out = tmp_path_factory.mktemp("arel-format")
    pred, gold = out / "prediction_test.json", out / "gold.json"
    pred.write_text(json.dumps({a: ["  " + by_album[a][0]["story_text_normalized"]] for a in albums}),
                    encoding="utf-8")
    gold.write_text(json.dumps({**human, "output_stories": [s for a in albums for s in by_album[a][1:]]}),
                    encoding="utf-8")
    return pred, gold


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory) -> dict[str, Path]:
    """Every image-text matching backend's tiny random model, saved once per session: ``{backend: folder}``."""
    root = tmp_path_factory.mktemp("tiny")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="session")
def tiny_blip_dir(tiny_dirs) -> Path:
    return tiny_dirs["hf-blip-itm"]
