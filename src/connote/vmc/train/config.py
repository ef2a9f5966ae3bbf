"""The training config (YAML) for GIT-LLaVA: typed sections checked by pydantic, unknown fields rejected by name.

Each section is a pydantic dataclass (``extra="forbid"``): an unknown or mistyped field is an
``InputError`` (exit status 2) naming the YAML file, the field's line in it, the dotted field path
and the expected type. Types are strict as before: ``"4"`` is not an int and ``true`` is not a
number; numbers are accepted where text is expected (``llm: 7`` becomes ``"7"``).

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
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Strict, StrictBool, StrictInt, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

from connote.core.errors import InputError

_CHECKED = ConfigDict(extra="forbid", coerce_numbers_to_str=True)
"""Unknown fields are errors; numbers may stand for text (as the YAML loader reads ``7`` in ``llm: 7``)."""
StrictFloat = Annotated[float, Strict()]
"""A float field: ints and floats, never strings or booleans."""


@dataclass(config=_CHECKED)
class ModelConfig:
    """The GIT-LLaVA architecture."""

    architecture: str = "git-llava"
    """``git-llava`` (GIT-LLaVA / GIT-LLaVA-X) or ``git``: the paper's fine-tuned GIT baseline (A.2; every GIT weight
    trained on VMC, saved as a ``git-video`` folder; :mod:`connote.vmc.train.git_baseline`)."""
    captioner: str = "microsoft/git-large-vatex"
    """Frozen GIT video captioner: hub id or local directory (model + processor)."""
    llm: str = "lmsys/vicuna-13b-v1.5"
    """Any Hugging Face causal LM: hub id or local directory (model + tokenizer)."""
    layer: StrictInt = -2
    """Which GIT decoder hidden-state layer feeds the projector (index into ``hidden_states``)."""
    clips: StrictInt = 1
    """1: GIT-LLaVA (the ``segments`` 6 frames); k > 1: GIT-LLaVA-X (k clips, summed)."""
    frames_per_clip: StrictInt = 6
    frame_sampling: str = "random"
    """``random``: frames drawn as the public VMC encoder draws them (seeded by ``frame_seed``, re-drawn every
    training epoch, one fixed draw at evaluation); ``fixed``: connote's fixed positions
    (:mod:`connote.media.frames`). A model saved without this key was trained on ``fixed`` frames."""
    frame_seed: StrictInt = 0
    prompt: str = "What caption can best describe the metaphor in the video?"
    template: str = "USER: <video>\n{prompt} ASSISTANT:"
    """Chat layout around the video tokens; ``<video>`` marks where the projected states go."""
    max_caption_tokens: StrictInt = 48
    projector_hidden: StrictInt | None = None
    """Width of the projector's hidden layer (default: the LLM's hidden size)."""


@dataclass(config=_CHECKED)
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
    haivmet: str | None = None
    """Stage 1: the catalogue's HAIVMet folder (haivmet.json + images/), metaphor pairs (train.stage1)."""
    coco: str | None = None
    """Stage 1: an MSCOCO folder (annotations/captions_<coco_split>.json + <coco_split>/), literal pairs."""
    coco_split: str = "train2014"
    synth: str | None = None
    """Stage 1: a ``connote vmc synth`` run folder or its metaphors.json (synthetic metaphor pairs, A.5.2)."""
    synth_image_dir: str | None = None
    """The synthetic table's image folder (default: the synth run's --images)."""
    val_fraction: StrictFloat = 0.0
    """Stage 1 without a validation set: hold out this share of the pairs."""
    frame_size: StrictInt | None = None
    """Resize frames' shorter side before the processor (saves decode memory); None: as decoded."""


@dataclass(config=_CHECKED)
class LoraConfig:
    """LoRA adapters on the LLM through peft."""

    r: StrictInt = 16
    alpha: StrictInt = 32
    dropout: StrictFloat = 0.05
    target_modules: list[str] | str = "all-linear"


