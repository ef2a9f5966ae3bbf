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
from typing import Any

import numpy as np

from connote.metrics import _arrays, _ngrams
from connote.metrics._gc import gc_paused
from connote.metrics._inputs import check_aligned
from connote.metrics.bleu import ngram_counts
from connote.metrics.options import opt

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
        """Frequencies saved by :meth:`save`; anything else in the file is an ``InputError`` naming it."""
        from connote.core.jsonio import read_json

        return cls.from_saved(read_json(path, what="document frequencies file"), path)

    @classmethod
    def from_saved(cls, data: Any, path: str | os.PathLike[str]) -> DocumentFrequencies:
        """The content of a file :meth:`save` wrote, checked: ``{"n_documents": N >= 1, "df": [[ngram, n,
        count], ...]}`` with every count a number between 0 and N."""
        import math

        from connote.core.errors import InputError

        expected = 'the saved frequencies {"n_documents": N, "df": [[ngram, n, count], ...]}'
        if not isinstance(data, dict) or "n_documents" not in data or not isinstance(data.get("df"), list):
            keys = ", ".join(map(str, data)) if isinstance(data, dict) else type(data).__name__
            raise InputError(f"expected {expected}, got {keys}", path=path)
        n_docs = data["n_documents"]
        if isinstance(n_docs, bool) or not isinstance(n_docs, (int, float)) or not (
                math.isfinite(n_docs) and n_docs >= 1 and n_docs == int(n_docs)):
            raise InputError(f"n_documents must be a whole number >= 1, got {n_docs!r}", path=path)
        df: dict[tuple[str, ...], float] = {}
        for k, entry in enumerate(data["df"]):
            if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                    and isinstance(entry[2], (int, float)) and not isinstance(entry[2], bool)):
                raise InputError(f"df entry {k}: expected [ngram text, n, count], got {json.dumps(entry)[:60]}",
                                 path=path)
            text, _n, count = entry
            if not (math.isfinite(count) and 0 <= count <= n_docs):
                raise InputError(f"document frequency of {text!r} is {float(count)!r}: expected a count between 0 "
                                 f"and n_documents ({int(n_docs)})", path=path)
            df[tuple(text.split(" ")) if text else ()] = float(count)
        return cls(df, int(n_docs), str(data.get("source", str(path))))


def corpus_cider(hyps: Sequence[str], refs: Sequence[Sequence[str]], *, n: int = 4, sigma: float = SIGMA,
                 document_frequencies: DocumentFrequencies | None = None) -> tuple[float, list[float]]:
    """Corpus CIDEr-D (mean of item scores) and per-item scores.

    ``document_frequencies=None`` takes them from ``refs`` (as pycocoevalcap does).
    """
    check_aligned(hyps, refs)
    with gc_paused():
        return _corpus_cider(hyps, refs, n, sigma, document_frequencies)


def _corpus_cider(hyps: Sequence[str], refs: Sequence[Sequence[str]], n: int, sigma: float,
                  document_frequencies: DocumentFrequencies | None) -> tuple[float, list[float]]:
    """pycocoevalcap's CIDEr-D on arrays: its formula per (hypothesis, reference) pair, with the sums
    taken in another order (differences of the order of 1e-16). Both vectors of a pair weight a k-gram
    by the same idf, so ``min(h, r) * r`` needs only the k-grams the two rows share, which the shared
    n-gram arrays (:mod:`connote.metrics._ngrams`, built once for BLEU and CIDEr-D) have matched."""
    if not hyps:
        return math.nan, []
    ix = _ngrams.shared(hyps, refs, n)
    n_texts = ix.n_texts
    r_text, r_item, pair_h = ix.r_text, ix.r_item, ix.pair_h
    n_docs = len(refs) if document_frequencies is None else document_frequencies.n_documents
    ref_len = math.log(float(n_docs)) if n_docs > 0 else 0.0
    by_order = []  # per order: the cosine of every pair, before the length penalty
    length = np.zeros(n_texts)
    for k, o in enumerate(ix.orders):
        g_count, t_of, g_of, tf = o.n_grams, o.text, o.gram, o.tf
        if document_frequencies is None:
            # document frequency: in how many items' reference sets the k-gram occurs
            cnt = o.rows_of[r_text + 1] - o.rows_of[r_text]
            rows = _arrays.ranges(o.rows_of[r_text], cnt)
            item_gram = _arrays.distinct(np.repeat(r_item, cnt) * g_count + g_of[rows])
            df = np.bincount(item_gram % g_count, minlength=g_count).astype(np.float64)
        else:  # a fixed corpus: look each distinct k-gram up once
            flat = ix.flat
            df = np.array([document_frequencies.df.get(tuple(flat[p:p + k + 1]), 0.0) for p in o.first.tolist()],
                          dtype=np.float64)
        idf = ref_len - np.log(np.maximum(1.0, df))
        vals = tf * idf[g_of]
        norm = np.sqrt(np.bincount(t_of, weights=vals * vals, minlength=n_texts))
        if k == 1:  # pycocoevalcap's length: the number of bigrams
            length = np.bincount(t_of, weights=tf, minlength=n_texts)
        # sum_g min(h[g], r[g]) * r[g] over the k-grams the pair's hypothesis and reference share
        m = o.ref_row >= 0
        hv, rv = vals[o.hyp_row[m]], vals[o.ref_row[m]]
        dot = np.bincount(o.pair[m], weights=np.minimum(hv, rv) * rv, minlength=len(pair_h)).astype(np.float64)
        denom = norm[pair_h] * norm[r_text]
        nonzero = denom != 0
        dot[nonzero] /= denom[nonzero]
        by_order.append(dot)
    delta = length[pair_h] - length[r_text]
    penalty = np.e ** (-(delta ** 2) / (2 * sigma ** 2))
    sims = np.zeros(len(r_text), dtype=np.float64)
    for dot in by_order:
        sims += dot * penalty
    per_item = np.bincount(r_item, weights=sims, minlength=len(refs)) / n / ix.n_refs * 10.0
    return float(np.mean(per_item)), per_item.tolist()


