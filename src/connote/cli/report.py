"""``connote report``: the paper's tables and figures for any result folders, in every format."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from connote.core.errors import InputError

FORMATS = ("terminal", "markdown", "latex", "csv", "html", "json")


def report(
    runs: list[Path] = typer.Argument(..., help="Result folders (probe, explain, storytelling, metaphor runs; "
                                      "a labels.csv or the folder holding one), glob patterns ('runs/*'), or a "
                                      "listing of connote runs --json."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Write report.md, report.tex, report.csv, "
                                       "report.html, report.json and the figures (PNG) into this folder."),
    fmt: Optional[str] = typer.Option(None, "--format", "-f", help="Print this format instead of the terminal "
                                      "tables: markdown | latex | csv | html | json."),
    json_out: bool = typer.Option(False, "--json", help="Print the sections as JSON (same as --format json)."),
    allow_mixed: bool = typer.Option(False, "--allow-mixed", help="Runs of one task on different data or task "
                                     "versions: one section per group (titled with its data) instead of refusing."),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Also save the report's first figure (for probe "
                                        "runs: per-cell accuracy bars) as this PNG."),
    title: str = typer.Option("connote report", "--title", help="The report's title."),
) -> None:
    """Put result folders side by side: the paper's tables (and figures) per task and data."""
    from connote.report import render
    from connote.report.load import build_sections, load_runs

    if json_out:
        fmt = "json"
    if fmt == "md":
        fmt = "markdown"
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"--format must be one of {', '.join(FORMATS[1:])}; got {fmt!r}")
    if plot is not None and plot.suffix.lower() != ".png":
        raise InputError("--plot writes a PNG; give a file name ending in .png", path=plot)
    from connote.cli.runs import expand_run_paths
    from connote.suites.report import overview

    loaded = load_runs(expand_run_paths(runs))
    sections = build_sections(loaded, allow_mixed=allow_mixed)
    side_by_side = overview(loaded)  # CV-Probes and the probe suites of each model side by side
    sections = ([side_by_side] if side_by_side is not None else []) + sections
    if out is not None:
        if out.exists() and not out.is_dir():
            raise InputError("--out is an existing file; give a folder", path=out)
        for path in render.write_report(sections, out, title=title):
            print(path)
    if fmt in (None, "terminal") and out is None:
        render.print_terminal(sections)
    elif fmt == "json":
        print(render.to_json(sections), end="")
    elif fmt == "markdown":
        print(render.to_markdown(sections, title=title, with_figures=out is not None), end="")
    elif fmt == "latex":
        print(render.to_latex(sections, with_figures=out is not None), end="")
    elif fmt == "csv":
        print(render.to_csv(sections), end="")
    elif fmt == "html":
        print(render.to_html(sections, title=title), end="")
    if plot is not None:
        figure = next((f for s in sections for f in s.figures), None)
        if figure is None:
            raise InputError("--plot: these runs have no figure")
        plot.parent.mkdir(parents=True, exist_ok=True)
        from connote.runs.store import write_bytes

        write_bytes(plot, figure.png)
        print(f"plot: {plot}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
