"""CV-Probes' release converter: ``connote datasets convert cv-probes`` (moved from connote.datasets.convert).

The release announced in the paper (github.com/ivana-13/CV-Probes) could not be read, so this
reads the shape the paper describes, as a CSV, TSV, JSON Lines file or JSON list, in one of two
layouts (column names are matched case-insensitively, spaces and hyphens as underscores, and
common synonyms are accepted, see :data:`PROBE_ALIASES`):

* long: one row per image-caption pair, with ``image``, ``image_kind`` (SG|PG), ``caption``,
  ``caption_kind`` (SG|PG) and optionally ``caption_simplified``, ``verb``, ``human_votes``,
  ``label``, ``item_id``;
* wide: one row per image, with ``image``, ``image_kind``, ``sg_caption``, ``pg_caption`` and
  optionally ``sg_caption_simplified``, ``pg_caption_simplified``, ``verb``, ``sg_votes``,
  ``pg_votes``, ``sg_label``, ``pg_label``, ``id``; each row gives two items.

Votes may be one column (``"1;1;0"``, ``"yes,no,yes"``, a JSON list) or several (``vote_1``,
``vote_2``, ... / ``annotator_1``, ...); yes/no, true/false, match/non-match and 1/0 are read.
The output is connote's manifest (``connote.cv_probes.manifest``), image paths relative to it.

Bad rows are recorded with file and line (or record number) and skipped; an unreadable input (not
found, not UTF-8, malformed JSON, no usable columns) is an ``InputError`` (exit status 2). Nothing
is written outside the output file or folder: the names written are fixed, never taken from data.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from connote.core.errors import InputError
from connote.core.jsonio import parse_json
from connote.datasets.convert import BadRow, ConvertReport, cell_text, print_report, read_table

PROBE_ALIASES: dict[str, tuple[str, ...]] = {
    "item_id": ("item_id", "pair_id", "id"),
    "image": ("image", "image_path", "img", "image_file", "file_name", "filename", "image_url", "url", "path"),
    "image_kind": ("image_kind", "image_type", "image_category", "image_group", "img_type", "image_label"),
    "caption": ("caption", "text", "sentence"),
    "caption_kind": ("caption_kind", "caption_type", "caption_category", "caption_group"),
    "caption_simplified": ("caption_simplified", "simplified_caption", "simple_caption", "simplified"),
    "verb": ("verb", "sg_verb", "verb_phrase"),
    "human_votes": ("human_votes", "votes", "human_judgements", "human_judgments", "judgements", "judgments",
                    "human_labels"),
    "label": ("label", "gold", "true_label", "match"),
    "sg_caption": ("sg_caption", "social_caption", "socially_grounded_caption"),
    "pg_caption": ("pg_caption", "physical_caption", "physically_grounded_caption"),
    "sg_caption_simplified": ("sg_caption_simplified", "sg_simplified", "simplified_sg_caption"),
    "pg_caption_simplified": ("pg_caption_simplified", "pg_simplified", "simplified_pg_caption"),
    "sg_votes": ("sg_votes", "sg_human_votes", "sg_judgements", "sg_judgments"),
    "pg_votes": ("pg_votes", "pg_human_votes", "pg_judgements", "pg_judgments"),
    "sg_label": ("sg_label",),
    "pg_label": ("pg_label",),
}
VOTE_COLUMN = re.compile(r"^(?:(sg|pg)_)?(?:vote|annotator|human|judgement|judgment|rater)_?(\d+)$")
YES = {"1", "1.0", "yes", "y", "true", "match", "matches", "applies", "correct"}
NO = {"0", "0.0", "no", "n", "false", "non_match", "nonmatch", "non-match", "no match", "mismatch",
      "does not apply", "incorrect"}
KIND_WORDS = {"sg": "SG", "social": "SG", "socially grounded": "SG", "socially_grounded": "SG",
              "pg": "PG", "physical": "PG", "physically grounded": "PG", "physically_grounded": "PG"}
MANIFEST_COLUMNS = ("item_id", "image", "image_kind", "caption", "caption_simplified", "caption_kind", "verb",
                    "human_votes", "label")


def _resolve_columns(columns: list[str]) -> dict[str, str]:
    """Canonical name -> the input's column for it (first alias present)."""
    present = set(columns)
    out = {}
    for canon, aliases in PROBE_ALIASES.items():
        for a in aliases:
            if a in present:
                out[canon] = a
                break
    return out


