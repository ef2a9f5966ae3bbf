"""A run command's hold on its run folder, on every rank of a launched job.

A command that writes into a run folder (``connote cv-probes run``, ``cv-probes explain``, ``vist generate``, ``vmc
caption``) first locks it (:func:`connote.runs.store.hold_run_folder`), so that a second command into the same
folder is refused before anything is written or loaded. Under ``torchrun``/``accelerate launch`` only rank 0
locks; :func:`hold_run` then tells every rank rank 0's refusal (so no rank waits for one that has gone) and
:func:`main_rank_first` lets rank 0 alone write what the ranks share (the sample set) and print its notice,
while the other ranks wait for it and use what it wrote.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from connote.core.errors import ConnoteError, InputError
from connote.runs.distributed import Dist, init_distributed
from connote.runs.store import hold_run_folder

T = TypeVar("T")


def launched_world() -> int:
    """The job's number of processes as the launcher set it (``WORLD_SIZE``; 1 outside a launcher)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


@contextlib.contextmanager
def hold_run(out: str | Path) -> Iterator[Dist]:
    """Lock ``out`` for the whole command (rank 0) and yield this process's :class:`Dist`.

    In one process this is :func:`hold_run_folder`. In a launched job the process group is started here and
    closed at the end; a refusal on rank 0 (the folder locked by another run, a file in its place) stops every
    rank with exit status 2, rank 0 with its own message, the others with ``rank 0 refused the run folder``.
    """
    if launched_world() <= 1:
        with hold_run_folder(out):
            yield Dist()
        return
    dist = init_distributed()
    held = contextlib.ExitStack()
    try:
        refusal = None
        if dist.is_main:
            try:
                held.enter_context(hold_run_folder(out))
            except ConnoteError as exc:
                refusal = exc
        message = dist.agree(None if refusal is None else str(refusal))
        if refusal is not None:
            raise refusal
        if message is not None:
            raise InputError(f"rank 0 refused the run folder: {message}")
        with held:
            yield dist
    finally:
        dist.close()


def main_rank_first(dist: Dist, make: Callable[[], T], *, notice: Callable[[T], str] | None = None,
                    first: str | None = None) -> T:
    """``make()`` on rank 0 only (it writes files every rank reads), then the same value on every rank.

    ``first`` (a line for a log before ``make`` starts, which may take seconds) and ``notice(value)`` are
    printed on stderr by rank 0 only. The other ranks wait until rank 0 is done; an error on rank 0 stops them
    too (rank 0 raises its own).
    """
    import sys

    value: Any = None
    failure: BaseException | None = None
    if dist.is_main:
        if first is not None:
            print(first, file=sys.stderr, flush=True)
        try:
            value = make()
        except Exception as exc:  # noqa: BLE001 - told to the other ranks, then raised here
            failure = exc
    if dist.world > 1:
        shared = dist.agree([None if failure is None else f"{type(failure).__name__}: {failure}", value])
        if not dist.is_main:
            if shared[0] is not None:
                raise InputError(f"rank 0 failed before the run: {shared[0]}")
            value = shared[1]
    if failure is not None:
        raise failure
    if notice is not None and dist.is_main:
        print(notice(value), file=sys.stderr)
    return value
