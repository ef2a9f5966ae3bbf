"""Errors users see: each names the file, line/item and what was expected."""

from __future__ import annotations

from pathlib import Path


class ConnoteError(Exception):
    """Base class; the CLI prints the message and exits with ``exit_code``."""

    exit_code = 1


class InputError(ConnoteError):
    """Input that cannot be used at all (unparseable file, missing column); exit status 2."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None,
                 column: str | int | None = None) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if column is not None:
            where.append(f"column {column}")
        self.path, self.line, self.column, self.message = path, line, column, message
        super().__init__(f"{': '.join([', '.join(where), message]) if where else message}")


class MissingExtra(ConnoteError, ImportError):
    """An optional dependency is not installed: one line naming the extra that installs it; exit status 2.

    It is an ``ImportError`` too, so code that falls back when a package is absent still can.
    """

    exit_code = 2

    def __init__(self, module: str, extra: str, *, needed_for: str | None = None) -> None:
        self.module, self.extra = module, extra
        what = f"{module!r} is needed" + (f" for {needed_for}" if needed_for else " here")
        super().__init__(f"{what}; install it with: pip install 'connote[{extra}]'")


class ItemError(ConnoteError):
    """One bad item: recorded with the item, the run goes on."""