def _kind(value: Any) -> str | None:
    return KIND_WORDS.get(cell_text(value).lower())


def _vote_values(value: Any) -> list[int]:
    """Votes from a list or a ``;``/``,``/space separated string; ValueError names a bad token."""
    if isinstance(value, list):
        tokens = [cell_text(v) for v in value]
    else:
        s = cell_text(value)
        if s.startswith("["):
            try:
                return _vote_values(parse_json(s, "votes"))
            except InputError:  # not a JSON list: read as separated tokens
                pass
        tokens = [t for t in re.split(r"[;,|/]|\s{2,}", s)] if re.search(r"[;,|/]", s) else s.split()
    votes = []
    for t in tokens:
        t = str(t).strip().lower()
        if not t:
            continue
        if t in YES:
            votes.append(1)
        elif t in NO:
            votes.append(0)
        else:
            raise ValueError(f"vote {t!r} is not one of 1/0, yes/no, true/false, match/non-match")
    return votes


def _label(value: Any) -> str:
    s = cell_text(value).lower()
    if not s:
        return ""
    if s in YES:
        return "1"
    if s in NO:
        return "0"
    raise ValueError(f"label {value!r} is not 1/0 (match/non-match)")


def _votes_for(row: dict[str, Any], cols: dict[str, str], prefix: str | None) -> list[int]:
    """Votes of one item: the votes column (``sg_votes``/``pg_votes`` in a wide table) or numbered columns."""
    key = f"{prefix}_votes" if prefix else "human_votes"
    if key in cols:
        value = row.get(cols[key])
        if isinstance(value, list) or cell_text(value):
            return _vote_values(value)
    numbered = []
    for col, value in row.items():
        m = VOTE_COLUMN.match(col)
        if m and (m.group(1) or None) == prefix and cell_text(value) != "":
            numbered.append((int(m.group(2)), value))
    return [v for _, value in sorted(numbered) for v in _vote_values(value)]


def _image_ref(value: str, images: Path, out_dir: Path) -> str:
    from connote.media.images import is_url

    if is_url(value) or not value:
        return value
    p = Path(value)
    if not p.is_absolute():
        p = images / p
    return os.path.relpath(p, out_dir)


