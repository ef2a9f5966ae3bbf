"""Checks of numeric and folder options, shared by the commands: a value out of range is an ``InputError``
naming the option and what was expected (exit status 2) before anything runs. The numbers go through
:func:`connote.core.checking.check` (pydantic's bounds, NaN and infinities refused), the checker of the
metric options too."""

from __future__ import annotations

from pathlib import Path

from connote.core.errors import InputError


def at_least(option: str, value: float | None, minimum: float) -> None:
    """``value`` (when given) is a finite number >= ``minimum`` (NaN is refused)."""
    if value is not None and not _fits(value, ge=minimum):
        raise InputError(f"{option} must be at least {minimum:g}, got {value!r}")


def positive_number(option: str, value: float | None) -> None:
    """``value`` (when given) is finite and > 0."""
    if value is not None and not _fits(value, gt=0):
        raise InputError(f"{option} must be a finite number above 0, got {value!r}")


def folder(option: str, path: Path | None) -> None:
    """``path`` names a folder or nothing yet, not an existing file."""
    if path is not None and path.exists() and not path.is_dir():
        raise InputError(f"{option} names an existing file, expected a folder", path=path)


def _fits(value: float, **bounds: float) -> bool:
    from connote.core.checking import Invalid, check

    try:
        check(value, float, **bounds)
    except Invalid:
        return False
    return True
