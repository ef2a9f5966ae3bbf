"""CIDEr-D exactly as pycocoevalcap's ``Cider`` computes it, plus fixed document frequencies.

For every item, TF-IDF vectors of the 1..4-grams of the hypothesis and each reference are compared
by a clipped cosine (``min(hyp, ref) * ref``), damped by a Gaussian length penalty
(``sigma = 6``), averaged over n and references and multiplied by 10. As in pycocoevalcap the
"length" in the penalty is the number of bigrams, and the IDF is ``log(N) - log(max(1, df))``.

Document frequencies come from the evaluated references (pycocoevalcap's behaviour: scores depend
on the whole evaluated set and a single item always scores 0), or from a fixed reference corpus
given once (:class:`DocumentFrequencies`), which makes an item's score independent of the rest of
the set and defined for one item.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from connote.metrics.bleu import ngram_counts

SIGMA = 6.0


@dataclass
class DocumentFrequencies:
    """N-gram document frequencies over reference sets (one document = one item's references)."""

    df: dict[tuple[str, ...], float]
    n_documents: int
    source: str = "custom"

    @classmethod
    def from_references(cls, references: Iterable[Sequence[str]], n: int = 4,
                        source: str = "custom") -> DocumentFrequencies:
        """Count, for each n-gram, in how many reference sets it occurs."""
        df: dict[tuple[str, ...], float] = {}
        count = 0
        for refs in references:
            count += 1
            seen = set()
            for r in refs:
                seen.update(ngram_counts(r.split(), n))
            for g in seen:
                df[g] = df.get(g, 0.0) + 1.0
        return cls(df, count, source)

    def fingerprint(self) -> str:
        """Short hash of the frequencies, for signatures."""
        h = hashlib.sha256()
        h.update(str(self.n_documents).encode())
        for g in sorted(self.df):
            h.update(" ".join(g).encode("utf-8") + b"\t" + str(self.df[g]).encode() + b"\n")
        return h.hexdigest()[:12]

    def save(self, path: str | os.PathLike[str]) -> None:
        data = {"n_documents": self.n_documents, "source": self.source,
                "df": [[" ".join(g), len(g), c] for g, c in self.df.items()]}
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(data, fh)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DocumentFrequencies:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        df = {tuple(t.split(" ")) if t else (): float(c) for t, _n, c in data["df"]}
        return cls(df, int(data["n_documents"]), data.get("source", str(path)))


def _vec(counts: dict[tuple[str, ...], int], df: dict[tuple[str, ...], float], ref_len: float, n: int,
         log_cache: dict[float, float]):
    vec: list[dict[tuple[str, ...], float]] = [{} for _ in range(n)]
    norm = [0.0] * n
    length = 0
    get = df.get
    for g, tf in counts.items():
        k = len(g) - 1
        d = get(g, 0.0)
        lg = log_cache.get(d)
        if lg is None:
            lg = log_cache[d] = math.log(max(1.0, d))
        v = float(tf) * (ref_len - lg)
        vec[k][g] = v
        norm[k] += v * v
        if k == 1:  # pycocoevalcap's length: the number of bigrams
            length += tf
    return vec, [math.sqrt(x) for x in norm], length


def _sim(vh, vr, nh, nr, lh, lr, n: int, sigma: float) -> list[float]:
    delta = float(lh - lr)
    penalty = math.e ** (-(delta**2) / (2 * sigma**2))
    val = []
    for k in range(n):
        ref_k = vr[k]
        acc = 0.0
        for g, x in vh[k].items():
            y = ref_k.get(g)
            if y is not None:
                acc += (x if x < y else y) * y
        if nh[k] != 0 and nr[k] != 0:
            acc /= nh[k] * nr[k]
        val.append(acc * penalty)
    return val


def corpus_cider(hyps: Sequence[str], refs: Sequence[Sequence[str]], *, n: int = 4, sigma: float = SIGMA,
                 document_frequencies: DocumentFrequencies | None = None) -> tuple[float, list[float]]:
    """Corpus CIDEr-D (mean of item scores) and per-item scores.

    ``document_frequencies=None`` takes them from ``refs`` (as pycocoevalcap does).
    """
    hyp_counts = [ngram_counts(h.split(), n) for h in hyps]
    ref_counts = [[ngram_counts(r.split(), n) for r in rs] for rs in refs]
    if document_frequencies is None:
        df: dict[tuple[str, ...], float] = {}
        for rcs in ref_counts:
            seen = set()
            for c in rcs:
                seen.update(c)
            for g in seen:
                df[g] = df.get(g, 0.0) + 1.0
        n_docs = len(ref_counts)
    else:
        df, n_docs = document_frequencies.df, document_frequencies.n_documents
    ref_len = math.log(float(n_docs)) if n_docs > 0 else 0.0
    log_cache: dict[float, float] = {}
    scores = []
    for hc, rcs in zip(hyp_counts, ref_counts):
        vh, nh, lh = _vec(hc, df, ref_len, n, log_cache)
        total = [0.0] * n
        for rc in rcs:
            vr, nr, lr = _vec(rc, df, ref_len, n, log_cache)
            for k, v in enumerate(_sim(vh, vr, nh, nr, lh, lr, n, sigma)):
                total[k] += v
        s = sum(total) / n
        s /= len(rcs)
        s *= 10.0
        scores.append(float(s))
    mean = float(np.mean(np.array(scores))) if scores else math.nan
    return mean, scores
