"""Model specs are checked before anything loads: each mistake is one line and exit status 2."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from connote.cli import main  # noqa: E402
from tests.support import tiny_models


@pytest.fixture(scope="module")
def manifest(tmp_path_factory) -> Path:
    from PIL import Image

    root = tmp_path_factory.mktemp("specs")
    Image.new("RGB", (32, 32), (200, 30, 30)).save(root / "a.jpg")
    path = root / "p.csv"
    path.write_text("item_id,image,image_kind,caption,caption_kind\na,a.jpg,SG,a man begs,SG\n")
    return path


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory) -> Path:
    return tiny_models.tiny_clip(tmp_path_factory.mktemp("clip") / "m")


CASES = [
    ("hf-clip:{clip}?threshhold=0.1", "unknown option 'threshhold' for model backend hf-clip; valid options:"),
    ("hf-clip:{clip}?batch_size=abc", "model option batch_size='abc' of hf-clip: expected an integer"),
    ("hf-clip:{clip}?threshold=high", "model option threshold='high' of hf-clip: expected a number"),
    ("hf-clip:{clip}?dtype=fp17", "unknown dtype 'fp17'"),
    ("hf-clip:{clip}?device=cuda", "torch sees no CUDA device"),
    ("hf-blip-itm:{clip}", "could not load model hf-blip-itm:"),  # CLIP weights for the BLIP backend
    ("hf-blip-itm:{root}/nowhere", "no such local folder"),
    ("hf-blip-itm:./blipp", "no such local folder"),
    ("hf-blip-itm:{root}/p.csv", "expected a folder, found a file"),
    ("hf-blip-itm:Salesforce/not-cached-here", "not in the Hugging Face cache, and the hub is offline"),
    ("no-such-backend", "unknown model 'no-such-backend'; valid models:"),
    ("git-llava:{root}/gone", "no such local folder"),
]


@pytest.mark.parametrize(("spec", "message"), CASES)
def test_bad_spec_is_one_line_and_exit_2(spec, message, manifest, clip_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = spec.format(clip=clip_dir, root=manifest.parent)
    started = time.monotonic()
    code = main(["probe", "--data", str(manifest), "--model", spec, "--out", str(tmp_path / "run"), "-q"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert time.monotonic() - started < 60  # no minute of hub retries (a sanity bound, not a benchmark)


def test_local_looking_path_beside_an_existing_folder(tmp_path, monkeypatch, manifest, capsys) -> None:
    """``models/blipp`` next to a ``models/`` folder is a local path, not a hub id ``org/name``."""
    (tmp_path / "models").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["probe", "--data", str(manifest), "--model", "hf-blip-itm:models/blipp", "--out",
                 str(tmp_path / "run"), "-q"]) == 2
    assert "'models/blipp' for hf-blip-itm: no such local folder" in capsys.readouterr().err
