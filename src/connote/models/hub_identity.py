"""What identifies a model's weights in a run's fingerprint: a hub id's resolved commit, a local folder's
content digests (cached in a sidecar beside the weights).

Every backend that loads weights names them through :func:`weights_identity`; :mod:`connote.models.reads`
uses :func:`folder_digests` and :func:`hub_commit` for the sources a backend reads.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from connote.core.files import file_sha256, file_stamp, reachable_files

# Every backend that loads Hugging Face weights imports this module (as it imported hf_itm before the split):
# tokenizers' own thread pool stays off, as it was for all of them (inputs are prepared on connote's threads,
# and a process forked after the pool ran warns and may hang).
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

#: The digest cache kept beside the weights (or under the user cache when the folder is read-only).
DIGEST_SIDECAR = ".connote-sha256.json"


def _sidecar_paths(folder: Path) -> list[Path]:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "connote" / "weight-digests"
    name = hashlib.sha256(str(folder).encode()).hexdigest()[:24] + ".json"
    return [folder / DIGEST_SIDECAR, cache / name]


def _read_sidecar(folder: Path) -> dict[str, Any]:
    for path in _sidecar_paths(folder):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("files"), dict):
            return data["files"]
    return {}


def _write_sidecar(folder: Path, files: dict[str, Any]) -> None:
    text = json.dumps({"format": 1, "files": files}, indent=1, sort_keys=True)
    for path in _sidecar_paths(folder):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
            return
        except OSError:
            continue  # a read-only weights folder: try the user cache; the digest is only a cache


def content_digests(folder: str | Path) -> dict[str, str]:
    """sha256 of every file under ``folder`` (relative path -> hex digest), hidden ones (``.git``, the
    digest sidecar) excepted: a backend may read any file of a local model folder (weights, configs,
    tokenizer files, ``chat_template.jinja``, a processor's extra files), so all of them are covered, also
    behind links (:func:`connote.core.files.reachable_files`).

    Digests are cached in a JSON sidecar keyed by each file's path and stamp (size, mtime, change
    time, inode, device), so a rerun on unchanged weights reads no weights; any rewrite of a file
    changes its change time and so its digest is computed afresh.
    """
    return folder_digests(folder)[0]


def folder_digests(folder: str | Path) -> tuple[dict[str, str], set[str]]:
    """:func:`content_digests` and the real paths of the folders and linked files it read (what the lazy
    identity checks a built model's description against)."""
    folder = Path(folder).resolve()
    files, real = reachable_files(folder)  # through links to folders too (a model folder's linked llm/)
    cached = _read_sidecar(folder)
    digests: dict[str, str] = {}
    entries: dict[str, Any] = {}
    changed = False
    for rel, path in files:
        stamp = file_stamp(path)
        entry = cached.get(rel)
        if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
            digest = entry["sha256"]
        else:
            digest, changed = file_sha256(path), True
        digests[rel] = digest
        entries[rel] = {"stamp": stamp, "sha256": digest}
        if path.is_symlink():
            real.add(os.path.realpath(path))
    if changed or set(entries) != set(cached):
        _write_sidecar(folder, entries)
    return digests, real


#: Files one of which every model, tokenizer or processor repository holds: how a cached snapshot is found.
SNAPSHOT_MARKERS = ("config.json", "tokenizer_config.json", "preprocessor_config.json", "processor_config.json")


def hub_commit(repo_id: str, revision: str | None) -> str | None:
    """The commit a hub id resolves to in the local cache (the snapshot folder of ``revision``, ``main`` when
    None), found by any of :data:`SNAPSHOT_MARKERS` (a tokenizer's repository has no ``config.json``)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    for name in SNAPSHOT_MARKERS:
        try:
            found = try_to_load_from_cache(repo_id, name, revision=revision)
        except Exception:  # an id the hub library rejects has no cached snapshot
            return None
        if isinstance(found, str) and Path(found).parent.parent.name == "snapshots":
            return Path(found).parent.name
    return None


def weights_identity(weights: str, revision: str | None, model: Any) -> dict[str, Any]:
    """What identifies the weights, for the run fingerprint.

    A hub id: the id, the requested revision and the commit it resolved to (the loaded config's
    ``_commit_hash``, else the local cache's snapshot folder). A local folder: its resolved path
    and the sha256 of every weight, config and tokenizer file, so copied-in weights with the same
    sizes and times still change the fingerprint.
    """
    ident: dict[str, Any] = {"weights": weights, "revision": revision}
    path = Path(weights)
    commit = getattr(getattr(model, "config", None), "_commit_hash", None)
    if path.is_dir():
        ident["weights"] = str(path.resolve())
        ident["files"] = content_digests(path)
    elif not commit:
        commit = hub_commit(weights, revision)
    if commit:
        ident["commit"] = commit
    return ident
