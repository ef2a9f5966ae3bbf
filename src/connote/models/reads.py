"""The one fingerprint rule for what a backend reads: every local file or folder its spec names, by content.

A model spec names its inputs as the weights (``hf-vlm:./llava``, ``nearest:vmc.csv``) and as options
(``?videos=DIR``, ``?features=F.npz``, ``?llm=./lm``, ``?train=SIS.json&images=DIR``). Whatever of those is
an existing local path enters the model's ``describe()`` under ``reads``, a file by its sha256 and a folder by
the sha256 of every file in it (hidden files excepted), so editing any of them (a ``chat_template.jinja``, a
training caption table, a training photo) changes the run fingerprint and the rows it made are recomputed.
:func:`connote.models.registry.load_model` applies it to every backend.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

#: Options that name what a backend writes (an index cache), not what it reads: never part of the identity.
WRITTEN_OPTIONS = frozenset({"cache"})


def path_identity(path: str | Path) -> dict[str, Any]:
    """A file: its resolved path and sha256. A folder: its resolved path, file count and one sha256 over
    the digests of all its (non-hidden) files."""
    from connote.models.hf_itm import content_digests
    from connote.runs.store import canonical_json, file_sha256

    p = Path(path).expanduser()
    if p.is_dir():
        files = content_digests(p)
        return {"path": str(p.resolve()), "n_files": len(files),
                "sha256": hashlib.sha256(canonical_json(files).encode()).hexdigest()}
    return {"path": str(p.resolve()), "sha256": file_sha256(p)}


def named_paths(weights: str | None, options: dict[str, Any], *, local_weights: bool) -> dict[str, Path]:
    """Which of a spec's weights (when ``local_weights``: a local path, not a hub id or a service's model name)
    and option values name existing local files or folders (name -> path)."""
    found: dict[str, Path] = {}
    if weights and local_weights and Path(weights).expanduser().exists():
        found["weights"] = Path(weights).expanduser()
    for name, value in sorted(options.items()):
        if name in WRITTEN_OPTIONS or not isinstance(value, str) or not value.strip():
            continue
        try:
            exists = Path(value).expanduser().exists()
        except (OSError, ValueError):  # a name too long for the file system, a NUL byte: not a path
            exists = False
        if exists:
            found[name] = Path(value).expanduser()
    return found


def spec_reads(weights: str | None, options: dict[str, Any], *, local_weights: bool) -> dict[str, Any]:
    """The ``reads`` entry of a model's description: each named local path's :func:`path_identity`."""
    return {name: path_identity(p) for name, p in named_paths(weights, options, local_weights=local_weights).items()}


def with_reads(model: Any, reads: dict[str, Any]) -> Any:
    """Make ``model.describe()`` carry ``reads`` (the instance's describe is wrapped once)."""
    if not reads or not callable(getattr(model, "describe", None)):
        return model
    inner = model.describe

    def describe() -> dict[str, Any]:
        return {**inner(), "reads": reads}

    try:
        model.describe = describe
    except AttributeError:  # a backend with __slots__ keeps its own description
        pass
    return model
