"""Where a sample command's seconds go before and around its first item: a first and a resumed run of each.

Each of the README's three sample run commands (``cv-probes run``, ``vist generate``, ``vmc caption``) runs twice
in one fresh folder (first, then resumed), each time in its own process under ``cProfile`` from the interpreter's
first import of connote, and the profile is split into what issue #40 asks about: imports (every module import,
wherever it happens), the model's build (``LazyModel._load``, its imports included), writing the sample data,
hashing (file digests and run fingerprints), the items (``run_items``: computing and storing them), and the
rest; ``wall`` is the process's whole time, interpreter start-up included. The parts overlap where one runs
inside another (imports inside the model's build), so they do not add up to the wall::

    python benchmarks/startup_profile.py                       # all three (~1 min on 2 cores)
    python benchmarks/startup_profile.py --only "vist generate" --json out.json

One-time caches (``$CONNOTE_CACHE``: the sample photos, the embedded models) are kept, as a user's second session
has them. The machine's cores and load average are printed beside the table.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (["cv-probes", "run"], ["vist", "generate"], ["vmc", "caption"])
#: part -> (file name ending, function name) whose cumulative time it is (recursion counted once by cProfile)
PARTS: dict[str, tuple[tuple[str, str], ...]] = {
    "imports": (("<frozen importlib._bootstrap>", "_find_and_load"),),
    "model build": (("connote/models/lazy.py", "_load"),),
    "sample writing": (("connote/cv_probes/task.py", "write_sample"), ("connote/vist/sample.py", "write_sample_vist"),
                       ("connote/vmc/sample.py", "write_sample_vmc")),
    "hashing": (("connote/core/files.py", "file_sha256"), ("connote/runs/store.py", "fingerprint")),
    "items": (("connote/runs/runner.py", "run_items"),),
}
#: runs connote's CLI under cProfile (argv: the stats file, then the command's words)
PROFILED = ("import cProfile, sys\n"
            "profile = cProfile.Profile()\n"
            "profile.enable()\n"
            "from connote.cli import main\n"
            "try:\n"
            "    code = main(sys.argv[2:])\n"
            "finally:\n"
            "    profile.disable()\n"
            "    profile.dump_stats(sys.argv[1])\n"
            "sys.exit(code)\n")


def split(stats_file: Path) -> dict[str, float]:
    """Seconds per part of :data:`PARTS` (a part's functions' cumulative times added), and ``profiled``."""
    stats = pstats.Stats(str(stats_file)).stats  # (file, line, function) -> (cc, nc, tt, ct, callers)
    out = {part: 0.0 for part in PARTS}
    for (filename, _, function), (_, _, _, cumulative, callers) in stats.items():
        for part, functions in PARTS.items():
            if any(filename.endswith(end) and function == name for end, name in functions):
                # only the outermost calls: a call from another counted function of the part is inside it already
                if not any(c[2] == function and c[0] == filename for c in callers):
                    out[part] += cumulative
    out["profiled"] = sum(tt for _, _, tt, _, _ in stats.values())
    return out


def profile_run(words: list[str], folder: Path, env: dict[str, str]) -> dict[str, float]:
    """One profiled run of ``connote WORDS`` in ``folder``: wall, exit status and the parts."""
    with tempfile.TemporaryDirectory() as tmp:
        stats_file = Path(tmp) / "profile.stats"
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", PROFILED, str(stats_file), *words], cwd=folder, env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              check=False)
        wall = time.perf_counter() - start
        if proc.returncode != 0 or not stats_file.is_file():
            raise SystemExit(f"connote {' '.join(words)} exited {proc.returncode}:\n{proc.stderr[-800:]}")
        parts = split(stats_file)
    parts["wall"] = wall
    parts["rest"] = max(parts["profiled"] - sum(parts[p] for p in ("imports", "sample writing", "items")), 0.0)
    return parts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="profile only the command containing this text (e.g. 'vist generate')")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    commands = [c for c in COMMANDS if not args.only or args.only in " ".join(c)]
    if not commands:
        print(f"no sample command contains {args.only!r}; they are: "
              f"{', '.join(' '.join(c) for c in COMMANDS)}", file=sys.stderr)
        return 2
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
    columns = ["wall", "imports", "model build", "sample writing", "hashing", "items", "rest"]
    print(f"{os.cpu_count()} cores; seconds (parts overlap: imports inside the model's build count in both)")
    print(f"| command | run | load | {' | '.join(columns)} |")
    print("|---|---|---:|" + "---:|" * len(columns))
    figures: dict[str, dict[str, dict[str, float]]] = {}
    for words in commands:
        name = " ".join(words)
        with tempfile.TemporaryDirectory(prefix="startup-") as folder:
            for run in ("first", "resumed"):
                load = os.getloadavg()[0]
                parts = profile_run(words, Path(folder), env)
                parts["load"] = load
                figures.setdefault(name, {})[run] = parts
                print(f"| {name} | {run} | {load:.1f} | " + " | ".join(f"{parts[c]:.2f}" for c in columns) + " |",
                      flush=True)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
