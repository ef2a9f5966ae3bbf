"""The report's document model: what every task contributes, independent of the output format.

A *run kind* knows one kind of result folder (a probe run, a storytelling run, a VMC human evaluation, ...):

- ``recognise(folder) -> Run | None``: the folder's results, or None when the folder is not of this kind
  (raise :class:`~connote.core.errors.InputError` when it is of this kind but broken);
- ``section(runs) -> Section``: the paper's tables and figures for runs that share a :attr:`Run.group`.

Kinds are registered by name in :data:`RUN_KINDS` as lazy ``"module:attr"`` targets (an object with
``recognise`` and ``section``), so loading a report imports only the kinds it needs.

Renderers (Markdown, LaTeX, CSV, HTML, JSON, terminal) only see :class:`Section`, :class:`Table` and
:class:`Figure`: a table is built once and written in every format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.core.plugins import PluginTable

#: The first cell of a run's row in a published table (``run: NAME``); the terminal shortens NAME there too.
RUN_ROW = "run: "

@dataclass
class Run:
    """One result folder as loaded for a report."""

    folder: Path
    #: The run kind's name (a key of :data:`RUN_KINDS`), e.g. ``cv-probes``.
    kind: str
    #: Short name shown in tables (model and setting), e.g. ``hf-blip-itm (original)``.
    name: str
    #: Runs share a table only when their groups are equal: e.g. (data path or hash, task version,
    #: scoring signature). Rendered in the section title when runs are shown apart.
    group: tuple[str, ...]
    #: The loaded results (results.json / an older run.json / scores, whatever the kind reads).
    results: dict[str, Any] = field(default_factory=dict)
    #: The run's data in words (path and short content digest), quoted when groups are told apart.
    data: str = ""


@dataclass
class Table:
    """A table built once, written in every format."""

    #: Short identifier (file-name safe), e.g. ``probe-accuracy``; names the CSV block.
    key: str
    title: str
    header: list[str]
    #: Formatted cells, one list per row (same length as ``header``).
    rows: list[list[str]]
    #: Notes printed under the table (definitions, significance marks, legend of abbreviations).
    notes: list[str] = field(default_factory=list)
    #: Machine-readable values (for ``--json``), one dict per row; optional.
    values: list[dict[str, Any]] = field(default_factory=list)
    #: Index of rows after which a rule is drawn (LaTeX ``\\midrule``), e.g. before a Human row.
    rules_after: list[int] = field(default_factory=list)


@dataclass
class Figure:
    """A plot (PNG bytes, embedded in the HTML page and written beside the Markdown)."""

    key: str
    title: str
    png: bytes
    caption: str = ""


@dataclass
class Section:
    """The tables and figures of one group of comparable runs."""

    title: str
    kind: str
    runs: list[Run]
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON form (figures by key and title only)."""
        return {"title": self.title, "kind": self.kind,
                "runs": [{"folder": str(r.folder), "name": r.name, "group": list(r.group)} for r in self.runs],
                "tables": [{"key": t.key, "title": t.title, "header": t.header, "rows": t.rows, "notes": t.notes,
                            "values": t.values} for t in self.tables],
                "figures": [{"key": f.key, "title": f.title, "caption": f.caption} for f in self.figures],
                "notes": self.notes}


#: Run kinds by name, as lazy targets (see the module docstring): each paper's, declared by its plugin module
#: (``RUN_KINDS`` in ``connote/<paper>/plugin.py``), then the generic ones below. The order is the order of
#: recognition: a folder is the first kind whose ``recognise`` returns a run. A kind may also carry ``expects``
#: (a few words on the files it reads), quoted when no kind recognises a folder, and, when its paper publishes
#: tables of this kind (:mod:`connote.core.published`), how a run is put beside them
#: (:mod:`connote.report.published`): ``published_values(table, run)`` -> ``(values, intervals)`` on the table's
#: columns and scale, or None when the run is not in the table's setting; ``why_not_published(table, run)`` -> why
#: not, in words; ``published_x100``: the columns the paper prints on 0-1 that the report shows x 100 (``*``: all).
RUN_KINDS: PluginTable = PluginTable("run kind", "RUN_KINDS", {
    "metric-correlation": "connote.report.correlation:KIND",
    "study": "connote.report.study:KIND",  # before agreement: an import's labels file beside its reliability
    "agreement": "connote.report.agreement:KIND",
})


def kind_object(name: str) -> Any | None:
    """The kind object registered as ``name``; None when its module does not exist (yet)."""
    from connote.core.registry import import_target

    target = RUN_KINDS[name]
    module = target.split(":", 1)[0]
    try:
        return import_target(target)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise
