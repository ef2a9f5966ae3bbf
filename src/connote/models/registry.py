"""The one model registry, model specs, and capabilities.

Every backend — image-text matchers, chat VLMs, GIT captioners, GIT-LLaVA, the OpenAI-compatible API,
the offline baselines — is registered here once, with the capabilities it declares:

``match``     ``match_probability(images, captions, pairs) -> list[float]`` (CV-Probes)
``mask``      ``masking_game(image, caption, ...)`` — its inputs can be masked for MM-SHAP
``generate``  ``generate(requests: list[GenerationRequest]) -> list[str]`` from one or many images or
              video frames (storytelling, metaphor captioning)

A task asks for the capability it needs; ``connote models`` lists every backend with its capabilities.
A model is named by a spec ``backend[:weights][?key=value&...]``; options are checked against the
backend's constructor before anything loads (unknown option, wrong type, missing local folder → exit 2).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from connote.core.errors import InputError
from connote.core.registry import Registry, import_target

CAPABILITIES = ("match", "mask", "generate")
#: What a backend works from: the images themselves, the frames of one video clip, or photo ids (precomputed
#: features looked up by ``GenerationRequest.image_ids``), or the prompt's text alone (a text-only LM; answers
#: read from a file). A task declares which of these it can give.
INPUTS = ("images", "video", "photo-ids", "text")
#: The frames a video generator wants unless it declares others: the VMC paper's two frames from each third.
DEFAULT_FRAMES = ("segments", 6, 6)


@dataclass(frozen=True)
class Backend:
    """A registered backend: its factory (lazy ``"module:attr"``) and everything it declares about itself.

    ``capabilities``: what it can do (:data:`CAPABILITIES`); ``inputs``: what it works from (:data:`INPUTS`);
    ``frames``: the video frames it wants, ``(strategy, k, per_clip)`` (an instance whose options or weights
    change them says so in its ``frame_spec``); ``weights``: ``hf`` (a hub id or a local folder), ``folder``
    (a local folder), ``file`` (a local file), ``name`` (a service's model name), ``none`` (no weights).
    ``defaults`` are options an alias sets. ``capabilities`` is None for a plugin's placeholder that leaves
    the declaration to its module's ``@register_model`` (the first lookup imports the module).
    """

    name: str
    target: Any
    capabilities: frozenset[str] | None
    help: str = ""
    weights: str = "hf"
    defaults: dict[str, str] = field(default_factory=dict)
    inputs: str = "images"
    frames: tuple[str, int, int] = DEFAULT_FRAMES
    #: one line of help per option this backend's constructor takes where :data:`OPTION_HELP`'s line for that
    #: name does not fit it (``connote models NAME``, docs/models.md)
    options: dict[str, str] = field(default_factory=dict)

    def factory(self) -> Callable[..., Any]:
        return import_target(self.target) if isinstance(self.target, str) else self.target

    @property
    def declared(self) -> bool:
        return self.capabilities is not None

    def declaration(self) -> tuple[Any, ...]:
        return (self.capabilities, self.weights, self.defaults, self.inputs, self.frames)


class ModelRegistry(Registry[Backend]):
    """The registry of backends: a plugin's placeholder without a declaration is resolved on lookup."""

    def get(self, name: str) -> Backend:
        backend = super().get(name)
        if not backend.declared:
            import_target(backend.target)  # its @register_model upgrades the placeholder
            backend = self._entries[name]
            if not backend.declared:
                raise ValueError(f"model {name!r}: {backend.target} declares no capabilities (register it with "
                                 "@register_model, or declare capabilities in the plugin)")
        return backend


def _load_plugin_models(registry: Registry[Any]) -> None:
    from connote.core.plugins import declared

    for mod, table in declared("MODELS"):
        for name, decl in table.items():
            decl = {"target": decl} if isinstance(decl, str) else dict(decl)
            target = decl.pop("target")
            try:
                register_model(name, target, **decl)
            except (ValueError, TypeError) as exc:
                from connote.core.plugins import PluginError

                raise PluginError(f"connote plugin {mod.__name__}: model {name!r}: {exc}") from None


MODELS: ModelRegistry = ModelRegistry("model", plugins=_load_plugin_models)


def _target_name(target: Any) -> str:
    if isinstance(target, str):
        return target
    return f"{getattr(target, '__module__', '')}:{getattr(target, '__qualname__', repr(target))}"


def _same_target(a: Any, b: Any) -> bool:
    """Whether two registrations name one backend: a placeholder ``"mod:Cls"`` (or ``"mod:Cls.from_spec"``) and
    the class its module decorates."""
    if a is b:
        return True
    x, y = sorted((_target_name(a), _target_name(b)), key=len)
    return x == y or y.startswith(x + ".")


def register_model(name: str, target: Any = None, *,
                   capabilities: set[str] | frozenset[str] | tuple[str, ...] | list[str] | None = None,
                   help: str = "", weights: str = "hf", defaults: dict[str, str] | None = None,
                   inputs: str = "images", frames: tuple[str, int, int] | list[Any] | None = None,
                   options: dict[str, str] | None = None) -> Any:
    """Register a backend with what it declares; usable as a decorator on a class (``target`` omitted).

    A plugin registers built-in backends lazily (``target`` a ``"module:attr"`` string); a decorator on the
    same target upgrades that placeholder (the object replaces the string; the declarations must agree, or
    the placeholder declared nothing). Another target under a registered name is an error. ``options`` gives
    one line of help for the constructor's options that :data:`OPTION_HELP` does not describe (or describes
    otherwise for this backend); their types and defaults are read from the constructor itself.

    >>> @register_model("demo-doc", capabilities={"match"}, weights="none")
    ... class Demo:
    ...     def __init__(self, weights=None, *, threshold: float = 0.5): ...
    >>> "match" in MODELS.get("demo-doc").capabilities
    True
    """
    if capabilities is not None:
        unknown = set(capabilities) - set(CAPABILITIES)
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}; valid: {', '.join(CAPABILITIES)}")
    if inputs not in INPUTS:
        raise ValueError(f"unknown inputs {inputs!r}; valid: {', '.join(INPUTS)}")
    spec = tuple(frames) if frames is not None else DEFAULT_FRAMES

    def _add(obj: Any) -> Any:
        doc = help or (inspect.getdoc(obj) or "").split("\n")[0] if not isinstance(obj, str) else help
        caps = frozenset(capabilities) if capabilities is not None else None
        new = Backend(name, obj, caps, doc, weights, dict(defaults or {}), inputs, spec,  # type: ignore[arg-type]
                      dict(options or {}))
        old = MODELS._entries.get(name)
        if old is not None:
            if not _same_target(old.target, obj):
                raise ValueError(f"model {name!r} is already registered (as {_target_name(old.target)})")
            if old.declared and new.declared and old.declaration() != new.declaration():
                raise ValueError(f"model {name!r} is declared twice, differently: {_target_name(old.target)} "
                                 f"{old.declaration()} vs {_target_name(obj)} {new.declaration()}")
            kept = new if new.declared else old
            real = obj if isinstance(old.target, str) else old.target
            new = Backend(name, real, kept.capabilities, help or old.help or doc, kept.weights, kept.defaults,
                          kept.inputs, kept.frames, {**old.options, **new.options})
        MODELS.put(name, new, help=new.help)
        return obj

    if target is None:
        return _add
    _add(target)
    return target


