"""Runs beside the papers' published rows (:mod:`connote.core.published`): one table per published table of the
section's kind, in every report section and in ``connote reproduce``.

A run is matched to a published row by its model spec (the row's ``models`` patterns) and, for tables that
name it, the setting (``match``: captions variant, VIST protocol). Its values are put on the table's scale;
each matched column gets the difference (measured - published) and whether the published value lies inside
the run's 95% interval. Runs no row matches are listed under the table with the rows it could be matched to.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from connote.core.published import PublishedTable, compare, for_kind
from connote.report.document import RUN_KINDS, RUN_ROW, Run, Section, Table, kind_object


def model_text(run: Run) -> str:
    """What a run says about its model (name, folder, model spec and description), for row matching."""
    res = run.results
    meta = res.get("run") or {}
    parts = [run.name, run.folder.name, json.dumps(res.get("model")), json.dumps(res.get("model_fingerprint")),
             json.dumps(meta.get("model")), json.dumps(meta.get("model_fingerprint")), json.dumps(meta.get("config"))]
    return " ".join(p for p in parts if p and p != "null")


def _kind(table: PublishedTable) -> Any:
    """The run kind of ``table.kind`` (:data:`~connote.report.document.RUN_KINDS`); None when it has none."""
    return kind_object(table.kind) if table.kind in RUN_KINDS else None


def measured(table: PublishedTable, run: Run) -> tuple[dict[str, float | None], dict[str, Any]] | None:
    """(values, intervals) of ``run`` on ``table``'s columns and scale; None when the run is not in the table's
    setting (another captions variant or protocol) or the kind has no per-run values for it. Each paper's run
    kind reads its own results (``published_values(table, run)``, see :mod:`connote.report.document`)."""
    kind = _kind(table)
    read = getattr(kind, "published_values", None)
    return None if read is None else read(table, run)


def why_not_measured(table: PublishedTable, run: Run) -> str | None:
    """Why :func:`measured` has nothing of ``run`` for ``table`` (another captions variant or protocol, no stored
    scores: the run kind's ``why_not_published(table, run)``), or None when it has."""
    if measured(table, run) is not None:
        return None
    why = getattr(_kind(table), "why_not_published", None)
    return (why(table, run) if why is not None else None) or f"it has no values for {table.id}"


def scaled(x: Any, scale: float) -> float | None:
    """``x * scale`` (None stays None): a run's value on a published table's scale."""
    return None if x is None else float(x) * scale


def scaled_interval(ci: Any, scale: float) -> list[float] | None:
    """An interval ``[lo, hi]`` times ``scale``; None when absent."""
    return [float(ci[0]) * scale, float(ci[1]) * scale] if ci and ci[0] is not None else None


def _cell(value: float | None, ci: Any = None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    digits = 2 if abs(value) >= 1 or value == 0 else 3
    text = f"{value:.{digits}f}"
    if ci:
        text += f" [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
    return text


def comparisons(table: PublishedTable, runs: Sequence[Run]) -> list[dict[str, Any]]:
    """One entry per run in the table's setting: its row (or None) and the per-column comparison."""
    out = []
    for run in runs:
        got = measured(table, run)
        if got is None:
            continue
        values, intervals = got
        row = table.row_for(model_text(run))
        out.append({"run": run.name, "folder": str(run.folder), "row": row.row if row else None,
                    "values": values, "intervals": intervals,
                    "columns": compare(values, intervals, row, table.columns) if row else []})
    return out


def _factors(table: PublishedTable) -> dict[str, float]:
    """Per column, what the report multiplies the table's values by (1 or 100): the run kind's ``published_x100``,
    the columns a published table prints on 0-1 that the report shows x 100 (``*``: every column), so a published
    table reads on the scale of the run's own table beside it. Values in JSON keep the paper's scale."""
    cols = tuple(getattr(_kind(table), "published_x100", ()))
    return {c: 100.0 if "*" in cols or c in cols else 1.0 for c in table.columns}


def _times(value: Any, k: float) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return [None if v is None else v * k for v in value]
    return value * k


def published_table(table: PublishedTable, runs: Sequence[Run]) -> Table:
    """The published rows, then each run (values with intervals) and, for a matched run, its differences."""
    header = ["Row", *table.columns]
    k = _factors(table)
    rows = [[f"paper: {r.row}", *(_cell(_times(r.values.get(c), k[c])) for c in table.columns)] for r in table.rows]
    rules = [len(rows) - 1] if rows else []
    notes = [f"Published: {table.source} ({table.paper}). Setting: {table.setting}",
             "A run matched to a row is followed by its difference (run - paper) per column, marked (inside) or "
             "(outside) when the run has a 95% interval: whether the published value lies in it."]
    scaled = [c for c in table.columns if k[c] != 1.0]
    if scaled:
        notes.append(f"Shown x 100, as the report's own tables: {', '.join(scaled)} (the paper prints "
                     f"{'them' if len(scaled) > 1 else 'it'} on 0-1).")
    if not table.recomputable:
        notes.append("Not recomputable from the seed" + (f": {table.note}" if table.note else "."))
    elif table.note:
        notes.append(table.note)
    entries = comparisons(table, runs)
    for e in entries:
        rows.append([RUN_ROW + e["run"], *(_cell(_times(e["values"].get(c), k[c]), _times(e["intervals"].get(c), k[c]))
                                           for c in table.columns)])
        if e["row"] is None:
            rows_with_models = [f"{r.row} ({' / '.join(r.models)})" for r in table.rows if r.models]
            notes.append(f"{e['run']}: no published row for this model"
                         + (f" (rows are matched by model spec: {', '.join(rows_with_models)})" if rows_with_models
                            else ""))
            continue
        by_col = {c["column"]: c for c in e["columns"]}
        rows.append([f"  vs {e['row']}: difference",
                     *(_difference(by_col.get(c), k[c]) for c in table.columns)])
    if not entries:
        notes.append("No run of this section has values for this table"
                     + (" in its setting" if table.match else "") + f"; it needs: {table.needs}")
    return Table(key="published-" + table.id.replace("/", "-"), title=f"Published: {table.title}", header=header,
                 rows=rows, notes=notes, values=[{"table": table.id, **e} for e in entries], rules_after=rules)


def _difference(c: dict[str, Any] | None, k: float = 1.0) -> str:
    if c is None or c["difference"] is None:
        return "—"
    inside = "" if c["inside"] is None else (" (inside)" if c["inside"] else " (outside)")
    return f"{c['difference'] * k:+.2f}{inside}"


def add_published(section: Section) -> None:
    """Append the published tables of the section's kind (each run beside its matching row)."""
    for t in for_kind(section.kind):
        section.tables.append(published_table(t, section.runs))
