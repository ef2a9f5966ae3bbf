"""Which threads call a function during a test: ``calling_threads(monkeypatch, module, name)``."""

from __future__ import annotations

import threading
from typing import Any

import pytest

#: The names of the threads a run reads its files on (the runner's prefetch thread, the loading pool's threads).
READ_AHEAD = ("connote-prefetch", "connote-load")


def calling_threads(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> set[str]:
    """Replace ``module.name`` by a wrapper that records the name of each thread calling it; returns the set the
    names are added to (filled as the test runs)."""
    threads: set[str] = set()
    real = getattr(module, name)

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.add(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, recording)
    return threads


def read_ahead(threads: set[str]) -> bool:
    """Every recorded call ran on a read-ahead thread, and there was one."""
    return bool(threads) and all(t.startswith(READ_AHEAD) for t in threads)
