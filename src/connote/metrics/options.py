"""Typed metric options: each metric declares a dataclass of its options, with types and defaults.

A metric's options are the keyword arguments of :func:`connote.metrics.compute_scores` that it reads
(``cider_sigma``, ``meteor_task``, ...). :func:`parse_options` builds a metric's dataclass from those
keywords, converting where it is lossless (``"6"`` -> 6.0 for a float) and refusing the rest with an
:class:`OptionError` that names the option, the value and what is expected; ``bounds`` in a field's
metadata adds a numeric range. An option no registered metric declares is refused too, with the
valid names (and the closest one) - a typo such as ``cider_sigmma`` never passes silently.

Plain dataclasses keep ``connote score``'s start fast: values are checked by
:func:`connote.core.checking.check` (pydantic, imported on the first check, not to build the command).

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
import typing
from collections.abc import Iterable, Mapping
from typing import Any

from connote.core.errors import InputError


class OptionError(InputError, ValueError):
    """An unknown or invalid metric option (exit status 2 on the command line)."""


def opt(default: Any, help: str = "", *, gt: float | None = None, ge: float | None = None,
        le: float | None = None, default_factory: Any = None, flag: str | None = None, cli: bool | None = None,
        path: str | None = None) -> Any:
    """A dataclass field with a help line and optional numeric bounds (``gt``/``ge``/``le``).

    ``connote score`` offers every option as a flag built from this declaration (help, default, bounds;
    see :mod:`connote.cli.metric_flags`): ``flag`` is its spelling where it is not ``--`` + the name with
    dashes (for a bool whose default is true, a flag that sets it false, e.g. ``--meteor-no-norm``);
    ``cli=False`` keeps an option off the command line (Python objects), ``cli=True`` puts an untyped
    (``Any``) one on it as text; ``path="file"`` marks a file the command checks before anything runs.
    """
    meta = {"help": help, "gt": gt, "ge": ge, "le": le, "flag": flag, "cli": cli, "path": path}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def option_names(cls: type) -> list[str]:
    """The option names a metric's dataclass declares."""
    return [f.name for f in dataclasses.fields(cls)]


def parse_options(cls: type, values: Mapping[str, Any]) -> Any:
    """Build the options dataclass ``cls`` from ``values`` (keys it does not declare are ignored here;
    :func:`check_known` refuses names no metric declares). Raises :class:`OptionError`."""
    from connote.core.checking import Invalid, check

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
            kwargs[f.name] = check(value, hints[f.name], gt=f.metadata.get("gt"), ge=f.metadata.get("ge"),
                                   le=f.metadata.get("le"))
        except Invalid as exc:
            verb = "must be" if exc.out_of_range else "expected"
            raise OptionError(f"option {f.name}={value!r}: {verb} {exc.expected}") from None
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
    from connote.core.checking import type_name

    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        out.append((f.name, type_name(hints[f.name]), default, f.metadata.get("help", "")))
    return out
