"""Plugins: how a paper (built in or from another package) adds its pieces to the generic registries.

A plugin is one light module (no torch, no transformers, ideally no imports at all) whose module-level
tables declare what its paper adds, each as lazy ``"module:attr"`` strings, so that listing a registry
imports none of the paper's code:

============== ==========================================================================================
``MODELS``     name -> ``register_model`` keywords (``target``, ``capabilities``, ``inputs``, ``frames``,
               ``weights``, ``help``, ``defaults``, ``options``): the backends and what they can do
``TASKS``      name -> ``(target, help)``: the tasks
``RUN_KINDS``  name -> target of a report run kind (an object with ``recognise`` and ``section``)
``STUDIES``    name -> module that makes and imports a Potato study
``DATASETS``   target of a sequence of :class:`connote.datasets.catalog.Dataset` (the catalogue entries)
``FORMATS``    target of a dict format name -> (description, checker) for the catalogue's copy checks
``CONVERTERS`` name -> target of a typer command (``connote datasets convert NAME``)
``PUBLISHED``  paper -> file name of its published tables, relative to the plugin's package
``REPRODUCE``  run kind -> target of ``score_file(table, path, gold)`` (``connote reproduce`` on a file)
``SUITES``     probe suite -> (matching task, MM-SHAP task, sample writer) targets (``connote suite run``)
``RUBRICS``    name -> ``(target, help)``: judge rubrics (:class:`connote.tasks.judge.Rubric`)
``RATINGS``    name -> target of a :class:`connote.metrics.correlation.RatingsFormat` (human-judgement files)
``METRICS``    name -> ``{"compute", "options", "help", "start"}`` targets: metrics (:mod:`connote.metrics.registry`)
``SCORE_NAMES`` engine key -> ``{"display", "metric", "scale", "aliases"}``: printed names of the papers' scores
============== ==========================================================================================

Discovery, once per process and only on a registry's first lookup or listing (:func:`plugins`):

1. **Entry points** (primary): every module named in the entry-point group ``connote.plugins``, as a
   third-party package declares it in its ``pyproject.toml``::

       [project.entry-points."connote.plugins"]
       my-paper = "my_paper.plugin"

   connote's own four papers are declared there too.
2. **Built-in scan** (fallback): every subpackage of the installed ``connote`` with a ``plugin.py`` module
   (a plain module; ``connote/collect/plugin/``, Potato's plugin package, is not one), found on disk with
   :mod:`pkgutil` and the package's import spec, without importing the package. This finds the built-in
   papers when the installed metadata predates them (an editable install made before a paper was added, a
   source tree on ``PYTHONPATH``). A module found both ways is loaded once.

Built-in plugins come first (by package name), then the others (by module name); a name that two
plugins declare is an error naming both.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from types import ModuleType
from typing import Any

from connote.core.errors import ConnoteError

GROUP = "connote.plugins"

_loaded: list[ModuleType] | None = None
#: The registries and tables filled from plugins (each has ``_forget_plugins()``), for :func:`reset`.
_filled: list[Any] = []


def track(table: Any) -> None:
    """Have :func:`reset` make ``table`` (a registry or :class:`PluginTable`) read the plugins again."""
    _filled.append(table)


class PluginError(ConnoteError):
    """A plugin module that cannot be imported, or two plugins declaring one name."""

    exit_code = 2


def entry_point_modules() -> list[str]:
    """The modules named in the ``connote.plugins`` entry-point group of the installed distributions."""
    from importlib.metadata import entry_points

    return sorted({ep.module for ep in entry_points(group=GROUP)})


def builtin_modules() -> list[str]:
    """``connote.<pkg>.plugin`` for every subpackage of the installed connote that has one."""
    import connote

    found = []
    for info in sorted(pkgutil.iter_modules(connote.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        name = f"connote.{info.name}.plugin"
        if _has_submodule(info, "plugin"):
            found.append(name)
    return found


def _has_submodule(info: pkgutil.ModuleInfo, sub: str) -> bool:
    """Whether package ``info`` has module ``sub``, looked up on disk (the package's __init__ is not run)."""
    finder = info.module_finder
    spec = finder.find_spec(f"connote.{info.name}") if hasattr(finder, "find_spec") else None
    if spec is None or not spec.submodule_search_locations:
        return False
    # a plain module only: ``connote/collect/plugin/`` is a package of another kind (Potato's plugin)
    return any(i.name == sub and not i.ispkg for i in pkgutil.iter_modules(spec.submodule_search_locations))


def plugin_modules() -> list[str]:
    """The plugin modules to load, built-in first (see the module docstring for the order)."""
    names = dict.fromkeys(builtin_modules())
    eps = entry_point_modules()
    for name in eps:
        if name.startswith("connote.") and name not in names and importlib.util.find_spec(name) is None:
            continue  # a stale entry point of a built-in that this copy of connote no longer has
        names.setdefault(name)
    builtin = [n for n in names if n.startswith("connote.")]
    return sorted(builtin) + sorted(n for n in names if not n.startswith("connote."))


def plugins() -> list[ModuleType]:
    """The plugin modules, imported once (on the first call)."""
    global _loaded
    if _loaded is None:
        mods = []
        for name in plugin_modules():
            try:
                mods.append(importlib.import_module(name))
            except ImportError as exc:
                raise PluginError(f"connote plugin {name} cannot be imported: {exc}") from exc
        _loaded = mods
    return _loaded


def declared(attr: str) -> Iterator[tuple[ModuleType, Any]]:
    """``(plugin module, value)`` for every plugin that declares ``attr``."""
    for mod in plugins():
        value = getattr(mod, attr, None)
        if value is not None:
            yield mod, value


def named_targets(attr: str) -> Callable[[Any], None]:
    """A :class:`~connote.core.registry.Registry`'s ``plugins`` loader for tables of name -> ``(target, help)``
    (``TASKS``, ``RUBRICS``): registers every plugin's entries; a name registered twice names the plugin."""

    def load(registry: Any) -> None:
        for mod, table in declared(attr):
            for name, (target, help) in table.items():
                try:
                    registry.register(name, target, help=help)
                except ValueError as exc:
                    raise PluginError(f"connote plugin {mod.__name__}: {exc}") from None

    return load


def plugin_dir(mod: ModuleType) -> Any:
    """The folder of a plugin module's package (where its data files are)."""
    from pathlib import Path

    return Path(mod.__file__ or "").resolve().parent


def reset() -> None:
    """Discover the plugins again on the next lookup: every registry and table forgets what plugins added (a
    package installed while the process runs; tests that put a plugin on ``sys.path``)."""
    global _loaded
    _loaded = None
    for table in _filled:
        table._forget_plugins()


class PluginTable(MutableMapping[str, Any]):
    """A dict filled from the plugins' ``attr`` tables on first use, then from ``builtin`` (generic entries).

    Iteration keeps that order (plugins first), so a table whose order matters (the report's run kinds, tried
    in order) lists the papers' entries before the generic ones. ``entries(module, value)`` turns one plugin's
    declared value into ``(key, value)`` pairs (default: the value's items).
    """

    def __init__(self, kind: str, attr: str, builtin: dict[str, Any] | None = None, *,
                 entries: Callable[[ModuleType, Any], Iterable[tuple[str, Any]]] | None = None) -> None:
        self.kind, self.attr = kind, attr
        self._builtin = dict(builtin or {})
        self._entries = entries or (lambda mod, value: value.items())
        self._data: dict[str, Any] | None = None
        track(self)

    def _forget_plugins(self) -> None:
        self._data = None

    def _fill(self) -> dict[str, Any]:
        if self._data is None:
            data: dict[str, Any] = {}
            owner: dict[str, str] = {}
            for mod, value in declared(self.attr):
                for key, item in self._entries(mod, value):
                    if key in data:
                        raise PluginError(f"{self.kind} {key!r} is declared by both {owner[key]} and {mod.__name__}")
                    data[key], owner[key] = item, mod.__name__
            for key, item in self._builtin.items():
                if key in data:
                    raise PluginError(f"{self.kind} {key!r} is declared by {owner[key]} and is a generic one")
                data[key] = item
            self._data = data
        return self._data

    def __getitem__(self, key: str) -> Any:
        return self._fill()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._fill()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._fill()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._fill()))

    def __len__(self) -> int:
        return len(self._fill())

    def __repr__(self) -> str:
        return f"PluginTable({self.kind!r}, {self._fill()!r})"
