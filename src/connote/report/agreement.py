"""The ``agreement`` report kind: inter-annotator agreement of a human evaluation (labels.csv).

Reads a ``labels.csv`` (``item_id, rater, criterion, label``, as written by ``connote collect import`` of the
VMC evaluation study and the probe studies' ``*.labels.csv``), given as the file itself or as the folder that
holds it, and reports Fleiss' kappa and pairwise Cohen's kappa per criterion (and pooled over criteria),
computed by :func:`connote.metrics.agreement.agreement_table`. Each labels file is its own table, so
several studies can be reported together.
"""

from __future__ import annotations

import csv
from pathlib import Path

from connote.metrics.agreement import COLUMNS, agreement_table, read_labels
from connote.report.document import Run, Section, Table

NAME = "agreement"


def labels_file(path: Path) -> Path | None:
    """The labels CSV that ``path`` is or holds; None when there is none."""
    if path.is_file():
        return path if path.name.endswith("labels.csv") else None
    candidate = path / "labels.csv"
    return candidate if candidate.is_file() else None


def estimate_cell(x: float | None, digits: int = 3) -> str:
    """A coefficient in a table cell: ``digits`` decimals, or — when it is undefined."""
    return "—" if x is None else f"{x:.{digits}f}"


class AgreementKind:
    """Recognises labels.csv files (or folders holding one) and builds the agreement tables."""

    name = NAME
    expects = "labels.csv with item_id, rater, criterion, label"

    def recognise(self, folder: Path) -> Run | None:
        path = labels_file(folder)
        if path is None:
            return None
        with path.open(newline="", encoding="utf-8-sig") as fh:
            header = {h.strip() for h in next(csv.reader(fh), [])}
        if not set(COLUMNS) <= header and path.name != "labels.csv":
            return None  # some other *labels.csv; a file named labels.csv is ours and read_labels says why not
        table = read_labels(path)
        rows = [row.to_dict() for row in agreement_table(table)]
        name = path.parent.name if path.name == "labels.csv" else path.name.removesuffix(".csv")
        return Run(folder=path, kind=NAME, name=name or str(path), group=("labels",), data=str(path),
                   results={"raters": table.raters, "criteria": list(table.labels), "rows": rows})

    def section(self, runs: list[Run]) -> Section:
        tables: list[Table] = []
        for k, run in enumerate(runs, start=1):
            tag = f"-{k}" if len(runs) > 1 else ""
            tables += agreement_tables(run, tag)
        return Section(title="Inter-annotator agreement", kind=NAME, runs=runs, tables=tables,
                       notes=[f"{r.name}: {r.folder} ({len(r.results['raters'])} raters: "
                              f"{', '.join(r.results['raters'])})" for r in runs])


KIND = AgreementKind()


def agreement_tables(run: Run, tag: str = "") -> list[Table]:
    """Fleiss' kappa per criterion (with the mean pairwise Cohen's kappa), and Cohen's kappa per rater pair."""
    fleiss_rows, cohen_rows, fleiss_values, cohen_values = [], [], [], []
    for row in run.results["rows"]:
        kappas = [c["kappa"] for c in row["cohen"] if c["kappa"] is not None]
        mean = sum(kappas) / len(kappas) if kappas else None
        fleiss_rows.append([row["criterion"], str(row["items"]), estimate_cell(row["fleiss"]), str(row["fleiss_items"]),
                            estimate_cell(mean)])
        fleiss_values.append({"criterion": row["criterion"], "items": row["items"], "fleiss": row["fleiss"],
                              "fleiss_items": row["fleiss_items"], "mean_cohen": mean})
        for c in row["cohen"]:
            cohen_rows.append([row["criterion"], f"{c['a']} – {c['b']}", estimate_cell(c["kappa"]), str(c["items"])])
            cohen_values.append({"criterion": row["criterion"], **c})
    rule = [len(fleiss_rows) - 2] if fleiss_rows and fleiss_rows[-1][0] == "all" and len(fleiss_rows) > 1 else []
    fleiss = Table(key=f"agreement-fleiss{tag}", title=f"Agreement per criterion: {run.name}",
                   header=["Criterion", "Items", "Fleiss κ", "Items rated by all", "Mean Cohen κ"],
                   rows=fleiss_rows, values=fleiss_values, rules_after=rule,
                   notes=["Fleiss' kappa over the items every rater labelled; all: every criterion pooled, each "
                          "(item, criterion) one item; — undefined (e.g. every label identical)."])
    cohen = Table(key=f"agreement-cohen{tag}", title=f"Pairwise Cohen's kappa: {run.name}",
                  header=["Criterion", "Raters", "Cohen κ", "Items"], rows=cohen_rows, values=cohen_values,
                  notes=["Cohen's kappa over the items both raters labelled for the criterion."])
    return [fleiss, cohen]
