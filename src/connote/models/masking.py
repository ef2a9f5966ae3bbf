"""MM-SHAP masking games: one image-caption pair as a value function over joint masks.

A backend that can be explained declares it: its class has a ``masking_game(image, caption, *, grid,
compat)`` method returning a :class:`MaskGame` (the Hugging Face ITM/CLIP backends and the yes/no chat
VLMs do; :func:`require_masking` refuses any other backend before work starts). This module holds
what those methods share, so the model layer never imports the explain layer:

* the patch grid and pixel masking (:func:`patch_grid`, :func:`patch_boxes`, :func:`pixel_keep_mask`,
  :func:`mask_pixels`), in two layouts: ``tile`` (the grid tiles the image exactly) and ``mmshap``
  (the public MM-SHAP code's layout: square patches of ``H // p`` pixels, the remainder strip never
  masked);
* :func:`tensor_game` for tensor backends (BLIP, BLIP-2, FLAVA, CLIP) and :func:`vlm_game` for chat VLMs.

Two feature definitions (``compat``):

* ``"mmshap"`` (default), as the public MM-SHAP code computes it: the text features are *all* token
  ids including the special ones; ``p = ceil(sqrt(#ids))``; a masked id is replaced by ``0`` and the
  first id ([CLS]) is written back after masking (the backend may declare ``mmshap_keep_last = True`` to
  also restore the last id, as the public CLIP script does); masked patches are zeroed in the
  normalised pixel space with the ``mmshap`` layout.
* ``"connote"``: the text features are the maskable tokens only (special tokens excluded and never
  masked); a masked token becomes the tokenizer's mask token (pad where it has none); ``p =
  ceil(sqrt(#maskable tokens))``; patches tile the image exactly (``tile`` layout).

For tensor backends every distinct image mask is encoded once and its state is kept (within a bytes
budget: a quarter of the engine's memory budget, :data:`GAME_SHARES`) across the estimator's rounds;
identical joint masks are scored once; a call's rows are scored a sub-group of image masks at a time,
through the engine's batched, length-bucketed path, in batches of up to :data:`GAME_BATCH` rows and
:data:`GAME_IMAGE_BATCH` images within the game's memory plan (:func:`game_plan`) (a round's masks are
all known at once, so the engine's small throughput defaults would only add forward calls), unless the
spec names ``batch_size`` / ``image_batch_size``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from connote.core.errors import InputError
from connote.models.engine import ImageStates, state_nbytes

#: Feature definitions a masking game accepts; see the module docstring.
COMPAT_MODES = ("mmshap", "connote")
DEFAULT_COMPAT = "mmshap"
#: The id the public MM-SHAP code writes for a masked text token (``masked_X[~mask] = 0``).
MMSHAP_MASKED_ID = 0
#: Patch layouts of :func:`pixel_keep_mask`.
LAYOUTS = ("tile", "mmshap")

Span = tuple[int, int]
#: Most rows per scoring batch and images per encoder batch of a tensor masking game (``auto`` sizes).
GAME_BATCH = 256
GAME_IMAGE_BATCH = 64


# ----------------------------------------------------------------------------------- patch grid


def patch_grid(n_text: int, p: int | None = None) -> int:
    """Side ``p`` of the ``p x p`` patch grid: ``p`` when given, else ``ceil(sqrt(n_text))`` (>= 1).

    ``n_text`` is the number of text features of the chosen definition: all token ids including the
    special ones under ``compat="mmshap"`` (as the public MM-SHAP code counts them), the maskable
    tokens only under ``compat="connote"``.
    """
    if p is not None:
        if p < 1:
            raise ValueError(f"patch grid side must be >= 1, got {p}")
        return int(p)
    return max(1, math.ceil(math.sqrt(max(n_text, 1))))


def _edges(length: int, p: int) -> np.ndarray:
    return (np.arange(p + 1) * length) // p


def patch_boxes(height: int, width: int, p: int, layout: str = "tile") -> list[tuple[int, int, int, int]]:
    """Pixel boxes ``(left, top, right, bottom)`` (PIL order, right/bottom exclusive) of patches ``0..p*p-1``.

    ``tile``: patch ``r * p + c`` covers rows ``[top, bottom)`` and columns ``[left, right)``; the boxes
    tile the image exactly, the last row/column absorbing the remainder when ``p`` does not divide the
    size. ``mmshap``: the public code's layout, patch size ``H // p`` by ``W // p``, patch ``k`` at row
    ``k // cols`` and column ``k % cols`` with ``cols = W // (W // p)``; pixels past the last full patch
    are never masked. Boxes may be clipped (or empty) at the image border.
    """
    if layout == "tile":
        ys, xs = _edges(height, p), _edges(width, p)
        return [(int(xs[c]), int(ys[r]), int(xs[c + 1]), int(ys[r + 1])) for r in range(p) for c in range(p)]
    if layout != "mmshap":
        raise ValueError(f"unknown patch layout {layout!r}; valid: {', '.join(LAYOUTS)}")
    ph, pw = height // p, width // p
    if ph < 1 or pw < 1:
        raise ValueError(f"a {p}x{p} grid does not fit a {height}x{width} image")
    cols = width // pw
    boxes = []
    for k in range(p * p):
        r, c = k // cols, k % cols
        top, left = min(r * ph, height), min(c * pw, width)
        boxes.append((left, top, min(left + pw, width), min(top + ph, height)))
    return boxes


def _patch_index(height: int, width: int, p: int, layout: str) -> np.ndarray:
    """``(H, W)`` patch id of each pixel; ``p*p`` for pixels no patch covers."""
    if layout == "tile":
        row_of = np.searchsorted(_edges(height, p), np.arange(height), side="right") - 1
        col_of = np.searchsorted(_edges(width, p), np.arange(width), side="right") - 1
        return row_of[:, None] * p + col_of[None, :]
    index = np.full((height, width), p * p, dtype=np.int64)
    for k, (left, top, right, bottom) in enumerate(patch_boxes(height, width, p, layout)):
        index[top:bottom, left:right] = k  # later patches win where boxes overlap, as the public loop does
    return index


def pixel_keep_mask(patch_keep: np.ndarray, height: int, width: int, p: int, layout: str = "tile") -> np.ndarray:
    """Expand patch masks ``(m, p*p)`` (or ``(p*p,)``) to pixel masks ``(m, height, width)`` (True = kept)."""
    keep = np.asarray(patch_keep, dtype=bool)
    single = keep.ndim == 1
    keep = keep.reshape(-1, p * p)
    keep = np.concatenate([keep, np.ones((keep.shape[0], 1), dtype=bool)], axis=1)  # uncovered pixels stay
    out = keep[:, _patch_index(height, width, p, layout)]
    return out[0] if single else out


def mask_pixels(pixels: np.ndarray, patch_keep: np.ndarray, p: int, *, channels_first: bool = True,
                fill: float = 0.0, layout: str = "tile") -> np.ndarray:
    """Masked copies of one image: ``(C, H, W)`` (or ``(H, W, C)``) -> ``(m, C, H, W)`` (resp. ``(m, H, W, C)``).

    Masked patches are set to ``fill`` (MM-SHAP zeroes them in the model's pixel space, i.e. after
    normalisation when ``pixels`` are the processor's ``pixel_values``).
    """
    pixels = np.asarray(pixels)
    h, w = (pixels.shape[-2], pixels.shape[-1]) if channels_first else (pixels.shape[0], pixels.shape[1])
    keep = pixel_keep_mask(np.atleast_2d(patch_keep), h, w, p, layout)  # (m, H, W)
    keep = keep[:, None, :, :] if channels_first else keep[:, :, :, None]
    return np.where(keep, pixels[None], np.asarray(fill, dtype=pixels.dtype))


# ---------------------------------------------------------------------------------------- games


@dataclass
class MaskGame:
    """What an estimator needs for one pair, plus token strings and spans for the verb finder.

    ``calls`` counts mask rows answered; ``image_encodes`` counts masked images run through the vision
    tower (tensor backends), so a benchmark can see what the image-state reuse saves; ``image_rebuilds``
    counts states rebuilt from their compact copies instead (see :class:`_ImageStateCache`).
    """

    value_fn: Callable[[np.ndarray], np.ndarray]
    n_text: int
    n_patches: int
    tokens: list[str]
    spans: list[Span | None]
    compat: str = DEFAULT_COMPAT
    calls: list[int] = field(default_factory=lambda: [0])
    image_encodes: list[int] = field(default_factory=lambda: [0])
    image_rebuilds: list[int] = field(default_factory=lambda: [0])


def check_compat(compat: str | None) -> str:
    """``compat`` or the default, refused with the valid names when unknown."""
    compat = compat or DEFAULT_COMPAT
    if compat not in COMPAT_MODES:
        raise InputError(f"unknown --compat {compat!r}; valid: {', '.join(COMPAT_MODES)}")
    return compat


def _span(offset: Any) -> Span | None:
    if offset is None:
        return None
    start, end = int(offset[0]), int(offset[1])
    return None if end <= start else (start, end)


class _ImageStateCache:
    """Encoded masked images keyed by their patch mask, kept across value-function calls up to a byte budget.

    A state evicted from the budget leaves a compact copy behind when the backend has one
    (``matcher.compact_state``: BLIP keeps its vision tokens, 1/25 of a state with every cross-attention
    layer's keys and values), up to ``compact_bytes``; a later call rebuilds the state from it
    (``matcher.expand_states``) instead of running the vision tower again. At BLIP-base size a caption of
    three words visits ~180 image masks a pair, of which the full budget holds a few dozen.
    """

    def __init__(self, max_bytes: int, compact: Callable[[Any], Any] | None = None, compact_bytes: int = 0) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.states: OrderedDict[bytes, Any] = OrderedDict()
        self.compact = compact
        self.compact_bytes = compact_bytes
        self.compact_size = 0
        self.compacts: OrderedDict[bytes, Any] = OrderedDict()

    def get(self, key: bytes) -> Any:
        state = self.states.get(key)
        if state is not None:
            self.states.move_to_end(key)
        return state

    def get_compact(self, key: bytes) -> Any:
        return self.compacts.get(key)

    def put(self, key: bytes, state: Any) -> None:
        if state.untyped_storage().nbytes() > state_nbytes(state):  # a view would keep its encoder batch alive
            state = state.clone()
        nbytes = state_nbytes(state)
        if key in self.compacts:
            self.compact_size -= state_nbytes(self.compacts.pop(key))
        if nbytes > self.max_bytes:
            self._keep_compact(key, state)
            return
        self.states[key] = state
        self.size += nbytes
        while self.size > self.max_bytes:
            old_key, old = self.states.popitem(last=False)
            self.size -= state_nbytes(old)
            self._keep_compact(old_key, old)

    def _keep_compact(self, key: bytes, state: Any) -> None:
        if self.compact is None or self.compact_bytes <= 0:
            return
        small = self.compact(state)
        if small is None or state_nbytes(small) > self.compact_bytes:
            return
        self.compacts[key] = small
        self.compact_size += state_nbytes(small)
        while self.compact_size > self.compact_bytes:
            _, old = self.compacts.popitem(last=False)
            self.compact_size -= state_nbytes(old)


def _unique_rows(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows in order of first occurrence, and the index of each input row among them."""
    _, first, inverse = np.unique(masks, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return masks[first[order]], rank[inverse]


#: Shares of the engine's memory budget in a tensor masking game: encoded masked images kept between the
#: estimator's rounds, the compact copies of those it evicts, the states of the image masks being scored, and
#: whichever batch runs (the encoder's or a scoring batch). They add up to at most the budget.
GAME_SHARES = {"cache": 0.25, "compact": 0.125, "states": 0.3125, "work": 0.3125}


def game_batches(matcher: Any) -> tuple[int, int, int]:
    """``(rows per scoring batch, images per encoder batch, cache bytes)`` of a tensor masking game
    (:func:`game_plan`)."""
    plan = game_plan(matcher)
    return plan["score_batch"], plan["image_batch"], plan["cache_bytes"]


def game_plan(matcher: Any) -> dict[str, int]:
    """The memory plan of a tensor masking game: the engine's :meth:`work_plan` over the budget's
    :data:`GAME_SHARES` for the image masks being scored and the batch that runs, plus the cache of encoded
    masked images and of their compact copies; ``peak_bytes`` is what they add up to.

    Where the spec leaves a batch size to ``auto``, it is what the work share holds, up to
    :data:`GAME_BATCH` / :data:`GAME_IMAGE_BATCH` (at least the engine's default); a size the spec names is
    kept. A call's rows are scored a sub-group of image masks at a time (``group_images``), so a call with
    hundreds of distinct masks never holds all their states at once.
    """
    budget = matcher.memory_budget
    plan = matcher.work_plan(GAME_SHARES["states"], GAME_SHARES["work"])
    given = getattr(matcher, "batch_sizes_given", (True, True))
    limits = getattr(matcher, "_limits", {})
    work = max(1, int(budget * GAME_SHARES["work"]))
    encoder, score = max(1, matcher.encoder_bytes_per_image()), max(1, matcher.score_bytes_per_pair())
    if not given[0]:
        plan["score_batch"] = max(1, min(max(plan["score_batch"], min(GAME_BATCH, work // score)),
                                         limits.get("score_batch", GAME_BATCH)))
    if not given[1]:
        plan["image_batch"] = max(1, min(max(plan["image_batch"], min(GAME_IMAGE_BATCH, work // encoder)),
                                         limits.get("image_batch", GAME_IMAGE_BATCH)))
    plan["cache_bytes"] = int(budget * GAME_SHARES["cache"])
    plan["compact_bytes"] = int(budget * GAME_SHARES["compact"])
    held = plan["group_images"] * matcher.held_bytes_per_image()
    plan["peak_bytes"] = (plan["cache_bytes"] + plan["compact_bytes"] + held
                          + max(plan["image_batch"] * encoder, plan["score_batch"] * score))
    return plan


def tensor_game(matcher: Any, image: Image.Image, caption: str, *, grid: int | None = None,
                compat: str | None = None, cache_bytes: int | None = None,
                compact_bytes: int | None = None) -> MaskGame:
    """Masking game for a ``TensorMatcher`` backend (see the module docstring for ``compat``).

    ``cache_bytes`` bounds the encoded masked images kept between the estimator's rounds (default:
    :func:`game_batches`'s) and ``compact_bytes`` the compact copies of the states it evicts (default: half
    of ``cache_bytes``; :class:`_ImageStateCache`).
    """
    compat = check_compat(compat)
    torch = matcher.torch
    try:
        enc = matcher.tokenizer(caption, add_special_tokens=True, truncation=True, max_length=matcher.max_length,
                                return_offsets_mapping=True)
    except NotImplementedError:  # slow tokenizers have no offsets; the verb finder then searches the text
        enc = matcher.tokenizer(caption, add_special_tokens=True, truncation=True, max_length=matcher.max_length)
    ids = list(enc["input_ids"])
    offsets = enc.get("offset_mapping")
    special = matcher.special_token_ids()
    if compat == "mmshap":
        positions = list(range(len(ids)))
        mask_id = MMSHAP_MASKED_ID
        restore = [0] + ([len(ids) - 1] if getattr(matcher, "mmshap_keep_last", False) else [])
        layout = "mmshap"
    else:
        positions = [k for k, t in enumerate(ids) if t not in special]
        mask_id = matcher.mask_token_id
        restore = []
        layout = "tile"
    if not positions or all(ids[k] in special for k in positions):
        raise ValueError(f"caption {caption!r} has no maskable tokens")
    tokens = matcher.tokenizer.convert_ids_to_tokens([ids[k] for k in positions])
    spans = [None if ids[k] in special or offsets is None else _span(offsets[k]) for k in positions]
    n_text = len(positions)
    p = patch_grid(n_text, grid)
    pixels = matcher.pixel_values([image])[0].float().cpu().numpy()  # (C, H, W) normalised
    if layout == "mmshap":
        patch_boxes(pixels.shape[-2], pixels.shape[-1], p, layout)  # refuses a grid finer than the pixels
    base_ids = np.asarray(ids, dtype=np.int64)
    pos = np.asarray(positions, dtype=np.int64)
    plan = game_plan(matcher)
    budget = plan["cache_bytes"] if cache_bytes is None else cache_bytes
    cache = _ImageStateCache(budget, getattr(matcher, "compact_state", None),
                             budget // 2 if compact_bytes is None else compact_bytes)
    game = MaskGame(value_fn=lambda m: np.empty(0), n_text=n_text, n_patches=p * p, tokens=list(tokens),
                    spans=list(spans), compat=compat)

    def encode(patch_masks: np.ndarray) -> Any:
        """Image states for the distinct patch masks, from the cache or the vision tower (batched)."""
        keys = [m.tobytes() for m in patch_masks]
        found = [cache.get(k) for k in keys]
        small = [i for i, s in enumerate(found) if s is None and cache.get_compact(keys[i]) is not None]
        rebuilt = set(small)
        todo = [i for i, s in enumerate(found) if s is None and i not in rebuilt]

        def keep(chunk: list[int], states: list[Any]) -> None:
            for i, state in zip(chunk, states):
                found[i] = state
                cache.put(keys[i], state)

        image_batch = plan["image_batch"]
        with torch.inference_mode(), matcher._autocast():
            for s in range(0, len(small), image_batch):  # rebuilt from their compact copies
                chunk = small[s:s + image_batch]
                rebuilt_states = matcher.expand_states(torch.cat([cache.get_compact(keys[i]) for i in chunk]))
                keep(chunk, [rebuilt_states[j:j + 1] for j in range(len(chunk))])
                game.image_rebuilds[0] += len(chunk)
            for s in range(0, len(todo), image_batch):
                chunk = todo[s:s + image_batch]
                pv = torch.from_numpy(mask_pixels(pixels, patch_masks[chunk], p, layout=layout)).to(matcher.device)
                if matcher.dtype != torch.float32:
                    pv = pv.to(matcher.dtype)
                keep(chunk, matcher.encode_batch(pv))
                game.image_encodes[0] += len(chunk)
        return ImageStates(found)  # one tensor per mask, not copied into one

    def value_fn(masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        game.calls[0] += len(masks)
        rows, row_of = _unique_rows(masks)  # identical joint masks scored once
        text_keep, patch_keep = rows[:, :n_text], rows[:, n_text:]
        uniq, image_of = _unique_rows(patch_keep)
        batch = np.repeat(base_ids[None, :], len(rows), axis=0)
        batch[:, pos] = np.where(text_keep, base_ids[pos][None, :], mask_id)
        if restore:
            batch[:, restore] = base_ids[restore]
        values = np.full(len(rows), np.nan)
        by_image: dict[int, list[int]] = {}
        for r, i in enumerate(image_of.tolist()):
            by_image.setdefault(i, []).append(r)
        current = game_plan(matcher)  # a batch that ran out of memory lowered it
        # a sub-group of image masks at a time: their states, not the whole call's, are held while scored
        for group in matcher.image_groups([(int(i), 0) for i in image_of], current):
            image_states = encode(uniq[group])
            members = [r for k in group for r in by_image[k]]
            slot = {k: j for j, k in enumerate(group)}
            values[members] = matcher.score_ids(image_states, [slot[int(image_of[r])] for r in members],
                                                batch[members].tolist(), current["score_batch"])
            del image_states
        return values[row_of]

    game.value_fn = value_fn
    return game


def vlm_game(matcher: Any, image: Image.Image, caption: str, *, grid: int | None = None,
             compat: str | None = None) -> MaskGame:
    """Masking game for a yes/no chat VLM: words as text features, patches filled with the mean colour.

    The public MM-SHAP code has no chat-VLM path, so both ``compat`` modes mask the same way here
    (masked words become the tokenizer's unknown token; the ``mmshap`` patch layout under
    ``compat="mmshap"``).
    """
    ip = getattr(matcher.processor, "image_processor", None)
    mean = np.asarray(getattr(ip, "image_mean", None) or [0.5, 0.5, 0.5], dtype=np.float32)
    unk = matcher.processor.tokenizer.unk_token or matcher.processor.tokenizer.pad_token or "_"
    return word_game(matcher, image, caption, grid=grid, compat=compat, masked_word=unk, fill_rgb=mean * 255.0)


def word_game(matcher: Any, image: Image.Image, caption: str, *, grid: int | None = None, compat: str | None = None,
              masked_word: str, fill_rgb: Any) -> MaskGame:
    """Masking game over the caption's words and the image's patches, for any backend that takes images and
    text: a masked word becomes ``masked_word`` (empty: dropped), a masked patch is filled with ``fill_rgb``
    (the colour that is zero after the backend's normalisation), and p(match) is read as for evaluation."""
    compat = check_compat(compat)
    layout = "mmshap" if compat == "mmshap" else "tile"
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
    arr = np.asarray(image.convert("RGB"), dtype=np.float32)
    fill = np.asarray(fill_rgb, dtype=np.float32)
    game = MaskGame(value_fn=lambda m: np.empty(0), n_text=n_text, n_patches=p * p, tokens=words,
                    spans=list(spans), compat=compat)

    def value_fn(masks: np.ndarray) -> np.ndarray:
        masks = np.asarray(masks, dtype=bool)
        h, w = arr.shape[:2]
        images, captions, pairs = [], [], []
        keep_pix = pixel_keep_mask(masks[:, n_text:], h, w, p, layout)
        for r, m in enumerate(masks):
            img = np.where(keep_pix[r][:, :, None], arr, fill).astype(np.uint8)
            images.append(Image.fromarray(img))
            kept = (wd if keep else masked_word for wd, keep in zip(words, m[:n_text]))
            captions.append(" ".join(w for w in kept if w))
            pairs.append((r, r))
        game.calls[0] += len(masks)
        return np.asarray(matcher.match_probability(images, captions, pairs), dtype=float)

    game.value_fn = value_fn
    return game


def can_mask(matcher: Any) -> bool:
    """Whether the backend can be explained with MM-SHAP: its registration declares the ``mask`` capability (read
    from what :func:`~connote.models.registry.load_model` recorded on it) and it has its ``masking_game``; an
    object built outside the registry, by the method alone."""
    declared = getattr(getattr(matcher, "_connote_backend", None), "capabilities", None)
    if declared is not None and "mask" not in declared:
        return False
    return callable(getattr(matcher, "masking_game", None))


def require_masking(matcher: Any) -> None:
    """Refuse (``InputError``, exit 2) a backend that does not declare the ``mask`` capability."""
    if not can_mask(matcher):
        backend = getattr(matcher, "backend", type(matcher).__name__)
        raise InputError(f"model backend {backend!r} cannot be explained: MM-SHAP masks the model's inputs, which "
                         "only backends declaring the mask capability allow (`connote models --capability mask` "
                         "lists them)")


def masking_game(matcher: Any, image: Image.Image, caption: str, *, grid: int | None = None,
                 compat: str | None = None) -> MaskGame:
    """The game for one pair, built by the backend's own ``masking_game`` method."""
    require_masking(matcher)
    return matcher.masking_game(image, caption, grid=grid, compat=compat)
