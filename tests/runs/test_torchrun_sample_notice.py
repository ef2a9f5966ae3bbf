"""Under torchrun only rank 0 writes the sample set and prints its notice and the results (issue 22, item 8): two
gloo ranks on loopback, started as torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR/PORT), a tiny CLIP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests import tiny_models  # noqa: E402

pytest.importorskip("accelerate")
pytest.importorskip("transformers")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_ranks(args: list[str], cwd: Path) -> list[tuple[int, str, str]]:
    import connote

    port = _free_port()
    procs = []
    for rank in range(2):
        env = {**os.environ, "PYTHONPATH": str(Path(connote.__file__).resolve().parents[1]), "OMP_NUM_THREADS": "1",
               "HF_HUB_OFFLINE": "1", "WORLD_SIZE": "2", "RANK": str(rank), "LOCAL_RANK": str(rank),
               "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs.append(subprocess.Popen([sys.executable, "-m", "connote", *args], cwd=cwd, env=env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    results = []
    try:
        for p in procs:
            stdout, stderr = p.communicate(timeout=300)
            results.append((p.returncode, stdout, stderr))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return results


@pytest.mark.slow
@pytest.mark.parametrize("command", [["probe"], ["explain", "--sample", "2", "--figures", "0"]])
def test_only_rank_0_writes_the_sample_and_speaks(command, tmp_path):
    clip = tiny_models.tiny_clip(tmp_path / "clip")
    out = tmp_path / "run"
    (rc0, out0, err0), (rc1, out1, err1) = _two_ranks([*command, "--model", f"hf-clip:{clip}", "--out", str(out)],
                                                       tmp_path)
    assert (rc0, rc1) == (0, 0), (err0[-3000:], err1[-3000:])
    notice = "no --data: using the sample probe set written to"
    assert err0.count(notice) == 1 and notice not in err1
    assert err0.count("loading model") == 1 and "loading model" not in err1
    assert "run folder" in out0 and out1 == ""
    results = json.loads((out / "results.json").read_text())
    assert results["world_size"] == 2 and results["n_failed"] == 0
    assert results.get("n_items", results.get("n_pairs")) == (18 if command == ["probe"] else 2)
