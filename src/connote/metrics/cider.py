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
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from connote.metrics._gc import gc_paused
from connote.metrics.bleu import NgramCache, _count_elements, ngram_counts

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


def _vec(counts: list[Counter], idf: dict[tuple[str, ...], float], default_idf: float, n: int):
    """TF-IDF vectors per order (dicts in n-gram order), their norms and the number of bigrams.

    Same arithmetic and accumulation order as pycocoevalcap's ``counts2vec``; ``idf`` holds
    ``log(N) - log(max(1, df))`` per n-gram, ``default_idf`` (= ``log(N)``) is for df = 0.
    """
    vec: list[dict[tuple[str, ...], float]] = []
    norm = []
    get = idf.get
    for k in range(n):
        vk = {}
        acc = 0.0
        for g, tf in counts[k].items():
            v = float(tf) * get(g, default_idf)
            vk[g] = v
            acc += v * v
        vec.append(vk)
        norm.append(math.sqrt(acc))
    length = sum(counts[1].values()) if n > 1 else 0  # pycocoevalcap's length: the number of bigrams
    return vec, norm, length


def _sim(vh, vr, nh, nr, lh, lr, n: int, sigma: float) -> list[float]:
    delta = float(lh - lr)
    penalty = math.e ** (-(delta**2) / (2 * sigma**2))
    val = []
    for k in range(n):
        ref_k = vr[k]
        hyp_k = vh[k]
        acc = 0.0
        if len(hyp_k) <= len(ref_k):
            get = ref_k.get
            for g, x in hyp_k.items():
                y = get(g)
                if y is not None:
                    acc += (x if x < y else y) * y
        else:  # visit the common n-grams in the hypothesis' order, from the smaller side
            common = ref_k.keys() & hyp_k.keys()
            if common:
                for g, x in hyp_k.items():
                    if g in common:
                        y = ref_k[g]
                        acc += (x if x < y else y) * y
        if nh[k] != 0 and nr[k] != 0:
            acc /= nh[k] * nr[k]
        val.append(acc * penalty)
    return val


def corpus_cider(hyps: Sequence[str], refs: Sequence[Sequence[str]], *, n: int = 4, sigma: float = SIGMA,
                 document_frequencies: DocumentFrequencies | None = None,
                 ngrams: NgramCache | None = None) -> tuple[float, list[float]]:
    """Corpus CIDEr-D (mean of item scores) and per-item scores.

    ``document_frequencies=None`` takes them from ``refs`` (as pycocoevalcap does). ``ngrams``: an
    :class:`~connote.metrics.bleu.NgramCache` shared with other metrics of the same texts.
    """
    with gc_paused():
        return _corpus_cider(hyps, refs, n, sigma, document_frequencies, ngrams)


def _corpus_cider(hyps: Sequence[str], refs: Sequence[Sequence[str]], n: int, sigma: float,
                  document_frequencies: DocumentFrequencies | None,
                  ngrams: NgramCache | None) -> tuple[float, list[float]]:
    if ngrams is None or ngrams.n != n:
        ngrams = NgramCache(n)
    get_counts = ngrams.get
    hyp_counts = [get_counts(h)[1] for h in hyps]
    ref_counts = [[get_counts(r)[1] for r in rs] for rs in refs]
    if document_frequencies is None:
        # in how many items' reference sets each n-gram occurs (counted in C; exact integers)
        df_counts: Counter = Counter()
        for rcs in ref_counts:
            if len(rcs) == 1:
                for ck in rcs[0]:
                    _count_elements(df_counts, ck)
            else:
                seen: set[tuple[str, ...]] = set()
                for c in rcs:
                    for ck in c:
                        seen.update(ck)
                _count_elements(df_counts, seen)
        df = df_counts
        n_docs = len(ref_counts)
    else:
        df, n_docs = document_frequencies.df, document_frequencies.n_documents
    ref_len = math.log(float(n_docs)) if n_docs > 0 else 0.0
    # ref_len - log(max(1, df)) per n-gram, the same double pycocoevalcap computes each time
    default_idf = ref_len - math.log(max(1.0, 0.0))
    if document_frequencies is None:  # df holds exactly the references' n-grams
        by_df = {d: ref_len - math.log(max(1.0, float(d))) for d in set(df.values())}
        idf = {g: by_df[d] for g, d in df.items()}
    else:  # a fixed (possibly large) corpus: only the n-grams of the evaluated texts
        by_df = {}
        idf = {}
        df_get = df.get
        texts = {id(c): c for c in hyp_counts}
        texts.update((id(c), c) for rcs in ref_counts for c in rcs)
        for counts in texts.values():
            for ck in counts:
                for g in ck:
                    d = df_get(g)
                    if d is None or g in idf:
                        continue
                    x = by_df.get(d)
                    if x is None:
                        x = by_df[d] = ref_len - math.log(max(1.0, float(d)))
                    idf[g] = x

    vec_cache: dict[int, tuple] = {}

    def vec_of(counts: list[Counter]):
        got = vec_cache.get(id(counts))
        if got is None:
            got = vec_cache[id(counts)] = (_vec(counts, idf, default_idf, n), counts)
        return got[0]

    scores = []
    for hc, rcs in zip(hyp_counts, ref_counts):
        vh, nh, lh = vec_of(hc)
        total = [0.0] * n
        for rc in rcs:
            vr, nr, lr = vec_of(rc)
            for k, v in enumerate(_sim(vh, vr, nh, nr, lh, lr, n, sigma)):
                total[k] += v
        s = sum(total) / n
        s /= len(rcs)
        s *= 10.0
        scores.append(float(s))
    mean = float(np.mean(np.array(scores))) if scores else math.nan
    return mean, scores
