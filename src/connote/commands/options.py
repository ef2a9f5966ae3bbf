"""Options that the run commands share, declared once (``--check-invariance``, ``--seed``, ``--json``,
``--progress``, ``--track``)."""

from __future__ import annotations

from typing import Any

import typer

CHECK_INVARIANCE_HELP = ("Rerun the first N items one per model call and report how many outputs changed "
                         "(batch_invariance in the results; 0: no check).")


def check_invariance_option() -> Any:
    """``--check-invariance N`` (default 0): the task layer measures it (:mod:`connote.tasks.invariance`)."""
    return typer.Option("--check-invariance", metavar="N", help=CHECK_INVARIANCE_HELP)


def seed_option() -> Any:
    """``--seed N`` (default 0): torch is seeded with it before the model loads; recorded in the results."""
    return typer.Option("--seed", help="Seed of torch and of the task's own draws.")


def json_option() -> Any:
    """``--json``: print the task's summary as JSON instead of its table."""
    return typer.Option("--json", help="Print the results as JSON instead of the table.")


def progress_option() -> Any:
    """``--progress/--no-progress`` (default on): the progress bar on stderr."""
    return typer.Option("--progress/--no-progress", help="Progress bar on stderr.")


def check_mmshap_flags(**values: int | None) -> None:
    """``--grid``, ``--budget``, ``--sample`` of the MM-SHAP commands: positive when given (exit 2 naming the flag)."""
    from connote.core.errors import InputError

    for name, value in values.items():
        if value is not None and value < 1:
            raise InputError(f"--{name} must be a positive integer, got {value}")


def track_option() -> Any:
    """``--track mlflow|wandb|trackio``: log the finished run (:func:`connote.commands.tracking.log_run`)."""
    from connote.commands.tracking import TRACK_HELP

    return typer.Option("--track", metavar="TRACKER", help=TRACK_HELP)
