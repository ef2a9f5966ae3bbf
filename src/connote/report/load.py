"""Load result folders for a report: recognise each folder's kind, group comparable runs, build sections.

* :func:`recognise` tries the kinds of :data:`~connote.report.document.RUN_KINDS` in order; the first
  whose ``recognise`` returns a :class:`~connote.report.document.Run` wins. A kind whose module is not
  installed (not written yet) is skipped.
* :func:`build_sections` groups runs by ``(kind, Run.group)``. Runs of one kind on different data or task
  versions never share a table: by default they are refused (exit 2, naming each group); with
  ``allow_mixed`` each group becomes its own section, titled with its data and version.
* :func:`find_data` and :func:`shown_path` locate a run's recorded data from its folder; what counts as "the
  same data" is each paper's (e.g. :func:`connote.cv_probes.report.data_identity`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.core.jsonio import read_json
from connote.report.document import RUN_KINDS, Run, Section, kind_object


def available_kinds() -> dict[str, Any]:
    """Registered kinds whose modules exist, in recognition order, then the kinds every registered task
    declares through the task contract (:func:`connote.report.tasks.task_kinds`)."""
    from connote.report.tasks import task_kinds

    kinds = {}
    for name in RUN_KINDS:
        obj = kind_object(name)
        if obj is not None:
            kinds[name] = obj
    kinds.update(task_kinds(kinds))
    return kinds


def recognise(path: str | Path, kinds: dict[str, Any] | None = None) -> Run:
    """The run in ``path`` (a result folder, or a file some kind reads directly, e.g. labels.csv).

    Raises :class:`InputError` naming the path and the kinds tried when none recognises it.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("no such file or folder (expected a connote result folder)", path=path)
    kinds = available_kinds() if kinds is None else kinds
    for name, kind in kinds.items():
        run = kind.recognise(path)
        if run is not None:
            run.kind = run.kind or name
            return run
    tried = "; ".join(f"{name} ({getattr(kind, 'expects', 'its result files')})" for name, kind in kinds.items())
    found = "holds no results.json and is" if path.is_dir() and not (path / "results.json").exists() else "is"
    raise InputError(f"{found} not a result folder any report kind recognises; tried {tried}", path=path)


def load_runs(paths: Iterable[str | Path]) -> list[Run]:
    """Recognise every path (kinds are imported once)."""
    kinds = available_kinds()
    return [recognise(p, kinds) for p in paths]


def describe_group(runs: Sequence[Run]) -> str:
    """A group in words: its data (as each kind described it) and the group's own terms."""
    data = sorted({r.data for r in runs if r.data})
    terms = list(runs[0].group)
    if data:
        terms = [t for t in terms if not t.startswith("data ")]
        return ", ".join([f"data {' / '.join(data)}", *terms])
    return ", ".join(terms)


def group_runs(runs: Sequence[Run]) -> dict[str, dict[tuple[str, ...], list[Run]]]:
    """Runs by kind (in recognition order of first appearance), then by group (in input order)."""
    grouped: dict[str, dict[tuple[str, ...], list[Run]]] = {}
    for run in runs:
        grouped.setdefault(run.kind, {}).setdefault(tuple(run.group), []).append(run)
    return grouped


def build_sections(runs: Sequence[Run], *, allow_mixed: bool = False,
                   kinds: dict[str, Any] | None = None) -> list[Section]:
    """One section per kind (or, with ``allow_mixed``, per kind and group); refuse mixed groups otherwise."""
    from connote.report.published import add_published

    kinds = available_kinds() if kinds is None else kinds
    grouped = group_runs(runs)
    mixed = {kind: groups for kind, groups in grouped.items() if len(groups) > 1}
    if mixed and not allow_mixed:
        parts = []
        for kind, groups in mixed.items():
            for members in groups.values():
                parts.append(f"{kind}: {', '.join(str(r.folder) for r in members)} on {describe_group(members)}")
        raise InputError("these runs are on different data or task versions and cannot share a table: "
                         + "; ".join(parts) + ". Report each group separately, or pass --allow-mixed for one "
                         "section per group")
    sections = []
    for kind, groups in grouped.items():
        for members in groups.values():
            distinguish_names(members)
            section = kinds[kind].section(list(members))
            add_published(section)  # each run beside the paper's matching row (connote.core.published)
            add_invariance_notes(section)
            add_speed_table(section)
            if len(groups) > 1:
                section.title = f"{section.title} — {describe_group(members)}"
            sections.append(section)
    return sections


