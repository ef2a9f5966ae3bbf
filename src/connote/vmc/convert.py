"""VMC's release converter: ``connote datasets convert vmc`` (moved from connote.datasets.convert).

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
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from connote.core.errors import InputError
from connote.datasets.convert import BadRow, ConvertReport, cell_text, decode, print_report, read_table

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
    s = cell_text(value)
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
            caps = [cell_text(row.get(c)) for c in cap_cols if cell_text(row.get(c))]
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
            answers = ([cell_text(t.get("value")) for t in turns if isinstance(t, dict) and t.get("from") == "gpt"]
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
            answer = cell_text(row.get("true_answer") or row.get("true_caption"))
            if answer and answer not in derived.setdefault(vid, []):
                derived[vid].append(answer)
            note_split(split, vid)

    for path in found.split_lists:
        split = _split_of(path)
        for lineno, line in enumerate(decode(path).splitlines(), start=1):
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


HELP = (
    "Convert the VMC release files to connote's layout in DIR: captions.csv (unique_id, annotator_1..3), "
    "splits/{train,val,test}.txt, videos.csv (video_id, path; when videos are found), youtube_urls.txt and "
    "convert-report.json. SRC is a folder (searched recursively) or one file: caption tables (.csv with "
    "unique_id or video_id and annotator_*/caption_* columns, as the authors' VMCD_v2.csv), LLaVA-style split "
    "files (train.json/val.json: records with 'video' and 'conversations'), question files "
    "(test_questions.jsonl: question_id, video, text, true_answer), split lists (train.txt, ...) and video "
    "files. Exit 0: all rows converted; 1: some rows skipped (listed with file and line); 2: unreadable input.")


def command(
    src: Annotated[Path, typer.Argument(help="Release folder or file.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output folder (created).")],
    videos: Annotated[Optional[Path], typer.Option("--videos", help="Also look for <id>.mp4 videos here.")] = None,  # noqa: UP045
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """The command `connote datasets convert vmc` (its help is :data:`HELP`)."""
    print_report(convert_vmc(src, out, videos=videos), as_json)
