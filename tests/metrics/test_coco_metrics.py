"""BLEU, ROUGE-L and CIDEr-D against pycocoevalcap 1.2 (equal to 1e-9), plus edge cases."""

from __future__ import annotations

import math

import pytest

from connote.metrics import DocumentFrequencies, compute_scores, corpus_cider
from connote.metrics.rouge import lcs_length


def _pycoco_scores(gts, res):
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    b, bl = Bleu(4).compute_score(gts, res, verbose=0)
    r, rl = Rouge().compute_score(gts, res)
    c, cl = Cider().compute_score(gts, res)
    return b, bl, r, rl, c, cl


def _check(res, gts):
    b, bl, r, rl, c, cl = _pycoco_scores(gts, res)
    out = compute_scores(res, gts, ["bleu", "rouge_l", "cider"], per_item=True)
    for k in range(4):
        assert out.scores[f"Bleu_{k + 1}"] == pytest.approx(b[k], abs=1e-9)
    assert out.scores["ROUGE_L"] == pytest.approx(r, abs=1e-9)
    assert out.scores["CIDEr"] == pytest.approx(c, abs=1e-9)
    for j, i in enumerate(gts):
        for k in range(4):
            assert out.per_item[i][f"Bleu_{k + 1}"] == pytest.approx(bl[k][j], abs=1e-9)
        assert out.per_item[i]["ROUGE_L"] == pytest.approx(rl[j], abs=1e-9)
        assert out.per_item[i]["CIDEr"] == pytest.approx(cl[j], abs=1e-9)


def test_generated_text_matches_pycocoevalcap(pycoco, gen_corpus):
    res, gts = gen_corpus(300, seed=1, punct=True)
    _check(res, gts)


@pytest.mark.slow
def test_real_vist_stories_match_pycocoevalcap(pycoco, vist_album_corpus):
    res, gts = vist_album_corpus
    ids = list(gts)[:400]
    _check({i: res[i] for i in ids}, {i: gts[i] for i in ids})


