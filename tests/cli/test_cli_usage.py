"""The command line's exit statuses: usage errors are 2 and print usage, never a traceback."""

import pytest

from connote.cli import main


@pytest.mark.parametrize("argv", [
    ["probe", "--bogus"],
    ["metaphor", "caption", "--videos", "/nonexistent"],  # missing --model
    ["nonsense"],
    ["score", "--hyp", "/nonexistent.json", "--ref", "/nonexistent2.json"],
])
def test_usage_and_input_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("probe", "report", "models", "score", "explain", "vist", "story", "metaphor", "agreement"):
        assert command in out


def test_models_lists_backends(capsys):
    assert main(["models"]) == 0
    assert "hf-blip-itm" in capsys.readouterr().out


def test_version(capsys) -> None:
    import connote
    from connote.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"connote {connote.__version__}"


def test_tasks_lists_each_task_with_its_version(capsys) -> None:
    import json

    from connote.cli import main
    from connote.tasks import TASKS

    assert main(["tasks", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(TASKS.names())
    assert rows["cv-probes"]["capability"] == "match" and rows["vist-storytelling"]["capability"] == "generate"
    assert all(isinstance(r["version"], int) and r["reads"] for r in rows.values())
