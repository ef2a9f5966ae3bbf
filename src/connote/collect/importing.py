"""``connote collect import``: a study folder's Potato output into connote's formats, with its reliability."""

from __future__ import annotations

import inspect
from pathlib import Path

from connote.collect import study_module
from connote.collect.answers import ImportReport
from connote.collect.project import read_manifest
from connote.core.errors import InputError


def import_study(folder: str | Path, out: str | Path, *, aggregate: str = "majority", n_boot: int = 1000,
                 seed: int = 0, **options: object) -> ImportReport:
    """Import what is complete in ``folder`` into ``out``; the same answers always give the same files.

    Beside the study's own files it writes the study's reliability (annotators kept and excluded under the
    study's rule, Krippendorff's alpha with a bootstrap interval over items, ``n_boot`` resamples, ``seed``)
    and the labels aggregated by ``aggregate`` (``majority``, ``dawid-skene`` or ``mace``; see
    :mod:`connote.collect.study_reliability`). ``options`` are study-specific (``scores`` for
    vmc-evaluation); giving one a study does not take is an input error.
    """
    from connote.collect.aggregation import METHODS
    from connote.collect.study_reliability import reliability_of, write_reliability

    if aggregate not in METHODS:
        raise InputError(f"--aggregate must be one of {', '.join(METHODS)}, got {aggregate!r}")
    if n_boot < 0:
        raise InputError(f"--n-boot must be 0 or more, got {n_boot}")
    folder, out = Path(folder), Path(out)
    manifest = read_manifest(folder)
    module = study_module(manifest["study"])
    given = {k: v for k, v in options.items() if v is not None}
    accepted = inspect.signature(module.import_answers).parameters
    wrong = [k for k in given if k not in accepted]
    if wrong:
        raise InputError(f"{manifest['study']} takes no --{wrong[0]}", path=folder)
    report = module.import_answers(folder, manifest, out, **given)
    if report.collected is not None:
        block, rows = reliability_of(manifest, report.collected, method=aggregate, n_boot=n_boot, seed=seed)
        report.outputs += write_reliability(out, block, rows)
        report.reliability = block
    return report
