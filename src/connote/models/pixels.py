"""Model-ready pixel tensors made in batches on the model's device (``preprocess=device``).

A :class:`PixelSpec` holds what a model's own image processor does to a photo — resize (size, resample,
antialias), centre crop, rescale, normalise — read from its config (:meth:`PixelSpec.from_processor`:
BLIP, BLIP-2, FLAVA, CLIP) or given (ALBEF's transform). :func:`pixel_batch` applies it with
``torchvision.transforms.v2.functional`` on the model's device:

* PIL images and uint8 tensors become uint8 ``(3, H, W)`` tensors on the CPU (no float copy there), go to
  the device from pinned memory with ``non_blocking=True`` when it is a GPU, and are resized there;
* JPEG bytes are decoded on the GPU (``torchvision.io.decode_jpeg(device=...)``, one batched call) when the
  model is on CUDA (a JPEG nvJPEG does not read, by its header or by its refusal, is decoded on the CPU instead);
  other encoded images (PNG, WebP, JPEG on a CPU) are decoded on CPU worker threads;
* on a GPU photos of the same size are resized together; after the resize (and crop) every photo has the
  model's size, so rescale and normalise run once on the stacked batch, fused into one subtract-divide in
  float32 (as transformers' torchvision processors do), and the result is cast to the model's dtype;
* on a CPU each photo is decoded, resized (torch's uint8 kernel, fed the decoder's interleaved layout) and
  normalised by one of a pool of threads straight into its row of the output, which is allocated on huge
  pages; no stacked copy is made.

The transformers processor stays available as ``preprocess=hf``; docs/performance.md gives the measured
differences between the two paths.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from connote.core.registry import require
from connote.models.indices import upload

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


def to_device(images: Sequence[Any], device: str, workers: int = 1, decode_jpegs: Any = None) -> list[Any]:
    """Each image as a uint8 ``(3, H, W)`` tensor on ``device``: JPEG bytes decoded there in one batched call
    when it is a GPU, everything else made on the CPU (``workers`` threads) and moved from pinned memory.

    ``decode_jpegs(tensors, device)``: the batched decoder (on CUDA, torchvision's nvJPEG ``decode_jpeg``; given,
    it is used on any device, which is how the tests drive this path on a CPU). Only JPEGs the GPU decoder reads
    go to it (:func:`gpu_decodable`); a batch it refuses is decoded again photo by photo, and a photo it refuses
    alone is decoded on the CPU (:func:`decode_each`), so that one unusual photo does not fail the batch."""
    require("torch", "hf")  # without it, one line saying which extra installs it
    cuda = str(device).startswith("cuda")
    out: list[Any] = [None] * len(images)
    if decode_jpegs is None and cuda:
        decode_jpegs = _nvjpeg
    if decode_jpegs is not None:
        jpeg = [k for k, im in enumerate(images) if gpu_decodable(im)]
        for k, t in zip(jpeg, decode_each([images[k] for k in jpeg], device, decode_jpegs)):
            out[k] = t  # None: left to the CPU decoder below
    rest = [k for k in range(len(images)) if out[k] is None]
    cpu = _map(to_uint8, [images[k] for k in rest], workers)
    for k, t in zip(rest, cpu):  # from pinned memory to a GPU; a tensor given on another device (GPU) moved
        out[k] = upload(t.contiguous() if cuda and t.device.type == "cpu" else t, device)
    return out


def _nvjpeg(tensors: list[Any], device: str) -> list[Any]:
    """torchvision's batched GPU decoder (nvJPEG): RGB uint8 ``(3, H, W)`` tensors on ``device``."""
    from torchvision.io import ImageReadMode, decode_jpeg

    return decode_jpeg(tensors, mode=ImageReadMode.RGB, device=device)


def decode_each(data: Sequence[Any], device: str, decode_jpegs: Any) -> list[Any]:
    """``decode_jpegs`` on the JPEG bytes ``data`` as one batch: a tensor per photo, or None for a photo the decoder
    refused. torchvision's GPU decoder raises for the whole batch when one photo fails (an unreadable header, a
    chroma subsampling or coding nvJPEG lacks: "This function does not return partial results"), so a refused
    batch is decoded again one photo at a time (nvJPEG picks its hardware or hybrid decoder per photo either way).
    Running out of device memory is not a refusal: it is raised."""
    torch = require("torch", "hf")
    if not data:
        return []
    tensors = [torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in data]
    try:
        return list(decode_jpegs(tensors, device))
    except torch.OutOfMemoryError:
        raise
    except RuntimeError as exc:
        if len(tensors) > 1:
            _refused(exc, "the batch is decoded again photo by photo")
        else:
            _refused(exc, "the photo is decoded on the CPU")
            return [None]
    out: list[Any] = []
    for t in tensors:
        try:
            out.append(decode_jpegs([t], device)[0])
        except torch.OutOfMemoryError:
            raise
        except RuntimeError as exc:
            _refused(exc, "the photo is decoded on the CPU")
            out.append(None)
    return out


