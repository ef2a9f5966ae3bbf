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


def map_threads(fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> list[Any]:
    """``[fn(x) for x in items]`` on up to ``workers`` threads (work that releases the GIL: reading and decoding
    files), in order; on the calling thread when one worker or one item."""
    if workers <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(min(workers, len(items)), thread_name_prefix="connote-load") as pool:
        return list(pool.map(fn, items))
