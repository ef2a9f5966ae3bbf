"""The one fingerprint rule for what a backend reads: every local file or folder its spec names, by content,
and every hub id it names, by the commit the local cache holds.

A model spec names its inputs as the weights (``hf-vlm:./llava``, ``nearest:vmc.csv``) and as options
(``?videos=DIR``, ``?features=F.npz``, ``?llm=./lm``, ``?train=SIS.json&images=DIR``). Whatever of those is
an existing local path enters the model's ``describe()`` under ``reads``, a file by its sha256 and a folder by
the sha256 of every file reachable in it (through links; hidden files excepted), so editing any of them (a
``chat_template.jinja``, a training caption table, a training photo, the weights behind a linked ``llm/``)
changes the run fingerprint and the rows it made are recomputed.
:func:`connote.models.registry.load_model` applies it to every backend.

:func:`spec_sources` applies the same rule *without building the model*, for the lazy identity
(:mod:`connote.models.lazy`): the local paths as above, every hub id an option names (``?llm=org/lm``, and the
hub ids a constructor takes by default, such as ALBEF's ``tokenizer``) with the commit its cache holds, and what
a backend declares it reads beyond its spec (``identity_sources``: a GIT-LLaVA folder's captioner). After a
build, :meth:`Sources.uncovered` lists what the model's own description names that the sources did not cover;
anything listed means the model has no identity and is built on every run.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Options that name what a backend writes (an index cache), not what it reads: never part of the identity.
WRITTEN_OPTIONS = frozenset({"cache"})
#: What a hub repository id can look like (``name`` or ``org/name``): the values worth a look in the cache.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}(/[\w.-]{1,96})?$")


def _identity_and_real(path: str | Path) -> tuple[dict[str, Any], set[str]]:
    from connote.core.files import file_sha256
    from connote.models.hub_identity import folder_digests
    from connote.runs.store import canonical_json

    p = Path(path).expanduser()
    if p.is_dir():
        files, real = folder_digests(p)
        return {"path": str(p.resolve()), "n_files": len(files),
                "sha256": hashlib.sha256(canonical_json(files).encode()).hexdigest()}, real
    return {"path": str(p.resolve()), "sha256": file_sha256(p)}, {os.path.realpath(p)}


def path_identity(path: str | Path) -> dict[str, Any]:
    """A file: its resolved path and sha256. A folder: its resolved path, file count and one sha256 over
    the digests of all its (non-hidden) files, those behind links included."""
    return _identity_and_real(path)[0]


def _existing_path(value: str) -> Path | None:
    try:
        path = Path(value).expanduser()
        return path if path.exists() else None
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte: not a path
        return None


def named_paths(weights: str | None, options: dict[str, Any], *, local_weights: bool) -> dict[str, Path]:
    """Which of a spec's weights (when ``local_weights``: a local path, not a hub id or a service's model name)
    and option values name existing local files or folders (name -> path)."""
    found: dict[str, Path] = {}
    if weights and local_weights and Path(weights).expanduser().exists():
        found["weights"] = Path(weights).expanduser()
    for name, value in sorted(options.items()):
        if name in WRITTEN_OPTIONS or not isinstance(value, str) or not value.strip():
            continue
        path = _existing_path(value)
        if path is not None:
            found[name] = path
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


# ---- what a spec reads, found without building the model -------------------------------------------------

@dataclass
class Sources:
    """What building a spec reads: ``reads`` (name -> :func:`path_identity`), ``hubs`` (name -> hub id, revision
    and cached commit), ``real`` (the real paths of every folder and linked file hashed), and ``unknown``: why
    what a build would read cannot be known without building it (then there is no identity)."""

    reads: dict[str, Any] = field(default_factory=dict)
    hubs: dict[str, Any] = field(default_factory=dict)
    real: set[str] = field(default_factory=set)
    unknown: str | None = None

    def add_path(self, name: str, path: Path) -> None:
        ident, real = _identity_and_real(path)
        self.reads[name] = ident
        self.real |= real

    def covers_path(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real in self.real or os.path.dirname(real) in self.real

    def uncovered(self, description: Any) -> list[str]:
        """What ``description`` (a built model's ``describe()``) names as read that these sources do not cover:
        a hub id at another commit or without one, a local folder or file outside every path hashed here.
        Sources are named the one way :func:`connote.models.hub_identity.weights_identity` and :func:`path_identity`
        name them (``{"weights": ..., "commit": ...}``, ``{"weights": DIR, "files": ...}``, ``{"path": ...}``)."""
        commits = {(h["id"], h["commit"]) for h in self.hubs.values()}
        missing: list[str] = []

        def visit(node: Any) -> None:
            if isinstance(node, dict):
                weights, path = node.get("weights"), node.get("path")
                if isinstance(weights, str) and ("commit" in node or "files" in node or "revision" in node):
                    if _existing_path(weights) is not None and Path(weights).is_absolute():
                        if not self.covers_path(weights):
                            missing.append(f"local weights {weights}")
                    elif (weights, node.get("commit")) not in commits:
                        missing.append(f"hub id {weights} at commit {node.get('commit')}")
                if isinstance(path, str) and Path(path).is_absolute() and not self.covers_path(path):
                    missing.append(f"local path {path}")
                for value in node.values():
                    visit(value)
            elif isinstance(node, (list, tuple)):
                for value in node:
                    visit(value)

        visit(description)
        return missing


def _declared_sources(factory: Any, weights: str | None, options: dict[str, Any]) -> dict[str, str]:
    """What the backend declares it reads beyond its spec: ``identity_sources(weights, options)`` on its class
    (or its factory function), a mapping of names to local paths or hub ids."""
    owner = getattr(factory, "__self__", factory)
    hook = getattr(owner, "identity_sources", None) or getattr(factory, "identity_sources", None)
    return dict(hook(weights, options)) if callable(hook) else {}


def _is_commit(revision: Any) -> bool:
    return isinstance(revision, str) and len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)


def _add_hub(sources: Sources, name: str, repo_id: str, revision: str | None, *, required: bool) -> None:
    """Record ``repo_id``'s cached commit under ``name``. A value that is not in the cache is a hub id only when
    ``required`` (the weights); otherwise it is a plain option value (``decode=greedy``)."""
    from connote.models.hub import hub_offline
    from connote.models.hub_identity import hub_commit

    commit = hub_commit(repo_id, revision)
    if commit is None:
        if required:
            sources.unknown = f"{name}: hub id {repo_id} is not in the local cache"
        return
    if not (hub_offline() or _is_commit(revision)):  # online, a build may move to a newer commit
        sources.unknown = f"{name}: hub id {repo_id} may resolve to a newer commit online"
        return
    sources.hubs[name] = {"id": repo_id, "revision": revision, "commit": commit}


def spec_sources(backend: Any, weights: str | None, options: dict[str, Any], *, local_weights: bool,
                 defaults: dict[str, str] | None = None) -> Sources:
    """Everything building ``backend`` with ``weights`` and ``options`` reads, found without building it
    (module docstring): named local paths by content, named hub ids (options and the constructor's text
    ``defaults``, each with its ``NAME_revision`` option, the weights with ``revision``) by cached commit, declared
    extra sources."""
    sources = Sources()
    for name, path in named_paths(weights, options, local_weights=local_weights).items():
        sources.add_path(name, path)
    if weights and backend.weights == "hf" and not local_weights:
        _add_hub(sources, "weights", weights, options.get("revision"), required=True)
    factory = backend.factory()
    values = {**(defaults or {}), **{k: v for k, v in options.items() if isinstance(v, str)}}
    for name, value in sorted(values.items()):
        if (name in WRITTEN_OPTIONS or name in sources.reads or name == "revision" or name.endswith("_revision")
                or not _HUB_ID.match(value.strip())):
            continue
        _add_hub(sources, name, value.strip(), values.get(f"{name}_revision"), required=False)
    from connote.core.errors import ConnoteError

    try:
        declared = _declared_sources(factory, weights, options)
    except (ConnoteError, OSError, ValueError, KeyError, TypeError) as exc:  # the build will say what is wrong
        sources.unknown = f"what the backend reads beyond its spec: {type(exc).__name__}: {exc}"
        declared = {}
    for name, value in sorted(declared.items()):
        path = _existing_path(value)
        if path is not None:
            sources.add_path(f"declared:{name}", path)
        else:
            _add_hub(sources, f"declared:{name}", value, None, required=True)
    return sources
