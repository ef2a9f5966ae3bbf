"""The ``connote`` command line.

Each capability lives in its own module under ``connote.cli`` and exposes
``register(app: typer.Typer) -> None``. This module does not import them: the top-level group lists the
commands from a static table (``COMMANDS``: name, module, one-line help) and imports and builds a
module's commands only when one of them is invoked or its own help is shown, so ``connote --help``
costs Python, typer and this file. ``tests/cli/test_lazy_commands.py`` builds every module and checks
that the table says what the modules register.
``main(argv=None)`` returns the exit status, so tests call it in-process.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import NamedTuple

import typer
import typer.core
import typer.main

from connote.commands.entry import build_module_commands, known_error, run_app  # noqa: F401 (known_error: tests)


class CommandEntry(NamedTuple):
    """One top-level command: the module whose ``register`` adds it and its one-line help.

    ``help`` is what ``connote --help`` shows without importing the module: the first sentence of the
    command's own help (a test keeps them equal). (A NamedTuple: ``dataclasses`` would add
    ~10 ms to every start.)
    """

    module: str
    help: str
    #: an old spelling kept working (scripts, notebooks) but not listed: the paper's group is the name
    hidden: bool = False


#: The top-level commands in the order ``connote --help`` lists them (commands, then groups).
COMMANDS: dict[str, CommandEntry] = {
    "cv-probes": CommandEntry("connote.cv_probes.cli", "CV-Probes, contextual verb probes: evaluate a matching model "
                                                       "(Tables 3-5), explain it with MM-SHAP (Table 6)."),
    "vist": CommandEntry("connote.vist.cli", "Visual storytelling (VIST): read, validate, score, analyse; train "
                                             "and run story generators."),
    "vmc": CommandEntry("connote.vmc.cli", "Video metaphor captioning (VMC): parse the template, caption videos, "
                                           "score runs, train GIT-LLaVA."),
    "suite": CommandEntry("connote.suites.cli",
                          "The field's probe suites: SVO-Probes, VALSE, Winoground, SugarCrepe/ARO."),
    "run": CommandEntry("connote.commands.run", "Run any registered task with a model into a run folder "
                                                "(resumable); `connote tasks` lists them."),
    "report": CommandEntry("connote.cli.report",
                           "Put result folders side by side: the paper's tables (and figures) per task and data."),
    "runs": CommandEntry("connote.cli.runs", "List run folders: task, model, data, settings signature, headline "
                                             "numbers, date, state."),
    "score": CommandEntry("connote.cli.score", "Score predictions against references: BLEU-1..4, METEOR, ROUGE-L, "
                                               "CIDEr-D (pycocoevalcap's numbers)."),
    "agreement": CommandEntry("connote.vmc.cli", "Pairwise Cohen's kappa and Fleiss' kappa per "
                                                 "human-evaluation criterion (paper Table 3)."),
    "models": CommandEntry("connote.cli.catalog", "List the model backends and their capabilities; connote "
                                                  "models NAME shows one backend's options."),
    "tasks": CommandEntry("connote.cli.catalog", "List the tasks with their version, the model capability they "
                                                 "need and the data they read."),
    "collect": CommandEntry("connote.cli.collect",
                            "Collect the papers' human data with Potato: make a study, serve it, import it."),
    "reproduce": CommandEntry("connote.cli.reproduce", "List the papers' published tables, or measure runs against "
                                                       "one: measured | published | difference."),
    "datasets": CommandEntry("connote.cli.datasets",
                             "The papers' datasets: where to get them, check a local copy, convert releases."),
    # the spellings before each paper had one group; they keep working, unlisted
    "probe": CommandEntry("connote.cv_probes.cli.probe",
                          "Evaluate an image-text matching model on contextual verb probes (Tables 3-5).", hidden=True),
    "explain": CommandEntry("connote.cli.explain", "Explain image-text matching decisions with MM-SHAP (Table 6).",
                            hidden=True),
    "story": CommandEntry("connote.vist.cli",
                          "Visual storytelling models: train the seq2seq baseline, generate stories.", hidden=True),
    "metaphor": CommandEntry("connote.vmc.cli", "Video metaphor captioning: parse the template, caption videos, "
                                                "score runs, train GIT-LLaVA.", hidden=True),
}


def plugin_commands() -> dict[str, CommandEntry]:
    """The command groups plugins add: ``COMMANDS = {"name": ("module", "one-line help")}`` in a plugin module
    (:mod:`connote.core.plugins`); the module's ``register(app)`` adds them, as for connote's own. A name of
    connote's own table is refused (the plugin and the table are named)."""
    from connote.core.plugins import PluginError, declared

    found: dict[str, CommandEntry] = {}
    for mod, table in declared("COMMANDS"):
        for name, (module, help) in table.items():
            if name in COMMANDS or name in found:
                raise PluginError(f"connote plugin {mod.__name__}: command {name!r} is already a connote command")
            found[name] = CommandEntry(module, help)
    return found


