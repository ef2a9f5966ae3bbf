"""Winoground's release on the Hugging Face hub (``facebook/winoground``): ``data/examples.jsonl`` and the
images of ``data/images.zip`` unpacked to ``images/``.

Each line is one example with paired fields: ``{"id", "image_0", "image_1", "caption_0", "caption_1", "tag",
"secondary_tag", "num_main_preds", "collapsed_tag"}``; ``image_k`` names ``images/<image_k>.png``. Give the
JSONL file or its folder; images are looked up in ``--images``, else ``images/`` beside the file.
"""

from __future__ import annotations

import json
from pathlib import Path

from connote.core.errors import InputError
from connote.core.jsonio import read_jsonl
from connote.suites.base import SuiteItem, first_difference, require_fields, sample_photo, suite_image

PAIRED = ("image_0", "image_1", "caption_0", "caption_1")
#: Score order of every item: (image, caption) = c0_i0, c1_i0, c0_i1, c1_i1.
PAIRS = [(0, 0), (0, 1), (1, 0), (1, 1)]


def read_winoground(path: str | Path, images: str | Path | None = None) -> list[SuiteItem]:
    path = Path(path)
    if path.is_dir():
        path = path / "examples.jsonl" if (path / "examples.jsonl").is_file() else path / "data" / "examples.jsonl"
    roots = [Path(images)] if images is not None else [path.parent / "images", path.parent.parent / "images"]
    items, seen = [], {}
    for line, obj in read_jsonl(path, what="Winoground examples.jsonl"):
        entry = require_fields(obj, PAIRED, path=path, line=line)
        if "id" not in entry:
            raise InputError("missing field 'id'", path=path, line=line, column="id")
        ex_id = str(entry["id"])
        if ex_id in seen:
            raise InputError(f"duplicate id {ex_id!r} (first on line {seen[ex_id]})", path=path, line=line,
                             column="id")
        seen[ex_id] = line
        c0, c1 = entry["caption_0"].strip(), entry["caption_1"].strip()
        w0, w1 = first_difference(c0, c1)
        items.append(SuiteItem(
            item_id=ex_id, images=[suite_image(entry["image_0"], roots), suite_image(entry["image_1"], roots)],
            captions=[c0, c1], pairs=list(PAIRS), line=line,
            fields={"tag": entry.get("tag"), "collapsed_tag": entry.get("collapsed_tag"),
                    "secondary_tag": entry.get("secondary_tag"), "num_main_preds": entry.get("num_main_preds")},
            explain=[(0, "c0_i0", w0), (3, "c1_i1", w1)]))
    if not items:
        raise InputError("no examples", path=path)
    return items


# (id, photo 0, photo 1, caption 0 (fits photo 0), caption 1 (fits photo 1), tag, collapsed tag)
SAMPLE = [
    (0, "astronaut", "grace_hopper", "a woman wears a spacesuit, not a uniform",
     "a woman wears a uniform, not a spacesuit", "Object", "Object"),
    (1, "chelsea", "coffee", "a cat but no cup", "a cup but no cat", "Object", "Object"),
    (2, "rocket", "china", "a rocket stands, not a roof", "a roof stands, not a rocket", "Object", "Object"),
    (3, "camera", "motorcycle", "a man behind a camera and no motorcycle", "a motorcycle and no man behind a camera",
     "Relation", "Relation"),
]


def write_sample(folder: str | Path) -> Path:
    """``examples.jsonl`` and ``images/ex_<id>_img_<k>.png`` in the hub release's layout; returns the JSONL."""
    folder = Path(folder)
    lines = []
    for ex_id, p0, p1, c0, c1, tag, collapsed in SAMPLE:
        names = [f"ex_{ex_id}_img_{k}" for k in (0, 1)]
        for name, photo in zip(names, (p0, p1)):
            sample_photo(photo, folder / "images" / f"{name}.png")
        lines.append(json.dumps({"id": ex_id, "image_0": names[0], "image_1": names[1], "caption_0": c0,
                                 "caption_1": c1, "tag": tag, "secondary_tag": "", "num_main_preds": 1,
                                 "collapsed_tag": collapsed}))
    path = folder / "examples.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
