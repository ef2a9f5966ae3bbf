"""What each side of a two-sided benchmark does in its own process (``probe_throughput.py``,
``generation.py``): quiet transformers, time one call with the load average and CPU time beside it,
read the process's peak memory, and hand the figures back to the parent as one ``RESULT`` JSON line; and the
parent of an ``eager`` / ``sdpa`` pair on one saved model (``flava_attention.py``, ``blip2_grouped.py``):
:func:`side_args`, :func:`run_sides`, :func:`side_inputs`, :func:`print_sides`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


#: The sides of an attention benchmark: transformers' path, then connote's.
ATTENTION_SIDES = ("eager", "sdpa")


def side_args(ap: argparse.ArgumentParser, argv: list[str] | None, images: int) -> argparse.Namespace:
    """``ap``'s arguments plus ``--images`` (default ``images``), ``--threads`` and the hidden ``--worker SIDE
    --folder DIR`` a side's process is started with."""
    ap.add_argument("--images", type=int, default=images)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--worker", choices=ATTENTION_SIDES, help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def run_sides(script: str, build: Callable[[Path], None], args: argparse.Namespace,
              common: list[str]) -> dict[str, dict[str, Any]]:
    """Each of :data:`ATTENTION_SIDES` in its own process (``script --worker SIDE --folder DIR``, ``args``'s
    images and threads and ``common``) on the one model ``build(DIR)`` saves in a temporary folder; the processes
    run with ``MALLOC_MMAP_THRESHOLD_=65536``, so freed blocks go back to the system and a side's peak resident
    memory is its live peak."""
    os.environ["MALLOC_MMAP_THRESHOLD_"] = "65536"
    common = ["--images", str(args.images), "--threads", str(args.threads), *common]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        build(folder)
        return {side: run_worker([script, "--worker", side, "--folder", str(folder), *common], side)
                for side in ATTENTION_SIDES}


def side_inputs(args: argparse.Namespace, backend: str, captions: int) -> tuple[Any, Any, list[list[int]]]:
    """What a side's process scores: ``backend`` loaded from ``args.folder`` under ``attention=args.worker`` (quiet,
    ``args.threads`` threads; one scoring batch of ``args.images * captions`` pairs, a roomy budget), the states of
    ``args.images`` random photos, each encoded once, and ``captions`` captions of 3 to 18 words as token ids."""
    import torch

    from connote.models import load_model

    quiet(args.threads)
    sys.path.insert(0, str(ROOT))
    from tests.support.tiny_models import random_image

    pairs = args.images * captions
    m = load_model(f"{backend}:{args.folder}?attention={args.worker}&batch_size={pairs}&memory_budget=16GB")
    images = [random_image(s, size=(300, 260)) for s in range(args.images)]
    with torch.inference_mode():
        states = m.encode_pixels(m._preprocess(images, args.images))
    return m, states, m.token_ids([" ".join(["word"] * (3 + k % 16)) for k in range(captions)])


def print_sides(sides: dict[str, dict[str, Any]]) -> None:
    """Each side's seconds, peak and peak per pair beside the plan's bytes per pair, the ratios of the second side
    to the first, and the largest |Δ p(match)| between them (each side reports ``seconds``, ``peak``, ``pairs``,
    ``plan_per_pair`` and ``p``)."""
    mib = 2**20
    for name, r in sides.items():
        print(f"  {name:<6} {r['seconds']:6.2f} s  peak {r['peak'] / mib:7.0f} MiB  "
              f"{r['peak'] / r['pairs'] / mib:5.2f} MiB per pair (the plan's {r['plan_per_pair'] / mib:.2f})")
    (a, first), (b, second) = sides.items()
    print(f"  {b} / {a}: time {second['seconds'] / first['seconds']:.2f}x, peak {second['peak'] / first['peak']:.2f}x")
    diff = max(abs(x - y) for x, y in zip(first["p"], second["p"]))
    print(f"  max |delta p(match)| {diff:.2e} (p(match) from {min(second['p']):.3f} to {max(second['p']):.3f})")