@dataclass(frozen=True)
class ModelSpec:
    """A parsed ``backend[:weights][?k=v&...]`` string."""

    backend: str
    weights: str | None = None
    options: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        s = self.backend + (f":{self.weights}" if self.weights else "")
        if self.options:
            s += "?" + "&".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return s


def parse_spec(spec: str) -> ModelSpec:
    """Parse a model spec.

    >>> parse_spec("hf-clip:openai/clip-vit-base-patch32?threshold=0.2")
    ModelSpec(backend='hf-clip', weights='openai/clip-vit-base-patch32', options={'threshold': '0.2'})
    """
    base, _, query = spec.partition("?")
    backend, _, weights = base.partition(":")
    return ModelSpec(backend=backend.strip(), weights=weights.strip() or None,
                     options=dict(parse_qsl(query, keep_blank_values=True)))


# ---- checking a spec before anything loads ------------------------------------------------------------


def _constructor_functions(factory: Callable[..., Any]) -> list[Callable[..., Any]]:
    """The functions whose keyword parameters are the backend's options: the constructor, and the
    constructors of base classes it forwards ``**options`` to."""
    owner = getattr(factory, "__self__", None)
    cls = factory if inspect.isclass(factory) else owner if inspect.isclass(owner) and \
        getattr(factory, "__name__", "") == "from_spec" else None
    if cls is None:
        return [factory]
    return [c.__dict__["__init__"] for c in cls.__mro__ if "__init__" in c.__dict__ and c is not object]


