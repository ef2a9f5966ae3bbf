"""Options that several run commands share, declared once (``--check-invariance``, ``--track``)."""

from __future__ import annotations

from typing import Any

import typer

CHECK_INVARIANCE_HELP = ("Rerun the first N items one per model call and report how many outputs changed "
                         "(batch_invariance in the results; 0: no check).")


def check_invariance_option() -> Any:
    """``--check-invariance N`` (default 0): the task layer measures it (:mod:`connote.tasks.invariance`)."""
    return typer.Option("--check-invariance", metavar="N", help=CHECK_INVARIANCE_HELP)


def track_option() -> Any:
    """``--track mlflow|wandb|trackio``: log the finished run (:func:`connote.commands.tracking.log_run`)."""
    from connote.commands.tracking import TRACK_HELP

    return typer.Option("--track", metavar="TRACKER", help=TRACK_HELP)
