"""A long run's log shows its progress while it runs (issue 40): with stderr redirected to a file, a real command
writes plain progress lines (done/total, rate, elapsed, time left) as chunks are stored, before its closing line;
under a two-process torchrun only rank 0 writes them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.two_ranks import two_ranks

PROGRESS = re.compile(r"^pairs: 18 to compute(?P<share>; rank 0's share of 2)?: (?P<done>\d+)/(?P<total>\d+) "
                      r"\(\d+%\), .*elapsed \d+:\d\d, about \d+:\d\d left, chunk stored$")


def _progress(lines: list[str]) -> list[tuple[int, int]]:
    return [(int(m["done"]), int(m["total"])) for m in map(PROGRESS.match, lines) if m]


@pytest.mark.slow
def test_a_command_with_stderr_in_a_file_logs_progress_before_it_ends(tmp_path: Path) -> None:
    log = tmp_path / "err.log"
    env = {**os.environ, "CONNOTE_PROGRESS_INTERVAL": "0", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    with open(log, "w") as err:  # as `connote ... 2> err.log` in a cluster job
        done = subprocess.run([sys.executable, "-m", "connote", "cv-probes", "run", "--chunk", "4",
                               "--out", str(tmp_path / "run")], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=err, text=True, timeout=300)
    lines = log.read_text().splitlines()
    assert done.returncode == 0, lines[-20:]
    steps = _progress(lines)
    # one line per stored chunk of 4 pairs, each before the run's closing lines
    assert steps == [(4, 18), (8, 18), (12, 18), (16, 18), (18, 18)], lines
    first = next(i for i, ln in enumerate(lines) if PROGRESS.match(ln))
    assert lines.index("18 pairs: 0 stored, 18 to compute") < first
    assert first < next(i for i, ln in enumerate(lines) if ln.startswith("pairs: 18 to compute: done 18/18 in "))
    # the run's summary, then its speed (what this run computed itself)
    assert lines[-2:][0] == "pairs: 18 item(s): 0 resumed, 18 computed now, 0 failed"
    assert lines[-1].startswith("speed: 18 item")


@pytest.mark.slow
def test_under_torchrun_only_rank_0_logs_progress(tmp_path: Path) -> None:
    pytest.importorskip("accelerate")
    (rc0, _, err0), (rc1, _, err1) = two_ranks(["cv-probes", "run", "--chunk", "4", "--out", str(tmp_path / "run")],
                                               tmp_path, env={"CONNOTE_PROGRESS_INTERVAL": "0"})
    assert (rc0, rc1) == (0, 0), (err0[-3000:], err1[-3000:])
    lines0 = err0.splitlines()
    steps = _progress(lines0)
    assert steps and all(PROGRESS.match(ln)["share"] for ln in lines0 if PROGRESS.match(ln)), lines0
    share = steps[-1][1]
    assert 0 < share < 18 and steps[-1][0] == share and [d for d, _ in steps] == sorted(d for d, _ in steps)
    assert "to compute" not in err1 and "chunk stored" not in err1, err1
