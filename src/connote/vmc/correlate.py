"""The VMC evaluation study's labels as human judgements for ``vmc correlate``."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from connote.core.errors import InputError
from connote.core.jsonio import read_text
from connote.metrics.correlation import RatingsFormat


def _is_labels(path: Path, header: set[str] | None) -> bool:
    return (path / "labels.csv").is_file() if header is None else {"item_id", "criterion", "label"} <= header


#: The evaluation study's labels among the human judgements (``connote.metrics.correlation.RATINGS``, from the
#: plugin): ``connote vmc correlate`` reads them (:func:`read_vmc_labels`).
LABELS = RatingsFormat("labels.csv of the VMC evaluation study (connote collect import), or its folder", _is_labels)


def read_vmc_labels(path: str | Path) -> dict[str, dict[str, list[float]]]:
    """``labels.csv`` of the VMC evaluation study (``item_id, rater, criterion, label``; or its folder):
    ``{criterion: {item id: [0/1 labels]}}``."""
    path = Path(path)
    if path.is_dir():
        path = path / "labels.csv"
    text = read_text(path, what="labels file")
    rows = list(csv.reader(text.splitlines()))
    header = [c.strip().lower() for c in rows[0]] if rows else []
    need = ("item_id", "criterion", "label")
    if not all(c in header for c in need):
        raise InputError("expected the columns item_id, rater, criterion, label (connote collect import)",
                         path=path, line=1)
    ii, ic, il = (header.index(c) for c in need)
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for n, row in enumerate(rows[1:], 2):
        if not row:
            continue
        try:
            out[row[ic].strip()][row[ii].strip()].append(float(row[il]))
        except (ValueError, IndexError):
            raise InputError(f"label {row[il] if len(row) > il else ''!r} is not 0 or 1", path=path, line=n) from None
    return {c: dict(v) for c, v in out.items()}
