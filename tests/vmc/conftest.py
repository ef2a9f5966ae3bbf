"""Fixtures for the metaphor tests: tiny random GIT + causal LM sources and a colour video set."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

COLOURS = {
    "red": ((200, 30, 30), "the apple is as red as fire"),
    "green": ((30, 200, 30), "the leaf is as green as grass"),
    "blue": ((30, 30, 200), "the sea is as blue as ice"),
    "yellow": ((220, 220, 30), "the sun is as yellow as gold"),
}


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> None:
    """Tiny models on a shared 2-core machine: one torch thread is ~100x faster than contention."""
    try:
        import torch
    except ImportError:  # pragma: no cover
        return
    torch.set_num_threads(1)


@dataclass
class ColourSet:
    root: Path
    git: Path
    llm: Path
    videos: Path
    captions: Path
    train_split: Path
    val_split: Path
    train_ids: list[str]
    test_ids: list[str]

    @staticmethod
    def caption_for(video_id: str) -> str:
        return COLOURS[video_id.rstrip("0123456789")][1]


@pytest.fixture(scope="session")
def colour_set(tmp_path_factory: pytest.TempPathFactory) -> ColourSet:
    """24 short colour videos (4 colours x 6; 4 train + 2 held out per colour) and tiny models."""
    pytest.importorskip("av")
    pytest.importorskip("transformers")
    from connote.media.synthetic import write_video
    from tests.support.tiny_sources import make_tiny_sources

    root = tmp_path_factory.mktemp("colours")
    words = sorted({w for _, cap in COLOURS.values() for w in cap.split()})
    git, llm = make_tiny_sources(root / "models", words)
    videos = root / "videos"
    videos.mkdir()
    rng = random.Random(0)
    rows = ["unique_id,annotator_1"]
    train_ids: list[str] = []
    test_ids: list[str] = []
    for name, (rgb, cap) in COLOURS.items():
        for j in range(6):
            vid = f"{name}{j}"
            cols = [tuple(max(0, min(255, c + rng.randint(-25, 25))) for c in rgb) for _ in range(8)]
            write_video(videos / f"{vid}.mp4", [], size=(32, 32), colours=cols)
            rows.append(f"{vid},{cap}")
            (train_ids if j < 4 else test_ids).append(vid)
    captions = root / "vmc.csv"
    captions.write_text("\n".join(rows) + "\n")
    (root / "train.txt").write_text("\n".join(train_ids) + "\n")
    (root / "val.txt").write_text("\n".join(test_ids) + "\n")
    return ColourSet(root, git, llm, videos, captions, root / "train.txt", root / "val.txt", train_ids, test_ids)


@pytest.fixture(scope="session")
def stage2_config(colour_set: ColourSet):  # noqa: ANN201
    """``stage2_config(out, **train)``: a stage-2 config dict on the colour set."""
    return lambda out, **train: _stage2_config(colour_set, out, **train)


def _stage2_config(cs: ColourSet, out: Path, **train: object) -> dict:
    t = {"epochs": 1, "batch_size": 4, "lr": 1e-2, "warmup_ratio": 0.1, "early_stopping_patience": None,
         "log_every": 1}
    t.update(train)
    return {"stage": 2, "output_dir": str(out),
            "model": {"captioner": str(cs.git), "llm": str(cs.llm), "max_caption_tokens": 12},
            "data": {"captions": str(cs.captions), "videos": str(cs.videos),
                     "train_split": str(cs.train_split), "val_split": str(cs.val_split)},
            "train": t}
