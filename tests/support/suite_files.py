"""Small files in each probe suite's released layout, written from a few photos (for the suites' tests and
the registry-wide backend test)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path


def write_suite_files(root: Path, photos: list[Path]) -> dict[str, Path]:
    """suite name -> its data (file or folder); ``photos``: at least four image files."""
    root.mkdir(parents=True, exist_ok=True)
    p = photos
    # SVO-Probes: svo_probes.csv with images/<image_id>.<ext>
    svo = root / "svo"
    (svo / "images").mkdir(parents=True, exist_ok=True)
    for k in range(4):
        shutil.copy(p[k], svo / "images" / f"{k + 1}{p[k].suffix}")
    with open(svo / "svo_probes.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["", "sentence", "pos_triplet", "neg_triplet", "subj_neg", "verb_neg", "obj_neg", "pos_url",
                    "neg_url", "pos_image_id", "neg_image_id"])
        w.writerow([0, "a man begs on the street", "man,beg,street", "man,sit,street", "False", "True", "False",
                    "", "", 1, 2])
        w.writerow([1, "a dog sits on a bench", "dog,sit,bench", "cat,sit,bench", "True", "False", "False",
                    "", "", 3, 4])
    # VALSE: a piece JSON with mturk votes and a list caption
    valse = root / "valse"
    (valse / "images").mkdir(parents=True, exist_ok=True)
    shutil.copy(p[0], valse / "images" / p[0].name)
    shutil.copy(p[1], valse / "images" / p[1].name)
    (valse / "existence.json").write_text(json.dumps({
        "existence_0": {"image_file": p[0].name, "caption": ["there is a man"], "foil": "there is no man",
                        "classes": "man", "classes_foil": "no", "mturk": {"foil": 0, "caption": 3, "other": 0}},
        "existence_1": {"image_file": p[1].name, "caption": "a dog sits", "foil": "a cat sits", "classes": "dog",
                        "classes_foil": "cat", "mturk": {"foil": 1, "caption": 2, "other": 0}}}, indent=2))
    # Winoground: examples.jsonl with images/<name>.<ext>
    wino = root / "winoground"
    (wino / "images").mkdir(parents=True, exist_ok=True)
    for k in range(2):
        shutil.copy(p[k], wino / "images" / f"ex_0_img_{k}{p[k].suffix}")
    (wino / "examples.jsonl").write_text(json.dumps({
        "id": 0, "image_0": "ex_0_img_0", "image_1": "ex_0_img_1", "caption_0": "a man sits on a dog",
        "caption_1": "a dog sits on a man", "tag": "Object", "secondary_tag": "", "num_main_preds": 1,
        "collapsed_tag": "Object"}) + "\n")
    # SugarCrepe: a category JSON
    sugar = root / "sugarcrepe"
    (sugar / "images").mkdir(parents=True, exist_ok=True)
    shutil.copy(p[2], sugar / "images" / p[2].name)
    (sugar / "replace_rel.json").write_text(json.dumps({"0": {
        "filename": p[2].name, "caption": "a man sits on a bench", "negative_caption": "a man stands on a bench"}}))
    return {"svo-probes": svo / "svo_probes.csv", "valse": valse, "winoground": wino / "examples.jsonl",
            "sugarcrepe": sugar}
