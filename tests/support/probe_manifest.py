"""The CV-Probes tests' 10-pair manifest with votes, on small real images (written next to it)."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.support.tiny_models import random_image

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


def write_manifest(folder: Path, rows=ROWS, header=HEADER, name="probes.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(1, 6):
        if not (folder / f"img{k}.png").exists():
            random_image(k).save(folder / f"img{k}.png")
    path = folder / name
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path
