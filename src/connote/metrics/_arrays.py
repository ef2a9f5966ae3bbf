"""Two NumPy idioms the array-based metrics share (ragged data as flat arrays plus offsets)."""

from __future__ import annotations

import numpy as np


def offsets(counts) -> np.ndarray:
    """``[0, c0, c0 + c1, ...]``: where each of the ``len(counts)`` runs starts in the flat array, and the end."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def ranges(starts, counts) -> np.ndarray:
    """The indices ``starts[i], ..., starts[i] + counts[i] - 1`` of every run, concatenated in order."""
    starts = np.asarray(starts, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    return np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()), dtype=np.int64)


def distinct(values) -> np.ndarray:
    """The sorted distinct values of an array: ``np.unique`` without its hash table (whose first use also
    imports ``numpy.ma``; on int64 arrays of 10^5 values it costs ~40x a plain sort)."""
    out = np.sort(values)
    if len(out) > 1:
        out = out[np.concatenate(([True], out[1:] != out[:-1]))]
    return out
