"""The shared n-gram arrays behind BLEU and CIDEr-D (connote.metrics._ngrams): the same numbers as the
per-item Counter path and as pycocoevalcap, exactly, on the cases the arrays make easy to get wrong."""

from __future__ import annotations

import random

import numpy as np
import pytest

from connote.metrics import _arrays, _ngrams
from connote.metrics.bleu import NgramCache, corpus_bleu
from connote.metrics.cider import corpus_cider

WORDS = "a the man dog runs on street red big small cat sits is a a".split()


def _corpus(n_items: int, seed: int, max_refs: int = 5) -> tuple[list[str], list[list[str]]]:
    """Random texts with repeated words, blank and one-word texts, texts shared between items (as VIST's
    references are) and hypotheses that are also references."""
    rng = random.Random(seed)

    def text() -> str:
        k = rng.choice([0, 1, 2, 3, 5, 8, 13, 21])
        return " ".join(rng.choice(WORDS) for _ in range(k))

    pool = [text() for _ in range(max(4, n_items // 2))]
    hyps = [rng.choice(pool) if rng.random() < 0.3 else text() for _ in range(n_items)]
    refs = [[rng.choice(pool + hyps) if rng.random() < 0.4 else text() for _ in range(rng.randint(1, max_refs))]
            for _ in range(n_items)]
    return hyps, refs


@pytest.mark.parametrize("n", [1, 2, 4, 6])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bleu_from_arrays_is_bit_identical_to_the_counter_path(n, seed):
    hyps, refs = _corpus(150, seed)
    arrays = corpus_bleu(hyps, refs, n)
    counters = corpus_bleu(hyps, refs, n, ngrams=NgramCache(n))  # the per-item Counter path
    assert arrays == counters
    assert len(arrays[1]) == 150


def test_bleu_and_cider_match_pycocoevalcap_with_shared_and_blank_texts(pycoco):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider

    hyps, refs = _corpus(200, seed=7)
    hyps = [h if h else "x" for h in hyps]  # pycocoevalcap's BLEU divides by a zero length on an empty hypothesis
    gts = {str(i): r for i, r in enumerate(refs)}
    res = {str(i): [h] for i, h in enumerate(hyps)}
    b, bl = Bleu(4).compute_score(gts, res, verbose=0)
    c, cl = Cider().compute_score(gts, res)
    ours_b, ours_bl = corpus_bleu(hyps, refs)
    ours_c, ours_cl = corpus_cider(hyps, refs)
    assert ours_b == pytest.approx(b, abs=1e-12)
    assert [x[3] for x in ours_bl] == pytest.approx(bl[3], abs=1e-12)
    assert ours_c == pytest.approx(c, abs=1e-12)
    assert ours_cl == pytest.approx(list(cl), abs=1e-12)


def test_index_counts_every_kgram_of_every_text():
    hyps, refs = ["a a b", "b c"], [["a b a b", "c"], ["a a b"]]
    ix = _ngrams.build(hyps, refs, 3)
    texts = ["a a b", "b c", "a b a b", "c"]  # distinct, hypotheses first
    assert ix.n_texts == 4 and ix.h_text.tolist() == [0, 1] and ix.r_text.tolist() == [2, 3, 0]
    for k, o in enumerate(ix.orders, start=1):
        got = {}
        for t, g, c in zip(o.text.tolist(), o.gram.tolist(), o.tf.tolist()):
            words = ix.flat[o.first[g]:o.first[g] + k]
            got[(t, tuple(words))] = c
        want = {}
        for t, s in enumerate(texts):
            w = s.split()
            for i in range(len(w) - k + 1):
                want[(t, tuple(w[i:i + k]))] = want.get((t, tuple(w[i:i + k])), 0) + 1
        assert got == want, k
    # the pairs' hypothesis k-grams found in the reference: pair 0 ("a a b" vs "a b a b"), order 2
    o = ix.orders[1]
    found = {ix.flat[o.first[o.gram[h]]] + " " + ix.flat[o.first[o.gram[h]] + 1]: int(o.tf[r])
             for p, h, r in zip(o.pair.tolist(), o.hyp_row.tolist(), o.ref_row.tolist()) if p == 0 and r >= 0}
    assert found == {"a b": 2}


def test_the_kept_index_is_reused_only_for_the_same_texts():
    hyps, refs = _corpus(40, seed=3)
    first = _ngrams.shared(hyps, refs, 4)
    assert _ngrams.shared(list(hyps), [list(r) for r in refs], 4) is first
    assert _ngrams.shared(hyps, refs, 3) is not first
    changed = list(hyps)
    changed[5] = changed[5] + " dog"
    again = _ngrams.shared(changed, refs, 4)
    assert again is not first and again.n_texts >= first.n_texts - 1
    assert corpus_bleu(changed, refs) == corpus_bleu(changed, refs, ngrams=NgramCache(4))


def test_distinct_is_numpy_unique():
    rng = np.random.default_rng(0)
    for size in (0, 1, 2, 1000):
        x = rng.integers(-50, 50, size)
        assert _arrays.distinct(x).tolist() == np.unique(x).tolist()


def test_empty_corpus_and_texts_without_kgrams():
    assert corpus_bleu([], []) == ([0.0, 0.0, 0.0, 0.0], [])
    hyps, refs = ["", "a"], [[""], ["", "b"]]
    assert corpus_bleu(hyps, refs) == corpus_bleu(hyps, refs, ngrams=NgramCache(4))
    mean, items = corpus_cider(hyps, refs)
    assert items == [0.0, 0.0] and mean == 0.0
