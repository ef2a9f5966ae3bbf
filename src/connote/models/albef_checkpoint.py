"""ALBEF's released checkpoint files for the ``albef-itm`` backend: read without running code, renamed to the
release's module names, sized, and converted once where a weights-only load refuses them.

Files are read with ``torch.load(weights_only=True)`` (or safetensors); a file holding objects that
``weights_only`` refuses is converted once by :func:`convert_checkpoint` (``connote models convert albef``),
which keeps the tensors and says what it dropped, without running anything from the file. The pre-trained files
(``ALBEF.pth``, ``ALBEF_4M.pth``) hold their text encoder as ``text_encoder.bert.*`` (a masked-LM model), which
:func:`itm_state_dict` strips to ``text_encoder.*`` as ALBEF's fine-tuning scripts do; their 256 px position
embeddings are resized to the model's grid by :func:`interpolate_pos_embed`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.registry import require

#: ALBEF's input size (the fine-tunes' and MM-SHAP's resolution).
IMAGE_SIZE = 384
#: Prefixes of the checkpoint keys the ITM path reads.
_USED = ("visual_encoder.", "text_encoder.", "itm_head.")
#: ALBEF's xbert registers BERT's ``position_ids`` (arange(max positions)) as a persistent buffer, so every state
#: dict its scripts save carries it (``text_encoder.bert.embeddings.position_ids`` in the pre-trained files,
#: ``text_encoder.embeddings.position_ids`` in the fine-tunes); the module here computes the same positions.
_POSITION_IDS = "text_encoder.embeddings.position_ids"


@dataclass(frozen=True)
class AlbefShape:
    """The sizes of an ALBEF ITM model, read from a checkpoint's tensors (heads: width / 64 unless given)."""

    image_size: int
    patch_size: int
    vision_width: int
    vision_depth: int
    vision_heads: int
    mlp_hidden: int
    vocab_size: int
    max_positions: int
    type_vocab: int
    text_width: int
    text_layers: int
    text_heads: int
    intermediate: int
    fusion_layer: int


def _count(state: dict[str, Any], prefix: str) -> int:
    found = {int(k[len(prefix):].split(".", 1)[0]) for k in state if k.startswith(prefix)}
    return max(found) + 1 if found else 0


