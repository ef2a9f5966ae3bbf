"""Sharding over torch.distributed ranks, through accelerate's ``PartialState``.

Launched with ``torchrun`` or ``accelerate launch`` (``WORLD_SIZE > 1``), ``PartialState`` initialises
the process group from the environment (gloo on CPU, NCCL on GPU); each rank takes every ``world``-th
work unit, writes its rows to the shared run store, and rank 0 writes the summary after a barrier.
A single process needs none of it and imports nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from connote.core.registry import require


@dataclass
class Dist:
    """This process's place in the run: rank, world size, and the state that owns the process group."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    _state: Any = None
    _initialised_here: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world > 1:
            self._state.wait_for_everyone()

    def agree(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank (a plain value: str, number, None); identity in one process."""
        if self.world <= 1:
            return value
        import torch.distributed as tdist

        box = [value if self.is_main else None]
        tdist.broadcast_object_list(box, src=0)
        return box[0]

    def shard(self, units: list[Any]) -> list[Any]:
        """This rank's share: every ``world``-th unit, so all ranks agree without talking."""
        return units[self.rank::self.world]

    def close(self) -> None:
        if self._initialised_here:
            self._state.destroy_process_group()


def launched_rank() -> int:
    """This process's rank as the launcher set it (``RANK``; 0 outside torchrun/accelerate), before any init."""
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


def init_distributed() -> Dist:
    """The current process's ``Dist`` (a plain single process unless launched with ``WORLD_SIZE > 1``)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return Dist()
    require("torch", "hf")
    accelerate = require("accelerate", "hf")
    import torch.distributed as tdist

    here = not tdist.is_initialized()
    state = accelerate.PartialState(cpu=not _cuda())
    return Dist(rank=state.process_index, world=state.num_processes, local_rank=state.local_process_index,
                _state=state, _initialised_here=here)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
