"""The ``cv-probes`` report kind: probe runs side by side (the paper's Tables 3-5) and per-cell accuracy bars.

A probe run folder holds the ``results.json`` written by ``connote cv-probes run`` (task ``cv-probes``): per cell
(image kind - caption kind) the accuracy, its 95% Wilson interval, n, errors and Pearson's r against the
human votes; the harmonic mean; and, when the data has votes, the Human row (majority of votes).
Runs are comparable when they share the data (manifest and image bytes) and the task version; the
captions setting (original / simplified, Table 4) is part of the run's name, not of its group.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.cv_probes.records import CELLS
from connote.cv_probes.task import format_interval, format_pct, format_r
from connote.report.document import Figure, Run, Section, Table
from connote.report.load import DATA_NOTE, find_data, read_results, shown_path

NAME = "cv-probes"


def run_name(results: dict[str, Any]) -> str:
    """Model and captions setting, e.g. ``objects (original)``."""
    return f"{results.get('model', '?')} ({results.get('captions', 'original')})"


class ProbeKind:
    """Recognises ``connote cv-probes run`` run folders and builds Tables 3/4 and 5 and the accuracy figure."""

    name = NAME
    expects = "results.json of task cv-probes, with 'cells'"

    def recognise(self, folder: Path) -> Run | None:
        results = read_results(folder)
        if results is None or "cells" not in results or results.get("task", NAME) != NAME:
            return None
        cells = results["cells"]
        missing = [c for c in CELLS if not isinstance(cells, dict) or not isinstance(cells.get(c), dict)]
        if missing:
            raise InputError(f"probe results without cell(s) {', '.join(missing)}", path=folder / "results.json")
        key, label = data_identity(results.get("data"), folder)
        return Run(folder=folder, kind=NAME, name=run_name(results), results=results, data=label,
                   group=(key, f"task version {results.get('task_version')}"))

    def section(self, runs: list[Run]) -> Section:
        section = Section(title="CV-Probes: image-text matching (Tables 3-5)", kind=NAME, runs=runs,
                          tables=[accuracy_table(runs), correlation_table(runs)],
                          figures=[accuracy_figure(runs)])
        section.notes.append(DATA_NOTE + "; ".join(sorted({r.data for r in runs})))
        return section

    def published_values(self, table: Any, run: Run) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """A run's cells on a published table (:mod:`connote.report.published`): accuracy (or Pearson's r) per cell
        and the harmonic mean, on the table's scale; None when the run's captions are not the table's."""
        from connote.report.published import scaled, scaled_interval

        res = run.results
        if res.get("captions", "original") != table.match.get("captions", "original"):
            return None
        cells = res.get("cells") or {}
        if table.measure == "pearson_r":
            return {c: (cells.get(c) or {}).get("pearson_r") for c in table.columns}, {}
        values = {c: scaled((cells.get(c) or {}).get("accuracy"), table.scale) for c in table.columns if c != "HM"}
        intervals = {c: scaled_interval((cells.get(c) or {}).get("interval"), table.scale) for c in values}
        values["HM"] = scaled(res.get("harmonic_mean"), table.scale)
        return values, intervals

    def why_not_published(self, table: Any, run: Run) -> str:
        have, want = run.results.get("captions", "original"), table.match.get("captions", "original")
        return (f"its captions are the {have} ones; {table.id} is on the {want} captions (a run with --captions "
                f"{want} is)")


KIND = ProbeKind()


def _human(runs: Sequence[Run]) -> dict[str, Any] | None:
    return next((r.results["human"] for r in runs if r.results.get("human")), None)


def accuracy_table(runs: Sequence[Run]) -> Table:
    """Tables 3/4: accuracy (%) per cell and harmonic mean, each run followed by its 95% interval row."""
    header = ["Model", *CELLS, "HM", "n", "err"]
    rows: list[list[str]] = []
    values: list[dict[str, Any]] = []
    rules: list[int] = []
    for run in runs:
        cells = run.results["cells"]
        rows.append([run.name, *(format_pct(cells[c].get("accuracy")) for c in CELLS),
                     format_pct(run.results.get("harmonic_mean")), str(sum(cells[c].get("n", 0) for c in CELLS)),
                     str(sum(cells[c].get("errors", 0) for c in CELLS))])
        rows.append(["95% CI", *(format_interval(cells[c].get("interval")) for c in CELLS), "", "", ""])
        values.append({"run": run.name, "folder": str(run.folder), "harmonic_mean": run.results.get("harmonic_mean"),
                       "cells": {c: {k: cells[c].get(k) for k in ("accuracy", "interval", "n", "errors")}
                                 for c in CELLS}})
    human = _human(runs)
    if human:
        rules.append(len(rows) - 1)
        hc = human["cells"]
        rows.append(["Human", *(format_pct(hc[c].get("accuracy")) for c in CELLS),
                     format_pct(human.get("harmonic_mean")), str(sum(hc[c].get("n", 0) for c in CELLS)), "0"])
        rows.append(["95% CI", *(format_interval(hc[c].get("interval")) for c in CELLS), "", "", ""])
        values.append({"run": "human", "harmonic_mean": human.get("harmonic_mean"),
                       "cells": {c: {k: hc[c].get(k) for k in ("accuracy", "interval", "n")} for c in CELLS}})
    notes = ["Cells are <image kind>-<caption kind> (SG: socially grounded, PG: physically grounded); accuracy in %, "
             "errored items excluded; HM: harmonic mean of the four cells; the 95% CI row under each model is the "
             "Wilson score interval; n: scored pairs, err: errored pairs."]
    if human:
        notes.append("Human: the majority of the annotators' votes against the label (a tie counts as wrong).")
    settings = sorted({str(r.results.get("captions", "original")) for r in runs})
    notes.append(f"Captions: {' and '.join(settings)}, named after each model (Table 3: original, Table 4: "
                 "simplified); `connote cv-probes explain` (Table 6) uses simplified captions unless told otherwise.")
    return Table(key="probe-accuracy", title="Tables 3/4: accuracy per cell (%)", header=header, rows=rows,
                 notes=notes, values=values, rules_after=rules)


