"""``connote reproduce`` on a released VIST output file (AREL album predictions, challenge submissions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from connote.core.errors import InputError


def score_file(table: Any, path: Path, gold: Path | None) -> tuple[dict[str, float], dict[str, list[float]]]:
    """The scores of a released output file under ``table``'s protocol, and their intervals (1000 resamples)."""
    if gold is None:
        raise InputError(f"{table.id} needs --refs (VIST's test story-in-sequence file) to score {path.name}")
    from connote.vist.challenge import read_gold, read_submission
    from connote.vist.protocols import score

    res = score(table.match.get("protocol", "album"), read_submission(path), read_gold(gold), n_boot=1000)
    return res.scores, {k: list(v) for k, v in res.ci.items()}