def _refused(exc: BaseException, then: str) -> None:
    """One warning per kind of refusal (Python's warning filter shows each message once per place)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    warnings.warn(f"the GPU JPEG decoder refused a photo ({first}); {then}", RuntimeWarning, stacklevel=3)


#: Start-of-frame markers: the JPEG codings, and those nvJPEG decodes (Huffman baseline, extended, progressive).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_SOF_GPU = frozenset({0xC0, 0xC1, 0xC2})


def gpu_decodable(data: Any) -> bool:
    """Whether ``data`` is a JPEG the GPU decoder gives RGB for as the CPU decoder does: Huffman-coded (baseline,
    extended or progressive), 8 bits a sample, 1 or 3 components, read from its frame header. Others go to the CPU
    decoder: a CMYK or YCCK photo (4 components; nvJPEG converts them only when asked, which torchvision does
    not), arithmetic or lossless coding, 12-bit samples, or a header that cannot be read (whose error the CPU
    decoder then gives)."""
    if not _is_jpeg(data):
        return False
    view = memoryview(data).cast("B")
    pos, end = 2, len(view)
    while pos + 4 <= end:
        if view[pos] != 0xFF:
            return False
        marker = view[pos + 1]
        if marker == 0xFF:  # a fill byte before a marker
            pos += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD7:  # markers without a length
            pos += 2
            continue
        length = (view[pos + 2] << 8) | view[pos + 3]
        if marker in _SOF:
            if pos + 10 > end:
                return False
            precision, components = view[pos + 4], view[pos + 9]
            return marker in _SOF_GPU and precision == 8 and components in (1, 3)
        if marker in (0xD9, 0xDA) or length < 2:  # end of image, or scan data before any frame header
            return False
        pos += 2 + length
    return False


def pixel_batch(images: Sequence[Any], spec: PixelSpec, device: str, dtype: Any = None,
                workers: int = 1) -> Any:
    """Model-ready pixels ``(n, 3, H, W)`` on ``device`` (in ``dtype``, float32 when None) for ``images``
    (PIL images, uint8 tensors or encoded bytes), transformed by ``spec``.

    On a GPU photos of one size are resized as one stacked batch and the whole batch is normalised at once.
    On a CPU each photo is decoded, resized and normalised on its own by one of ``workers`` threads (a pool
    kept for the process; torch's kernels and the decoders release the GIL), straight into its row of the
    output: the decoder's height-width-channel layout goes to torch's uint8 resize as it is (its AVX2 kernel
    reads interleaved pixels; a channels-first copy first would double its time), and the float conversion
    and normalisation run on the row while it is in cache, so no stacked copy of the batch is made.
    """
    torch = require("torch", "hf")
    if str(device).startswith("cuda"):
        return _stacked(to_device(images, device, workers), spec, dtype)
    batch = _cpu_rows(images, spec, workers)
    if dtype is not None and dtype != torch.float32:
        batch = batch.to(dtype)
    return batch if str(batch.device) == str(device) else batch.to(device)


def _cpu_rows(images: Sequence[Any], spec: PixelSpec, workers: int) -> Any:
    """float32 ``(n, 3, H, W)`` on the CPU, each row made by one task (decode, resize, crop, normalise)."""
    import numpy as np

    torch = require("torch", "hf")
    shape = spec.crop or spec.size  # every photo's final size when the spec fixes it
    # numpy's allocator asks Linux for huge pages for large arrays (madvise): the rows' first writes then
    # fault 2 MB at a time, not 4 kB (with torch's allocator the faults took ~40% of a row's time)
    out = torch.from_numpy(np.empty((len(images), 3, *shape), dtype=np.float32)) if shape else None
    rows: list[Any] = [None] * len(images)
    inference = torch.is_inference_mode_enabled()  # thread-local: the workers take the caller's

    def one(k: int) -> None:
        with torch.inference_mode(inference):
            pixels = _resize_crop(to_uint8(images[k]).unsqueeze(0), spec)[0]
            row = out[k] if out is not None else torch.empty(pixels.shape, dtype=torch.float32)
            _normalise_(row.copy_(pixels), spec)
            rows[k] = row

    _map(one, range(len(images)), workers)
    return out if out is not None else torch.stack(rows)


def _map(fn: Any, items: Sequence[Any], workers: int) -> list[Any]:
    """``[fn(x) for x in items]`` on the process's preprocessing pool when ``workers`` > 1 (at most one thread a
    usable core: the work is all CPU, the photos' bytes being in memory, and more threads only switch between
    them)."""
    from connote.core.prefetch import map_threads

    return map_threads(fn, items, workers, name="connote-pixels")


def _resize_crop(stack: Any, spec: PixelSpec, float_passes: bool | None = None) -> Any:
    """uint8 ``(n, 3, h, w)`` photos of one size resized (and centre-cropped) as ``spec`` says.

    On the CPU torch resizes uint8 photos with its own uint8 kernel (what transformers' processors run). Other
    devices have none: torchvision resizes them in float32 in one pass, which differed from the processors by up
    to 10 of 255 levels at sharp edges (the uint8 kernel rounds and clips between its horizontal and its vertical
    pass; bicubic overshoots there). ``float_passes`` (default: on a device other than the CPU) resizes as that
    kernel does, in float32: the width, then rounded and clipped to 0..255, then the height (within 2 levels of the
    processors, tests/models/test_pixels.py)."""
    from torchvision.transforms.v2 import InterpolationMode
    from torchvision.transforms.v2 import functional as F

    torch = require("torch", "hf")
    target = spec.output_size(*stack.shape[-2:])
    if target != tuple(stack.shape[-2:]):
        mode = InterpolationMode[spec.resample]
        if float_passes is None:
            float_passes = stack.device.type != "cpu"
        if float_passes and spec.antialias and stack.dtype == torch.uint8 and mode not in (
                InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT):
            stack = _uint8_passes(F, stack, target, mode, spec.antialias)
        else:
            stack = F.resize(stack, list(target), interpolation=mode, antialias=spec.antialias)
    return _center_crop(F, stack, spec.crop) if spec.crop is not None else stack


def _uint8_passes(F: Any, stack: Any, target: tuple[int, int], mode: Any, antialias: bool) -> Any:
    """uint8 photos resized in float32 as torch's uint8 kernel does on a CPU: the horizontal pass, its result
    rounded and clipped to 0..255, then the vertical pass, rounded and clipped again."""
    torch = require("torch", "hf")
    height = stack.shape[-2]
    out = stack.to(torch.float32)
    for size in ((height, target[1]), target):  # the width first, then the height
        if tuple(out.shape[-2:]) != size:
            out = F.resize(out, list(size), interpolation=mode, antialias=antialias).clamp_(0, 255).round_()
    return out.to(torch.uint8)


def _normalise_(batch: Any, spec: PixelSpec) -> Any:
    """Rescale and normalise float pixels in place, fused as transformers' torchvision processors do:
    ``(x * scale - mean) / std == (x - mean / scale) / (std / scale)``."""
    if spec.mean is not None and spec.std is not None:
        mean, std = _mean_std(spec, str(batch.device))
        return batch.sub_(mean).div_(std)
    if spec.rescale is not None:
        return batch.mul_(spec.rescale)
    return batch


@functools.lru_cache(maxsize=32)
def _mean_std(spec: PixelSpec, device: str) -> tuple[Any, Any]:
    """``spec``'s mean and std over its rescale factor, ``(3, 1, 1)`` tensors on ``device`` (made once, not for
    every photo's row)."""
    torch = require("torch", "hf")
    scale = spec.rescale or 1.0
    with torch.inference_mode(False):  # usable by callers in and out of inference mode
        return tuple(torch.tensor(v, device=device).view(-1, 1, 1) / scale for v in (spec.mean, spec.std))


def _stacked(tensors: Sequence[Any], spec: PixelSpec, dtype: Any, float_passes: bool | None = None) -> Any:
    """Resize, crop and normalise uint8 ``(3, H, W)`` tensors (on one device), photos of a size together.
    ``float_passes``: as :func:`_resize_crop` (the GPU's resize, which a test runs on the CPU with True)."""
    torch = require("torch", "hf")
    by_shape: dict[tuple[int, int], list[int]] = {}
    for k, t in enumerate(tensors):
        by_shape.setdefault(tuple(t.shape[-2:]), []).append(k)
    resized: list[Any] = [None] * len(tensors)
    for ks in by_shape.values():
        for k, t in zip(ks, _resize_crop(torch.stack([tensors[k] for k in ks]), spec, float_passes)):
            resized[k] = t
    batch = _normalise_(torch.stack(resized).to(torch.float32), spec)
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
