"""Training examples for GIT-LLaVA: (video or still image, prompt, caption) -> pixel tensors."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from PIL import Image

from connote.core.errors import InputError, ItemError
from connote.vmc.train.config import DataConfig, ModelConfig


@dataclass(frozen=True)
class Example:
    """One training pair; ``kind`` is ``video`` or ``image`` (a still video for stage 1)."""

    example_id: str
    kind: str
    path: Path
    prompt: str
    caption: str


def sample_clips(path: str | Path, cfg: ModelConfig, size: int | None = None,
                 draw: int = 0) -> list[list[Image.Image]]:
    """The frames GIT-LLaVA sees: ``segments`` (6 frames) or ``uniform`` for one clip, else ``clips``; drawn at
    random (``cfg.frame_sampling``, seeded by ``cfg.frame_seed`` and ``draw``, the epoch) or at fixed positions."""
    from connote.media.frames import read_frames

    how = {"sampling": cfg.frame_sampling, "seed": cfg.frame_seed, "draw": draw}
    if cfg.clips == 1:
        if cfg.frames_per_clip == 6:
            return read_frames(path, "segments", size=size, **how).images
        return read_frames(path, "uniform", k=cfg.frames_per_clip, size=size, **how).images
    return read_frames(path, "clips", k=cfg.clips, per_clip=cfg.frames_per_clip, size=size, **how).images


def still_clips(path: str | Path, cfg: ModelConfig, size: int | None = None) -> list[list[Image.Image]]:
    """An image as ``clips`` identical still videos of ``frames_per_clip`` frames."""
    from connote.media.frames import still_video

    frames = still_video(path, cfg.frames_per_clip)
    if size:
        w, h = frames[0].size
        s = size / min(w, h)
        frames = [f.resize((max(1, round(w * s)), max(1, round(h * s)))) for f in frames]
    return [frames for _ in range(cfg.clips)]


class ExampleDataset(torch.utils.data.Dataset):
    """Decodes frames on access and turns them into GIT pixel values with ``to_pixels``."""

    def __init__(self, examples: Sequence[Example], cfg: ModelConfig,
                 to_pixels: Callable[[list[list[Image.Image]]], torch.Tensor], size: int | None = None) -> None:
        self.examples = list(examples)
        self.cfg = cfg
        self.to_pixels = to_pixels
        self.size = size
        #: the training epoch: random frames are re-drawn per epoch (the loop sets it; validation keeps 0)
        self.epoch = 0

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, i: int) -> dict[str, Any]:
        ex = self.examples[i]
        clips = (sample_clips(ex.path, self.cfg, self.size, draw=self.epoch) if ex.kind == "video"
                 else still_clips(ex.path, self.cfg, self.size))
        return {"pixel_values": self.to_pixels(clips), "prompt": ex.prompt, "caption": ex.caption,
                "id": ex.example_id}


def collate(batch: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Stack pixel values; keep prompts, captions and ids as lists."""
    return {"pixel_values": torch.stack([b["pixel_values"] for b in batch]),
            "prompts": [b["prompt"] for b in batch], "captions": [b["caption"] for b in batch],
            "ids": [b["id"] for b in batch]}


def build_examples(stage: int, data: DataConfig, cfg: ModelConfig, seed: int = 0,
                   log: Callable[[str], None] = print) -> tuple[list[Example], list[Example]]:
    """Train and validation examples for a stage; unusable videos are logged and left out."""
    if stage == 1:
        return _image_examples(data, cfg, seed, log)
    return _video_examples(data, cfg, log)


def _video_examples(data: DataConfig, cfg: ModelConfig,
                    log: Callable[[str], None]) -> tuple[list[Example], list[Example]]:
    from connote.media.frames import probe
    from connote.vmc.data import load_vmc, read_split

    if not data.captions or not data.videos:
        raise InputError("stage 2 needs data.captions (the VMC caption table) and data.videos (a folder)")
    vmc = load_vmc(data.captions, data.videos)
    if vmc.missing_videos:
        log(f"{len(vmc.missing_videos)} caption-table id(s) have no video file: "
            f"{', '.join(vmc.missing_videos[:10])}{' ...' if len(vmc.missing_videos) > 10 else ''}")
    if vmc.unlabelled_videos:
        log(f"{len(vmc.unlabelled_videos)} video(s) have no captions: {', '.join(vmc.unlabelled_videos[:10])}")
    usable = {}
    for item in vmc.items:
        try:
            probe(item.path)
            usable[item.video_id] = item
        except ItemError as exc:
            log(f"skipped: {exc}")

    def pick(split: str | None, default: list[str]) -> list[Example]:
        ids = read_split(split) if split else default
        assert isinstance(ids, list)
        out = []
        for vid in ids:
            if vid in usable:
                it = usable[vid]
                out.extend(Example(f"{vid}#{j}", "video", it.path, cfg.prompt, cap)
                           for j, cap in enumerate(it.captions))
        return out

    train = pick(data.train_split, list(usable))
    val = pick(data.val_split, []) if data.val_split else []
    if not train:
        raise InputError("no usable training videos (check data.captions, data.videos, data.train_split)")
    return train, val


def _image_examples(data: DataConfig, cfg: ModelConfig, seed: int,
                    log: Callable[[str], None]) -> tuple[list[Example], list[Example]]:
    from connote.vmc.train.stage1 import stage1_items

    items = stage1_items(data, seed, log)  # HAIVMet / records / synth table + MSCOCO, balanced (paper §3.3)
    prompt_for = {"metaphor": cfg.prompt, "literal": "What caption can best describe the video?"}
    examples = [Example(f"{it.kind}:{it.image_id}", "image", it.path, prompt_for[it.kind], it.caption)
                for it in items]
    missing = [e for e in examples if not e.path.exists()]
    if missing:
        log(f"skipped {len(missing)} pair(s) whose image is missing, e.g. {missing[0].path}")
        examples = [e for e in examples if e.path.exists()]
    n_val = int(round(len(examples) * data.val_fraction))
    if n_val:
        rng = random.Random(seed)
        order = list(range(len(examples)))
        rng.shuffle(order)
        val_idx = set(order[:n_val])
        return ([e for i, e in enumerate(examples) if i not in val_idx],
                [e for i, e in enumerate(examples) if i in val_idx])
    return examples, []
