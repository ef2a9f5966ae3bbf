"""The lazy top-level command group: its static table says what the command modules register.

``connote --help`` lists ``connote.cli.COMMANDS`` without importing the command modules; these tests
build every module and check the table against what it registers, so the table cannot drift.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from connote.cli import COMMANDS, CommandEntry, build_module_commands, entry_module, main, module_available

PRESENT = [name for name, entry in COMMANDS.items() if entry_module(entry) is not None]
LISTED = [name for name in PRESENT if not COMMANDS[name].hidden]


def _short_help(command) -> str:
    # click's short help without a width limit: the help's first sentence
    return command.get_short_help_str(limit=10**6)


def test_table_names_and_helps_equal_what_the_modules_register() -> None:
    modules = {e.module for e in COMMANDS.values() if module_available(e.module)}
    built = {module: build_module_commands(module) for module in sorted(modules)}
    assert "connote.cv_probes.cli.probe" in built and "connote.vist.cli" in built
    # every command a module registers is in the table under that module
    for module, commands in built.items():
        for name in commands:
            assert name in COMMANDS, f"{module} registers {name!r}, which connote.cli.COMMANDS lacks"
            entry = COMMANDS[name]
            assert module == entry.module, f"{name!r}: table says {entry.module}, built from {module}"
    # every table entry is registered by its module with the table's one-line help
    for name, entry in COMMANDS.items():
        module = entry_module(entry)
        if module is None:
            continue  # not in this install (added on another branch); main() says so, see below
        assert name in built[module], f"{module} does not register {name!r}"
        assert _short_help(built[module][name]) == entry.help, name


@pytest.mark.parametrize("name", PRESENT)
def test_every_command_shows_its_own_help(name: str, capsys) -> None:
    assert main([name, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"Usage: connote {name} " in out
    assert "Traceback" not in out


def test_top_level_help_lists_the_table_in_order(capsys) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    section = out.split("Commands:\n", 1)[1]
    listed = [line.split()[0] for line in section.splitlines() if line.startswith("  ") and line[2] != " "]
    assert listed == LISTED
    # the whole one-line help, wrapped (not cut) at the terminal's width
    assert "score Score predictions against references: BLEU-1..4, METEOR, ROUGE-L, CIDEr-D " \
           "(pycocoevalcap's numbers)." in " ".join(section.split())


def test_help_and_version_import_no_command_module() -> None:
    code = ("import sys; from connote.cli import main; a = main(['--help']); b = main(['--version']); "
            "print(a, b, sorted(m for m in sys.modules if m.startswith('connote.cli.') "
            "or m.split('.')[0] in ('torch', 'numpy', 'rich', 'click')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "0 0 []"


def test_a_missing_command_module_is_a_usage_error(monkeypatch, capsys) -> None:
    monkeypatch.setitem(COMMANDS, "ghost", CommandEntry("connote.cli.no_such_module", "Not installed."))
    assert main(["--help"]) == 0
    assert "ghost" not in capsys.readouterr().out
    assert main(["ghost", "--help"]) == 2
    err = capsys.readouterr().err
    assert "connote.cli.no_such_module" in err and "Traceback" not in err


def test_a_module_that_fails_to_import_is_not_hidden(monkeypatch, tmp_path) -> None:
    # a broken command module (an import error inside it) must surface, not read as "not installed"
    (tmp_path / "connote_broken_cli.py").write_text("import connote_no_such_dependency\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(COMMANDS, "broken", CommandEntry("connote_broken_cli", "Broken."))
    with pytest.raises(ModuleNotFoundError, match="connote_no_such_dependency"):
        main(["broken"])


def test_unknown_command_suggests_from_the_table(capsys) -> None:
    assert main(["scor"]) == 2
    assert "Did you mean 'score'" in capsys.readouterr().err



@pytest.mark.parametrize(("old", "new"), [(["probe"], ["cv-probes", "run"]), (["explain"], ["cv-probes", "explain"]),
                                          (["story", "generate"], ["vist", "generate"]),
                                          (["metaphor", "caption"], ["vmc", "caption"])])
def test_the_older_spellings_run_the_same_commands_unlisted(old, new, capsys) -> None:
    assert main([*old, "--help"]) == 0
    old_help = capsys.readouterr().out
    assert main([*new, "--help"]) == 0
    new_help = capsys.readouterr().out
    # the same options (the usage line names the spelling used)
    if old != ["explain"]:  # connote explain adds --suite
        assert old_help.split("Options:", 1)[1] == new_help.split("Options:", 1)[1]
    assert main(["--help"]) == 0
    listing = capsys.readouterr().out.split("Commands:\n", 1)[1]
    assert f"  {old[0]} " not in listing and f"  {new[0]} " in listing
