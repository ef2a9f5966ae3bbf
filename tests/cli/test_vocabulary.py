"""One flag vocabulary: every command built from ``connote.cli`` is walked, and the checked-in table
(``connote.cli.vocabulary``) says which spelling each meaning has; old spellings are hidden aliases that still
work; ``-h`` is ``--help`` everywhere; every command that prints a table or a summary takes ``--json``."""

from __future__ import annotations

import re

import pytest

from connote.cli import COMMANDS, build_module_commands, main, module_available
from connote.commands.vocabulary import ALIASES, MEANINGS

#: commands with no table or summary to print as JSON, and why
NO_JSON = {
    "collect serve": "serves a study until stopped",
    "story train": "trains and writes a checkpoint (progress on stderr)",
    "story train-captioner": "trains and writes a checkpoint (progress on stderr)",
    "story features": "writes a feature file",
    "metaphor train": "trains and writes a checkpoint",
    "vist anonymize": "prints the anonymized text itself",
    # these print one JSON object already (a human default instead is not done yet)
    "metaphor caption": "prints one JSON summary line",
    "collect make": "prints one JSON summary line",
    "collect sample": "prints one JSON summary line",
}
#: the older group names (hidden aliases) reach the same commands as the paper's group
OLDER_GROUPS = {"story": "vist", "metaphor": "vmc"}
for _path, _why in list(NO_JSON.items()):
    _group, _, _rest = _path.partition(" ")
    if _group in OLDER_GROUPS:
        NO_JSON[f"{OLDER_GROUPS[_group]} {_rest}"] = _why


def _leaves():
    modules = sorted({e.module for e in COMMANDS.values() if module_available(e.module)})
    out = {}

    def walk(path, command):
        subs = getattr(command, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk([*path, name], sub)
        else:
            out[" ".join(path)] = command

    for module in modules:
        for name, command in build_module_commands(module).items():
            walk([name], command)
    return out


LEAVES = _leaves()


def _spellings(command) -> set[str]:
    return {o for p in command.params for o in (*p.opts, *p.secondary_opts)}


def test_the_tree_is_walked() -> None:
    assert {"score", "probe", "explain", "vist score", "metaphor score", "collect make"} <= set(LEAVES)
    assert len(LEAVES) >= 35


def test_no_old_spelling_is_declared_and_each_meaning_has_one_spelling() -> None:
    for path, command in LEAVES.items():
        declared = _spellings(command)
        assert not declared & set(ALIASES), f"{path} declares old spelling(s) {declared & set(ALIASES)}"
    # each kept spelling is in use, and the table gives it its meaning
    used = set().union(*(_spellings(c) for c in LEAVES.values()))
    for new in ALIASES.values():
        assert new in used, new
        assert any(new in key.split("/") for key in MEANINGS), f"{new} has no meaning in the table"
    # progress: one pair of flags, never a --quiet beside it
    for path, command in LEAVES.items():
        progress = [p for p in command.params if "--no-progress" in (*p.opts, *p.secondary_opts)]
        assert all(p.opts == ["--progress"] and p.secondary_opts == ["--no-progress"] for p in progress), path


@pytest.mark.parametrize("old,new", sorted(ALIASES.items()))
def test_old_spellings_still_work_and_are_hidden(old, new, capsys) -> None:
    having = [p for p, c in LEAVES.items() if new in _spellings(c)]
    assert having
    for path in having:
        command = LEAVES[path]
        assert command._connote_aliases[old] == new, path
        assert main([*path.split(), "--help"]) == 0
        shown = re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", capsys.readouterr().out)
        assert shown is None, f"{path} shows {old}"
    # parsed as the kept spelling: the same value lands in the same parameter
    command = LEAVES[having[0]]
    param = next(p for p in command.params if new in (*p.opts, *p.secondary_opts))
    value = [] if param.is_flag else ["7"] if new == "--n-boot" else ["x"]
    ctx_old = command.make_context(having[0], [old, *value], resilient_parsing=True)
    ctx_new = command.make_context(having[0], [new, *value], resilient_parsing=True)
    assert ctx_old.params[param.name] == ctx_new.params[param.name]


def test_bootstrap_alias_reaches_the_check_under_the_new_name(tmp_path, capsys) -> None:
    assert main(["metaphor", "score", str(tmp_path), "--bootstrap", "-1"]) == 2
    assert "--n-boot must be at least 0, got -1" in capsys.readouterr().err


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_dash_h_is_help(path, capsys) -> None:
    assert main([*path.split(), "-h"]) == 0
    out = capsys.readouterr().out
    assert f"Usage: connote {path}" in out and "-h, --help" in out


def test_top_level_dash_h_and_full_width(monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    assert main(["-h"]) == 0
    out = capsys.readouterr().out
    # whole one-line helps at the terminal's width, not cut at 80 columns
    assert "  score      Score predictions against references: BLEU-1..4, METEOR, ROUGE-L, CIDEr-D " \
           "(pycocoevalcap's numbers).\n" in out
    assert main(["score", "-h"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) > 100


@pytest.mark.parametrize("path", sorted(LEAVES))
def test_json_on_every_command_that_prints_a_table_or_summary(path) -> None:
    if path in NO_JSON:
        assert "--json" not in _spellings(LEAVES[path]), f"{path} has --json now: drop it from NO_JSON"
        return
    assert "--json" in _spellings(LEAVES[path]), f"{path} prints a table or summary but takes no --json"


def test_config_files_in_old_spellings_still_read(tmp_path) -> None:
    from connote.commands.config import _keys, read_config

    cfg = tmp_path / "old.yaml"
    cfg.write_text("bootstrap: 50\n", encoding="utf-8")
    assert read_config(cfg, _keys(LEAVES["metaphor score"])) == {"bootstrap": 50}  # the parameter of --n-boot
    cfg.write_text("quiet: true\n", encoding="utf-8")
    assert read_config(cfg, _keys(LEAVES["probe"])) == {"progress": False}
    cfg.write_text("from: probes.csv\n", encoding="utf-8")
    assert read_config(cfg, _keys(LEAVES["collect make"])) == {"sources": ["probes.csv"]}
