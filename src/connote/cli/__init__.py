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
from typer.exceptions import TyperException

from connote.core.errors import ConnoteError


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


def build_module_commands(module: str) -> dict:
    """Import ``module``, let it register on a fresh app and build its click commands, by name."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    importlib.import_module(module).register(app)
    _plain_help(app)
    commands = dict(typer.main.get_group(app).commands)
    from connote.commands.vocabulary import accept_aliases

    for command in commands.values():
        accept_aliases(command)  # old flag spellings still accepted, not shown
    return commands


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


def _plain_help(app: typer.Typer) -> None:
    """Click's plain help for every command group: typer's rich help imports rich's markdown and syntax
    highlighting (most of ``connote --help``'s start-up time) for boxes around the same text."""
    app.rich_markup_mode = None
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _plain_help(group.typer_instance)


def _click_exceptions() -> tuple[tuple[type, ...], tuple[type, ...], tuple[type, ...]]:
    """(Exit, Abort, ClickException) classes of typer's click and, when something imported it, plain click's.

    Recent typer ships its own copy of click; plain click (~60 ms to import) is only caught, never imported.
    """
    exits: list[type] = [typer.Exit]
    aborts: list[type] = [typer.Abort]
    errors: list[type] = [TyperException]
    errors += [c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"]
    click = sys.modules.get("click")
    if click is not None:
        exits.append(click.exceptions.Exit)
        aborts.append(click.exceptions.Abort)
        errors.append(click.ClickException)
    return tuple(exits), tuple(aborts), tuple(errors)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (0 ok, 1 findings/errors, 2 bad input/usage)."""
    app = build_app()
    try:
        result = app(args=argv, prog_name="connote", standalone_mode=False)
    except Exception as exc:  # noqa: BLE001 - sorted below; anything else propagates unchanged
        exits, aborts, errors = _click_exceptions()
        if isinstance(exc, exits):
            return int(getattr(exc, "exit_code", 0))
        if isinstance(exc, aborts):
            print("Aborted.", file=sys.stderr)
            return 130
        if isinstance(exc, errors):
            show = getattr(exc, "show", None)
            if callable(show):
                show()
            else:
                print(f"error: {exc}", file=sys.stderr)
            return int(getattr(exc, "exit_code", 2))
        if isinstance(exc, ConnoteError):
            print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        known = known_error(exc)
        if known is None:
            raise
        command = " ".join(a for a in (argv if argv is not None else sys.argv[1:])[:2] if not a.startswith("-"))
        print(f"error: connote {command}: {known}", file=sys.stderr)
        return 2
    return int(result) if isinstance(result, int) else 0


def known_error(exc: BaseException) -> str | None:
    """The one-line message of an exception every command may meet (None: not one of them, let it raise).

    The error boundary of every command: bytes that are not UTF-8, a missing or unreadable file, a full
    disk, a damaged SQLite file, a weights file that is a pickle with code in it (``torch.load(...,
    weights_only=True)`` refuses it), a torchrun peer rank that died.
    """
    import errno
    import pickle
    import sqlite3

    if isinstance(exc, pickle.UnpicklingError) or "Weights only load failed" in str(exc):
        return (f"refused: not a safe weights file (loading it would run code from it: "
                f"{str(exc).strip().splitlines()[0][:160]})")
    if isinstance(exc, UnicodeDecodeError):
        return f"an input is not UTF-8 text ({exc.reason}: byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return f"the disk is full ({exc.filename or exc}); free space and run the same command again to resume"
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, sqlite3.OperationalError) and "full" in str(exc).lower():
        return f"the disk is full ({exc}); free space and run the same command again to resume"
    if isinstance(exc, sqlite3.DatabaseError):
        return f"a SQLite file is damaged or of another program ({exc})"
    rank = _distributed_rank()
    if rank is not None and (type(exc).__name__ in ("DistError", "DistBackendError", "DistNetworkError")
                             or (isinstance(exc, RuntimeError) and any(
                                 w in str(exc).lower() for w in ("gloo", "nccl", "connection closed by peer",
                                                                  "connection reset by peer")))):
        first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        return (f"rank {rank}: another rank of the torchrun job stopped ({first}); every batch committed is kept, "
                "run the same command again to resume")
    return None


def _distributed_rank() -> int | None:
    """This process's rank when it runs under torchrun (None otherwise); never imports torch itself."""
    import os

    rank = os.environ.get("RANK")
    if rank is None or "torch" not in sys.modules:
        return None
    try:
        return int(rank)
    except ValueError:
        return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
