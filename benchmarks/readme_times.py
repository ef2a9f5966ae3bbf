"""Run every offline example of the README and rewrite its time and peak-memory comments from what it measured.

The examples are those ``tests/test_docs_examples.py`` runs (a ``connote`` line in a shell block, not marked
``needs:``), run the same way: in order, each in its own process (``python -m connote ...``), from one fresh
empty folder, so a later line uses the run folders of an earlier one; one-time caches (``$CONNOTE_CACHE``) are
kept, as a user's second session has them. Each process's wall time and peak resident memory (``wait4``) are
measured, with the load average before it. An example whose comment carries figures, ``(~18 s, 0.8 GB)`` or
``(~18 s, 0.8 GB; resumed ~1 s)``, gets them rewritten (with ``resumed``: the example is run a second time into
the same folder and that time written too). A command that ends with a ``speed:`` line (every run command: the
items it computed and the seconds they took) gets that in too, ``(~18 s, 0.8 GB; 18 items in 0.4 s)``: the rest
of the wall (imports, the model's load, writing the results) hardly grows with the data, so the figures say how a
run scales. The README's sentence
``measured by `benchmarks/readme_times.py` (...) on N cores at load average L, DATE`` gets this machine's cores
and load::

    python benchmarks/readme_times.py                 # run all, rewrite README.md (~3 min on 2 cores)
    python benchmarks/readme_times.py --dry-run       # run all, print the table, change nothing
    python benchmarks/readme_times.py --check         # run all; exit 1 if a comment is off (>2x, +2 s; 1.5x, +0.2 GB)
    python benchmarks/readme_times.py --only "vmc caption" --check

``--only TEXT`` runs just the examples containing TEXT (they must not need an earlier example's output).
Every example's figures are printed, with the load average before it; an example that fails is named, its
comment is left as it is, and the script exits 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_docs_examples import _split_comment, extract_examples  # noqa: E402 - the examples' one rule

#: ``(~18 s, 0.8 GB)`` or ``(~18 s, 0.8 GB; resumed ~1 s)`` in an example's comment
FIGURES = re.compile(r"\(~(?P<time>[\d.]+) s, (?P<peak>[\d.]+) GB(?:; \d+ items? in [\d.]+ s)?"
                     r"(?:; resumed ~(?P<resumed>[\d.]+) s)?\)")
#: a run command's last word on stderr (connote.runs.speed.speed_line): what it computed and in how long
SPEED = re.compile(r"^speed: (?P<items>\d+) item\(s\) in (?P<seconds>[\d.]+) s", re.MULTILINE)
#: the README's sentence that says where the figures come from
MACHINE = re.compile(r"measured by `benchmarks/readme_times.py` \((?P<how>[^)]*)\) on \d+ cores? at load average "
                     r"[\d.]+, \d{4}-\d\d-\d\d")


@dataclass
class Measured:
    wall: float
    peak_gb: float
    load: float
    code: int
    resumed: float | None = None
    items: tuple[int, float] | None = None  # (items computed, their seconds) from the run's speed line


def seconds_text(s: float) -> str:
    return f"{s:.1f}" if s < 10 else f"{s:.0f}"


def gb_text(gb: float) -> str:
    return f"{gb:.2f}" if gb < 1 else f"{gb:.1f}"


def figures_text(m: Measured, with_resumed: bool) -> str:
    text = f"(~{seconds_text(m.wall)} s, {gb_text(m.peak_gb)} GB"
    if m.items is not None:
        n, seconds = m.items
        text += f"; {n} item{'s' if n != 1 else ''} in {seconds_text(seconds)} s"
    return text + (f"; resumed ~{seconds_text(m.resumed or 0)} s)" if with_resumed else ")")


#: Started by :func:`run_one`, it starts the example and writes the example's ``ru_maxrss`` (KiB) to argv[1]. On
#: Linux a process keeps, across ``exec``, the peak of the memory it was forked with: an example started straight
#: from a large process (a test worker holding models) would report that process's peak. This small launcher's
#: own child starts from the launcher's memory, so its figure is the example's own.
LAUNCHER = ("import os, subprocess, sys\n"
            "proc = subprocess.Popen(sys.argv[2:])\n"
            "_, status, usage = os.wait4(proc.pid, 0)\n"
            "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")


def run_one(words: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """Run ``connote WORDS`` in its own process: (wall seconds, peak RSS in GB, exit status, its stderr)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "maxrss"
        proc = subprocess.run([sys.executable, "-c", LAUNCHER, str(peak_file), sys.executable, "-m", "connote",
                               *words], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err,
                              stdin=subprocess.DEVNULL, check=False)
        wall = time.perf_counter() - start
        err.seek(0)
        text = err.read().decode(errors="replace")
        kib = int(peak_file.read_text()) if peak_file.is_file() else 0
    return wall, kib * 1024 / 1e9, proc.returncode, text  # ru_maxrss: KiB on Linux


