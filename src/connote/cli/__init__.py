"""The ``connote`` command line.

Each capability lives in its own module under ``connote.cli`` and exposes
``register(app: typer.Typer) -> None``; this module only assembles them. Command modules
import heavy dependencies inside their commands, so ``connote --help`` stays fast.
``main(argv=None)`` returns the exit status, so tests call it in-process.
"""

from __future__ import annotations

import importlib
import sys

import click
import typer
from typer.exceptions import TyperException

from connote.errors import ConnoteError

# Modules that contribute commands; a missing one (not written yet) is skipped.
COMMAND_MODULES = (
    "connote.cli.probe",
    "connote.cli.score",
    "connote.cli.explain",
    "connote.cli.vist",
    "connote.cli.metaphor",
    "connote.cli.catalog",
    "connote.cli.datasets",
    "connote.cli.collect",
    "connote.cli.report",
)


def build_app() -> typer.Typer:
    app = typer.Typer(
        name="connote",
        help="Vision-language research on what images imply: verb probes, stories, metaphors.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    @app.callback(invoke_without_command=True)
    def _root(version: bool = typer.Option(False, "--version", help="Print connote's version and exit.",
                                           is_eager=True)) -> None:
        if version:
            import connote

            print(f"connote {connote.__version__}")
            raise typer.Exit(0)

    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(app)
    _plain_help(app)
    return app


def _plain_help(app: typer.Typer) -> None:
    """Click's plain help for every command group: typer's rich help imports rich's markdown and syntax
    highlighting (most of ``connote --help``'s start-up time) for boxes around the same text."""
    app.rich_markup_mode = None
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _plain_help(group.typer_instance)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 findings/errors, 2 bad input/usage)."""
    app = build_app()
    try:
        result = app(args=argv, prog_name="connote", standalone_mode=False)
    # typer ships its own copy of click; catch its exceptions and plain click's alike
    except (click.exceptions.Exit, typer.Exit) as exc:
        return int(exc.exit_code)
    except (click.exceptions.Abort, typer.Abort):
        print("Aborted.", file=sys.stderr)
        return 130
    except (click.ClickException, TyperException) as exc:
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            print(f"error: {exc}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 2))
    except ConnoteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    return int(result) if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
