"""SVO-Probes' released file: ``svo_probes.csv`` (google-deepmind/svo_probes).

Columns: ``sentence, pos_triplet, neg_triplet, subj_neg, verb_neg, obj_neg, pos_url, neg_url, pos_image_id,
neg_image_id`` (a leading unnamed index column is allowed). Each row is two pairs: <sentence, positive
image> and <sentence, negative image>; ``subj_neg``/``verb_neg``/``obj_neg`` (True/False) say what the
negative image changes. Images are found as ``<images>/<image_id>.<ext>`` (``--images``, default the
``images/`` folder beside the CSV); an image not found there is fetched from its URL (``--allow-network``).
"""

from __future__ import annotations

import csv
from pathlib import Path

from connote.core.errors import InputError
from connote.core.jsonio import read_text, text_lines
from connote.suites.base import SuiteItem, sample_photo, suite_image

REQUIRED = ("sentence", "pos_triplet", "neg_triplet", "subj_neg", "verb_neg", "obj_neg", "pos_image_id",
            "neg_image_id")
SLOTS = ("subject", "verb", "object")
_BOOL = {"true": True, "false": False, "1": True, "0": False}


def negative_type(flags: tuple[bool, bool, bool]) -> str:
    """``subject``, ``verb`` or ``object`` when exactly one flag is set, else ``mixed`` (left out of every
    type and of the overall scores, as the released notebook's three filters leave such rows out)."""
    return SLOTS[flags.index(True)] if sum(flags) == 1 else "mixed"


def read_svo(path: str | Path, images: str | Path | None = None) -> list[SuiteItem]:
    path = Path(path)
    if path.is_dir():
        path = path / "svo_probes.csv"
    text = read_text(path, what="SVO-Probes CSV")
    reader = csv.DictReader(text_lines(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}; header has: {', '.join(header) or '(empty)'}",
                         path=path, line=1, column=missing[0])
    roots = [Path(images)] if images is not None else [path.parent / "images"]
    items = []
    for n, row in enumerate(reader, start=2):
        line = reader.line_num
        if None in row or any(v is None for v in row.values()):
            raise InputError(f"{len([v for v in row.values() if v is not None])} fields where the header has "
                             f"{len(header)}", path=path, line=line)
        flags = []
        for col in ("subj_neg", "verb_neg", "obj_neg"):
            value = _BOOL.get(str(row[col]).strip().lower())
            if value is None:
                raise InputError(f"{col} must be True or False, got {row[col]!r}", path=path, line=line, column=col)
            flags.append(value)
        triplet = [t.strip() for t in row["pos_triplet"].split(",")]
        if len(triplet) != 3:
            raise InputError(f"pos_triplet must be 'subject,verb,object', got {row['pos_triplet']!r}",
                             path=path, line=line, column="pos_triplet")
        kind = negative_type(tuple(flags))
        target = triplet[SLOTS.index(kind)] if kind in SLOTS else None
        sentence = row["sentence"].strip()
        ids = [row["pos_image_id"].strip(), row["neg_image_id"].strip()]
        urls = [(row.get("pos_url") or "").strip(), (row.get("neg_url") or "").strip()]
        paths = []
        for image_id, url in zip(ids, urls):
            found = suite_image(image_id, roots)
            paths.append(url if not Path(found).is_file() and url else found)
        error = None if sentence and all(ids) else f"{path}:{line}: empty sentence or image id"
        items.append(SuiteItem(
            item_id=f"row{n - 1}", images=paths, captions=[sentence], pairs=[(0, 0), (1, 0)], line=line,
            fields={"neg_type": kind, "sentence": row["sentence"],  # as written: the notebook's duplicate key
                    "pos_image_id": ids[0], "neg_image_id": ids[1], "pos_triplet": row["pos_triplet"],
                    "neg_triplet": row["neg_triplet"]},
            explain=[(0, "positive", target), (1, "negative", target)], error=error))
    return items


# (sentence, positive photo, its triplet, negative photo, its triplet, subj/verb/obj flags)
SAMPLE = [
    ("A woman wears a uniform.", "grace_hopper", "woman,wear,uniform", "astronaut", "woman,wear,spacesuit",
     (False, False, True)),
    ("A woman smiles at the camera.", "astronaut", "woman,smile,camera", "grace_hopper", "woman,look,camera",
     (False, True, False)),
    ("A cat is in a room.", "chelsea", "cat,be,room", "motorcycle", "motorcycle,be,room", (True, False, False)),
    ("A rocket stands on a launch pad.", "rocket", "rocket,stand,pad", "china", "building,stand,tree",
     (True, False, True)),
]


def write_sample(folder: str | Path) -> Path:
    """A small ``svo_probes.csv`` in the released layout with packaged photos as ``images/<id>.jpg``."""
    folder = Path(folder)
    ids = {name: str(k) for k, name in enumerate(sorted({s[1] for s in SAMPLE} | {s[3] for s in SAMPLE}), 1)}
    for name, image_id in ids.items():
        sample_photo(name, folder / "images" / f"{image_id}.jpg")
    path = folder / "svo_probes.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["", *REQUIRED[:6], "pos_url", "neg_url", "pos_image_id", "neg_image_id"])
        for k, (sentence, pos, pos_t, neg, neg_t, flags) in enumerate(SAMPLE):
            writer.writerow([k, sentence, pos_t, neg_t, *[str(x) for x in flags], "", "", ids[pos], ids[neg]])
    return path
