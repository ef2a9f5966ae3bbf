"""Real run folders for the report tests, built once per session by the real commands, in-process.

A tiny random BLIP (built from a config, loaded by ``from_pretrained``) scores a 10-pair manifest of
random images with human votes (so Table 5 has Pearson r values and Table 4 a Human row), with original
and simplified captions, and explains 4 of its pairs with MM-SHAP (a small call budget keeps it fast).
A labels.csv in the format ``connote collect import`` writes stands for a human evaluation.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from connote.cli import main  # noqa: E402
from tests.support import tiny_models
from tests.support.probe_manifest import HEADER, ROWS  # (the probe tests' 10-pair manifest, with votes)

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
