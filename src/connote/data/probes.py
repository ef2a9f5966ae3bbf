"""CV-Probes manifests (CSV or JSONL).

Columns: ``item_id, image, image_kind (SG|PG), caption, caption_simplified, caption_kind (SG|PG),
verb, human_votes, label``. The first five are required (``caption_simplified`` too when the
simplified captions are scored). ``image`` is relative to the manifest's folder, absolute, or an
http(s) URL. ``human_votes`` is ``"1;1;0"`` in CSV and a list in JSONL. An empty ``label`` counts
as absent and defaults to 0 exactly for PG image x SG caption, else 1.

Problems that make the file unusable (unparseable, missing column, malformed votes or label,
duplicate ids) raise ``InputError`` naming file, line and column. Problems of one item (unknown
kind, empty caption) are kept on the item as ``error`` so the run records them and goes on.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from connote.data.images import is_url
from connote.errors import InputError
from connote.records import KINDS, ProbeItem, default_label

REQUIRED = ("item_id", "image", "image_kind", "caption", "caption_kind")
OPTIONAL = ("caption_simplified", "verb", "human_votes", "label")


def _rows(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """(line number, raw row) pairs and the format name."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("manifest not found", path=path) from None
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise InputError(f"not UTF-8 text ({exc.reason})", path=path, line=line) from None
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        rows = []
        for lineno, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise InputError(f"invalid JSON ({exc.msg})", path=path, line=lineno,
                                 column=exc.colno) from None
            if not isinstance(obj, dict):
                raise InputError("expected a JSON object per line", path=path, line=lineno)
            rows.append((lineno, obj))
        present = set().union(*(r.keys() for _, r in rows)) if rows else set()
        missing = [c for c in REQUIRED if c not in present]
        if missing:
            raise InputError(f"missing required column(s) {', '.join(missing)}", path=path, line=1,
                             column=missing[0])
        for lineno, obj in rows:
            absent = [c for c in REQUIRED if c not in obj]
            if absent:
                raise InputError(f"missing field {absent[0]!r}", path=path, line=lineno, column=absent[0])
        return rows, "jsonl"
    reader = csv.DictReader(text.splitlines(keepends=True))
    header = reader.fieldnames or []
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(
            f"missing required column(s) {', '.join(missing)}; header has: {', '.join(header) or '(empty)'}",
            path=path, line=1, column=missing[0])
    rows = []
    try:
        for row in reader:
            lineno = reader.line_num
            if None in row:
                raise InputError(f"{len(header) + len(row[None])} fields where the header has {len(header)}",
                                 path=path, line=lineno)
            if all(v in (None, "") for v in row.values()):
                continue
            rows.append((lineno, row))
    except csv.Error as exc:
        raise InputError(f"cannot parse CSV ({exc})", path=path, line=reader.line_num) from None
    return rows, "csv"


def _votes(value: Any, path: Path, line: int) -> list[int] | None:
    if value is None or value == "" or value == []:
        return None
    parts = value if isinstance(value, list) else str(value).replace(",", ";").split(";")
    votes = []
    for v in parts:
        s = str(v).strip()
        if s not in ("0", "1"):
            raise InputError(f"human_votes must be 0/1 votes like '1;1;0', got {value!r}",
                             path=path, line=line, column="human_votes")
        votes.append(int(s))
    return votes


def _label(value: Any, image_kind: str, caption_kind: str, path: Path, line: int) -> int:
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return default_label(image_kind, caption_kind)
    s = str(value).strip().lower()
    if s in ("1", "1.0", "true"):
        return 1
    if s in ("0", "0.0", "false"):
        return 0
    raise InputError(f"label must be 1 (match), 0 (non-match) or empty, got {value!r}",
                     path=path, line=line, column="label")


def read_probe_manifest(path: str | Path, *, captions: str = "original") -> list[ProbeItem]:
    """Read a CV-Probes manifest into ``ProbeItem`` records (see module docstring)."""
    path = Path(path)
    if captions not in ("original", "simplified"):
        raise InputError(f"captions must be 'original' or 'simplified', got {captions!r}")
    rows, _fmt = _rows(path)
    if not rows:
        raise InputError("manifest has no items", path=path)
    if captions == "simplified" and not any(r.get("caption_simplified") for _, r in rows):
        raise InputError("--captions simplified needs a caption_simplified column with values",
                         path=path, line=1, column="caption_simplified")
    seen: dict[str, int] = {}
    items = []
    for lineno, row in rows:
        item_id = str(row.get("item_id") or "").strip()
        if not item_id:
            raise InputError("empty item_id", path=path, line=lineno, column="item_id")
        if item_id in seen:
            raise InputError(f"duplicate item_id {item_id!r} (first on line {seen[item_id]})",
                             path=path, line=lineno, column="item_id")
        seen[item_id] = lineno
        image_kind = str(row.get("image_kind") or "").strip().upper()
        caption_kind = str(row.get("caption_kind") or "").strip().upper()
        image = str(row.get("image") or "").strip()
        if image and not is_url(image) and not Path(image).is_absolute():
            image = str((path.parent / image).resolve())
        caption = str(row.get("caption") or "").strip()
        simplified = str(row.get("caption_simplified") or "").strip() or None
        errors = []
        for col, kind in (("image_kind", image_kind), ("caption_kind", caption_kind)):
            if kind not in KINDS:
                errors.append(f"{col} must be SG or PG, got {row.get(col)!r}")
        if not image:
            errors.append("empty image")
        scored_text = simplified if captions == "simplified" else caption
        if not scored_text:
            errors.append("empty caption" if captions == "original" else "empty caption_simplified")
        label = (_label(row.get("label"), image_kind, caption_kind, path, lineno)
                 if not errors else _label(row.get("label"), "", "", path, lineno))
        items.append(ProbeItem(
            item_id=item_id, image=image, image_kind=image_kind, caption=caption,
            caption_kind=caption_kind, caption_simplified=simplified,
            verb=(str(row.get("verb")).strip() or None) if row.get("verb") not in (None, "") else None,
            human_votes=_votes(row.get("human_votes"), path, lineno), label=label, line=lineno,
            error=f"{path}:{lineno}: {'; '.join(errors)}" if errors else None,
            extra={k: v for k, v in row.items() if k not in REQUIRED + OPTIONAL},
        ))
    return items
