"""VALSE's released files: one JSON per piece (Heidelberg-NLP/VALSE ``data/``), e.g. ``existence.json``,
``plurals.json``, ``counting-hard.json``, ``relations.json``, ``action-replacement.json``,
``actant-swap.json``, ``coreference-standard.json``, ``foil-it.json``.

Each file is an object ``{sample_id: {dataset, image_file, caption, foil, classes, classes_foil, mturk,
...}}``. Oddities handled as the released scripts handle them: ``caption`` is a string in the current
release, but the released evaluation script reads ``caption[0]`` (a one-element list, as earlier files had it),
so both are read; ``classes`` / ``classes_foil`` are numbers in the counting and existence pieces; ``mturk``
counts the three annotators who chose the caption (``caption``), the foil (``foil``) or neither (``other``); an
entry without ``mturk`` is not validated. The piece is the file's name without ``.json``. Images are looked up as
``<images>/<piece>/<image_file>``, then ``<images>/<image_file>`` (``--images``, default ``images/`` beside the
JSONs), since each piece's images come from its own source dataset.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import read_json_entries
from connote.suites.base import SuiteItem, sample_photo, suite_image

#: The MTurk validation rule of the VALSE README: at least 2 of 3 annotators chose the caption.
MIN_CAPTION_VOTES = 2


def _text(value: Any, name: str, path: Path, line: int, key: str) -> str:
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        value = value[0]
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"entry {key!r}: field {name!r} must be a string or a list of strings, got "
                         f"{json.dumps(value)[:60]}", path=path, line=line, column=name)
    return value.strip()


def _word(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    return str(value).strip() or None if value is not None else None


def _mturk(value: Any, path: Path, line: int, key: str) -> dict[str, int] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(value.get(k, 0), int) and not isinstance(value.get(k, 0),
                                                                                                  bool)
                                              for k in ("caption", "foil", "other")):
        raise InputError(f"entry {key!r}: mturk must be an object of vote counts {{caption, foil, other}}, got "
                         f"{json.dumps(value)[:60]}", path=path, line=line, column="mturk")
    return {k: int(value.get(k, 0)) for k in ("caption", "foil", "other")}


def read_piece(path: Path, roots: list[Path]) -> list[SuiteItem]:
    data, lines = read_json_entries(path, what="VALSE piece JSON")
    if not isinstance(data, dict):
        raise InputError("expected an object {sample_id: entry} (a VALSE piece file)", path=path, line=1)
    piece = path.stem
    items = []
    for (key, entry), line in zip(data.items(), lines):
        if not isinstance(entry, dict):
            raise InputError(f"entry {key!r}: expected a JSON object, got {type(entry).__name__}", path=path,
                             line=line)
        for name in ("image_file", "caption", "foil"):
            if name not in entry:
                raise InputError(f"entry {key!r}: missing field {name!r}", path=path, line=line, column=name)
        caption = _text(entry["caption"], "caption", path, line, key)
        foil = _text(entry["foil"], "foil", path, line, key)
        image_file = _text(entry["image_file"], "image_file", path, line, key)
        mturk = _mturk(entry.get("mturk"), path, line, key)
        image = suite_image(image_file, [r / piece for r in roots] + roots)
        items.append(SuiteItem(
            item_id=f"{piece}/{key}", images=[image], captions=[caption, foil], pairs=[(0, 0), (0, 1)], line=line,
            fields={"piece": piece, "mturk": mturk,
                    "valid": mturk is not None and mturk["caption"] >= MIN_CAPTION_VOTES},
            explain=[(0, "caption", _word(entry.get("classes"))), (1, "foil", _word(entry.get("classes_foil")))]))
    return items


def read_valse(path: str | Path, images: str | Path | None = None) -> list[SuiteItem]:
    """Every piece JSON of a folder (or one piece file) as items, pieces in file-name order."""
    path = Path(path)
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise InputError("no VALSE piece files (*.json) in this folder", path=path)
    base = path if path.is_dir() else path.parent
    roots = [Path(images)] if images is not None else [base / "images"]
    items = []
    for f in files:
        items.extend(read_piece(f, roots))
    return items


# piece -> [(id, photo, caption, foil, classes, classes_foil, mturk)]; the caption is a list where VALSE has one
SAMPLE: dict[str, list[tuple]] = {
    "existence": [
        ("existence_0", "chelsea", "There is a cat.", "There are no cats.", "cat", "no", (3, 0, 0)),
        ("existence_1", "coffee", ["There is a cup."], "There are no cups.", "cup", "no", (2, 1, 0))],
    "plurals": [
        ("plurals_0", "china", "A building with a curved roof.", "Buildings with curved roofs.", "building",
         "buildings", (1, 2, 0)),
        ("plurals_1", "flower", "A pink flower blooms.", "Pink flowers bloom.", "flower", "flowers", (3, 0, 0))],
    "actant-swap": [
        ("actions_0", "camera", "A man stands behind a camera.", "A camera stands behind a man.", "man", "camera",
         (3, 0, 0))],
    "relations": [
        ("relations_0", "rocket", "A rocket stands on a launch pad.", "A rocket stands under a launch pad.", "on",
         "under", (2, 0, 1)),
        ("relations_1", "motorcycle", "A motorcycle is parked inside a room.",
         "A motorcycle is parked outside a room.", "inside", "outside", (2, 1, 0))],
}


def write_sample(folder: str | Path) -> Path:
    """Per-piece JSONs in the released layout (mturk votes, a list caption) and ``images/``; returns the folder."""
    folder = Path(folder)
    for piece, rows in SAMPLE.items():
        entries = {}
        for key, photo, caption, foil, classes, classes_foil, (c, f, o) in rows:
            sample_photo(photo, folder / "images" / f"{photo}.jpg")
            entries[key] = {"dataset": "connote-sample", "original_split": "test", "dataset_idx": f"{photo}.jpg",
                            "linguistic_phenomena": piece, "image_file": f"{photo}.jpg", "caption": caption,
                            "classes": classes, "classes_foil": classes_foil,
                            "mturk": {"foil": f, "caption": c, "other": o}, "foil": foil}
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{piece}.json").write_text(json.dumps(entries, indent=4) + "\n", encoding="utf-8")
    return folder
