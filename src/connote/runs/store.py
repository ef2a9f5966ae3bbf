"""The run store.

Every per-item result is written to ``<run>/store.sqlite`` as soon as its batch is computed, under
two keys:

* the run **fingerprint** hashes everything that changes every result of the run: the task and its
  version, the model's ``describe()`` (backend, weights identity and revision/commit or content hash,
  dtype, prompt, calibration) and the task settings;
* the **item key** hashes everything that changes this one item's result: its content (caption text,
  kinds, label, the image or video bytes' digest, ...).

A stored row is reused only when both keys are unchanged, so an edited caption, a replaced image or
another manifest with the same ids is computed again, and a different model never reuses another's
rows. SQLite in WAL mode with a commit per batch means a kill loses at most the batch in flight.
A lock file keeps a second run from writing into the same folder at the same time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from connote.core.errors import InputError

#: Bumped when the layout of ``store.sqlite`` changes; rows of an older layout are never reused.
SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    fingerprint TEXT NOT NULL,
    item_id TEXT NOT NULL,
    item_key TEXT NOT NULL,
    data TEXT NOT NULL,
    error TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (fingerprint, item_id)
);
CREATE TABLE IF NOT EXISTS fingerprints (
    fingerprint TEXT PRIMARY KEY,
    description TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS models (
    identity TEXT PRIMARY KEY,
    memo TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS set_aside (
    fingerprint TEXT NOT NULL,
    item_id TEXT NOT NULL,
    data TEXT,
    reason TEXT NOT NULL,
    created REAL NOT NULL
);
"""


TABLE_COLUMNS = {"items": ("fingerprint", "item_id", "item_key", "data", "error", "created"),
                 "fingerprints": ("fingerprint", "description"), "models": ("identity", "memo"),
                 "set_aside": ("fingerprint", "item_id", "data", "reason", "created")}


def damage(data: Any, item_id: str | None = None) -> str | None:
    """Why a stored row's ``data`` cannot be the row of ``item_id`` (not text, not JSON, not a JSON object, or an
    object without that ``item_id``, which every row :meth:`RunStore.put` writes carries), or None."""
    if not isinstance(data, str):
        return f"not text ({type(data).__name__})"
    try:
        row = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return f"not JSON ({str(exc)[:80]})"
    if not isinstance(row, dict):
        return f"a JSON {type(row).__name__}, not an object"
    if item_id is not None and row.get("item_id") != item_id:
        return f"an object whose item_id is {row.get('item_id')!r}, not {item_id!r}"
    return None


