"""The one way a command runs a registered task: ``connote run TASK`` and every paper's run command.

:func:`run_registered` strings together what each run command used to write for itself:

1. the task from the registry (:data:`connote.tasks.TASKS`; an unknown name: exit 2 with the valid names),
2. its options checked against the task's typed :attr:`~connote.tasks.api.Task.options` (an unknown key or a
   value of the wrong type or range: exit 2, naming what is accepted),
3. the model spec checked before anything is written or loaded, once (the run shares the resolved spec),
4. the run folder locked for the whole run (every rank of a ``torchrun`` job: :func:`connote.runs.launch.hold_run`),
5. without data, the task's sample written into ``OUT/sample`` by rank 0 (:meth:`~connote.tasks.api.Task.sample_data`),
6. the task built from its data and options, run through :func:`connote.tasks.api.run_task` (seeded; resumable),
7. the task's own printing and exit status (:meth:`~connote.tasks.api.Task.print_result`), on rank 0 only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.tasks.api import Sample, Task


def option_fields(cls: type[Task]) -> list[dataclasses.Field]:
    """The fields of the task's options dataclass (none when it declares no options)."""
    return list(dataclasses.fields(cls.options)) if cls.options is not None else []


def has_sample(cls: type[Task]) -> bool:
    """Whether the task writes sample data of its own (:meth:`~connote.tasks.api.Task.sample_data` overridden)."""
    return getattr(cls.sample_data, "__func__", cls.sample_data) is not Task.sample_data.__func__  # type: ignore[attr-defined]


def accepted_options(cls: type[Task]) -> str:
    """``key=type (default)`` of every option the task accepts, for messages and help."""
    from connote.metrics.options import describe

    if cls.options is None:
        return "(none)"
    return ", ".join(f"{name}={kind} (default {default!r})" for name, kind, default, _ in describe(cls.options))


def parse_settings(pairs: list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """``key=value`` texts (``--set``) as a mapping; a text without ``=`` is refused (exit 2)."""
    settings: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--set {pair!r}: expected key=value")
        settings[key.strip().replace("-", "_")] = value
    return settings


def check_options(cls: type[Task], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (text from ``--set`` or typed values from a paper command) checked against the task's options:
    every option of the task with its value, the declared defaults where none is given. Exit 2 on an unknown key
    or a bad value, listing what the task accepts."""
    from connote.metrics.options import OptionError, parse_options

    fields = {f.name for f in option_fields(cls)}
    unknown = sorted(set(values) - fields)
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], sorted(fields), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(f"task {cls.name}: unknown option {unknown[0]!r}{hint}; accepted: {accepted_options(cls)}")
    if cls.options is None:
        return {}
    values = {k: _bool_text(v) if k in _bools(cls) else v for k, v in values.items()}
    try:
        parsed = parse_options(cls.options, values)
    except OptionError as exc:
        raise InputError(f"task {cls.name}: {exc}; accepted: {accepted_options(cls)}") from None
    return {f.name: getattr(parsed, f.name) for f in option_fields(cls)}




def _bools(cls: type[Task]) -> set[str]:
    import typing

    hints = typing.get_type_hints(cls.options)
    return {name for name, tp in hints.items() if tp is bool}


def _bool_text(value: Any) -> Any:
    """How ``--set`` spells a yes/no option's value (anything else is refused by the checker, naming it)."""
    from connote.core.checking import BOOL_WORDS

    return BOOL_WORDS.get(value.strip().lower(), value) if isinstance(value, str) else value


def run_registered(name: str | type[Task], *, model: str | None, out: str | Path, data: str | Path | None = None,
                   options: Mapping[str, Any] | None = None, seed: int | None = 0, progress: bool = True,
                   as_json: bool = False, check_invariance: int = 0, data_flag: str = "--data",
                   extra_results: dict[str, Any] | None = None) -> int:
    """Run task ``name`` (a registered name or a task class) with ``model`` into ``out`` and print its result;
    returns the exit status. ``data`` None: the task's sample, written into ``OUT/sample`` (``data_flag`` names the
    data in the notice, as the command spells it). ``seed`` None: seeded 0, recorded as not given."""
    from connote.tasks import TASKS

    cls = TASKS.get(name) if isinstance(name, str) else name
    checked = check_options(cls, options or {})
    out = Path(out)
    if model is None and data is not None and cls.default_model is None:
        raise InputError(f"task {cls.name}: --model is needed with {data_flag} (see `connote models --capability "
                         f"{cls.capability}`)")
    if data is None and not has_sample(cls):
        raise InputError(f"task {cls.name} has no sample data: give {data_flag}")
    seed_of_task = 0 if seed is None else seed
    # given data is read first (a bad file: exit 2 naming it), then the spec is checked, before anything is written
    task = cls.from_options(Path(data), checked, seed=seed_of_task, progress=progress) if data is not None else None
    from connote.models.registry import check_spec

    resolved = check_spec(model) if model is not None else None  # the one check of the run's spec
    from connote.runs.launch import hold_run

    with hold_run(out) as dist:  # refused at once if another run writes there (every rank of a launched job)
        sample = None
        if task is None:
            sample = _write_sample(cls, dist, out, data_flag, model)
            given = {k: v for k, v in (sample.options or {}).items() if checked.get(k) is None}
            task = cls.from_options(Path(sample.data), {**checked, **given}, seed=seed_of_task, progress=progress)
        spec = model or (sample.model if sample is not None else None) or cls.default_model
        if spec is None:
            raise InputError(f"task {cls.name}: --model is needed")
        from connote.tasks.api import run_task

        checked = resolved or check_spec(spec)  # the run's one resolved spec: the model and extra_results share it
        result = run_task(task, checked, out, seed=seed, check_invariance=check_invariance,
                          extra_results={**task.extra_results(checked), **(extra_results or {})})
    if not result.is_main:  # the other ranks of a distributed run: rank 0 reports
        return 0
    return task.print_result(result, as_json=as_json)


def _write_sample(cls: type[Task], dist: Any, out: Path, data_flag: str, model: str | None) -> Sample:
    from connote.runs.launch import main_rank_first

    folder = out / "sample"

    def notice(sample: Sample) -> str:
        detail = f" ({sample.detail})" if sample.detail else ""
        spec = model or sample.model
        return f"no {data_flag}: using the {sample.what} written to {folder}{detail}" + (
            f"; model {spec}" if spec and sample.model else "")

    made = main_rank_first(dist, lambda: cls.sample_data(folder), notice=notice,
                           first=None if folder.is_dir() else f"writing the {cls.name} sample…")
    assert made is not None
    return made

