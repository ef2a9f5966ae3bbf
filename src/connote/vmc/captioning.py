"""Reading a caption run folder (written by ``connote vmc caption``, :mod:`connote.vmc.task`)."""

from __future__ import annotations

from pathlib import Path

from connote.core.errors import InputError


def _read_run(run: Path) -> tuple[dict[str, object], dict[str, dict[str, object] | None]]:
    """(its results file, ``video_id -> captions.jsonl row`` or None for this run's errored videos).

    What a run captioned is its ``captions.jsonl`` (the videos of that run, ``--limit`` applied) and the errors
    its ``results.json`` (``run.json`` in a folder written before) lists, never every row its store holds under
    the same fingerprint; a line that is not whole JSON is an error naming the line.
    """
    from connote.core.jsonio import read_json, read_jsonl
    from connote.runs.store import results_path

    meta_path = results_path(run)
    if not meta_path.is_file():
        raise InputError("not a caption run folder (results.json missing)", path=run)
    meta = read_json(meta_path)
    if not isinstance(meta, dict) or not isinstance(meta.get("fingerprint"), str):
        raise InputError(f"not a caption run's {meta_path.name} (no fingerprint)", path=meta_path)
    captions = run / "captions.jsonl"
    if not captions.is_file():
        raise InputError("not a caption run folder (captions.jsonl missing)", path=run)
    rows: dict[str, dict[str, object] | None] = {}
    for lineno, row in read_jsonl(captions, what="captions file"):
        if not isinstance(row, dict) or not isinstance(row.get("video_id", row.get("question_id")), str) \
                or not isinstance(row.get("text"), str):
            raise InputError("expected an object with video_id and text (strings)", path=captions, line=lineno)
        rows[str(row.get("video_id", row.get("question_id")))] = row
    errors = meta.get("errors")
    for vid in errors if isinstance(errors, dict) else {}:
        rows.setdefault(str(vid), None)
    return meta, rows


def read_run_captions(run: str | Path) -> dict[str, str | None]:
    """``video_id -> caption`` (None for errored videos) of the run in the folder (see :func:`_read_run`)."""
    _, rows = _read_run(Path(run))
    return {vid: (str(row["text"]) if row is not None else None) for vid, row in rows.items()}


def read_run_samples(run: str | Path) -> tuple[list[dict[str, str | None]], float]:
    """The run's captions as one ``video_id -> caption`` mapping per sample, and the sampling temperature.

    A greedy run (one caption per video) is one sample at temperature 0.
    """
    meta, rows = _read_run(Path(run))
    config = meta.get("config") if isinstance(meta.get("config"), dict) else {}
    n, temperature = int(config.get("samples") or 1), float(config.get("temperature") or 0.0)  # type: ignore[union-attr]
    samples: list[dict[str, str | None]] = [{} for _ in range(n)]
    for vid, row in rows.items():
        texts = (row.get("samples") or [row["text"]] * n) if row is not None else [None] * n
        for k in range(n):
            samples[k][vid] = None if row is None else str(texts[k])  # type: ignore[index]
    return samples, temperature
