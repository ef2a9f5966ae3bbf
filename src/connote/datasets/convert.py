"""The generic half of the release converters (``connote datasets convert NAME``): reading a release table
(CSV, TSV, JSON Lines or a JSON list) row by row, the report of what was read, written and skipped, and its
printing. Each paper's converter lives in its package and is declared by its plugin (``CONVERTERS``):
CV-Probes' in :mod:`connote.cv_probes.convert`, VMC's in :mod:`connote.vmc.convert`.

Bad rows are recorded with file and line (or record number) and skipped; an unreadable input (not
found, not UTF-8, malformed JSON, no usable columns) is an ``InputError`` (exit status 2). Nothing
is written outside the output file or folder: the names written are fixed, never taken from data.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import parse_json


@dataclass
class BadRow:
    """A row that was skipped, and why."""

    path: str
    line: int | None
    message: str
    record: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else f"record {self.record}"
        return f"{self.path}: {where}: {self.message}"


@dataclass
class ConvertReport:
    """What a conversion read, wrote and skipped."""

    source: str
    written: list[str] = field(default_factory=list)
    rows_read: int = 0
    converted: int = 0
    bad_rows: list[BadRow] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["bad_rows"] = [str(b) for b in self.bad_rows]
        return out


# --------------------------------------------------------------------------- reading tables


def _norm(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def decode(path: Path) -> str:
    from connote.core.jsonio import read_text

    return read_text(path, what="input")


Row = tuple[int | None, int, dict[str, Any]]
"""(line or None, record number from 1, the row with normalised column names)."""


def read_table(path: Path, bad: list[BadRow]) -> tuple[list[Row], list[str]]:
    """Rows of a CSV/TSV, JSON Lines or JSON-list file with normalised column names, and the columns.

    Malformed lines and rows with the wrong number of fields go to ``bad``; a file that cannot be read
    at all is an ``InputError``.
    """
    text = decode(path)
    suffix = path.suffix.lower()
    rows: list[Row] = []
    if suffix in (".jsonl", ".ndjson"):
        for lineno, line in enumerate(text.split("\n"), start=1):  # not splitlines(): strings may hold U+2028
            if not line.strip():
                continue
            try:
                obj = parse_json(line, path, line=lineno)
            except InputError as exc:  # one bad line is recorded; the others are converted
                column = f" (column {exc.column})" if exc.column is not None else ""
                bad.append(BadRow(str(path), lineno, f"{exc.message}{column}"))
                continue
            if not isinstance(obj, dict):
                bad.append(BadRow(str(path), lineno, f"expected a JSON object, got {type(obj).__name__}"))
                continue
            rows.append((lineno, len(rows) + 1, {_norm(k): v for k, v in obj.items()}))
    elif suffix == ".json":
        data = parse_json(text, path)
        if not isinstance(data, list):
            raise InputError("expected a JSON list of records (or use .jsonl for JSON Lines)", path=path)
        for n, obj in enumerate(data, start=1):
            if not isinstance(obj, dict):
                bad.append(BadRow(str(path), None, f"expected a JSON object, got {type(obj).__name__}", n))
                continue
            rows.append((None, n, {_norm(k): v for k, v in obj.items()}))
    else:
        first = text.splitlines()[0] if text.strip() else ""
        delimiter = "\t" if suffix == ".tsv" or ("\t" in first and "," not in first) else ","
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        header: list[str] | None = None
        previous_end = 0
        try:
            for raw in reader:
                start, previous_end = previous_end + 1, reader.line_num
                if not raw or all(not v.strip() for v in raw):
                    continue
                if header is None:
                    header = [_norm(h) for h in raw]
                    continue
                if len(raw) != len(header):
                    bad.append(BadRow(str(path), start, f"{len(raw)} fields where the header has {len(header)}"))
                    continue
                rows.append((start, len(rows) + 1, dict(zip(header, raw))))
        except csv.Error as exc:
            raise InputError(f"cannot parse as CSV: {exc}", path=path, line=reader.line_num) from None
        if header is None:
            raise InputError("empty file: no header row", path=path, line=1)
        return rows, header
    columns = sorted({k for _, _, r in rows for k in r})
    return rows, columns


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value != value:  # NaN from a pandas export
        return ""
    return str(value).strip()


def iter_bad(report: ConvertReport, limit: int | None = None) -> Iterator[str]:
    """The bad rows as printable lines (at most ``limit``)."""
    for n, bad in enumerate(report.bad_rows):
        if limit is not None and n >= limit:
            yield f"... and {len(report.bad_rows) - limit} more"
            return
        yield str(bad)


def print_report(report: ConvertReport, as_json: bool) -> None:
    """Print what a conversion wrote (or its JSON) and the bad rows; exit 1 when rows were skipped."""
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        for path in report.written:
            print(f"wrote {path}")
        print("; ".join(f"{v:,} {k}" for k, v in report.counts.items()))
        for note in report.notes:
            print(textwrap.fill(note, width=80, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False))
    if report.bad_rows:
        print(f"{len(report.bad_rows)} bad row(s) skipped of {report.rows_read} read:", file=sys.stderr)
        for line in iter_bad(report, limit=20):
            print(f"  {line}", file=sys.stderr)
        import typer

        raise typer.Exit(1)
