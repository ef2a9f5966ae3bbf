"""``connote reproduce`` on a released VMC answer file."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def score_file(table: Any, path: Path, gold: Path | None) -> tuple[dict[str, float], dict[str, list[float]]]:
    """The scores of a released answer file (it holds its references), and their intervals (1000 resamples)."""
    from connote.vmc.scoring import score_runs

    (res,) = score_runs([str(path)], None, n_boot=1000)
    return res.table, {k: list(v) for k, v in res.intervals.items() if v}
