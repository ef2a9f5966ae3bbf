"""Stage-1 data of GIT-LLaVA as the VMC paper built it (§3.3, §5.1, A.3, A.5.2).

* The metaphor half: all HAIVMet images with their generation prompts as captions, read from the dataset
  catalogue's layout (``connote datasets``: a folder with ``haivmet.json`` and ``images/``; ``data.haivmet``),
  and/or any JSON list of image-caption records (``data.metaphor_images`` + ``data.image_dir``), and/or the
  synthetic metaphor captions of ``connote vmc synth`` (A.5.2; ``data.synth``: its run folder or its
  ``metaphors.json``, the images found through the run's ``--images`` or ``data.synth_image_dir``).
* The literal half: MSCOCO image-caption pairs, from a COCO folder (``data.coco``:
  ``annotations/captions_<coco_split>.json`` and ``<coco_split>/``) and/or a COCO captions file
  (``data.literal_images`` + ``data.literal_image_dir``).
* When both halves are given they are balanced: the larger is sampled down to the size of the smaller, seeded
  (§3.3: 6,476 HAIVMet pairs and "an equivalent 6476 image-caption pairs from the MSCOCO dataset"). A synthetic
  table alone (the A.5.2 ablation, GIT-LLaVA-Syn) is used whole.
* Prompts (A.3): metaphor pairs (HAIVMet and synthetic) "What caption can best describe the metaphor in the
  video?" (``model.prompt``), literal pairs "What caption can best describe the video?". The synthetic pairs'
  prompt is not stated by the paper; they are metaphor captions, so they get the metaphor prompt.
* Every image becomes a still video of ``model.frames_per_clip`` (6) identical frames
  (:func:`connote.vmc.train.datasets.still_clips`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from connote.core.errors import InputError
from connote.runs.store import results_path
from connote.vmc.data import ImageItem, balance_pretraining, read_image_captions
from connote.vmc.train.config import DataConfig


def haivmet_files(folder: str | Path) -> tuple[Path, Path]:
    """``haivmet.json`` and ``images/`` of the catalogue's HAIVMet folder."""
    folder = Path(folder)
    table, images = folder / "haivmet.json", folder / "images"
    if not table.is_file():
        raise InputError("data.haivmet: no haivmet.json in the HAIVMet folder (the catalogue's layout: "
                         "haivmet.json and images/; see `connote datasets show haivmet`)", path=folder)
    return table, images


def coco_files(folder: str | Path, split: str) -> tuple[Path, Path]:
    """``annotations/captions_<split>.json`` and ``<split>/`` of an MSCOCO folder."""
    folder = Path(folder)
    table, images = folder / "annotations" / f"captions_{split}.json", folder / split
    if not table.is_file():
        raise InputError(f"data.coco: no annotations/captions_{split}.json in the COCO folder (the catalogue's "
                         "layout; data.coco_split names the split)", path=folder)
    return table, images


def synth_files(source: str | Path, image_dir: str | None) -> tuple[Path, Path]:
    """The synthetic table (``metaphors.json`` of a ``vmc synth`` run) and the folder of its images."""
    source = Path(source)
    table = source / "metaphors.json" if source.is_dir() else source
    if not table.is_file():
        raise InputError("data.synth: no metaphors.json (expected a `connote vmc synth` run folder or its "
                         "metaphors.json)", path=source)
    if image_dir:
        return table, Path(image_dir)
    run = results_path(table.parent)
    images = None
    if run.is_file():
        try:
            images = json.loads(run.read_text(encoding="utf-8")).get("images")
        except (OSError, ValueError, AttributeError):
            images = None
    if not images:
        raise InputError("data.synth: the run records no image folder (it ran without --images): give "
                         "data.synth_image_dir", path=source)
    return table, Path(images)


def stage1_items(data: DataConfig, seed: int = 0,
                 log: Callable[[str], None] = print) -> list[ImageItem]:
    """The stage-1 pairs (metaphor + literal, balanced when both are given), in a seeded order."""
    metaphor: list[ImageItem] = []
    literal: list[ImageItem] = []
    sources: list[str] = []

    def add(into: list[ImageItem], what: str, table: Path, images: Path, kind: str) -> None:
        items = read_image_captions(table, images, kind)
        if what in ("haivmet", "synth", "coco"):  # ids of one source may repeat another's: prefix the source
            items = [ImageItem(f"{what}-{it.image_id}", it.path, it.caption, it.kind) for it in items]
        into.extend(items)
        sources.append(f"{what} {len(items)}")

    if data.haivmet:
        add(metaphor, "haivmet", *haivmet_files(data.haivmet), "metaphor")
    if data.metaphor_images:
        add(metaphor, "metaphor_images", Path(data.metaphor_images), Path(data.image_dir or "."), "metaphor")
    if data.synth:
        add(metaphor, "synth", *synth_files(data.synth, data.synth_image_dir), "metaphor")
    if data.coco:
        add(literal, "coco", *coco_files(data.coco, data.coco_split), "literal")
    if data.literal_images:
        add(literal, "literal_images", Path(data.literal_images),
            Path(data.literal_image_dir or data.image_dir or "."), "literal")
    if not metaphor and not literal:
        raise InputError("stage 1 needs data: data.haivmet, data.metaphor_images or data.synth (metaphor pairs) "
                         "and/or data.coco or data.literal_images (literal pairs)")
    if metaphor and literal:
        items = balance_pretraining(metaphor, literal, seed)
        n = len(items) // 2
        log(f"stage 1: {n} metaphor + {n} literal pairs (of {len(metaphor)} metaphor and {len(literal)} literal; "
            f"{', '.join(sources)})")
        return items
    items = list(metaphor or literal)
    log(f"stage 1: {len(items)} {'metaphor' if metaphor else 'literal'} pairs ({', '.join(sources)})")
    return items
