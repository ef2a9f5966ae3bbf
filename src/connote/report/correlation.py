"""The ``metric-correlation`` report kind: which metric agrees with people (``vist/metaphor correlate --out``).

Reads ``correlation.json`` (the folder that holds it, or the file): per human criterion (the VIST rating, a
pairwise preference, or each VMC A.7 criterion) every metric's and judge's Pearson, Spearman and Kendall with
their bootstrap intervals and its mean score, so n-gram metrics (METEOR), ACD, the reference-free story metrics
(GROOViST, RoViST-C/NR) and judges sit in one table; then the paired tests between metrics and, for
preferences, the pairwise agreement. The signatures of the metrics computed are the table's notes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from connote.core.jsonio import read_json
from connote.report.document import Run, Section, Table

NAME = "metric-correlation"
COEFFICIENTS = ("pearson", "spearman", "kendall")


def _cell(r: dict[str, Any], c: str) -> str:
    v, ci = r.get(c), r.get(f"{c}_ci") or [None, None]
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if ci[0] is None:
        return f"{v:.3f}"
    return f"{v:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _num(v: Any) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


class CorrelationKind:
    """Recognises ``correlation.json`` and builds the metric-human correlation tables."""

    name = NAME
    expects = "correlation.json (connote vist correlate --out / metaphor correlate --out)"

    def recognise(self, folder: Path) -> Run | None:
        path = folder if folder.is_file() else folder / "correlation.json"
        if path.name != "correlation.json" or not path.is_file():
            return None
        obj = read_json(path)
        if not isinstance(obj, dict) or obj.get("kind") != "metric-human-correlation":
            return None
        ratings = obj.get("ratings") or {}
        return Run(folder=path.parent, kind=NAME, name=path.parent.name or str(path),
                   group=(str(ratings.get("path")), str(ratings.get("sha256"))), results=obj,
                   data=f"{ratings.get('path')} (sha256 {ratings.get('sha256')})")

    def section(self, runs: list[Run]) -> Section:
        tables = [t for k, run in enumerate(runs, start=1)
                  for t in correlation_tables(run, f"-{k}" if len(runs) > 1 else "")]
        return Section(title="Which metric agrees with people", kind=NAME, runs=runs, tables=tables,
                       notes=[f"{r.name}: human judgements {r.data} ({r.results.get('ratings_kind')})" for r in runs])


KIND = CorrelationKind()


def correlation_tables(run: Run, tag: str = "") -> list[Table]:
    res = run.results
    means = res.get("means") or {}
    settings = res.get("settings") or {}
    sigs = [f"{name}: {sig}" for name, sig in (res.get("signatures") or {}).items()]
    tables = []
    for crit, block in (res.get("criteria") or {}).items():
        corr = block.get("correlations") or {}
        rows = [[m, str(r.get("n")), _num(means.get(m)), *(_cell(r, c) for c in COEFFICIENTS)]
                for m, r in corr.items()]
        notes = [f"95% bootstrap intervals ({settings.get('ci_method')}, {settings.get('n_boot')} resamples, seed "
                 f"{settings.get('seed')}); mean: the metric's mean over the scored items.", *sigs]
        notes += [f"{m}: {r['note']}" for m, r in corr.items() if r.get("note")]
        tables.append(Table(key=f"correlation-{crit}{tag}", title=f"Metric-human correlation ({crit}): {run.name}",
                            header=["Metric", "n", "Mean", "Pearson [95% CI]", "Spearman [95% CI]",
                                    "Kendall [95% CI]"], rows=rows, notes=notes,
                            values=[{"metric": m, "mean": means.get(m), **r} for m, r in corr.items()]))
        paired = [t for t in block.get("paired") or [] if "note" not in t]
        if paired:
            tables.append(Table(
                key=f"correlation-{crit}-paired{tag}", title=f"Paired tests between metrics ({crit}): {run.name}",
                header=["A", "B", "n", "Pearson A - B (p)", "Spearman A - B (p)", "Kendall A - B (p)", "Williams p"],
                rows=[[t["a"], t["b"], str(t["n"]),
                       *(f"{_num(t[c + '_diff'])} ({_num(t.get(c + '_p'))})" for c in COEFFICIENTS),
                       _num(t.get("williams_p"))] for t in paired],
                notes=["Paired bootstrap over the items both metrics scored (two-sided p); Williams' test (1959) "
                       "for the Pearson coefficients, which share the human column."], values=paired))
        agreement = block.get("pairwise_agreement") or {}
        if agreement:
            tables.append(Table(
                key=f"correlation-{crit}-pairs{tag}", title=f"Agreement with pairwise preferences: {run.name}",
                header=["Metric", "Pairs", "Accuracy", "Tau"],
                rows=[[m, str(a["n_pairs"]), _num(a["accuracy"]), _num(a["tau"])] for m, a in agreement.items()],
                notes=["Accuracy: share of pairs where the metric prefers the story most people preferred (a tie "
                       "counts 1/2); tau: (concordant - discordant) / pairs."],
                values=[{"metric": m, **a} for m, a in agreement.items()]))
    return tables
