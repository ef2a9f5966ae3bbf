"""``benchmarks/code_counts.py``: the long command functions and long modules of issue #37 item 4, counted with
``ast``; and the source keeps to the limits (no command function over 60 lines, no module over 600 lines outside
the exempt ones)."""

from __future__ import annotations

from pathlib import Path

from tests.support import benchmark_scripts


def _function(name: str, lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{k} = {k}\n" for k in range(lines - 1))
    return f"{indent}def {name}():\n{body}"


def test_counts_nested_command_functions_and_long_modules_and_keeps_exempt_ones_apart(tmp_path: Path,
                                                                                        capsys) -> None:
    counts = benchmark_scripts.load("code_counts")
    src = tmp_path / "connote"
    for folder in ("cli", "vist/cli", "vmc", "metrics/meteor", "explain", "models"):
        (src / folder).mkdir(parents=True, exist_ok=True)
    # a command registered inside register(app): both the outer function and the nested command are counted
    (src / "cli" / "score.py").write_text("def register(app):\n    @app.command('score')\n"
                                          + _function("score", 61, "    "))
    (src / "vist" / "cli" / "correlate.py").write_text(_function("correlate_cmd", 60))  # at the limit: fine
    (src / "vmc" / "cli_synth.py").write_text("class Group:\n" + _function("synth", 70, "    "))
    (src / "vmc" / "scoring.py").write_text(_function("score_runs", 200))  # not a command module
    (src / "models" / "long.py").write_text("x = 1\n" * 601)
    (src / "metrics" / "meteor" / "_align.py").write_text("x = 1\n" * 700)
    (src / "explain" / "shapley.py").write_text("x = 1\n" * 700)
    found = counts.counts(src)
    assert [(f["function"], f["lines"]) for f in found["command_functions"]] == [
        ("cli/score.py:1 register", 63), ("cli/score.py:3 register.score", 61), ("vmc/cli_synth.py:2 Group.synth", 70)]
    assert found["modules"] == [{"module": "models/long.py", "lines": 601}]
    assert {m["module"] for m in found["exempt_modules"]} == {"explain/shapley.py", "metrics/meteor/_align.py"}
    assert counts.main(["--src", str(src)]) == 0
    out = capsys.readouterr().out
    assert "command functions over 60 lines: 3" in out and "modules over 600 lines" in out and "models/long.py" in out


def test_connote_has_no_command_function_over_60_lines_nor_module_over_600() -> None:
    counts = benchmark_scripts.load("code_counts").counts()
    assert counts["command_functions"] == []
    assert counts["modules"] == []