def command_entry(name: str) -> CommandEntry | None:
    """``name``'s entry: connote's own table first, then the plugins' (read only when the name is not ours)."""
    return COMMANDS.get(name) or plugin_commands().get(name)


def module_available(module: str) -> bool:
    """Whether ``module`` is importable here, found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def entry_module(entry: CommandEntry) -> str | None:
    """The module that provides ``entry`` in this install, or None when it is absent."""
    return entry.module if module_available(entry.module) else None


class LazyGroup(typer.core.TyperGroup):
    """The top-level group: lists ``COMMANDS`` without importing them, builds a module on first use."""

    def list_commands(self, ctx) -> list[str]:
        entries = {**COMMANDS, **plugin_commands()}
        return [name for name, entry in entries.items() if not entry.hidden and entry_module(entry) is not None]

    def get_command(self, ctx, cmd_name: str):
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        entry = command_entry(cmd_name)
        if entry is None:
            return None
        module = entry_module(entry)
        if module is None:
            ctx.fail(f"command {cmd_name!r} needs the module {entry.module}, which this install of connote does "
                     "not have; reinstall connote or update it")
        # the commands a module registers together are built together
        self.commands.update(build_module_commands(module))
        if cmd_name not in self.commands:
            ctx.fail(f"module {module} registers no command {cmd_name!r}")
        return self.commands[cmd_name]

    def format_commands(self, ctx, formatter) -> None:
        # the one-line helps come from the table, so listing the commands imports none of them
        rows = [(name, command_entry(name).help) for name in self.list_commands(ctx)]  # type: ignore[union-attr]
        if not rows:
            return
        with formatter.section("Commands"):  # whole one-line helps, wrapped at the terminal's width
            formatter.write_dl(rows)

    def resolve_command(self, ctx, args):
        try:
            return super().resolve_command(ctx, args)
        except Exception as exc:
            # typer's "Did you mean" reads self.commands, which holds only the modules built so far
            message = getattr(exc, "message", None)
            if isinstance(message, str) and args and args[0] not in COMMANDS and "Did you mean" not in message:
                import difflib

                matches = difflib.get_close_matches(args[0], self.list_commands(ctx))
                if matches:
                    exc.message = f"{message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"
            raise


def build_app() -> typer.Typer:
    """The ``connote`` typer app, its commands lazy (see ``LazyGroup``)."""
    app = typer.Typer(
        name="connote",
        cls=LazyGroup,
        help="Vision-language research on what images imply: verb probes, stories, metaphors.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        # -h as --help everywhere, help as wide as the terminal (click's default stops at 80 columns)
        context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 10_000},
    )

    @app.callback(invoke_without_command=True)
    def _root(version: bool = typer.Option(False, "--version", help="Print connote's version and exit.",
                                           is_eager=True)) -> None:
        if version:
            import connote

            print(f"connote {connote.__version__}")
            raise typer.Exit(0)

    return app


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 findings/errors, 2 bad input/usage)."""
    return run_app(build_app(), argv, "connote")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
