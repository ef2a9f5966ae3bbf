"""``connote vmc train --config RECIPE --sample``: a training recipe run offline, end to end, on sample data.

The recipe is read as it ships (stage, architecture, clips, prompts, template, the kind of data it reads,
optimiser and schedule). What cannot exist offline is replaced, and the run prints each replacement:

* ``model.captioner`` / ``model.llm`` -> a tiny random GIT and Llama LM (:mod:`connote.vmc.train.tiny`), built
  once into ``OUT/sample/models`` with the sample's words in their vocabularies;
* ``data`` -> the sample in the layout the recipe reads: stage 1 with ``data.haivmet``/``data.coco`` -> the
  catalogue's HAIVMet and MSCOCO folders made from packaged photos (the ``vmc synth`` sample's template answers
  as HAIVMet's prompts, its literal captions as MSCOCO's); ``data.synth`` -> the ``vmc synth`` sample run;
  stage 2 -> the VMC sample clips (:mod:`connote.vmc.sample`: ``vmc.csv``, its training split, the test split
  as validation);
* ``train.max_steps`` -> 2 (or ``--max-steps``), ``train.batch_size`` at most the sample's training examples,
  ``init_from`` dropped (there is no trained stage 1 to start from), ``output_dir`` -> ``OUT/<recipe>``.

The weights are random: the run shows that the recipe's pipeline works (data read in its layout, the stages
and the checkpoint a caption command loads), never how the paper's model does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from connote.vmc.train.config import TrainConfig, load_config

SAMPLE_STEPS = 2


def sample_words() -> list[str]:
    """Every whitespace token of the sample's captions, answers and the recipes' prompts (the tiny vocabularies)."""
    from connote.vmc.sample import CLIPS
    from connote.vmc.sample_synth import CAPTIONS

    texts = [c for clip in CLIPS for c in clip[3]]
    texts += [t for row in CAPTIONS for t in (row[2], row[3]) if t]
    texts += ["What caption can best describe the metaphor in the video?", "What caption can best describe the "
              "video?", "What metaphor can best describe the video?"]
    return list(dict.fromkeys(w for t in texts for w in t.split()))


def write_stage1_sample(folder: Path) -> dict[str, Path]:
    """The catalogue's HAIVMet (``haivmet.json`` + ``images/``) and MSCOCO (``annotations/captions_train2014.json``
    + ``train2014/``) folders made from the ``vmc synth`` sample's photos, and that sample's own files."""
    from PIL import Image

    from connote.vmc.sample_synth import CAPTIONS, write_sample_synth
    from connote.vmc.synth import filter_answer

    synth = write_sample_synth(folder / "synth")
    haivmet, coco = folder / "haivmet", folder / "coco"
    (haivmet / "images").mkdir(parents=True, exist_ok=True)
    (coco / "train2014").mkdir(parents=True, exist_ok=True)
    (coco / "annotations").mkdir(parents=True, exist_ok=True)
    records, images, annotations = [], [], []
    for n, (rid, photo, caption, answer) in enumerate(CAPTIONS):
        source = synth["images"] / f"{photo}.jpg"
        kept = filter_answer(answer)[0] if answer else None
        if kept:  # HAIVMet pairs an image with its metaphor prompt
            target = haivmet / "images" / f"{rid}.jpg"
            if not target.exists():
                Image.open(source).convert("RGB").save(target, quality=90)
            records.append({"id": rid, "image": target.name, "caption": kept, "kind": "metaphor"})
        name = f"COCO_train2014_{n + 1:012d}.jpg"
        if not (coco / "train2014" / name).exists():
            Image.open(source).convert("RGB").save(coco / "train2014" / name, quality=90)
        images.append({"id": n + 1, "file_name": name})
        annotations.append({"id": 100 + n, "image_id": n + 1, "caption": caption})
    (haivmet / "haivmet.json").write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    (coco / "annotations" / "captions_train2014.json").write_text(
        json.dumps({"images": images, "annotations": annotations}) + "\n", encoding="utf-8")
    return {"haivmet": haivmet, "coco": coco, **{f"synth_{k}": v for k, v in synth.items()}}


def _synth_run(paths: dict[str, Path], out: Path) -> Path:
    """The ``vmc synth`` sample run (answered from its Batch API output file) for a ``data.synth`` recipe."""
    from connote.vmc.synth import SYNTH_PROMPT
    from connote.vmc.synth_task import synthesize

    synthesize(paths["synth_captions"], f"openai-batch:{paths['synth_batch_output']}", out,
               images=paths["synth_images"], prompt=SYNTH_PROMPT, progress=False)
    return out


def sample_config(recipe: Path, out: Path, *, max_steps: int | None = None,
                  note: Callable[[str], None] = lambda m: None) -> TrainConfig:
    """The recipe's config with what cannot exist offline replaced by the sample (each replacement noted)."""
    from connote.vmc.sample import TRAIN, write_sample_vmc
    from connote.vmc.train.tiny import make_tiny_sources

    cfg = load_config(recipe)  # the recipe as it ships, its defaults filled in (and a bad recipe named)
    sample = out / "sample"
    models = sample / "models"
    if not (models / "git" / "config.json").is_file() or not (models / "llm" / "config.json").is_file():
        note(f"building tiny random GIT and LLM into {models} (once)")
        make_tiny_sources(models, sample_words(), frames=cfg.model.frames_per_clip)
    overrides: dict[str, Any] = {"model": {"captioner": str(models / "git")},
                                 "output_dir": str(out / recipe.stem), "init_from": None}
    replaced = cfg.model.captioner
    if cfg.model.architecture != "git":  # the GIT baseline has no LLM
        overrides["model"]["llm"] = str(models / "llm")
        replaced += f" and {cfg.model.llm}"
    note(f"model: {replaced} -> tiny random models ({models}); their captions mean nothing")
    if cfg.init_from:
        note(f"init_from {cfg.init_from} dropped: no trained stage 1 on the sample, the projector starts fresh")
    given = cfg.data
    if cfg.stage == 1:
        paths = write_stage1_sample(sample / "stage1")
        new: dict[str, Any] = {"val_fraction": given.val_fraction}
        if given.synth:
            new["synth"] = str(_synth_run(paths, sample / "stage1" / "synth-run"))
        if given.haivmet or given.coco or not given.synth:
            new.update(haivmet=str(paths["haivmet"]), coco=str(paths["coco"]), coco_split="train2014")
        n_train = None
        named = [k for k in ("haivmet", "coco", "synth", "metaphor_images", "literal_images") if getattr(given, k)]
        note(f"data: {', '.join(named) or 'stage-1 images'} -> the sample's "
             f"{', '.join(k for k in ('haivmet', 'coco', 'synth') if k in new)} ({sample / 'stage1'})")
    else:
        paths = write_sample_vmc(sample / "vmc")
        new = {"captions": str(paths["captions"]), "videos": str(paths["videos"]), "train_split": str(paths["train"]),
               "val_split": str(paths["test"])}
        n_train = len(TRAIN)
        note(f"data: VMC -> the sample clips ({paths['videos']}; {n_train} training clips, the test split as "
             "validation)")
    overrides["data"] = new
    steps = max_steps or SAMPLE_STEPS
    overrides["train"] = {"max_steps": steps}
    batch = cfg.train.batch_size
    if n_train is not None and batch > n_train:
        overrides["train"]["batch_size"] = n_train
        note(f"train.batch_size {batch} -> {n_train} (the sample's training clips); train.max_steps -> {steps}")
    else:
        note(f"train.max_steps -> {steps}")
    # the recipe's data section is replaced whole: its paths do not exist here
    return load_config(recipe, overrides, replace=("data",))
