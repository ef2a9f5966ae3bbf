"""CV-Probes manifests (CSV or JSONL).

Columns: ``item_id, image, image_kind (SG|PG), caption, caption_simplified, caption_kind (SG|PG),
verb, human_votes, label``. The first five are required (``caption_simplified`` too when the
simplified captions are scored). ``image`` is relative to the manifest's folder, absolute, or an
http(s) URL. ``human_votes`` is ``"1;1;0"`` in CSV and a list in JSONL. An empty ``label`` counts
as absent and defaults to 0 exactly for PG image x SG caption, else 1.

Problems that make the file unusable (unparseable, not UTF-8, a directory, missing column, a
duplicate header column, an unbalanced quote, a row with the wrong number of fields, a JSONL field
that is not a string, malformed votes or label, duplicate ids) raise ``InputError`` naming file,
line and column. A quoted CSV field may not span lines: in a manifest that is always an unbalanced
quote that would swallow the next row. Problems of one item (unknown
kind, empty caption) are kept on the item as ``error`` so the run records them and goes on.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.files import resolved
from connote.core.jsonio import read_jsonl, read_text, text_lines
from connote.cv_probes.records import KINDS, ProbeItem, default_label
from connote.media.images import is_url

REQUIRED = ("item_id", "image", "image_kind", "caption", "caption_kind")
OPTIONAL = ("caption_simplified", "verb", "human_votes", "label")


TEXT_FIELDS = ("image", "image_kind", "caption", "caption_simplified", "caption_kind", "verb")
"""JSONL fields that must be strings (or null): a list or object there is refused, not stringified."""


def _jsonl_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for lineno, obj in read_jsonl(path, what="manifest"):
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object per line, got {type(obj).__name__}", path=path, line=lineno)
        for name in TEXT_FIELDS + ("item_id",):
            value = obj.get(name)
            ok = value is None or isinstance(value, str) or (
                name == "item_id" and isinstance(value, int) and not isinstance(value, bool))
            if not ok:
                expected = "a string or an integer" if name == "item_id" else "a string"
                raise InputError(f"field {name!r} must be {expected}, got {type(value).__name__} "
                                 f"{json.dumps(value)[:60]}", path=path, line=lineno, column=name)
        votes = obj.get("human_votes")
        if isinstance(votes, dict) or (isinstance(votes, list) and any(isinstance(v, (list, dict)) for v in votes)):
            raise InputError(f"field 'human_votes' must be a list of 0/1 or a string like '1;1;0', got "
                             f"{json.dumps(votes)[:60]}", path=path, line=lineno, column="human_votes")
        if isinstance(obj.get("label"), (list, dict)):
            raise InputError(f"field 'label' must be 1, 0 or empty, got {json.dumps(obj['label'])[:60]}",
                             path=path, line=lineno, column="label")
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
    return rows


def _open_quote(line: str) -> int | None:
    """1-based character position of a quote that opens a field on ``line`` and is not closed there."""
    quoted, opened, field_start, i = False, None, True, 0
    while i < len(line):
        ch = line[i]
        if quoted:
            if ch == '"':
                if line[i + 1:i + 2] == '"':
                    i += 1  # "" inside a quoted field is one literal quote
                else:
                    quoted = False
        elif ch == '"' and field_start:
            quoted, opened = True, i + 1
        field_start = not quoted and ch == ","
        i += 1
    return opened if quoted else None


def _unbalanced(path: Path, lines: list[str], start: int, end: int, header: list[str] | None) -> InputError:
    """The error for a quote opened on line ``start`` that runs to line ``end``; the column is the
    field's header name (the character position is in the message)."""
    line = lines[start - 1].rstrip("\r\n")
    pos = _open_quote(line)
    column: str | int | None = pos
    if pos is not None and header is not None:
        index = len(next(csv.reader([line[:pos - 1]]), [""])) - 1 if pos > 1 else 0
        column = header[index] if index < len(header) else pos
    where = f" opened at character {pos}" if pos else ""
    return InputError(f"unbalanced quote: the quoted field{where} runs over {end - start + 1} lines (to line "
                      f"{end}), swallowing what follows; close the quote or double it (\"\") inside a quoted field",
                      path=path, line=start, column=column)


def _csv_rows(path: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    """Rows of a CSV manifest. Strict: an unbalanced quote (a field running over a line break), a
    duplicate header column, or a row with more or fewer fields than the header is an error."""
    lines = text_lines(text, keepends=True)
    reader = csv.reader(lines, strict=True)
    header: list[str] | None = None
    header_line = 0
    rows = []
    previous_end = 0
    try:
        for raw in reader:
            start, end = previous_end + 1, reader.line_num
            previous_end = end
            if not raw or all(v == "" for v in raw):
                continue
            if end > start:  # a quoted field swallowed a line break (and, usually, the next row)
                raise _unbalanced(path, lines, start, end, header)
            if header is None:
                header, header_line = [h.strip() for h in raw], start
                seen: dict[str, int] = {}
                for i, name in enumerate(header, start=1):
                    if name in seen:
                        raise InputError(f"duplicate column {name!r} in the header (columns {seen[name]} and {i}); "
                                         "each column may appear once", path=path, line=start, column=name)
                    seen[name] = i
                missing = [c for c in REQUIRED if c not in header]
                if missing:
                    raise InputError(
                        f"missing required column(s) {', '.join(missing)}; header has: "
                        f"{', '.join(header) or '(empty)'}", path=path, line=start, column=missing[0])
                continue
            if len(raw) != len(header):
                raise InputError(f"{len(raw)} fields where the header (line {header_line}) has {len(header)}",
                                 path=path, line=start, column=min(len(raw), len(header)) + 1)
            rows.append((start, dict(zip(header, raw))))
    except csv.Error as exc:
        if "end of data" in str(exc):  # a quote opened and never closed before the end of the file
            raise _unbalanced(path, lines, previous_end + 1, len(lines), header) from None
        line = reader.line_num
        pos = _open_quote(lines[line - 1].rstrip("\r\n")) if 0 < line <= len(lines) else None
        raise InputError(f"cannot parse CSV: {exc}", path=path, line=line, column=pos) from None
    if header is None:
        raise InputError("missing required column(s) " + ", ".join(REQUIRED) + "; header has: (empty)",
                         path=path, line=1, column=REQUIRED[0])
    return rows


def _rows(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], str]:
    """(line number, raw row) pairs and the format name."""
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        return _jsonl_rows(path), "jsonl"
    return _csv_rows(path, read_text(path, what="manifest")), "csv"


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
            image = resolved(path.parent / image)  # a symlink loop: loading it is an item error, not a crash
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
