"""The code a module runs: the modules it imports, transitively, found by reading their source with ``ast``.

A model's identity (:mod:`connote.models.lazy`) holds a digest of the code its backend runs, so that a backend is
built again, and describes itself again, after that code changed, and only then. :func:`module_closure` starts at the
backend's module and follows every ``import`` and ``from ... import`` statement (at the top of a module and inside its
functions alike, since connote imports lazily) into the modules of connote and of the starting module's own top-level
package; the packages above each module (their ``__init__``, which run first) and each module's package data (the
files beside it that are not Python, and the folders of data below it) come with it. Imports named by
text (``"module:attr"`` registrations) are not followed: the registration names the module it starts from.

>>> module_closure("connote.core.code")
('connote', 'connote.core', 'connote.core.code', 'connote.core.files')
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
from pathlib import Path

#: The packages whose modules the walk follows besides the starting module's own top-level package.
FOLLOWED = ("connote",)


@functools.cache
def _package_folder(top: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    locations = list(getattr(spec, "submodule_search_locations", None) or []) if spec is not None else []
    return Path(locations[0]).resolve() if locations else None


@functools.cache
def module_file(name: str) -> Path | None:
    """The source file of module ``name`` (a package's ``__init__.py``), or None (not found, not Python source).
    Found in its top-level package's folder without importing anything below that package."""
    top, _, rest = name.partition(".")
    folder = _package_folder(top)
    if folder is None:
        return None
    base = folder.joinpath(*rest.split(".")) if rest else folder
    for path in (base / "__init__.py", base.with_suffix(".py")) if rest else (base / "__init__.py",):
        if path.is_file():
            return path
    return None


def _imported_names(path: Path, name: str) -> set[str]:
    """Every module name an import statement of ``path`` (module ``name``) can refer to."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[:len(parts) - node.level + 1]) if node.level - 1 < len(parts) else ""
                base = f"{parent}.{base}" if base else parent
            if base:
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts))]


@functools.cache
def module_closure(start: str) -> tuple[str, ...]:
    """The modules ``start`` runs (module docstring), sorted: itself, what it imports within connote and its own
    top-level package, transitively, and the packages above each."""
    roots = {*FOLLOWED, start.split(".")[0]}
    seen: set[str] = set()
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen or name.split(".")[0] not in roots:
            continue
        path = module_file(name)
        if path is None:
            continue  # a name that is an attribute (``from pkg import function``), or not Python source
        seen.add(name)
        todo.extend(_parents(name))
        todo.extend(_imported_names(path, name))
    return tuple(sorted(seen))


def _data_folder(folder: Path) -> bool:
    """A folder of data: no Python module in it but an ``__init__.py`` (which makes it a resource package)."""
    return not any(f.suffix == ".py" and f.name != "__init__.py" for f in folder.rglob("*.py"))


def _package_data(folder: Path) -> list[Path]:
    """The files beside a module that are not Python, and every file in the folders of data below it (read by path
    or as package resources, ``importlib.resources.files("connote.media.assets")``, not by an import)."""
    found: list[Path] = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or p.name == "__pycache__":
            continue
        if p.is_file() and p.suffix != ".py":
            found.append(p)
        elif p.is_dir() and _data_folder(p):
            found.extend(f for f in sorted(p.rglob("*")) if f.is_file() and "__pycache__" not in f.parts
                         and not any(part.startswith(".") for part in f.relative_to(p).parts))
    return found


@functools.cache
def code_digest(start: str) -> str:
    """sha256 over the source of every module in :func:`module_closure` of ``start`` (by module name) and the package
    data beside them (by path below the package's folder)."""
    import json

    from connote.core.files import file_sha256

    listing: dict[str, str] = {}
    folders: dict[Path, str] = {}
    for name in module_closure(start):
        path = module_file(name)
        assert path is not None
        listing[name] = file_sha256(path)
        folders.setdefault(path.parent, name if path.name == "__init__.py" else name.rpartition(".")[0])
    for folder, package in sorted(folders.items()):
        for data in _package_data(folder):
            listing[f"{package}/{data.relative_to(folder).as_posix()}"] = file_sha256(data)
    return hashlib.sha256(json.dumps(listing, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
