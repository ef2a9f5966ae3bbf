"""connote's metric caches: where they are, how big, and clearing them (``connote score --clear-cache``).

All are derived data, rebuilt on next use: the METEOR paraphrase index
(``<root>/meteor/paraphrase-v6-*``, ~120 MB for pycocoevalcap's paraphrase-en.gz, built in ~30 s), the jar's
synonym tables decompressed (``<root>/meteor/synonyms-v1-*``, ~5 MB),
parsed WordNet synonym tables (``<root>/wordnet/*.json``, only when WordNet synonyms are asked for) and
the embedded encoder's ImageNet label embeddings (``<root>/embedded/*.npy``, 1.5 MB) and the sample photos'
pixels (``<root>/sample-photos/*.png``, ~4 MB, read instead of importing scikit-learn and scikit-image).
``<root>`` is ``$CONNOTE_CACHE``, else ``$XDG_CACHE_HOME/connote``, else ``~/.cache/connote``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from connote.core.cachedir import cache_root

SUBDIRS = ("meteor", "wordnet", "embedded", "sample-photos")




def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def cache_entries() -> list[tuple[Path, int]]:
    """Every cache entry (a folder or file under ``meteor/`` and ``wordnet/``) with its size in bytes."""
    out = []
    for sub in SUBDIRS:
        d = cache_root() / sub
        if d.is_dir():
            out += [(p, _size(p)) for p in sorted(d.iterdir())]
    return out


def clear_caches() -> tuple[list[Path], int]:
    """Delete every metric cache entry; returns the removed paths and the bytes freed."""
    removed, freed = [], 0
    for path, size in cache_entries():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        if not path.exists():
            removed.append(path)
            freed += size
    return removed, freed