def correlation_table(runs: Sequence[Run]) -> Table:
    """Table 5: Pearson's r of p(match) with the share of human "match" votes, per cell."""
    header = ["Model", *CELLS, "pairs with votes"]
    rows, values = [], []
    for run in runs:
        cells = run.results["cells"]
        rows.append([run.name, *(format_r(cells[c]) for c in CELLS),
                     str(sum(cells[c].get("n_votes", 0) for c in CELLS))])
        values.append({"run": run.name, "cells": {c: {"pearson_r": cells[c].get("pearson_r"),
                                                      "pearson_p": cells[c].get("pearson_p"),
                                                      "n_votes": cells[c].get("n_votes")} for c in CELLS}})
    notes = ["Pearson's r between the model's p(match) and the share of annotators voting match; * p < 0.05; "
             "— no value (fewer than 3 voted pairs, or a constant side)."]
    return Table(key="probe-correlation", title="Table 5: correlation with human votes (Pearson r)", header=header,
                 rows=rows, notes=notes, values=values)


def accuracy_figure(runs: Sequence[Run]) -> Figure:
    """:func:`accuracy_plot` as the report's figure."""
    from connote.report.plotting import png_bytes

    return Figure(key="probe-accuracy", title="Accuracy per cell with 95% intervals",
                  png=png_bytes(accuracy_plot(runs)),
                  caption="Accuracy (%) per image kind / caption kind cell and the harmonic mean; error bars are "
                          "the 95% Wilson score intervals; dashed line: chance (50%).")


def accuracy_plot(runs: Sequence[Run]):  # noqa: ANN201
    """Grouped bars of accuracy per cell and harmonic mean, one colour per run (and the Human row), with the
    95% Wilson intervals as error bars (the matplotlib figure). Value labels (whole per cent; the table has the
    decimals) stand horizontal, in dark text, above each bar's error bar, so they never cross a bar or an
    error bar and read at the axis labels' size."""
    import numpy as np

    from connote.report.plotting import LABEL_COLOUR, LABEL_SIZE, pyplot

    plt = pyplot()
    series: list[tuple[str, dict[str, Any], float | None]] = [
        (r.name, r.results["cells"], r.results.get("harmonic_mean")) for r in runs]
    human = _human(runs)
    if human:
        series.append(("Human (majority of votes)", human["cells"], human.get("harmonic_mean")))
    groups = [*CELLS, "HM"]
    x = np.arange(len(groups))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(7.0, 1.1 * len(groups) * max(1, len(series)) ** 0.5 + 3), 4.4))
    colours = plt.get_cmap("tab10")
    for k, (label, cells, hm) in enumerate(series):
        accs = [cells[c].get("accuracy") for c in CELLS] + [hm]
        heights = np.array([0.0 if a is None else 100 * a for a in accs])
        lows, highs = [], []
        for c, h in zip([*CELLS, None], heights):
            interval = cells[c].get("interval") if c else None
            lows.append(h - 100 * interval[0] if interval else np.nan)  # nan: no error bar drawn
            highs.append(100 * interval[1] - h if interval else np.nan)
        pos = x - 0.4 + width * (k + 0.5)
        colour = "#555555" if label.startswith("Human") else colours(k % 10)
        ax.bar(pos, heights, width * 0.92, label=label, color=colour, yerr=[lows, highs], capsize=2,
               error_kw={"elinewidth": 0.8, "ecolor": "#222222"})
        for px, h, up, a in zip(pos, heights, highs, accs):
            text = "—" if a is None else f"{h:.0f}"
            ax.text(px, h + np.nan_to_num(up) + 1.0, text, ha="center", va="bottom", fontsize=LABEL_SIZE,
                    color=LABEL_COLOUR)
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    ax.set_xticks(x, ["SG img\nSG cap", "SG img\nPG cap", "PG img\nSG cap", "PG img\nPG cap", "harmonic\nmean"])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 112)  # room for a label above a bar at 100
    ax.set_yticks(range(0, 101, 20))
    columns = 1 if max(len(label) for label, _, _ in series) > 40 else min(3, len(series))
    ax.legend(fontsize=8, loc="upper center", ncol=columns, bbox_to_anchor=(0.5, -0.2), frameon=False)
    ax.set_title("CV-Probes image-text matching accuracy (bars: 95% Wilson intervals)", fontsize=10)
    return fig


def data_identity(recorded: str | None, folder: Path) -> tuple[str, str]:
    """``(key, label)`` of a probe manifest: the key hashes the manifest's and its local images' bytes
    (the recorded path when the file is gone); the label is the path and a short digest, for people."""
    path = find_data(recorded, folder)
    if path is None:
        return f"path {recorded}", f"{recorded} (not found; compared by path)"
    from connote.core.files import file_sha256
    from connote.cv_probes.manifest import read_probe_manifest

    digest = hashlib.sha256(file_sha256(path).encode())
    try:
        images = sorted({it.image for it in read_probe_manifest(path)})
    except InputError:  # a manifest that no longer parses: its bytes alone identify it
        images = []
    for image in images:
        try:
            digest.update(f"\0{Path(image).name}\0{file_sha256(image)}".encode())
        except OSError:
            digest.update(f"\0{image}\0missing".encode())
    short = digest.hexdigest()[:12]
    return f"data {short}", f"{shown_path(path, folder)} ({short})"
