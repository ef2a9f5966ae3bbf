"""What makes a GIT-LLaVA training step fast, each a setting of ``train`` with ``auto`` as its default.

* ``pack``: the batch as one row without padding (:meth:`GitLlava._packed`): position ids restart with every
  example and transformers keeps attention within each. It saves the padded positions, at the price of one
  attention over the whole row unless the LLM's attention kernel reads the example boundaries (flash
  attention's variable-length kernels, flex attention's block mask): ``auto`` packs only with those. With
  PyTorch's SDPA a padded batch whose examples are about as long (6 x 257 video positions each, a caption
  of a dozen tokens) wastes little, and a batch with no padding at all runs SDPA's flash kernel.
* ``compile``: every decoder layer of the LLM compiled with ``torch.compile`` (one compilation serves all
  layers: they share their code), which fuses the normalisations, rotary embeddings, activations and
  residual additions around the matrix products; ``auto`` = on CUDA.
* ``kernels``: Liger's Triton kernels (the ``liger`` extra: ``pip install connote[liger]``) for the LLM's
  normalisations, rotary embeddings and gated MLP, and its fused linear cross-entropy for the caption loss
  (the LM head and the loss in one pass, no logits kept); ``auto`` = when liger-kernel is installed and
  the device is CUDA (its kernels are Triton's).

None of them changes the loss beyond floating-point summation order (``tests/vmc/test_train_speed.py``).
"""

from __future__ import annotations

from typing import Any

CHOICES = ("auto", "yes", "no")
#: Attention implementations of transformers that run packed examples without a dense mask.
PACKED_ATTENTION = ("flash_attention_2", "flash_attention_3", "flex_attention")


def attention_of(llm: Any) -> str:
    """The attention implementation transformers resolved for ``llm`` (``sdpa``, ``eager``, ``flash_attention_2``)."""
    config = getattr(llm, "config", None)
    return str(getattr(config, "_attn_implementation", None) or "eager")


def resolve_pack(setting: str, llm: Any) -> bool:
    if setting == "auto":
        return attention_of(llm) in PACKED_ATTENTION or attention_of(llm).endswith("flash-attn")
    return setting == "yes"


def resolve_compile(setting: str, device: str) -> bool:
    if setting == "auto":
        return device.startswith("cuda")
    return setting == "yes"


def liger_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("liger_kernel") is not None


def resolve_kernels(setting: str, device: str) -> str:
    """``liger`` or ``none``; ``liger`` asked for without the package is an error naming the extra."""
    if setting == "auto":
        return "liger" if device.startswith("cuda") and liger_available() else "none"
    if setting == "liger" and not liger_available():
        from connote.core.registry import require

        require("liger_kernel", "liger")  # raises, naming the extra
    return setting


def decoder_layers(llm: Any) -> list[Any]:
    """The LLM's repeated blocks: the modules whose class transformers names in ``_no_split_modules``."""
    base = llm.get_base_model() if hasattr(llm, "get_base_model") else llm
    names = set(getattr(base, "_no_split_modules", None) or ())
    return [m for m in base.modules() if type(m).__name__ in names]


def compile_layers(llm: Any) -> int:
    """``torch.compile`` each decoder layer in place (``nn.Module.compile``); returns how many."""
    layers = decoder_layers(llm)
    for layer in layers:
        layer.compile()
    return len(layers)


def apply_liger(model: Any) -> None:
    """Liger's kernels into ``model.llm`` (by its model type) and its fused linear cross-entropy as the caption
    loss (``model.fused_loss``: the head's weight, the states and the targets -> the summed loss)."""
    from connote.core.registry import require

    liger = require("liger_kernel.transformers", "liger")
    base = model.llm.get_base_model() if hasattr(model.llm, "get_base_model") else model.llm
    # the loss is connote's (caption tokens only), so the model's own cross-entropy stays untouched
    liger._apply_liger_kernel_to_instance(model=base, cross_entropy=False, fused_linear_cross_entropy=False)
    loss = liger.LigerFusedLinearCrossEntropyLoss(reduction="sum")
    model.fused_loss = lambda weight, states, targets: loss(weight, states, targets)


def configure(model: Any, pack: str, compile_: str, kernels: str, device: str) -> dict[str, Any]:
    """Apply the settings to a built GIT-LLaVA before training; returns what was resolved (for the log and the
    run's config): ``{"pack": bool, "compiled_layers": int, "kernels": "liger" | "none"}``."""
    resolved_kernels = resolve_kernels(kernels, device)
    if resolved_kernels == "liger":
        apply_liger(model)
    compiled = compile_layers(model.llm) if resolve_compile(compile_, device) else 0
    return {"pack": resolve_pack(pack, model.llm), "compiled_layers": compiled, "kernels": resolved_kernels}
