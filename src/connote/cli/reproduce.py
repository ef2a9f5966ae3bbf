"""``connote reproduce``: the papers' published tables, what each needs, and runs measured against them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from connote.core.errors import InputError


def _file_entry(table: Any, path: Path, gold: Path | None) -> dict[str, Any]:
    """Score a released output file for ``table`` with the scorer its paper's plugin declares for its run kind
    (``REPRODUCE``: VIST album predictions or submissions; VMC answer files)."""
    from connote.core.plugins import PluginTable
    from connote.core.published import compare
    from connote.core.registry import import_target

    scorers = PluginTable("output-file scorer", "REPRODUCE")  # run kind -> score_file(table, path, gold)
    if table.kind not in scorers:
        raise InputError(f"{table.id} is not measured from a file: give result folders", path=path)
    values, intervals = import_target(scorers[table.kind])(table, path, gold)
    row = table.row_for(str(path.resolve()))
    return {"run": path.name, "folder": str(path), "row": row.row if row else None, "values": values,
            "intervals": intervals, "columns": compare(values, intervals, row, table.columns) if row else []}


def reproduce(
    table_id: Optional[str] = typer.Argument(None, help="A published table (see --list), e.g. vmc/table1."),
    inputs: Optional[list[Path]] = typer.Argument(None, help="Result folders (as `connote report` reads them), or "
                                                  "released output files: AREL prediction / challenge files for "
                                                  "vist/arel-album (with --refs), VMC answer files for vmc tables."),
    list_tables: bool = typer.Option(False, "--list", help="List every published table and what it needs."),
    gold: Optional[Path] = typer.Option(None, "--refs", help="VIST gold (story-in-sequence) for output files."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the papers' published tables, or measure runs against one: measured | published | difference."""
    from connote.core.published import table as get_table

    if list_tables or table_id is None:
        _list_tables(as_json)
        return
    table = get_table(table_id)
    entries = measure(table, inputs or [], gold)
    if as_json:
        typer.echo(json.dumps({"table": table.id, "source": table.source, "setting": table.setting,
                               "published": [{"row": r.row, "values": r.values} for r in table.rows],
                               "runs": entries}, indent=2, default=str))
        return
    print_comparison(table, entries)


def _list_tables(as_json: bool) -> None:
    """``--list``: every published table, what it needs and whether it can be recomputed from the seed."""
    from connote.core.published import tables

    listed = [{"table": t.id, "title": t.title, "source": t.source, "rows": len(t.rows),
               "recomputable": t.recomputable, "needs": t.needs, "note": t.note} for t in tables()]
    if as_json:
        typer.echo(json.dumps(listed, indent=2))
        return
    for t in listed:
        flag = "" if t["recomputable"] else "  [not recomputable from the seed]"
        typer.echo(f"{t['table']}: {t['title']} ({t['source']}; {t['rows']} rows){flag}")
        typer.echo(f"    needs: {t['needs']}")


def measure(table: Any, inputs: list[Path], gold: Path | None) -> list[dict[str, Any]]:
    """One entry per run or output file measured against ``table``: released output files scored by their paper's
    scorer, result folders of the table's run kind compared with its rows (a run outside the table's setting is
    left out with a note saying why; none left: exit 2)."""
    entries: list[dict[str, Any]] = []
    folders = [p for p in inputs if p.is_dir()]
    for p in inputs:
        if not p.exists():
            raise InputError("no such file or folder", path=p)
        if p.is_file():
            entries.append(_file_entry(table, p, gold))
    if folders:
        from connote.report.load import load_runs
        from connote.report.published import comparisons, why_not_measured

        runs = [r for r in load_runs(folders) if r.kind == table.kind]
        if not runs:
            raise InputError(f"none of these folders is a {table.kind} run, which {table.id} compares with",
                             path=folders[0])
        entries += comparisons(table, runs)
        skipped = {r.name: why for r in runs if (why := why_not_measured(table, r))}
        if not entries:  # every run given is outside the table's setting: say why, never an empty table
            raise InputError(f"no run to compare with {table.id}: " + "; ".join(
                f"{name}: {why}" for name, why in skipped.items()), path=folders[0] if len(folders) == 1 else None)
        for name, why in skipped.items():
            typer.echo(f"note: {name} is not compared with {table.id}: {why}", err=True)
    return entries


def print_comparison(table: Any, entries: list[dict[str, Any]]) -> None:
    """The table's setting, then per run and column: measured [interval] | published | difference | inside the
    interval; without runs, the published rows and what the table needs."""
    typer.echo(f"{table.id}: {table.title} — {table.source}")
    typer.echo(f"setting: {table.setting}")
    if not table.recomputable:
        typer.echo(f"not recomputable from the seed: {table.note}")
    if not entries:
        for r in table.rows:
            typer.echo(f"  {r.row}: " + ", ".join(f"{c} {r.values[c]:g}" for c in table.columns if c in r.values))
        typer.echo(f"needs: {table.needs}")
        return
    typer.echo(f"{'run':30s} {'row':24s} {'column':10s} {'measured':>24s} {'published':>10s} {'difference':>10s}"
               "  inside CI")
    for e in entries:
        if e["row"] is None:
            typer.echo(f"{e['run'][:30]:30s} no published row for this model (rows: "
                       + ", ".join(r.row for r in table.rows) + ")")
            continue
        for c in e["columns"]:
            ci = c["interval"]
            got = "n/a" if c["measured"] is None else f"{c['measured']:.4g}" + (
                f" [{ci[0]:.4g}, {ci[1]:.4g}]" if ci else "")
            diff = "n/a" if c["difference"] is None else f"{c['difference']:+.4g}"
            inside = "-" if c["inside"] is None else ("yes" if c["inside"] else "no")
            typer.echo(f"{e['run'][:30]:30s} {e['row'][:24]:24s} {c['column']:10s} {got:>24s} "
                       f"{c['published']:>10.4g} {diff:>10s}  {inside}")


def register(app: typer.Typer) -> None:
    app.command("reproduce")(reproduce)
