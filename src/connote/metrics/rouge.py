"""ROUGE-L (LCS-based F-measure, beta = 1.2) exactly as pycocoevalcap computes it.

Tokens are split on single spaces (as pycocoevalcap does); the longest common subsequence uses a
bit-parallel algorithm (Hyyro 2004), so long multi-sentence stories cost microseconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from connote.metrics._inputs import check_aligned
from connote.metrics.options import opt

BETA = 1.2


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists.

    >>> lcs_length("a b c d".split(), "a c d b".split())
    3
    """
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[str, int] = {}
    for j, w in enumerate(b):
        masks[w] = masks.get(w, 0) | (1 << j)
    full = (1 << len(b)) - 1
    v = full
    for w in a:
        m = masks.get(w)
        if m is None:
            continue
        u = v & m
        v = ((v + u) | (v - u)) & full
    return len(b) - bin(v).count("1")


def rouge_l(hyp: str, refs: Sequence[str], beta: float = BETA) -> float:
    """ROUGE-L of one hypothesis against its references (max precision / recall over references)."""
    tc = hyp.split(" ")
    prec = []
    rec = []
    for ref in refs:
        tr = ref.split(" ")
        lcs = lcs_length(tr, tc)
        prec.append(lcs / float(len(tc)))
        rec.append(lcs / float(len(tr)))
    p, r = max(prec), max(rec)
    if p != 0 and r != 0:
        return ((1 + beta**2) * p * r) / float(r + beta**2 * p)
    return 0.0


def corpus_rouge_l(hyps: Sequence[str], refs: Sequence[Sequence[str]], beta: float = BETA) -> tuple[float, list[float]]:
    """Mean ROUGE-L and per-item values (pycocoevalcap's ``Rouge().compute_score``)."""
    import numpy as np

    check_aligned(hyps, refs)
    scores = [rouge_l(h, rs, beta) for h, rs in zip(hyps, refs)]
    return float(np.mean(np.array(scores))), scores


@dataclass(frozen=True)
class RougeOptions:
    """Options of the ``rouge_l`` metric."""

    rouge_beta: float = opt(BETA, "F-measure beta (recall weight)", gt=0)


def compute(inp: Any, options: RougeOptions):
    """The ``rouge_l`` metric of :func:`connote.metrics.compute_scores`."""
    from connote.metrics.registry import MetricOutput, version_tag

    beta = options.rouge_beta
    mean, items = corpus_rouge_l(inp.hyps, inp.refs, beta)
    per = {i: {"ROUGE_L": v} for i, v in zip(inp.ids, items)}
    return MetricOutput({"ROUGE_L": mean}, per, f"rouge_l|beta:{beta:g}|tok:{inp.tok_tag()}|version:{version_tag()}",
                        [])
