"""CV-Probes reads a chunk's images ahead of the model, and hands a model that decodes JPEGs itself the bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from connote.cv_probes.task import load_chunk_images, run_probe
from connote.media.images import load_image
from connote.models import load_model
from tests.support.probe_manifest import ROWS, write_manifest
from tests.support.tiny_models import random_image


def jpeg_manifest(folder: Path) -> tuple[Path, dict[str, str]]:
    """The tests' manifest with images 1-3 as JPEG files (4 and 5 stay PNG), and each item's image file."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for row in ROWS:
        k = int(row[1][3])
        if k <= 3:
            random_image(k, size=(96, 72)).save(folder / f"img{k}.jpg", quality=90)
            row = (row[0], f"img{k}.jpg", *row[2:])
        rows.append(row)
    return write_manifest(folder, rows=rows), {row[0]: row[1] for row in rows}


class Kinds:
    """A matcher that decodes JPEGs itself (as the engine's device path does): records what it was given."""

    takes_encoded_images = True

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def describe(self) -> dict:
        return {"backend": "kinds"}

    def match_probability(self, images, captions, pairs):
        self.kinds.extend(type(im).__name__ for im in images)
        return [0.5 for _ in pairs]


def test_a_model_that_decodes_jpegs_gets_their_bytes_and_the_rest_decoded(tmp_path: Path) -> None:
    model = Kinds()
    manifest, _ = jpeg_manifest(tmp_path / "d")
    run_probe(manifest, out=tmp_path / "run", model_obj=model, progress=False, pairs_per_chunk=4)
    assert sorted(model.kinds) == ["Image", "Image", "bytes", "bytes", "bytes"]  # each image once
    assert load_chunk_images([], False, None) == ([], {}, {})


def test_blip_on_jpeg_bytes_scores_what_it_scores_on_decoded_photos(tiny_blip_dir: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny BLIP's device path (preprocess=auto) given the JPEGs' bytes by the run, as on a GPU (here told
    so: on a CPU the task decodes them), against the same model on the photos load_image decodes: the same
    p(match) for every pair (torchvision's decoder and Pillow make the same pixels on a CPU)."""
    from connote.models.engine import TensorMatcher

    manifest, image_of = jpeg_manifest(tmp_path / "d")
    model = load_model(f"hf-blip-itm:{tiny_blip_dir}")
    assert not model.takes_encoded_images  # on a CPU
    given: list[str] = []
    real = model.match_probability

    def recording(images, captions, pairs):
        given.extend(type(im).__name__ for im in images)
        return real(images, captions, pairs)

    monkeypatch.setattr(TensorMatcher, "takes_encoded_images", property(lambda self: True))
    monkeypatch.setattr(model, "match_probability", recording)
    run_probe(manifest, out=tmp_path / "run", model_obj=model, progress=False, pairs_per_chunk=4)
    monkeypatch.undo()
    assert sorted(given) == ["Image", "Image", "bytes", "bytes", "bytes"]
    rows = [json.loads(line) for line in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert len(rows) == 10
    for row in rows:
        photo = load_image(manifest.parent / image_of[row["item_id"]])
        assert isinstance(photo, Image.Image)
        want = model.match_probability([photo], [row["caption"]], [(0, 0)])[0]
        assert abs(row["p_match"] - want) <= 1e-6, (row["item_id"], row["p_match"], want)