def run_field(run: Run, key: str) -> Any:
    """``key`` of a run's results file, or of its run metadata for a scored generation run (None when absent)."""
    meta = run.results.get("run")
    return run.results.get(key) or (meta.get(key) if isinstance(meta, dict) else None)


def add_invariance_notes(section: Section) -> None:
    """A note per run that measured batch invariance (``--check-invariance``): its results file's
    ``batch_invariance``, or its run metadata's for a scored generation run."""
    from connote.tasks.invariance import invariance_line

    for run in section.runs:
        figures = run_field(run, "batch_invariance")
        if isinstance(figures, dict) and figures:
            section.notes.append(f"{run.name}: {invariance_line(figures)}")


def add_speed_table(section: Section) -> None:
    """A speed table (every format) of the section's runs that recorded one (``speed`` in their results): items
    and seconds computed in that run, items/s, and for generation tokens, tokens/s and time to first token."""
    from connote.report.document import Table

    header = ["Run", "Items", "Seconds", "Items/s", "Tokens", "Tokens/s", "First token (s)", "Reused"]
    keys = ["items", "seconds", "items_per_s", "tokens", "tokens_per_s", "time_to_first_token_s", "reused"]
    rows, values = [], []
    for run in section.runs:
        speed = run_field(run, "speed")
        if isinstance(speed, dict):
            rows.append([run.name, *("–" if speed.get(k) is None else str(speed[k]) for k in keys)])
            values.append({"run": run.name, **{k: speed.get(k) for k in keys}})
    if rows:
        section.tables.append(Table(f"{section.kind}-speed", "Speed (what each run computed itself)", header, rows,
                                    notes=["Items/s and tokens/s over the seconds spent computing in that run; "
                                           "rows reused from the run store are counted apart."], values=values))


def distinguish_names(runs: Sequence[Run]) -> None:
    """Runs that would share a name in one table (e.g. one model run twice) get their folder's name added."""
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.name] = counts.get(run.name, 0) + 1
    for run in runs:
        if counts[run.name] > 1:
            run.name = f"{run.name} [{run.folder.name or run.folder}]"


# ----------------------------------------------------------------------------- shared by kinds


def read_results(folder: Path, name: str = "results.json") -> dict[str, Any] | None:
    """``folder/name`` as a JSON object; None when absent; InputError when it is not valid JSON."""
    path = folder / name
    if not folder.is_dir() or not path.is_file():
        return None
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", path=path)
    return data


def find_data(recorded: str | None, folder: Path) -> Path | None:
    """The data file a run recorded, found as recorded (absolute, or relative to the working directory it
    ran in: tried here and beside the run folder); None when it cannot be found."""
    if not recorded:
        return None
    path = Path(recorded)
    for candidate in (path, folder.parent / path, folder / path.name):
        if candidate.is_file():
            return candidate
    return None


def shown_path(path: Path, folder: Path) -> str:
    """``path`` as the report shows it: relative to the run folder (``../data/probes.csv``), so a report reads the
    same whichever machine or working directory made it; absolute only where no relative path exists."""
    try:
        return Path(os.path.relpath(Path(path).resolve(), Path(folder).resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return str(Path(path).resolve())


#: How the sections' "Data:" notes introduce the paths of :func:`shown_path`.
DATA_NOTE = "Data (path from the run folder): "
