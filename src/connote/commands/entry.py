"""How every connote command runs: its module's commands built with the vocabulary's old spellings, then run
behind one error boundary (one line and exit 2 for bad input, no traceback). ``connote.cli.main`` runs the
``connote`` app this way, and so does an entry point of a paper (``python -m connote.vmc.train``), which may not
import ``connote.cli`` (the layer above the papers)."""

from __future__ import annotations

import importlib
import sys

import typer
import typer.core
import typer.main
from typer.exceptions import TyperException

from connote.core.errors import ConnoteError


def run_module(module: str, argv: list[str], prog_name: str) -> int:
    """Run one of the commands ``module.register(app)`` adds (``argv[0]`` names it) as ``connote`` runs it."""
    group = typer.core.TyperGroup(name=prog_name, commands=build_module_commands(module),
                                  context_settings={"help_option_names": ["-h", "--help"],
                                                    "max_content_width": 10_000})
    return run_app(group, argv, prog_name)


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


def run_app(app: typer.Typer | typer.core.TyperGroup, argv: list[str] | None, prog_name: str) -> int:
    """Run ``app`` on ``argv`` behind the error boundary of every connote command; returns the exit status (0 ok,
    1 findings/errors, 2 bad input/usage): usage errors and :class:`ConnoteError` s as one line, the errors of
    :func:`known_error` as one line naming the command, anything else raised as it is."""
    try:
        result = app(args=argv, prog_name=prog_name, standalone_mode=False)
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
        close_process_group()
        command = " ".join(a for a in (argv if argv is not None else sys.argv[1:])[:2] if not a.startswith("-"))
        print(f"error: connote {command}: {known}" if command else f"error: {prog_name}: {known}", file=sys.stderr)
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


def close_process_group() -> None:
    """Close a torch.distributed process group still open on the way out of a failed command (never imports torch).

    A rank that exits with gloo's group open can abort at interpreter exit ("terminate called without an active
    exception", status -6 instead of the command's 2) when a peer rank died: its threads are torn down with the
    interpreter. Closing the group first leaves the exit status the command chose.
    """
    tdist = sys.modules.get("torch.distributed")
    if tdist is None:
        return
    try:
        if tdist.is_available() and tdist.is_initialized():
            tdist.destroy_process_group()
    except Exception:  # noqa: BLE001 - a broken group is being abandoned; the command's own error is reported
        pass


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


