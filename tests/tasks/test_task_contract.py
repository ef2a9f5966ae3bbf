"""Every registered task keeps the task contract (:mod:`connote.tasks.api`), and ``connote report`` recognises
its run folder.

As ``tests/models/test_backend_contract.py`` does for backends, this module is parametrised over the task
registry: a registered task without a builder here fails ``test_every_task_has_a_builder``. Each task is built
on its packaged sample, its work items and error rows are checked, it is run through :func:`run_task` with a
backend whose every call fails (so the run is all error rows, the runner's path for bad items), and the run
folder is recognised by the report kind the task declares and rendered.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connote.runs.runner import WorkItem
from connote.tasks import TASKS
from connote.tasks.api import RunResult, Task, run_task


def _probes(root: Path) -> Path:
    from connote.media.sample import write_sample_probes

    return write_sample_probes(root / "sample")


def _suite(name: str, which: int) -> Callable[[Path], Task]:
    def build(root: Path) -> Task:
        from connote.suites import target

        data = target(name, 2)(root / "sample")
        cls = target(name, which)
        return cls(data, progress=False) if which == 0 else cls(data, sample=2, progress=False)
    return build


def _vist(root: Path) -> Task:
    from connote.vist.sample import write_sample_vist
    from connote.vist.task import StorytellingTask, load_sequences

    paths = write_sample_vist(root / "sample")
    return StorytellingTask(load_sequences(paths["template"]), image_dir=paths["images"], progress=False)


def _vmc(root: Path) -> Task:
    pytest.importorskip("av")
    from connote.vmc.sample import write_sample_vmc
    from connote.vmc.task import MetaphorCaptionTask

    return MetaphorCaptionTask(write_sample_vmc(root / "sample")["test_videos"], progress=False)


def _synth(root: Path) -> Task:
    from connote.vmc.synth_task import MetaphorSynthTask

    table = root / "captions.csv"
    root.mkdir(parents=True, exist_ok=True)
    table.write_text("image,caption\na.jpg,A dog runs on the beach.\nb.jpg,Two people share a meal.\n",
                     encoding="utf-8")
    return MetaphorSynthTask(table, progress=False)


def _probe_task(root: Path) -> Task:
    from connote.cv_probes.task import ProbeTask

    return ProbeTask(_probes(root), progress=False)


def _explain_task(root: Path) -> Task:
    from connote.cv_probes.explain import ExplainTask

    return ExplainTask(_probes(root), sample=2, progress=False)


#: Registered task -> a builder of the task on its packaged sample.
BUILDERS: dict[str, Callable[[Path], Task]] = {
    "cv-probes": _probe_task,
    "cv-probes-mmshap": _explain_task,
    "vist-storytelling": _vist,
    "vmc-captioning": _vmc,
    "vmc-synth": _synth,
    **{name: _suite(name, 0) for name in ("svo-probes", "valse", "winoground", "sugarcrepe")},
    **{f"{name}-mmshap": _suite(name, 1) for name in ("svo-probes", "valse", "winoground", "sugarcrepe")},
}


class FailingModel:
    """A backend with every capability whose every call fails: a run of it is all error rows."""

    backend = "failing"
    capabilities = frozenset({"match", "mask", "generate"})

    def __init__(self, inputs: str) -> None:
        self.inputs = inputs

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "inputs": self.inputs}

    def match_probability(self, images, captions, pairs):
        raise RuntimeError("this backend fails every call")

    def generate(self, requests):
        raise RuntimeError("this backend fails every call")

    def masking_game(self, image, caption, **kw):
        raise ValueError("this backend fails every call")


def test_every_task_has_a_builder() -> None:
    assert sorted(set(TASKS.names()) - set(BUILDERS)) == [], "add a builder of each new task to BUILDERS"


@pytest.mark.parametrize("name", TASKS.names())
def test_the_task_keeps_the_contract(name: str, tmp_path: Path) -> None:
    cls = TASKS.get(name)
    assert issubclass(cls, Task) and cls.name == name
    assert isinstance(cls.version, int) and cls.version >= 1
    assert cls.capability in ("match", "mask", "generate") and cls.reads and cls.title
    task = BUILDERS[name](tmp_path)  # constructible on its sample
    items = task.work_items()
    assert items and all(isinstance(w, WorkItem) for w in items)
    ids = [w.item_id for w in items]
    assert len(set(ids)) == len(ids)
    assert all(isinstance(w.key, str) and w.key for w in items)
    assert [w.key for w in task.work_items()] == [w.key for w in items]  # content keys are deterministic
    row = task.error_row(items[0], "boom")
    assert isinstance(row, dict) and row.get("error") == "boom"
    rows = [{**task.error_row(w, "boom"), "item_id": w.item_id, "item_key": w.key, "error": "boom"} for w in items]
    assert isinstance(task.aggregate(rows), dict)
    assert isinstance(task.settings(), dict) and isinstance(task.config(), dict)


@pytest.mark.parametrize("name", TASKS.names())
def test_a_run_of_the_task_is_recognised_by_the_report(name: str, tmp_path: Path) -> None:
    from connote.report.load import available_kinds, build_sections, recognise
    from connote.report.render import to_markdown

    cls = TASKS.get(name)
    task = BUILDERS[name](tmp_path)
    out = tmp_path / "run"
    result = run_task(task, FailingModel(cls.inputs[0]), out, seed=0)
    assert isinstance(result, RunResult) and result.task == name and result.out == out
    n = len(task.work_items())
    assert result.outcome.total == n and result.outcome.failed == n and result.outcome.computed + \
        result.outcome.resumed == n - sum(w.error is not None for w in task.work_items())
    results, outcome = result
    assert results["task"] == name and results["task_version"] == cls.version
    assert results["fingerprint"] == outcome.fingerprint and (out / cls.results_file).is_file()
    kinds = available_kinds()
    expected = cls.report_kind if cls.report_kind and ":" not in cls.report_kind else name
    assert expected in kinds
    run = recognise(out, kinds)
    assert run.kind == expected and run.folder == out
    (section,) = build_sections([run], kinds=kinds)
    assert section.kind == expected
    assert to_markdown([section], title="t")


def test_bind_is_the_contract_step_that_refuses_a_model_before_any_work(tmp_path: Path) -> None:
    from connote.core.errors import InputError

    class Generator:
        backend, capabilities = "gen", frozenset({"generate"})

        def describe(self):
            return {"backend": "gen"}

    task = BUILDERS["cv-probes"](tmp_path)
    with pytest.raises(InputError, match="cannot 'match', which task cv-probes needs"):
        run_task(task, Generator(), tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before the runner made the folder


def test_a_task_without_a_scoring_stage_says_so() -> None:
    from connote.core.errors import InputError

    with pytest.raises(InputError, match="task cv-probes has no scoring stage"):
        TASKS.get("cv-probes").score("run", "refs")


@pytest.mark.slow
def test_the_storytelling_task_scores_under_its_one_version(tmp_path: Path) -> None:
    """``vist-storytelling`` is scored by the task, and the stored signature carries the task's version."""
    import connote.vist
    from connote.vist.challenge import read_gold, read_submission
    from connote.vist.protocols import score
    from connote.vist.sample import sample_retrieval_spec, write_sample_vist
    from connote.vist.task import StorytellingTask, load_sequences

    assert connote.vist.TASK_VERSION == StorytellingTask.version == 2
    paths = write_sample_vist(tmp_path / "sample")
    task = StorytellingTask(load_sequences(paths["template"]), image_dir=paths["images"], progress=False)
    out = tmp_path / "run"
    result = run_task(task, sample_retrieval_spec(paths), out)
    assert result.results["task_version"] == 2 and task.summary(result)["n_sequences"] == 3
    scored, stored, note = StorytellingTask.score(out, paths["test"], protocol="album", n_boot=0)
    direct = score("album", read_submission(out / "submission.json"), read_gold(paths["test"]), n_boot=0)
    assert scored.scores == direct.scores and scored.scores["METEOR"] > 0
    import json

    record = json.loads(stored.read_text())
    assert record["task"] == "vist-storytelling" and record["signature"]["settings"]["task_version"] == 2
    assert stored.parent == out / "scores" and note is None


@pytest.mark.slow
def test_the_captioning_task_scores_as_the_command_does(tmp_path: Path, capsys) -> None:
    """``vmc-captioning``'s scoring stage stores the same file (same signature) and numbers as ``metaphor score``."""
    pytest.importorskip("av")
    import json

    from connote.cli import main
    from connote.vmc.task import MetaphorCaptionTask

    out = tmp_path / "cap"
    assert main(["metaphor", "caption", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    refs, split = out / "sample" / "vmc.csv", out / "sample" / "test.txt"
    scores, stored, note = MetaphorCaptionTask.score(out, refs, split=split, n_boot=50)
    assert note is None and stored.parent == out / "scores"
    assert main(["metaphor", "score", str(out), "--refs", str(refs), "--split", str(split), "--bootstrap", "50",
                 "--json"]) == 0
    (by_command,) = json.loads(capsys.readouterr().out)
    assert by_command["stored"] == str(stored)  # the same signature: the command replaced the task's file
    assert by_command["table"] == scores.table and scores.table["ROUGE-L"] > 0