def test_lcs_bit_parallel_matches_dynamic_programming():
    import random

    rng = random.Random(3)
    for _ in range(200):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 30))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 30))]
        dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                dp[i][j] = dp[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(dp[i - 1][j], dp[i][j - 1])
        assert lcs_length(a, b) == dp[len(a)][len(b)]


def test_empty_hypothesis_scores_zero_without_crash():
    out = compute_scores({"1": "", "2": "a dog"}, {"1": ["a cat sits"], "2": ["a dog runs"]},
                         ["bleu", "rouge_l", "cider", "meteor"], per_item=True)
    assert out.per_item["1"]["ROUGE_L"] == 0.0
    assert out.per_item["1"]["CIDEr"] == 0.0
    assert out.per_item["1"]["METEOR"] == 0.0
    assert out.per_item["1"]["Bleu_1"] < 1e-9
    assert all(math.isfinite(v) for v in out.scores.values())


def test_non_ascii_text_is_scored(pycoco):
    res = {"1": ["un caf\u00e9 na\u00efve \u00e0 paris"], "2": ["\u4e00\u53ea\u732b \u5728 \u5e8a\u4e0a"]}
    gts = {"1": ["un caf\u00e9 \u00e0 paris", "caf\u00e9 na\u00efve"], "2": ["\u4e00\u53ea\u732b \u5728 \u5e8a\u4e0a"]}
    _check(res, gts)


def test_cider_fixed_document_frequencies_defined_for_one_item(gen_corpus):
    res, gts = gen_corpus(50, seed=4)
    dfs = DocumentFrequencies.from_references(gts.values())
    one = compute_scores({"g0": res["g0"]}, {"g0": gts["g0"]}, ["cider"], df_corpus=dfs)
    assert one.scores["CIDEr"] > 0
    # pycocoevalcap's own frequencies make a single item score 0 (log(1) everywhere)
    assert compute_scores({"g0": res["g0"]}, {"g0": gts["g0"]}, ["cider"]).scores["CIDEr"] == 0.0
    # and the item's score does not depend on which subset is evaluated
    full = compute_scores(res, gts, ["cider"], df_corpus=dfs, per_item=True)
    assert full.per_item["g0"]["CIDEr"] == pytest.approx(one.scores["CIDEr"], abs=1e-12)
    assert "df:corpus" in one.signatures["cider"]


def test_cider_with_own_frequencies_equals_default(tmp_path, gen_corpus):
    res, gts = gen_corpus(40, seed=5)
    dfs = DocumentFrequencies.from_references(gts.values())
    hyps = [res[i][0] for i in gts]
    refs = [gts[i] for i in gts]
    a, _ = corpus_cider(hyps, refs)
    b, _ = corpus_cider(hyps, refs, document_frequencies=dfs)
    assert a == pytest.approx(b, abs=1e-12)
    dfs.save(tmp_path / "df.json")
    c, _ = corpus_cider(hyps, refs, document_frequencies=DocumentFrequencies.load(tmp_path / "df.json"))
    assert c == pytest.approx(a, abs=1e-12)
    out = compute_scores(res, gts, ["cider"], df_corpus=str(tmp_path / "df.json"))
    assert out.scores["CIDEr"] == pytest.approx(a, abs=1e-12)


def test_drop_in_classes_match_pycocoevalcap(pycoco, gen_corpus):
    from pycocoevalcap.bleu.bleu import Bleu as PBleu
    from pycocoevalcap.cider.cider import Cider as PCider

    from connote.metrics.pycoco import Bleu, Cider, Rouge

    res, gts = gen_corpus(60, seed=9)
    ours_b, ours_items = Bleu(4).compute_score(gts, res)
    ref_b, ref_items = PBleu(4).compute_score(gts, res, verbose=0)
    assert ours_b == pytest.approx(ref_b, abs=1e-12)
    assert ours_items[3] == pytest.approx(ref_items[3], abs=1e-12)
    c, cs = Cider().compute_score(gts, res)
    pc, pcs = PCider().compute_score(gts, res)
    assert c == pytest.approx(pc, abs=1e-12) and cs.shape == pcs.shape
    assert Rouge().compute_score(gts, res)[0] > 0


def test_cider_shared_and_repeated_texts_match_pycocoevalcap(pycoco, gen_corpus):
    """CIDEr-D counts each distinct text once: a hypothesis that is another item's reference, a
    reference given twice, an item with one and one with six references, a repeated word (term
    frequency > 1) - all as pycocoevalcap scores them."""
    res, gts = gen_corpus(80, seed=41, punct=True)
    ids = list(gts)
    res[ids[0]] = [gts[ids[1]][0]]
    gts[ids[2]] = [gts[ids[2]][0], gts[ids[2]][0]]
    gts[ids[3]] = gts[ids[3]][:1]
    gts[ids[4]] = [r for i in ids[4:7] for r in gts[i]][:6]
    res[ids[5]] = ["the the the cat cat sat"]
    gts[ids[5]] = ["the cat sat on the the mat", "cat cat cat"]
    _check(res, gts)


def test_df_corpus_gets_the_same_tokenization():
    corpus = {"a": ["A Cat, sitting!"], "b": ["A dog."]}
    a = compute_scores({"1": "A cat sitting"}, {"1": ["a cat, sitting"]}, ["cider"], tokenize="ptb",
                       df_corpus=corpus)
    b = compute_scores({"1": "a cat sitting"}, {"1": ["a cat sitting"]}, ["cider"],
                       df_corpus={"a": ["a cat sitting"], "b": ["a dog"]})
    assert a.scores["CIDEr"] == pytest.approx(b.scores["CIDEr"], abs=1e-12)


def test_blank_texts_match_pycocoevalcap(pycoco, gen_corpus):
    res, gts = gen_corpus(30, seed=13)
    res["g0"] = [" "]
    res["g1"] = [""]
    gts["g2"] = ["", "a cat sits"]
    _check(res, gts)


def test_shared_ngram_counts_change_no_number(gen_corpus):
    """BLEU from a shared n-gram cache (as compute_scores keeps one per call) is bit-identical to
    BLEU computed on its own."""
    from connote.metrics import corpus_bleu
    from connote.metrics.bleu import NgramCache

    res, gts = gen_corpus(200, seed=31, punct=True)
    hyps = [res[i][0] for i in gts]
    refs = [gts[i] for i in gts]
    cache = NgramCache(4)
    assert corpus_bleu(hyps, refs, ngrams=cache) == corpus_bleu(hyps, refs)
    assert corpus_bleu(hyps, refs, 2, ngrams=cache) == corpus_bleu(hyps, refs, 2)
