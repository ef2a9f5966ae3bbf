"""Writing a ready-to-serve Potato project: config, data, media, instructions, attention checks.

A study folder holds everything Potato needs and nothing outside it is referenced:

* ``config.yaml`` — the Potato config (``potato validate`` accepts it);
* ``data.jsonl`` — one item per line (``id``, ``text`` and the study's display fields);
* ``attention.jsonl`` — attention-check items with known answers (Potato's ``attention_checks``);
* ``media/`` — copies of the images and videos, served by Potato at ``/media/<file>``;
* ``instructions.html`` — the paper's instructions with a worked example (also shown on every page);
* ``connote-study.json`` — what connote needs to import the answers back (study name, source items,
  the attention checks' answers, annotators per item, what was left out and why).

File names in ``media/`` are made from the source names with every character outside
``[A-Za-z0-9._-]`` replaced, so no path derived from data can leave the folder.

Two gates keep hostile data out of annotators' browsers:

* **media**: only a regular file (no link, no FIFO, no device) that decodes as an image or a video enters
  ``media/``, copied by a bounded read; anything else leaves its item out, named (:func:`media_problem`);
* **page text**: every text field a page shows is HTML-escaped when written and shown by Potato's
  ``html`` display (which sanitizes and so shows the escaped text as typed), so neither the page nor the
  JSON Potato embeds in ``<script>`` elements can hold markup from data; an item whose other strings
  (ids, photo ids, which annotators' answers carry back) hold ``<``, ``>`` or ``&`` is left out, named.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from connote.core.errors import InputError, ItemError
from connote.runs.store import write_jsonl

MANIFEST = "connote-study.json"
CONFIG = "config.yaml"
DATA = "data.jsonl"
ATTENTION = "attention.jsonl"
INSTRUCTIONS = "instructions.html"
OUTPUT_DIR = "annotation_output"
PLUGIN = "connote-collect"
LOGINS = ("username", "prolific", "mturk")
# The platform's id of the worker, as it arrives in the study link.
URL_ARGUMENTS = {"prolific": "PROLIFIC_PID", "mturk": "workerId"}
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str, limit: int = 80) -> str:
    """A file-name-safe version of ``text`` (no separators, no leading dots)."""
    name = _SAFE.sub("_", text).strip("._") or "item"
    return name[:limit]


@dataclass
class Study:
    """Everything a study writes; filled by the study's ``make`` function, written by :func:`write_project`."""

    name: str
    title: str
    instructions: str  # HTML body: the paper's instructions and a worked example
    schemes: list[dict[str, Any]]
    display_fields: list[dict[str, Any]]
    per_item: int = 3
    items: list[dict[str, Any]] = field(default_factory=list)
    attention: list[dict[str, Any]] = field(default_factory=list)  # items with "expected_answer"
    sources: dict[str, Any] = field(default_factory=dict)  # item id -> what import needs
    left_out: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    # connote's Potato plugin: the storyboard scheme, and the check that refuses too-short text answers
    plugins: list[str] = field(default_factory=lambda: [PLUGIN])
    media: dict[str, Path] = field(default_factory=dict)  # media file name -> source file
    attention_every: int = 4


class MediaFolder:
    """Collects source files under collision-free safe names in ``media/``."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self._by_source: dict[Path, str] = {}

    def add(self, source: Path, hint: str = "") -> str:
        """Register ``source`` for copying; returns its URL (``/media/<name>``). A file that is no image or
        video (or a link, a FIFO, a device) is an ``ItemError`` naming it: its item is left out."""
        given = source
        source = source.resolve()
        if source in self._by_source and not given.is_symlink():
            return "/media/" + self._by_source[source]
        problem = media_problem(given)
        if problem:
            raise ItemError(f"{given}: {problem}")
        stem = safe_name(hint or source.stem, 60)
        suffix = safe_name(source.suffix.lower(), 8) if source.suffix else ""
        suffix = "." + suffix.lstrip(".") if suffix else ""
        name = f"{stem}{suffix}"
        if name in self.study.media:
            digest = hashlib.sha1(str(source).encode()).hexdigest()[:8]
            name = f"{stem}-{digest}{suffix}"
        self.study.media[name] = source
        self._by_source[source] = name
        return "/media/" + name

    def admit(self, source: Path, hint: str = "", *, what: str) -> str | None:
        """:meth:`add`, or ``None`` with the refusal recorded in the study's ``left_out`` as ``what: why``."""
        try:
            return self.add(source, hint)
        except ItemError as exc:
            self.study.left_out.append(f"{what}: {exc}")
            return None

    def add_item(self, item: dict[str, Any], source: dict[str, Any], path: Path, *, media: str, what: str,
                 hint: str = "") -> bool:
        """Add a study item shown with one file: ``item`` (its ``id`` new to the study) with the file's URL under
        ``item[media]``, and what it was made from. False, with the reason in ``left_out`` as ``what: why``, where
        another item has the id or the file is refused."""
        iid = item["id"]
        if iid in self.study.sources:
            self.study.left_out.append(f"{what}: another file already has id {iid!r}")
            return False
        url = self.admit(path, hint or iid, what=what)
        if url is None:
            return False
        self.study.items.append({**item, media: url})
        self.study.sources[iid] = source
        return True


