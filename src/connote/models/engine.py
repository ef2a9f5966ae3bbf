"""The fast image-text matching engine shared by every tensor backend.

``TensorMatcher`` implements ``Matcher.match_probability`` once; a backend only says how to
preprocess images, encode them, tokenize captions and score (image state, text) pairs. The engine

* encodes each distinct image once and reuses its state for all of its captions,
* encodes each distinct caption's unimodal part once where the architecture has one (CLIP, FLAVA),
* scores pairs in length-bucketed batches (captions sorted by token count, padded per batch),
* runs under ``torch.inference_mode`` with bf16/fp16 autocast on GPU.

Masked variants for MM-SHAP go through the same hooks (``pixel_values``, ``token_ids``,
``score_ids``), so explanations use the engine's batching too.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PIL import Image

from connote.registry import require


def resolve_device(device: str | None) -> str:
    """``auto`` = CUDA when available; an explicit device that is not available is refused."""
    torch = require("torch", "hf")
    if device in (None, "", "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    device = str(device)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} was asked for, but torch sees no CUDA device here")
    if device.startswith("mps") and not torch.backends.mps.is_available():
        raise ValueError(f"device {device!r} was asked for, but MPS is not available here")
    return device


def resolve_dtype(dtype: str | None, device: str) -> Any:
    """``auto`` = bfloat16 on CUDA, float32 elsewhere."""
    torch = require("torch", "hf")
    if dtype in (None, "", "auto"):
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    table = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
             "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16}
    if dtype not in table:
        raise ValueError(f"unknown dtype {dtype!r}; valid: {', '.join(table)}")
    return table[dtype]


class TensorMatcher:
    """Base class of the torch backends; subclasses fill in the hooks below."""

    backend = "tensor"
    #: The architecture has a unimodal text encoder whose output can be cached per caption.
    caches_text = False

    def __init__(self, *, device: str | None = None, dtype: str | None = None,
                 batch_size: int | str = 64, image_batch_size: int | str = 32,
                 preprocess_workers: int | str = 4) -> None:
        self.torch = require("torch", "hf")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        self.batch_size = int(batch_size)
        self.image_batch_size = int(image_batch_size)
        self.preprocess_workers = int(preprocess_workers)

    # ---- hooks -------------------------------------------------------------------------
    def pixel_values(self, images: Sequence[Image.Image]) -> Any:
        """Preprocess images into a (n, 3, H, W) float tensor on the device."""
        raise NotImplementedError

    def encode_images(self, pixel_values: Any) -> Any:
        """Image state reused for every caption of the image: a tensor with batch dim first."""
        raise NotImplementedError

    def token_ids(self, captions: Sequence[str]) -> list[list[int]]:
        """Token ids per caption, special tokens included, no padding."""
        raise NotImplementedError

    def encode_texts(self, input_ids: Any, attention_mask: Any) -> Any:
        """Unimodal text state (only when ``caches_text``)."""
        raise NotImplementedError

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any,
              text_states: Any | None) -> Any:
        """p(match) for aligned rows of image states and texts: a float tensor (n,)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "dtype": str(self.dtype).replace("torch.", "")}

    # ---- special tokens, for masking -----------------------------------------------------
    @property
    def pad_token_id(self) -> int:
        return int(self.tokenizer.pad_token_id or 0)

    @property
    def mask_token_id(self) -> int:
        """The id masked text tokens are replaced by: the tokenizer's mask token, else its pad."""
        mask = getattr(self.tokenizer, "mask_token_id", None)
        return int(mask) if mask is not None else self.pad_token_id

    def special_token_ids(self) -> set[int]:
        return set(int(i) for i in getattr(self.tokenizer, "all_special_ids", []) or [])

    # ---- engine ------------------------------------------------------------------------
    def _autocast(self) -> Any:
        torch = self.torch
        if self.device.startswith("cuda") and self.dtype != torch.float32:
            return torch.autocast(device_type="cuda", dtype=self.dtype)
        return contextlib.nullcontext()

    def _preprocess(self, images: Sequence[Image.Image]) -> list[Any]:
        chunks = [images[i:i + self.image_batch_size] for i in range(0, len(images), self.image_batch_size)]
        if len(chunks) <= 1 or self.preprocess_workers <= 1:
            return [self.pixel_values(c) for c in chunks]
        with ThreadPoolExecutor(self.preprocess_workers) as pool:
            return list(pool.map(self.pixel_values, chunks))

    def pad(self, ids: Sequence[Sequence[int]]) -> tuple[Any, Any]:
        torch = self.torch
        width = max(len(x) for x in ids)
        input_ids = torch.full((len(ids), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, x in enumerate(ids):
            input_ids[row, : len(x)] = torch.as_tensor(list(x), dtype=torch.long)
            mask[row, : len(x)] = 1
        return input_ids.to(self.device), mask.to(self.device)

    def image_states(self, images: Sequence[Image.Image]) -> Any:
        """Encode images in batches; returns one tensor (n, ...)."""
        torch = self.torch
        states = []
        with torch.inference_mode(), self._autocast():
            for pv in self._preprocess(images):
                states.append(self.encode_images(pv))
        return torch.cat(states) if len(states) > 1 else states[0]

    def score_ids(self, image_states: Any, image_index: Sequence[int],
                  ids: Sequence[Sequence[int]]) -> list[float]:
        """Score token-id sequences against rows of ``image_states`` (bucketed, batched)."""
        torch = self.torch
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = [math.nan] * len(ids)
        with torch.inference_mode(), self._autocast():
            for start in range(0, len(order), self.batch_size):
                rows = order[start:start + self.batch_size]
                input_ids, mask = self.pad([ids[r] for r in rows])
                text_states = self.encode_texts(input_ids, mask) if self.caches_text else None
                idx = torch.as_tensor([image_index[r] for r in rows], device=image_states.device)
                p = self.score(image_states.index_select(0, idx), input_ids, mask, text_states)
                for r, v in zip(rows, p.float().cpu().tolist()):
                    out[r] = float(v)
        return out

    def match_probability(self, images: Sequence[Image.Image], captions: Sequence[str],
                          pairs: Sequence[tuple[int, int]]) -> list[float]:
        """p(match) per ``(image_index, caption_index)`` pair; each image is encoded once."""
        if not pairs:
            return []
        used_images = sorted({i for i, _ in pairs})
        slot = {img: k for k, img in enumerate(used_images)}
        states = self.image_states([images[i] for i in used_images])
        all_ids = self.token_ids(list(captions))
        if self.caches_text:
            return self._score_cached_text(states, [slot[i] for i, _ in pairs], all_ids,
                                           [c for _, c in pairs])
        return self.score_ids(states, [slot[i] for i, _ in pairs], [all_ids[c] for _, c in pairs])

    def _score_cached_text(self, states: Any, image_rows: list[int], all_ids: list[list[int]],
                           caption_index: list[int]) -> list[float]:
        """Encode each distinct caption once, then score pairs with gathered text states."""
        torch = self.torch
        used = sorted(set(caption_index), key=lambda c: len(all_ids[c]))
        out = [math.nan] * len(caption_index)
        by_caption: dict[int, list[int]] = {}
        for r, c in enumerate(caption_index):
            by_caption.setdefault(c, []).append(r)
        with torch.inference_mode(), self._autocast():
            for start in range(0, len(used), self.batch_size):
                caps = used[start:start + self.batch_size]
                input_ids, mask = self.pad([all_ids[c] for c in caps])
                text_states = self.encode_texts(input_ids, mask)
                rows = [(k, r) for k, c in enumerate(caps) for r in by_caption[c]]
                for s in range(0, len(rows), self.batch_size):
                    chunk = rows[s:s + self.batch_size]
                    t_idx = torch.as_tensor([k for k, _ in chunk], device=input_ids.device)
                    i_idx = torch.as_tensor([image_rows[r] for _, r in chunk], device=states.device)
                    p = self.score(states.index_select(0, i_idx), input_ids.index_select(0, t_idx),
                                   mask.index_select(0, t_idx), _index(text_states, t_idx))
                    for (_, r), v in zip(chunk, p.float().cpu().tolist()):
                        out[r] = float(v)
        return out


def _index(states: Any, idx: Any) -> Any:
    if isinstance(states, tuple):
        return tuple(s.index_select(0, idx) for s in states)
    return states.index_select(0, idx)
