"""Converters from the public release formats of CV-Probes and VMC to connote's formats.

CV-Probes (:func:`convert_cv_probes`)
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

VMC (:func:`convert_vmc`)
    The data files are not in the code repository (github.com/abisekrk/video-metaphor-captioning);
    its notebooks and scripts show what the authors used, and this reads all of it from a folder (or
    one file): caption tables (``unique_id`` or ``video_id`` plus ``annotator_*``, ``caption_*`` or
    ``ground_truth*`` columns, as in their VMCD_v2.csv), LLaVA-style split files (a JSON list of
    ``{"id", "video", "conversations": [{"from": "human"}, {"from": "gpt", "value": caption}]}``,
    named ``train.json``/``val.json``/``test.json``), question files (JSON Lines ``{"question_id",
    "video", "text", "true_answer"}``, e.g. ``test_questions.jsonl``), split lists (``train.txt``,
    ...) and video files. It writes ``captions.csv``, ``splits/<split>.txt``, ``videos.csv`` (when
    videos were found), ``youtube_urls.txt`` and ``convert-report.json`` in the output folder.

Bad rows are recorded with file and line (or record number) and skipped; an unreadable input (not
found, not UTF-8, malformed JSON, no usable columns) is an ``InputError`` (exit status 2). Nothing
is written outside the output file or folder: the names written are fixed, never taken from data.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError


@dataclass
class BadRow:
    """A row that was skipped, and why."""

    path: str
    line: int | None
    message: str
    record: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else f"record {self.record}"
        return f"{self.path}: {where}: {self.message}"


@dataclass
class ConvertReport:
    """What a conversion read, wrote and skipped."""

    source: str
    written: list[str] = field(default_factory=list)
    rows_read: int = 0
    converted: int = 0
    bad_rows: list[BadRow] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["bad_rows"] = [str(b) for b in self.bad_rows]
        return out


# --------------------------------------------------------------------------- reading tables


def _norm(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def _decode(path: Path) -> str:
    from connote.core.jsonio import read_text

    return read_text(path, what="input")


Row = tuple[int | None, int, dict[str, Any]]
"""(line or None, record number from 1, the row with normalised column names)."""


def read_table(path: Path, bad: list[BadRow]) -> tuple[list[Row], list[str]]:
    """Rows of a CSV/TSV, JSON Lines or JSON-list file with normalised column names, and the columns.

    Malformed lines and rows with the wrong number of fields go to ``bad``; a file that cannot be read
    at all is an ``InputError``.
    """
    text = _decode(path)
    suffix = path.suffix.lower()
    rows: list[Row] = []
    if suffix in (".jsonl", ".ndjson"):
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                bad.append(BadRow(str(path), lineno, f"malformed JSON: {exc.msg} (column {exc.colno})"))
                continue
            if not isinstance(obj, dict):
                bad.append(BadRow(str(path), lineno, f"expected a JSON object, got {type(obj).__name__}"))
                continue
            rows.append((lineno, len(rows) + 1, {_norm(k): v for k, v in obj.items()}))
    elif suffix == ".json":
        from connote.core.jsonio import parse_json

        data = parse_json(text, path)
        if not isinstance(data, list):
            raise InputError("expected a JSON list of records (or use .jsonl for JSON Lines)", path=path)
        for n, obj in enumerate(data, start=1):
            if not isinstance(obj, dict):
                bad.append(BadRow(str(path), None, f"expected a JSON object, got {type(obj).__name__}", n))
                continue
            rows.append((None, n, {_norm(k): v for k, v in obj.items()}))
    else:
        first = text.splitlines()[0] if text.strip() else ""
        delimiter = "\t" if suffix == ".tsv" or ("\t" in first and "," not in first) else ","
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        header: list[str] | None = None
        previous_end = 0
        try:
            for raw in reader:
                start, previous_end = previous_end + 1, reader.line_num
                if not raw or all(not v.strip() for v in raw):
                    continue
                if header is None:
                    header = [_norm(h) for h in raw]
                    continue
                if len(raw) != len(header):
                    bad.append(BadRow(str(path), start, f"{len(raw)} fields where the header has {len(header)}"))
                    continue
                rows.append((start, len(rows) + 1, dict(zip(header, raw))))
        except csv.Error as exc:
            raise InputError(f"cannot parse as CSV: {exc}", path=path, line=reader.line_num) from None
        if header is None:
            raise InputError("empty file: no header row", path=path, line=1)
        return rows, header
    columns = sorted({k for _, _, r in rows for k in r})
    return rows, columns


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value != value:  # NaN from a pandas export
        return ""
    return str(value).strip()


# --------------------------------------------------------------------------- CV-Probes

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
    return KIND_WORDS.get(_text(value).lower())


def _vote_values(value: Any) -> list[int]:
    """Votes from a list or a ``;``/``,``/space separated string; ValueError names a bad token."""
    if isinstance(value, list):
        tokens = [_text(v) for v in value]
    else:
        s = _text(value)
        if s.startswith("["):
            try:
                return _vote_values(json.loads(s))
            except json.JSONDecodeError:
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
    s = _text(value).lower()
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
        if isinstance(value, list) or _text(value):
            return _vote_values(value)
    numbered = []
    for col, value in row.items():
        m = VOTE_COLUMN.match(col)
        if m and (m.group(1) or None) == prefix and _text(value) != "":
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
            return _text(row.get(cols[canon])) if canon in cols else ""

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


# --------------------------------------------------------------------------- VMC

ID_COLUMNS = ("unique_id", "video_id", "youtube_id", "id", "video")
CAPTION_COLUMN = re.compile(r"^(?:annotator|caption|ground_truth|reference|ref)_?\d*$")
SPLIT_NAMES = {"train": "train", "training": "train", "val": "val", "valid": "val", "validation": "val",
               "dev": "val", "test": "test", "testing": "test"}
YOUTUBE_ID = re.compile(r"^[A-Za-z0-9_-]{11}$")
VMC_OUTPUTS = ("captions.csv", "videos.csv", "youtube_urls.txt", "convert-report.json")
"""What :func:`convert_vmc` writes at the top of --out (plus ``splits/<split>.txt``)."""


def _split_of(path: Path) -> str | None:
    for part in re.split(r"[^a-z]+", path.stem.lower()):
        if part in SPLIT_NAMES:
            return SPLIT_NAMES[part]
    return None


def _video_id(value: Any) -> str:
    """The id of a video named in data: a file name's stem (``videos/abc.mp4`` -> ``abc``)."""
    s = _text(value)
    name = s.replace("\\", "/").rsplit("/", 1)[-1]
    from connote.vmc.data import VIDEO_EXTENSIONS

    stem, ext = os.path.splitext(name)
    return stem if ext.lower() in VIDEO_EXTENSIONS else name


