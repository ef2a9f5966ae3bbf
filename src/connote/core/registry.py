"""One generic registry for models, tasks and metrics.

Entries are either objects or lazy ``"module:attr"`` strings, so listing names never imports
heavy dependencies (torch, transformers) and a backend's module is imported only when used.

>>> reg = Registry("colour")
>>> reg.register("red", "builtins:str")
>>> reg.get("red")("x")
'x'
>>> reg.names()
['red']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from connote.core.errors import ConnoteError, MissingExtra

T = TypeVar("T")


class UnknownNameError(ConnoteError, KeyError):
    """An unregistered name; the message lists the valid names (exit status 2 on the CLI)."""

    exit_code = 2

    def __str__(self) -> str:  # KeyError quotes its message; we want plain text
        return str(self.args[0])


class Registry(Generic[T]):
    """Name -> object (or lazy ``"module:attr"``) with one-line descriptions."""

    def __init__(self, kind: str, *, plugins: Callable[[Registry[Any]], None] | None = None) -> None:
        """``plugins(registry)`` adds the plugins' entries (:mod:`connote.core.plugins`); it runs once, on the
        first lookup or listing, never on :meth:`register`."""
        self.kind = kind
        self._entries: dict[str, Any] = {}
        self._help: dict[str, str] = {}
        self._plugins = self._loader = plugins
        self._plugin_names: set[str] = set()
        if plugins is not None:
            from connote.core.plugins import track

            track(self)

    def _load_plugins(self) -> None:
        load, self._plugins = self._plugins, None
        if load is not None:
            before = set(self._entries)
            try:
                load(self)
            except BaseException:
                self._plugins = load  # try again on the next lookup (the error is reported now)
                raise
            finally:
                self._plugin_names |= set(self._entries) - before

    def _forget_plugins(self) -> None:
        """Drop what the plugins added; they are read again on the next lookup (:func:`connote.core.plugins.reset`)."""
        for name in self._plugin_names:
            self._entries.pop(name, None)
            self._help.pop(name, None)
        self._plugin_names = set()
        self._plugins = self._loader

    def put(self, name: str, obj: Any, *, help: str = "") -> None:
        """Set ``name`` to ``obj`` whether or not it is registered (a registry that merges its own entries)."""
        self._entries[name] = obj
        self._help[name] = help

    def register(self, name: str, obj: Any = None, *, help: str = "") -> Any:
        """Register ``obj`` under ``name``; without ``obj`` returns a decorator."""

        def _add(target: Any) -> Any:
            if name in self._entries and self._entries[name] is not target:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._entries[name] = target
            doc = help or (getattr(target, "__doc__", None) or "").strip().split("\n")[0]
            self._help[name] = doc
            return target

        if obj is None:
            return _add
        _add(obj)
        return obj

    def get(self, name: str) -> T:
        """Return the registered object, importing it if it was registered lazily."""
        self._load_plugins()
        if name not in self._entries:
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; valid {self.kind}s: {', '.join(self.names()) or '(none)'}"
            )
        entry = self._entries[name]
        if isinstance(entry, str) and ":" in entry:
            entry = import_target(entry)
            self._entries[name] = entry
        return entry

    def names(self) -> list[str]:
        self._load_plugins()
        return sorted(self._entries)

    def describe(self, name: str) -> str:
        self._load_plugins()
        return self._help.get(name, "")

    def __contains__(self, name: object) -> bool:
        self._load_plugins()
        return name in self._entries

    def items(self) -> list[tuple[str, str]]:
        self._load_plugins()
        return [(n, self._help.get(n, "")) for n in self.names()]


def import_target(target: str) -> Any:
    """The object a lazy ``"module:attr[.attr]"`` string names, imported now."""
    module, attr = target.split(":", 1)
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def require(module: str, extra: str) -> Any:
    """Import an optional dependency or fail with the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtra(module, extra) from exc


Factory = Callable[..., Any]
