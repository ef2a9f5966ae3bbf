"""Typed metric options: each metric declares a dataclass of its options, with types and defaults.

A metric's options are the keyword arguments of :func:`connote.metrics.compute_scores` that it reads
(``cider_sigma``, ``meteor_task``, ...). :func:`parse_options` builds a metric's dataclass from those
keywords, converting where it is lossless (``"6"`` -> 6.0 for a float) and refusing the rest with an
:class:`OptionError` that names the option, the value and what is expected; ``bounds`` in a field's
metadata adds a numeric range. An option no registered metric declares is refused too, with the
valid names (and the closest one) - a typo such as ``cider_sigmma`` never passes silently.

Plain dataclasses keep ``connote score``'s start fast (no validation library to import).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo:
...     demo_sigma: float = opt(6.0, "length-penalty sigma", gt=0)
>>> parse_options(Demo, {"demo_sigma": "2"}).demo_sigma
2.0
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from connote.core.errors import InputError


class OptionError(InputError, ValueError):
    """An unknown or invalid metric option (exit status 2 on the command line)."""


def opt(default: Any, help: str = "", *, gt: float | None = None, ge: float | None = None,
        le: float | None = None, default_factory: Any = None) -> Any:
    """A dataclass field with a help line and optional numeric bounds (``gt``/``ge``/``le``)."""
    meta = {"help": help, "gt": gt, "ge": ge, "le": le}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def option_names(cls: type) -> list[str]:
    """The option names a metric's dataclass declares."""
    return [f.name for f in dataclasses.fields(cls)]


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return f"a list of {_type_name(typing.get_args(tp)[0])}"
    if tp is type(None):
        return "null"
    return {float: "a number", int: "an integer", bool: "true/false", str: "a string",
            os.PathLike: "a path"}.get(tp, getattr(tp, "__name__", str(tp)))


class _Mismatch(Exception):
    pass


def _convert(value: Any, tp: Any) -> Any:
    """``value`` as type ``tp`` where the conversion loses nothing; raise _Mismatch otherwise."""
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin is Literal:
        if value in typing.get_args(tp):
            return value
        raise _Mismatch
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _convert(value, a)
            except _Mismatch:
                continue
        raise _Mismatch
    if origin in (tuple, list):
        (item,) = typing.get_args(tp)[:1]
        if isinstance(value, str):
            value = [v for v in value.replace("+", ",").split(",") if v]
        if not isinstance(value, (list, tuple)):
            raise _Mismatch
        return tuple(_convert(v, item) for v in value)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _Mismatch
    if tp is int:
        if isinstance(value, bool):
            raise _Mismatch
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise _Mismatch from None
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise _Mismatch
    if tp is float:
        if isinstance(value, bool):
            raise _Mismatch
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise _Mismatch from None
        raise _Mismatch
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, os.PathLike):
            return os.fspath(value)
        raise _Mismatch
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise _Mismatch


def _check_bounds(name: str, value: Any, meta: Mapping[str, Any]) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return
    gt, ge, le = meta.get("gt"), meta.get("ge"), meta.get("le")
    bad = math.isnan(value) or math.isinf(value)
    parts = []
    if gt is not None:
        parts.append(f"> {gt:g}")
        bad = bad or not value > gt
    if ge is not None:
        parts.append(f">= {ge:g}")
        bad = bad or not value >= ge
    if le is not None:
        parts.append(f"<= {le:g}")
        bad = bad or not value <= le
    if bad:
        rule = " and ".join(parts) if parts else "finite"
        raise OptionError(f"option {name}={value!r}: must be a finite number {rule}".replace("number finite",
                                                                                           "number"))


def parse_options(cls: type, values: Mapping[str, Any]) -> Any:
    """Build the options dataclass ``cls`` from ``values`` (keys it does not declare are ignored here;
    :func:`check_known` refuses names no metric declares). Raises :class:`OptionError`."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        value = values[f.name]
        if value is None and f.default is None:
            kwargs[f.name] = None
            continue
        try:
            conv = _convert(value, hints[f.name])
        except _Mismatch:
            raise OptionError(f"option {f.name}={value!r}: expected {_type_name(hints[f.name])}") from None
        _check_bounds(f.name, conv, f.metadata)
        kwargs[f.name] = conv
    return cls(**kwargs)


def check_known(names: Iterable[str], valid: Iterable[str]) -> None:
    """Refuse option names that are not in ``valid``, naming the closest valid one."""
    valid = sorted(set(valid))
    unknown = [n for n in names if n not in valid]
    if not unknown:
        return
    parts = []
    for n in unknown:
        close = difflib.get_close_matches(n, valid, n=1)
        parts.append(f"{n!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise OptionError(f"unknown metric option {', '.join(parts)}; valid options: {', '.join(valid)}")


def describe(cls: type) -> list[tuple[str, str, Any, str]]:
    """(name, type, default, help) of each option, for docs and ``--help`` texts."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        out.append((f.name, _type_name(hints[f.name]), default, f.metadata.get("help", "")))
    return out
