"""Image loading: EXIF orientation applied, RGB, local paths or (when allowed) http(s) URLs.

Bounds, so that one image can neither end a run nor exhaust memory or time (every failure is an
``ItemError``: the item records it and the run goes on):

* **Size on load.** An image whose longer side exceeds ``max_side`` (default
  :data:`DEFAULT_MAX_SIDE` = 2048 px, well above any model processor's input) is downscaled on load,
  keeping the aspect ratio. JPEGs are decoded at a reduced scale (``Image.draft``: 1/2, 1/4 or 1/8)
  so a huge JPEG is never decoded at full size; other formats are decoded, reduced by an integer
  box filter (``Image.reduce``), then resized with Lanczos to fit.
* **Pixel cap.** Images of more than ``max_pixels`` (default :data:`DEFAULT_MAX_PIXELS`, Pillow's own
  decompression-bomb error threshold, which also bounds larger settings) are refused before
  decoding; below it Pillow's ``DecompressionBombWarning`` is expected (the image is downscaled on
  load) and not shown.
* **URLs** (only with ``allow_network``): one overall deadline per image (``timeout`` seconds for
  connecting and reading together, so a server trickling a byte at a time is cut off) and at most
  ``max_bytes`` (default :data:`DEFAULT_MAX_BYTES` = 50 MB) read before decoding.
* **High bit depth.** 16-bit greyscale (modes ``I;16*`` and ``I``) is scaled to 8 bit by 255/65535
  (Pillow's own ``convert`` clips it, making most images saturated white); 32-bit float (``F``) is
  read as [0, 1] when its maximum is at most 1, else clipped to [0, 255].
* Missing files, directories, symlink loops and undecodable files are item errors.
"""

from __future__ import annotations

import http.client
import io
import math
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps

from connote.core.errors import ItemError

DEFAULT_MAX_SIDE = 2048
"""Longest side, in pixels, an image is downscaled to on load."""
DEFAULT_MAX_PIXELS = 2 * 89_478_485
"""Images with more pixels are refused (twice Pillow's ``MAX_IMAGE_PIXELS`` warning threshold)."""
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
"""Most bytes read from an image URL."""
_CHUNK = 64 * 1024
_REDUCIBLE = ("L", "RGB", "RGBA", "LA", "CMYK", "YCbCr")


def is_url(ref: str) -> bool:
    return ref.startswith(("http://", "https://"))


class _Deadline:
    """Shuts the download's socket when the deadline passes, so a server that trickles its status line or
    headers a byte at a time (each read within the socket timeout) cannot hold the run past the deadline."""

    def __init__(self, seconds: float) -> None:
        import threading

        self.expired = False
        self._socks: list[Any] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, seconds), self._expire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: Any) -> None:
        with self._lock:
            self._socks.append(sock)
            if self.expired:
                self._shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._socks:
                self._shut(sock)

    @staticmethod
    def _shut(sock: Any) -> None:
        import socket

        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def cancel(self) -> None:
        self._timer.cancel()

    def opener(self) -> urllib.request.OpenerDirector:
        """A urllib opener whose HTTP(S) connections report their sockets to this watchdog."""
        watchdog = self

        class _HTTP(http.client.HTTPConnection):
            def connect(self) -> None:
                super().connect()
                watchdog.watch(self.sock)

        class _HTTPS(http.client.HTTPSConnection):
            def connect(self) -> None:
                super().connect()
                watchdog.watch(self.sock)

        class _HTTPHandler(urllib.request.HTTPHandler):
            def http_open(self, req: urllib.request.Request) -> Any:
                return self.do_open(_HTTP, req)

        class _HTTPSHandler(urllib.request.HTTPSHandler):
            def https_open(self, req: urllib.request.Request) -> Any:
                return self.do_open(_HTTPS, req, context=self._context)

        return urllib.request.build_opener(_HTTPHandler, _HTTPSHandler)


