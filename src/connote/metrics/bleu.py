"""BLEU-1..4 exactly as pycocoevalcap computes it.

Corpus BLEU from summed clipped n-gram matches and guesses, with the brevity penalty on the sum of
the *closest* reference lengths (ties -> the shorter reference), the same smoothing constants
(1e-15 / 1e-9) and per-item sentence BLEU for ``per_item``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

_TINY = 1e-15
_SMALL = 1e-9


def ngram_counts(words: Sequence[str], n: int = 4) -> Counter:
    """Counts of all 1..n-grams (as tuples) of a token list."""
    counts: Counter = Counter()
    for k in range(1, n + 1):
        counts.update(zip(*[words[j:] for j in range(k)]))
    return counts


def bleu_stats(hyp: str, refs: Sequence[str], n: int = 4) -> tuple[int, int, list[int], list[int]]:
    """(hyp length, closest reference length, guesses per n, clipped matches per n) for one item."""
    words = hyp.split()
    testlen = len(words)
    maxcounts: dict[tuple[str, ...], int] = {}
    reflens = []
    for ref in refs:
        rw = ref.split()
        reflens.append(len(rw))
        for g, c in ngram_counts(rw, n).items():
            if c > maxcounts.get(g, 0):
                maxcounts[g] = c
    reflen = min((abs(r - testlen), r) for r in reflens)[1]
    guess = [max(0, testlen - k + 1) for k in range(1, n + 1)]
    correct = [0] * n
    for g, c in ngram_counts(words, n).items():
        m = maxcounts.get(g, 0)
        correct[len(g) - 1] += c if c < m else m
    return testlen, reflen, guess, correct


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
                n: int = 4) -> tuple[list[float], list[list[float]]]:
    """Corpus BLEU-1..n and per-item BLEU-1..n (pycocoevalcap's ``Bleu(n).compute_score``).

    >>> corpus_bleu(["a cat on a mat"], [["a cat on the mat"]])[0][0]  # doctest: +ELLIPSIS
    0.79999...
    """
    tl_sum = 0
    rl_sum = 0
    g_sum = [0] * n
    c_sum = [0] * n
    items = []
    for h, rs in zip(hyps, refs):
        testlen, reflen, guess, correct = bleu_stats(h, rs, n)
        tl_sum += testlen
        rl_sum += reflen
        for k in range(n):
            g_sum[k] += guess[k]
            c_sum[k] += correct[k]
        items.append(_bleu_from(testlen, reflen, guess, correct, n))
    return _bleu_from(tl_sum, rl_sum, g_sum, c_sum, n), items
