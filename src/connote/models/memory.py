"""What a batch that does not fit in memory does, and how much memory a piece of work took.

* :func:`halve_on_oom`: the one mechanism by which a batch the device cannot hold is split in halves and
  retried (``torch.OutOfMemoryError`` on an accelerator, ``MemoryError`` on a CPU), the caller told the new
  size so that later batches start from it; a batch of one that still does not fit is an error.
  Generation (``git-llava``) and the matching engine (its encoder and scoring batches) both use it.
* :func:`layer_bytes`: a transformer layer's transient bytes on one sequence, what the plans count for activations.
* :class:`PeakRSS`: the peak resident memory of this process over a block of code (Linux: the kernel's
  high-water mark, reset on entry), what the memory tests and ``benchmarks/`` compare the plans against.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def out_of_memory_errors() -> tuple[type[BaseException], ...]:
    """The errors that mean "this batch does not fit": torch's (accelerators) and Python's own (CPU)."""
    try:
        import torch

        return (torch.OutOfMemoryError, MemoryError)
    except (ImportError, AttributeError):
        return (MemoryError,)


def release_memory() -> None:
    """Give back what a failed batch left: Python garbage and, where there is one, the CUDA allocator's cache."""
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


def halve_on_oom(run: Callable[[Sequence[T]], list[Any]], rows: Sequence[T],
                 lower: Callable[[int, int], None]) -> list[Any]:
    """``run(rows)``; if it runs out of memory, ``run`` on each half of ``rows`` (recursively), after
    ``lower(half, len(rows))`` has told the caller the size that fits better. ``run`` returns one list whose
    parts for the two halves are concatenated (an item each, or anything the caller joins)."""
    try:
        return run(rows)
    except out_of_memory_errors():
        if len(rows) <= 1:
            raise
    release_memory()  # outside the handler: the failed batch's frames (and tensors) are gone by now
    half = (len(rows) + 1) // 2
    lower(half, len(rows))
    return halve_on_oom(run, rows[:half], lower) + halve_on_oom(run, rows[half:], lower)


def layer_bytes(config: Any, tokens: int, element_size: int, eager: bool = True) -> int:
    """Transient bytes of one transformer layer (``config``: its ``hidden_size``, ``num_attention_heads``,
    ``intermediate_size``) on one sequence of ``tokens``: the attention scores and probabilities (eager attention
    keeps both; a fused kernel none), the MLP's inner activations, and a handful of residual-stream copies. What
    the engine's plans count for an encoder's activations (``TensorMatcher.encoder_bytes_per_image``, FLAVA's
    multimodal encoder per pair)."""
    width, heads = int(config.hidden_size), int(config.num_attention_heads)
    inner = int(getattr(config, "intermediate_size", 4 * width))
    scores = 2 * heads * tokens * tokens if eager else 0
    return element_size * (scores + 2 * tokens * inner + 8 * tokens * width)


class PeakRSS:
    """Peak resident memory over a ``with`` block, in bytes above the resident memory on entry (``peak``).

    Reads ``VmHWM`` of ``/proc/self/status`` after resetting it through ``/proc/self/clear_refs`` (Linux).
    glibc keeps freed heap memory for reuse, which this cannot see as allocation; a process started with
    ``MALLOC_MMAP_THRESHOLD_=65536`` maps every large block on its own and returns it on free, so that the
    figure is the live allocations' peak (the memory tests run their measurements that way).
    """

    def __init__(self) -> None:
        self.start = 0
        self.peak = 0

    @staticmethod
    def _status(key: str) -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
        raise OSError(f"/proc/self/status has no {key}")

    @classmethod
    def available(cls) -> bool:
        try:
            cls._status("VmHWM")
            return Path("/proc/self/clear_refs").exists()
        except OSError:
            return False

    def __enter__(self) -> PeakRSS:
        gc.collect()
        Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts again from the current RSS
        self.start = self._status("VmRSS")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.peak = max(0, self._status("VmHWM") - self.start)
