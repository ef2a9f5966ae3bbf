"""The training config (YAML) for GIT-LLaVA: typed sections, unknown fields rejected by name.

Example (stage 2, GIT-LLaVA-X with 4 clips, LoRA)::

    stage: 2
    output_dir: runs/git-llava-x
    init_from: runs/stage1/final          # stage-1 projector (or any saved GIT-LLaVA)
    model:
      captioner: microsoft/git-large-vatex
      llm: lmsys/vicuna-13b-v1.5
      layer: -2
      clips: 4
    data:
      captions: vmc.csv
      videos: videos/
      train_split: splits/train.txt
      val_split: splits/val.txt
    train:
      epochs: 5
      batch_size: 4
      lr: 2.0e-6
      warmup_ratio: 0.03
      lora: {r: 16, alpha: 32}
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.errors import InputError


@dataclass
class ModelConfig:
    """The GIT-LLaVA architecture."""

    captioner: str = "microsoft/git-large-vatex"
    """Frozen GIT video captioner: hub id or local directory (model + processor)."""
    llm: str = "lmsys/vicuna-13b-v1.5"
    """Any Hugging Face causal LM: hub id or local directory (model + tokenizer)."""
    layer: int = -2
    """Which GIT decoder hidden-state layer feeds the projector (index into ``hidden_states``)."""
    clips: int = 1
    """1: GIT-LLaVA (the ``segments`` 6 frames); k > 1: GIT-LLaVA-X (k clips, summed)."""
    frames_per_clip: int = 6
    prompt: str = "What caption can best describe the metaphor in the video?"
    template: str = "USER: <video>\n{prompt} ASSISTANT:"
    """Chat layout around the video tokens; ``<video>`` marks where the projected states go."""
    max_caption_tokens: int = 48
    projector_hidden: int | None = None
    """Width of the projector's hidden layer (default: the LLM's hidden size)."""


@dataclass
class DataConfig:
    """Where the examples come from. Stage 1 uses images, stage 2 the VMC videos."""

    captions: str | None = None
    videos: str | None = None
    train_split: str | None = None
    val_split: str | None = None
    metaphor_images: str | None = None
    """Stage 1: JSON of metaphor image-caption records (HAIVMet-style)."""
    literal_images: str | None = None
    """Stage 1: COCO captions JSON (literal captions)."""
    image_dir: str | None = None
    literal_image_dir: str | None = None
    val_fraction: float = 0.0
    """Stage 1 without a validation set: hold out this share of the pairs."""
    frame_size: int | None = None
    """Resize frames' shorter side before the processor (saves decode memory); None: as decoded."""


@dataclass
class LoraConfig:
    """LoRA adapters on the LLM through peft."""

    r: int = 16
    alpha: int = 32
    dropout: float = 0.05
    target_modules: list[str] | str = "all-linear"


@dataclass
class TrainLoopConfig:
    """Optimisation and bookkeeping."""

    epochs: float = 1.0
    max_steps: int | None = None
    batch_size: int = 4
    """Examples per optimiser step summed over all processes (global batch)."""
    grad_accum: int = 1
    lr: float = 2e-6
    weight_decay: float = 0.0
    warmup_ratio: float = 0.03
    scheduler: str = "cosine"
    bf16: str = "auto"
    """'auto' (bf16 on CUDA, fp32 elsewhere), 'yes' or 'no'."""
    seed: int = 0
    train_llm: bool | None = None
    """Stage 2 default True (projector + LLM); stage 1 always trains the projector alone."""
    lora: LoraConfig | None = None
    early_stopping_patience: int | None = 2
    """Stop after this many evaluations without a better validation loss (None: never)."""
    eval_every: int | None = None
    """Evaluate every N optimiser steps (default: at the end of every epoch)."""
    save_every: int | None = None
    """Write a resumable checkpoint every N optimiser steps (default: at the end of every epoch)."""
    keep_checkpoints: int = 2
    num_workers: int = 0
    log_every: int = 1
    max_grad_norm: float | None = 1.0


@dataclass
class TrainConfig:
    """One training stage of GIT-LLaVA."""

    stage: int = 2
    output_dir: str = "runs/git-llava"
    init_from: str | None = None
    resume: bool = True
    """Continue from the newest checkpoint in ``output_dir`` when there is one."""
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _is_dataclass_type(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _build(cls: type, data: Any, where: str, path: Path | None) -> Any:
    if not isinstance(data, dict):
        raise InputError(f"{where or 'config'} must be a mapping, got {type(data).__name__}", path=path)
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in names]
    if unknown:
        full = ", ".join(f"{where}.{k}" if where else str(k) for k in unknown)
        raise InputError(f"unknown config field(s) {full}; valid fields"
                         f"{' of ' + where if where else ''}: {', '.join(sorted(names))}", path=path)
    kwargs = {}
    for key, value in data.items():
        tp = hints[key]
        sub = f"{where}.{key}" if where else key
        options = typing.get_args(tp) if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union \
            else (tp,)
        dc = next((o for o in options if _is_dataclass_type(o)), None)
        if dc is not None and value is not None:
            kwargs[key] = _build(dc, value, sub, path)
        else:
            kwargs[key] = _check(value, options, sub, path)
    return cls(**kwargs)


def _check(value: Any, options: tuple[Any, ...], where: str, path: Path | None) -> Any:
    if value is None:
        if type(None) in options:
            return None
        raise InputError(f"{where} may not be empty", path=path)
    for tp in options:
        origin = typing.get_origin(tp) or tp
        if origin is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if origin is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if origin is bool and isinstance(value, bool):
            return value
        if origin is str and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        if origin is list and isinstance(value, list):
            return [str(v) for v in value]
    names = " or ".join(getattr(o, "__name__", str(o)) for o in options)
    raise InputError(f"{where} should be {names}, got {value!r}", path=path)


def config_from_dict(data: dict[str, Any], path: str | Path | None = None) -> TrainConfig:
    """Build a :class:`TrainConfig`, naming any unknown or mistyped field (dotted)."""
    p = Path(path) if path is not None else None
    cfg = _build(TrainConfig, data or {}, "", p)
    if cfg.stage not in (1, 2):
        raise InputError(f"stage must be 1 or 2, got {cfg.stage}", path=p)
    if cfg.model.clips < 1 or cfg.model.frames_per_clip < 1:
        raise InputError("model.clips and model.frames_per_clip must be at least 1", path=p)
    if "<video>" not in cfg.model.template:
        raise InputError("model.template must contain <video>", path=p)
    if cfg.train.scheduler not in ("cosine", "linear", "constant"):
        raise InputError(f"train.scheduler must be cosine, linear or constant, not {cfg.train.scheduler!r}",
                         path=p)
    if cfg.train.bf16 not in ("auto", "yes", "no"):
        raise InputError(f"train.bf16 must be auto, yes or no, not {cfg.train.bf16!r}", path=p)
    return cfg


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Read a YAML training config; ``overrides`` (nested dict) are merged on top.

    Paths in the config are used as written (relative ones from the working directory).
    """
    import yaml

    path = Path(path)
    if not path.exists():
        raise InputError("config file not found", path=path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"invalid YAML: {exc}", path=path, line=mark.line + 1 if mark else None) from exc
    if overrides:
        data = _merge(data, overrides)
    return config_from_dict(data, path)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out
