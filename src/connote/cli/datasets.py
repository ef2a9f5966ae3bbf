"""``connote datasets``: the papers' datasets, where to get them, checking a local copy, converters."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Annotated, Optional

import typer

WIDTH = 80

datasets_app = typer.Typer(help="The papers' datasets: where to get them, check a local copy, convert releases.",
                           no_args_is_help=False, invoke_without_command=True)
convert_app = typer.Typer(help="Convert a public release into connote's formats.", no_args_is_help=True)
datasets_app.add_typer(convert_app, name="convert")


def _wrap(text: str, indent: str = "  ", width: int = WIDTH) -> str:
    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False, break_long_words=False)


@datasets_app.callback()
def list_datasets(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole catalog as JSON.")] = False,
) -> None:
    """List the datasets (name, what it is, how many files connote expects); see `datasets show NAME`."""
    if ctx.invoked_subcommand is not None:
        return
    from connote.datasets.catalog import DATASETS as CATALOGUE

    DATASETS = list(CATALOGUE.values())  # noqa: N806 - each paper's entries, as its plugin declares them
    if as_json:
        print(json.dumps([d.as_dict() for d in DATASETS], indent=2))
        return
    name_w = max(len(d.name) for d in DATASETS)
    files_w = len("FILES")
    title_w = WIDTH - name_w - files_w - len("CONVERT") - 6
    print(f"{'NAME':<{name_w}}  {'TITLE':<{title_w}}  FILES  CONVERT")
    for d in DATASETS:
        required = sum(1 for f in d.files if f.required)
        title = d.title if len(d.title) <= title_w else d.title[:title_w - 1] + "…"
        print(f"{d.name:<{name_w}}  {title:<{title_w}}  {required:>{files_w}}  {'yes' if d.convert else '-'}")
    print(textwrap.fill("FILES: files a complete copy needs. `connote datasets show NAME` gives sources, "
                        "licence and layout; `connote datasets check NAME PATH` verifies a local copy.", WIDTH))


@datasets_app.command("show")
def show_cmd(
    name: Annotated[str, typer.Argument(help="Dataset name (see `connote datasets`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Everything about one dataset: sources, licence, release status, expected files and formats."""
    from connote.datasets.catalog import FORMATS, get

    ds = get(name)
    if as_json:
        print(json.dumps(ds.as_dict(), indent=2))
        return
    print(f"{ds.name}: {ds.title}")
    print(_wrap(f"paper: {ds.paper}", ""))
    print(_wrap(f"used for: {ds.used_for}", ""))
    print("where to get it:")
    for link in ds.links:  # a URL gets a line of its own: wrapping would break copying it
        print(_wrap(f"{link.label}:"))
        print(f"    {link.url}")
    print("licence:")
    print(_wrap(ds.licence))
    print("release:")
    print(_wrap(ds.release))
    print("expected layout (relative to the copy's folder):")
    for f in ds.files:
        flag = "required" if f.required else "optional"
        print(f"  {f.path}  ({flag})")
        print(_wrap(f"{f.what}", "    "))
        print(_wrap(f"format: {f.format}: {FORMATS[f.format][0]}", "    "))
        print(_wrap(f"read by: {f.read_by}", "    "))
        facts = []
        if f.size_bytes is not None:
            facts.append(f"{f.size_bytes:,} bytes")
        elif f.size:
            facts.append(f"size {f.size}")
        if f.sha256:
            facts.append(f"sha256 {f.sha256}")
        if f.counts:
            facts.append(", ".join(f"{v:,} {k}" for k, v in f.counts.items()))
        if facts:
            print(_wrap("checked: " + "; ".join(facts), "    "))
        if f.counts_source:
            print(_wrap(f"source of the numbers: {f.counts_source}", "    "))
    if ds.convert:
        print(f"convert: {ds.convert}")
    for note in ds.notes:
        print(_wrap(f"note: {note}", ""))


@datasets_app.command("check")
def check_cmd(
    name: Annotated[str, typer.Argument(help="Dataset name (see `connote datasets`).")],
    path: Annotated[Path, typer.Argument(help="The local copy: its folder, or one of its files.")],
    entry: Annotated[Optional[str], typer.Option("--file", help="Which expected file PATH is (when its name "
                                                 "differs), e.g. captions.csv.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    show: Annotated[int, typer.Option(help="List at most this many problems per file.")] = 5,
) -> None:
    """Verify a local copy: files present or missing, sizes, checksums, and format (parsed by connote's
    readers). Exit 0 when complete, 1 when something is missing or differs."""
    from connote.datasets.catalog import check_copy

    report = check_copy(name, path, entry=entry)
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
        raise typer.Exit(0 if report.complete else 1)
    print(f"{report.dataset}: checking {report.root}")
    labels = {"ok": "ok", "missing": "MISSING", "absent": "absent", "differs": "DIFFERS", "unreadable": "BAD"}
    for f in report.files:
        extra = []
        if f.size_bytes is not None:
            extra.append(f"{f.size_bytes:,} bytes")
        if f.counts:
            extra.append(", ".join(f"{v:,} {k}" for k, v in f.counts.items()))
        print(f"{labels[f.status]:<8} {f.path}")
        if extra:
            print(_wrap("; ".join(extra), "         "))
        if f.status == "missing":
            print(_wrap(f"expected at {Path(report.root) / f.path.rstrip('/')}", "         "))
        elif f.status == "absent":
            print(_wrap("optional, not present", "         "))
        elif f.found_at and Path(f.found_at) != Path(report.root) / f.path.rstrip("/") and \
                Path(f.found_at) != Path(report.root):
            print(_wrap(f"found at {f.found_at}", "         "))
        for m in f.messages:
            print(_wrap(m, "         "))
        for p in f.problems[:show]:
            print(_wrap(f"problem: {p}", "         "))
        if len(f.problems) > show:
            print(_wrap(f"... {len(f.problems) - show} more problem(s) (--show N, or --json)", "         "))
    failed = [f for f in report.files if f.failed]
    required = [f for f in report.files if f.required]
    ok = sum(1 for f in required if f.status == "ok")
    if report.complete:
        print(f"complete: {ok} of {len(required)} required file(s) ok")
    else:
        kinds = {}
        for f in failed:
            kinds[f.status] = kinds.get(f.status, 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in kinds.items())
        print(textwrap.fill(f"incomplete: {ok} of {len(required)} required file(s) ok; {summary}: "
                            f"{', '.join(f.path for f in failed)}", WIDTH, subsequent_indent="  ",
                            break_on_hyphens=False), file=sys.stderr)
    raise typer.Exit(0 if report.complete else 1)


def _add_converters() -> None:
    """``connote datasets convert NAME``: one command per converter a plugin declares (``CONVERTERS``)."""
    from connote.core.plugins import PluginTable
    from connote.core.registry import import_target

    for name, target in PluginTable("converter", "CONVERTERS").items():
        module = import_target(target.split(":", 1)[0] + ":HELP") if ":" in target else None
        convert_app.command(name, help=module)(import_target(target))


def register(app: typer.Typer) -> None:
    _add_converters()
    app.add_typer(datasets_app, name="datasets")