@dataclass(frozen=True)
class CiderOptions:
    """Options of the ``cider`` metric."""

    cider_sigma: float = opt(SIGMA, "CIDEr-D length-penalty sigma", gt=0)
    df_corpus: Any = opt(None, "document frequencies: None (the evaluated references), a DocumentFrequencies, "
                               "a saved-frequency JSON, or a references JSON / mapping", cli=True, path="file")


def resolve_document_frequencies(spec: Any, tokenize: str | None = None) -> DocumentFrequencies | None:
    """``None`` (evaluated references), a DocumentFrequencies, a saved-DF JSON, or a references JSON/dict.

    Reference texts (not saved frequencies) get the same ``tokenize`` step as the scored text.
    """
    from collections.abc import Mapping

    from connote.metrics._inputs import read_json_mapping
    from connote.metrics.tokenize import tokenize_corpus

    if spec is None or isinstance(spec, DocumentFrequencies):
        return spec

    def refs_of(data: Mapping[str, Any]) -> list[list[str]]:
        lists = {str(k): ([v] if isinstance(v, str) else list(v)) for k, v in data.items()}
        return list(tokenize_corpus(lists, tokenize).values())

    if isinstance(spec, Mapping):
        return DocumentFrequencies.from_references(refs_of(spec), source="mapping")
    if isinstance(spec, (str, os.PathLike)):
        data = read_json_mapping(spec, "document-frequency corpus")
        if "n_documents" in data or "df" in data:  # saved frequencies (checked), not a references corpus
            return DocumentFrequencies.from_saved(data, spec)
        from connote.core.errors import InputError

        for key, value in data.items():
            if not (isinstance(value, str) or isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise InputError(f"id {key!r}: expected a reference text or a list of them, got "
                                 f"{json.dumps(value)[:60]}", path=spec)
        return DocumentFrequencies.from_references(refs_of(data), source=os.path.basename(str(spec)))
    raise TypeError(f"cannot use {type(spec).__name__} as CIDEr document frequencies")


def compute(inp: Any, options: CiderOptions):
    """The ``cider`` metric of :func:`connote.metrics.compute_scores`."""
    from connote.metrics.registry import MetricOutput, version_tag

    sigma = options.cider_sigma
    dfs = resolve_document_frequencies(options.df_corpus, inp.tokenize)
    mean, items = corpus_cider(inp.hyps, inp.refs, sigma=sigma, document_frequencies=dfs)
    per = {i: {"CIDEr": v} for i, v in zip(inp.ids, items)}
    if dfs is None:
        df = f"refs({len(inp.ids)})"
    else:
        df = f"corpus:{dfs.source}:{dfs.n_documents}docs:{dfs.fingerprint()}"
    sig = f"cider-d|n:4|sigma:{sigma:g}|clip:yes|df:{df}|tok:{inp.tok_tag()}|version:{version_tag()}"
    return MetricOutput({"CIDEr": mean}, per, sig, [])
