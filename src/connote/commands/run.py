"""``connote run TASK``: any registered task, with any model that has the capability it needs.

The paper's run commands (``cv-probes run|explain``, ``suite run|explain``, ``vist generate``, ``vmc caption``)
are aliases of this one path (:func:`connote.tasks.running.run_registered`) with their own flag spellings.
A task's options come from its typed declaration (:attr:`connote.tasks.api.Task.options`): ``--set key=value``
(repeatable), checked before anything is written or loaded; ``connote run TASK --help`` lists them (name, type,
default, help) after the command's own options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import typer.core

from connote.commands.config import config_option
from connote.commands.options import check_invariance_option, json_option, progress_option, seed_option, track_option

HELP = "Run any registered task with a model into a run folder (resumable); `connote tasks` lists them."


def run(
    task: str = typer.Argument(..., help="A registered task (`connote tasks` lists them with what they read)."),
    model: str | None = typer.Option(None, "--model", "-m", help="Model spec backend[:weights][?k=v]; default: "
                                        "the task's own (on its sample data, the sample's)."),
    data: Path | None = typer.Option(None, "--data", "-d", help="The task's data. Default: its sample data, "
                                        "written to OUT/sample."),
    out: Path = typer.Option(..., "--out", "-o", help="Run folder (resumes if it exists)."),
    settings: list[str] | None = typer.Option(None, "--set", metavar="KEY=VALUE",
                                                 help="A task option (repeatable); a bad key or value lists the "
                                                      "task's options."),
    seed: Annotated[int, seed_option()] = 0,
    json_out: Annotated[bool, json_option()] = False,
    progress: Annotated[bool, progress_option()] = True,
    check_invariance: Annotated[int, check_invariance_option()] = 0,
    track: Annotated[str | None, track_option()] = None,
    config: Annotated[Path | None, config_option(run_folder="out")] = None,
) -> int:
    """Run any registered task with a model into a run folder (resumable); `connote tasks` lists them."""
    from connote.commands.tracking import run_registered
    from connote.tasks.running import parse_settings

    return run_registered(task, model=model, out=out, data=data, options=parse_settings(settings), seed=seed,
                          track=track, progress=progress, as_json=json_out, check_invariance=check_invariance)


#: Where :class:`RunCommand` keeps the task a help request names, between parsing and formatting the help.
_HELP_TASK = "connote.run.task"


class RunCommand(typer.core.TyperCommand):
    """``connote run``: its help for a named task (``connote run TASK --help``) ends with the task's options."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if any(a in ctx.help_option_names for a in args):  # the help is printed while parsing: find TASK first
            ctx.meta[_HELP_TASK] = _named_task(self, ctx, args)
        return super().parse_args(ctx, args)

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        super().format_epilog(ctx, formatter)
        name = ctx.meta.get(_HELP_TASK)
        if name:
            write_task_options(name, formatter)


def _named_task(command: Any, ctx: Any, args: list[str]) -> str | None:
    """The TASK argument of ``args`` as click's parser reads it (None when absent or the line does not parse)."""
    try:
        values, _, _ = command.make_parser(ctx).parse_args(args=list(args))
    except Exception:  # noqa: BLE001 - a line that does not parse gets the plain help; the run itself says why
        return None
    task = values.get("task")
    return task if isinstance(task, str) else None


def write_task_options(name: str, formatter: Any) -> None:
    """The help section of task ``name``: what it does and reads, and each ``--set`` option with its type,
    default and help, read from the task's declaration (:attr:`connote.tasks.api.Task.options`). An unknown
    name is refused as the run refuses it (exit 2, listing the tasks)."""
    from connote.tasks import TASKS
    from connote.tasks.running import has_sample

    cls = TASKS.get(name)
    with formatter.section(f"Task {cls.name} (version {cls.version}, model capability {cls.capability})"):
        formatter.write_text(f"{cls.title} Reads {cls.reads}."
                             + ("" if has_sample(cls) else " It has no sample data: --data is needed."))
    with formatter.section(f"Options of task {cls.name} (--set KEY=VALUE)"):
        rows = task_option_rows(cls)
        if rows:
            formatter.write_dl(rows)
        else:
            formatter.write_text("(none: the task takes no options)")


def task_option_rows(cls: type) -> list[tuple[str, str]]:
    """``(name=TYPE, help [default: value])`` of each option the task declares, in declaration order."""
    from connote.metrics.options import describe

    if cls.options is None:
        return []
    return [(f"{name}={kind}", f"{text} [default: {default!r}]".lstrip())
            for name, kind, default, text in describe(cls.options)]


def register(app: typer.Typer) -> None:
    app.command("run", cls=RunCommand)(run)
