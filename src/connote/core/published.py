"""The papers' published numbers as data: each paper package holds its tables (``published*.json``).

``connote/cv_probes/published.json`` (CV-Probes, seed 001: Tables 3-6), ``connote/vist/published.json``
(VIST, seed 000: Tables 2-3, and AREL's released album-protocol scores) and ``connote/vmc/published.json``
(VMC, seed 003: Tables 1-3). Every table records its source (paper and table), the setting its numbers were
computed under, its columns and rows, what a run needs to reproduce it, and, where a number cannot be recomputed
from the seed, says so (``recomputable: false`` and a ``note``). A row names the connote model specs it
corresponds to (``models``: substrings of a run's model spec), so a run can be put beside its row.

Nothing here imports the paper packages: each paper's plugin module names its file (``PUBLISHED``), which is
read by path, so the report, ``connote reproduce`` and the tests all read the same data.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.plugins import PluginTable


def _published_files(mod: Any, files: dict[str, str]) -> list[tuple[str, Path]]:
    from connote.core.plugins import plugin_dir

    return [(paper, plugin_dir(mod) / name) for paper, name in files.items()]


#: paper -> its data file, inside that paper's package: declared by its plugin module (``PUBLISHED``).
FILES: PluginTable = PluginTable("published tables", "PUBLISHED", entries=_published_files)


@dataclass(frozen=True)
class PublishedRow:
    row: str
    values: dict[str, float]
    models: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class PublishedTable:
    id: str
    paper: str
    title: str
    source: str
    kind: str
    setting: str
    columns: tuple[str, ...]
    rows: tuple[PublishedRow, ...]
    needs: str
    scale: float = 1.0
    match: dict[str, Any] = field(default_factory=dict)
    measure: str = ""
    recomputable: bool = True
    note: str = ""

    def row(self, name: str) -> PublishedRow:
        for r in self.rows:
            if r.row == name:
                return r
        raise KeyError(name)

    def row_for(self, model: str) -> PublishedRow | None:
        """The row whose model patterns occur in ``model`` (a run's model spec or name); the longest pattern wins."""
        text = model.lower()
        best: tuple[int, PublishedRow] | None = None
        for r in self.rows:
            for pattern in r.models:
                if pattern.lower() in text and (best is None or len(pattern) > best[0]):
                    best = (len(pattern), r)
        return best[1] if best else None


def _table(paper: str, obj: dict[str, Any]) -> PublishedTable:
    rows = tuple(PublishedRow(row=r["row"], values={k: float(v) for k, v in r["values"].items()},
                              models=tuple(r.get("models") or ()), note=r.get("note", "")) for r in obj["rows"])
    return PublishedTable(id=obj["id"], paper=paper, title=obj["title"], source=obj["source"], kind=obj["kind"],
                          setting=obj.get("setting", ""), columns=tuple(obj["columns"]), rows=rows,
                          needs=obj.get("needs", ""), scale=float(obj.get("scale", 1)),
                          match=dict(obj.get("match") or {}),
                          measure=obj.get("measure", ""), recomputable=bool(obj.get("recomputable", True)),
                          note=obj.get("note", ""))


def tables() -> list[PublishedTable]:
    """Every published table of every paper, in file order."""
    out: list[PublishedTable] = []
    for path in FILES.values():
        data = json.loads(path.read_text(encoding="utf-8"))
        out += [_table(data["paper"], t) for t in data["tables"]]
    return out


def table(table_id: str) -> PublishedTable:
    """The table ``table_id`` (e.g. ``vmc/table1``); an InputError lists the valid ids."""
    found = {t.id: t for t in tables()}
    if table_id not in found:
        raise InputError(f"no published table {table_id!r}; valid: {', '.join(found)}")
    return found[table_id]


def for_kind(kind: str) -> list[PublishedTable]:
    """The tables a report section of run kind ``kind`` is compared with."""
    return [t for t in tables() if t.kind == kind]


def compare(measured: dict[str, float | None], intervals: dict[str, Any], row: PublishedRow,
            columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """Per column: measured, published, difference (measured - published) and whether the published value is
    inside the run's interval (None when the run has no interval for that column)."""
    out = []
    for col in columns:
        pub = row.values.get(col)
        got = measured.get(col)
        if pub is None:
            continue
        ci = intervals.get(col)
        diff = None if got is None or (isinstance(got, float) and math.isnan(got)) else got - pub
        inside = None if not ci or ci[0] is None else bool(ci[0] <= pub <= ci[1])
        out.append({"column": col, "measured": got, "interval": list(ci) if ci else None, "published": pub,
                    "difference": diff, "inside": inside})
    return out
