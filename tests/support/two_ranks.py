"""Two ranks of a CPU job started as ``torchrun --nproc-per-node 2`` starts them (RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR/PORT on loopback; gloo), each running ``python -m connote ARGS``: the one harness of the tests that
check what a launched command does on each rank."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_ranks(args: list[str], cwd: Path, *, env: Mapping[str, str] | None = None,
              timeout: float = 300) -> list[tuple[int, str, str]]:
    """``[(returncode, stdout, stderr)]`` of rank 0 and rank 1 running ``connote ARGS`` in ``cwd``."""
    import connote

    port = free_port()
    procs = []
    for rank in range(2):
        rank_env = {**os.environ, "PYTHONPATH": str(Path(connote.__file__).resolve().parents[1]),
                    "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "WORLD_SIZE": "2", "RANK": str(rank),
                    "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port), **(env or {})}
        procs.append(subprocess.Popen([sys.executable, "-m", "connote", *args], cwd=cwd, env=rank_env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    results = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=timeout)
            results.append((p.returncode, stdout, stderr))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return results
