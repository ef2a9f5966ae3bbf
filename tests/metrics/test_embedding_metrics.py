"""BERTScore against the bert-score package on a tiny local model; ACS/ACD; CLIPScore."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from connote.metrics.clipscore import clip_score, ref_clip_score
from connote.metrics.concepts import acs_acd, concept_similarities, split_concepts

CANDS = ["the cat sat on the mat", "a dog runs fast", "red kitten", "the car is as strong as a rocket"]
REFS = [["a cat is sitting on a mat", "the cat sat"], ["the dog runs"], ["blue kitten sat", "big red cats"],
        ["the car is as power - packed as a rocket"]]


@pytest.mark.parametrize("idf", [False, True])
def test_bertscore_matches_bert_score_package(tiny_bert, idf):
    bert_score = pytest.importorskip("bert_score")
    from connote.metrics.bertscore import BERTScorer

    p, r, f = bert_score.score(CANDS, REFS, model_type=str(tiny_bert), num_layers=2, idf=idf, device="cpu",
                               nthreads=0)
    ours = BERTScorer(tiny_bert, layer=2, idf=idf, device="cpu").score(CANDS, REFS)
    assert np.allclose(ours.precision, p.numpy(), atol=1e-5)
    assert np.allclose(ours.recall, r.numpy(), atol=1e-5)
    assert np.allclose(ours.f1, f.numpy(), atol=1e-5)


def test_bertscore_baseline_rescaling_and_empty_candidate(tiny_bert, tmp_path):
    from connote.metrics.bertscore import BERTScorer

    base = tmp_path / "baseline.tsv"
    base.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.2,0.2,0.2\n2,0.5,0.4,0.3\n3,0.1,0.1,0.1\n")
    plain = BERTScorer(tiny_bert, layer=2, device="cpu").score(CANDS[:2], REFS[:2])
    scaled = BERTScorer(tiny_bert, layer=2, baseline_file=base, device="cpu")
    res = scaled.score(CANDS[:2], REFS[:2])
    assert res.f1[0] == pytest.approx((plain.f1[0] - 0.3) / 0.7, abs=1e-6)
    assert res.precision[1] == pytest.approx((plain.precision[1] - 0.5) / 0.5, abs=1e-6)
    assert "baseline:baseline.tsv" in scaled.signature() and "layer:2" in scaled.signature()
    empty = BERTScorer(tiny_bert, layer=2, device="cpu").score([""], [["a cat"]])
    assert empty.f1 == [0.0]


def test_bertscore_through_compute_scores(tiny_bert):
    from connote.metrics import compute_scores

    out = compute_scores({"1": CANDS[0]}, {"1": REFS[0]}, ["bertscore"], bertscore_model=str(tiny_bert),
                         bertscore_layer=2, per_item=True)
    assert set(out.scores) == {"BERTScore_P", "BERTScore_R", "BERTScore_F1"}
    assert "model:" in out.signatures["bertscore"]


@pytest.mark.parametrize(
    ("caption", "improved", "expected"),
    [
        ("the athlete is as strong as an ox", False, ("the athlete", "strong", "an ox")),
        ("tigers are as fierce as fire", False, ("tigers", "fierce", "fire")),
        ("the car is as power - packed as a rocket", False, (None, None, None)),
        ("the car is as power - packed as a rocket", True, ("the car", "power - packed", "a rocket")),
        ("The city is as busy as a beehive.", True, ("The city", "busy", "a beehive")),
        ("a video of a dog", True, (None, None, None)),
    ],
)
def test_split_concepts(caption, improved, expected):
    c = split_concepts(caption, improved)
    assert (c.primary, c.property, c.secondary) == expected


class HashEmbedder:
    """Deterministic bag-of-words embedder for tests (an Embedder)."""

    def describe(self):
        return {"name": "hash-bow"}

    def _vec(self, text):
        v = np.zeros(64)
        for w in text.lower().split():
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % 64] += 1
        return v

    def embed_texts(self, texts):
        return np.stack([self._vec(t) for t in texts])

    def embed_images(self, images):
        return np.stack([self._vec(str(i)) for i in images])


def test_acs_acd_definitions():
    enc = HashEmbedder()
    caps = ["the ox is as strong as an ox", "a video of a dog", "the car is as fast as a rocket"]
    cs = concept_similarities(caps, enc)
    assert cs[1] == 1.0  # concept missing
    e = enc.embed_texts(["the ox", "an ox"])
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    assert cs[0] == pytest.approx(float(e[0] @ e[1]))
    f1 = [0.9, 0.8, 0.7]
    out = acs_acd(caps, f1, enc)
    assert out["ACS"] == pytest.approx(np.mean(cs))
    assert out["ACD"] == pytest.approx(np.mean([f * (1 - c) for f, c in zip(f1, cs)]))


def test_clipscore_and_refclipscore():
    enc = HashEmbedder()
    res = clip_score(["a red car", "dog"], ["a red car", "blue sky"], enc)
    assert res["per_item"][0] == pytest.approx(2.5)
    assert res["per_item"][1] == 0.0
    ref = ref_clip_score(["a red car"], ["a red car"], [["a red car", "a dog"]], enc)
    assert ref["RefCLIPScore"] == pytest.approx(2 * 2.5 * 1.0 / 3.5)


def test_acs_acd_through_compute_scores_with_given_f1():
    from connote.metrics import compute_scores

    hyps = {"a": "the car is as power - packed as a rocket", "b": "the ox is as strong as an ox"}
    refs = {"a": ["the car is as fast as a jet"], "b": ["the man is as strong as an ox"]}
    f1 = {"a": 0.5, "b": 0.5}
    public = compute_scores(hyps, refs, ["acs_acd"], concept_encoder=HashEmbedder(), bertscore_f1=f1, per_item=True)
    improved = compute_scores(hyps, refs, ["acs_acd"], concept_encoder=HashEmbedder(), bertscore_f1=f1,
                              concept_split="improved", per_item=True)
    assert public.per_item["a"]["CS"] == 1.0 and improved.per_item["a"]["CS"] < 1.0
    assert "split:improved" in improved.signatures["acs_acd"]


def test_precomputed_f1_goes_by_id_and_a_list_is_refused():
    from connote.metrics import compute_scores
    from connote.metrics.options import OptionError

    hyps = {"a": "the ox is as strong as an ox", "b": "the car is as fast as a rocket"}
    refs = {"b": ["the car is as quick as a jet"], "a": ["the man is as strong as an ox"]}
    f1 = {"a": 0.9, "b": 0.2}
    out = compute_scores(hyps, refs, ["acs_acd"], concept_encoder=HashEmbedder(), bertscore_f1=f1, per_item=True)
    cs = out.per_item
    assert out.scores["ACD"] == pytest.approx((0.9 * (1 - cs["a"]["CS"]) + 0.2 * (1 - cs["b"]["CS"])) / 2)
    with pytest.raises(OptionError, match="expected {id: BERTScore-F1} for every item, got list"):
        compute_scores(hyps, refs, ["acs_acd"], concept_encoder=HashEmbedder(), bertscore_f1=[0.9, 0.2])
    with pytest.raises(OptionError, match="no value for id\\(s\\) 'b'"):
        compute_scores(hyps, refs, ["acs_acd"], concept_encoder=HashEmbedder(), bertscore_f1={"a": 0.9})
