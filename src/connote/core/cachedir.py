"""Where connote keeps derived data it can rebuild (metric indexes, embedded-encoder tables).

``$CONNOTE_CACHE``, else ``$XDG_CACHE_HOME/connote``, else ``~/.cache/connote``. It sits at the bottom layer so
that every package can find it without importing another (``connote.metrics.cache`` lists and clears it).
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The root of connote's caches."""
    root = os.environ.get("CONNOTE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "connote")
    return Path(root)
