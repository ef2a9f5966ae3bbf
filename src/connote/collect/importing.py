"""``connote collect import``: a study folder's Potato output into connote's formats."""

from __future__ import annotations

from pathlib import Path

from connote.collect import study_module
from connote.collect.answers import ImportReport
from connote.collect.project import read_manifest


def import_study(folder: str | Path, out: str | Path, **options: object) -> ImportReport:
    """Import what is complete in ``folder`` into ``out``; the same answers always give the same files."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    module = study_module(manifest["study"])
    return module.import_answers(folder, manifest, Path(out), **{k: v for k, v in options.items() if v is not None})