#: Container formats a study's video may have (FFmpeg also "decodes" text files as video, by its tty demuxer).
VIDEO_CONTAINERS = frozenset({"mov", "mp4", "m4a", "3gp", "matroska", "webm", "avi", "mpeg", "mpegts", "flv",
                              "ogg", "asf"})
#: The most bytes one media file may have (a video of a study is seconds long).
MAX_MEDIA_BYTES = 512 << 20


def media_problem(source: Path) -> str | None:
    """Why ``source`` may not enter a study (None when it may): it must be a regular file, not a symbolic
    link, at most :data:`MAX_MEDIA_BYTES`, and decode as an image (Pillow) or a video (a video stream PyAV
    opens)."""
    import stat

    try:
        st = source.lstat()
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link; a study takes only regular files"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a FIFO, a device or a folder)"
    if st.st_size > MAX_MEDIA_BYTES:
        return f"is {st.st_size} bytes, more than a study's media file may have ({MAX_MEDIA_BYTES})"
    try:
        from PIL import Image

        with Image.open(source) as im:
            im.verify()
        return None
    except Exception:  # noqa: BLE001 - not an image: try a video
        pass
    try:
        import av

        with av.open(str(source)) as container:
            formats = set(container.format.name.split(","))
            if container.streams.video and formats & VIDEO_CONTAINERS:
                return None
    except Exception:  # noqa: BLE001 - neither decodes
        pass
    return "does not decode as an image or a video"


def _copy_media(source: Path, target: Path) -> None:
    """Copy a media file that :func:`media_problem` passed: opened without following a link, read to at most
    :data:`MAX_MEDIA_BYTES`, written as a new file."""
    import os
    import stat

    fd = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with open(fd, "rb") as src:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            raise InputError("changed into something that is not a regular file", path=source)
        with open(target, "xb") as dst:
            left = MAX_MEDIA_BYTES
            while block := src.read(min(1 << 20, left + 1)):
                left -= len(block)
                if left < 0:
                    raise InputError(f"grew past {MAX_MEDIA_BYTES} bytes while copied", path=source)
                dst.write(block)


def check_media_folder(folder: Path) -> None:
    """Refuse to serve a study whose ``media/`` holds anything but regular files (a link placed there would
    be served to anyone, logged in or not)."""
    import stat

    media = folder / "media"
    if not media.exists():
        return
    for entry in sorted(media.iterdir()):
        mode = entry.lstat().st_mode
        if stat.S_ISLNK(mode) or not stat.S_ISREG(mode):
            raise InputError(f"{'a symbolic link' if stat.S_ISLNK(mode) else 'not a regular file'} in the study's "
                             "media folder; a study serves only the files `connote collect make` copied there",
                             path=entry)


def _page_safe(study: Study) -> None:
    """Escape the texts the pages show; leave out items whose other strings hold markup characters."""
    shown = {f["key"] for f in study.display_fields if f.get("type") == "text"} | {"text"}
    for f in study.display_fields:
        if f.get("type") == "text":
            f["type"] = "html"  # Potato sanitizes it, so the escaped text shows as typed

    def markup(value: Any) -> bool:
        if isinstance(value, str):
            return bool(_MARKUP.search(value))
        if isinstance(value, dict):
            return any(markup(v) for v in value.values())
        if isinstance(value, list):
            return any(markup(v) for v in value)
        return False

    for items in (study.items, study.attention):
        keep = []
        for item in items:
            bad = sorted(k for k, v in item.items() if k not in shown and markup(v))
            if bad:
                study.left_out.append(f"{item.get('id')!r}: field {bad[0]} holds <, > or & (page markup)")
                continue
            for k in shown:
                if isinstance(item.get(k), str):
                    item[k] = html.escape(item[k], quote=False)
            keep.append(item)
        items[:] = keep


_MARKUP = re.compile(r"[<>&]")


def completion_code(study: Study) -> str:
    """A code derived from the study's items, so making the same study twice gives the same code."""
    digest = hashlib.sha256(json.dumps([study.name, [i["id"] for i in study.items]]).encode()).hexdigest()
    return "CN" + digest[:8].upper()


def login_config(login: str) -> dict[str, Any]:
    """Potato's login settings: a typed username, or the platform id from the study link."""
    if login not in LOGINS:
        raise InputError(f"--login must be one of {', '.join(LOGINS)}, got {login!r}")
    if login == "username":
        return {"login": {"type": "password"}, "require_password": False}
    return {"login": {"type": "url_direct", "url_argument": URL_ARGUMENTS[login]}, "require_password": False}


