"""The run folder of the run in progress, for what a model keeps beside the rows (a served engine's log).

:meth:`connote.tasks.api.Task.run` sets it for the duration of a run; a model asks :func:`current_run_folder`
when it needs a place for its own files and gets None outside a run.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from pathlib import Path

_FOLDER: contextvars.ContextVar[Path | None] = contextvars.ContextVar("connote_run_folder", default=None)


def current_run_folder() -> Path | None:
    """The folder of the run in progress in this context, or None."""
    return _FOLDER.get()


@contextlib.contextmanager
def running_in(folder: str | Path) -> Iterator[Path]:
    """Make ``folder`` the run in progress for the ``with`` block."""
    token = _FOLDER.set(Path(folder))
    try:
        yield Path(folder)
    finally:
        _FOLDER.reset(token)