def within(measured: float, written: float, factor: float, slack: float) -> bool:
    return written / factor - slack <= measured <= written * factor + slack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--readme", default=str(ROOT / "README.md"), help="the Markdown file (default: README.md)")
    parser.add_argument("--only", help="run only the examples whose text contains this")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="change nothing; exit 1 when a comment's figures are off")
    mode.add_argument("--dry-run", action="store_true", help="change nothing, print what was measured")
    args = parser.parse_args(argv)

    readme = Path(args.readme)
    examples = [e for e in extract_examples(readme) if e.needs is None and (not args.only or args.only in e.text)]
    if not examples:
        print(f"no offline example{' with ' + repr(args.only) if args.only else ''} in {readme}", file=sys.stderr)
        return 2
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "80", "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
    cores = os.cpu_count() or 1
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    failed, off = [], []
    loads = []
    with tempfile.TemporaryDirectory(prefix="readme-times-") as folder:
        for ex in examples:
            words, comment = _split_comment(ex.text)
            where = f"{readme.name}:{ex.line}"
            load = os.getloadavg()[0]
            loads.append(load)
            wall, peak, code, err = run_one(words[1:], Path(folder), env)
            speed = SPEED.findall(err)
            m = Measured(wall, peak, load, code, items=(int(speed[-1][0]), float(speed[-1][1])) if speed else None)
            written = FIGURES.search(comment)
            if code == 0 and written and written.group("resumed"):
                m.resumed, _, code, err = run_one(words[1:], Path(folder), env)
                m.code = code
            print(f"{where:<16} {wall:7.2f} s  {peak:5.2f} GB  load {load:4.1f}"
                  f"{f'  {m.items[0]} items in {m.items[1]:.2f} s' if m.items else ''}"
                  f"{f'  resumed {m.resumed:.2f} s' if m.resumed is not None else ''}  exit {m.code}  "
                  f"{' '.join(words)[:70]}", flush=True)
            if m.code != 0:
                failed.append(f"{where}: `{ex.text}` exited {m.code}\n{err[-800:]}")
                continue
            if not written:
                continue
            now = figures_text(m, bool(written.group("resumed")))
            ok = within(m.wall, float(written.group("time")), 2.0, 2.0) and \
                within(m.peak_gb, float(written.group("peak")), 1.5, 0.2) and \
                (m.resumed is None or within(m.resumed, float(written.group("resumed")), 2.0, 2.0))
            if not ok:
                off.append(f"{where}: the comment says {written.group(0)}, measured {now}")
            index = ex.line - 1
            lines[index] = lines[index].replace(written.group(0), now, 1)
    text = "".join(lines)
    stamp = (f"measured by `benchmarks/readme_times.py` (\\g<how>) on {cores} core{'s' if cores > 1 else ''} at "
             f"load average {max(loads):.1f}, {dt.date.today().isoformat()}")
    if not args.only:
        text = MACHINE.sub(stamp, text)
    for line in failed:
        print("failed: " + line, file=sys.stderr)
    if args.check:
        for line in off:
            print("off: " + line, file=sys.stderr)
        if not off and not failed:
            print(f"{readme}: every measured figure is within 2x (+2 s) and 1.5x (+0.2 GB) of its comment")
        return 1 if off or failed else 0
    if not args.dry_run:
        readme.write_text(text, encoding="utf-8")
        print(f"rewrote {readme} ({cores} cores, load average {min(loads):.1f}-{max(loads):.1f})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