@dataclass(config=_CHECKED)
class TrainLoopConfig:
    """Optimisation and bookkeeping."""

    epochs: StrictFloat = 1.0
    max_steps: StrictInt | None = None
    batch_size: StrictInt = 4
    """Examples per optimiser step summed over all processes (global batch)."""
    grad_accum: StrictInt = 1
    lr: StrictFloat = 2e-6
    weight_decay: StrictFloat = 0.0
    warmup_ratio: StrictFloat = 0.03
    scheduler: str = "cosine"
    bf16: str = "auto"
    """'auto' (bf16 on CUDA, fp32 elsewhere), 'yes' or 'no'."""
    seed: StrictInt = 0
    train_llm: StrictBool | None = None
    """Stage 2 default True (projector + LLM); stage 1 always trains the projector alone."""
    lora: LoraConfig | None = None
    early_stopping_patience: StrictInt | None = 2
    """Stop after this many evaluations without a better validation loss (None: never)."""
    eval_every: StrictInt | None = None
    """Evaluate every N optimiser steps (default: at the end of every epoch)."""
    save_every: StrictInt | None = None
    """Write a resumable checkpoint every N optimiser steps (default: at the end of every epoch)."""
    keep_checkpoints: StrictInt = 2
    num_workers: StrictInt = 0
    log_every: StrictInt = 1
    max_grad_norm: StrictFloat | None = 1.0
    pack: str = "auto"
    """'yes': each batch as one row without padding (positions restart per example); 'auto': only where the LLM's
    attention reads example boundaries (flash / flex attention); 'no' (:mod:`connote.vmc.train.speed`)."""
    compile: str = "auto"
    """'yes': every LLM decoder layer compiled with torch.compile; 'auto': on CUDA; 'no'."""
    kernels: str = "auto"
    """'liger': Liger's Triton kernels and fused linear cross-entropy (the ``liger`` extra); 'auto': when installed,
    on CUDA; 'none'."""


