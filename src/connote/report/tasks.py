"""The report section every registered task gets from the task contract (:mod:`connote.tasks.api`).

A task names how ``connote report`` shows its run folders in :attr:`~connote.tasks.api.Task.report_kind`:

* the name of a run kind of :data:`~connote.report.document.RUN_KINDS` (a paper's own tables: ``cv-probes``,
  ``vist-storytelling``, ...), or a lazy ``"module:attr"`` kind object of the task's own package;
* ``None``: :class:`TaskKind`, built here from the task's class. It recognises a folder whose results file
  (:attr:`~connote.tasks.api.Task.results_file`) names the task, groups runs by task version and data, and
  shows one row per run with the task's :attr:`~connote.tasks.api.Task.report_columns` (by default every
  number :meth:`~connote.tasks.api.Task.aggregate` put at the top level of the results).

So a new task gets a report section by registering in :data:`connote.tasks.TASKS`, without an edit here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.report.document import Run, Section, Table


def _value(results: dict[str, Any], path: str) -> Any:
    value: Any = results
    for part in path.split("/"):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


class TaskKind:
    """The contract's run kind of one task class (see the module docstring)."""

    def __init__(self, task: type) -> None:
        self.task = task
        self.name = task.name
        self.expects = f"{task.results_file} of task {task.name}"

    def recognise(self, folder: Path) -> Run | None:
        from connote.core.jsonio import read_json
        from connote.runs.store import results_path

        folder = Path(folder)
        path = results_path(folder, self.task.results_file)
        if not folder.is_dir() or not path.is_file():
            return None
        try:
            results = read_json(path)
        except InputError:
            return None  # not valid JSON: not this kind's to judge
        if not isinstance(results, dict) or results.get("task") != self.name:
            return None
        data = results.get("data") or (results.get("config") or {}).get("data")
        group = (f"task version {results.get('task_version')}", *([f"data {data}"] if data else []))
        model = results.get("model") or (results.get("model_fingerprint") or {}).get("backend") or "?"
        return Run(folder=folder, kind=self.name, name=str(model), group=group, results=results,
                   data=str(data or ""))

    def columns(self, runs: list[Run]) -> list[tuple[str, str]]:
        """The declared columns, else the top-level numbers of the aggregate (in the first run's order)."""
        declared = list(getattr(self.task, "report_columns", ()) or ())
        if declared:
            return declared
        from connote.tasks.api import RUN_FIELDS

        skip = set(RUN_FIELDS) | {f"{self.task.label}_this_run"}
        keys: list[str] = []
        for run in runs:
            for key, value in run.results.items():
                if key not in skip and key not in keys and isinstance(value, (int, float)) \
                        and not isinstance(value, bool):
                    keys.append(key)
        return [(key, key) for key in keys]

    def section(self, runs: list[Run]) -> Section:
        columns = self.columns(runs)
        header = ["Run", *(title for title, _ in columns)]
        rows = [[r.name, *(_cell(_value(r.results, path)) for _, path in columns)] for r in runs]
        values = [{"run": r.name, "folder": str(r.folder), **{path: _value(r.results, path) for _, path in columns}}
                  for r in runs]
        version = runs[0].results.get("task_version")
        table = Table(key=self.name, title=f"{self.task.title} (task version {version})", header=header, rows=rows,
                      values=values)
        return Section(title=self.task.title, kind=self.name, runs=runs, tables=[table])


def task_kinds(known: dict[str, Any]) -> dict[str, Any]:
    """The run kinds the registered tasks declare that ``known`` (the report's table) does not hold yet:
    a :class:`TaskKind` for each task without ``report_kind``, the imported object for a ``"module:attr"``."""
    from connote.core.registry import import_target
    from connote.tasks import TASKS

    kinds: dict[str, Any] = {}
    for name in TASKS.names():
        task = TASKS.get(name)
        declared = getattr(task, "report_kind", None)
        if declared is None:
            kinds.setdefault(name, TaskKind(task))
        elif ":" in declared and declared not in known:
            kinds.setdefault(declared, import_target(declared))
    return {k: v for k, v in kinds.items() if k not in known}
