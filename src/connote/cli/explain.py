"""``connote cv-probes explain``: CV-Probes' MM-SHAP command, and with ``--suite`` the same on a probe suite's pairs.

The one command that spans two packages (:mod:`connote.cv_probes.cli.explain` and :mod:`connote.suites.cli`),
so it is put together here, above both: the CV-Probes command's options plus ``--suite``.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Optional

import typer

from connote.cv_probes.cli.explain import explain as explain_probes

SUITE_OPTION = inspect.Parameter(
    "suite", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[str],
    default=typer.Option(None, "--suite", help="Explain a probe suite's pairs instead of a probe manifest: "
                         "svo-probes | valse | winoground | sugarcrepe (as connote suite explain; --data is then "
                         "the suite's files)."))


def explain(*, suite: Optional[str] = None, **options: Any) -> int:
    if suite is None:
        return explain_probes(**options)
    from connote.suites.cli import explain as explain_suite

    return explain_suite(suite, data=options["data"], images=None, model=options["model"], out=options["out"],
                         budget=options["budget"], estimator=options["estimator"], compat=options["compat"],
                         sample=options["sample"], seed=options["seed"], grid=options["grid"],
                         allow_network=options["allow_network"], json_out=options["json_out"],
                         progress=options["progress"], track=options["track"], config=None)


# typer reads the signature and the resolved annotations: the CV-Probes command's, with --suite added
_hints = typing.get_type_hints(explain_probes, include_extras=True)
_params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=_hints[p.name])
           for p in inspect.signature(explain_probes).parameters.values()]
explain.__signature__ = inspect.Signature([*_params[:-1], SUITE_OPTION, _params[-1]])  # type: ignore[attr-defined]
explain.__annotations__ = {p.name: p.annotation for p in explain.__signature__.parameters.values()}
explain.__doc__ = explain_probes.__doc__


def register(app: typer.Typer) -> None:
    app.command("explain")(explain)