def _option_parameters(factory: Callable[..., Any]) -> tuple[dict[str, tuple[Any, Any]], bool]:
    """Option name -> (annotation, default) of the backend's constructor(s), and whether any ``**options``
    remain open; a parameter without a default has ``inspect.Parameter.empty``."""
    params: dict[str, tuple[Any, Any]] = {}
    for func in _constructor_functions(factory):
        try:
            hints = typing.get_type_hints(func)
        except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the raw ones
            hints = {}
        var_kw = False
        for i, (name, p) in enumerate(inspect.signature(func).parameters.items()):
            if name == "self" or (i <= 1 and p.kind is p.POSITIONAL_OR_KEYWORD):
                continue  # the weights argument
            if p.kind is p.VAR_KEYWORD:
                var_kw = True
            elif p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD):
                params.setdefault(name, (hints.get(name, p.annotation), p.default))
        if not var_kw:
            return params, False
    return params, True


def _option_types(factory: Callable[..., Any]) -> tuple[dict[str, Any], bool]:
    """Option name -> annotation of the backend's constructor(s), and whether any ``**options`` remain open."""
    params, var_kw = _option_parameters(factory)
    return {name: annotation for name, (annotation, _) in params.items()}, var_kw


def _convert(backend: str, name: str, value: str, annotation: Any) -> Any:
    """An option's text as the constructor's annotation takes it, converted and checked by the one typed-value
    checker (:func:`connote.core.checking.check_text`, pydantic; the same as task and metric options). A
    constructor annotates ``int | str``, ``float | str``, ``bool | str`` because a spec is text: the number or the
    yes/no word is what it takes (``auto`` too, where the annotation has ``str``); an option typed ``str`` alone
    keeps its text."""
    from connote.core.checking import Invalid, check_text

    members = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Union or \
        isinstance(annotation, types.UnionType) else (annotation,)
    kinds = tuple(k for k in (bool, int, float) if k in members)
    if not kinds or (value == "auto" and str in members):  # "auto": the backend picks (batch sizes, budgets)
        return value
    try:
        return check_text(value, kinds[0] if len(kinds) == 1 else typing.Union[kinds])  # noqa: UP007 - at run time
    except Invalid as exc:
        raise InputError(f"model option {name}={value!r} of {backend}: expected {exc.expected}") from None


def looks_local(weights: str) -> bool:
    """A weights string that names a local path rather than a hub id ``org/name``.

    ``./x``, ``../x``, ``/x``, ``~/x`` and paths of more than two parts are local; ``a/b`` is local when
    ``a`` is an existing folder here (``models/blip`` next to a ``models/`` folder).
    """
    if weights.startswith((".", "/", "~")) or "\\" in weights or weights.count("/") > 1:
        return True
    head = weights.split("/", 1)[0]
    return "/" in weights and Path(head).is_dir() or Path(weights).exists()


def check_weights(backend: Backend, weights: str | None) -> None:
    """Fail at once (exit 2) on weights that cannot load: a missing local path, or an uncached hub id offline."""
    if not weights:
        return
    if backend.weights in ("folder", "file") or (backend.weights == "hf" and looks_local(weights)):
        path = Path(weights).expanduser()
        if not path.exists():
            raise InputError(f"model weights {weights!r} for {backend.name}: no such local "
                             f"{'file' if backend.weights == 'file' else 'folder'}")
        if backend.weights == "folder" or backend.weights == "hf":
            if not path.is_dir():
                raise InputError(f"model weights {weights!r} for {backend.name}: expected a folder, found a file")
        return
    if backend.weights != "hf":
        return
    from connote.models.hub import go_offline, hub_offline, hub_unreachable, unreachable_message

    offline = hub_offline()
    if not offline:
        why = hub_unreachable()  # once per process, in seconds, before huggingface_hub's retry loop
        if why is None:
            return
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers brings huggingface_hub
        return
    try:
        hit = try_to_load_from_cache(weights, "config.json")
    except Exception:  # noqa: BLE001 - an id the hub library rejects outright
        hit = None
    if not isinstance(hit, str):
        if offline:
            raise InputError(f"model weights {weights!r} for {backend.name}: not a local folder and not in the "
                             "Hugging Face cache, and the hub is offline (HF_HUB_OFFLINE=1)")
        raise InputError(unreachable_message(weights, backend.name, why))
    if not offline:  # cached, hub unreachable: use the cache now rather than retry the hub for a minute
        import sys

        go_offline()
        print(f"note: the Hugging Face hub cannot be reached ({why}); using the cached copy of {weights!r} "
              "(HF_HUB_OFFLINE=1 for this run)", file=sys.stderr)


