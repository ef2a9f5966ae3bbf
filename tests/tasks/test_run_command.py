"""``connote run TASK``: every registered task runs through the one run path, and bad input stops it at once.

The loop runs each task of :data:`connote.tasks.TASKS` on its own sample data (written into ``OUT/sample``) with
the sample's model: the embedded offline matcher for the matching and MM-SHAP tasks, the retrieval and
nearest-caption baselines for VIST and VMC, a Batch API output file for the synthetic metaphors. The recipe's
task (docs/architecture.md) runs from the shell in ``tests/tasks/test_task_recipe.py``.
"""

from __future__ import annotations

import json

import pytest

from connote.cli import main
from connote.tasks import TASKS
from connote.tasks.running import option_fields


def _settings(name: str) -> list[str]:
    """A small run: one explained pair for the MM-SHAP tasks."""
    fields = {f.name for f in option_fields(TASKS.get(name))}
    return ["--set", "sample=1"] if "sample" in fields else []


@pytest.mark.slow
@pytest.mark.parametrize("name", TASKS.names())
def test_every_registered_task_runs_on_its_sample(name, tmp_path, capsys) -> None:
    pytest.importorskip("torch")
    out = tmp_path / name
    code = main(["run", name, "--out", str(out), "--no-progress", "--json", *_settings(name)])
    printed = capsys.readouterr()
    cls = TASKS.get(name)
    results = json.loads((out / cls.results_file).read_text(encoding="utf-8"))
    assert results["task"] == name and results["task_version"] == cls.version and results["fingerprint"]
    assert code == (1 if results["n_failed"] else 0), printed.err  # a failed item: exit 1, the run goes on
    assert "no --data: using the" in printed.err and (out / "sample").is_dir()
    assert printed.out.strip()  # the task's summary
    assert (out / "config.yaml").is_file()  # the resolved config, for --config

    # the same command again resumes every item it computed (a failed one is tried again)
    assert main(["run", name, "--out", str(out), "--no-progress", "--json", *_settings(name)]) == code
    again = json.loads((out / cls.results_file).read_text(encoding="utf-8"))
    assert again["n_computed_this_run"] == results["n_failed"] and again["fingerprint"] == results["fingerprint"]


def test_the_paper_commands_and_connote_run_write_the_same_results(tmp_path, capsys) -> None:
    """``cv-probes run`` is an alias of ``connote run cv-probes``: same folder layout, same numbers."""
    assert main(["cv-probes", "run", "--out", str(tmp_path / "alias"), "--no-progress"]) == 0
    alias = capsys.readouterr().out
    assert main(["run", "cv-probes", "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    direct = capsys.readouterr().out
    a = json.loads((tmp_path / "alias" / "results.json").read_text())
    b = json.loads((tmp_path / "run" / "results.json").read_text())
    assert a["fingerprint"] == b["fingerprint"] and a["cells"] == b["cells"]
    assert alias.replace(str(tmp_path / "alias"), "OUT") == direct.replace(str(tmp_path / "run"), "OUT")


@pytest.mark.parametrize(("argv", "expected"), [
    (["run", "no-such-task"], "unknown task 'no-such-task'; valid tasks: cv-probes, cv-probes-mmshap"),
    (["run", "cv-probes", "--set", "captionz=simplified"],
     "task cv-probes: unknown option 'captionz' (did you mean 'captions'?); accepted: captions=one of"),
    (["run", "cv-probes", "--set", "captions=plain"],
     "task cv-probes: option captions='plain': expected one of 'original', 'simplified'; accepted:"),
    (["run", "cv-probes", "--set", "pairs_per_chunk=0"], "option pairs_per_chunk='0': must be"),
    (["run", "cv-probes", "--set", "allow_network=maybe"], "option allow_network='maybe': expected true/false"),
    (["run", "vmc-captioning", "--set", "temperature=-1"], "option temperature='-1': must be"),
    (["run", "cv-probes-mmshap", "--set", "estimator=guess"], "unknown estimator 'guess'; valid:"),
    (["run", "cv-probes", "--set", "captions"], "--set 'captions': expected key=value"),
    (["run", "cv-probes", "--model", "objects?nope=1"], "unknown option 'nope' for model backend objects"),
    (["run", "vmc-captioning", "--data", "videos.csv"], "task vmc-captioning: --model is needed with --data"),
])
def test_bad_input_is_one_line_and_exit_2_before_anything_is_written(argv, expected, tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()  # nothing written, no folder locked


def test_boolean_and_numeric_settings_are_typed(tmp_path) -> None:
    from connote.tasks.running import check_options, parse_settings

    cls = TASKS.get("cv-probes")
    checked = check_options(cls, parse_settings(["allow-network=true", "pairs_per_chunk=16"]))
    assert checked == {"captions": "original", "pairs_per_chunk": 16, "allow_network": True}
    assert check_options(TASKS.get("vmc-captioning"), {"temperature": "0.2"})["temperature"] == 0.2


def test_a_config_file_gives_the_settings(tmp_path, capsys) -> None:
    """``--config`` holds ``set`` like every other option; the run folder gets the resolved config."""
    config = tmp_path / "run.yaml"
    config.write_text("set: [captions=simplified]\njson: true\nprogress: false\n")
    out = tmp_path / "run"
    assert main(["run", "cv-probes", "--out", str(out), "--config", str(config)]) == 0
    assert json.loads(capsys.readouterr().out)["captions"] == "simplified"
    assert "captions=simplified" in (out / "config.yaml").read_text()


def test_every_task_declares_options_that_check(tmp_path) -> None:
    """Each registered task's options have defaults that pass the one checker (what ``--set`` starts from)."""
    from connote.tasks.running import check_options, has_sample

    for name in TASKS.names():
        cls = TASKS.get(name)
        defaults = check_options(cls, {})
        assert set(defaults) == {f.name for f in option_fields(cls)}, name
        assert has_sample(cls), f"{name} has no sample: `connote run {name}` needs --data"


def test_run_task_help_lists_the_tasks_options_from_its_declaration(tmp_path, capsys) -> None:
    """``connote run TASK --help``: the command's help, then every option the task declares with its type,
    default and help (from ``Task.options``); nothing is run or written."""
    for name in TASKS.names():
        cls = TASKS.get(name)
        out = tmp_path / name
        assert main(["run", name, "--out", str(out), "--help"]) == 0
        text = "".join(capsys.readouterr().out.split())  # the help wraps at the terminal's width (and at hyphens)
        assert "--setKEY=VALUE" in text and f"Optionsoftask{name}(--setKEY=VALUE):" in text, name
        assert "".join(cls.title.split()) in text and not out.exists()
        for field in option_fields(cls):
            assert f"{field.name}=" in text, (name, field.name)
            assert f"[default:{field.default!r}]".replace(" ", "") in text, (name, field.name)
            assert "".join(field.metadata["help"].split()) in text, (name, field.name)
    # the option types as the checker names them; -h and a TASK after other options work the same
    assert main(["run", "--out", str(tmp_path / "x"), "cv-probes-mmshap", "-h"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "sample=an integer or null" in text and "compat=a string" in text
    # without a task, the command's help alone; an unknown task is refused as the run refuses it
    assert main(["run", "--help"]) == 0
    assert "Options of task" not in capsys.readouterr().out
    assert main(["run", "no-such-task", "--help"]) == 2
    assert "unknown task 'no-such-task'; valid tasks: " in capsys.readouterr().err
