"""``connote cv-probes run|explain|build``: the CV-Probes commands under the paper's one name.

``connote probe`` and ``connote explain`` (with its ``--suite`` route) are the older spellings, kept working.
"""

from __future__ import annotations

import typer

HELP = ("CV-Probes, contextual verb probes: evaluate a matching model (Tables 3-5), explain it with MM-SHAP "
        "(Table 6).")


def register(app: typer.Typer) -> None:
    from connote.cv_probes.cli.build import build_cmd
    from connote.cv_probes.cli.explain import explain
    from connote.cv_probes.cli.probe import probe

    group = typer.Typer(help=HELP, no_args_is_help=True)
    group.command("run")(probe)
    group.command("explain")(explain)
    group.command("build")(build_cmd)
    app.add_typer(group, name="cv-probes")
