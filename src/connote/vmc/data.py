"""VMC data: the caption table, video folders, splits, the public QA JSONL formats, pretraining sets.

Formats
-------
* Caption table (CSV): ``unique_id, annotator_1, annotator_2, annotator_3`` (any number of
  ``annotator_*`` columns; empty cells are skipped). ``unique_id`` names the video file.
* Video folder: one file per video named ``<unique_id>.<ext>`` (``.mp4 .webm .mkv .mov .avi
  .m4v``). :func:`load_vmc` lists ids without a video and videos without captions.
* Split files: a text file with one id per line, a JSON list of ids, or a JSON object
  ``{"train": [...], "val": [...], "test": [...]}``.
* Question JSONL (the public code's input): ``{"question_id", "video", "text"}``; answer JSONL
  (its output): ``{"question_id", "video_id", "text", "true_caption"}``.
* Pretraining set (stage 1): metaphor images with their prompts plus an equal number of literal
  COCO-style image-caption pairs. Either a JSON list of ``{"image", "caption"[, "kind"]}`` records
  (``kind`` ``metaphor`` or ``literal``) or a COCO captions file (``{"images": [{"id",
  "file_name"}], "annotations": [{"image_id", "caption"}]}``), image paths relative to a folder.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError

VIDEO_EXTENSIONS = (".mp4", ".webm", ".mkv", ".mov", ".avi", ".m4v", ".ts")
METAPHOR_PROMPT = "What caption can best describe the metaphor in the video?"
LITERAL_PROMPT = "What caption can best describe the video?"


@dataclass
class VideoItem:
    """One video with its reference captions (empty for unlabelled videos)."""

    video_id: str
    path: Path | None
    captions: list[str] = field(default_factory=list)
    prompt: str = METAPHOR_PROMPT


@dataclass
class ImageItem:
    """One pretraining image with its caption (turned into a still video for stage 1)."""

    image_id: str
    path: Path
    caption: str
    kind: str = "metaphor"

    @property
    def prompt(self) -> str:
        return METAPHOR_PROMPT if self.kind == "metaphor" else LITERAL_PROMPT


@dataclass
class VmcData:
    """Matched videos and captions plus what could not be matched."""

    items: list[VideoItem]
    missing_videos: list[str] = field(default_factory=list)
    unlabelled_videos: list[str] = field(default_factory=list)

    def by_id(self) -> dict[str, VideoItem]:
        return {it.video_id: it for it in self.items}

    def subset(self, ids: Iterable[str]) -> list[VideoItem]:
        """Items in ``ids`` order; ids that are not present are skipped."""
        by = self.by_id()
        return [by[i] for i in ids if i in by]


def read_caption_table(path: str | Path) -> dict[str, list[str]]:
    """``unique_id -> [caption, ...]`` from the VMC caption CSV."""
    path = Path(path)
    if not path.exists():
        raise InputError("caption table not found", path=path)
    import io

    from connote.core.jsonio import read_text

    with io.StringIO(read_text(path, what="caption table"), newline="") as fh:  # strict UTF-8, file and line named
        reader = csv.DictReader(fh)
        header = [h.strip() for h in reader.fieldnames or []]
        if "unique_id" not in header:
            raise InputError(f"missing column unique_id (found: {', '.join(header) or 'none'})",
                             path=path, line=1)
        ann = [h for h in header if h.startswith("annotator")]
        if not ann:
            raise InputError("no annotator_* caption columns", path=path, line=1)
        table: dict[str, list[str]] = {}
        for lineno, raw in enumerate(reader, start=2):
            row = {(k or "").strip(): (v or "").strip() for k, v in raw.items()}
            vid = row.get("unique_id", "")
            if not vid:
                if any(row.values()):
                    raise InputError("empty unique_id", path=path, line=lineno, column="unique_id")
                continue
            if vid in table:
                raise InputError(f"duplicate unique_id {vid!r}", path=path, line=lineno)
            table[vid] = [row[c] for c in ann if row.get(c)]
    return table


def find_videos(folder: str | Path) -> dict[str, Path]:
    """``stem -> path`` for the video files directly in ``folder``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("video folder not found", path=folder)
    out: dict[str, Path] = {}
    for p in sorted(folder.iterdir()):
        if p.is_file() and p.suffix.lower() in VIDEO_EXTENSIONS:
            out.setdefault(p.stem, p)
    return out


def load_vmc(captions: str | Path, videos: str | Path) -> VmcData:
    """Match the caption table to the video folder, listing what does not match."""
    table = read_caption_table(captions)
    files = find_videos(videos)
    items = [VideoItem(v, files[v], caps) for v, caps in table.items() if v in files]
    return VmcData(items=items, missing_videos=[v for v in table if v not in files],
                   unlabelled_videos=[v for v in files if v not in table])


