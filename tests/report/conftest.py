"""Real run folders for the report tests, built once per session by the real commands, in-process.

A tiny random BLIP (built from a config, loaded by ``from_pretrained``) scores a 10-pair manifest of
random images with human votes (so Table 5 has Pearson r values and Table 4 a Human row), with original
and simplified captions, and explains 4 of its pairs with MM-SHAP (a small call budget keeps it fast).
A labels.csv in the format ``connote collect import`` writes stands for a human evaluation.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import tiny_models  # noqa: E402

from connote.cli import main  # noqa: E402

ROWS = [
    # item_id, image, image_kind, caption, simplified, caption_kind, verb, votes, label
    ("i1-sg", "img1.png", "SG", "a man begs on the street", "man begs", "SG", "begs", "1;1;1", ""),
    ("i1-pg", "img1.png", "SG", "a man sits on the street", "man sits", "PG", "sits", "1;1;0", ""),
    ("i2-sg", "img2.png", "SG", "a woman prays in a church", "woman prays", "SG", "prays", "1;0;1", ""),
    ("i2-pg", "img2.png", "SG", "a woman stands in a church", "woman stands", "PG", "stands", "0;1;1", ""),
    ("i3-sg", "img3.png", "PG", "a man begs near a car", "man begs", "SG", "begs", "0;0;0", ""),
    ("i3-pg", "img3.png", "PG", "a man sits near a car", "man sits", "PG", "sits", "1;1;1", ""),
    ("i4-sg", "img4.png", "PG", "a child prays at a bench", "child prays", "SG", "prays", "0;0;1", ""),
    ("i4-pg", "img4.png", "PG", "a child sits at a bench", "child sits", "PG", "sits", "1;1;0", ""),
    ("i5-sg", "img5.png", "PG", "a dog begs for food", "dog begs", "SG", "begs", "1;0;0", ""),
    ("i5-pg", "img5.png", "PG", "a dog sits on the floor", "dog sits", "PG", "sits", "1;1;1", ""),
]
HEADER = ["item_id", "image", "image_kind", "caption", "caption_simplified", "caption_kind", "verb",
          "human_votes", "label"]

#: Two raters' fluency labels whose Cohen's kappa is 0.5833 (the docstring example of cohen_kappa).
FLUENCY_A = [1, 1, 0, 0, 1, 0, 1, 1, 0, 1]
FLUENCY_B = [1, 0, 0, 0, 1, 1, 1, 1, 0, 1]


def write_manifest(folder: Path, seed: int = 0) -> Path:
    """The 10-pair manifest and its five random images (``seed`` changes the images, not the text)."""
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(1, 6):
        rng = np.random.RandomState(k + 100 * seed)
        Image.fromarray((rng.rand(40, 48, 3) * 255).astype("uint8")).save(folder / f"img{k}.png")
    path = folder / "probes.csv"
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER)
        writer.writerows(ROWS)
    return path


def write_labels(path: Path) -> Path:
    """A labels.csv (item_id, rater, criterion, label) of three raters on two criteria."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["item_id", "rater", "criterion", "label"])
        for i, (a, b) in enumerate(zip(FLUENCY_A, FLUENCY_B)):
            writer.writerow([f"v{i:03d}_gitllava", "A", "fluency", a])
            writer.writerow([f"v{i:03d}_gitllava", "B", "fluency", b])
            if i < 8:  # C labels 8 of the 10 items: Fleiss' kappa covers those 8
                writer.writerow([f"v{i:03d}_gitllava", "C", "fluency", a if i % 3 else 1 - a])
        for i in range(8):
            for rater, flip in (("A", False), ("B", i % 3 == 0), ("C", i % 4 == 1)):
                label = (i % 2) ^ int(flip)
                writer.writerow([f"v{i:03d}_gitllava", rater, "primary_concept_consistency", label])
    return path


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Run folders: ``original`` and ``simplified`` probe runs, ``explain``, ``other`` (a probe run on other
    images), and ``labels`` (a labels.csv)."""
    root = tmp_path_factory.mktemp("report-runs")
    blip = tiny_models.tiny_blip(root / "tiny-blip")
    data = write_manifest(root / "data")
    model = f"hf-blip-itm:{blip}"
    out = {name: root / name for name in ("original", "simplified", "explain", "other")}
    assert main(["probe", "--data", str(data), "--model", model, "--out", str(out["original"]), "-q"]) == 0
    assert main(["probe", "--data", str(data), "--model", model, "--captions", "simplified",
                 "--out", str(out["simplified"]), "-q"]) == 0
    assert main(["probe", "--data", str(write_manifest(root / "other-data", seed=1)), "--model", model,
                 "--out", str(out["other"]), "-q"]) == 0
    assert main(["explain", "--data", str(data), "--model", model, "--out", str(out["explain"]), "--sample", "4",
                 "--budget", "40", "--grid", "2", "--figures", "2", "-q"]) == 0
    out["labels"] = write_labels(root / "study" / "labels.csv")
    return out
