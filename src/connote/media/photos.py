"""Finding and loading a VIST sequence's photos in a folder of ``<photo id>.<ext>`` files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from connote.core.errors import ItemError

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp", "")


def find_image(image_dir: str | Path, photo_id: str) -> Path:
    """The file of a photo in ``image_dir`` (``<id>.<ext>``, any common extension, or a subfolder)."""
    if not photo_id or photo_id in (".", "..") or "/" in photo_id or "\\" in photo_id or "\x00" in photo_id:
        raise ItemError(f"photo id {photo_id!r} is not a file name (ids must not contain path separators)")
    d = Path(image_dir)
    for ext in IMAGE_EXTENSIONS:
        p = d / f"{photo_id}{ext}"
        if p.is_file():
            return p
    import glob

    hits = sorted(d.glob(f"**/{glob.escape(photo_id)}.*"))
    if hits:
        return hits[0]
    raise ItemError(f"photo {photo_id}: no image file in {d}")


def load_sequence_images(image_dir: str | Path, photo_ids: Sequence[str]) -> list[Image.Image]:
    """Load a sequence's photos; the first missing/unreadable one raises ``ItemError`` naming it."""
    from connote.media.images import load_image

    return [load_image(find_image(image_dir, p)) for p in photo_ids]


