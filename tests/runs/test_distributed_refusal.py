"""Under a launcher that does not tear down the other ranks (srun, mpirun, hand-started processes),
rank 0's refusal of the run folder must stop every rank with exit 2 and the same message (before, rank 1
died with a gloo traceback once rank 0 had gone)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from connote.runs.store import RunStore
from tests.support.two_ranks import free_port

pytest.importorskip("accelerate")

SCRIPT = """
import sys
from connote.core.errors import ConnoteError
from connote.runs.runner import WorkItem, run_items

items = [WorkItem(item_id=str(i), key=str(i), payload=i) for i in range(4)]
try:
    run_items(sys.argv[1], {"task": "t"}, items, lambda b: [{"v": it.payload} for it in b],
              on_error=lambda it, m: {"v": None, "error": m}, progress=False)
except ConnoteError as exc:
    print(f"refused: {exc}", flush=True)
    sys.exit(exc.exit_code)
print("ran", flush=True)
"""


@pytest.mark.slow
def test_every_rank_stops_when_rank_0_finds_the_folder_locked(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    holder = RunStore(out, lock=True)  # another run is writing into the folder
    try:
        port = free_port()
        procs = []
        for rank in range(2):
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1",
                   "WORLD_SIZE": "2", "RANK": str(rank), "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2",
                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
            procs.append(subprocess.Popen([sys.executable, "-c", SCRIPT, str(out)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        results = []
        for p in procs:
            try:
                stdout, stderr = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                pytest.fail("a rank was still waiting 120 s after rank 0 refused the folder")
            results.append((p.returncode, stdout, stderr))
    finally:
        holder.close()
    assert [rc for rc, _, _ in results] == [2, 2], results
    assert "another connote run" in results[0][1]
    assert "rank 0 refused the run folder" in results[1][1] and "another connote run" in results[1][1]
