"""+Grounded as the paper defines it: groundable words from training text, licensed by a captioner's n-best."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from connote.cli import main
from connote.core.errors import InputError
from connote.vist.data import read_official
from connote.vist.grounding import (
    Captioner,
    GroundingVocabulary,
    PaperGrounding,
    Seq2SeqCaptioner,
    train_captioner,
)
from connote.vist.seq2seq import StoryModel, grounding_vocabulary, is_content_word, load_features, train
from tests.support.vist_fixtures import official, story_anns, write

DII_TIER = "descriptions-in-isolation"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_ratio_rule_on_a_hand_made_corpus() -> None:
    # DII: 5 tokens (dog 2, on 1, grass 1, sitting 1); SIS: 10 tokens (the 1, dog 1, had 1, fun 2, on 1, grass 2,
    # and 1, everywhere 1)
    vocab = GroundingVocabulary.from_texts(["dog on grass", "Dog sitting"],
                                           ["the dog had fun on grass", "grass and fun everywhere"])
    assert vocab.probability_ratio("dog") == pytest.approx((2 / 5) / (1 / 10))  # 4 > 1: groundable
    assert vocab.probability_ratio("grass") == 1.0  # (1/5) / (2/10): exactly 1 is not > 1
    assert vocab.probability_ratio("sitting") == float("inf")  # never in a story
    assert vocab.probability_ratio("fun") == 0.0
    assert np.isnan(vocab.probability_ratio("zebra"))
    assert vocab.groundable == {"dog", "sitting"}
    assert vocab.known == {"dog", "grass", "sitting", "fun", "everywhere"}  # function words ("had") never constrained
    assert vocab.is_groundable("DOG") and not vocab.is_groundable("grass") and not vocab.is_groundable("on")


class FixedCaptioner:
    def __init__(self, captions: dict[str, list[str]]) -> None:
        self.table, self.calls = captions, []

    def captions(self, photo_ids, n_best=5):
        self.calls.append((list(photo_ids), n_best))
        return [self.table.get(p, []) for p in photo_ids]


def test_licensed_words_from_the_captions() -> None:
    vocab = GroundingVocabulary.from_texts(["a dog on grass", "a cat sitting", "a red car"],
                                           ["we had fun", "the dog was happy and fun", "we went home"])
    assert vocab.groundable == {"dog", "grass", "cat", "sitting", "red", "car"}
    cap = FixedCaptioner({"1": ["a cat on grass", "a dog sitting", "a red car"], "2": ["a cat"]})
    assert isinstance(cap, Captioner)
    lic = vocab.licensed_words(["1", "2"], cap, n_best=1)
    assert cap.calls == [(["1", "2"], 1)]
    assert {w for w in lic if vocab.is_groundable(w)} == {"cat", "grass"}  # only the 1-best captions license
    assert {"fun", "happy", "went", "home"} <= lic  # story words are never constrained
    lic3 = vocab.licensed_words(["1", "2"], cap, n_best=3)
    assert {w for w in lic3 if vocab.is_groundable(w)} == {"cat", "grass", "dog", "sitting", "red", "car"}


# ---------------------------------------------------------------- the whole path, on files


TRAIN_DII = {"11": "a dog on the grass", "12": "a cat on a sofa", "13": "a red car on a road",
             "14": "a cake on a table", "15": "a dog with a ball", "16": "a boat on the sea"}
TEST_DII = {"21": "a cat on a sofa", "22": "a cake on a table", "23": "a boat on the sea",
            "24": "a red car on a road", "25": "a dog with a ball"}
SAME_PHOTO = {"21": "11", "22": "14", "23": "13", "24": "16", "25": "15"}  # test photo looks like training photo


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("grounding")
    dii = [a for k, (p, t) in enumerate(TRAIN_DII.items())
           for a in story_anns(f"D{k}", "A1", [p], [t], tier=DII_TIER, start=k)]
    sis = story_anns("S1", "A1", ["11", "12", "13", "14", "15"],
                     ["the dog loved the grass .", "the cat was lazy .", "we took the car .", "the cake was great .",
                      "we had fun ."])
    sis += story_anns("S2", "A1", ["12", "13", "14", "15", "16"],
                      ["the cat slept .", "the car was fast .", "we ate cake .", "the dog played .",
                       "we sailed the boat ."], start=5)
    test_dii = [a for k, (p, t) in enumerate(TEST_DII.items())
                for a in story_anns(f"T{k}", "A2", [p], [t], tier=DII_TIER, start=20 + k)]
    paths = {"dii": write(tmp / "train.description-in-isolation.json", official(dii, tier=DII_TIER)),
             "sis": write(tmp / "train.story-in-sequence.json", official(sis)),
             "test_dii": write(tmp / "test.description-in-isolation.json", official(test_dii, tier=DII_TIER))}
    rng = np.random.default_rng(0)
    feats = {p: rng.normal(size=8).astype(np.float32) for p in TRAIN_DII}
    feats.update({p: feats[src] for p, src in SAME_PHOTO.items()})
    np.savez(tmp / "f.npz", **feats)
    paths["features"] = tmp / "f.npz"
    captioner, losses, skipped = train_captioner(read_official(paths["dii"]), feats, steps=150, batch_size=6,
                                                 lr=2e-2, embed_dim=16, hidden_dim=32, seed=0, max_len=12)
    assert losses[-1] < losses[0] / 5 and not skipped
    captioner.save(tmp / "captioner")
    vf = read_official(paths["sis"])
    story_model, _ = train([(np.stack([feats[p] for p in s.photo_ids]), s.text) for s in vf.stories], steps=60,
                           batch_size=2, lr=1e-2, embed_dim=16, hidden_dim=32, seed=0)
    paths["captioner"], paths["story_model"] = tmp / "captioner", story_model
    return paths


def test_captioner_nbest(world) -> None:
    cap = Seq2SeqCaptioner.load(world["captioner"], world["features"])
    (best,), (five,) = cap.captions(["11"], n_best=1), cap.captions(["11"], n_best=5)
    assert best == ["a dog on the grass"] and five[0] == best[0] and len(five) == len(set(five)) == 5
    assert cap.captions(["21"], n_best=1) == [["a dog on the grass"]]  # the same features as photo 11
    from connote.core.errors import ItemError

    with pytest.raises(ItemError, match="photo 99"):
        cap.captions(["99"])


def test_grounded_stories_read_no_test_annotation(world) -> None:
    grounding = PaperGrounding.from_options(dii=world["dii"], sis=world["sis"], captioner=world["captioner"],
                                            features=world["features"], n_best=1)
    model: StoryModel = world["story_model"]
    feats = load_features(world["features"])
    sequences = [("21", "22", "23", "24", "25"), ("25", "24", "23", "22", "21")]

    def stories() -> tuple[list[set[str]], list[str]]:
        licensed = [grounding.licensed_words(s) for s in sequences]
        texts = [model.generate(np.stack([feats[p] for p in s]), method="greedy-dups-grounded", grounded=lic)
                 for s, lic in zip(sequences, licensed)]
        return licensed, texts

    licensed, texts = stories()
    vocab = grounding.vocabulary
    captions = {w for s in sequences for caps in grounding.captioner.captions(s, 1) for c in caps for w in c.split()}
    for lic, text in zip(licensed, texts):
        assert {w for w in lic if vocab.is_groundable(w)} == {w for w in captions if vocab.is_groundable(w)}
        assert all(w in captions for w in text.split() if is_content_word(w) and vocab.is_groundable(w))
    # what today's grounding=DII path licenses comes from the human descriptions of the test photos
    leaked = grounding_vocabulary(sequences[0], read_official(world["test_dii"]).descriptions)
    assert vocab.is_groundable("sofa") and "sofa" in leaked and "sofa" not in licensed[0] | licensed[1]
    assert not vocab.is_groundable("cat") and "cat" in licensed[0]  # more frequent in stories: never constrained
    world["test_dii"].unlink()  # the test split's DII annotations removed: the same words, the same stories
    assert stories() == (licensed, texts)
    assert grounding.describe()["rule"] == "P(w|DII)/P(w|SIS) > 1" and grounding.describe()["n_best"] == 1


def test_from_files_checks_tiers(world) -> None:
    with pytest.raises(InputError, match="descriptions-in-isolation training file, this is story-in-sequence"):
        GroundingVocabulary.from_files(world["sis"], world["sis"])
    vocab = GroundingVocabulary.from_files(world["dii"], world["sis"])
    assert {"sofa", "road", "table", "ball", "sea", "red"} <= vocab.groundable and "fun" not in vocab.groundable
    assert len(vocab.describe()["dii_sha256"]) == 16


def test_cli_train_captioner(world, tmp_path: Path, capsys) -> None:
    out = tmp_path / "cap"
    assert main(["story", "train-captioner", "--dii", str(world["dii"]), "--features", str(world["features"]),
                 "--out", str(out), "--steps", "2", "--embed-dim", "8", "--hidden-dim", "8"]) == 0
    meta = json.loads((out / "train.json").read_text())
    assert meta["config"]["task"] == "captioner" and len(meta["losses"]) == 2
    assert len(Seq2SeqCaptioner.load(out, world["features"]).captions(["11", "12"], n_best=2)[1]) == 2
    assert main(["story", "train-captioner", "--dii", str(world["sis"]), "--features", str(world["features"]),
                 "--out", str(out)]) == 2
    assert "description-in-isolation file, this is sis" in capsys.readouterr().err


def test_the_seq2seq_backend_grounds_as_the_paper(world, tmp_path: Path) -> None:
    """The spec options reach the same +Grounded stories as the API, and read no test annotation."""
    from connote.models.protocols import GenerationRequest
    from connote.models.registry import load_model

    world["story_model"].save(tmp_path / "m")
    spec = (f"seq2seq:{tmp_path / 'm'}?features={world['features']}&decode=greedy-dups-grounded"
            f"&grounding_dii={world['dii']}&grounding_sis={world['sis']}&captioner={world['captioner']}&n_best=1")
    gen = load_model(spec)
    grounding = PaperGrounding.from_options(dii=world["dii"], sis=world["sis"], captioner=world["captioner"],
                                            features=world["features"], n_best=1)
    feats = load_features(world["features"])
    seq = ("21", "22", "23", "24", "25")
    expected = world["story_model"].generate(np.stack([feats[p] for p in seq]), method="greedy-dups-grounded",
                                             grounded=grounding.licensed_words(seq))
    (story,) = gen.generate([GenerationRequest([], None, 40, seq)])
    assert story == expected
    assert gen.describe()["paper_grounding"]["rule"] == "P(w|DII)/P(w|SIS) > 1"
