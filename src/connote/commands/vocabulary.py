"""One flag vocabulary across connote's commands: each meaning has one spelling; old spellings are hidden aliases.

:data:`ALIASES` maps an old spelling to the one kept (the most used). :func:`accept_aliases` lets a built
command take the old spelling (``--bootstrap 50`` reads as ``--n-boot 50``) without showing it in help;
``tests/cli/test_vocabulary.py`` walks every command and checks that no old spelling is declared again.
"""

from __future__ import annotations

from typing import Any

#: old spelling -> the spelling kept (accepted by every command that has the kept one; not shown in help)
ALIASES: dict[str, str] = {
    "--bootstrap": "--n-boot",  # bootstrap resamples
    "--quiet": "--no-progress",  # no progress bar
    "-q": "--no-progress",
    "--from": "--data",  # the input data file or folder
    "--output-dir": "--out",  # where results go
    "--ref": "--refs",  # the references (gold) scored against
    "--gold": "--refs",
    "-g": "--refs",
}

#: the kept spelling of each meaning the table settles, in words (the test reads it)
MEANINGS: dict[str, str] = {
    "--n-boot": "bootstrap resamples",
    "--progress/--no-progress": "a progress bar on stderr",
    "--data": "the input data file or folder",
    "--out": "where results go (run or study folder)",
    "--refs": "the references (gold) predictions are scored against",
}


def config_alias(key: str, keys: dict[str, Any], value: Any) -> tuple[Any, Any] | None:
    """(parameter, value) for a ``--config`` key written in an old spelling (``quiet: true`` ->
    ``progress: false``), or None when ``key`` is no old spelling of a parameter in ``keys``."""
    new = ALIASES.get("--" + key)
    if new is None:
        return None
    if new.startswith("--no-"):
        param = keys.get(new[5:])
        if param is not None and isinstance(value, bool):
            return param, not value
        return None
    param = keys.get(new[2:])
    return (param, value) if param is not None else None


def _declared(command: Any) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts)}


def accept_aliases(command: Any) -> None:
    """Let ``command`` (a click command or group, recursively) take the old spellings of its options."""
    subs = getattr(command, "commands", None)
    if subs:
        for sub in subs.values():
            accept_aliases(sub)
        return
    declared = _declared(command)
    table = {old: new for old, new in ALIASES.items() if new in declared and old not in declared}
    if not table or getattr(command, "_connote_aliases", None) is not None:
        return
    parse = command.parse_args

    def parse_args(ctx: Any, args: list[str]) -> list[str]:
        out: list[str] = []
        for i, arg in enumerate(args):
            if arg == "--":
                out += args[i:]
                break
            head, eq, value = arg.partition("=")
            out.append(table[head] + eq + value if head in table else arg)
        return parse(ctx, out)

    command.parse_args = parse_args
    command._connote_aliases = table
