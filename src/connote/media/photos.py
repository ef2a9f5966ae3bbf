"""Finding image files (the one :func:`find_image`: a VIST photo id in a folder of ``<photo id>.<ext>`` files, an
image a probe suite's file names) and loading a VIST sequence's photos."""

from __future__ import annotations

import glob
import os
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from connote.core.errors import ItemError

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp")


def find_image(folders: str | Path | Sequence[str | Path], name: str, *, photo_id: bool = True,
               extensions: Sequence[str] = IMAGE_EXTENSIONS) -> Path:
    """The image file ``name`` stands for: in the first of ``folders`` (one folder, or several tried in order)
    that holds it, the name as it is or with one of ``extensions`` added (``<photo id>.jpg``, ...).

    ``photo_id`` (a VIST photo id, the default): ``name`` must be a bare file name, never a path out of the
    folder, and the folders' subfolders are searched too. Otherwise (an image named in a probe suite's file)
    ``name`` may be a relative path. Raises ``ItemError`` naming the image and the folders.
    """
    if photo_id and (not name or name in (".", "..") or any(c in name for c in "/\\\x00")):
        raise ItemError(f"photo id {name!r} is not a file name (ids must not contain path separators)")
    dirs = [Path(folders)] if isinstance(folders, (str, os.PathLike)) else [Path(f) for f in folders]
    for d in dirs:
        for candidate in (name, *(f"{name}{ext}" for ext in extensions)):
            if (d / candidate).is_file():
                return d / candidate
    if photo_id:
        for d in dirs:
            hits = sorted(p for p in d.glob(f"**/{glob.escape(name)}.*") if p.suffix.lower() in extensions)
            if hits:
                return hits[0]
    where = ", ".join(str(d) for d in dirs) or "no folder"
    raise ItemError(f"{'photo' if photo_id else 'image'} {name}: no image file in {where}")


def load_sequence_images(image_dir: str | Path, photo_ids: Sequence[str]) -> list[Image.Image]:
    """Load a sequence's photos; the first missing/unreadable one raises ``ItemError`` naming it."""
    from connote.media.images import load_image

    return [load_image(find_image(image_dir, p)) for p in photo_ids]