def fetch_url(url: str, *, timeout: float = 30.0, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """GET ``url`` with one overall deadline (connect, headers and body) and a byte cap; failures are
    ``ItemError``."""
    deadline = time.monotonic() + timeout
    watchdog = _Deadline(timeout)

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or watchdog.expired:
            raise ItemError(f"{url}: image download took longer than the {timeout:g} s deadline")
        return remaining

    try:
        with watchdog.opener().open(url, timeout=left()) as resp:
            length = resp.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise ItemError(f"{url}: image is {int(length):,} bytes, over the {max_bytes:,}-byte limit")
            chunks: list[bytes] = []
            total = 0
            while True:
                if resp.fp is not None and resp.fp.raw is not None:  # each read waits at most until the deadline
                    sock = getattr(resp.fp.raw, "_sock", None)
                    if sock is not None:
                        sock.settimeout(left())
                chunk = resp.read1(_CHUNK)  # returns what has arrived, not a full buffer
                left()
                if not chunk:
                    break
                total += len(chunk)
                if total > max_bytes:
                    raise ItemError(f"{url}: image is over the {max_bytes:,}-byte limit")
                chunks.append(chunk)
        return b"".join(chunks)
    except ItemError:
        raise
    except urllib.error.HTTPError as exc:
        raise ItemError(f"{url}: cannot download image (HTTP {exc.code} {exc.reason})") from None
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:  # cut-off status line
        if watchdog.expired or time.monotonic() >= deadline or isinstance(exc, TimeoutError) \
                or "timed out" in str(exc):
            raise ItemError(f"{url}: image download took longer than the {timeout:g} s deadline") from None
        raise ItemError(f"{url}: cannot download image ({type(exc).__name__}: {exc})") from None
    finally:
        watchdog.cancel()


def _to_8bit(img: Image.Image) -> Image.Image:
    """High-bit-depth greyscale as 8-bit ``L`` scaled by value range, not clipped."""
    if img.mode.startswith("I;16") or img.mode == "I":
        arr = np.asarray(img, dtype=np.float64)
        return Image.fromarray(np.round(np.clip(arr, 0, 65535) * (255 / 65535)).astype(np.uint8), "L")
    if img.mode == "F":
        arr = np.nan_to_num(np.asarray(img, dtype=np.float64))
        scale = 255.0 if arr.size and arr.max() <= 1.0 else 1.0
        return Image.fromarray(np.round(np.clip(arr * scale, 0, 255)).astype(np.uint8), "L")
    return img


def _downscale(img: Image.Image, max_side: int) -> Image.Image:
    if max(img.size) <= max_side:
        return img
    factor = max(img.size) // max_side
    if factor >= 2:
        img = img.reduce(factor)  # box filter over factor x factor blocks: fast, no aliasing
    if max(img.size) > max_side:
        scale = max_side / max(img.size)
        size = (max(1, math.floor(img.size[0] * scale + 0.5)), max(1, math.floor(img.size[1] * scale + 0.5)))
        img = img.resize(size, Image.Resampling.LANCZOS)
    return img


#: ``Image.info`` key of a loaded image: the path or URL it was loaded from.
SOURCE_KEY = "connote_source"


def _decodes_alike(img: Image.Image, max_side: int | None) -> bool:
    """Whether a JPEG decoder given the file's bytes makes the pixels :func:`load_image` makes: an RGB or
    greyscale JPEG (not CMYK, whose conversion differs), upright (no EXIF rotation) and not downscaled."""
    return (img.format == "JPEG" and img.mode in ("RGB", "L")
            and (max_side is None or max(img.size) <= max_side)
            and img.getexif().get(0x0112, 1) == 1)


def _whole_jpeg(data: bytes) -> bool:
    """The bytes end at a JPEG's end-of-image marker (a truncated file, or one with data after the image,
    is left to Pillow, which reports or skips what a GPU decoder might not)."""
    return data.rstrip(b"\0")[-2:] == b"\xff\xd9"


def load_image(ref: str | Path, *, allow_network: bool = False, timeout: float = 30.0,
               max_side: int | None = DEFAULT_MAX_SIDE, max_pixels: int = DEFAULT_MAX_PIXELS,
               max_bytes: int = DEFAULT_MAX_BYTES, keep_jpeg: bool = False) -> Image.Image | bytes:
    """Load an image as RGB with EXIF orientation applied, its longer side at most ``max_side``.

    ``max_side=None`` keeps the full size. Raises ``ItemError`` naming the file (missing, a
    directory, a symlink loop, unreadable, too many pixels, a URL while network is off, a download
    over ``timeout`` seconds or ``max_bytes`` bytes); see the module docstring for the bounds.

    ``keep_jpeg=True`` (for a model that decodes JPEGs itself, on its GPU: :mod:`connote.models.pixels`)
    returns a JPEG's encoded bytes instead of decoding it, where a decoder makes the same pixels from them
    (:func:`_decodes_alike`: RGB or greyscale, upright, within ``max_side``, the file whole and at most
    ``max_bytes``); only the header is read to decide. Every other image is loaded as without it.
    """
    ref = str(ref)
    try:
        if is_url(ref):
            if not allow_network:
                raise ItemError(f"{ref}: image is a URL and network access is off (pass --allow-network)")
            source: io.BytesIO | str = io.BytesIO(fetch_url(ref, timeout=timeout, max_bytes=max_bytes))
        else:
            path = Path(ref)
            try:
                path.stat()
            except FileNotFoundError:
                raise ItemError(f"{ref}: image file not found") from None
            except OSError as exc:  # ELOOP (symlink loop), EACCES, ENAMETOOLONG, ...
                raise ItemError(f"{ref}: cannot read image ({exc.strerror or exc})") from None
            if path.is_dir():
                raise ItemError(f"{ref}: is a directory, not an image file")
            if not path.is_file():
                raise ItemError(f"{ref}: not a regular file")
            source = ref
        with warnings.catch_warnings():
            # the pixel count is checked below against max_pixels; the image is downscaled on load
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            try:
                img = Image.open(source)
            except Image.DecompressionBombError as exc:
                raise ItemError(f"{ref}: image has too many pixels to load ({exc})") from None
            width, height = img.size
            if width * height > max_pixels:
                raise ItemError(f"{ref}: image is {width}x{height} = {width * height:,} pixels, over the "
                                f"{max_pixels:,}-pixel limit")
            if keep_jpeg and _decodes_alike(img, max_side):
                if isinstance(source, io.BytesIO):
                    data = source.getvalue()
                elif Path(source).stat().st_size <= max_bytes:
                    data = Path(source).read_bytes()
                else:
                    data = b""
                if _whole_jpeg(data):
                    img.close()
                    return data
            if max_side is not None and img.format == "JPEG" and max(img.size) > max_side:
                # decode at 1/2, 1/4 or 1/8 scale, never below max_side on the longer side
                scale = max_side / max(img.size)
                img.draft("RGB" if img.mode in ("RGB", "YCbCr", "CMYK") else img.mode,
                          (math.ceil(width * scale), math.ceil(height * scale)))
            img.load()
        img = ImageOps.exif_transpose(img)
        img = _to_8bit(img)
        if img.mode not in _REDUCIBLE:  # palette and 1-bit images: resample colours, not indices
            img = img.convert("RGB")
        if max_side is not None:
            img = _downscale(img, max_side)
        img = img.convert("RGB")
        img.info[SOURCE_KEY] = ref  # backends that read precomputed features per image look them up by it
        return img
    except ItemError:
        raise
    except Exception as exc:  # PIL raises many types for bad files
        raise ItemError(f"{ref}: cannot read image ({type(exc).__name__}: {exc})") from exc


#: Threads that read and decode a batch's images at most (Pillow and the JPEG decoders release the GIL).
LOAD_WORKERS = 8


def load_workers() -> int:
    """Threads a task reads and decodes a batch's images on: one a usable core, at most :data:`LOAD_WORKERS`."""
    from connote.core.prefetch import usable_cores

    return max(1, min(LOAD_WORKERS, usable_cores()))


def load_each(load: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``load(item)`` for each item, in order, on :func:`load_workers` threads; an item whose load raised an
    ``ItemError`` has that error in its place (the item's to record; the others go on)."""
    from connote.core.prefetch import map_threads

    def one(item: Any) -> Any:
        try:
            return load(item)
        except ItemError as exc:
            return exc

    return map_threads(one, items, load_workers())


def load_distinct(refs: Sequence[Hashable],
                  load: Callable[[Any], Any]) -> tuple[list[Any], dict[Any, int], dict[Any, str]]:
    """Each distinct ref loaded once by ``load`` (:func:`load_each`), in first-use order:
    ``(images, slot of each ref loaded, error of each ref whose load raised an ItemError)``."""
    distinct = list(dict.fromkeys(refs))
    images: list[Any] = []
    slots: dict[Any, int] = {}
    errors: dict[Any, str] = {}
    for ref, image in zip(distinct, load_each(load, distinct)):
        if isinstance(image, ItemError):
            errors[ref] = str(image)
        else:
            slots[ref] = len(images)
            images.append(image)
    return images, slots, errors


def takes_encoded_images(model: Any) -> bool:
    """Whether a task should hand ``model`` JPEGs encoded (``load_image(keep_jpeg=True)``): the model says so
    (``takes_encoded_images``: the matching engine and chat VLMs on the device path on a GPU, which decode a
    batch there in one call); every other model gets decoded images."""
    return bool(getattr(model, "takes_encoded_images", False))


def image_identity(image: str) -> dict[str, Any]:
    """What identifies an image's content: the URL, or the local file's path, size and sha256."""
    if image.startswith(("http://", "https://")):
        return {"url": image}
    from connote.core.files import file_sha256

    try:
        return {"path": image, "sha256": file_sha256(image)}
    except OSError as exc:  # missing or unreadable: the item fails at load time and is never reused
        return {"path": image, "unreadable": type(exc).__name__}
