"""``connote run TASK``: any registered task, with any model that has the capability it needs.

The paper's run commands (``cv-probes run|explain``, ``suite run|explain``, ``vist generate``, ``vmc caption``)
are aliases of this one path (:func:`connote.tasks.running.run_registered`) with their own flag spellings.
A task's options come from its typed declaration (:attr:`connote.tasks.api.Task.options`): ``--set key=value``
(repeatable), checked before anything is written or loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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


def register(app: typer.Typer) -> None:
    app.command("run")(run)
