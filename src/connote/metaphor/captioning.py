"""Reading a caption run folder (written by ``connote metaphor caption``, :mod:`connote.tasks.metaphor`)."""

from __future__ import annotations

import json
from pathlib import Path

from connote.errors import InputError


def read_run_captions(run: str | Path) -> dict[str, str | None]:
    """``video_id -> caption`` (None for errored videos) of the run recorded in the folder's ``run.json``."""
    from connote.runs import RunStore

    run = Path(run)
    meta_path = run / "run.json"
    if not meta_path.is_file():
        raise InputError("not a caption run folder (run.json missing)", path=run)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        fp = meta["fingerprint"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"not a caption run's run.json ({type(exc).__name__})", path=meta_path) from None
    with RunStore(run) as store:
        rows = store.rows(fp)
    return {vid: (row.get("caption") if not row.get("error") else None) for vid, row in rows.items()}


def read_run_samples(run: str | Path) -> tuple[list[dict[str, str | None]], float]:
    """The run's captions as one ``video_id -> caption`` mapping per sample, and the sampling temperature.

    A greedy run (one caption per video) is one sample at temperature 0.
    """
    from connote.runs import RunStore

    run = Path(run)
    read_run_captions(run)  # the same checks of the folder
    meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
    config = meta.get("config") or {}
    n, temperature = int(config.get("samples") or 1), float(config.get("temperature") or 0.0)
    with RunStore(run) as store:
        rows = store.rows(meta["fingerprint"])
    samples: list[dict[str, str | None]] = [{} for _ in range(n)]
    for vid, row in rows.items():
        texts = row.get("samples") or [row.get("caption")] * n
        for k in range(n):
            samples[k][vid] = None if row.get("error") else texts[k]
    return samples, temperature
