"""The 1..n-gram counts of a corpus as flat arrays, shared by BLEU and CIDEr-D.

Every distinct text is split on whitespace once; each k-gram gets an integer id (equal k-grams, equal
ids; ids ordered as the k-grams' word ids are, lexicographically) from one sort per order, and its
count in each text is one run of a sorted ``text * G + gram`` key. The (hypothesis, reference) pairs
the metrics compare, one per reference of every item, are matched k-gram by k-gram with one sorted
search per order: for each k-gram of a pair's hypothesis, the row of the same k-gram in the
reference (or -1).

No ``numpy.unique``: its default path (a hash table, then a sort) costs ~40x a plain ``np.sort``
on these arrays, and its first call imports ``numpy.ma``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from connote.metrics import _arrays

_I64 = np.int64


@dataclass
class Order:
    """The k-grams of one order: entries (text, k-gram, count) sorted by text, then k-gram id."""

    key: np.ndarray  # text * n_grams + gram, ascending
    text: np.ndarray
    gram: np.ndarray
    tf: np.ndarray  # the k-gram's count in the text
    n_grams: int
    rows_of: np.ndarray  # offsets: text t's entries are rows rows_of[t]:rows_of[t + 1]
    first: np.ndarray  # flat token position of each k-gram's first occurrence
    # the pairs' hypothesis k-grams: entry row in the hypothesis, and in the reference (-1: absent)
    hyp_row: np.ndarray
    ref_row: np.ndarray
    pair: np.ndarray  # the pair each of those belongs to (ascending; k-gram ids ascending in a pair)


@dataclass
class PairNgrams:
    """A corpus of items (one hypothesis, some references) as distinct texts and their k-gram entries."""

    n: int
    flat: list[str]  # all tokens of the distinct texts, text after text
    n_texts: int
    lengths: np.ndarray  # tokens per distinct text
    h_text: np.ndarray  # per item: its hypothesis's text
    r_text: np.ndarray  # per pair (one per reference of every item, item by item): the reference's text
    r_item: np.ndarray  # per pair: its item
    n_refs: np.ndarray  # per item
    orders: list[Order]

    @property
    def pair_h(self) -> np.ndarray:
        return self.h_text[self.r_item]


def _ranks(key: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ranks of ``key`` (equal values, equal ranks; ranks ordered as the values are) and their count."""
    if len(key) == 0:
        return np.zeros(0, dtype=_I64), 0
    order = np.argsort(key)
    sk = key[order]
    new = np.empty(len(sk), dtype=bool)
    new[0] = True
    np.not_equal(sk[1:], sk[:-1], out=new[1:])
    rank_sorted = np.cumsum(new, dtype=_I64) - 1
    out = np.empty(len(key), dtype=_I64)
    out[order] = rank_sorted
    return out, int(rank_sorted[-1]) + 1


def _runs(sorted_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of a sorted array and how often each occurs."""
    if len(sorted_key) == 0:
        return sorted_key, np.zeros(0, dtype=_I64)
    new = np.empty(len(sorted_key), dtype=bool)
    new[0] = True
    np.not_equal(sorted_key[1:], sorted_key[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    counts = np.diff(np.append(starts, len(sorted_key)))
    return sorted_key[starts], counts


def build(hyps: Sequence[str], refs: Sequence[Sequence[str]], n: int) -> PairNgrams:
    """Index the k-grams (k = 1..n) of every distinct hypothesis and reference text."""
    index: dict[str, int] = {}
    setdefault = index.setdefault
    h_text = np.array([setdefault(h, len(index)) for h in hyps], dtype=_I64)
    r_text = np.array([setdefault(r, len(index)) for rs in refs for r in rs], dtype=_I64)
    n_refs = np.array([len(rs) for rs in refs], dtype=_I64)
    r_item = np.repeat(np.arange(len(refs), dtype=_I64), n_refs)
    split = [t.split() for t in index]
    n_texts = len(split)
    lengths = np.fromiter(map(len, split), dtype=_I64, count=n_texts)
    flat = [w for ws in split for w in ws]
    vocab = dict.fromkeys(flat)  # word ids in order of first occurrence
    for i, w in enumerate(vocab):
        vocab[w] = i
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=_I64, count=len(flat))
    n_words = max(1, len(vocab))
    tok_text = np.repeat(np.arange(n_texts, dtype=_I64), lengths)
    ends = np.cumsum(lengths)[tok_text] if len(flat) else np.zeros(0, dtype=_I64)
    pos = np.arange(len(ids), dtype=_I64)
    pair_h = h_text[r_item]
    orders = []
    prev = ids  # per position: id of the (k-1)-gram starting there (k = 1: the word)
    for k in range(1, n + 1):
        start = pos[pos + k <= ends]
        # a k-gram is its (k-1)-gram and its last word: exact keys below n_grams(k-1) * n_words, no overflow
        if k == 1:  # the word ids are already dense ranks (of themselves)
            gram, g_count = ids, len(vocab)
        else:
            gram, g_count = _ranks(prev[start] * n_words + ids[start + k - 1])
        g_count = max(1, g_count)
        first = np.zeros(g_count, dtype=_I64)
        first[gram[::-1]] = start[::-1]
        ekey, tf = _runs(np.sort(tok_text[start] * g_count + gram))
        t_of, g_of = ekey // g_count, ekey % g_count
        rows_of = _arrays.offsets(np.bincount(t_of, minlength=n_texts))
        # every pair's hypothesis k-grams, looked up in its reference
        cnt = rows_of[pair_h + 1] - rows_of[pair_h]
        hyp_row = _arrays.ranges(rows_of[pair_h], cnt)
        pair = np.repeat(np.arange(len(pair_h), dtype=_I64), cnt)
        want = r_text[pair] * g_count + g_of[hyp_row]
        if len(ekey):
            at = np.searchsorted(ekey, want).clip(max=len(ekey) - 1)
            ref_row = np.where(ekey[at] == want, at, -1)
        else:
            ref_row = np.full(len(want), -1, dtype=_I64)
        orders.append(Order(ekey, t_of, g_of, tf, g_count, rows_of, first, hyp_row, ref_row, pair))
        prev = np.full(len(ids), -1, dtype=_I64)
        prev[start] = gram
    return PairNgrams(n, flat, n_texts, lengths, h_text, r_text, r_item, n_refs, orders)


_LAST: list[tuple[tuple[str, ...], tuple[tuple[str, ...], ...], int, PairNgrams]] = []


def shared(hyps: Sequence[str], refs: Sequence[Sequence[str]], n: int) -> PairNgrams:
    """:func:`build`, kept for the last corpus seen: BLEU and CIDEr-D in one ``compute_scores`` call index
    the same texts once. A kept index is reused only for equal texts and the same ``n``."""
    h = tuple(hyps)
    r = tuple(tuple(x) for x in refs)
    last = _LAST[0] if _LAST else None  # one read: another thread may replace it meanwhile
    if last is not None and last[2] == n and last[0] == h and last[1] == r:
        return last[3]
    got = build(h, r, n)
    _LAST[:] = [(h, r, n, got)]
    return got
