"""``connote vmc train --config RECIPE --sample``: the shipped recipes end to end offline on tiny random models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.cli import main

pytest.importorskip("accelerate")
pytest.importorskip("av")


def _summary(out: str) -> dict:
    return json.loads(out.strip().splitlines()[-1])


def test_stage1_recipe_reads_the_sample_in_the_catalogue_layout(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "s"
    assert main(["vmc", "train", "--config", "paper-stage1-haivmet-coco", "--sample", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    summary = _summary(captured.out)
    assert summary["steps"] == 2 and summary["sample"] is True
    assert summary["final"] == str(out / "paper-stage1-haivmet-coco" / "final")
    # the synth sample's 9 template answers are HAIVMet's prompts; its 12 literal captions MSCOCO's, sampled to 9
    assert "stage 1: 9 metaphor + 9 literal pairs (of 9 metaphor and 12 literal; haivmet 9, coco 12)" in captured.out
    assert "model: microsoft/git-large-vatex and lmsys/vicuna-13b-v1.5 -> tiny random models" in captured.err
    final = Path(summary["final"])
    assert (final / "projector.safetensors").is_file() and not (final / "llm").exists()  # stage 1: projector only
    records = json.loads((out / "sample" / "stage1" / "haivmet" / "haivmet.json").read_text())
    assert len(records) == 9 and all(" is as " in r["caption"].lower() for r in records)
    coco = json.loads((out / "sample" / "stage1" / "coco" / "annotations" / "captions_train2014.json").read_text())
    assert len(coco["annotations"]) == 12 and len(coco["images"]) == 12


def test_git_baseline_recipe_gives_a_checkpoint_vmc_caption_runs(tmp_path: Path, capsys) -> None:
    out = tmp_path / "s"
    assert main(["vmc", "train", "--config", "paper-git-baseline.yaml", "--sample", "--out", str(out),
                 "--max-steps", "3"]) == 0
    captured = capsys.readouterr()
    summary = _summary(captured.out)
    assert summary["steps"] == 3
    assert "train.batch_size 4 -> 3 (the sample's training clips)" in captured.err
    # its own lines only: no transformers load/save bars ("Writing model shards", "Loading weights"), no warnings
    assert all(line.startswith("sample run: ") for line in captured.err.splitlines()), captured.err
    final = Path(summary["final"])
    assert (final / "git_baseline.json").is_file()
    cap = tmp_path / "cap"
    assert main(["vmc", "caption", "--videos", str(out / "sample" / "vmc" / "test-videos.csv"),
                 "--model", f"git-video:{final}", "--max-new-tokens", "4", "--out", str(cap), "--no-progress"]) == 0
    assert _summary(capsys.readouterr().out)["captioned"] == 3
    # rerun: the tiny models are built once and the run resumes from its checkpoint (nothing trained again)
    assert main(["vmc", "train", "--config", "paper-git-baseline", "--sample", "--out", str(out),
                 "--max-steps", "3"]) == 0
    captured = capsys.readouterr()
    assert "building tiny random GIT and LLM" not in captured.err and _summary(captured.out)["steps"] == 3


def test_a_recipe_name_that_is_not_shipped_is_named_with_the_list(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["vmc", "train", "--config", "paper-stage3", "--sample"]) == 2
    err = capsys.readouterr().err
    assert "paper-stage3: no such file, and no shipped recipe of that name" in err
    assert "paper-git-baseline, paper-no-pretraining, paper-stage1" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()
