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