def canonical_json(obj: Any) -> str:
    """Order-insensitive JSON used for every hash in the store."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def fingerprint(description: Mapping[str, Any]) -> str:
    """A short stable hash of a settings mapping (order-insensitive)."""
    return hashlib.sha256(canonical_json(description).encode()).hexdigest()[:16]


def content_key(content: Mapping[str, Any]) -> str:
    """The item key: a hash of everything about one item that changes its result."""
    return hashlib.sha256(canonical_json(content).encode()).hexdigest()[:24]


class RunLockedError(InputError):
    """Another process is writing into the same run folder."""


_HELD: dict[Path, Any] = {}  # run folders this process has locked for a whole command (see hold_run_folder)


def _lock_folder(folder: Path) -> Any:
    """Take the run folder's lock (``.connote.lock``, a ``filelock.FileLock``: flock on Unix, a byte lock on
    Windows) or raise RunLockedError naming the holder. The holder writes its pid into the file; release with
    ``.release()``, which also removes the file (:class:`_FolderLock`)."""
    from filelock import FileLock, Timeout

    path = folder / ".connote.lock"
    lock = FileLock(path, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            holder = path.read_text(encoding="utf-8", errors="replace").strip()[:64]
        except OSError:
            holder = ""
        raise RunLockedError(f"another connote run ({holder or 'another process'}) is writing into this run "
                             "folder; wait for it to finish or choose another --out", path=folder) from None
    path.write_text(f"pid {os.getpid()}", encoding="utf-8")  # for the message of a refused second run
    return _FolderLock(lock, path)


class _FolderLock:
    """A held run-folder lock whose file goes with it: a finished or failed run leaves no ``.connote.lock``.

    The file is removed while the lock is still held, so no other run can hold it then; a run that opened the
    old file meanwhile finds it unlinked once it gets the lock, and filelock retries on a fresh file."""

    def __init__(self, lock: Any, path: Path) -> None:
        self._lock, self.path = lock, path

    def release(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
        self._lock.release()


def _run_folder(folder: str | Path) -> Path:
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError("the run folder is an existing file, not a folder", path=folder)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def hold_run_folder(folder: str | Path, *, enabled: bool = True) -> Iterator[Path]:
    """Lock a run folder for a whole command, before anything is written into it or any model loads.

    A second command into the same folder is then refused at once, not after its model has loaded; the
    :class:`RunStore` this process opens there later uses the lock it already holds. ``enabled=False``
    (ranks other than 0 of a distributed run, which never hold the lock) yields the folder unlocked.
    """
    created = not Path(folder).exists()
    folder = _run_folder(folder)
    key = folder.resolve()
    if not enabled or key in _HELD:
        yield folder
        return
    _HELD[key] = _lock_folder(folder)
    try:
        yield folder
    finally:
        _HELD.pop(key).release()
        if created:  # a command refused before it wrote anything (a bad manifest) leaves no empty folder behind
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty


class RunStore:
    """Per-item results of one run folder, resumable and safe to kill.

    >>> import tempfile
    >>> store = RunStore(tempfile.mkdtemp())
    >>> fp = store.register({"backend": "demo"})
    >>> store.put(fp, [{"item_id": "a", "item_key": "k1", "p": 0.5, "error": None}])
    >>> store.reusable(fp, {"a": "k1"}), store.reusable(fp, {"a": "k2"})
    ({'a'}, set())
    """

    def __init__(self, folder: str | Path, filename: str = "store.sqlite", *, lock: bool = False) -> None:
        self.folder = _run_folder(folder)
        self.path = self.folder / filename
        self._lock: Any = None
        if lock:
            self._acquire_lock()
        try:
            self._con = sqlite3.connect(self.path, timeout=60)
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute("PRAGMA synchronous=NORMAL")
            version = self._con.execute("PRAGMA user_version").fetchone()[0]
            if version < SCHEMA_VERSION:
                # rows written before items were keyed by content cannot be checked: never reuse them
                self._con.executescript("DROP TABLE IF EXISTS results;")
                self._con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._con.executescript(SCHEMA)
            self._con.commit()
            for table, columns in TABLE_COLUMNS.items():
                found = [r[1] for r in self._con.execute(f"PRAGMA table_info({table})")]
                if found != list(columns):
                    self._con.close()
                    raise sqlite3.DatabaseError(f"table {table} has columns {', '.join(found)}, not "
                                                f"{', '.join(columns)} (another program's or version's store)")
        except sqlite3.OperationalError as exc:
            self._release_lock()
            if "locked" in str(exc) or "busy" in str(exc):
                raise InputError(f"the run store stayed busy for 60 s ({exc}); is another process writing to it?",
                                 path=self.path) from None
            raise InputError(f"the run store cannot be opened ({exc})", path=self.path) from None
        except sqlite3.DatabaseError as exc:
            self._release_lock()
            raise InputError(f"the run store is damaged or not a SQLite file ({exc}); move it aside "
                             f"(mv {self.path} {self.path}.bad) and run again to recompute",
                             path=self.path) from None

    # ---- locking -------------------------------------------------------------------------
    def _acquire_lock(self) -> None:
        if self.folder.resolve() in _HELD:  # this command holds the folder already (hold_run_folder)
            return
        self._lock = _lock_folder(self.folder)

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    # ---- rows ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _sql(self) -> Iterator[None]:
        """SQLite failures while reading or writing rows, as one line naming the store and what to do."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "full" in str(exc).lower():
                raise InputError(f"the disk is full ({exc}); every batch committed before is kept: free space and "
                                 "run the same command again to resume", path=self.path) from None
            raise InputError(f"the run store failed ({exc}); move it aside (mv {self.path} {self.path}.bad) and run "
                             "again to recompute", path=self.path) from None
        except (sqlite3.DatabaseError, json.JSONDecodeError) as exc:
            raise InputError(f"the run store is damaged ({type(exc).__name__}: {exc}); move it aside (mv {self.path} "
                             f"{self.path}.bad) and run again to recompute", path=self.path) from None

    def register(self, description: Mapping[str, Any]) -> str:
        fp = fingerprint(description)
        with self._sql():
            self._con.execute("INSERT OR IGNORE INTO fingerprints VALUES (?, ?)", (fp, canonical_json(description)))
            self._con.commit()
        return fp

    def reusable(self, fp: str, keys: Mapping[str, str]) -> set[str]:
        """Ids whose stored row has no error, was computed from the same item content (``keys``) and is intact
        (a damaged row is never reused: :meth:`set_aside_damaged`)."""
        with self._sql():
            cur = self._con.execute("SELECT item_id, item_key, data FROM items WHERE fingerprint = ? AND error IS "
                                    "NULL", (fp,))
            return {item_id for item_id, key, data in cur if keys.get(item_id) == key and damage(data, item_id) is None}

    def set_aside_damaged(self, fp: str) -> dict[str, str]:
        """Move the rows of ``fp`` whose data is not their row (:func:`damage`) out of the items into ``set_aside``
        (kept there, never read again), so their items are computed again; returns item id -> what was wrong. One
        damaged row never blocks the run."""
        with self._sql():
            cur = self._con.execute("SELECT item_id, data FROM items WHERE fingerprint = ?", (fp,))
            bad = {item_id: (data, why) for item_id, data in cur if (why := damage(data, item_id)) is not None}
        if bad:
            now = time.time()
            with self._sql(), self._con:
                self._con.executemany("INSERT INTO set_aside VALUES (?, ?, ?, ?, ?)",
                                      [(fp, i, d if isinstance(d, str) else None, why, now)
                                       for i, (d, why) in bad.items()])
                self._con.executemany("DELETE FROM items WHERE fingerprint = ? AND item_id = ?",
                                      [(fp, i) for i in bad])
        return {i: why for i, (_, why) in bad.items()}

    def done_ids(self, fp: str, *, include_errors: bool = False) -> set[str]:
        """Items with a stored row (content not checked; use :meth:`reusable` to decide reuse)."""
        q = "SELECT item_id FROM items WHERE fingerprint = ?"
        if not include_errors:
            q += " AND error IS NULL"
        with self._sql():
            return {r[0] for r in self._con.execute(q, (fp,))}

    def put(self, fp: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Write rows (each with ``item_id``, ``item_key`` and optional ``error``) in one transaction."""
        now = time.time()
        data = [(fp, str(r["item_id"]), str(r.get("item_key") or ""), canonical_json(dict(r)), r.get("error"), now)
                for r in rows]
        with self._sql(), self._con:
            self._con.executemany("INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?, ?, ?)", data)

    def rows(self, fp: str) -> dict[str, dict[str, Any]]:
        """All rows of a fingerprint, by item id (a row that is not a JSON object: the store is damaged)."""
        with self._sql():
            cur = self._con.execute("SELECT item_id, data FROM items WHERE fingerprint = ?", (fp,))
            rows = {item_id: json.loads(data) for item_id, data in cur}
            bad = next((i for i, r in rows.items() if not isinstance(r, dict)), None)
            if bad is not None:
                raise sqlite3.DatabaseError(f"the row of item {bad!r} is not a JSON object")
            return rows

    def remember_model(self, identity: str, memo: Mapping[str, Any]) -> None:
        """Keep a built model's description under its identity (:mod:`connote.models.lazy`), so a later run
        whose rows are all stored knows its fingerprint without building the model."""
        with self._sql(), self._con:
            self._con.execute("INSERT OR REPLACE INTO models VALUES (?, ?)", (identity, canonical_json(memo)))

    def remembered_model(self, identity: str) -> dict[str, Any] | None:
        with self._sql():
            row = self._con.execute("SELECT memo FROM models WHERE identity = ?", (identity,)).fetchone()
        return None if row is None else json.loads(row[0])

    def fingerprints(self) -> dict[str, dict[str, Any]]:
        with self._sql():
            cur = self._con.execute("SELECT fingerprint, description FROM fingerprints")
            return {fp: json.loads(d) for fp, d in cur}

    def close(self) -> None:
        self._con.close()
        self._release_lock()

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


#: The file in a run folder that records its results and fingerprint; ``run.json`` (VIST's stories, VMC's captions
#: and metaphor synth runs) and ``judge.json`` (judges) are the names used before, still read in folders written
#: then (:func:`results_path`).
RESULTS_FILE, OLD_RESULTS_FILES = "results.json", ("run.json", "judge.json")
#: Every name a run folder's results file has had, the current one first.
RESULTS_FILES = (RESULTS_FILE, *OLD_RESULTS_FILES)


def results_path(folder: str | Path, name: str = RESULTS_FILE) -> Path:
    """The results file of run folder ``folder``: its ``name`` (a task's ``results_file``), else the ``run.json``
    or ``judge.json`` of a folder written before every task wrote ``results.json`` (``name`` when the folder holds
    none of them)."""
    folder = Path(folder)
    new = folder / name
    if new.is_file():
        return new
    return next((folder / old for old in OLD_RESULTS_FILES if (folder / old).is_file()), new)


def write_json(path: str | Path, obj: Any) -> None:
    """Write JSON atomically (temp file + rename) so readers never see half a file."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _umask()


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """The one safe way to write a file under a run folder: yields a fresh temporary path beside ``path``
    (created exclusively, so a link planted there is never followed; same suffix, so writers that read the
    format from it work), then renames it over ``path``. A link at ``path`` is replaced, never written
    through; readers never see half a file; on an error nothing is replaced."""
    path = Path(path)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=f".tmp{path.suffix}")
    os.fchmod(fd, 0o666 & ~_UMASK)  # the permissions a plain open() would give, not mkstemp's 0600
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write a file atomically by :func:`replacing` it."""
    with replacing(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def write_text(path: str | Path, text: str) -> None:
    """Write a text file atomically by :func:`replacing` it."""
    write_bytes(path, text.encode("utf-8"))


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write JSON lines atomically."""
    write_text(path, "".join(json.dumps(dict(r), ensure_ascii=False, default=str) + "\n" for r in rows))
