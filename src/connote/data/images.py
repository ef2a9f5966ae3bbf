"""Image loading: EXIF orientation applied, RGB, local paths or (when allowed) http(s) URLs."""

from __future__ import annotations

import io
import urllib.request
from pathlib import Path

from PIL import Image, ImageOps

from connote.errors import ItemError


def is_url(ref: str) -> bool:
    return ref.startswith(("http://", "https://"))


def load_image(ref: str | Path, *, allow_network: bool = False, timeout: float = 30.0) -> Image.Image:
    """Load an image as RGB with EXIF orientation applied.

    Raises ``ItemError`` naming the file (missing, unreadable, or a URL while network is off).
    """
    ref = str(ref)
    try:
        if is_url(ref):
            if not allow_network:
                raise ItemError(f"{ref}: image is a URL and network access is off (pass --allow-network)")
            with urllib.request.urlopen(ref, timeout=timeout) as resp:  # noqa: S310 - user-allowed
                data = resp.read()
            img = Image.open(io.BytesIO(data))
        else:
            if not Path(ref).is_file():
                raise ItemError(f"{ref}: image file not found")
            img = Image.open(ref)
        img.load()
        img = ImageOps.exif_transpose(img)
        return img.convert("RGB")
    except ItemError:
        raise
    except Exception as exc:  # PIL raises many types for bad files
        raise ItemError(f"{ref}: cannot read image ({type(exc).__name__}: {exc})") from exc
