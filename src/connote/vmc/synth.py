"""Synthetic metaphor captions (VMC paper, appendix A.5.2): literal image captions -> template metaphors.

The paper prompted GPT-3.5-turbo with

    Convert the following image caption to a metaphoric image caption in the following format <primary concept>
    is as <property> as <secondary concept>. Input: <caption>

(:data:`SYNTH_PROMPT`, the caption in place of ``<caption>``), then removed the answers that do not follow the
template (90,886 MSCOCO images kept) and had two annotators check fluency and creativity (98.7 % / 97.8 %).

This module holds the parts that need no model: the prompt, reading caption tables, the template filter and the
table formats. The run itself (any ``generate`` backend through the runner) is
:mod:`connote.vmc.synth_task`.

Caption tables (:func:`read_caption_rows`)
------------------------------------------
* MSCOCO's ``captions_*.json`` (``{"images": [{"id", "file_name"}], "annotations": [{"id", "image_id",
  "caption"}]}``): one row per annotation, id ``coco-<annotation id>``, image the ``file_name`` of its image;
* a JSON list of ``{"image", "caption"[, "id"]}`` records (connote's image-caption JSON);
* JSON Lines of such records (one per line);
* CSV or TSV with columns ``image`` and ``caption`` (optional ``id``; ``file_name``/``image_path`` and
  ``text`` are accepted as the image and caption columns).

A file that cannot be read (missing, not UTF-8, malformed JSON/CSV, no caption column) is an ``InputError``
naming the file and line. A row without an image or caption is kept with its error: the run records it
for that item and goes on.

The filter (:func:`filter_answer`)
----------------------------------
An answer is kept when its first non-empty line, with a leading ``Output:`` label (the prompt says ``Input:``,
and chat models echo the pattern) and surrounding quotes removed, parses as the template
(:func:`connote.vmc.template.parse_metaphor`); otherwise it is dropped with the reason ``not in the
template``. An empty answer is not a drop but an item error (``the backend returned no text``): a rerun asks
again.

The table (:func:`stage1_records`)
----------------------------------
``metaphors.json``: a JSON list of ``{"id", "image", "caption", "kind": "metaphor", "source_caption"}``, image
paths as in the caption table (relative to its image folder): what ``connote vmc train`` stage 1 reads as
``data.metaphor_images`` (or ``data.synth``, which also finds the image folder).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.vmc.template import parse_metaphor

SYNTH_PROMPT = ("Convert the following image caption to a metaphoric image caption in the following format "
                "<primary concept> is as <property> as <secondary concept>. Input: {caption}")
"""The A.5.2 prompt as the paper prints it; ``{caption}`` stands where the paper writes ``mscoco_caption``."""
#: Bumped when :func:`filter_answer` keeps or drops differently (it enters the run fingerprint).
FILTER_VERSION = 1
NOT_TEMPLATE = "not in the template"
NO_TEXT = "the backend returned no text"
_LABEL = re.compile(r"^\s*(?:output|metaphoric(?: image)? caption)\s*:\s*", re.IGNORECASE)
_QUOTES = " \t\"'“”‘’`"


@dataclass(frozen=True)
class CaptionRow:
    """One literal caption to convert; ``error`` is set for a row that cannot be used (no image, no caption)."""

    row_id: str
    image: str | None
    caption: str | None
    where: str
    """File and line (or record) the row came from, for messages."""
    error: str | None = None


def synth_prompt(caption: str, template: str = SYNTH_PROMPT) -> str:
    """The prompt for one caption (the caption stripped, nothing else changed)."""
    if "{caption}" not in template:
        raise InputError("the prompt must contain {caption}, where the image caption goes")
    return template.replace("{caption}", caption.strip())


def filter_answer(answer: str) -> tuple[str | None, dict[str, Any] | None]:
    """``(caption, parsed slots)`` when the answer follows the template, else ``(None, None)``."""
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    if not lines:
        return None, None
    text = _LABEL.sub("", lines[0]).strip(_QUOTES)
    parsed = parse_metaphor(text)
    if parsed is None:
        return None, None
    return text, parsed.to_dict()


def _row(row_id: str, image: Any, caption: Any, where: str) -> CaptionRow:
    image = str(image).strip() if isinstance(image, (str, int)) and str(image).strip() else None
    caption = caption.strip() if isinstance(caption, str) and caption.strip() else None
    error = None
    if caption is None:
        error = f"{where}: no caption"
    elif image is None:
        error = f"{where}: no image for this caption"
    return CaptionRow(row_id, image, caption, where, error)


def _from_records(records: list[Any], path: Path, lines: list[int] | None = None) -> list[CaptionRow]:
    rows = []
    for n, rec in enumerate(records):
        where = f"{path}, line {lines[n]}" if lines else f"{path}, record {n}"
        if not isinstance(rec, dict):
            raise InputError(f"expected a JSON object with image and caption, got {type(rec).__name__}",
                             path=path, line=lines[n] if lines else None)
        rid = rec.get("id")
        rows.append(_row(str(rid) if rid is not None else str(n), rec.get("image", rec.get("file_name")),
                         rec.get("caption", rec.get("text")), where))
    return rows


def _from_coco(data: dict[str, Any], path: Path) -> list[CaptionRow]:
    images = data.get("images")
    annotations = data.get("annotations")
    if not isinstance(images, list) or not isinstance(annotations, list):
        raise InputError("a COCO captions file needs lists 'images' and 'annotations'", path=path)
    files = {img.get("id"): img.get("file_name") for img in images if isinstance(img, dict)}
    rows = []
    for n, ann in enumerate(annotations):
        if not isinstance(ann, dict):
            raise InputError(f"annotation {n} is not an object", path=path)
        rid = f"coco-{ann['id']}" if ann.get("id") is not None else f"coco-{ann.get('image_id')}-{n}"
        where = f"{path}, annotation {n} (image_id {ann.get('image_id')!r})"
        rows.append(_row(rid, files.get(ann.get("image_id")), ann.get("caption"), where))
    return rows


def _from_csv(text: str, path: Path) -> list[CaptionRow]:
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = [h.strip() for h in reader.fieldnames or []]
    image_col = next((c for c in ("image", "file_name", "image_path") if c in header), None)
    caption_col = next((c for c in ("caption", "text") if c in header), None)
    if caption_col is None or image_col is None:
        raise InputError(f"expected columns image and caption (found: {', '.join(header) or 'none'})",
                         path=path, line=1)
    rows = []
    try:
        for n, raw in enumerate(reader):
            row = {(k or "").strip(): v for k, v in raw.items()}
            rid = (row.get("id") or "").strip() or str(n)
            rows.append(_row(rid, row.get(image_col), row.get(caption_col), f"{path}, line {reader.line_num}"))
    except csv.Error as exc:
        raise InputError(f"malformed CSV ({exc})", path=path, line=reader.line_num) from None
    return rows


def read_caption_rows(path: str | Path, limit: int | None = None) -> list[CaptionRow]:
    """The rows of a caption table (see the module docs); ids must be unique."""
    from connote.core.jsonio import parse_json, read_jsonl, read_text

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        parsed = read_jsonl(path, what="caption file")
        rows = _from_records([r for _, r in parsed], path, [n for n, _ in parsed])
    elif suffix == ".json":
        data = parse_json(read_text(path, what="caption file"), path)
        if isinstance(data, dict) and "annotations" in data:
            rows = _from_coco(data, path)
        elif isinstance(data, list):
            rows = _from_records(data, path)
        else:
            raise InputError("expected a COCO captions object (images, annotations) or a JSON list of "
                             "{image, caption} records", path=path)
    elif suffix in (".csv", ".tsv"):
        rows = _from_csv(read_text(path, what="caption table"), path)
    else:
        raise InputError(f"unknown caption table format {suffix or '(no suffix)'!r}: expected .json (COCO captions "
                         "or a list of records), .jsonl, .csv or .tsv", path=path)
    seen: set[str] = set()
    for r in rows:
        if r.row_id in seen:
            raise InputError(f"id {r.row_id!r} occurs more than once ({r.where}); ids must be unique", path=path)
        seen.add(r.row_id)
    if limit is not None:
        rows = rows[:limit]
    if not rows:
        raise InputError("no captions in the table", path=path)
    return rows


def stage1_records(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kept rows of a synth run as stage-1 metaphor records (``metaphors.json``), in table order."""
    return [{"id": r["item_id"], "image": r["image"], "caption": r["metaphor"], "kind": "metaphor",
             "source_caption": r["source_caption"]}
            for r in rows if r.get("error") is None and r.get("metaphor")]