def infer_shape(state: dict[str, Any], *, image_size: int = IMAGE_SIZE, vision_heads: int | None = None,
                text_heads: int | None = None) -> AlbefShape:
    """The model's sizes from its (renamed) state dict."""
    width = int(state["visual_encoder.cls_token"].shape[-1])
    patch = int(state["visual_encoder.patch_embed.proj.weight"].shape[-1])
    text_width = int(state["text_encoder.embeddings.word_embeddings.weight"].shape[1])
    layers = _count(state, "text_encoder.encoder.layer.")
    fusion = [i for i in range(layers) if f"text_encoder.encoder.layer.{i}.crossattention.self.key.weight" in state]
    if not fusion:
        raise ValueError("no cross-attention (fusion) layers in the checkpoint's text encoder")
    return AlbefShape(
        image_size=int(image_size), patch_size=patch, vision_width=width,
        vision_depth=_count(state, "visual_encoder.blocks."), vision_heads=int(vision_heads or max(1, width // 64)),
        mlp_hidden=int(state["visual_encoder.blocks.0.mlp.fc1.weight"].shape[0]),
        vocab_size=int(state["text_encoder.embeddings.word_embeddings.weight"].shape[0]),
        max_positions=int(state["text_encoder.embeddings.position_embeddings.weight"].shape[0]),
        type_vocab=int(state["text_encoder.embeddings.token_type_embeddings.weight"].shape[0]),
        text_width=text_width, text_layers=layers, text_heads=int(text_heads or max(1, text_width // 64)),
        intermediate=int(state["text_encoder.encoder.layer.0.intermediate.dense.weight"].shape[0]),
        fusion_layer=min(fusion))


def torch_load(path: Path) -> Any:
    torch = require("torch", "hf")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path))
    try:
        return torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # an UnpicklingError naming the refused global
        if "weights_only" in str(exc) or "Unsupported global" in str(exc):
            first = str(exc).strip().splitlines()[0]
            raise InputError(f"{path}: holds objects that a weights-only load refuses ({first[:200]}); convert it "
                             f"once with: connote models convert albef {path}") from None
        raise


def itm_state_dict(obj: Any, source: str = "checkpoint") -> dict[str, Any]:
    """The ITM path's tensors of a loaded ALBEF/LAVIS file, renamed to this module's (= the release's) names.

    Accepts a bare state dict or one wrapped in ``{"model": ...}`` (how ALBEF's and LAVIS's scripts save
    them); ``text_encoder.bert.*`` becomes ``text_encoder.*``; momentum copies (``*_m.*``), projections,
    queues, the MLM head (``text_encoder.cls.*``) and any decoder are left out. The buffers those files carry on
    the ITM path (BERT's ``position_ids``) are checked against what ALBEF registers and then left out too.
    """
    torch = require("torch", "hf")
    state = obj.get("model", obj) if isinstance(obj, dict) else None
    if isinstance(state, dict) and "state_dict" in state and not any(k.startswith(_USED) for k in state):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise InputError(f"{source}: not an ALBEF checkpoint (expected a state dict, or one under 'model')")
    out: dict[str, Any] = {}
    for key, value in state.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor) or not key.startswith(_USED):
            continue
        if key.startswith("text_encoder.bert."):
            key = "text_encoder." + key[len("text_encoder.bert."):]
        elif key.startswith("text_encoder.cls."):
            continue
        out[key] = value
    missing = [k for k in ("visual_encoder.cls_token", "text_encoder.embeddings.word_embeddings.weight",
                           "itm_head.weight") if k not in out]
    if missing:
        raise InputError(f"{source}: not an ALBEF ITM checkpoint: no {', '.join(missing)} "
                         "(the VQA fine-tune, for one, has no ITM head)")
    positions = out.pop(_POSITION_IDS, None)
    if positions is not None and not torch.equal(positions.reshape(-1).long(), torch.arange(positions.numel())):
        # the release would embed these positions; the module here embeds 0..L-1, so it would not give its numbers
        raise InputError(f"{source}: {_POSITION_IDS} is not 0, 1, ..., {positions.numel() - 1} (the buffer ALBEF "
                         "registers); this backend embeds token i at position i")
    return out


def interpolate_pos_embed(pos_embed: Any, grid: int) -> Any:
    """Resize ViT position embeddings ``(1, 1 + g*g, D)`` to a ``grid x grid`` patch grid (bicubic, as ALBEF)."""
    torch = require("torch", "hf")
    tokens = pos_embed.shape[-2] - 1
    old = int(round(math.sqrt(tokens)))
    if old * old != tokens:
        raise ValueError(f"position embeddings of {tokens} patches are not a square grid")
    if old == grid:
        return pos_embed
    dim = pos_embed.shape[-1]
    extra, pos = pos_embed[:, :1], pos_embed[:, 1:]
    pos = pos.reshape(-1, old, old, dim).permute(0, 3, 1, 2).float()
    pos = torch.nn.functional.interpolate(pos, size=(grid, grid), mode="bicubic", align_corners=False)
    pos = pos.permute(0, 2, 3, 1).flatten(1, 2).to(pos_embed.dtype)
    return torch.cat([extra, pos], dim=1)


class Dropped:
    """Stands in for an object a checkpoint holds that is not a tensor: it records, and runs nothing."""

    qualname = "?"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> Dropped:
        return self


def convert_checkpoint(path: str | Path, out: str | Path | None = None) -> tuple[Path, dict[str, Any]]:
    """Rewrite an ALBEF/LAVIS checkpoint as a safetensors file of its ITM tensors; returns (file, report).

    The file is read with torch's weights-only unpickler; each global it refuses (found by
    ``torch.serialization.get_unsafe_globals_in_checkpoint``, which reads the pickle's opcodes and runs
    nothing) is allowed only as :class:`Dropped`, a stand-in that keeps nothing. The report lists those
    globals, the top-level entries left out (optimizer, scheduler, config, epoch, ...), and the tensors kept.
    """
    torch = require("torch", "hf")
    from safetensors.torch import save_file

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such checkpoint file")
    out = Path(out) if out else path.with_suffix(".safetensors")
    if out.resolve() == path.resolve():
        raise InputError(f"{out}: the output would overwrite the input")
    try:
        unsafe = list(torch.serialization.get_unsafe_globals_in_checkpoint(str(path)))
    except Exception as exc:  # not a torch zip file
        raise InputError(f"{path}: cannot read as a torch checkpoint ({type(exc).__name__}: {exc})") from None
    stubs = [(type(f"Dropped_{i}", (Dropped,), {"qualname": name}), name) for i, name in enumerate(unsafe)]
    with torch.serialization.safe_globals(stubs):
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    state = itm_state_dict(obj, str(path))
    dropped_entries = sorted(str(k) for k in obj if k != "model") if isinstance(obj, dict) and "model" in obj else []
    tensors = {k: v.detach().contiguous().clone() for k, v in state.items()}
    save_file(tensors, str(out), metadata={"source": path.name, "format": "connote-albef-itm-1"})
    report = {"input": str(path), "output": str(out), "kept_tensors": len(tensors),
              "kept_parameters": int(sum(v.numel() for v in tensors.values())),
              "dropped_entries": dropped_entries, "dropped_globals": unsafe}
    return out, report


def checkpoint_file(weights: str | None) -> Path:
    """A local checkpoint file, or a URL's file in torch's hub cache (``$TORCH_HOME/hub/checkpoints``)."""
    if not weights:
        raise InputError("albef-itm needs weights: a checkpoint file (e.g. albef-itm:mscoco.pth) or its URL")
    if weights.startswith(("http://", "https://")):
        torch = require("torch", "hf")
        name = weights.rstrip("/").rsplit("/", 1)[-1]
        cached = Path(torch.hub.get_dir()) / "checkpoints" / name
        if not cached.is_file():
            raise InputError(f"albef-itm: {weights} is not in torch's hub cache ({cached}); download it there "
                             f"(e.g. curl -L -o {cached} {weights}) or give the local file")
        return cached
    path = Path(weights).expanduser()
    if not path.is_file():
        raise InputError(f"model weights {weights!r} for albef-itm: no such local file")
    return path
