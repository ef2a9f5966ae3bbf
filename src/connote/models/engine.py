"""The fast image-text matching engine shared by every tensor backend.

``TensorMatcher`` implements ``Matcher.match_probability`` once; a backend only says how to
preprocess images, encode them, tokenize captions and score (image state, text) pairs. The engine

* encodes each distinct image once and reuses its state for all of its captions,
* encodes each distinct caption's unimodal part once where the architecture has one (CLIP, FLAVA),
* scores pairs in length-bucketed batches (captions sorted by token count, padded per batch),
* runs under ``torch.inference_mode`` with bf16/fp16 autocast on GPU,
* sizes its work by memory: the images of a call are processed in sub-groups, and an image's state
  (for BLIP, its vision tokens and every layer's cross-attention keys and values: ~44 MB at
  ViT-B/16, 384 px, fp32) lives only while that image's pairs are scored. A sub-group holds about
  one scoring batch of pairs, and the sub-group's states, the encoder's activations and the
  scoring batch's transient tensors are all capped by a memory budget (``memory_budget``: by
  default a fraction of the memory available on the device when the model is loaded; a spec sets
  it with ``?memory_budget=2GB``).

Masked variants for MM-SHAP go through the same hooks (``pixel_values``, ``token_ids``,
``score_ids``), so explanations use the engine's batching too.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from PIL import Image

from connote.core.prefetch import prefetch
from connote.core.registry import require
from connote.models.indices import device_index, index_values, upload
from connote.models.memory import halve_on_oom, layer_bytes


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


#: Share of the device's available memory the engine may use for its own work when the spec
#: gives no ``memory_budget`` (the model's weights are loaded before it is read, so not included).
MEMORY_FRACTION = {"cpu": 0.25, "cuda": 0.5}
#: Pairs per scoring batch and images per encoder batch when the spec says ``auto``. On a CPU a
#: batch of 16 short captions already keeps the matrix units busy, and a small batch keeps few
#: image states alive; a GPU needs larger batches to fill its cores.
DEFAULT_BATCH = {"cpu": 16, "cuda": 64}
DEFAULT_IMAGE_BATCH = {"cpu": 8, "cuda": 32}
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
          "t": 1000**4, "tb": 1000**4, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(value: int | float | str | None) -> int | None:
    """A byte count from ``2GB``, ``512MiB``, ``1.5g`` or a plain number; None for ``auto``/empty."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
        return None
    if isinstance(value, (int, float)):
        n = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", value)
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"memory_budget {value!r} is not a size: expected e.g. 2GB, 512MiB, 1.5G or bytes")
        n = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if n <= 0:
        raise ValueError(f"memory_budget must be positive, got {value!r}")
    return int(n)


def available_memory(device: str) -> int:
    """Bytes the device can still give: free GPU memory, or the OS's available RAM."""
    if device.startswith("cuda"):
        torch = require("torch", "hf")
        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:  # psutil is optional: read the kernel's own estimate
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


#: ``preprocess`` values: ``device`` (batched on the model's device, :mod:`connote.models.pixels`), ``hf`` (the
#: model's own processor, image by image on the CPU), ``auto`` (the backend's :attr:`TensorMatcher.default_preprocess`).
PREPROCESS = ("auto", "device", "hf")


def _device_kind(device: str) -> str:
    return "cuda" if device.startswith("cuda") else "cpu"


def _auto_int(value: int | str | None, default: int, name: str) -> int:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
        return default
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number or auto, got {value!r}") from None
    if n < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return n


