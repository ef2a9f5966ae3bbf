"""A probe run goes on past images that are symlink loops, directories or 16-bit: each is one item's result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from connote.cv_probes.task import run_probe


class MeanGreyMatcher:
    """p(match) = the image's mean grey level / 255: shows what the model was given."""

    def describe(self) -> dict:
        return {"backend": "mean-grey", "version": 1}

    def match_probability(self, images, captions, pairs):  # noqa: ANN001, ANN201
        return [float(np.asarray(images[i].convert("L")).mean() / 255) for i, _ in pairs]


def test_bad_images_are_item_errors_and_16_bit_is_scaled(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    Image.new("RGB", (8, 8), (128, 128, 128)).save(data / "ok.png")
    Image.fromarray(np.full((8, 8), 16448, dtype=np.uint16)).save(data / "g16.png")  # 64 of 255
    (data / "loop-a.png").symlink_to(data / "loop-b.png")
    (data / "loop-b.png").symlink_to(data / "loop-a.png")
    (data / "folder.png").mkdir()
    manifest = data / "m.csv"
    manifest.write_text("item_id,image,image_kind,caption,caption_kind\n"
                        "ok,ok.png,SG,a,SG\nloop,loop-a.png,SG,b,SG\ndir,folder.png,PG,c,SG\n"
                        "deep,g16.png,PG,d,PG\n")
    run_probe(manifest, out=tmp_path / "run", model_obj=MeanGreyMatcher(), progress=False)
    rows = {r["item_id"]: r for r in map(json.loads, (tmp_path / "run" / "items.jsonl").read_text().splitlines())}
    assert set(rows) == {"ok", "loop", "dir", "deep"}
    assert "Too many levels of symbolic links" in rows["loop"]["error"]
    assert "is a directory, not an image file" in rows["dir"]["error"]
    assert rows["ok"]["error"] is None and abs(rows["ok"]["p_match"] - 128 / 255) < 1e-6
    assert rows["deep"]["error"] is None and abs(rows["deep"]["p_match"] - 64 / 255) < 1e-6  # was 1.0 (white)
