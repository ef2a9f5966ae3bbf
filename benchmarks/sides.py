"""What each side of a two-sided benchmark does in its own process (``probe_throughput.py``,
``generation.py``): quiet transformers, time one call with the load average and CPU time beside it,
read the process's peak memory, and hand the figures back to the parent as one ``RESULT`` JSON line.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def quiet(threads: int | None) -> None:
    """No transformers warnings or progress bars; ``threads`` torch threads when given."""
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if threads:
        torch.set_num_threads(threads)


def timed(fn: Any, device: str) -> tuple[Any, dict[str, Any]]:
    """``fn()`` timed (CUDA synchronised, its peak memory counted from here), with its figures."""
    import torch

    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    load_before = os.getloadavg()[0]
    cpu_before = time.process_time()
    t = time.perf_counter()
    value = fn()
    if cuda:
        torch.cuda.synchronize()
    figures: dict[str, Any] = {"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - cpu_before,
                               "peak_rss": peak_rss_bytes(), "torch_threads": torch.get_num_threads(),
                               "load_average": (load_before, os.getloadavg()[0])}
    if cuda:
        figures["peak_cuda"] = torch.cuda.max_memory_allocated()
    return value, figures


def report(result: dict[str, Any]) -> None:
    print("RESULT " + json.dumps(result))


def run_worker(cmd: list[str], label: str) -> dict[str, Any]:
    """Run one side (``cmd``: this interpreter and a script) with connote's source first on the path; its
    ``RESULT`` line, plus ``shell_seconds`` (the whole process). A failing side stops the benchmark."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, *cmd], capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        sys.exit(f"the {label} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    result["shell_seconds"] = time.perf_counter() - t
    return result


def _die_with_parent() -> None:
    """In the child, before exec: the kernel ends it when its parent dies (Linux; elsewhere nothing), so a
    benchmark killed at its time limit leaves no worker holding the GPU."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def stream_worker(cmd: list[str], label: str, on_result: Any) -> int:
    """Run one side like :func:`run_worker`, but hand each ``RESULT`` line to ``on_result(dict)`` as it is
    printed (a side that measures several things reports each when it has it, so a time limit keeps what was
    measured); returns the exit status, with the side's stderr tail printed when it fails."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    import threading

    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True)  # never blocks on a full pipe
    reader.start()
    for line in proc.stdout:
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
            result["shell_seconds"] = time.perf_counter() - t
            on_result(result)
    code = proc.wait()
    reader.join(5)
    if code:
        print(f"the {label} failed (exit {code}):\n{''.join(err)[-3000:]}", file=sys.stderr, flush=True)
    return code
