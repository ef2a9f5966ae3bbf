"""How commands print: JSON (finite numbers, UTF-8) and aligned plain-text tables."""

from __future__ import annotations

import json
from typing import Any

import typer


def echo_json(obj: Any) -> None:
    from connote.runs.scores import finite_json

    typer.echo(json.dumps(finite_json(obj), indent=2, ensure_ascii=False, default=str, allow_nan=False))


def echo_columns(header: list[str], rows: list[list[str]], right: int = 1) -> None:
    """Print an aligned plain-text table (two spaces between columns; columns from ``right`` on
    right-aligned), so that it fits a terminal and pastes as text."""
    widths = [max(len(str(r[k])) for r in [header, *rows]) for k in range(len(header))]
    for r in [header, *rows]:
        typer.echo("  ".join(str(c).rjust(w) if k >= right else str(c).ljust(w)
                             for k, (c, w) in enumerate(zip(r, widths))).rstrip())