def _instructions_page(study: Study, code: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(study.title)}"
            f"</title></head>\n<body style=\"font-family: sans-serif; max-width: 50em; margin: 2em auto;\">\n"
            f"<h1>{html.escape(study.title)}</h1>\n{study.instructions}\n"
            f"<p>When you have finished every item you are shown, the page gives you the completion code "
            f"(<code>{html.escape(code)}</code>) to enter on the recruiting platform.</p>\n</body></html>\n")


def write_project(study: Study, out: str | Path, *, completion: str | None = None, login: str = "username",
                  max_per_user: int | None = None) -> Path:
    """Write ``study`` as a Potato project into ``out`` (created; must be empty or absent)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise InputError("the study folder exists and is not empty; choose a new --out", path=out)
    _page_safe(study)
    if not study.items:
        why = study.left_out if len(study.left_out) <= 10 else study.left_out[:9] + [
            f"... and {len(study.left_out) - 9} more"]
        raise InputError(f"no usable items for {study.name}: " + ("; ".join(why) or "empty input"))
    if study.per_item < 1:
        raise InputError(f"--per-item must be at least 1, got {study.per_item}")
    out.mkdir(parents=True, exist_ok=True)
    media_dir = out / "media"
    media_dir.mkdir()
    root = media_dir.resolve()
    for name, source in sorted(study.media.items()):
        target = (media_dir / name).resolve()
        if target.parent != root:  # cannot happen with safe_name; a guard for the rule, not a branch
            raise InputError(f"media name {name!r} would leave the study folder")
        _copy_media(source, target)
    code = completion or completion_code(study)
    write_jsonl(out / DATA, study.items)
    write_jsonl(out / ATTENTION, study.attention)
    (out / INSTRUCTIONS).write_text(_instructions_page(study, code), encoding="utf-8")
    config: dict[str, Any] = {
        "annotation_task_name": study.title,
        "task_dir": ".",
        "output_annotation_dir": OUTPUT_DIR,
        "data_files": [DATA],
        "item_properties": {"id_key": "id", "text_key": "text"},
        "media_directory": "media",
        "annotation_instructions": study.instructions,
        "instance_display": {"layout": {"direction": "vertical"}, "fields": study.display_fields},
        "annotation_schemes": study.schemes,
        "user_config": {"allow_all_users": True},
        **login_config(login),
        "assignment_strategy": "fixed_order",
        "num_annotators_per_item": study.per_item,
        "completion_code": code,
    }
    if max_per_user:
        config["max_annotations_per_user"] = max_per_user
    if study.attention:
        config["attention_checks"] = {
            "enabled": True, "items_file": ATTENTION, "frequency": study.attention_every,
            # Potato warns after one failed check and blocks after two; import excludes on the first.
            "failure_handling": {"warn_threshold": 1, "block_threshold": 2},
        }
    if study.plugins:
        config["plugins"] = list(study.plugins)
    (out / CONFIG).write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=100),
                              encoding="utf-8")
    manifest = {
        "study": study.name, "format": 1, "per_item": study.per_item, "completion_code": code, "login": login,
        "items": [i["id"] for i in study.items], "sources": study.sources,
        "attention": {a["id"]: a["expected_answer"] for a in study.attention},
        "left_out": study.left_out, "options": study.options,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=True) + "\n",
                                encoding="utf-8")
    return out


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The ``connote-study.json`` of a study folder (made by ``connote collect make``)."""
    path = Path(folder) / MANIFEST
    if not path.exists():
        raise InputError(f"not a connote study folder ({MANIFEST} missing; make one with `connote collect make`)",
                         path=folder)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg})", path=path, line=exc.lineno) from None


# --------------------------------------------------------------------------- scheme builders


def radio(name: str, description: str, labels: Sequence[str], *, keys: bool = True, **extra: Any) -> dict[str, Any]:
    """A required single-choice question (number keys 1..n select when ``keys``)."""
    scheme = {"annotation_type": "radio", "name": name, "description": description, "labels": list(labels),
              "label_requirement": {"required": True}, **extra}
    if keys:
        scheme["sequential_key_binding"] = True
    return scheme


def textbox(name: str, description: str, *, min_chars: int = 0, rows: int = 2, required: bool = True,
            labels: Iterable[str] | None = None, **extra: Any) -> dict[str, Any]:
    """A text answer; ``min_chars`` makes the page refuse shorter (or empty) answers."""
    scheme: dict[str, Any] = {"annotation_type": "text", "name": name, "description": description,
                              "textarea": {"on": True, "rows": rows, "cols": 60}, **extra}
    if labels is not None:
        scheme["labels"] = list(labels)
    if required:
        scheme["label_requirement"] = {"required": True}
    if min_chars:
        scheme["min_chars"] = min_chars
    return scheme


def example_block(title: str, body: str) -> str:
    """A boxed worked example inside the instructions."""
    return (f"<div style=\"border:1px solid #bbb;border-radius:6px;padding:0.6em 1em;margin:0.6em 0;"
            f"background:#f7f7f7\"><b>{html.escape(title)}</b><br>{body}</div>")
