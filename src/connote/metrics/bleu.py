"""BLEU-1..4 exactly as pycocoevalcap computes it.

Corpus BLEU from summed clipped n-gram matches and guesses, with the brevity penalty on the sum of
the *closest* reference lengths (ties -> the shorter reference), the same smoothing constants
(1e-15 / 1e-9) and per-item sentence BLEU for ``per_item``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from connote.metrics._gc import gc_paused
from connote.metrics._inputs import check_aligned
from connote.metrics.options import opt

try:  # the C helper behind Counter.update, without its per-call Python overhead
    from collections import _count_elements  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - other Python implementations

    def _count_elements(mapping, iterable):  # type: ignore[no-redef]
        get = mapping.get
        for x in iterable:
            mapping[x] = get(x, 0) + 1

_TINY = 1e-15
_SMALL = 1e-9


def ngram_counts(words: Sequence[str], n: int = 4) -> Counter:
    """Counts of all 1..n-grams (as tuples) of a token list."""
    counts: Counter = Counter()
    for k in range(1, n + 1):
        counts.update(zip(*[words[j:] for j in range(k)]))
    return counts


def ngram_counts_by_order(words: Sequence[str], n: int = 4) -> list[Counter]:
    """Counts of the 1-grams, 2-grams, ... n-grams (as tuples) of a token list, one Counter per order.

    Each Counter lists its n-grams in the order :func:`ngram_counts` does (first occurrence).
    """
    out = []
    for k in range(1, n + 1):
        c: Counter = Counter()
        _count_elements(c, zip(*[words[j:] for j in range(k)]))
        out.append(c)
    return out


class NgramCache:
    """Token counts and n-gram counts per text, computed once per distinct text."""

    def __init__(self, n: int = 4) -> None:
        self.n = n
        self._counts: dict[str, tuple[int, list[Counter]]] = {}

    def get(self, text: str) -> tuple[int, list[Counter]]:
        got = self._counts.get(text)
        if got is None:
            words = text.split()
            got = self._counts[text] = (len(words), ngram_counts_by_order(words, self.n))
        return got


def _stats_from_counts(testlen: int, hyp_counts: list[Counter], refs: Sequence[tuple[int, list[Counter]]],
                       n: int) -> tuple[int, int, list[int], list[int]]:
    guess = [max(0, testlen - k + 1) for k in range(1, n + 1)]
    correct = [0] * n
    for k in range(n):
        if len(refs) == 1:
            maxcounts = refs[0][1][k]
        else:
            maxcounts = dict(refs[0][1][k])
            for _, rc in refs[1:]:
                mget = maxcounts.get
                for g, c in rc[k].items():
                    if c > mget(g, 0):
                        maxcounts[g] = c
        get = maxcounts.get
        acc = 0
        for g, c in hyp_counts[k].items():
            m = get(g, 0)
            acc += c if c < m else m
        correct[k] = acc
    reflen = min((abs(r - testlen), r) for r, _ in refs)[1]
    return testlen, reflen, guess, correct


def bleu_stats(hyp: str, refs: Sequence[str], n: int = 4) -> tuple[int, int, list[int], list[int]]:
    """(hyp length, closest reference length, guesses per n, clipped matches per n) for one item."""
    cache = NgramCache(n)
    testlen, hc = cache.get(hyp)
    return _stats_from_counts(testlen, hc, [cache.get(r) for r in refs], n)


def _bleu_from(testlen: float, reflen: float, guess: Sequence[int], correct: Sequence[int], n: int) -> list[float]:
    out = []
    bleu = 1.0
    for k in range(n):
        bleu *= float(correct[k] + _TINY) / (guess[k] + _SMALL)
        out.append(bleu ** (1.0 / (k + 1)))
    ratio = (testlen + _TINY) / (reflen + _SMALL)
    if ratio < 1:
        for k in range(n):
            out[k] *= math.exp(1 - 1 / ratio)
    return out


def corpus_bleu(hyps: Sequence[str], refs: Sequence[Sequence[str]],
                n: int = 4, *, ngrams: NgramCache | None = None) -> tuple[list[float], list[list[float]]]:
    """Corpus BLEU-1..n and per-item BLEU-1..n (pycocoevalcap's ``Bleu(n).compute_score``).

    ``ngrams``: an :class:`NgramCache` (for this ``n``) to reuse across calls on the same texts.

    >>> corpus_bleu(["a cat on a mat"], [["a cat on the mat"]])[0][0]  # doctest: +ELLIPSIS
    0.79999...
    """
    check_aligned(hyps, refs)
    with gc_paused():
        return _corpus_bleu(hyps, refs, n, ngrams)


def _corpus_bleu(hyps: Sequence[str], refs: Sequence[Sequence[str]], n: int,
                 ngrams: NgramCache | None) -> tuple[list[float], list[list[float]]]:
    if ngrams is None:
        return _bleu_from_stats(*_corpus_stats(hyps, refs, n), n)
    if ngrams.n != n:
        ngrams = NgramCache(n)
    get = ngrams.get
    tl_sum = 0
    rl_sum = 0
    g_sum = [0] * n
    c_sum = [0] * n
    items = []
    for h, rs in zip(hyps, refs):
        hl, hc = get(h)
        testlen, reflen, guess, correct = _stats_from_counts(hl, hc, [get(r) for r in rs], n)
        tl_sum += testlen
        rl_sum += reflen
        for k in range(n):
            g_sum[k] += guess[k]
            c_sum[k] += correct[k]
        items.append(_bleu_from(testlen, reflen, guess, correct, n))
    return _bleu_from(tl_sum, rl_sum, g_sum, c_sum, n), items


def _corpus_stats(hyps: Sequence[str], refs: Sequence[Sequence[str]],
                  n: int) -> tuple[list[int], list[int], list[list[int]], list[list[int]]]:
    """Per item: hypothesis length, closest reference length, guesses and clipped matches per order, from
    the shared n-gram arrays (:mod:`connote.metrics._ngrams`): the counts :func:`_stats_from_counts` takes
    from Counters, all integers, so every number that follows is the same."""
    import numpy as np

    from connote.metrics import _arrays, _ngrams

    if any(len(rs) == 0 for rs in refs):
        raise ValueError("BLEU needs at least one reference per item")
    ix = _ngrams.shared(hyps, refs, n)
    n_items = len(ix.h_text)
    testlen = ix.lengths[ix.h_text]
    # the closest reference length, ties to the shorter: the least (|r - h|, r), one sortable number per pair
    rl = ix.lengths[ix.r_text]
    span = int(rl.max(initial=0)) + 1
    closest = np.abs(rl - testlen[ix.r_item]) * span + rl
    pair_starts = _arrays.offsets(ix.n_refs)[:-1]
    reflen = (np.minimum.reduceat(closest, pair_starts) % span if n_items else closest)
    correct = np.zeros((n, n_items), dtype=np.int64)
    for k, o in enumerate(ix.orders):
        cnt = o.rows_of[ix.h_text + 1] - o.rows_of[ix.h_text]  # distinct k-grams of each item's hypothesis
        h_rows = _arrays.ranges(o.rows_of[ix.h_text], cnt)
        # a pair's hypothesis k-grams are its item's, in the same order: their place in h_rows
        slot = _arrays.ranges(_arrays.offsets(cnt)[:-1][ix.r_item], cnt[ix.r_item])
        maxref = np.zeros(len(h_rows), dtype=np.int64)
        np.maximum.at(maxref, slot, np.where(o.ref_row >= 0, o.tf[o.ref_row], 0))
        clipped = np.minimum(o.tf[h_rows], maxref)
        correct[k] = np.bincount(np.repeat(np.arange(n_items), cnt), weights=clipped, minlength=n_items)
    guess = np.maximum(0, testlen[None, :] - np.arange(n, dtype=np.int64)[:, None])
    return testlen.tolist(), reflen.tolist(), guess.T.tolist(), correct.T.tolist()


def _bleu_from_stats(testlen: list[int], reflen: list[int], guess: list[list[int]], correct: list[list[int]],
                     n: int) -> tuple[list[float], list[list[float]]]:
    """Corpus and per-item BLEU from per-item statistics (the sums as pycocoevalcap takes them)."""
    items = [_bleu_from(t, r, g, c, n) for t, r, g, c in zip(testlen, reflen, guess, correct)]
    g_sum = [sum(g[k] for g in guess) for k in range(n)]
    c_sum = [sum(c[k] for c in correct) for k in range(n)]
    return _bleu_from(sum(testlen), sum(reflen), g_sum, c_sum, n), items


@dataclass(frozen=True)
class BleuOptions:
    """Options of the ``bleu`` metric."""

    bleu_n: int = opt(4, "highest n-gram order (BLEU-1..n)", ge=1)


def compute(inp: Any, options: BleuOptions):
    """The ``bleu`` metric of :func:`connote.metrics.compute_scores`."""
    from connote.metrics.registry import MetricOutput, version_tag

    n = options.bleu_n
    corpus, items = corpus_bleu(inp.hyps, inp.refs, n)
    scores = {f"Bleu_{k + 1}": corpus[k] for k in range(n)}
    per = {i: {f"Bleu_{k + 1}": v[k] for k in range(n)} for i, v in zip(inp.ids, items)}
    sig = f"bleu|n:{n}|ref:closest|smooth:pycoco|tok:{inp.tok_tag()}|version:{version_tag()}"
    return MetricOutput(scores, per, sig, [])
