"""A small probe manifest of random images (two captions per image), for run tests."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from PIL import Image

CAPTIONS = [("a man begs on the street", "SG"), ("a man sits on the street", "PG"),
            ("a dog begs for food", "SG"), ("a dog sits on the floor", "PG")]


def write_manifest(folder: Path, n_images: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(n_images):
        rng = np.random.RandomState(k)
        Image.fromarray((rng.rand(40, 48, 3) * 255).astype("uint8")).save(folder / f"img{k}.png")
        for j, (caption, kind) in enumerate(CAPTIONS[2 * (k % 2):2 * (k % 2) + 2]):
            rows.append([f"i{k}-{j}", f"img{k}.png", "SG" if k % 2 else "PG", caption, caption, kind,
                         caption.split()[2], "1;0;1", ""])
    path = folder / "probes.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "image", "image_kind", "caption", "caption_simplified", "caption_kind", "verb",
                    "human_votes", "label"])
        w.writerows(rows)
    return path