def read_split(path: str | Path, name: str | None = None) -> list[str] | dict[str, list[str]]:
    """Ids of a split file; a JSON object gives all splits unless ``name`` picks one."""
    path = Path(path)
    if not path.exists():
        raise InputError("split file not found", path=path)
    from connote.core.jsonio import parse_json, read_text

    text = read_text(path, what="split file")
    if path.suffix.lower() == ".json":
        data = parse_json(text, path)
        if isinstance(data, dict):
            splits = {k: [str(x) for x in v] for k, v in data.items()}
            if name is None:
                return splits
            if name not in splits:
                raise InputError(f"no split {name!r}; splits: {', '.join(splits)}", path=path)
            return splits[name]
        if isinstance(data, list):
            return [str(x) for x in data]
        raise InputError("expected a JSON list of ids or an object of splits", path=path)
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _read_jsonl(path: Path, required: Sequence[str]) -> list[dict[str, Any]]:
    from connote.core.jsonio import read_jsonl

    rows = []
    for lineno, row in read_jsonl(path):
        if not isinstance(row, dict):
            raise InputError("expected a JSON object", path=path, line=lineno)
        missing = [k for k in required if k not in row]
        if missing:
            raise InputError(f"missing field(s) {', '.join(missing)}", path=path, line=lineno)
        rows.append(row)
    return rows


def read_questions(path: str | Path) -> list[dict[str, Any]]:
    """The public question JSONL: ``question_id, video, text`` per line."""
    return _read_jsonl(Path(path), ("question_id", "video", "text"))


def read_answers(path: str | Path) -> list[dict[str, Any]]:
    """The public answer JSONL: ``question_id, video_id, text, true_caption`` per line."""
    return _read_jsonl(Path(path), ("question_id", "video_id", "text", "true_caption"))


def questions_for(items: Sequence[VideoItem]) -> list[dict[str, Any]]:
    """Question rows for items (the video path relative to nothing: its file name)."""
    return [{"question_id": it.video_id, "video": it.path.name if it.path else it.video_id,
             "text": it.prompt} for it in items]


def answers_for(items: Sequence[VideoItem], predictions: dict[str, str]) -> list[dict[str, Any]]:
    """Answer rows (the public output format); ``true_caption`` is the first reference."""
    return [{"question_id": it.video_id, "video_id": it.video_id, "text": predictions[it.video_id],
             "true_caption": it.captions[0] if it.captions else ""}
            for it in items if it.video_id in predictions]


def read_video_list(spec: str | Path) -> list[tuple[str, Path]]:
    """Videos to caption: a folder, a question JSONL, or a CSV manifest ``video_id, path``.

    Relative paths in a manifest are resolved against the manifest's folder.
    """
    spec = Path(spec)
    if spec.is_dir():
        return list(find_videos(spec).items())
    if not spec.exists():
        raise InputError("videos folder or manifest not found", path=spec)
    base = spec.parent
    if spec.suffix.lower() in (".jsonl", ".json"):
        return [(str(q["question_id"]), base / q["video"]) for q in read_questions(spec)]
    import io

    from connote.core.jsonio import read_text

    reader = csv.DictReader(io.StringIO(read_text(spec, what="video manifest"), newline=""))
    header = [h.strip() for h in reader.fieldnames or []]
    for col in ("video_id", "path"):
        if col not in header:
            raise InputError(f"missing column {col}; a manifest has video_id, path", path=spec, line=1)
    videos = []
    first_line: dict[str, int] = {}
    for r in reader:
        if not (r.get("video_id") or "").strip():
            continue
        if not isinstance(r.get("path"), str) or not r["path"].strip():
            raise InputError("no path for this video", path=spec, line=reader.line_num, column="path")
        video_id = r["video_id"].strip()
        if video_id in first_line:
            raise InputError(f"video_id {video_id!r} occurs more than once (first on line {first_line[video_id]}); "
                             "ids must be unique", path=spec, line=reader.line_num, column="video_id")
        first_line[video_id] = reader.line_num
        videos.append((video_id, base / r["path"].strip()))
    return videos


def read_image_captions(path: str | Path, image_dir: str | Path, kind: str | None = None) -> list[ImageItem]:
    """Image-caption pairs from a JSON list of records or a COCO captions file (see module docs)."""
    path, image_dir = Path(path), Path(image_dir)
    if not path.exists():
        raise InputError("image-caption file not found", path=path)
    from connote.core.jsonio import read_json

    data = read_json(path, what="image-caption file")
    items: list[ImageItem] = []
    if isinstance(data, dict) and "annotations" in data:
        files = {img["id"]: img["file_name"] for img in data.get("images", [])}
        for n, ann in enumerate(data["annotations"]):
            if ann["image_id"] not in files:
                raise InputError(f"annotation {n} names image_id {ann['image_id']!r} not in images",
                                 path=path)
            items.append(ImageItem(f"{ann['image_id']}_{n}", image_dir / files[ann["image_id"]],
                                   ann["caption"].strip(), kind or "literal"))
    elif isinstance(data, list):
        for n, rec in enumerate(data):
            if "image" not in rec or "caption" not in rec:
                raise InputError(f"record {n} needs 'image' and 'caption'", path=path)
            k = kind or rec.get("kind", "metaphor")
            if k not in ("metaphor", "literal"):
                raise InputError(f"record {n}: kind must be metaphor or literal, not {k!r}", path=path)
            items.append(ImageItem(str(rec.get("id", n)), image_dir / rec["image"], rec["caption"].strip(), k))
    else:
        raise InputError("expected a JSON list of {image, caption} or a COCO captions object", path=path)
    return items


def balance_pretraining(metaphor: Sequence[ImageItem], literal: Sequence[ImageItem],
                        seed: int = 0) -> list[ImageItem]:
    """Equal parts metaphor and literal pairs (the larger side sampled down), shuffled by ``seed``."""
    rng = random.Random(seed)
    n = min(len(metaphor), len(literal))
    chosen = rng.sample(list(metaphor), n) + rng.sample(list(literal), n)
    rng.shuffle(chosen)
    return chosen
