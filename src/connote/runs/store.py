"""The run store.

Every per-item result is written to ``<run>/store.sqlite`` as soon as its batch is computed,
keyed by ``(fingerprint, item_id)``. The fingerprint hashes everything that changes a result
(backend, weights id/path and revision, dtype, prompt version, calibration, task settings), so
re-running the same command resumes and a different model never reuses another's rows.
SQLite in WAL mode with a commit per batch means a kill loses at most the batch in flight.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sqlite3
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    fingerprint TEXT NOT NULL,
    item_id TEXT NOT NULL,
    data TEXT NOT NULL,
    error TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (fingerprint, item_id)
);
CREATE TABLE IF NOT EXISTS fingerprints (
    fingerprint TEXT PRIMARY KEY,
    description TEXT NOT NULL
);
"""


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def fingerprint(description: Mapping[str, Any]) -> str:
    """A short stable hash of a settings mapping (order-insensitive)."""
    return hashlib.sha256(_canonical(description).encode()).hexdigest()[:16]


class RunStore:
    """Per-item results of one run folder, resumable and safe to kill.

    >>> import tempfile
    >>> store = RunStore(tempfile.mkdtemp())
    >>> fp = store.register({"backend": "demo"})
    >>> store.put(fp, [{"item_id": "a", "p": 0.5, "error": None}])
    >>> sorted(store.done_ids(fp))
    ['a']
    """

    def __init__(self, folder: str | Path, filename: str = "store.sqlite") -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / filename
        self._con = sqlite3.connect(self.path, timeout=60)
        self._con.execute("PRAGMA journal_mode=WAL")
        self._con.execute("PRAGMA synchronous=NORMAL")
        self._con.executescript(SCHEMA)
        self._con.commit()

    def register(self, description: Mapping[str, Any]) -> str:
        fp = fingerprint(description)
        self._con.execute(
            "INSERT OR IGNORE INTO fingerprints VALUES (?, ?)", (fp, _canonical(description))
        )
        self._con.commit()
        return fp

    def done_ids(self, fp: str, *, include_errors: bool = False) -> set[str]:
        """Items already finished; errored items are retried unless ``include_errors``."""
        q = "SELECT item_id FROM results WHERE fingerprint = ?"
        if not include_errors:
            q += " AND error IS NULL"
        return {r[0] for r in self._con.execute(q, (fp,))}

    def put(self, fp: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Write rows (each with ``item_id`` and optional ``error``) in one transaction."""
        now = time.time()
        data = [
            (fp, str(r["item_id"]), _canonical(dict(r)), r.get("error"), now) for r in rows
        ]
        with self._con:
            self._con.executemany(
                "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?)", data
            )

    def rows(self, fp: str) -> dict[str, dict[str, Any]]:
        """All rows of a fingerprint, by item id."""
        cur = self._con.execute(
            "SELECT item_id, data FROM results WHERE fingerprint = ?", (fp,)
        )
        return {item_id: json.loads(data) for item_id, data in cur}

    def fingerprints(self) -> dict[str, dict[str, Any]]:
        cur = self._con.execute("SELECT fingerprint, description FROM fingerprints")
        return {fp: json.loads(d) for fp, d in cur}

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_metadata(config: Mapping[str, Any], *, seed: int | None = None,
                 packages: Iterable[str] = ("torch", "transformers", "numpy", "scipy")) -> dict[str, Any]:
    """Resolved config, versions and seed written beside every run's results."""
    from importlib import metadata

    import connote

    versions = {"connote": connote.__version__, "python": sys.version.split()[0],
                "platform": platform.platform()}
    for name in packages:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"config": dict(config), "versions": versions, "seed": seed,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def write_json(path: str | Path, obj: Any) -> None:
    """Write JSON atomically (temp file + rename) so readers never see half a file."""
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)
