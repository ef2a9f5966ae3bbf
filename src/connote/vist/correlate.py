"""Metric-human correlation study (paper section 5).

Human ratings come as a CSV with one rating per row: story id, rating, rater (a header naming the
columns ``story_id``/``id``, ``rating``/``score`` and ``rater``/``worker`` is recognised; without one the
columns are taken in that order). The human score of a story is the mean of its ratings. Automatic
scores come per story and metric (``{story_id: {metric: value}}``, e.g. the file written by
``connote vist score --per-item``, or a CSV with a ``story_id`` column and one column per metric).

Or, as in the paper, the automatic scores are computed: each rated story is scored against the *other*
stories written for the same photo sequence (:func:`leave_one_out_scores`, metrics from
:mod:`connote.metrics` or any injected ``corpus_scorer``).

For each metric: Pearson and Spearman coefficients with scipy's p-values, over the stories that have
both a rating and a score, and percentile bootstrap intervals (stories resampled, seeded).
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from connote.errors import InputError
from connote.vist.data import read_text

ID_COLUMNS = ("story_id", "id", "story", "item_id", "sequence")
RATING_COLUMNS = ("rating", "score", "human", "value")
RATER_COLUMNS = ("rater", "worker", "worker_id", "annotator", "judge")


def _find(fields: list[str], names: tuple[str, ...]) -> str | None:
    low = {f.lower().strip(): f for f in fields}
    return next((low[n] for n in names if n in low), None)


def read_ratings(path: str | Path) -> dict[str, list[float]]:
    """Ratings by story id from a CSV; a non-numeric rating raises ``InputError`` with its line."""
    path = Path(path)
    text, _ = read_text(path)
    lines = text.splitlines()
    if not lines:
        raise InputError("empty ratings file", path=path)
    rows = list(csv.reader(lines))
    header = [c.strip() for c in rows[0]]
    id_col, rating_col = _find(header, ID_COLUMNS), _find(header, RATING_COLUMNS)
    if id_col and rating_col:
        i_id, i_rating, start = header.index(id_col), header.index(rating_col), 1
    else:
        i_id, i_rating, start = 0, 1, 0
    out: dict[str, list[float]] = defaultdict(list)
    for n, row in enumerate(rows[start:], start + 1):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) <= max(i_id, i_rating):
            raise InputError(f"expected at least {max(i_id, i_rating) + 1} columns, found {len(row)}",
                             path=path, line=n)
        try:
            value = float(row[i_rating])
        except ValueError:
            raise InputError(f"rating {row[i_rating]!r} is not a number", path=path, line=n,
                             column=i_rating + 1) from None
        out[row[i_id].strip()].append(value)
    return dict(out)


def read_metric_scores(path: str | Path) -> dict[str, dict[str, float]]:
    """Automatic scores per story: JSON ``{id: {metric: v}}`` (or ``{"per_item": ...}``) or a CSV."""
    path = Path(path)
    text, _ = read_text(path)
    if path.suffix.lower() == ".json":
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg}", path=path, line=exc.lineno, column=exc.colno) from None
        if isinstance(obj, Mapping) and "per_item" in obj:
            obj = obj["per_item"]
        if not isinstance(obj, Mapping):
            raise InputError("expected an object {story_id: {metric: value}}", path=path)
        return {str(k): {m: float(v) for m, v in d.items()} for k, d in obj.items()}
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise InputError("empty scores file", path=path)
    header = [c.strip() for c in rows[0]]
    id_col = _find(header, ID_COLUMNS) or header[0]
    i_id = header.index(id_col)
    out: dict[str, dict[str, float]] = {}
    for n, row in enumerate(rows[1:], 2):
        if not row:
            continue
        d: dict[str, float] = {}
        for j, name in enumerate(header):
            if j == i_id or j >= len(row) or not row[j].strip():
                continue
            try:
                d[name] = float(row[j])
            except ValueError:
                raise InputError(f"{name} value {row[j]!r} is not a number", path=path, line=n,
                                 column=name) from None
        out[row[i_id].strip()] = d
    return out


def leave_one_out_scores(stories: Mapping[str, tuple[tuple[str, ...], str]], *,
                         metrics: tuple[str, ...] = ("bleu", "meteor", "rouge_l", "cider"),
                         corpus_scorer: Any = None, only: set[str] | None = None) -> dict[str, dict[str, float]]:
    """Per-story scores against the other stories of the same photo sequence.

    ``stories``: story id -> (photo ids, text). Stories alone on their sequence get no score; ``only``
    restricts the scored stories (e.g. to the rated ones).
    """
    from connote.vist.protocols import _per_item, default_corpus_scorer

    by_seq: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for sid, (seq, _) in stories.items():
        by_seq[seq].append(sid)
    hyps: dict[str, str] = {}
    refs: dict[str, list[str]] = {}
    for sid, (seq, text) in stories.items():
        if only is not None and sid not in only:
            continue
        others = [stories[o][1] for o in by_seq[seq] if o != sid and stories[o][1].strip()]
        if others:
            hyps[sid], refs[sid] = text, others
    if not hyps:
        return {}
    scorer = corpus_scorer or default_corpus_scorer(metrics)
    _, per_item, _ = scorer(hyps, refs)
    return _per_item(per_item)


def correlate(ratings: Mapping[str, list[float]], scores: Mapping[str, Mapping[str, float]], *,
              n_boot: int = 1000, alpha: float = 0.05, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Pearson and Spearman of each metric with the mean human rating, with bootstrap intervals."""
    from scipy import stats

    metrics = sorted({m for d in scores.values() for m in d})
    out: dict[str, dict[str, Any]] = {}
    for m in metrics:
        ids = sorted(i for i in scores if m in scores[i] and ratings.get(i))
        x = np.array([scores[i][m] for i in ids], dtype=float)
        y = np.array([float(np.mean(ratings[i])) for i in ids], dtype=float)
        row: dict[str, Any] = {"n": len(ids)}
        if len(ids) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
            row.update({"pearson": float("nan"), "pearson_p": float("nan"), "spearman": float("nan"),
                        "spearman_p": float("nan"), "pearson_ci": [float("nan")] * 2,
                        "spearman_ci": [float("nan")] * 2,
                        "note": "fewer than 3 stories or a constant column"})
            out[m] = row
            continue
        pr = stats.pearsonr(x, y)
        sr = stats.spearmanr(x, y)
        row.update({"pearson": float(pr[0]), "pearson_p": float(pr[1]),
                    "spearman": float(sr[0]), "spearman_p": float(sr[1])})
        rng = np.random.default_rng(seed)
        pb, sb = [], []
        for _ in range(n_boot):
            idx = rng.integers(0, len(ids), size=len(ids))
            xs, ys = x[idx], y[idx]
            if np.ptp(xs) == 0 or np.ptp(ys) == 0:
                continue
            pb.append(np.corrcoef(xs, ys)[0, 1])
            sb.append(stats.spearmanr(xs, ys)[0])
        q = [alpha / 2, 1 - alpha / 2]
        row["pearson_ci"] = [float(v) for v in np.quantile(pb, q)] if pb else [float("nan")] * 2
        row["spearman_ci"] = [float(v) for v in np.quantile(sb, q)] if sb else [float("nan")] * 2
        out[m] = row
    return out
