"""Reference-free story metrics on hand-made stories: values from each metric's definition, written out here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from connote.core.errors import InputError
from connote.vist.storyeval import (
    GROOVIST,
    GROOVIST_THETA,
    ROVIST_C,
    ROVIST_NR,
    EmbeddingPairScorer,
    SopPairScorer,
    StoryScorer,
    coherence,
    grid_regions,
    non_redundancy,
    read_concreteness,
    sentences,
)
from tests.support import tiny_models

COLOURS = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255)}
THETA = GROOVIST_THETA["vist"]


class ColourEncoder:
    """Images: their mean RGB. Texts: the sum of the colours they name, or grey when they name none."""

    def describe(self):
        return {"name": "colour-test"}

    def embed_images(self, images):
        return np.array([np.asarray(im.convert("RGB"), dtype=float).reshape(-1, 3).mean(0) for im in images])

    def embed_texts(self, texts):
        out = []
        for t in texts:
            v = sum((np.array(c, dtype=float) for w, c in COLOURS.items() if w in t.split()), np.zeros(3))
            out.append(v if v.any() else np.ones(3))
        return np.array(out)


@pytest.fixture(scope="module")
def nlp():
    from connote.vist.stats import load_spacy

    return load_spacy()


def photos():
    return {name: Image.new("RGB", (30, 24), rgb) for name, rgb in COLOURS.items()}


def scorer(metrics=("groovist",), **kw):
    ims = photos()
    return StoryScorer(metrics, encoder=ColourEncoder(), photo=ims.__getitem__, **kw)


def test_groovist_prefers_the_story_naming_what_the_photos_show(nlp) -> None:
    grounded = "the red ball was on the floor . the green tree stood tall ."
    ungrounded = "the blue sky was clear . a friend came ."
    res = scorer(nlp=nlp).score({"g": (["red", "green"], grounded), "u": (["red", "green"], ungrounded)})
    assert res.details["g"]["phrases"] == ["the red ball", "the floor", "the green tree"]
    assert res.details["u"]["phrases"] == ["the blue sky", "a friend"]

    # from the definition: s = 2.5 * max cosine over regions and photos; below theta -> -(theta - s); mean
    def s(cos):
        v = 2.5 * cos
        return v if v >= THETA else -(THETA - v)

    grey = 1 / math.sqrt(3)  # a phrase naming no colour against a pure colour
    want_g = (s(1.0) + s(grey) + s(1.0)) / 3
    want_u = (s(0.0) + s(grey)) / 2
    assert res.per_story["g"][GROOVIST] == pytest.approx(want_g, abs=1e-9)
    assert res.per_story["u"][GROOVIST] == pytest.approx(want_u, abs=1e-9)
    assert res.per_story["g"][GROOVIST] > res.per_story["u"][GROOVIST]
    assert "regions:full+grid3x3" in res.signatures["groovist"] and "concreteness:none(w=1)" in res.signatures[
        "groovist"]


def test_groovist_concreteness_weights_and_sentence_alignment(tmp_path: Path, nlp) -> None:
    ratings = tmp_path / "conc.csv"
    ratings.write_text("Word;Conc.M\nball;5\nred;4.2\ntree;4.8\nsky;4.1\n")
    conc = read_concreteness(ratings)
    story = "the green tree stood tall . the red ball was there ."
    seq = scorer(nlp=nlp, concreteness=conc, concreteness_source="conc.csv")
    res = seq.score({"x": (["red", "green"], story)})
    # "the green tree": tree rated (4.8), green not, "the" not -> 4.8; "the red ball": (4.2 + 5) / 2
    assert res.details["x"]["weights"] == [pytest.approx(4.8), pytest.approx(4.6)]
    assert res.per_story["x"][GROOVIST] == pytest.approx((2.5 * 4.8 + 2.5 * 4.6) / 2)
    # sentence i only with photo i: the tree (sentence 0) meets the red photo, the ball the green one
    sent = scorer(nlp=nlp, concreteness=conc, alignment="sentence").score({"x": (["red", "green"], story)})
    assert sent.per_story["x"][GROOVIST] == pytest.approx((-THETA * 4.8 - THETA * 4.6) / 2)
    bad = tmp_path / "bad.csv"
    bad.write_text("Word;Conc.M\nball;high\n")
    with pytest.raises(InputError, match="line 2"):
        read_concreteness(bad)


def test_groovist_missing_photo_and_no_phrase_are_notes(nlp) -> None:
    res = scorer(nlp=nlp).score({"a": (["red", "nope"], "the red ball ."), "b": (["red"], "yes .")})
    assert GROOVIST not in res.per_story["a"] and "nope" in res.notes["a"][0]
    assert res.notes["b"] == [f"{GROOVIST}: no noun phrase"]


def test_grid_regions() -> None:
    im = Image.new("RGB", (30, 24))
    regions = grid_regions(im)
    assert len(regions) == 10 and regions[0].size == (30, 24) and regions[1].size == (10, 8)


def test_non_redundancy_by_hand() -> None:
    # words without the last token: [a b c], [a b d]; inter = 2 matches / 4 in the union; no 4-word window pair
    assert non_redundancy("a b c . a b d .") == pytest.approx(1 - (0.5 + 0) / 2)
    assert non_redundancy("the cat sat . a dog ran .") == pytest.approx(1.0)
    # intra: [x y z w] against [x y z w] = 4 / 4; inter 0 -> 1 - (0 + 1) / 2
    assert non_redundancy("x y z w x y z w . q r .") == pytest.approx(0.5)
    repetitive = "we went to the park . we went to the park again . we went to the park ."
    varied = "we went to the park . the dog chased a ball . later we ate ice cream ."
    assert non_redundancy(repetitive) < non_redundancy(varied)
    assert non_redundancy("only one sentence here .") is None
    # 3 sentences, pair counts: (1,0): we,went,to,the,park = 5 / |union| 6; (2,0): 5/5; (2,1): 5/6; intra: the
    # first four words against the rest ("park", "park again", "park") share nothing: 0, 0, 0
    assert non_redundancy(repetitive) == pytest.approx(1 - (np.mean([5 / 6, 5 / 5, 5 / 6]) + 0.0) / 2)


def test_coherence_definition_and_prefix() -> None:
    calls = []

    def prob(pairs):
        calls.extend(pairs)
        return [len(b) / (len(a) + len(b)) for a, b in pairs]

    story = "a b . c d e . c d e . f ."
    pairs = [("a b .", "c d e ."), ("c d e .", "c d e ."), ("c d e .", "f .")]
    want = np.mean([7 / 12, 0.0, 3 / 10])  # the repeated sentence scores 0 and is not asked
    assert coherence(story, prob) == pytest.approx(want)
    assert ("c d e .", "c d e .") not in calls and len(calls) == 2
    calls.clear()
    acc = coherence(story, prob, prefix="accumulated")
    firsts = ["a b .", "a b . c d e .", "a b . c d e . c d e ."]
    seconds = [p[1] for p in pairs]
    assert acc == pytest.approx(np.mean([len(b) / (len(a) + len(b)) for a, b in zip(firsts, seconds)]))
    assert coherence("a b . a b . f .", prob, prefix="accumulated") == pytest.approx(np.mean([0.0, 3 / 8]))
    assert coherence("just one .", prob) is None
    assert sentences("one ! two ? three .") == ["one !", "two ?", "three ."]


def test_coherence_stand_in_and_all_three_metrics() -> None:
    enc = ColourEncoder()
    res = StoryScorer(["rovist_c", "rovist_nr"], encoder=enc).score({"s": ([], "the red car . the red bus .")})
    assert res.per_story["s"][ROVIST_C] == pytest.approx(1.0)  # both segments embed as pure red
    assert res.per_story["s"][ROVIST_NR] == pytest.approx(non_redundancy("the red car . the red bus ."))
    assert "stand-in:not-RoViST-SOP" in res.signatures["rovist_c"]
    assert EmbeddingPairScorer(enc)([("red .", "blue .")]) == [pytest.approx(0.0)]
    with pytest.raises(InputError, match="GROOViST needs"):
        StoryScorer(["groovist"])
    with pytest.raises(InputError, match="unknown story metric"):
        StoryScorer(["grooviest"], encoder=enc)


def test_sop_head_from_a_saved_albert(tmp_path: Path) -> None:
    import torch
    from transformers import AlbertConfig, AlbertForPreTraining

    folder = tmp_path / "albert"
    tok = tiny_models.bert_tokenizer(folder)
    tok.save_pretrained(folder)
    cfg = AlbertConfig(vocab_size=tok.vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=1,
                       num_attention_heads=2, intermediate_size=37, max_position_embeddings=64)
    torch.manual_seed(0)
    tiny_models.spread(AlbertForPreTraining(cfg).eval()).save_pretrained(folder)
    sop = SopPairScorer(str(folder), batch_size=8)
    pairs = [("a man rode a horse .", "he fell ."), ("yes .", "the cat sat on the big red mat today .")]
    batched = sop(pairs)
    model = AlbertForPreTraining.from_pretrained(folder).eval()
    for (a, b), got in zip(pairs, batched):  # one pair at a time, no padding: P(class 0 = in order)
        enc = tok(a, b, return_tensors="pt")
        with torch.no_grad():
            want = model(**enc).sop_logits.softmax(-1)[0, 0].item()
        assert got == pytest.approx(want, abs=1e-5)
    res = StoryScorer(["rovist_c"], pair_scorer=sop).score({"s": ([], "a man rode a horse . he fell .")})
    assert res.per_story["s"][ROVIST_C] == pytest.approx(batched[0], abs=1e-6)
    assert "stand-in:ALBERT-SOP-not-RoViST" in res.signatures["rovist_c"] and "sop:" in res.signatures["rovist_c"]


def test_groovist_with_a_registered_clip_backend(tmp_path: Path, nlp) -> None:
    """hf-clip through the model registry as GROOViST's encoder: the cosines are CLIP's own."""
    import torch
    from transformers import CLIPModel, CLIPProcessor

    from connote.models.embedders import embedder_from_spec

    folder = tiny_models.tiny_clip(tmp_path / "clip")
    enc = embedder_from_spec(f"hf-clip:{folder}?device=cpu")
    ims = photos()
    res = StoryScorer(["groovist"], encoder=enc, photo=ims.__getitem__, nlp=nlp).score(
        {"s": (["red", "blue"], "the red ball was on the floor .")})
    model, proc = CLIPModel.from_pretrained(folder).eval(), CLIPProcessor.from_pretrained(folder)
    regions = grid_regions(ims["red"]) + grid_regions(ims["blue"])
    with torch.no_grad():
        iv = model.get_image_features(**proc(images=regions, return_tensors="pt"))
        tv = model.get_text_features(**proc(text=["the red ball", "the floor"], return_tensors="pt", padding=True))
    iv, tv = (torch.nn.functional.normalize(getattr(v, "pooler_output", v), dim=-1) for v in (iv, tv))
    best = (tv @ iv.T).max(dim=1).values.tolist()
    want = np.mean([2.5 * c if 2.5 * c >= THETA else -(THETA - 2.5 * c) for c in best])
    assert res.details["s"]["alignment"] == pytest.approx(best, abs=1e-5)
    assert res.per_story["s"][GROOVIST] == pytest.approx(want, abs=1e-5)
    assert "hf-clip" in res.signatures["groovist"]


class NotAllowed:
    """Anything but tensors and argparse.Namespace in a checkpoint is refused by the loader."""


def test_rovist_released_checkpoint_layout(tmp_path: Path, capsys) -> None:
    import argparse

    import torch
    from transformers import AlbertConfig, AlbertModel

    from connote.vist.storyeval import RovistCheckpointScorer

    base = tmp_path / "albert"
    tok = tiny_models.bert_tokenizer(base)
    tok.save_pretrained(base)
    cfg = AlbertConfig(vocab_size=tok.vocab_size, embedding_size=16, hidden_size=32, num_hidden_layers=1,
                       num_attention_heads=2, intermediate_size=37, max_position_embeddings=64)
    cfg.save_pretrained(base)
    torch.manual_seed(1)
    albert = tiny_models.spread(AlbertModel(cfg).eval(), seed=1)
    linear = torch.nn.Linear(32, 2)
    state = {**{f"albert_model.{k}": v for k, v in albert.state_dict().items()},
             **{f"linear.{k}": v for k, v in linear.state_dict().items()}}
    ckpt = tmp_path / "sop_model_epoch4.pth.tar"  # RoViST's training state: model, opt (a Namespace), epoch
    torch.save({"epoch": 4, "model": state, "opt": argparse.Namespace(hidden_dim=32, dropout_prob=0.4)}, ckpt)
    scorer = RovistCheckpointScorer(ckpt, albert=str(base))
    pairs = [("a man rode a horse .", "he fell ."), ("yes .", "the cat sat on the big red mat today .")]
    got = scorer(pairs)
    for (a, b), value in zip(pairs, got):  # coherence_scorer.py: softmax of linear(pooled), index 1
        with torch.no_grad():
            want = linear(albert(**tok(a, b, return_tensors="pt")).pooler_output).softmax(-1)[0, 1].item()
        assert value == pytest.approx(want, abs=1e-5)
    sig = StoryScorer(["rovist_c"], pair_scorer=scorer).signatures()["rovist_c"]
    assert "rovist-checkpoint:sop_model_epoch4.pth.tar" in sig and "stand-in" not in sig
    evil = tmp_path / "evil.pth.tar"
    torch.save({"model": state, "opt": NotAllowed()}, evil)
    with pytest.raises(InputError, match="cannot read the RoViST-C checkpoint"):
        RovistCheckpointScorer(evil, albert=str(base))
    # and through the command, on the sample's stories and ratings
    import json

    from connote.cli import main
    from connote.vist.sample import write_sample_vist

    paths = write_sample_vist(tmp_path / "sample")
    assert main(["vist", "correlate", str(paths["ratings"]), "--stories", str(paths["test"]), "--metrics", "none",
                 "--story-metrics", "rovist_c", "--coherence-model", str(ckpt), "--coherence-albert", str(base),
                 "--n-boot", "0", "--json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["correlations"][ROVIST_C]["n"] == 6 and "rovist-checkpoint" in out["signatures"]["rovist_c"]
