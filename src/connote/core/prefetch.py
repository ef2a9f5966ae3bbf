"""Work prepared on a thread ahead of its consumer (:func:`prefetch`), and how many threads a process may use.

Used where the next piece of work needs no model (files read and decoded, pixels made) while the current one
runs on it: the runner's chunks of a task (:meth:`connote.tasks.api.Task.prepare`), the matching engine's image
sub-groups and a chat VLM's batches.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["DEPTH", "map_threads", "prefetch", "usable_cores"]

#: How many items :func:`prefetch` prepares ahead of the one its consumer holds, unless told.
DEPTH = 2


def prefetch(items: Sequence[Any], prepare: Any, depth: int = DEPTH) -> Iterator[tuple[Any, Any]]:
    """``(item, prepare(item))`` in order, ``prepare`` running on a thread at most ``depth`` items ahead of the
    consumer. An error in ``prepare`` is raised at its item; a consumer that stops early stops the thread."""
    if len(items) <= 1 or depth < 1:
        for item in items:
            yield item, prepare(item)
        return
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work() -> None:
        for item in items:
            if stop.is_set():
                return
            try:
                result: tuple[bool, Any] = (True, prepare(item))
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
                result = (False, exc)
            while not stop.is_set():
                try:
                    ready.put(result, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if not result[0]:
                return

    thread = threading.Thread(target=work, name="connote-prefetch", daemon=True)
    thread.start()
    try:
        for item in items:
            ok, value = ready.get()
            if not ok:
                raise value
            yield item, value
    finally:
        stop.set()
        thread.join()


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a cluster's scheduler sets; else all)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


_POOLS: dict[tuple[str, int], Any] = {}
_POOLS_LOCK = threading.Lock()


def _pool(name: str, workers: int) -> Any:
    """The process's pool ``name`` of ``workers`` threads, started once (a pool per call started new threads, and
    torch a new OpenMP team for each, on every batch)."""
    from concurrent.futures import ThreadPoolExecutor

    with _POOLS_LOCK:
        pool = _POOLS.get((name, workers))
        if pool is None:
            pool = _POOLS[(name, workers)] = ThreadPoolExecutor(workers, thread_name_prefix=name)
        return pool


def _forget_pools() -> None:
    """In a forked child the parent's pool threads do not exist: start new ones when asked."""
    global _POOLS_LOCK
    _POOLS.clear()
    _POOLS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def map_threads(fn: Callable[[Any], Any], items: Sequence[Any], workers: int, name: str = "connote-load") -> list[Any]:
    """``[fn(x) for x in items]`` in order, on the process's pool ``name`` of up to ``workers`` threads (at most one
    a usable core; for work that releases the GIL: reading, decoding and resizing photos); on the calling thread
    when one worker or one item."""
    workers = min(workers, usable_cores())
    if workers <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    return list(_pool(name, workers).map(fn, items))
