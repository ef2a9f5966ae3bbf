"""Whether a ``connote ...`` line that the package prints (a hint, a catalogue entry, a table's needs) names a
command that exists: the one check of every command a text suggests."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z][a-z0-9-]*")


def command_words(line: str) -> list[str]:
    """The words of ``connote WORDS ...`` up to its first option, file or placeholder (where its arguments start)."""
    words = []
    for word in line.split():
        if not _WORD.fullmatch(word):
            break
        words.append(word)
    return words


def names_a_command(words: list[str]) -> bool:
    """Whether ``connote WORDS...`` reaches a command (the words after a leaf command are its arguments)."""
    from connote.cli import COMMANDS, build_module_commands, entry_module

    if not words or words[0] not in COMMANDS:
        return False
    command = build_module_commands(entry_module(COMMANDS[words[0]]))[words[0]]
    for word in words[1:]:
        subcommands = getattr(command, "commands", None)
        if not subcommands:
            return True
        if word not in subcommands:
            return False
        command = subcommands[word]
    return True
