"""One progress bar for every long loop (rich), quiet when not on a terminal or disabled."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _Null:
    def advance(self, n: int = 1) -> None:
        pass

    def update(self, **_: Any) -> None:
        pass


class _Bar:
    def __init__(self, progress: Any, task: Any) -> None:
        self._p, self._t = progress, task

    def advance(self, n: int = 1) -> None:
        self._p.advance(self._t, n)

    def update(self, **kw: Any) -> None:
        self._p.update(self._t, **kw)


@contextmanager
def progress_bar(total: int, description: str, *, enabled: bool = True) -> Iterator[Any]:
    """``with progress_bar(n, "scoring") as bar: bar.advance(k)``; prints to stderr."""
    if not enabled:
        yield _Null()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(file=sys.stderr)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=False, disable=False) as p:
        yield _Bar(p, p.add_task(description, total=total))
