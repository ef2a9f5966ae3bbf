"""Checks of numeric and folder options, shared by the commands: a value out of range is an ``InputError``
naming the option and what was expected (exit status 2) before anything runs."""

from __future__ import annotations

import math
from pathlib import Path

from connote.core.errors import InputError


def at_least(option: str, value: float | None, minimum: float) -> None:
    """``value`` (when given) is a number >= ``minimum`` (NaN is refused)."""
    if value is not None and not (isinstance(value, (int, float)) and value >= minimum):
        raise InputError(f"{option} must be at least {minimum:g}, got {value!r}")


def positive_number(option: str, value: float | None) -> None:
    """``value`` (when given) is finite and > 0."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise InputError(f"{option} must be a finite number above 0, got {value!r}")


def folder(option: str, path: Path | None) -> None:
    """``path`` names a folder or nothing yet, not an existing file."""
    if path is not None and path.exists() and not path.is_dir():
        raise InputError(f"{option} names an existing file, expected a folder", path=path)
