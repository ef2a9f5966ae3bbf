"""The datasets catalogue's machinery: where to get a dataset, its licence, the files connote expects.

Each paper declares its entries and the checks of its formats in its own package (``connote/<paper>/datasets.py``,
named by its plugin module); this module holds the classes, the table they fill, and the copy checks.

Each :class:`Dataset` lists the files of a local copy in connote's layout (:class:`ExpectedFile`):
the relative path, whether a run needs it, which connote command reads it, the connote format it
must be in, and what can be verified about it. Sizes and checksums are recorded only where they were
computed from a real copy of the file (the VIST challenge files in ``../shared/data/vist``); where
none was at hand, counts that a copy can be checked against (rows, videos, images) are recorded
instead, each with where the number comes from. Nothing here is guessed: a licence that the source
does not state in what could be read is "see source", a release that could not be found says so.

:func:`check_copy` verifies a local copy (a folder, or one file of it): which files are present or
missing, their sizes and checksums where known, and their format, by parsing each with connote's own
readers (each paper's format checks call its own reader).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import ConnoteError, InputError
from connote.core.plugins import PluginTable

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp", ".tif", ".tiff")


@dataclass(frozen=True)
class ExpectedFile:
    """One file (or folder) of a local copy, in connote's layout."""

    path: str
    """Relative to the copy's root; a folder ends with ``/``."""
    what: str
    format: str
    """Connote format name, a key of :data:`FORMATS`."""
    read_by: str
    """The connote command(s) that read it."""
    required: bool = True
    size: str | None = None
    """Approximate size as a source states it (not checked)."""
    size_bytes: int | None = None
    """Exact size, measured on a real copy (checked)."""
    sha256: str | None = None
    """Measured on a real copy (checked)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Record counts a copy must have (checked), e.g. ``{"sequences": 1938}``."""
    counts_source: str | None = None
    """Where ``counts`` (and ``size``) come from."""

    @property
    def is_folder(self) -> bool:
        return self.path.endswith("/")


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class Dataset:
    """A dataset one of the papers uses, with where to get it and what connote expects of a copy."""

    name: str
    title: str
    paper: str
    used_for: str
    links: tuple[Link, ...]
    licence: str
    release: str
    """What was found of the public release (and what was not)."""
    files: tuple[ExpectedFile, ...]
    convert: str | None = None
    """The ``connote datasets convert`` command that produces connote's format, if any."""
    notes: tuple[str, ...] = ()

    def file(self, path: str) -> ExpectedFile:
        for f in self.files:
            if f.path == path or f.path.rstrip("/") == path.rstrip("/"):
                return f
        raise InputError(f"dataset {self.name!r} has no expected file {path!r}; expected: "
                         f"{', '.join(f.path for f in self.files)}")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _dataset_entries(mod: object, target: str) -> list[tuple[str, Dataset]]:
    from connote.core.registry import import_target

    return [(d.name, d) for d in import_target(target)]


def _format_entries(mod: object, target: str) -> list[tuple[str, tuple[str, Callable[[Path], FormatResult]]]]:
    from connote.core.registry import import_target

    return list(import_target(target).items())


#: The catalogue, name -> :class:`Dataset`: each paper's entries, declared by its plugin (``DATASETS``: a
#: lazy target of its tuple of entries, e.g. ``connote.vist.datasets:DATASETS``), read on first use.
DATASETS: PluginTable = PluginTable("dataset", "DATASETS", entries=_dataset_entries)
BY_NAME = DATASETS


def get(name: str) -> Dataset:
    """The catalog entry ``name``; an unknown name is an ``InputError`` listing the known ones."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise InputError(f"unknown dataset {name!r}; known: {', '.join(BY_NAME)}") from None


# --------------------------------------------------------------------------- format checks


@dataclass
class FormatResult:
    """What parsing a file with connote's reader found: record counts and problems (not fatal)."""

    counts: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    """Files the parsed file names that are not on disk: the copy is incomplete."""


def _image_folder(path: Path) -> FormatResult:
    n = sum(1 for p in path.rglob("*") if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file())
    return FormatResult({"images": n})


#: Format name -> (description, checker): the generic ones here, each paper's declared by its plugin
#: (``FORMATS``: a lazy target of its dict, e.g. ``connote.vist.datasets:FORMATS``).
FORMATS: PluginTable = PluginTable("dataset format", "FORMATS", {
    "image-folder": ("folder of image files (any depth)", _image_folder),
}, entries=_format_entries)


