"""``connote collect import``: a study folder's Potato output into connote's formats."""

from __future__ import annotations

import inspect
from pathlib import Path

from connote.collect import study_module
from connote.collect.answers import ImportReport
from connote.collect.project import read_manifest
from connote.core.errors import InputError


def import_study(folder: str | Path, out: str | Path, **options: object) -> ImportReport:
    """Import what is complete in ``folder`` into ``out``; the same answers always give the same files.

    ``options`` are study-specific (``scores`` for vmc-evaluation); giving one a study does not take
    is an input error.
    """
    folder = Path(folder)
    manifest = read_manifest(folder)
    module = study_module(manifest["study"])
    given = {k: v for k, v in options.items() if v is not None}
    accepted = inspect.signature(module.import_answers).parameters
    wrong = [k for k in given if k not in accepted]
    if wrong:
        raise InputError(f"{manifest['study']} takes no --{wrong[0]}", path=folder)
    return module.import_answers(folder, manifest, Path(out), **given)
