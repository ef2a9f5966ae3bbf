"""One checker of typed values for every option checker: metric options, command-line numbers, model-spec
options.

:func:`check` converts a value to a type where the conversion loses nothing (``"6"`` -> 6.0 for a float,
``2.0`` -> 2 for an int, ``"a,b"`` -> ``("a", "b")`` for a tuple) and checks numeric bounds; anything else
raises :class:`Invalid` carrying what was expected in words (``"an integer"``, ``"a finite number > 0"``),
which each caller puts into its own message beside the option's name and the value. pydantic does the
conversion and the bounds (a ``TypeAdapter`` per type, cached); it is imported on the first check only, so
``connote --help`` and ``connote score --help`` do not pay for it.

What pydantic's lax mode would take and connote refuses stays here, by hand: a bool where a number is
wanted (``True`` is not 1.0), a non-bool where a bool is wanted (``"yes"``), NaN and infinities.

>>> check("2", float, gt=0)
2.0
>>> try:
...     check("2.5", int)
... except Invalid as exc:
...     print(exc)
an integer
"""

from __future__ import annotations

import functools
import os
import types
import typing
from typing import Any, Literal


class Invalid(ValueError):
    """A value that does not fit; ``str(exc)`` (and ``.expected``) says what was expected, in words;
    ``out_of_range``: a number of the right type outside the bounds (or NaN, or infinite)."""

    def __init__(self, expected: str, out_of_range: bool = False) -> None:
        super().__init__(expected)
        self.expected = expected
        self.out_of_range = out_of_range


def type_name(tp: Any) -> str:
    """What a type expects, in words (``float`` -> ``a number``, a Literal -> ``one of 'a', 'b'``)."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return f"a list of {type_name(typing.get_args(tp)[0])}"
    if tp is type(None):
        return "null"
    return {float: "a number", int: "an integer", bool: "true/false", str: "a string",
            os.PathLike: "a path"}.get(tp, getattr(tp, "__name__", str(tp)))


def bounds_text(gt: float | None = None, ge: float | None = None, le: float | None = None) -> str:
    """``a finite number > 0`` (``and``-joined bounds), or ``a finite number`` without bounds."""
    parts = [f"{sym} {b:g}" for sym, b in ((">", gt), (">=", ge), ("<=", le)) if b is not None]
    return "a finite number" + (" " + " and ".join(parts) if parts else "")


def _members(tp: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(tp)
    return typing.get_args(tp) if origin in (typing.Union, types.UnionType) else (tp,)


def _numeric(tp: Any) -> bool:
    return any(m in (int, float) for m in _members(tp))


@functools.cache
def _adapter(tp: Any, gt: float | None, ge: float | None, le: float | None) -> Any:
    from typing import Annotated

    from pydantic import ConfigDict, Field, Strict, TypeAdapter

    def constrained(t: Any) -> Any:
        if t in (int, float):
            return Annotated[t, Field(gt=gt, ge=ge, le=le, allow_inf_nan=False)]
        if t is bool:
            return Annotated[bool, Strict()]
        origin = typing.get_origin(t)
        if origin in (typing.Union, types.UnionType):
            return typing.Union[tuple(constrained(a) for a in typing.get_args(t))]  # noqa: UP007 - built at run time
        if origin in (tuple, list):
            return tuple[constrained(typing.get_args(t)[0]), ...]
        return t

    return TypeAdapter(constrained(tp), config=ConfigDict(arbitrary_types_allowed=True))


def _prepare(value: Any, tp: Any) -> Any:
    """The hand-written part: the text forms pydantic does not read, and the values its lax mode takes."""
    members = _members(tp)
    if isinstance(value, os.PathLike) and str in members:
        return os.fspath(value)
    if isinstance(value, str) and any(typing.get_origin(m) in (tuple, list) for m in members):
        return [v for v in value.replace("+", ",").split(",") if v]
    if isinstance(value, str) and any(m in (int, float) for m in members):
        return value.strip()
    if isinstance(value, bool) and _numeric(tp) and bool not in members:
        raise Invalid(type_name(tp))
    return value


#: How text spells a yes/no value (a model spec's ``?flag=no``, ``connote run --set flag=off``).
BOOL_WORDS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def check_text(value: str, tp: Any, *, gt: float | None = None, ge: float | None = None,
               le: float | None = None) -> Any:
    """``value`` as typed on a command line or in a model spec, as type ``tp``: a yes/no word (:data:`BOOL_WORDS`)
    is a bool where ``tp`` takes one; then :func:`check`.

    >>> check_text("no", bool), check_text("8", int | bool)
    (False, 8)
    """
    if bool in _members(tp):
        value = BOOL_WORDS.get(value.strip().lower(), value)  # type: ignore[assignment]
    return check(value, tp, gt=gt, ge=ge, le=le)


def check(value: Any, tp: Any, *, gt: float | None = None, ge: float | None = None,
          le: float | None = None) -> Any:
    """``value`` as type ``tp`` (lossless conversions only), within the bounds; raises :class:`Invalid`."""
    if tp is Any:
        return value
    value = _prepare(value, tp)
    from pydantic import ValidationError

    try:
        return _adapter(tp, gt, ge, le).validate_python(value)
    except ValidationError as exc:
        kinds = {e["type"] for e in exc.errors(include_url=False)}
        if kinds & {"greater_than", "greater_than_equal", "less_than_equal", "finite_number"}:
            raise Invalid(bounds_text(gt, ge, le), out_of_range=True) from None
        raise Invalid(type_name(tp)) from None
