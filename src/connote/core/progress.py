"""One progress display for every long loop: a rich bar on a terminal, plain timed lines in a log.

On a terminal the bar redraws in place. When stderr is a file or a pipe (a cluster job, ``nohup``,
``2> log``) a redrawn bar would only appear at the end, so the same bar writes plain lines instead, each
with done/total, rate, elapsed time and an estimate of what is left: one every ``CONNOTE_PROGRESS_INTERVAL``
seconds (default 10; also while one long step runs; 0: one at every step), one when the caller reports a
stored chunk (at most one such a second), and a closing one. Under ``torchrun``/``accelerate launch`` only
rank 0 shows anything (the launcher's ``RANK``).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

#: Seconds between two plain lines in a log; a test or an impatient user sets it shorter.
INTERVAL_ENV = "CONNOTE_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 10.0
#: A stored chunk gets its own line, but never more than one a second (a fast run's small chunks would
#: otherwise fill the log).
STORED_LINE_FLOOR = 1.0


class _Null:
    def advance(self, n: int = 1, *, stored: bool = False) -> None:
        pass

    def update(self, **_: Any) -> None:
        pass


class _Bar:
    def __init__(self, progress: Any, task: Any) -> None:
        self._p, self._t = progress, task

    def advance(self, n: int = 1, *, stored: bool = False) -> None:
        self._p.advance(self._t, n)

    def update(self, **kw: Any) -> None:
        self._p.update(self._t, **kw)


def log_interval() -> float:
    """Seconds between plain progress lines: ``CONNOTE_PROGRESS_INTERVAL`` (0: a line at every step), else 10."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        print(f"warning: {INTERVAL_ENV}={raw!r} is not a number of seconds >= 0; using {DEFAULT_INTERVAL:g}",
              file=sys.stderr, flush=True)
        return DEFAULT_INTERVAL
    return value


def clock(seconds: float) -> str:
    """``75`` -> ``1:15``, ``3725`` -> ``1:02:05``."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def progress_line(description: str, done: int, total: int, elapsed: float) -> str:
    """One plain progress line: ``scoring: 3/8 (38%), 0.5/s, elapsed 0:06, about 0:10 left``."""
    pct = f" ({100 * done / total:.0f}%)" if total else ""
    parts = [f"{description}: {done}/{total}{pct}"]
    if done and elapsed > 0:
        rate = done / elapsed
        parts.append(f"{rate:.3g}/s" if rate >= 1 else f"{1 / rate:.3g} s each")
        parts.append(f"elapsed {clock(elapsed)}")
        parts.append(f"about {clock(max(total - done, 0) / rate)} left")
    else:
        parts += [f"elapsed {clock(elapsed)}", "time left not known yet"]
    return ", ".join(parts)


class LogBar:
    """The bar of a log: a line per ``interval`` seconds (from a timer, so a long step still shows life) and
    per stored chunk, and a closing line. ``advance(n, stored=True)`` says the caller has just stored them."""

    def __init__(self, total: int, description: str, *, interval: float, stream: TextIO | None = None) -> None:
        self.total, self.description, self.interval = int(total), description, float(interval)
        self.done = 0
        self._stream = stream
        self._started = self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._tick, name="connote-progress", daemon=True)

    def start(self) -> LogBar:
        if self.interval > 0:  # 0: a line at every step, so nothing to wake for
            self._timer.start()
        return self

    def advance(self, n: int = 1, *, stored: bool = False) -> None:
        with self._lock:
            self.done += n
            since = time.monotonic() - self._last
            if since >= self.interval or (stored and since >= min(STORED_LINE_FLOOR, self.interval)):
                self._write(", chunk stored" if stored else "")

    def update(self, *, total: int | None = None, description: str | None = None, **_: Any) -> None:
        with self._lock:
            self.total = self.total if total is None else int(total)
            self.description = description or self.description

    def close(self, *, stopped: bool = False) -> None:
        """Stop the timer and write the closing line (``stopped``: the loop ended by an exception)."""
        self._stop.set()
        if self._timer.is_alive():
            self._timer.join()
        with self._lock:
            elapsed = time.monotonic() - self._started
            rate = f" ({self.done / elapsed:.3g}/s)" if self.done and elapsed > 0 else ""
            how = "stopped at" if stopped else "done"
            self._emit(f"{self.description}: {how} {self.done}/{self.total} in {clock(elapsed)}{rate}")

    def _tick(self) -> None:
        while not self._stop.wait(self.interval / 4):  # a quarter: a line is at most a quarter interval late
            with self._lock:
                if time.monotonic() - self._last >= self.interval:
                    self._write("")

    def _write(self, suffix: str) -> None:
        now = time.monotonic()
        self._emit(progress_line(self.description, self.done, self.total, now - self._started) + suffix)
        self._last = now

    def _emit(self, line: str) -> None:
        stream = self._stream or sys.stderr  # looked up now: a test may have swapped stderr since
        stream.write(line + "\n")  # one write per line: lines from other threads never interleave within it
        stream.flush()


def _on_rank_0() -> bool:
    try:
        return int(os.environ.get("RANK", "0")) == 0
    except ValueError:
        return True


def _rich_console() -> Any | None:
    """A rich console on stderr when stderr is a terminal (or a notebook); None when it is a log."""
    if not sys.stderr.isatty() and "ipykernel" not in sys.modules:
        return None
    from rich.console import Console

    console = Console(file=sys.stderr)
    return console if console.is_terminal or console.is_jupyter else None


@contextmanager
def progress_bar(total: int, description: str, *, enabled: bool = True) -> Iterator[Any]:
    """``with progress_bar(n, "scoring") as bar: bar.advance(k)``; shows on stderr (see the module's docstring).

    Nothing shows when ``enabled`` is false, ``total`` is 0 (nothing to do: no ``0/0`` bar) or this process is
    not rank 0 of a launched job. ``bar.advance(k, stored=True)`` marks a chunk just stored (a log line).
    """
    if not enabled or total <= 0 or not _on_rank_0():
        yield _Null()
        return
    console = _rich_console()
    if console is None:
        bar = LogBar(total, description, interval=log_interval()).start()
        try:
            yield bar
        except BaseException:
            bar.close(stopped=True)
            raise
        bar.close()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=False, disable=False) as p:
        yield _Bar(p, p.add_task(description, total=total))