@dataclass(frozen=True)
class Needs:
    """What a task gives a model and takes from it before any item is computed, known without building it.

    ``inputs``: what it works from (:data:`INPUTS`); ``images``: whether it reads the photos themselves (False for a
    backend working from photo ids alone); ``frames``: the video frames it wants, ``(strategy, k, per_clip)``;
    ``frame_sampling``: how they are drawn (``fixed``, or ``random`` with its seed); ``prompt``: its own generation
    prompt (None: the task's).
    """

    inputs: str
    images: bool
    frames: tuple[str, int, int]
    frame_sampling: tuple[str, int] = ("fixed", 0)
    prompt: str | None = None


@dataclass(frozen=True)
class ResolvedSpec:
    """A model spec checked once (:func:`check_spec`): what the lazy loader, the model's identity and the factory
    share, so that a run checks its spec one time.

    ``text`` is the spec as given; ``spec`` its parts; ``backend`` the registration; ``options`` the constructor's
    options (an alias's defaults, then the spec's own), each checked against the constructor's annotation.
    """

    text: str
    spec: ModelSpec
    backend: Backend
    options: dict[str, Any]

    @property
    def name(self) -> str:
        return self.spec.backend

    @property
    def weights(self) -> str | None:
        return self.spec.weights

    @property
    def local(self) -> bool:
        """The weights name a local file or folder (not a hub id or a service's model name)."""
        return self.backend.weights in ("folder", "file") or (self.backend.weights == "hf"
                                                              and looks_local(self.weights or ""))

    def __str__(self) -> str:
        return self.text

    @functools.cached_property
    def needs(self) -> Needs:
        """What a task takes from this model before it computes (:class:`Needs`), without building it: what the
        registration declares, updated by the backend's ``spec_needs(weights, options)`` where its options or its
        weights' configuration decide (frames, whether photos are read, its own prompt); computed once."""
        backend = self.backend
        declared = Needs(backend.inputs, backend.inputs != "photo-ids", backend.frames)
        factory = backend.factory()
        hook = getattr(getattr(factory, "__self__", factory), "spec_needs", None)
        if not callable(hook):
            return declared
        params, _ = _option_parameters(factory)
        values = {name: default for name, (_, default) in params.items() if default is not inspect.Parameter.empty}
        try:
            found = hook(self.weights, {**values, **self.options})
        except InputError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:  # as a build would fail on the same weights
            raise InputError(f"could not load model {self.spec}: {type(exc).__name__}: {exc}") from None
        return dataclasses.replace(declared, **found)


def check_spec(spec: str | ModelSpec) -> ResolvedSpec:
    """Resolve and check a spec without loading anything (exit 2 on an unknown backend or option, a value of the
    wrong type, weights that cannot load)."""
    text = spec if isinstance(spec, str) else str(spec)
    if isinstance(spec, str):
        spec = parse_spec(spec)
    backend = MODELS.get(spec.backend)
    factory = backend.factory()
    params, var_kw = _option_types(factory)
    options: dict[str, Any] = {**backend.defaults, **spec.options}
    for name, value in options.items():
        if name not in params:
            if var_kw:
                continue
            valid = ", ".join(sorted(params)) or "(none)"
            raise InputError(f"unknown option {name!r} for model backend {spec.backend}; valid options: {valid}")
        options[name] = _convert(spec.backend, name, value, params[name])
    check_weights(backend, spec.weights)
    return ResolvedSpec(text, spec, backend, options)


def resolved(spec: str | ModelSpec | ResolvedSpec) -> ResolvedSpec:
    """``spec`` checked (:func:`check_spec`), or as it is when it was checked already."""
    return spec if isinstance(spec, ResolvedSpec) else check_spec(spec)


def load_model(spec: str | ModelSpec | ResolvedSpec, **overrides: Any) -> Any:
    """Build a model from its spec (checked by :func:`check_spec` unless it is a :class:`ResolvedSpec`); load
    failures become one-line errors (exit 2)."""
    checked = resolved(spec)
    backend, options = checked.backend, {**checked.options, **overrides}
    try:
        model = backend.factory()(checked.weights, **options)
    except InputError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RuntimeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InputError(f"could not load model {checked.spec}: {type(exc).__name__}: {first}") from None
    from connote.models.reads import spec_reads, with_reads

    try:
        model._connote_backend = backend
    except AttributeError:  # a backend with __slots__ is found by its class
        pass
    return with_reads(model, spec_reads(checked.weights, options, local_weights=checked.local))


