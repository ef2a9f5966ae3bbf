"""Story generators through their real loading paths (tiny random models), and the resumable run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from connote.cli import main
from connote.core.errors import InputError
from connote.models.protocols import GenerationRequest
from connote.models.registry import backends_with
from connote.models.registry import load_model as load_generator
from connote.vist.backend_retrieval import RetrievalStoryGenerator
from connote.vist.challenge import read_submission
from connote.vist.data import read_official
from connote.vist.task import STORY_PROMPT, load_sequences, normalize_story, run_generation
from tests.support import openai_server, tiny_models

COLOURS = {"red": (220, 20, 20), "green": (20, 200, 20), "blue": (20, 20, 220)}


class ColourEmbedder:
    """Deterministic stand-in: images -> mean RGB, texts -> the colour word they name."""

    def describe(self):
        return {"embedder": "colour"}

    def embed_images(self, images):
        return np.stack([np.asarray(im, dtype=np.float32).reshape(-1, 3).mean(0) / 255 for im in images])

    def embed_texts(self, texts):
        out = []
        for t in texts:
            rgb = next((c for w, c in COLOURS.items() if w in t), (128, 128, 128))
            out.append(np.asarray(rgb, dtype=np.float32) / 255)
        return np.stack(out)


def img(colour: str, size=(40, 32)) -> Image.Image:
    return Image.new("RGB", size, COLOURS[colour])


def story(gen, photo_ids, images=()):
    """One story from a backend, asked as the storytelling task asks (raw text, or the exception)."""
    return gen.generate([GenerationRequest(list(images), STORY_PROMPT, 120, tuple(photo_ids))])[0]


@pytest.fixture
def image_dir(tmp_path: Path, sis_file: Path) -> Path:
    d = tmp_path / "images"
    d.mkdir()
    palette = list(COLOURS)
    for k, p in enumerate(read_official(sis_file).images):
        if p == "25":
            continue  # missing photo
        img(palette[k % 3]).save(d / f"{p}.jpg")
    (d / "24.jpg").write_bytes(b"not an image")  # unreadable photo
    return d


def test_retrieval_nearest_hand_checked() -> None:
    stories = [(("1", "2"), ["a red car", "a red bus"]), (("3", "4"), ["the blue sea", "blue sky"]),
               (("5", "6"), ["red", "blue"])]
    gen = RetrievalStoryGenerator(ColourEmbedder(), stories)
    assert story(gen, ("x", "y"), [img("blue"), img("blue")]) == "the blue sea blue sky"
    best, sim = gen.nearest([img("red"), img("blue")])
    assert best == 2 and sim == pytest.approx(1.0, abs=1e-5)
    by_image = RetrievalStoryGenerator(ColourEmbedder(), stories, index_by="image",
                                       train_images=lambda p: img("green" if p in "12" else "red"))
    assert by_image.nearest([img("green"), img("green")])[0] == 0
    with pytest.raises(ValueError):
        RetrievalStoryGenerator(ColourEmbedder(), [])


def test_retrieval_cache(tmp_path: Path) -> None:
    calls = []

    class Counting(ColourEmbedder):
        def embed_texts(self, texts):
            calls.append(len(texts))
            return super().embed_texts(texts)

    stories = [(("1", "2"), ["a red car", "a red bus"]), (("3", "4"), ["the blue sea", "blue sky"])]
    a = RetrievalStoryGenerator(Counting(), stories, cache=tmp_path)
    b = RetrievalStoryGenerator(Counting(), stories, cache=tmp_path)
    assert calls == [4] and np.array_equal(a.index, b.index)
    RetrievalStoryGenerator(Counting(), stories[:1], cache=tmp_path)  # other stories: other key
    assert calls == [4, 2] and len(list(tmp_path.glob("*.npz"))) == 2


def test_normalize() -> None:
    assert normalize_story("Hello, World!\nBye.") == "hello , world ! bye ."


def test_run_resumable_with_errors(tmp_path: Path, sis_file: Path, image_dir: Path) -> None:
    calls: list[str] = []

    class Fake:
        needs_images = True

        def describe(self):
            return {"backend": "fake"}

        def generate(self, requests):
            calls.extend("-".join(r.image_ids) for r in requests)
            return [f"story of {len(r.images)} photos ." for r in requests]

    seqs = load_sequences(sis_file)
    assert [s.id for s in seqs] == ["11-12-13-14-15", "16-15-14-13-12", "21-22-23-24"]
    out = tmp_path / "run"
    s1 = run_generation(Fake(), seqs, out, image_dir=image_dir, limit=1)
    assert s1.n_generated_now == 1 and calls == ["11-12-13-14-15"]
    s2 = run_generation(Fake(), seqs, out, image_dir=image_dir)
    assert calls == ["11-12-13-14-15", "16-15-14-13-12"]  # resumed; A2 fails on its photos
    assert s2.n_done_before == 1 and s2.n_errors == 1
    recs = [json.loads(x) for x in (out / "stories.jsonl").read_text().splitlines()]
    assert recs[0]["story"] == "story of 5 photos ." and "cannot read image" in recs[2]["error"]
    sub = json.loads((out / "submission.json").read_text())
    assert [e["photo_sequence"] for e in sub["output_stories"]][1] == ["16", "15", "14", "13", "12"]
    assert sub["output_stories"][2]["error"] == recs[2]["error"]
    assert read_submission(out / "submission.json").entries[2].error
    # the errored sequence is retried on rerun, done ones are not
    run_generation(Fake(), seqs, out, image_dir=image_dir)
    assert calls[2:] == []


def test_seq2seq_backend_and_cli(tmp_path: Path, sis_file: Path, capsys) -> None:
    vf = read_official(sis_file)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "f.npz", **{p: rng.normal(size=4).astype(np.float32) for p in vf.images if p != "24"})
    model_dir = tmp_path / "m"
    assert main(["story", "train", "--sis", str(sis_file), "--features", str(tmp_path / "f.npz"), "--out",
                 str(model_dir), "--steps", "2", "--embed-dim", "8", "--hidden-dim", "8"]) == 0
    capsys.readouterr()
    spec = f"seq2seq:{model_dir}?features={tmp_path / 'f.npz'}&decode=greedy-dups&beam_size=2"
    code = main(["story", "generate", str(sis_file), "--out", str(tmp_path / "run"), "--model", spec, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["n_errors"] == 1 and out["n_sequences"] == 3  # photo 24 has no features
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps({"output_stories": [
        {"album_id": r.album_id, "photo_sequence": list(r.photo_ids), "story_text_normalized": r.text}
        for r in vf.stories]}))
    from connote.vist import protocols

    protocols_default = protocols.default_pair_scorer
    try:
        protocols.default_pair_scorer = lambda **kw: (lambda h, r: [0.5] * len(h))
        assert main(["vist", "score", str(tmp_path / "run" / "stories.jsonl"), "--gold", str(gold), "--json",
                     "--n-boot", "10"]) == 1  # the errored sequence: the score covers 2 of 3
    finally:
        protocols.default_pair_scorer = protocols_default
    res = json.loads(capsys.readouterr().out)
    assert res["n_errors"] == 1 and res["n_scored"] == 2 and not res["complete"]
    with pytest.raises(InputError, match="grounding"):
        load_generator(f"seq2seq:{model_dir}?features={tmp_path / 'f.npz'}&decode=greedy-dups-grounded")


def test_hf_vlm_backend(tmp_path: Path) -> None:
    d = tiny_models.tiny_llava(tmp_path / "llava")
    gen = load_generator(f"hf-vlm:{d}?max_new_tokens=6")
    out = story(gen, tuple("12345"), [img(c) for c in ("red", "green", "blue", "red", "red")])
    assert isinstance(out, str)
    assert gen.describe()["backend"] == "hf-vlm" and gen.describe()["max_new_tokens"] == 6


def test_caption_llm_backend(tmp_path: Path) -> None:
    from tests.support.tiny_sources import make_tiny_sources

    git_dir, llm_dir = make_tiny_sources(tmp_path / "tiny", ["story", "photos"])
    gen = load_generator(f"caption-llm:{git_dir}?llm={llm_dir}&max_new_tokens=5&caption_tokens=3")
    caps = gen.captions([img("red"), img("blue")])
    assert len(caps) == 2
    assert isinstance(story(gen, ("1", "2"), [img("red"), img("blue")]), str)


def _api(body: dict) -> tuple[int, dict]:
    """Stories that say how many photos came; a request with two photos is refused (HTTP 400)."""
    n_images = sum(1 for c in body["messages"][0]["content"] if c["type"] == "image_url")
    if n_images == 2:
        return 400, {"error": "bad request"}
    return 200, {"choices": [{"message": {"content": f"We saw {n_images} Photos. It was Great!"}}]}


def test_openai_backend(tmp_path: Path, sis_file: Path, image_dir: Path) -> None:
    with openai_server.Server([openai_server.answer(_api)]) as server:
        gen = load_generator(f"openai:test-model?base_url={server.url}&max_retries=0")
        summary = run_generation(gen, load_sequences(sis_file), tmp_path / "run", image_dir=image_dir)
        assert summary.n_errors == 1 and summary.n_generated_now == 3
        assert normalize_story(story(gen, tuple("12345"), [img("red")] * 5)) == "we saw 5 photos . it was great !"
        assert server.requests[-1]["body"]["model"] == "test-model"
        assert server.requests[-1]["body"]["temperature"] == 0
        failed = story(gen, ("6", "7"), [img("red")] * 2)  # a failing request comes back in its place
        assert isinstance(failed, Exception) and "HTTP 400" in str(failed)


@pytest.mark.slow
def test_retrieval_embedded_encoder(tmp_path: Path, sis_file: Path, image_dir: Path) -> None:
    """The offline default through its real loading path (shipped EfficientNet-Lite0 + MiniLM)."""
    gen = load_generator(f"retrieval?train={sis_file}&cache={tmp_path / 'cache'}")
    assert len(list((tmp_path / "cache").glob("*.npz"))) == 1
    assert gen.describe()["n_stories"] == 3 and "image_encoder" in gen.describe()["embedder"]
    assert story(gen, tuple("12345"), [img("red")] * 5) in {s.text for s in read_official(sis_file).stories}


def test_backends_listed(capsys) -> None:
    assert main(["story", "backends"]) == 0
    # a backend's line starts at column 0; wrapped description lines are indented under it
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line and not line[0].isspace()]
    from connote.vist.task import StorytellingTask

    # only what the storytelling task accepts: video generators (git-llava, nearest) are not listed
    assert names == backends_with("generate", StorytellingTask.inputs)
    assert {"caption-llm", "hf-vlm", "openai", "retrieval", "seq2seq"} <= set(names)
    assert not {"git-llava", "nearest"} & set(names) and {"git-llava", "nearest"} <= set(backends_with("generate"))


def test_extract_features(tmp_path: Path, sis_file: Path, image_dir: Path) -> None:
    from connote.vist.seq2seq import extract_features

    feats, errors = extract_features(list(read_official(sis_file).images), image_dir, ColourEmbedder(), batch_size=4)
    assert set(errors) == {"24", "25"} and len(feats) == 9
    assert feats["11"].shape == (3,)


def test_seq2seq_grounded_by_dii(tmp_path: Path, sis_file: Path) -> None:
    import torch

    from connote.vist.seq2seq import Seq2SeqConfig, StoryModel, Vocab, _build_module, is_content_word
    from tests.support.vist_fixtures import official, write

    vf = read_official(sis_file)
    torch.manual_seed(0)
    vocab = Vocab.build([s.text for s in vf.stories])
    cfg = Seq2SeqConfig(feature_dim=4, vocab_size=len(vocab), embed_dim=8, hidden_dim=8, max_len=15)
    model = StoryModel(cfg, vocab, _build_module(cfg))
    model.save(tmp_path / "m")
    np.savez(tmp_path / "f.npz", **{p: np.ones(4, dtype=np.float32) for p in vf.images})
    dii = [[{"album_id": "A1", "photo_flickr_id": p, "text": "the sea was calm", "tier": "descriptions-in-isolation"}]
           for p in ("11", "12", "13", "14", "15")]
    dii_path = write(tmp_path / "x.description-in-isolation.json", official(dii))
    gen = load_generator(f"seq2seq:{tmp_path / 'm'}?features={tmp_path / 'f.npz'}&decode=greedy-dups-grounded"
                         f"&grounding={dii_path}")
    out = story(gen, ("11", "12", "13", "14", "15"))
    assert {w for w in out.split() if is_content_word(w)} <= {"sea", "calm"}


class LabelEmbedder(ColourEmbedder):
    def __init__(self, top_k: int = 5) -> None:
        self.top_k = top_k

    def top_labels(self, images):
        return [[("sea, seashore", 0.9), ("boat", 0.1)] for _ in images]


def test_story_features_cli_and_objects_grounding(tmp_path: Path, sis_file: Path, image_dir: Path, monkeypatch,
                                                  capsys) -> None:
    import connote.media.embedded as embedded
    from connote.vist.seq2seq import Seq2SeqConfig, StoryModel, Vocab, _build_module, is_content_word, load_features

    monkeypatch.setattr(embedded, "EmbeddedEncoder", LabelEmbedder)
    assert main(["story", "features", str(sis_file), "--images", str(image_dir), "--out", str(tmp_path / "f.npz")]) == 1
    assert "9 photos embedded, 2 missing or unreadable" in capsys.readouterr().out
    feats = load_features(tmp_path / "f.npz")
    assert len(feats) == 9 and feats["11"].shape == (3,)
    vocab = Vocab.build(["the sea was calm . a boat on the seashore . we swam ."])
    cfg = Seq2SeqConfig(feature_dim=3, vocab_size=len(vocab), embed_dim=8, hidden_dim=8, max_len=12)
    StoryModel(cfg, vocab, _build_module(cfg)).save(tmp_path / "m")
    gen = load_generator(f"seq2seq:{tmp_path / 'm'}?features={tmp_path / 'f.npz'}&decode=greedy-dups-grounded"
                         "&grounding=objects")
    assert gen.needs_images
    out = story(gen, ("11", "12", "13", "14", "15"), [img("red")] * 5)
    assert {w for w in out.split() if is_content_word(w)} <= {"sea", "seashore", "boat"}


def test_a_batchs_photos_are_read_on_threads_ahead_of_the_generator(tmp_path: Path, sis_file: Path,
                                                                    image_dir: Path, monkeypatch) -> None:
    """The runner's prepare step reads each sequence's photos off the calling thread (the prefetch thread and the
    loading threads); a sequence whose photos cannot be read is still its own error."""
    from connote.media import photos
    from tests.support.threads import calling_threads, read_ahead

    threads = calling_threads(monkeypatch, photos, "load_sequence_images")

    class Fake:
        needs_images = True

        def describe(self):
            return {"backend": "fake"}

        def generate(self, requests):
            return [f"story of {len(r.images)} photos ." for r in requests]

    summary = run_generation(Fake(), load_sequences(sis_file), tmp_path / "run", image_dir=image_dir, batch_size=1)
    assert summary.n_errors == 1
    assert read_ahead(threads), threads
