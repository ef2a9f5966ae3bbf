"""Scores kept in a run folder, keyed by what made them.

A scoring command (``connote vist score``, ``connote vmc score``) stores its result as
``<run>/scores/<prefix>-<key>.json``, where ``key`` hashes the *signature*: everything about the scoring
that changes a number (the reference file's sha256, the split, the protocol, the metrics and their
settings, the bootstrap settings), never the run's own outputs. Scoring a run against other references
or another split therefore adds a file beside the first instead of replacing it; scoring again with the
same signature replaces that one file, and says so when the run's outputs changed since (the stored
``source`` digest differs), so that stale scores are never replaced silently.

Every stored file is one JSON object::

    {"format": "connote-scores", "format_version": 1, "task": ..., "key": ..., "signature": {...},
     "source": {"path": ..., "sha256": ...}, "scored_at": ..., "connote_version": ..., ...the task's fields}

Writes are atomic (temp file + rename); non-finite numbers are stored as ``null``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.runs.store import fingerprint, write_json

SCORES_DIR = "scores"
FORMAT = "connote-scores"
FORMAT_VERSION = 1
#: Fields every stored scores file has (what :func:`read_scores` checks).
REQUIRED = ("format", "format_version", "task", "key", "signature", "scored_at")


def scores_key(signature: Mapping[str, Any]) -> str:
    """Short, order-insensitive hash of a scoring signature (12 hex digits)."""
    return fingerprint(signature)[:12]


def finite_json(obj: Any) -> Any:
    """``obj`` with NaN and infinities as None (and mapping keys as strings), so its JSON is standard."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


def save_scores(run: str | Path, task: str, prefix: str, signature: Mapping[str, Any], fields: Mapping[str, Any],
                *, source: Mapping[str, Any] | None = None) -> tuple[Path, str | None]:
    """Store one scoring result in ``run/scores/<prefix>-<key>.json``; returns (path, note).

    ``note`` is None for a new file; otherwise it says what the file held before (the same signature
    scored again: unchanged outputs, or outputs that changed since, whose old scores are replaced).
    """
    import connote

    key = scores_key(signature)
    folder = Path(run) / SCORES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{prefix}-{key}.json"
    note = None
    if path.exists():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
            old = (before.get("source") or {}).get("sha256") if isinstance(before, dict) else None
        except (OSError, ValueError, AttributeError):
            old = "unreadable"
        new = (source or {}).get("sha256")
        if old and new and old != new:
            note = (f"replaced {path}: the run's outputs changed since they were scored "
                    f"(sha256 {str(old)[:12]} -> {str(new)[:12]}); the old scores were of outputs that no longer exist")
        else:
            note = f"replaced {path} (same outputs, same scoring signature)"
    record = {"format": FORMAT, "format_version": FORMAT_VERSION, "task": task, "key": key,
              "signature": dict(signature), "source": dict(source or {}),
              "scored_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "scored_at_ns": time.time_ns(),
              "connote_version": connote.__version__, **fields}
    write_json(path, finite_json(record))
    return path, note


def read_scores(path: str | Path, task: str | None = None) -> dict[str, Any]:
    """One stored scores file, checked (an :class:`InputError` naming the file when it is broken)."""
    path = Path(path)
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON in a stored scores file ({exc.msg}); score the run again to rewrite it",
                         path=path, line=exc.lineno) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"unreadable stored scores file ({type(exc).__name__})", path=path) from None
    if not isinstance(obj, dict):
        raise InputError("a stored scores file holds one JSON object", path=path)
    missing = [k for k in REQUIRED if k not in obj]
    if missing or obj.get("format") != FORMAT:
        raise InputError(f"not a connote scores file (missing {', '.join(missing) or 'format'}); "
                         f"expected the fields {', '.join(REQUIRED)}", path=path)
    if task is not None and obj["task"] != task:
        raise InputError(f"scores of task {obj['task']!r} in a {task} run folder", path=path)
    if scores_key(obj["signature"]) != obj["key"]:
        raise InputError(f"the signature does not hash to the stored key {obj['key']!r} (edited by hand?)",
                         path=path)
    return obj


def stored_scores(run: str | Path, task: str | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Every scores file of a run folder, oldest first (by when it was scored)."""
    folder = Path(run) / SCORES_DIR
    if not folder.is_dir():
        return []
    found = [(p, read_scores(p, task)) for p in sorted(folder.glob("*.json"))]
    return sorted(found, key=lambda pr: (int(pr[1].get("scored_at_ns") or 0), pr[0].name))
