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
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from connote.errors import InputError

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
        """Register ``source`` for copying; returns its URL (``/media/<name>``)."""
        source = source.resolve()
        if source in self._by_source:
            return "/media/" + self._by_source[source]
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
        shutil.copyfile(source, target)
    code = completion or completion_code(study)
    with open(out / DATA, "w", encoding="utf-8") as fh:
        for item in study.items:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
    with open(out / ATTENTION, "w", encoding="utf-8") as fh:
        for item in study.attention:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
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
