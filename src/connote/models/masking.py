"""MM-SHAP masking games: one image-caption pair as a value function over joint masks.

Features are the caption's maskable tokens followed by the ``p x p`` image patches (row-major);
a mask row says which are kept. For tensor backends (BLIP, BLIP-2, FLAVA, CLIP):

* masked text tokens are replaced by the tokenizer's mask token (pad where it has none) while its
  special tokens ([CLS], [SEP], ...) stay — all read from the tokenizer, none hard-coded;
* masked patches are zeroed in the model's pixel space (the normalised ``pixel_values``), as the
  public MM-SHAP code does;
* every distinct image mask in a batch of rows is encoded once and its state reused for all rows
  with that image mask (permutation steps that only change text reuse the image side), and all
  pairs are scored through the engine's batched, length-bucketed path.

For chat VLMs asked Yes/No, features are the caption's words: masked words become the tokenizer's
unknown token, and masked patches are filled with the processor's mean colour (zero after its
normalisation), then p(match) is read as for evaluation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from connote.errors import InputError
from connote.explain.mmshap import mask_pixels, patch_grid, pixel_keep_mask


@dataclass
class MaskGame:
    """What an estimator needs for one pair, plus token strings and spans for the verb finder."""

    value_fn: Callable[[np.ndarray], np.ndarray]
    n_text: int
    n_patches: int
    tokens: list[str]
    spans: list[tuple[int, int] | None]
    calls: list[int] = field(default_factory=lambda: [0])


def tensor_game(matcher: Any, image: Image.Image, caption: str, *, grid: int | None = None) -> MaskGame:
    """Masking game for a ``TensorMatcher`` backend."""
    torch = matcher.torch
    enc = matcher.tokenizer(caption, add_special_tokens=True, truncation=True, max_length=matcher.max_length,
                            return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    special = matcher.special_token_ids()
    positions = [k for k, t in enumerate(ids) if t not in special]
    if not positions:
        raise ValueError(f"caption {caption!r} has no maskable tokens")
    offsets = enc.get("offset_mapping")
    tokens = matcher.tokenizer.convert_ids_to_tokens([ids[k] for k in positions])
    spans = [tuple(offsets[k]) if offsets is not None else None for k in positions]
    n_text = len(positions)
    p = patch_grid(n_text, grid)
    pixels = matcher.pixel_values([image])[0].float().cpu().numpy()  # (C, H, W) normalised
    mask_id = matcher.mask_token_id
    game = MaskGame(value_fn=lambda m: np.empty(0), n_text=n_text, n_patches=p * p, tokens=list(tokens),
                    spans=list(spans))

    def value_fn(masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        text_keep, patch_keep = masks[:, :n_text], masks[:, n_text:]
        uniq, inverse = np.unique(patch_keep, axis=0, return_inverse=True)
        inverse = np.asarray(inverse).reshape(-1)
        states = []
        with torch.inference_mode(), matcher._autocast():
            for s in range(0, len(uniq), matcher.image_batch_size):
                batch = mask_pixels(pixels, uniq[s:s + matcher.image_batch_size], p)
                pv = torch.from_numpy(batch).to(matcher.device)
                if matcher.dtype != torch.float32:
                    pv = pv.to(matcher.dtype)
                states.append(matcher.encode_images(pv))
        image_states = torch.cat(states) if len(states) > 1 else states[0]
        rows = []
        for keep in text_keep:
            row = list(ids)
            for k, kept in zip(positions, keep):
                if not kept:
                    row[k] = mask_id
            rows.append(row)
        game.calls[0] += len(masks)
        return np.asarray(matcher.score_ids(image_states, inverse.tolist(), rows), dtype=float)

    game.value_fn = value_fn
    return game


def vlm_game(matcher: Any, image: Image.Image, caption: str, *, grid: int | None = None) -> MaskGame:
    """Masking game for a yes/no chat VLM (words as text features, mean-colour patches)."""
    words, spans, start = [], [], 0
    for w in caption.split():
        at = caption.index(w, start)
        words.append(w)
        spans.append((at, at + len(w)))
        start = at + len(w)
    n_text = len(words)
    if not n_text:
        raise ValueError("empty caption")
    p = patch_grid(n_text, grid)
    ip = getattr(matcher.processor, "image_processor", None)
    mean = np.asarray(getattr(ip, "image_mean", None) or [0.5, 0.5, 0.5], dtype=np.float32)
    arr = np.asarray(image.convert("RGB"), dtype=np.float32)
    fill_rgb = (mean * 255.0).astype(np.float32)
    unk = matcher.processor.tokenizer.unk_token or matcher.processor.tokenizer.pad_token or "_"
    game = MaskGame(value_fn=lambda m: np.empty(0), n_text=n_text, n_patches=p * p, tokens=words, spans=spans)

    def value_fn(masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        h, w = arr.shape[:2]
        images, captions, pairs = [], [], []
        keep_pix = pixel_keep_mask(masks[:, n_text:], h, w, p)
        for r, m in enumerate(masks):
            img = np.where(keep_pix[r][:, :, None], arr, fill_rgb).astype(np.uint8)
            images.append(Image.fromarray(img))
            captions.append(" ".join(wd if keep else unk for wd, keep in zip(words, m[:n_text])))
            pairs.append((r, r))
        game.calls[0] += len(masks)
        return np.asarray(matcher.match_probability(images, captions, pairs), dtype=float)

    game.value_fn = value_fn
    return game


def game_builder(matcher: Any) -> Callable[..., MaskGame]:
    """The masking game for a backend; others are answered with the backends that can be explained."""
    from connote.models.engine import TensorMatcher
    from connote.models.hf_vlm import YesNoVlmMatcher

    if isinstance(matcher, TensorMatcher):
        return tensor_game
    if isinstance(matcher, YesNoVlmMatcher):
        return vlm_game
    backend = getattr(matcher, "backend", type(matcher).__name__)
    raise InputError(f"model backend {backend!r} cannot be explained: MM-SHAP masks the model's inputs, which "
                     f"hf-blip-itm, hf-blip2-itm, hf-flava-itm, hf-clip and hf-vlm-yesno allow")


def masking_game(matcher: Any, image: Image.Image, caption: str, *, grid: int | None = None) -> MaskGame:
    """The game for one pair of any supported backend (see :func:`game_builder`)."""
    return game_builder(matcher)(matcher, image, caption, grid=grid)


