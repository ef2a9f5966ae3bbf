"""Report kinds of the probe suites (``svo-probes``, ``valse``, ``winoground``, ``sugarcrepe``) and the overview
that puts CV-Probes and the suites of each model side by side.

A suite run folder holds the ``results.json`` of ``connote suite run`` (its ``task`` is the suite's name).
Runs of one suite share a table when their data files (bytes) and task version are equal; the table has one
row per run and, beneath a rule, the suite's published rows with their sources.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from connote.report.document import Run, Section, Table
from connote.report.load import DATA_NOTE, find_data, read_results, shown_path
from connote.suites.base import headline_value, pct


def _value(results: dict[str, Any], path: str) -> float | None:
    return headline_value(results, path.split("/"))


def data_key(recorded: str | None, folder: Path) -> tuple[str, str]:
    """The suite data's identity: the bytes of the file, or of every data file in the folder (images aside)."""
    if not recorded:
        return "data ?", "?"
    path = Path(recorded)
    if not path.exists():
        found = find_data(recorded, folder)
        if found is None:
            return f"path {recorded}", f"{recorded} (not found; compared by path)"
        path = found
    files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl", ".csv")) if path.is_dir() else [path]
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.name}\0".encode() + f.read_bytes())
    short = digest.hexdigest()[:12]
    return f"data {short}", f"{shown_path(path, folder)} ({short})"


class SuiteKind:
    """Recognises one suite's run folders; builds its side-by-side table with the published rows."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.expects = f"results.json of task {name}"

    def task(self) -> Any:
        from connote.suites import target

        return target(self.name, 0)

    def recognise(self, folder: Path) -> Run | None:
        results = read_results(folder)
        if results is None or results.get("task") != self.name:
            return None
        key, label = data_key(results.get("data"), folder)
        return Run(folder=folder, kind=self.name, name=str(results.get("model", "?")), results=results, data=label,
                   group=(key, f"task version {results.get('task_version')}"))

    def section(self, runs: list[Run]) -> Section:
        task = self.task()
        header = ["Run", *(label for label, _ in task.columns)]
        rows = [[r.name, *(pct(_value(r.results, path)) for _, path in task.columns)] for r in runs]
        values = [{"run": r.name, **{path: _value(r.results, path) for _, path in task.columns}} for r in runs]
        for name, published, source in task.PUBLISHED:
            rows.append([f"{name} (published)", *(pct(published.get(path)) for _, path in task.columns)])
            values.append({"run": name, "source": source, **{path: published.get(path) for _, path in task.columns}})
        notes = ["Published rows: " + "; ".join(f"{n}: {s}" for n, _, s in task.PUBLISHED) + "."] \
            if task.PUBLISHED else []
        tables = [Table(key=f"{self.name}-runs", title=task.title, header=header, rows=rows, notes=notes,
                        values=values, rules_after=[len(runs) - 1])]
        for r in runs:
            h, body = task.table(r.results)
            tables.append(Table(key=f"{self.name}-{len(tables)}", title=f"{task.name}: {r.name}", header=h, rows=body))
        section = Section(title=task.title.split(":")[0], kind=self.name, runs=runs, tables=tables)
        section.notes.append(DATA_NOTE + "; ".join(sorted({r.data for r in runs})))
        return section


SVO = SuiteKind("svo-probes")
VALSE = SuiteKind("valse")
WINOGROUND = SuiteKind("winoground")
SUGARCREPE = SuiteKind("sugarcrepe")


def overview(runs: list[Run]) -> Section | None:
    """One row per model, CV-Probes' harmonic mean and each suite's headline side by side; None unless the
    runs hold CV-Probes and a suite, or two suites."""
    from connote.suites import SUITES, target

    kinds = {r.kind for r in runs if r.kind == "cv-probes" or r.kind in SUITES}
    if len(kinds) < 2:
        return None
    columns = [("cv-probes", "CV-Probes HM (%)", ("harmonic_mean",))] if "cv-probes" in kinds else []
    for name in SUITES:
        if name in kinds:
            task = target(name, 0)
            columns.append((name, task.headline_label, task.headline))
    models: dict[str, dict[str, float | None]] = {}
    for r in runs:
        if r.kind not in kinds:
            continue
        model = str(r.results.get("model", r.name))
        for kind, _, path in columns:
            if kind == r.kind:
                models.setdefault(model, {})[kind] = headline_value(r.results, path)
    rows = [[m, *(pct(v.get(kind)) for kind, _, _ in columns)] for m, v in models.items()]
    table = Table(key="suites-overview", title="One model across CV-Probes and the probe suites",
                  header=["Model", *(label for _, label, _ in columns)], rows=rows,
                  values=[{"model": m, **v} for m, v in models.items()],
                  notes=["Each column is the suite's own headline on its own data: CV-Probes' harmonic mean of the "
                         "four cells, SVO-Probes' average of positive and negative accuracy, VALSE's acc_r averaged "
                         "over pieces (MTurk-validated), Winoground's group score, SugarCrepe's mean over categories."])
    return Section(title="CV-Probes and the probe suites side by side", kind="suites-overview",
                   runs=[r for r in runs if r.kind in kinds], tables=[table])
