"""Run folders of a generation task with their stored scores, read the same way for every paper's report
section (VIST's stories, VMC's captions): the run's metadata, its newest scores and whether they are stale."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.report.document import Run


def read_run_json(folder: Path, task: str) -> dict[str, Any] | None:
    """The results file (``results.json``, or ``run.json`` of an older folder) of a run folder of ``task``; None
    when the folder is not one (no or other task)."""
    from connote.runs.store import results_path

    path = results_path(folder)
    if not folder.is_dir() or not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # not readable as any kind's results file: not this kind's to judge
    if not isinstance(meta, dict) or meta.get("task") != task:
        return None
    return meta


def read_scored_run(folder: Path, task: str, scores_task: str, required: tuple[str, ...], output: str,
                    how_to_score: Callable[[Path, dict[str, Any]], str]
                    ) -> tuple[dict[str, Any], str, dict[str, Any], dict[str, Any] | None] | None:
    """A run folder of ``task`` with its stored scores: (its results file, "task vN", results, newest scores or None).

    Every stored scores file must have the ``required`` fields (else ``InputError`` naming it). ``results``
    holds the run's metadata, ``how_to_score(folder, meta)`` (the command that scores it), every stored file,
    and for the newest: ``scores``, ``scores_file`` and ``stale`` (``output``, the file that was scored,
    changed since it was scored).
    None when the folder is not a run of ``task``.
    """
    from connote.core.files import file_sha256
    from connote.runs.scores import stored_scores

    meta = read_run_json(folder, task)
    if meta is None:
        return None
    version = f"task v{meta.get('task_version', '?')}"
    found = stored_scores(folder, scores_task)
    for path, stored in found:
        for field in required:
            if field not in stored:
                raise InputError(f"stored scores lack {field!r}; score the run again", path=path)
    results: dict[str, Any] = {"run": meta, "how_to_score": how_to_score(folder, meta),
                               "all_scores": [str(p) for p, _ in found]}
    if not found:
        return meta, version, results, None
    path, stored = found[-1]
    source, scored = folder / output, stored.get("source") or {}
    now = file_sha256(source) if source.is_file() else None
    then = scored.get("sha256") if Path(str(scored.get("path", ""))).name == source.name else None
    results.update({"scores": stored, "scores_file": str(path), "stale": bool(now and then and now != then)})
    return meta, version, results, stored


def fmt(value: float | None, ci: Any = None, digits: int = 2, scale: float = 1.0) -> str:
    """``12.34 [10.10, 14.20]`` (times ``scale``); ``n/a`` for a missing value."""
    if value is None or not math.isfinite(value):
        return "n/a"
    text = f"{value * scale:.{digits}f}"
    if ci and ci[0] is not None and ci[1] is not None:
        text += f" [{ci[0] * scale:.{digits}f}, {ci[1] * scale:.{digits}f}]"
    return text


def run_label(folder: Path, meta: dict[str, Any]) -> str:
    """``folder (backend, decoding)`` from the run's model description."""
    model = meta.get("model_fingerprint") or {}
    parts = [str(model.get("backend") or "?")]
    for key in ("decode", "decoding", "index_by"):
        if model.get(key):
            parts.append(f"{key} {model[key]}" if key == "index_by" else str(model[key]))
    return f"{folder.name} ({', '.join(parts)})"


def unique_names(runs: list[Run]) -> list[str]:
    """Run names, with the parent folder added where two runs share a name."""
    names = [r.name for r in runs]
    return [f"{r.folder.parent.name}/{r.name}" if names.count(r.name) > 1 else r.name for r in runs]