@dataclass(config=_CHECKED)
class TrainConfig:
    """One training stage of GIT-LLaVA."""

    stage: StrictInt = 2
    output_dir: str = "runs/git-llava"
    init_from: str | None = None
    resume: StrictBool = True
    """Continue from the newest checkpoint in ``output_dir`` when there is one."""
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainLoopConfig = field(default_factory=TrainLoopConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_SECTIONS: dict[tuple[str, ...], type] = {}
"""Dotted section path -> its dataclass (filled below, once the classes exist)."""

_EXPECTED = {
    "int_type": "int", "float_type": "float", "string_type": "str", "bool_type": "bool (true or false)",
    "list_type": "a list", "dataclass_type": "a mapping", "dict_type": "a mapping",
}


def _yaml_line(text: str | None, keys: tuple[str | int, ...]) -> int | None:
    """The 1-based line of ``keys`` in the YAML ``text`` (the deepest key found), or None."""
    if not text:
        return None
    import yaml

    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            hit = next(((k, v) for k, v in node.value if getattr(k, "value", None) == str(key)), None)
            if hit is None:
                break
            line, node = hit[0].start_mark.line + 1, hit[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _describe(exc: ValidationError, text: str | None) -> tuple[str, int | None]:
    """One message for all of pydantic's errors: unknown fields first, then mistyped ones (dotted paths)."""
    unknown: dict[tuple[str, ...], list[str]] = {}
    wrong: dict[str, tuple[list[str], Any, tuple[str | int, ...]]] = {}
    first_unknown: tuple[str | int, ...] | None = None
    first_wrong: tuple[str | int, ...] | None = None
    for err in exc.errors(include_url=False):
        # a union member's tag (e.g. 'list[str]') is not a field: keep the keys present in the input
        loc = tuple(x for x in err["loc"] if isinstance(x, int) or "[" not in x and x not in
                    ("str", "int", "float", "bool", "list", "function-after"))
        if err["type"] in ("unexpected_keyword_argument", "extra_forbidden"):
            unknown.setdefault(tuple(str(x) for x in loc[:-1]), []).append(str(loc[-1]))
            first_unknown = first_unknown or loc
        else:
            dotted = ".".join(str(x) for x in loc) or "config"
            expected = _EXPECTED.get(err["type"], err["msg"])
            entry = wrong.setdefault(dotted, ([], err["input"], loc))
            if expected not in entry[0]:
                entry[0].append(expected)
            first_wrong = first_wrong or loc
    parts = []
    for section, names in unknown.items():
        cls = _SECTIONS.get(section)
        valid = sorted(f.name for f in dataclasses.fields(cls)) if cls else []
        where = ".".join(section)
        full = ", ".join(f"{where}.{n}" if where else n for n in names)
        parts.append(f"unknown config field(s) {full}; valid fields{' of ' + where if where else ''}: "
                     f"{', '.join(valid)}")
    for dotted, (expected, value, _loc) in wrong.items():
        if value is None:
            parts.append(f"{dotted} may not be empty (expected {' or '.join(expected)})")
        else:
            hint = " (YAML reads yes/no/on/off as booleans: quote the value)" \
                if isinstance(value, bool) and "str" in expected else ""
            parts.append(f"{dotted} should be {' or '.join(expected)}, got {value!r}{hint}")
    return "; ".join(parts), _yaml_line(text, first_unknown or first_wrong or ())


def config_from_dict(data: dict[str, Any], path: str | Path | None = None, *, text: str | None = None) -> TrainConfig:
    """Build a :class:`TrainConfig`, naming any unknown or mistyped field (dotted) and its YAML line.

    ``text`` is the YAML the data came from (used only to point at the offending line).
    """
    p = Path(path) if path is not None else None
    if not isinstance(data, dict) and data is not None:
        raise InputError(f"config must be a mapping of sections, got {type(data).__name__}", path=p)
    try:
        cfg = _ADAPTER.validate_python(data or {})
    except ValidationError as exc:
        message, line = _describe(exc, text)
        raise InputError(message, path=p, line=line) from None

    def fail(message: str, *keys: str) -> InputError:
        return InputError(message, path=p, line=_yaml_line(text, keys))

    if cfg.stage not in (1, 2):
        raise fail(f"stage must be 1 or 2, got {cfg.stage}", "stage")
    if cfg.model.clips < 1 or cfg.model.frames_per_clip < 1:
        raise fail("model.clips and model.frames_per_clip must be at least 1", "model", "clips")
    if "<video>" not in cfg.model.template:
        raise fail("model.template must contain <video>", "model", "template")
    if cfg.model.architecture not in ("git-llava", "git"):
        raise fail(f"model.architecture must be git-llava or git, not {cfg.model.architecture!r}",
                   "model", "architecture")
    if cfg.model.architecture == "git" and (cfg.stage != 2 or cfg.init_from or cfg.train.lora):
        raise fail("the GIT baseline (model.architecture: git) is fine-tuned whole on videos: stage 2, no "
                   "init_from, no train.lora", "stage")
    if cfg.train.scheduler not in ("cosine", "linear", "constant"):
        raise fail(f"train.scheduler must be cosine, linear or constant, not {cfg.train.scheduler!r}",
                   "train", "scheduler")
    for name, valid in (("bf16", ("auto", "yes", "no")), ("pack", ("auto", "yes", "no")),
                        ("compile", ("auto", "yes", "no")), ("kernels", ("auto", "liger", "none"))):
        value = getattr(cfg.train, name)
        if value not in valid:
            raise fail(f"train.{name} must be {', '.join(valid[:-1])} or {valid[-1]}, not {value!r}", "train", name)
    return cfg


#: The recipes that ship with connote (``paper-*.yaml`` as the paper states, ``public-*.yaml`` as its scripts ran).
RECIPES = Path(__file__).resolve().parent / "recipes"


def recipe_names() -> list[str]:
    """The shipped recipes' names (file stems)."""
    return sorted(p.stem for p in RECIPES.glob("*.yaml"))


def find_config(path: str | Path) -> Path:
    """``path`` when it is a file, else the shipped recipe of that name (``paper-git-baseline`` or
    ``paper-git-baseline.yaml``); neither is an InputError listing the recipes."""
    path = Path(path)
    if path.exists():  # a file, or something else read_yaml names (a folder)
        return path
    if path.parent == Path(".") and (RECIPES / f"{path.stem}.yaml").is_file() and path.suffix in ("", ".yaml"):
        return RECIPES / f"{path.stem}.yaml"
    raise InputError(f"no such file, and no shipped recipe of that name; shipped recipes: {', '.join(recipe_names())}",
                     path=path)


def load_config(path: str | Path, overrides: dict[str, Any] | None = None, *,
                replace: tuple[str, ...] = ()) -> TrainConfig:
    """Read a YAML training config; ``overrides`` (nested dict) are merged on top, except the top-level
    sections named in ``replace``, which the override's section replaces whole (or removes, when absent).

    Paths in the config are used as written (relative ones from the working directory).
    """
    from connote.core.jsonio import read_yaml

    path = Path(path)
    data, text = read_yaml(path, what="YAML file")
    data = data or {}
    if (overrides or replace) and isinstance(data, dict):
        data = _merge({k: v for k, v in data.items() if k not in replace}, overrides or {})
    return config_from_dict(data, path, text=text)


_ADAPTER = TypeAdapter(TrainConfig)
_SECTIONS.update({(): TrainConfig, ("model",): ModelConfig, ("data",): DataConfig, ("train",): TrainLoopConfig,
                  ("train", "lora"): LoraConfig})


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


#: The format tag of a saved GIT-LLaVA folder's ``git_llava.json``.
FORMAT = "connote.git_llava/1"


def read_saved(folder: str | Path) -> tuple[dict[str, Any], ModelConfig]:
    """A saved GIT-LLaVA folder's ``git_llava.json`` and its :class:`ModelConfig`, read without loading the model
    (exit 2 on a folder that is not one; older models were trained on fixed frames)."""
    from connote.core.jsonio import read_json

    meta_path = Path(folder) / "git_llava.json"
    if not meta_path.exists():
        raise InputError("not a saved GIT-LLaVA model (git_llava.json missing)", path=Path(folder))
    meta = read_json(meta_path, what="GIT-LLaVA model file")
    if meta.get("format") != FORMAT:
        raise InputError(f"unsupported format {meta.get('format')!r}; expected {FORMAT}", path=meta_path)
    return meta, ModelConfig(**{"frame_sampling": "fixed", **meta["model"]})