def convert_cv_probes(src: str | Path, out: str | Path, *, images: str | Path | None = None) -> ConvertReport:
    """Convert a CV-Probes table (see the module docstring) into connote's manifest CSV at ``out``.

    Relative image paths are resolved against ``images`` (default: the source file's folder) and
    written relative to ``out``'s folder. Bad rows are skipped and listed in the report.
    """
    src, out = Path(src), Path(out)
    if src.is_dir():
        raise InputError("expected a file (CSV, TSV, JSONL or JSON list), got a folder", path=src)
    if out.exists() and out.is_dir():
        raise InputError("--out must be a file name (the manifest to write), not a folder", path=out)
    image_dir = Path(images) if images is not None else src.parent
    report = ConvertReport(source=str(src))
    rows, columns = read_table(src, report.bad_rows)
    report.rows_read = len(rows) + len(report.bad_rows)
    cols = _resolve_columns(columns)
    wide = "sg_caption" in cols or "pg_caption" in cols
    needed = ("image", "image_kind") + (() if wide else ("caption", "caption_kind"))
    missing = [c for c in needed if c not in cols]
    if missing:
        hint = ", ".join("/".join(PROBE_ALIASES[c][:3]) for c in missing)
        raise InputError(f"no column for {', '.join(missing)} (accepted names: {hint}); found: "
                         f"{', '.join(columns) or 'none'}", path=src, line=1)
    out_dir = out.parent if str(out.parent) else Path(".")
    items: list[dict[str, str]] = []
    seen: dict[str, int | None] = {}

    def add(item: dict[str, str], line: int | None, record: int, generated: bool) -> None:
        item_id = item["item_id"]
        if item_id in seen and generated:  # several captions of one kind for an image: number them
            k = 2
            while f"{item_id}-{k}" in seen:
                k += 1
            item["item_id"] = item_id = f"{item_id}-{k}"
        if item_id in seen:
            first = seen[item_id]
            where = f"line {first}" if first is not None else "an earlier record"
            report.bad_rows.append(BadRow(str(src), line, f"duplicate item id {item_id!r} (first on {where})",
                                          record))
            return
        seen[item_id] = line
        items.append(item)

    for line, record, row in rows:
        def get(canon: str, row: dict[str, Any] = row) -> str:
            return cell_text(row.get(cols[canon])) if canon in cols else ""

        try:
            image = get("image")
            image_kind = _kind(row.get(cols["image_kind"]))
            if not image:
                raise ValueError("empty image")
            if image_kind is None:
                raise ValueError(f"image kind {get('image_kind')!r} is not SG or PG")
            generated = not get("item_id")
            base_id = get("item_id") or Path(image.rstrip("/")).stem or f"row{record}"
            if wide:
                made = []
                for prefix in ("sg", "pg"):
                    caption = get(f"{prefix}_caption")
                    if not caption:
                        continue
                    made.append({
                        "item_id": f"{base_id}-{prefix}", "image": image,
                        "image_kind": image_kind, "caption": caption,
                        "caption_simplified": get(f"{prefix}_caption_simplified"), "caption_kind": prefix.upper(),
                        "verb": get("verb") if prefix == "sg" else "",
                        "human_votes": ";".join(map(str, _votes_for(row, cols, prefix))),
                        "label": _label(row.get(cols[f"{prefix}_label"])) if f"{prefix}_label" in cols else "",
                    })
                if not made:
                    raise ValueError("neither an SG nor a PG caption")
            else:
                caption_kind = _kind(row.get(cols["caption_kind"]))
                if caption_kind is None:
                    raise ValueError(f"caption kind {get('caption_kind')!r} is not SG or PG")
                if not get("caption"):
                    raise ValueError("empty caption")
                item_id = get("item_id") or f"{base_id}-{caption_kind.lower()}"
                made = [{
                    "item_id": item_id, "image": image, "image_kind": image_kind, "caption": get("caption"),
                    "caption_simplified": get("caption_simplified"), "caption_kind": caption_kind,
                    "verb": get("verb"), "human_votes": ";".join(map(str, _votes_for(row, cols, None))),
                    "label": _label(row.get(cols["label"])) if "label" in cols else "",
                }]
        except ValueError as exc:
            report.bad_rows.append(BadRow(str(src), line, str(exc), record))
            continue
        for item in made:
            item["image"] = _image_ref(item["image"], image_dir, out_dir)
            add(item, line, record, generated)
    if not items:
        first = f"; first problem: {report.bad_rows[0]}" if report.bad_rows else ""
        raise InputError(f"no usable rows ({len(report.bad_rows)} bad){first}", path=src)
    out_dir.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=MANIFEST_COLUMNS)
        writer.writeheader()
        writer.writerows(items)
    report.written.append(str(out))
    report.converted = len(items)
    report.counts = {
        "items": len(items),
        "SG captions": sum(1 for i in items if i["caption_kind"] == "SG"),
        "PG captions": sum(1 for i in items if i["caption_kind"] == "PG"),
        "items with human votes": sum(1 for i in items if i["human_votes"]),
    }
    report.notes.append("layout read: " + ("wide (one row per image, SG and PG captions)" if wide
                                           else "long (one row per image-caption pair)"))
    return report


HELP = (
    "Convert a CV-Probes table to connote's probe manifest (CSV). The public release (announced at "
    "github.com/ivana-13/CV-Probes) could not be read; this reads the shape the paper describes: a CSV, TSV, "
    "JSONL or JSON list, either LONG (one row per image-caption pair: image, image_kind SG|PG, caption, "
    "caption_kind SG|PG [, caption_simplified, verb, human_votes, label, item_id]) or WIDE (one row per image: "
    "image, image_kind, sg_caption, pg_caption [, sg_caption_simplified, pg_caption_simplified, verb, "
    "sg_votes, pg_votes, sg_label, pg_label, id]). Votes: '1;1;0', 'yes,no,yes' or vote_1..vote_N columns. "
    "Column names are case-insensitive; common synonyms (image_path, image_type, ...) are accepted. Exit 0: all "
    "rows converted; 1: some rows skipped (listed with file and line); 2: unreadable input.")


def command(
    src: Annotated[Path, typer.Argument(help="The release table (CSV, TSV, JSONL or JSON list).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Manifest CSV to write.")],
    images: Annotated[Optional[Path], typer.Option("--images", help="Folder that relative image paths are "  # noqa: UP045
                                                   "relative to (default: SRC's folder).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """The command `connote datasets convert cv-probes` (its help is :data:`HELP`)."""
    print_report(convert_cv_probes(src, out, images=images), as_json)