def _valid_id(vid: str) -> str | None:
    """Why ``vid`` cannot name a video file (``None``: it can)."""
    if not vid:
        return "empty video id"
    if vid in (".", "..") or "/" in vid or "\\" in vid or "\x00" in vid:
        return f"video id {vid!r} is not a file name"
    return None


@dataclass
class _VmcInputs:
    tables: list[Path] = field(default_factory=list)
    llava: list[Path] = field(default_factory=list)
    questions: list[Path] = field(default_factory=list)
    split_lists: list[Path] = field(default_factory=list)
    videos: dict[str, Path] = field(default_factory=dict)


def _classify(paths: list[Path]) -> _VmcInputs:
    from connote.vmc.data import VIDEO_EXTENSIONS

    found = _VmcInputs()
    for p in sorted(paths):
        suffix = p.suffix.lower()
        if suffix in VIDEO_EXTENSIONS:
            found.videos.setdefault(p.stem, p)
        elif suffix in (".csv", ".tsv"):
            found.tables.append(p)
        elif suffix == ".json":
            found.llava.append(p)
        elif suffix in (".jsonl", ".ndjson"):
            found.questions.append(p)
        elif suffix == ".txt" and _split_of(p) is not None:
            found.split_lists.append(p)
    return found


def convert_vmc(src: str | Path, out: str | Path, *, videos: str | Path | None = None) -> ConvertReport:
    """Convert the VMC release files under ``src`` (a folder or one file) into connote's layout in ``out``.

    See the module docstring for what is read. Captions come from the caption tables when there are any,
    else from the LLaVA split files' answers and the question files' ``true_answer``.
    """
    src, out = Path(src), Path(out)
    if not src.exists():
        raise InputError("no such file or folder", path=src)
    if out.exists() and not out.is_dir():
        raise InputError("--out must be a folder", path=out)
    out_resolved = out.resolve()

    def ours(p: Path) -> bool:
        """Whether ``p`` is a file a previous conversion wrote into --out (not input for this one)."""
        try:
            rel = p.resolve().relative_to(out_resolved)
        except ValueError:
            return False
        return str(rel) in VMC_OUTPUTS or (len(rel.parts) == 2 and rel.parts[0] == "splits")

    def files_under(folder: Path) -> list[Path]:
        return [p for p in folder.rglob("*") if p.is_file() and not ours(p)]

    found = _classify(files_under(src) if src.is_dir() else [src])
    if videos is not None:
        vdir = Path(videos)
        if not vdir.is_dir():
            raise InputError("--videos must be a folder", path=vdir)
        found.videos.update(_classify(files_under(vdir)).videos)
    report = ConvertReport(source=str(src))
    if not (found.tables or found.llava or found.questions or found.split_lists):
        raise InputError("found no VMC release file: expected a caption table (.csv with unique_id and "
                         "annotator_* columns), LLaVA split files (train.json, val.json), question files "
                         "(*questions*.jsonl) or split lists (train.txt, ...)", path=src)

    captions: dict[str, list[str]] = {}
    table_line: dict[str, str] = {}
    splits: dict[str, list[str]] = {}
    derived: dict[str, list[str]] = {}

    def note_split(split: str | None, vid: str) -> None:
        if split is not None and vid not in splits.setdefault(split, []):
            splits[split].append(vid)

    for path in found.tables:
        bad_before = len(report.bad_rows)
        rows, columns = read_table(path, report.bad_rows)
        report.rows_read += len(rows) + len(report.bad_rows) - bad_before
        id_col = next((c for c in ID_COLUMNS if c in columns), None)
        cap_cols = [c for c in columns if CAPTION_COLUMN.match(c) and c != id_col]
        if id_col is None or not cap_cols:
            report.notes.append(f"{path}: skipped, not a caption table (columns: {', '.join(columns)})")
            continue
        split = _split_of(path)
        for line, _record, row in rows:
            vid = _video_id(row.get(id_col))
            problem = _valid_id(vid)
            caps = [_text(row.get(c)) for c in cap_cols if _text(row.get(c))]
            if problem is None and not caps:
                problem = f"video {vid}: no captions in {', '.join(cap_cols)}"
            if problem is None and vid in captions:
                problem = f"duplicate id {vid!r} (first at {table_line[vid]})"
            if problem is not None:
                report.bad_rows.append(BadRow(str(path), line, problem))
                continue
            captions[vid] = caps
            table_line[vid] = f"{path}:{line}"
            note_split(split, vid)

    for path in found.llava:
        from connote.core.jsonio import read_json

        data = read_json(path)
        if not isinstance(data, list) or (data and not any(isinstance(r, dict) and "conversations" in r
                                                            for r in data)):
            report.notes.append(f"{path}: skipped, not a LLaVA-style list of records with 'conversations'")
            continue
        split = _split_of(path)
        for n, rec in enumerate(data, start=1):
            report.rows_read += 1
            if not isinstance(rec, dict) or not (rec.get("video") or rec.get("id")):
                report.bad_rows.append(BadRow(str(path), None, "record without 'video' or 'id'", n))
                continue
            vid = _video_id(rec.get("video") or rec.get("id"))
            problem = _valid_id(vid)
            turns = rec.get("conversations")
            answers = ([_text(t.get("value")) for t in turns if isinstance(t, dict) and t.get("from") == "gpt"]
                       if isinstance(turns, list) else [])
            if problem is None and not any(answers):
                problem = f"video {vid}: no 'gpt' answer (the caption) in 'conversations'"
            if problem is not None:
                report.bad_rows.append(BadRow(str(path), None, problem, n))
                continue
            derived.setdefault(vid, []).extend(a for a in answers if a and a not in derived.get(vid, []))
            note_split(split, vid)

    for path in found.questions:
        bad_before = len(report.bad_rows)
        rows, columns = read_table(path, report.bad_rows)
        report.rows_read += len(rows) + len(report.bad_rows) - bad_before
        if "video" not in columns and "video_id" not in columns:
            report.notes.append(f"{path}: skipped, no 'video' field (not a question or answer file)")
            continue
        split = _split_of(path) or "test"
        for line, _record, row in rows:
            vid = _video_id(row.get("video") or row.get("video_id"))
            problem = _valid_id(vid)
            if problem is not None:
                report.bad_rows.append(BadRow(str(path), line, problem))
                continue
            answer = _text(row.get("true_answer") or row.get("true_caption"))
            if answer and answer not in derived.setdefault(vid, []):
                derived[vid].append(answer)
            note_split(split, vid)

    for path in found.split_lists:
        split = _split_of(path)
        for lineno, line in enumerate(_decode(path).splitlines(), start=1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            vid = _video_id(s)
            problem = _valid_id(vid)
            if problem is not None:
                report.bad_rows.append(BadRow(str(path), lineno, problem))
                continue
            note_split(split, vid)

    if not captions:
        captions = {v: caps for v, caps in derived.items() if caps}
        if captions:
            report.notes.append("captions taken from the split/question files' answers (no caption table found)")
    if not captions and not splits:
        first = f"; first problem: {report.bad_rows[0]}" if report.bad_rows else ""
        raise InputError(f"no usable captions or splits ({len(report.bad_rows)} bad row(s)){first}", path=src)

    out.mkdir(parents=True, exist_ok=True)
    if captions:
        width = max(len(c) for c in captions.values())
        with (out / "captions.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["unique_id"] + [f"annotator_{k}" for k in range(1, width + 1)])
            for vid, caps in captions.items():
                w.writerow([vid] + caps + [""] * (width - len(caps)))
        report.written.append(str(out / "captions.csv"))
    if splits:
        (out / "splits").mkdir(exist_ok=True)
        for split in ("train", "val", "test"):
            if split in splits:
                target = out / "splits" / f"{split}.txt"
                target.write_text("".join(f"{v}\n" for v in splits[split]), encoding="utf-8")
                report.written.append(str(target))
    ids = list(dict.fromkeys(list(captions) + [v for s in splits.values() for v in s]))
    with_video = [v for v in ids if v in found.videos]
    if with_video:
        with (out / "videos.csv").open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["video_id", "path"])
            for v in with_video:
                w.writerow([v, os.path.relpath(found.videos[v], out)])
        report.written.append(str(out / "videos.csv"))
    youtube = [v for v in ids if YOUTUBE_ID.match(v)]
    if youtube:
        (out / "youtube_urls.txt").write_text("".join(f"https://www.youtube.com/watch?v={v}\n" for v in youtube),
                                              encoding="utf-8")
        report.written.append(str(out / "youtube_urls.txt"))
    report.converted = len(captions)
    report.counts = {"videos with captions": len(captions), "captions": sum(len(c) for c in captions.values()),
                     **{f"{s} ids": len(v) for s, v in splits.items()},
                     "videos found": len(with_video), "ids without a video file": len(ids) - len(with_video)}
    report.written.append(str(out / "convert-report.json"))
    (out / "convert-report.json").write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
    return report


def iter_bad(report: ConvertReport, limit: int | None = None) -> Iterator[str]:
    """The bad rows as printable lines (at most ``limit``)."""
    for n, bad in enumerate(report.bad_rows):
        if limit is not None and n >= limit:
            yield f"... and {len(report.bad_rows) - limit} more"
            return
        yield str(bad)
