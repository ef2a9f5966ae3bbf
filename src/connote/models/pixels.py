"""Model-ready pixel tensors made in batches on the model's device (``preprocess=device``).

A :class:`PixelSpec` holds what a model's own image processor does to a photo — resize (size, resample,
antialias), centre crop, rescale, normalise — read from its config (:meth:`PixelSpec.from_processor`:
BLIP, BLIP-2, FLAVA, CLIP) or given (ALBEF's transform). :func:`pixel_batch` applies it with
``torchvision.transforms.v2.functional`` on the model's device:

* PIL images and uint8 tensors become uint8 ``(3, H, W)`` tensors on the CPU (no float copy there), go to
  the device from pinned memory with ``non_blocking=True`` when it is a GPU, and are resized there;
* JPEG bytes are decoded on the GPU (``torchvision.io.decode_jpeg(device=...)``, one batched call) when the
  model is on CUDA; other encoded images (PNG, WebP, JPEG on a CPU) are decoded on CPU worker threads;
* photos of the same size are resized together; after the resize (and crop) every photo has the model's
  size, so rescale and normalise run once on the stacked batch, fused into one multiply-add in float32
  (as transformers' torchvision processors do), and the result is cast to the model's dtype.

The transformers processor stays available as ``preprocess=hf``; docs/performance.md gives the measured
differences between the two paths.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from connote.core.registry import require

#: PIL's resampling filters (``Image.Resampling`` values) -> torchvision interpolation names.
_PIL_RESAMPLE = {0: "NEAREST", 1: "LANCZOS", 2: "BILINEAR", 3: "BICUBIC", 4: "BOX", 5: "HAMMING"}
_JPEG_MAGIC = b"\xff\xd8\xff"
# torchvision 0.29 marks its decoders deprecated in favour of TorchCodec, which is not a dependency here
warnings.filterwarnings("ignore", message="The image decoding and encoding capabilities of TorchVision",
                        category=DeprecationWarning)


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(key)
    return getattr(obj, key, None)


@dataclass(frozen=True)
class PixelSpec:
    """One model's image transform. ``size``: ``(height, width)``, or None with ``shortest_edge`` (the short
    side resized to it, the long side in proportion, as transformers computes it); ``crop``: a centre crop
    ``(height, width)`` or None; ``rescale``: the factor uint8 values are multiplied by (1/255) or None;
    ``mean``/``std``: per-channel normalisation or None."""

    size: tuple[int, int] | None
    shortest_edge: int | None = None
    resample: str = "BICUBIC"
    antialias: bool = True
    crop: tuple[int, int] | None = None
    rescale: float | None = 1 / 255
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None

    @classmethod
    def from_processor(cls, processor: Any) -> PixelSpec:
        """The transform a transformers image processor applies (its ``size``, ``resample``, ``crop_size``,
        ``rescale_factor``, ``image_mean``/``image_std`` and their ``do_*`` switches)."""
        size = _get(processor, "size") if getattr(processor, "do_resize", True) else None
        shape: tuple[int, int] | None = None
        shortest = None
        if size is not None:
            if _get(size, "height") and _get(size, "width"):
                shape = (int(_get(size, "height")), int(_get(size, "width")))
            elif _get(size, "shortest_edge") and not _get(size, "longest_edge"):
                shortest = int(_get(size, "shortest_edge"))
            else:
                raise ValueError(f"{type(processor).__name__}: size {size!r} is not one preprocess=device follows; "
                                 "use preprocess=hf")
        resample = getattr(processor, "resample", 3)
        resample = _PIL_RESAMPLE.get(int(resample), "BICUBIC") if isinstance(resample, int) else \
            getattr(resample, "name", str(resample)).upper()
        crop = None
        if getattr(processor, "do_center_crop", False):
            c = _get(processor, "crop_size")
            crop = (int(_get(c, "height")), int(_get(c, "width")))
        rescale = float(processor.rescale_factor) if getattr(processor, "do_rescale", True) else None
        mean = std = None
        if getattr(processor, "do_normalize", True):
            mean = tuple(float(x) for x in processor.image_mean)
            std = tuple(float(x) for x in processor.image_std)
        return cls(size=shape, shortest_edge=shortest, resample=resample, crop=crop, rescale=rescale,
                   mean=mean, std=std)

    def output_size(self, height: int, width: int) -> tuple[int, int]:
        """(height, width) after the resize, for an input of ``height`` x ``width``."""
        if self.size is not None:
            return self.size
        if self.shortest_edge is None:
            return height, width
        short, long = (width, height) if width <= height else (height, width)
        new_long = int(self.shortest_edge * long / short)
        return (new_long, self.shortest_edge) if width <= height else (self.shortest_edge, new_long)


def _is_jpeg(data: Any) -> bool:
    return isinstance(data, (bytes, bytearray, memoryview)) and bytes(data[:3]) == _JPEG_MAGIC


def to_uint8(image: Any) -> Any:
    """A uint8 ``(3, H, W)`` CPU (or already-device) tensor from a PIL image, a uint8 tensor or encoded bytes."""
    torch = require("torch", "hf")
    if isinstance(image, torch.Tensor):
        if image.dtype != torch.uint8:
            raise ValueError(f"image tensors must be uint8 (3, H, W), got {image.dtype}")
        if image.dim() == 3 and image.shape[0] == 1:
            image = image.expand(3, -1, -1)
        return image
    if isinstance(image, (bytes, bytearray, memoryview)):
        from torchvision.io import ImageReadMode, decode_image

        return decode_image(torch.frombuffer(bytearray(image), dtype=torch.uint8), mode=ImageReadMode.RGB)
    import numpy as np

    array = np.asarray(image if image.mode == "RGB" else image.convert("RGB"))
    return torch.from_numpy(array.copy()).permute(2, 0, 1)


def to_device(images: Sequence[Any], device: str, workers: int = 1) -> list[Any]:
    """Each image as a uint8 ``(3, H, W)`` tensor on ``device``: JPEG bytes decoded there in one batched call
    when it is a GPU, everything else made on the CPU (``workers`` threads) and moved from pinned memory."""
    torch = require("torch", "hf")
    cuda = str(device).startswith("cuda")
    out: list[Any] = [None] * len(images)
    if cuda:
        jpeg = [k for k, im in enumerate(images) if _is_jpeg(im)]
        if jpeg:
            from torchvision.io import ImageReadMode, decode_jpeg

            data = [torch.frombuffer(bytearray(images[k]), dtype=torch.uint8) for k in jpeg]
            for k, t in zip(jpeg, decode_jpeg(data, mode=ImageReadMode.RGB, device=device)):
                out[k] = t
    rest = [k for k in range(len(images)) if out[k] is None]
    if workers > 1 and len(rest) > 1:
        with ThreadPoolExecutor(min(workers, len(rest))) as pool:
            cpu = list(pool.map(to_uint8, [images[k] for k in rest]))
    else:
        cpu = [to_uint8(images[k]) for k in rest]
    for k, t in zip(rest, cpu):
        if cuda and t.device.type == "cpu":
            t = t.contiguous().pin_memory().to(device, non_blocking=True)
        elif str(t.device) != str(device) and not cuda:
            t = t.to(device)
        out[k] = t
    return out


def pixel_batch(images: Sequence[Any], spec: PixelSpec, device: str, dtype: Any = None,
                workers: int = 1) -> Any:
    """Model-ready pixels ``(n, 3, H, W)`` on ``device`` (in ``dtype``, float32 when None) for ``images``
    (PIL images, uint8 tensors or encoded bytes), transformed by ``spec``.

    On a GPU photos of one size are resized as one stacked batch and the whole batch is normalised at once.
    On a CPU each photo goes through decode, resize (torch's uint8 kernels: a stacked batch is slower there)
    and normalisation on its own, on ``workers`` threads (torch's kernels release the GIL), so a photo's
    pixels are normalised while they are still in cache.
    """
    torch = require("torch", "hf")
    if str(device).startswith("cuda"):
        return _stacked(to_device(images, device, workers), spec, dtype)
    out_dtype = torch.float32 if dtype is None else dtype

    def one(image: Any) -> Any:
        return _stacked([to_uint8(image)], spec, out_dtype)[0]

    if workers > 1 and len(images) > 1:
        with ThreadPoolExecutor(min(workers, len(images))) as pool:
            rows = list(pool.map(one, images))
    else:
        rows = [one(im) for im in images]
    batch = torch.stack(rows)
    return batch if str(batch.device) == str(device) else batch.to(device)


def _stacked(tensors: Sequence[Any], spec: PixelSpec, dtype: Any) -> Any:
    """Resize, crop and normalise uint8 ``(3, H, W)`` tensors (on one device), photos of a size together."""
    torch = require("torch", "hf")
    from torchvision.transforms.v2 import InterpolationMode
    from torchvision.transforms.v2 import functional as F

    interpolation = InterpolationMode[spec.resample]
    by_shape: dict[tuple[int, int], list[int]] = {}
    for k, t in enumerate(tensors):
        by_shape.setdefault(tuple(t.shape[-2:]), []).append(k)
    resized: list[Any] = [None] * len(tensors)
    for (h, w), ks in by_shape.items():
        stack = torch.stack([tensors[k] for k in ks])
        target = spec.output_size(h, w)
        if target != (h, w):
            stack = F.resize(stack, list(target), interpolation=interpolation, antialias=spec.antialias)
        if spec.crop is not None:
            stack = _center_crop(F, stack, spec.crop)
        for k, t in zip(ks, stack):
            resized[k] = t
    batch = torch.stack(resized).to(torch.float32)
    scale = spec.rescale or 1.0
    if spec.mean is not None and spec.std is not None:
        # fused rescale and normalise: (x * scale - mean) / std == (x - mean / scale) / (std / scale)
        mean = torch.tensor(spec.mean, device=batch.device).view(1, -1, 1, 1) / scale
        std = torch.tensor(spec.std, device=batch.device).view(1, -1, 1, 1) / scale
        batch = batch.sub_(mean).div_(std)
    elif spec.rescale is not None:
        batch = batch.mul_(spec.rescale)
    return batch if dtype is None or dtype == torch.float32 else batch.to(dtype)


def _center_crop(F: Any, stack: Any, crop: tuple[int, int]) -> Any:
    """transformers' centre crop: pad with zeros where the crop is larger, then cut at int((H - h) / 2)."""
    height, width = stack.shape[-2:]
    ch, cw = crop
    if ch > height or cw > width:
        pad = [(cw - width) // 2 if cw > width else 0, (ch - height) // 2 if ch > height else 0,
               (cw - width + 1) // 2 if cw > width else 0, (ch - height + 1) // 2 if ch > height else 0]
        stack = F.pad(stack, pad, fill=0)
        height, width = stack.shape[-2:]
    return F.crop(stack, int((height - ch) / 2.0), int((width - cw) / 2.0), ch, cw)


def probe_photo() -> Any:
    """A small, non-square photo of seeded noise (67 x 45): what :func:`checked_spec` runs a processor on, so that
    padding to a square, an aspect-dependent size or a resample the spec does not follow shows in the pixels."""
    import numpy as np
    from PIL import Image

    return Image.fromarray((np.random.default_rng(35).random((45, 67, 3)) * 255).astype(np.uint8))


def checked_spec(image_processor: Any, tolerance: float = 1e-4) -> tuple[PixelSpec | None, str]:
    """``(spec, "")`` where :func:`pixel_batch` with ``spec`` gives ``image_processor``'s pixels, else ``(None, why)``.

    For processors whose configuration :meth:`PixelSpec.from_processor` reads but whose options it may not follow
    (a chat VLM's: LLaVA's ``do_pad``, LLaVA-NeXT's tiles, Qwen-VL's patches, Idefics' splits), the spec is run
    against the processor on :func:`probe_photo` at load: the processor must return ``pixel_values`` alone, one
    fixed-size ``(3, H, W)`` image per photo, equal within ``tolerance``."""
    try:
        spec = PixelSpec.from_processor(image_processor)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return None, f"its configuration is not one the device path reads ({exc})"
    if spec.size is None and spec.crop is None:
        return None, "its output size follows each photo's (no fixed size or crop)"
    photo = probe_photo()
    out = image_processor(images=[photo], return_tensors="pt")
    want = out.get("pixel_values")
    if set(out) != {"pixel_values"} or want is None or want.dim() != 4:
        shape = tuple(want.shape) if want is not None else None
        return None, f"it returns {', '.join(sorted(out))} (pixel_values {shape}), not one image per photo"
    got = pixel_batch([photo], spec, "cpu")
    if got.shape != want.shape:
        return None, f"its pixels are {tuple(want.shape)}, the device path's {tuple(got.shape)}"
    diff = float((got - want.float()).abs().max())
    if diff > tolerance:
        return None, f"its pixels differ from the device path's by up to {diff:.3g} (a pad or resize not followed)"
    return spec, ""
