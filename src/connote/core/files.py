"""Files read safely and identified by content: regular files only (never a FIFO or device), bounded blocks,
sha256 and size/mtime stamps. The bottom of every "is this the same input?" question."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def file_stamp(path: str | Path) -> list[int]:
    """What must be unchanged for a cached digest of a file to be reused.

    Size, mtime and inode can all be kept by a copy (``cp`` over the file, then ``touch -r``), but the
    change time (``st_ctime_ns``) is set by the kernel on every write and cannot be set back, so a file
    whose bytes changed never matches its old stamp.
    """
    st = Path(path).stat()
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


_DIGESTS: dict[tuple[str, tuple[int, ...]], str] = {}


class NotRegularFileError(OSError):
    """A path that is a FIFO, a device (``/dev/zero``), a socket or a folder where a file's bytes are read."""


def open_regular(path: str | Path) -> Any:
    """The one bounded way to open an input file for reading: never blocks on a FIFO (opened non-blocking),
    refuses anything but a regular file (``NotRegularFileError``), and the returned binary file reads at most
    the size the file had when opened (:func:`read_blocks`)."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(f"{path}: not a regular file (a FIFO, a device or a folder)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_blocks(fh: Any, *, block: int = 1 << 22) -> Iterator[bytes]:
    """The bytes of a file from :func:`open_regular`, in blocks, at most its size when opened."""
    left = os.fstat(fh.fileno()).st_size
    while left > 0 and (data := fh.read(min(block, left))):
        left -= len(data)
        yield data


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes (remembered per process by a stamp that any change to the file alters).

    A FIFO or a device is a ``NotRegularFileError`` (an ``OSError``) at once, never a read that blocks or
    never ends."""
    p = Path(path)
    stamp = tuple(file_stamp(p))  # first: a missing file or a symlink loop is an OSError here
    key = (str(p.resolve()), stamp)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open_regular(p) as fh:
            for data in read_blocks(fh):
                h.update(data)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]
