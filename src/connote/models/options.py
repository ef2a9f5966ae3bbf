"""A backend's options as ``connote models NAME`` and docs/models.md show them: name, type, default, help.

The names, types and defaults are read from the backend's constructor, the same declaration
:func:`connote.models.registry.check_spec` checks a spec against; the help comes from the registration's
``options`` (what is particular to that backend) or, for the options many backends share, from
:data:`OPTION_HELP`. Nothing here imports a backend's heavy modules beyond its constructor's own module.
"""

from __future__ import annotations

import inspect
import types
import typing
from dataclasses import dataclass
from typing import Any

from connote.models.registry import MODELS, Backend, _option_parameters

#: One line of help for the options several backends share, where they mean the same thing.
OPTION_HELP: dict[str, str] = {
    "device": "where it runs: cpu, cuda, cuda:N, mps; unset: CUDA when present, else the CPU",
    "dtype": "precision: float32, bfloat16, float16; unset: bf16 on a GPU, fp32 on a CPU",
    "revision": "hub revision of the weights: a branch, tag or commit hash",
    "max_length": "longest caption in tokens (longer ones are cut); unset: the text encoder's position limit",
    "batch_size": "requests per generate call (lower it when a batch runs out of memory)",
    "max_new_tokens": "longest answer in new tokens; unset: the task's own limit",
    "prompt": "the prompt template for matching; {caption} is replaced by the caption",
    "generation_prompt": "a prompt that replaces the task's prompt for generation",
    "cache": "KV cache while decoding: auto (static on CUDA where the model supports it), dynamic, static",
    "compile": "compile the decoding step with torch.compile: auto (on CUDA with a static cache), true, false",
    "logits": "fp32: the LM head computes in float32 (greedy output independent of the batch); model: as loaded",
    "attention": "sdpa (torch's fused attention, same values, less memory) or eager (transformers' own)",
    "embedder": "an encoder object (Python API only; the embedded EfficientNet-Lite0 + MiniLM when unset)",
    # the matching engine (connote.models.engine.TensorMatcher): docs/long-runs.md "Batch and memory"
    "memory_budget": "bytes the engine may hold besides the weights (image states, activations, a batch), "
                     "e.g. 6GB; auto: 25% of free RAM on a CPU, 50% of free GPU memory; lowers the batches to fit",
    "image_batch_size": "images per vision-encoder batch; auto: 8 on a CPU, 32 on a GPU (lowered to fit "
                        "memory_budget)",
    "preprocess_workers": "threads preparing images while the model runs",
    "preprocess": "how images become pixels: device (batched on the model's device with torchvision), hf (the "
                  "model's own processor, image by image); auto: device, except ALBEF (hf: the release's PIL resize) "
                  "and chat VLMs whose processor the device path does not reproduce (checked at load)",
}




@dataclass(frozen=True)
class ModelOption:
    """One option of a backend: its name, the kind of value it takes, its default (as text) and its help."""

    name: str
    type: str
    default: str
    help: str


def _kinds(annotation: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or isinstance(annotation, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def type_text(annotation: Any, default: Any) -> str:
    """The kind of value an option takes, in words: ``integer``, ``number``, ``true/false``, ``text``; ``or auto``
    where its text ``auto`` lets the backend choose."""
    args = _kinds(annotation)
    if annotation is Any or annotation is inspect.Parameter.empty:
        return "object" if annotation is Any else "text"
    words = [w for k, w in ((bool, "true/false"), (int, "integer"), (float, "number")) if k in args]
    if not words:
        return "text"
    text = " or ".join(words)
    return text + " or auto" if default == "auto" and str in args else text


def default_text(default: Any) -> str:
    """An option's default as text: ``required`` when it has none, ``unset`` for None, long texts shortened."""
    if default is inspect.Parameter.empty:
        return "required"
    if default is None:
        return "unset"
    if isinstance(default, bool):
        return str(default).lower()
    text = " ".join(str(default).split()) or '""'
    return text if len(text) <= 40 else text[:37] + "..."


def option_help(backend: Backend, name: str) -> str:
    """The one line of help for ``name`` of ``backend``: its registration's own, else the shared one ("" if none)."""
    return backend.options.get(name) or OPTION_HELP.get(name, "")


def backend_options(name: str) -> tuple[Backend, list[ModelOption], bool]:
    """The registered backend ``name``, its options (in the constructor's order; an alias's ``defaults`` shown as
    the defaults) and whether its constructor passes further options on (``**options``)."""
    backend = MODELS.get(name)
    params, open_kw = _option_parameters(backend.factory())
    rows = [ModelOption(opt, type_text(annotation, default),
                        default_text(backend.defaults.get(opt, default)), option_help(backend, opt))
            for opt, (annotation, default) in params.items()]
    return backend, rows, open_kw


def close_matches(name: str) -> list[str]:
    """Registered backend names close to a mistyped ``name`` (difflib's, then those sharing a prefix)."""
    import difflib

    names = MODELS.names()
    found = difflib.get_close_matches(name, names, n=4, cutoff=0.6)
    head = name.split("-")[0]
    return found or [n for n in names if head and n.startswith(head)][:4]
