"""The seq2seq baseline: training for a few steps on a tiny synthetic set, and each decoding option."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from connote.cli import main
from connote.core.errors import ItemError
from connote.vist.data import read_official
from connote.vist.seq2seq import (
    DECODERS,
    StoryModel,
    Vocab,
    grounding_vocabulary,
    is_content_word,
    sequence_features,
    sequence_logprob,
    train,
)

STORIES = ["the dog ran . the dog ran . we had fun .", "the cat slept . [female] smiled .",
           "a big boat . the boat sailed away ."]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models train far faster on one thread than with threads contending for shared cores."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def trained(one_thread) -> tuple[StoryModel, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    feats = [rng.normal(size=(5, 8)).astype(np.float32) for _ in STORIES]
    model, losses = train(list(zip(feats, STORIES)), steps=150, batch_size=3, lr=1e-2, embed_dim=16,
                          hidden_dim=32, seed=0)
    assert losses[-1] < losses[0] / 5
    return model, feats


def test_vocab() -> None:
    v = Vocab.build(["b a a", "c"], min_count=1)
    assert v.words[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"] and v.words[4] == "a"
    assert v.decode(v.encode("a zz b") + [2, 4]) == "a <unk> b"
    assert is_content_word("dog") and not is_content_word("the") and not is_content_word("[male]")
    assert not is_content_word(".")


def test_greedy_memorises(trained) -> None:
    model, feats = trained
    for f, s in zip(feats, STORIES):
        assert model.generate(f, method="greedy") == s


def test_beam(trained) -> None:
    model, feats = trained
    for f in feats:
        g, b = model.generate(f, method="greedy"), model.generate(f, method="beam", beam_size=3)
        assert sequence_logprob(model, f, b) >= sequence_logprob(model, f, g) - 1e-5


def test_no_dups(trained) -> None:
    model, feats = trained
    out = model.generate(feats[0], method="greedy-dups").split()
    content = [w for w in out if is_content_word(w)]
    assert len(content) == len(set(content)) and "dog" in content
    sentences = " ".join(out).split(" . ")
    assert len(sentences) == len(set(sentences))


def test_grounded(trained) -> None:
    model, feats = trained
    out = model.generate(feats[1], method="greedy-dups-grounded", grounded={"cat", "smiled"})
    assert {w for w in out.split() if is_content_word(w)} <= {"cat", "smiled"}
    with pytest.raises(ValueError, match="licensed words"):
        model.generate(feats[1], method="greedy-dups-grounded")
    with pytest.raises(ValueError, match="valid"):
        model.generate(feats[1], method="sample")
    assert set(DECODERS) == {"beam", "greedy", "greedy-dups", "greedy-dups-grounded"}


def test_save_load(trained, tmp_path: Path) -> None:
    model, feats = trained
    model.save(tmp_path / "m")
    again = StoryModel.load(tmp_path / "m")
    assert again.generate(feats[2]) == model.generate(feats[2])


def test_grounding_vocabulary_and_missing_features() -> None:
    assert grounding_vocabulary(["1", "2"], {"1": ["A dog", "a ball"], "3": ["cat"]}) == {"a", "dog", "ball"}
    with pytest.raises(ItemError, match="photo"):
        sequence_features(["1", "9"], {"1": np.zeros(3)})


def test_cli_train(tmp_path: Path, sis_file: Path, capsys) -> None:
    vf = read_official(sis_file)
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "f.npz", **{p: rng.normal(size=6).astype(np.float32) for p in vf.images if p != "24"})
    out = tmp_path / "model"
    assert main(["story", "train", "--sis", str(sis_file), "--features", str(tmp_path / "f.npz"), "--out", str(out),
                 "--steps", "3", "--embed-dim", "8", "--hidden-dim", "8", "--batch-size", "2"]) == 0
    meta = json.loads((out / "train.json").read_text())
    assert meta["n_examples"] == 2 and meta["n_skipped"] == 1 and len(meta["losses"]) == 3
    m = StoryModel.load(out)
    f = np.stack([rng.normal(size=6).astype(np.float32) for _ in range(5)])
    for method in DECODERS:
        text = m.generate(f, method=method, beam_size=2, grounded={"beach"}, max_len=12)
        assert isinstance(text, str)


# ---------------------------------------------------------------- encoder order (the paper reads the photos reversed)


def test_encoder_reads_reversed_by_default(trained, tmp_path: Path) -> None:
    import torch

    from connote.vist.seq2seq import ENCODER_ORDERS, Seq2SeqConfig

    model, feats = trained
    assert model.config.encoder_order == "reverse" and ENCODER_ORDERS == ("reverse", "forward")
    x = torch.as_tensor(feats[0]).unsqueeze(0)
    mod = model.module
    with torch.no_grad():
        _, h_rev = mod.encoder(torch.tanh(mod.project(torch.flip(x, dims=[1]))))  # last photo read first
        assert torch.equal(mod.encode(x), h_rev)
        model.config.encoder_order = "forward"
        try:
            _, h_fwd = mod.encoder(torch.tanh(mod.project(x)))
            assert torch.equal(mod.encode(x), h_fwd) and not torch.allclose(h_fwd, h_rev)
        finally:
            model.config.encoder_order = "reverse"
    with pytest.raises(ValueError, match="encoder_order"):
        Seq2SeqConfig(feature_dim=2, vocab_size=5, encoder_order="sideways")


def test_encoder_order_saved_and_old_models_load_forward(trained, tmp_path: Path) -> None:
    model, feats = trained
    model.save(tmp_path / "m")
    assert json.loads((tmp_path / "m" / "config.json").read_text())["encoder_order"] == "reverse"
    again = StoryModel.load(tmp_path / "m")
    assert again.config.encoder_order == "reverse" and not again.notes
    assert again.generate(feats[1]) == model.generate(feats[1])
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    del cfg["encoder_order"]  # a model saved before the order was recorded
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    with pytest.warns(UserWarning, match="no encoder_order .* loaded as forward"):
        old = StoryModel.load(tmp_path / "m")
    assert old.config.encoder_order == "forward" and "forward" in old.notes[0]
    assert old.describe()["encoder_order"] == "forward"


def test_cli_train_encoder_order(tmp_path: Path, sis_file: Path, capsys) -> None:
    vf = read_official(sis_file)
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "f.npz", **{p: rng.normal(size=6).astype(np.float32) for p in vf.images})
    common = ["story", "train", "--sis", str(sis_file), "--features", str(tmp_path / "f.npz"), "--steps", "2",
              "--embed-dim", "8", "--hidden-dim", "8", "--batch-size", "2"]
    assert main([*common, "--out", str(tmp_path / "rev")]) == 0
    assert main([*common, "--out", str(tmp_path / "fwd"), "--encoder-order", "forward"]) == 0
    assert StoryModel.load(tmp_path / "rev").config.encoder_order == "reverse"
    assert StoryModel.load(tmp_path / "fwd").config.encoder_order == "forward"
    assert json.loads((tmp_path / "fwd" / "train.json").read_text())["config"]["encoder_order"] == "forward"
    assert main([*common, "--out", str(tmp_path / "x"), "--encoder-order", "backward"]) == 2
    assert "backward" in capsys.readouterr().err


def test_a_measured_decode_reports_its_tokens_and_first_step(trained) -> None:
    """Speed in every result (issue 41, item 4): the GRU baseline's stories count their tokens (the words and the
    end token) and time their first decoding step, as the Hugging Face and API backends do."""
    from connote.runs.speed import measuring, speed_block

    model, feats = trained
    with measuring() as meter:
        stories = [model.generate(f, method="greedy") for f in feats]
    assert stories == STORIES
    assert meter["calls"] == len(STORIES)
    assert meter["tokens"] == sum(len(s.split()) + 1 for s in STORIES)  # each story's words and its end token
    assert len(meter["first_token_seconds"]) == len(STORIES) and all(t > 0 for t in meter["first_token_seconds"])
    block = speed_block(meter, computed=3, resumed=0, seconds=1.0)
    assert block["tokens"] == meter["tokens"] and block["time_to_first_token_s"] > 0
    model.generate(feats[0], method="greedy")  # outside a run nothing is measured
    assert meter["calls"] == len(STORIES)
