"""Side-by-side tables of several probe runs (the paper's Tables 3-5) and a grouped bar plot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connote.errors import InputError
from connote.records import CELLS
from connote.tasks.probe import format_pct, format_r


def load_run(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / "results.json"
    if not path.is_file():
        raise InputError("no results.json (is this a finished connote probe run folder?)", path=path)
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON ({exc.msg})", path=path, line=exc.lineno, column=exc.colno) from None
    if "cells" not in results:
        raise InputError("not a probe results file (no 'cells')", path=path)
    results["_folder"] = str(folder)
    return results


def check_comparable(runs: Sequence[dict[str, Any]]) -> None:
    """Refuse (exit 2) runs on different manifests or task versions: their numbers are not comparable."""
    groups: dict[tuple[str, Any], list[str]] = {}
    for run in runs:
        groups.setdefault((str(run.get("data")), run.get("task_version")), []).append(run["_folder"])
    if len(groups) > 1:
        lines = "; ".join(f"{', '.join(folders)} on {data} (task version {version})"
                          for (data, version), folders in groups.items())
        raise InputError(f"these runs are on different data or task versions and cannot share a table: {lines}. "
                         "Report each group separately, or pass --allow-mixed to list them with their data")


def _name(run: dict[str, Any]) -> str:
    return f"{run.get('model', '?')} ({run.get('captions', 'original')})"


def table_rows(runs: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    header = ["Model", *(f"{c} acc" for c in CELLS), "HM", *(f"{c} r" for c in CELLS), "errors"]
    rows = []
    for run in runs:
        cells = run["cells"]
        rows.append([_name(run), *(format_pct(cells[c]["accuracy"]) for c in CELLS),
                     format_pct(run.get("harmonic_mean")), *(format_r(cells[c]) for c in CELLS),
                     str(sum(cells[c]["errors"] for c in CELLS))])
    human = next((run["human"] for run in runs if run.get("human")), None)
    if human:  # Table 4's Human row: the majority of the annotators' votes (a tie counts as wrong)
        rows.append(["Human (majority of votes)", *(format_pct(human["cells"][c]["accuracy"]) for c in CELLS),
                     format_pct(human.get("harmonic_mean")), *("—" for _ in CELLS), "0"])
    return header, rows


def to_markdown(runs: Sequence[dict[str, Any]]) -> str:
    header, rows = table_rows(runs)
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    lines.append("")
    lines.append("Cells are <image kind>-<caption kind>; accuracy in %, errored items excluded; "
                 "r = Pearson correlation of p(match) with human votes (* p < 0.05).")
    return "\n".join(lines) + "\n"


def to_csv(runs: Sequence[dict[str, Any]]) -> str:
    import csv
    import io

    header, rows = table_rows(runs)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def to_latex(runs: Sequence[dict[str, Any]]) -> str:
    lines = [r"\begin{tabular}{lrrrrr}", r"\toprule",
             r"Images & SG & SG & PG & PG & \\", r"Captions & SG & PG & SG & PG & Harmonic mean \\",
             r"\midrule"]
    for run in runs:
        cells = run["cells"]
        vals = [format_pct(cells[c]["accuracy"]) for c in CELLS] + [format_pct(run.get("harmonic_mean"))]
        lines.append(_name(run).replace("_", r"\_") + " & " + " & ".join(vals) + r" \\")
    human = next((run["human"] for run in runs if run.get("human")), None)
    if human:
        vals = [format_pct(human["cells"][c]["accuracy"]) for c in CELLS] + [format_pct(human.get("harmonic_mean"))]
        lines.append(r"\midrule")
        lines.append("Human & " + " & ".join(vals) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def plot_runs(runs: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Grouped bars: accuracy per cell for each run, with the harmonic mean marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    labels = [*CELLS, "HM"]
    x = np.arange(len(labels))
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(1.6 * len(labels) + 2, 4.6))
    for k, run in enumerate(runs):
        vals = [run["cells"][c]["accuracy"] for c in CELLS] + [run.get("harmonic_mean")]
        heights = [100 * v if v is not None else 0 for v in vals]
        bars = ax.bar(x - 0.4 + width * (k + 0.5), heights, width, label=_name(run))
        # upright labels of one decimal: side by side, two-decimal labels of neighbouring bars ran together
        ax.bar_label(bars, labels=["" if v is None else f"{100 * v:.1f}" for v in vals], fontsize=7, padding=2,
                     rotation=90)
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x, ["SG img\nSG cap", "SG img\nPG cap", "PG img\nSG cap\n(non-match)", "PG img\nPG cap",
                      "harmonic\nmean"])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 110)
    ax.legend(fontsize=8, loc="upper center", ncol=min(3, len(runs)), bbox_to_anchor=(0.5, -0.28))
    ax.set_title("CV-Probes image-text matching accuracy")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path