def registration_of(model: Any) -> Backend | None:
    """The registry entry a built model was made from: the one :func:`load_model` recorded, else the entry whose
    target is the model's class (an instance built directly, ``Cls(...)`` or ``Cls.from_spec(...)``)."""
    found = getattr(model, "_connote_backend", None)
    if isinstance(found, Backend):
        return found
    cls = type(model)
    own = f"{cls.__module__}:{cls.__qualname__}"
    matches = [MODELS.get(n) for n in MODELS.names() if _same_target(MODELS._entries[n].target, own)
               or MODELS._entries[n].target is cls]
    if not matches:
        return None
    named = [b for b in matches if b.name == getattr(model, "backend", None)]
    return (named or matches)[0]


def capabilities_of(model: Any) -> frozenset[str]:
    """The capabilities a built model declares at its registration.

    An object built outside the registry (a test's stand-in, a wrapper) declares them with a ``capabilities``
    attribute, or, failing that, by the capability methods it has.
    """
    backend = registration_of(model)
    if backend is not None and backend.capabilities is not None:
        return backend.capabilities
    declared = getattr(model, "capabilities", None)
    if declared:
        return frozenset(declared)
    methods = {"match": "match_probability", "generate": "generate", "mask": "masking_game"}
    return frozenset(c for c, m in methods.items() if callable(getattr(model, m, None)))


def inputs_of(model: Any) -> str:
    """What a built model works from (:data:`INPUTS`), as its registration declares (``images`` by default)."""
    backend = registration_of(model)
    return backend.inputs if backend is not None else getattr(model, "inputs", "images")


def needs_of(model: Any) -> Needs:
    """What ``model`` needs and decides for a task (:class:`Needs`). A model not built yet
    (:class:`~connote.models.lazy.LazyModel`) answers from its resolved spec and stays unbuilt; a built one from its
    registration and what its instance says (``frame_spec``, ``needs_images``, ``frame_sampling``,
    ``default_prompt``)."""
    spec = getattr(model, "resolved", None)
    if isinstance(spec, ResolvedSpec):
        return spec.needs
    backend = registration_of(model)
    inputs = backend.inputs if backend is not None else getattr(model, "inputs", "images")
    frames = getattr(model, "frame_spec", None) or (backend.frames if backend is not None else DEFAULT_FRAMES)
    sampling = getattr(model, "frame_sampling", None) or ("fixed", 0)
    return Needs(inputs, inputs != "photo-ids" or bool(getattr(model, "needs_images", False)),
                 tuple(frames), tuple(sampling), getattr(model, "default_prompt", None))  # type: ignore[arg-type]


def frames_of(model: Any) -> tuple[str, int, int]:
    """The video frames a model wants (:func:`needs_of`): where its options or weights decide them, its
    ``spec_needs`` (or, built, its ``frame_spec``) says so; else what its registration declares."""
    return needs_of(model).frames


def needs_images(model: Any) -> bool:
    """Whether a model needs the photos themselves (:func:`needs_of`): every backend but one working from photo
    ids, unless its options make it read them too (seq2seq grounded on objects)."""
    return needs_of(model).images


def backends_with(capability: str, inputs: tuple[str, ...] | None = None) -> list[str]:
    """The backends that declare ``capability`` (and, given ``inputs``, work from one of them)."""
    return [n for n in MODELS.names() if capability in (b := MODELS.get(n)).capabilities  # type: ignore[operator]
            and (inputs is None or b.inputs in inputs)]


def require_capability(model: Any, capability: str, *, task: str) -> None:
    """Refuse (exit 2) a model without ``capability``, naming the backends that have it."""
    if capability in capabilities_of(model):
        return
    name = getattr(model, "backend", type(model).__name__)
    raise InputError(f"model backend {name} cannot {capability!r}, which task {task} needs; "
                     f"backends that can: {', '.join(backends_with(capability))}")


from connote.models.builtin import BUILTIN  # noqa: E402 - data only; registered below

for _name, _target, _caps, _weights, _help, _defaults, _options in BUILTIN:
    register_model(_name, _target, capabilities=frozenset(_caps), help=_help, weights=_weights, defaults=_defaults,
                   options=_options)
# text-only generators (inputs "text"): only the tasks that send a prompt alone take them (vmc synth)
register_model("hf-chat", "connote.models.probe_text:TextChat", capabilities=frozenset({"generate"}), weights="hf",
               inputs="text", help="Any Hugging Face chat LM, text only: the prompt as one user turn (chat template).")
register_model("openai-batch", "connote.models.openai_batch:OpenAIBatchAnswers.from_spec",
               capabilities=frozenset({"generate"}), weights="file", inputs="text",
               help="Answers read from an OpenAI Batch API output file (or a folder of them) by custom_id.",
               options={"requests": "the request file(s) written with --write-batch, to check the answers match "
                                    "them"})
