"""Index tensors made from Python lists without waiting for the GPU, and read back without waiting either.

On CUDA a blocking host-to-device copy (``torch.as_tensor(values, device="cuda")``, ``t.to("cuda")``) synchronises
the stream: the CPU waits until every kernel queued before it has run, so it cannot queue the next scoring batch
while the GPU works on this one. Reading an index back (``idx.tolist()``) waits the same way. A scoring batch made
several such copies and reads (its padded ids, its row index, the groups of rows by image, where its scores go).

:func:`device_index` makes the index from pinned memory with a non-blocking copy (torch's pinned allocator keeps
the source until the copy has run) and remembers the values it was made from; :func:`index_values` gives them
back without a read from the device; :func:`upload` moves any CPU tensor so. On a CPU they are the plain
operations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from connote.core.registry import require

__all__ = ["device_index", "index_values", "upload"]


def upload(tensor: Any, device: Any) -> Any:
    """``tensor`` (on the CPU) on ``device``: on CUDA from pinned memory without waiting for queued work."""
    if str(device).startswith("cuda") and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor if str(tensor.device) == str(device) else tensor.to(device)


def device_index(values: Iterable[int], device: Any) -> Any:
    """A long tensor of ``values`` on ``device`` (see the module's docs) that remembers them for
    :func:`index_values`."""
    torch = require("torch", "hf")
    values = [int(v) for v in values]
    index = upload(torch.tensor(values, dtype=torch.long), device)
    index.connote_values = values
    return index


def index_values(index: Any) -> list[int]:
    """The values of an index tensor: those :func:`device_index` made it from, else read from it (a sync on a
    GPU)."""
    values = getattr(index, "connote_values", None)
    return list(values) if values is not None else index.tolist()
