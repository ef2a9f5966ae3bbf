"""Sharding over torch.distributed ranks (``torchrun`` / ``accelerate launch``).

Launched with ``WORLD_SIZE > 1`` the process group is initialised from the environment (gloo on
CPU, NCCL on GPU); each rank takes every ``world``-th work unit, writes its rows to the shared
run store, and rank 0 writes the summary after a barrier. A single process needs none of it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass
class Dist:
    rank: int = 0
    world: int = 1
    local_rank: int = 0
    _initialised_here: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world > 1:
            import torch.distributed as dist

            dist.barrier()

    def shard(self, units: list[Any]) -> list[Any]:
        return units[self.rank::self.world]

    def close(self) -> None:
        if self._initialised_here:
            import torch.distributed as dist

            dist.destroy_process_group()


def init_distributed() -> Dist:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Dist()
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    here = False
    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local)
        dist.init_process_group(backend=backend)
        here = True
    return Dist(rank=rank, world=world, local_rank=local, _initialised_here=here)
