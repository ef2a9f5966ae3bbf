"""``connote vist ...``: data, validation, scoring, analysis, and the story generators (train, generate; also
under their older group ``connote story``).

One module per command group (``info``: info, validate; ``score``; ``stats``; ``correlate``; ``train``: train,
train-captioner, features; ``generate``: generate, demo, backends; ``construct``: filter, split, anonymize); each
registers its commands on :data:`vist_app` or :data:`story_app` when :func:`register` imports it. The commands'
work is done by the paper's modules; heavy dependencies (torch, transformers, spaCy) are imported inside them.
"""

from __future__ import annotations

import typer

vist_app = typer.Typer(help="Visual storytelling (VIST): read, validate, score and analyse.",
                       no_args_is_help=True)
story_app = typer.Typer(help="Visual storytelling models: train the seq2seq baseline, generate stories.",
                        no_args_is_help=True)


VIST_HELP = ("Visual storytelling (VIST): read, validate, score, analyse; train and run story generators.")


#: The command modules, in the order ``connote vist --help`` lists their commands.
MODULES = ("info", "score", "stats", "correlate", "train", "generate", "construct")


def register(app: typer.Typer) -> None:
    """Add ``vist`` (every VIST command) and ``story`` (the older group of the model commands) to the app."""
    import importlib

    for module in MODULES:  # each registers its commands on vist_app or story_app
        importlib.import_module(f"connote.vist.cli.{module}")
    merged = typer.Typer(help=VIST_HELP, no_args_is_help=True)
    merged.registered_commands = [*vist_app.registered_commands, *story_app.registered_commands]
    app.add_typer(merged, name="vist")
    app.add_typer(story_app, name="story")


def _exit(code: int) -> None:
    raise typer.Exit(code)