def _given(value: int | str | None) -> bool:
    return not (value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")))


class ImageStates(list):
    """Image states kept one tensor per image (each with a batch dim of 1), in the order rows name them.

    A masking game scores a call's rows against many masked images, a few rows per image; holding the
    states apart spares copying all of them into one tensor per call. ``index_states`` gathers a batch's rows
    into one tensor for a backend that scores aligned rows; a backend that reads each image's state once
    per batch (BLIP's grouped cross-attention) takes them as they are.
    """


def _device(states: Any) -> Any:
    while isinstance(states, (tuple, list)):
        states = states[0]
    return states.device


def state_nbytes(states: Any) -> int:
    """Bytes held by an image (or text) state: a tensor, or a tuple or list of them."""
    if isinstance(states, (tuple, list)):
        return sum(state_nbytes(s) for s in states)
    return int(states.numel() * states.element_size())


class TensorMatcher:
    """Base class of the torch backends; subclasses fill in the hooks below."""

    backend = "tensor"
    #: What ``preprocess=auto`` means for this backend: ``device`` where the device path gives the model's
    #: processor's pixels (BLIP, BLIP-2, FLAVA, CLIP: max |Δ| 5e-7), ``hf`` where it does not (ALBEF's PIL resize)
    default_preprocess = "device"
    #: The architecture has a unimodal text encoder whose output can be cached per caption.
    caches_text = False

    def __init__(self, *, device: str | None = None, dtype: str | None = None,
                 batch_size: int | str = "auto", image_batch_size: int | str = "auto",
                 preprocess_workers: int | str = 4, memory_budget: str | None = "auto",
                 preprocess: str = "auto") -> None:
        self.torch = require("torch", "hf")
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        kind = _device_kind(self.device)
        self.batch_size = _auto_int(batch_size, DEFAULT_BATCH[kind], "batch_size")
        self.image_batch_size = _auto_int(image_batch_size, DEFAULT_IMAGE_BATCH[kind], "image_batch_size")
        #: the spec named the batch sizes (``auto`` or absent: False); callers that size their own
        #: batches (the masking games) keep a size the user chose
        self.batch_sizes_given = (_given(batch_size), _given(image_batch_size))
        self.preprocess_workers = _auto_int(preprocess_workers, 4, "preprocess_workers")
        if preprocess not in PREPROCESS:
            raise ValueError(f"preprocess must be one of {', '.join(PREPROCESS)}, got {preprocess!r}")
        self.preprocess = self.default_preprocess if preprocess == "auto" else preprocess
        self._budget_option = parse_bytes(memory_budget)
        self._memory_budget: int | None = self._budget_option
        self._state_bytes: int | None = None
        self._pixel_bytes = 0
        #: batch sizes lowered after a batch ran out of memory (``image_batch``, ``score_batch``)
        self._limits: dict[str, int] = {}
        #: one line per batch that ran out of memory and was split (a run's results list them)
        self.memory_events: list[str] = []

    # ---- hooks -------------------------------------------------------------------------
    def pixel_values(self, images: Sequence[Any]) -> Any:
        """Preprocess images into a (n, 3, H, W) float tensor on the device: with ``preprocess=device`` in
        batches on the device (:mod:`connote.models.pixels`, the transform of :meth:`pixel_spec`), else by the
        model's own processor (:meth:`processor_pixels`)."""
        spec = self.pixel_spec() if self.preprocess == "device" else None
        if spec is None:
            return self.processor_pixels(images)
        from connote.models.pixels import pixel_batch

        return pixel_batch(images, spec, self.device, self.dtype, workers=self.preprocess_workers)

    def pixel_spec(self) -> Any:
        """The model's image transform as a :class:`connote.models.pixels.PixelSpec`; None: only the processor."""
        return None

    @property
    def takes_encoded_images(self) -> bool:
        """Whether a task should hand :meth:`match_probability` JPEGs as their encoded bytes
        (:func:`connote.media.images.load_image` with ``keep_jpeg``): on a GPU with the device path, which decodes
        a batch of them there in one call. On a CPU a task's threads decode the next chunk's photos while the model
        works on this one, which overlaps more than decoding each group of them inside the call (measured:
        ``benchmarks/input_pipeline.py``'s run sides); the device path still takes bytes from any caller."""
        return self.preprocess == "device" and self.pixel_spec() is not None and self.device.startswith("cuda")

    def processor_pixels(self, images: Sequence[Image.Image]) -> Any:
        """Pixels made by the model's own processor (``preprocess=hf``)."""
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

    def compact_state(self, state: Any) -> Any | None:
        """A smaller copy of one image state (batch dim 1) from which :meth:`expand_states` rebuilds it for
        less than the image encoder costs, or None (the default: the state has no smaller form)."""
        return None

    def expand_states(self, compact: Any) -> Any:
        """Image states rebuilt from a batch of :meth:`compact_state` copies."""
        raise NotImplementedError

    def score(self, image_states: Any, input_ids: Any, attention_mask: Any,
              text_states: Any | None) -> Any:
        """p(match) for aligned rows of image states and texts: a float tensor (n,)."""
        raise NotImplementedError

    def score_rows(self, image_states: Any, rows: Any, input_ids: Any, attention_mask: Any,
                   text_states: Any | None) -> Any:
        """p(match) for texts against ``image_states[rows]``; a backend may gather lazily to save memory."""
        return self.score(index_states(image_states, rows), input_ids, attention_mask, text_states)

    def score_text_rows(self, image_states: Any, image_rows: Any, text_states: Any, text_rows: Any,
                        input_ids: Any, attention_mask: Any) -> Any:
        """p(match) of ``image_states[image_rows]`` against captions ``text_rows`` of a batch of distinct encoded
        captions (``caches_text``); by default gathered per row (CLIP and FLAVA read each state in place)."""
        return self.score_rows(image_states, image_rows, input_ids.index_select(0, text_rows),
                               attention_mask.index_select(0, text_rows), index_states(text_states, text_rows))

    def encoder_bytes_per_image(self) -> int:
        """Peak transient bytes of the image encoder per image: its activations (an estimate from the vision
        config) and the copy its state is assembled from (:meth:`expand_states`'s parts)."""
        cfg = getattr(getattr(self, "model", None), "config", None)
        vision = getattr(cfg, "vision_config", None) or getattr(cfg, "image_config", None)
        if vision is None or not getattr(vision, "image_size", None) or not getattr(vision, "patch_size", None):
            return 5 * self.image_state_bytes()
        tokens = (int(vision.image_size) // int(vision.patch_size)) ** 2 + 1
        elem = self.torch.empty(0, dtype=self.dtype).element_size()
        return layer_bytes(vision, tokens, elem) + self.image_state_bytes()

    def score_bytes_per_pair(self) -> int:
        """Transient bytes per pair of a scoring batch: by default the gathered image state row."""
        return self.image_state_bytes()

    def describe(self) -> dict[str, Any]:
        d = {"backend": self.backend, "dtype": str(self.dtype).replace("torch.", "")}
        if self.preprocess != self.default_preprocess:  # the default is left out: runs made before it resume
            d["preprocess"] = self.preprocess
        return d

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

    # ---- memory ------------------------------------------------------------------------
    @property
    def memory_budget(self) -> int:
        """Bytes the engine may hold for its own work (states, activations); read once from the machine."""
        if self._memory_budget is None:
            kind = _device_kind(self.device)
            self._memory_budget = int(available_memory(self.device) * MEMORY_FRACTION[kind])
        return self._memory_budget

    def image_state_bytes(self) -> int:
        """Bytes of one image's state, measured once by encoding a blank image."""
        if self._state_bytes is None:
            torch = self.torch
            with torch.inference_mode(), self._autocast():  # the processor resizes it to the model's input
                pixels = self.pixel_values([Image.new("RGB", (64, 64))])
                state = self.encode_images(pixels)
            self._pixel_bytes = state_nbytes(pixels)
            self._state_bytes = max(1, state_nbytes(state))
        return self._state_bytes

    def held_bytes_per_image(self) -> int:
        """Bytes a sub-group holds per image while it is scored: its state and its preprocessed pixels."""
        return self.image_state_bytes() + self._pixel_bytes

    def work_plan(self, states_share: float = 0.5, work_share: float = 0.5) -> dict[str, int]:
        """Images per sub-group, images per encoder batch and pairs per scoring batch under the budget,
        and the peak they add up to (``peak_bytes``, which stays within the budget's two shares).

        ``states_share`` of the budget is for what a sub-group holds (its states and preprocessed pixels),
        ``work_share`` for whichever runs at a time: the encoder's activations and the states it
        assembles, or a scoring batch's transient tensors (the gathered rows where a backend gathers
        them). Within that, a sub-group holds just enough images to fill one scoring batch (more would
        only hold memory, not add speed). A batch that ran out of memory lowered its size for good.
        """
        held = max(1, int(self.memory_budget * states_share))
        work = max(1, int(self.memory_budget * work_share))
        encoder, score = max(1, self.encoder_bytes_per_image()), max(1, self.score_bytes_per_pair())
        limit = self._limits.get
        plan = {"group_images": max(1, held // self.held_bytes_per_image()),
                "image_batch": max(1, min(self.image_batch_size, work // encoder, limit("image_batch", 1 << 30))),
                "score_batch": max(1, min(self.batch_size, work // score, limit("score_batch", 1 << 30)))}
        plan["peak_bytes"] = plan["group_images"] * self.held_bytes_per_image() + max(
            plan["image_batch"] * encoder, plan["score_batch"] * score)
        return plan

    def lower_batch(self, name: str) -> Any:
        """What :func:`~connote.models.memory.halve_on_oom` tells when a ``name`` batch (``image_batch`` or
        ``score_batch``) ran out of memory: the size is lowered for the rest of the run, and said once."""
        import sys

        def lower(half: int, rows: int) -> None:
            if half < self._limits.get(name, 1 << 30):
                self._limits[name] = half
                line = f"{self.backend}: a batch of {rows} ({name}) ran out of memory; halved, {name} is now {half}"
                self.memory_events.append(line)
                print(line, file=sys.stderr, flush=True)

        return lower

    # ---- engine ------------------------------------------------------------------------
    def _autocast(self) -> Any:
        torch = self.torch
        if self.device.startswith("cuda") and self.dtype != torch.float32:
            return torch.autocast(device_type="cuda", dtype=self.dtype)
        return contextlib.nullcontext()

    def _preprocess(self, images: Sequence[Image.Image], batch: int | None = None) -> list[Any]:
        batch = batch or self.image_batch_size
        chunks = [images[i:i + batch] for i in range(0, len(images), batch)]
        if len(chunks) <= 1 or self.preprocess_workers <= 1 or (self.preprocess == "device" and self.pixel_spec()):
            # the device path spreads a chunk's photos over preprocess_workers threads itself
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
        return upload(input_ids, self.device), upload(mask, self.device)

    def image_states(self, images: Sequence[Any], batch: int | None = None) -> Any:
        """Encode images in batches (``batch`` images each, default from the memory plan); one tensor (n, ...)."""
        batch = batch or self.work_plan()["image_batch"]
        return self.encode_pixels(self._preprocess(images, batch))

    def encode_batch(self, pixel_values: Any) -> list[Any]:
        """The states of a batch of preprocessed images, one ``(1, ...)`` view each; a batch that runs out
        of memory is split in halves (:meth:`lower_batch`)."""
        def run(rows: Sequence[int]) -> list[Any]:
            states = self.encode_images(pixel_values[rows[0]:rows[-1] + 1])
            return [states[j:j + 1] for j in range(len(rows))]

        return halve_on_oom(run, range(len(pixel_values)), self.lower_batch("image_batch"))

    def score_ids(self, image_states: Any, image_index: Sequence[int],
                  ids: Sequence[Sequence[int]], batch: int | None = None) -> list[float]:
        """Score token-id sequences against rows of ``image_states`` (bucketed, batched)."""
        return [float(v) for v in self._score_ids(image_states, image_index, ids, batch).cpu().tolist()]

    def _score_ids(self, image_states: Any, image_index: Sequence[int],
                   ids: Sequence[Sequence[int]], batch: int | None = None) -> Any:
        """:meth:`score_ids` as a float32 tensor on the states' device: the scores stay there, so a caller
        reads them back once (a sync per scoring batch would stall the device between batches)."""
        torch = self.torch
        batch = batch or self.work_plan()["score_batch"]
        # length buckets, and within one the rows of an image side by side (fewer images per batch)
        order = sorted(range(len(ids)), key=lambda i: (len(ids[i]), image_index[i]))
        device = _device(image_states)
        out = torch.full((len(ids),), math.nan, dtype=torch.float32, device=device)

        def run(rows: Sequence[int]) -> list[Any]:  # writes its rows' scores into ``out`` (on the device)
            input_ids, mask = self.pad([ids[r] for r in rows])
            text_states = self.encode_texts(input_ids, mask) if self.caches_text else None
            idx = device_index([image_index[r] for r in rows], device)
            p = self.score_rows(image_states, idx, input_ids, mask, text_states)
            out.index_copy_(0, device_index(rows, device), p.float().to(device))
            return []

        with torch.inference_mode(), self._autocast():
            list(self._in_batches(order, batch, run))
        return out

    def _in_batches(self, rows: Sequence[Any], batch: int, run: Any) -> Iterator[Any]:
        """``run`` on slices of ``rows`` of at most ``batch`` (or as lowered), each through :func:`halve_on_oom`;
        their results in order, a slice run when the caller asks for its results."""
        lower = self.lower_batch("score_batch")
        start = 0
        while start < len(rows):
            part = rows[start:start + min(batch, self._limits.get("score_batch", batch))]
            yield from halve_on_oom(run, part, lower)
            start += len(part)

    def image_groups(self, pairs: Sequence[tuple[int, int]], plan: dict[str, int] | None = None) -> list[list[int]]:
        """Distinct images of ``pairs`` in first-use order, cut into sub-groups sized by the memory plan.

        A sub-group closes once its pairs fill a scoring batch or its states reach the budget's share.
        """
        plan = plan or self.work_plan()
        per_image: dict[int, int] = {}
        for i, _ in pairs:
            per_image[i] = per_image.get(i, 0) + 1
        groups: list[list[int]] = []
        current: list[int] = []
        n_pairs = 0
        for image, count in per_image.items():
            current.append(image)
            n_pairs += count
            if n_pairs >= plan["score_batch"] or len(current) >= plan["group_images"]:
                groups.append(current)
                current, n_pairs = [], 0
        if current:
            groups.append(current)
        return groups

    def match_probability(self, images: Sequence[Any], captions: Sequence[str],
                          pairs: Sequence[tuple[int, int]]) -> list[float]:
        """p(match) per ``(image_index, caption_index)`` pair; each image is encoded once.

        Images are encoded and scored one memory-sized sub-group at a time, and a sub-group's states
        are released before the next is encoded, so memory does not grow with the call's size. While a
        sub-group runs, a thread prepares the pixels of the next ones (decoding, and with
        ``preprocess=device`` the resize and normalisation launched on the device; at most
        :data:`PREFETCH_GROUPS` ahead), and the scores stay on the device until the call's end.
        """
        if not pairs:
            return []
        torch = self.torch
        all_ids = self.token_ids(list(captions))
        plan = self.work_plan()
        by_image: dict[int, list[int]] = {}
        for r, (i, _) in enumerate(pairs):
            by_image.setdefault(i, []).append(r)
        groups = self.image_groups(pairs, plan)
        scored: list[tuple[list[int], Any]] = []

        def prepare(group: list[int]) -> list[Any]:
            with torch.inference_mode():
                return self._preprocess([images[i] for i in group], plan["image_batch"])

        for group, pixels in prefetch(groups, prepare, PREFETCH_GROUPS):
            slot = {img: k for k, img in enumerate(group)}
            states = self.encode_pixels(pixels)
            del pixels
            rows = [r for img in group for r in by_image[img]]
            if self.caches_text:
                probs = self._score_cached_text(states, [slot[pairs[r][0]] for r in rows], all_ids,
                                                [pairs[r][1] for r in rows], plan["score_batch"])
            else:
                probs = self._score_ids(states, [slot[pairs[r][0]] for r in rows],
                                        [all_ids[pairs[r][1]] for r in rows], plan["score_batch"])
            del states
            scored.append((rows, probs))
        out = [math.nan] * len(pairs)
        values = torch.cat([p.to(scored[0][1].device) for _, p in scored]).cpu().tolist()  # one sync
        for r, v in zip((r for rows, _ in scored for r in rows), values):
            out[r] = float(v)
        return out

    def encode_pixels(self, pixel_batches: Any) -> Any:
        """Image states of prepared pixel batches (from :meth:`_preprocess`): one state per image (views of the
        encoder's batches; copying them into one tensor would hold the sub-group's states twice)."""
        torch = self.torch
        states: list[Any] = []
        with torch.inference_mode(), self._autocast():
            for pv in pixel_batches:
                states.extend(self.encode_batch(pv))
                del pv
        return ImageStates(states) if len(states) > 1 else states[0]

    def _score_cached_text(self, states: Any, image_rows: list[int], all_ids: list[list[int]],
                           caption_index: list[int], batch: int | None = None) -> Any:
        """Encode each distinct caption once, then score its pairs against the images' states (each caption's
        and each image's state read once per batch, :meth:`score_text_rows`); the scores as a float32 tensor on
        the device, in the order of ``image_rows``. A batch of captions or of pairs that runs out of memory is
        halved (:meth:`lower_batch`)."""
        torch = self.torch
        batch = batch or self.work_plan()["score_batch"]
        used = sorted(set(caption_index), key=lambda c: len(all_ids[c]))
        device = _device(states)
        out = torch.full((len(caption_index),), math.nan, dtype=torch.float32, device=device)
        by_caption: dict[int, list[int]] = {}
        for r, c in enumerate(caption_index):
            by_caption.setdefault(c, []).append(r)

        def encode(caps: Sequence[int]) -> list[Any]:  # (captions, ids, mask, text states) per batch that fits
            input_ids, mask = self.pad([all_ids[c] for c in caps])
            return [(list(caps), input_ids, mask, self.encode_texts(input_ids, mask))]

        def run(input_ids: Any, mask: Any, text_states: Any, chunk: Sequence[tuple[int, int]]) -> list[Any]:
            t_idx = device_index([k for k, _ in chunk], mask.device)
            i_idx = device_index([image_rows[r] for _, r in chunk], mask.device)
            p = self.score_text_rows(states, i_idx, text_states, t_idx, input_ids, mask)
            out.index_copy_(0, device_index([r for _, r in chunk], device), p.float().to(device))
            return []

        with torch.inference_mode(), self._autocast():
            # one batch of captions encoded at a time (lazily), then its pairs scored
            for encoded, input_ids, mask, text_states in self._in_batches(used, batch, encode):
                rows = [(k, r) for k, c in enumerate(encoded) for r in by_caption[c]]
                list(self._in_batches(rows, batch, functools.partial(run, input_ids, mask, text_states)))
        return out


#: Sub-groups whose pixels :meth:`TensorMatcher.match_probability` prepares ahead of the one running.
PREFETCH_GROUPS = 2


def index_states(states: Any, idx: Any) -> Any:
    """The rows ``idx`` of image (or text) states, as one tensor (or one tensor per component of a tuple)."""
    rows = index_values(idx)
    if rows and all(r == rows[0] for r in rows):  # one image's rows: a broadcast view, no copy
        one = states[rows[0]] if isinstance(states, ImageStates) else None
        if isinstance(states, tuple):
            return tuple(s[rows[0]:rows[0] + 1].expand(len(rows), *s.shape[1:]) for s in states)
        one = states[rows[0]:rows[0] + 1] if one is None else one
        return one.expand(len(rows), *one.shape[1:])
    if isinstance(states, ImageStates):
        torch = require("torch", "hf")
        return torch.cat([states[i] for i in rows])
    if isinstance(states, tuple):
        return tuple(s.index_select(0, idx) for s in states)
    return states.index_select(0, idx)