# --------------------------------------------------------------------------- checking a copy


@dataclass
class FileCheck:
    """The outcome for one expected file."""

    path: str
    required: bool
    status: str
    """``ok``, ``missing``, ``absent`` (optional and missing), ``differs`` or ``unreadable``."""
    found_at: str | None = None
    size_bytes: int | None = None
    sha256: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status in ("missing", "differs", "unreadable")


@dataclass
class CopyCheck:
    dataset: str
    root: str
    files: list[FileCheck]

    @property
    def complete(self) -> bool:
        return not any(f.failed for f in self.files)

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["complete"] = self.complete
        return out


def _locate(root: Path, expected: ExpectedFile) -> Path | None:
    """The expected file at its place under ``root``, else the first file of that name anywhere below."""
    direct = root / expected.path.rstrip("/")
    if expected.is_folder and direct.is_dir() or not expected.is_folder and direct.is_file():
        return direct
    name = Path(expected.path.rstrip("/")).name
    for hit in sorted(root.rglob(name)):
        if hit.is_dir() if expected.is_folder else hit.is_file():
            return hit
    return None


def check_file(expected: ExpectedFile, path: Path | None) -> FileCheck:
    """Check one expected file found at ``path`` (``None``: not found)."""
    from connote.core.files import file_sha256

    result = FileCheck(expected.path, expected.required, "ok")
    if path is None:
        result.status = "missing" if expected.required else "absent"
        return result
    result.found_at = str(path)
    if not expected.is_folder:
        try:
            result.size_bytes = path.stat().st_size
            if expected.sha256 is not None:
                result.sha256 = file_sha256(path)
        except OSError as exc:
            result.status = "unreadable"
            result.messages.append(f"cannot read: {exc}")
            return result
        if expected.size_bytes is not None and result.size_bytes != expected.size_bytes:
            result.status = "differs"
            result.messages.append(f"size {result.size_bytes} bytes, expected {expected.size_bytes}")
        if expected.sha256 is not None and result.sha256 != expected.sha256:
            result.status = "differs"
            result.messages.append(f"sha256 {result.sha256}, expected {expected.sha256}")
    _, reader = FORMATS[expected.format]
    try:
        found = reader(path)
    except ConnoteError as exc:  # the reader's own message names file, line and what was expected
        result.status = "unreadable"
        result.messages.append(f"not readable as {expected.format}: {exc}")
        return result
    except (OSError, ValueError, KeyError, TypeError) as exc:
        result.status = "unreadable"
        result.messages.append(f"not readable as {expected.format}: {type(exc).__name__}: {exc}")
        return result
    result.counts = found.counts
    result.problems = found.problems
    if found.missing:
        result.status = "differs"
        result.messages.append(f"{len(found.missing)} file(s) it names are not on disk, first: {found.missing[0]}")
    for key, want in expected.counts.items():
        got = found.counts.get(key)
        if got != want:
            result.status = "differs"
            result.messages.append(f"{got} {key}, expected {want}")
    return result


def check_copy(name: str, path: str | Path, *, entry: str | None = None) -> CopyCheck:
    """Verify a local copy of dataset ``name`` at ``path`` (a folder, or one of its files).

    A file is matched to the expected file of the same name (or to ``entry``); a folder is searched
    for every expected file, first at its place in connote's layout, then anywhere below it by name.
    """
    ds = get(name)
    root = Path(path)
    if not root.exists():
        raise InputError("no such file or folder", path=root)
    if root.is_file() or entry is not None:
        if entry is not None:
            expected = ds.file(entry)
        else:
            matches = [f for f in ds.files if not f.is_folder and Path(f.path).name == root.name]
            if not matches:
                files = ", ".join(f.path for f in ds.files if not f.is_folder)
                raise InputError(f"{root.name!r} is not one of {name}'s files ({files}); name the one it is "
                                 f"with --file", path=root)
            expected = matches[0]
        target = root if root.is_file() or expected.is_folder and root.is_dir() else _locate(root, expected)
        return CopyCheck(ds.name, str(root), [check_file(expected, target)])
    return CopyCheck(ds.name, str(root), [check_file(f, _locate(root, f)) for f in ds.files])
