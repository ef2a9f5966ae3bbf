"""How connote's Hugging Face generators decode: the KV cache, compiled decoding steps and fp32 logits.

Greedy decoding of a batch spends, per new token, one forward pass of the language model on one position
per row. On a GPU that step is a few hundred small kernels, and with transformers' default dynamic cache
each is launched from Python: the GPU waits for the CPU (measured on an H200: ~48 ms a step for a 1.1B
model that needs ~0.5 ms of memory traffic). A *static* cache (``cache=static``) keeps every shape fixed,
so transformers can compile the decoding step with ``torch.compile`` and replay it as a CUDA graph (mode
``reduce-overhead``): one launch per step. That is the default on CUDA (``cache=auto``) for a model that
supports it; elsewhere the dynamic cache stays (CUDA graphs need CUDA; a compiled step on a CPU saves
little and costs its compilation, though ``compile=true`` asks for it there too, in inductor's default
mode, which is how the tests run the compiled path).

Transformers sizes a static cache at the longest prompt plus new tokens seen so far and never shrinks it,
so batches of shorter prompts reuse the compiled step; a new number of rows compiles once more.

Batch invariance (:mod:`connote.tasks.invariance`): in bf16 a batch may round differently from one row
alone, and a near-tie between two next tokens can flip. The cheap part of keeping greedy outputs equal to
batch 1 is the last matrix product: with ``logits=fp32`` (the default in half precision) the LM head runs
in float32 on the final hidden state, so the logits are not rounded to bf16's 8 bits of mantissa (where two
close logits become equal and the lower token id wins by accident). Left padding needs nothing here:
transformers derives position ids from the attention mask, so pad tokens shift no position.
"""

from __future__ import annotations

import functools
from typing import Any

CACHES = ("auto", "dynamic", "static")
SWITCHES = ("auto", "true", "false")


def check_choice(name: str, value: Any, valid: tuple[str, ...]) -> str:
    """``value`` as a lower-case string from ``valid``, else a ValueError naming the option and the valid ones."""
    text = str(value).strip().lower()
    if text in ("1", "yes", "on"):
        text = "true"
    elif text in ("0", "no", "off"):
        text = "false"
    if text not in valid:
        raise ValueError(f"{name} must be one of {', '.join(valid)}, not {value!r}")
    return text


def supports_static_cache(model: Any) -> bool:
    """Whether transformers can decode ``model`` with a static cache and compile the step (its own flag)."""
    return bool(getattr(model, "_can_compile_fullgraph", False))


def resolve_cache(cache: str, device: str, model: Any) -> str:
    """``auto`` -> ``static`` on CUDA for a model that supports it, else ``dynamic``."""
    if cache != "auto":
        return cache
    return "static" if device.startswith("cuda") and supports_static_cache(model) else "dynamic"


def resolve_compile(compile_: str, cache: str, device: str) -> bool:
    """Compile the decoding step: ``auto`` = with a static cache on CUDA; ``true`` = with a static cache anywhere."""
    if cache != "static" or compile_ == "false":
        return False
    return compile_ == "true" or device.startswith("cuda")


def generate_options(cache: str, compiled: bool, device: str) -> dict[str, Any]:
    """Keyword arguments of ``model.generate`` for the resolved cache and compilation."""
    if cache != "static":
        return {}
    options: dict[str, Any] = {"cache_implementation": "static"}
    from transformers import CompileConfig

    if compiled:
        cuda = device.startswith("cuda")
        # CUDA graphs (reduce-overhead) replay a whole step in one launch; they exist only on CUDA
        config = CompileConfig(fullgraph=False, mode="reduce-overhead" if cuda else "default")
        if not cuda:
            config._compile_all_devices = True  # transformers compiles on accelerators only unless told
        options["compile_config"] = config
    else:
        options["disable_compile"] = True
    return options


def decoding_description(cache: str, compiled: bool, logits: str, dtype: Any) -> dict[str, Any]:
    """What a generator's ``describe()`` adds: only what differs from transformers' defaults, so the
    fingerprints of runs that decode as before do not change."""
    import torch

    out: dict[str, Any] = {}
    if cache != "dynamic":
        out["cache"] = cache
        out["compiled"] = compiled
    if logits == "fp32" and dtype != torch.float32:
        out["logits"] = "fp32"
    return out


class Decoding:
    """A generator's decoding settings (``cache``, ``compile``, ``logits`` spec options): checked when made (a bad
    value stops before any weights load), resolved against the loaded model by :meth:`bind`."""

    def __init__(self, cache: Any = "auto", compile: Any = "auto", logits: Any = "fp32") -> None:  # noqa: A002
        self.cache = check_choice("cache", cache, CACHES)
        self.compile = check_choice("compile", compile, SWITCHES)
        self.logits = check_choice("logits", logits, ("fp32", "model"))
        self.compiled = False
        self.device, self.dtype = "cpu", None

    def bind(self, model: Any, device: str, dtype: Any) -> Decoding:
        """Resolve ``auto`` for ``model`` (the one whose ``generate`` runs) on ``device``; with ``logits=fp32`` its
        LM head now computes in float32."""
        self.device, self.dtype = device, dtype
        if self.logits == "fp32":
            fp32_logits(model)
        self.cache = resolve_cache(self.cache, device, model)
        self.compiled = resolve_compile(self.compile, self.cache, device)
        return self

    def generate_options(self) -> dict[str, Any]:
        return generate_options(self.cache, self.compiled, self.device)

    def describe(self) -> dict[str, Any]:
        return decoding_description(self.cache, self.compiled, self.logits, self.dtype)


def fp32_logits(model: Any) -> None:
    """Make ``model``'s LM head (``get_output_embeddings()``) compute in float32 from its half-precision input
    (a float32 copy of its weight is kept: vocabulary x width x 4 bytes). Idempotent."""
    import torch

    head = model.get_output_embeddings()
    if head is None or getattr(head, "fp32_logits", False) or head.weight.dtype == torch.float32:
        return
    model.set_output_embeddings(_fp32_head_class()(head))


@functools.lru_cache(maxsize=1)
def _fp32_head_class() -> type:
    """The head's ``nn.Module`` class, made on first use so that importing this module imports no torch."""
    import torch
    from torch import nn

    class Fp32Head(nn.Module):
        """An LM head (``nn.Linear``) evaluated in float32; ``weight`` stays the model's own (tied) parameter."""

        fp32_logits = True

        def __init__(self, head: Any) -> None:
            super().__init__()
            self.head = head
            self.register_buffer("weight32", head.weight.detach().float(), persistent=False)
            bias = getattr(head, "bias", None)
            self.register_buffer("bias32", None if bias is None else bias.detach().float(), persistent=False)

        @property
        def weight(self) -> Any:
            return self.head.weight

        def forward(self, hidden: Any) -> Any:
            return nn.functional.linear(hidden.to(torch.float32), self.weight32, self.bias32)

    return Fp32Head
