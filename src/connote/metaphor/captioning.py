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
