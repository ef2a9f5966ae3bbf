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


def resolved(path: str | Path) -> str:
    """``path`` made absolute through its links, or, where a link loops (``Path.resolve`` raises ``RuntimeError:
    Symlink loop`` in Python 3.11) or cannot be followed, made absolute as written: reading it later fails as that
    file's own error, not the command's."""
    try:
        return str(Path(path).resolve())
    except (RuntimeError, OSError):
        return os.path.abspath(path)


def reachable_files(folder: str | Path) -> tuple[list[tuple[str, Path]], set[str]]:
    """Every regular file a reader of ``folder`` can reach, as ``(relative posix path, path)`` in sorted order,
    and the real paths of the folders listed.

    Links are followed, to files and to folders alike (``Path.rglob`` does not enter a linked folder, so a
    model folder whose ``llm/`` is a link would hide the weights behind it). Each real folder is listed once:
    a link back to a folder already listed (a loop, or a second link to it) is not entered again, so a
    link loop ends and a chain of links costs no more than the folders it reaches. Hidden names (``.git``,
    the digest sidecar) are left out, and so are FIFOs, devices, broken links and folders that cannot be read.
    """
    import stat

    root = Path(folder)
    files: list[tuple[str, Path]] = []
    listed: set[tuple[int, int]] = set()
    real_dirs: set[str] = set()
    try:
        st = root.stat()
    except OSError:
        return files, real_dirs
    listed.add((st.st_dev, st.st_ino))
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real_dirs.add(os.path.realpath(dirpath))
        keep = []
        for name in sorted(dirnames):
            if name.startswith("."):
                continue
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:  # a link loop of links only (ELOOP), or gone meanwhile
                continue
            if (st.st_dev, st.st_ino) not in listed:
                listed.add((st.st_dev, st.st_ino))
                keep.append(name)
        dirnames[:] = keep
        rel = Path(dirpath).relative_to(root)
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath, name)
            try:
                if not stat.S_ISREG(path.stat().st_mode):
                    continue
            except OSError:  # a broken link, a loop of links
                continue
            files.append(((rel / name).as_posix(), path))
    files.sort(key=lambda item: item[0])
    return files, real_dirs
