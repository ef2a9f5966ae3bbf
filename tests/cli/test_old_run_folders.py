"""Every task writes ``results.json``; a run folder written before VIST's stories, VMC's captions and metaphor synth
runs did (they wrote ``run.json``) is still read by every reader: ``connote runs``, ``report``, ``reproduce``,
``vist score``, ``vmc score`` and the synth table's readers (the training data and the check study).

Real sample runs from the shell's commands, then copies whose ``results.json`` is renamed to ``run.json``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from connote.cli import main


@pytest.mark.slow
def test_new_runs_write_results_json_and_old_run_json_folders_are_still_read(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("av")
    new, old = tmp_path / "new", tmp_path / "old"
    # the synth sample holds one failed batch answer on purpose (exit 1 unless --max-failed allows it)
    commands = {"story": ["vist", "generate"], "cap": ["vmc", "caption"], "syn": ["vmc", "synth", "--max-failed", "1"]}
    for name, command in commands.items():
        assert main([*command, "--out", str(new / name), "--no-progress"]) == 0
        assert (new / name / "results.json").is_file() and not (new / name / "run.json").exists()
        shutil.copytree(new / name, old / name)
        (old / name / "results.json").rename(old / name / "run.json")
    capsys.readouterr()
    # connote runs lists the old folders as the new ones
    assert main(["runs", str(tmp_path), "--json"]) == 0
    listing = {(Path(e["folder"]).parent.name, Path(e["folder"]).name): e for e in json.loads(capsys.readouterr().out)}
    assert set(listing) == {(side, name) for side in ("new", "old") for name in commands}
    for name in commands:
        then, now = listing["old", name], listing["new", name]
        assert (then["task"], then["signature"], then["state"]) == (now["task"], now["signature"], now["state"])
    assert listing["old", "story"]["state"] == "complete" and listing["old", "syn"]["state"] == "partial"
    # vist score and vmc score read and store scores in the old folders
    gold = new / "story" / "sample" / "test.story-in-sequence.json"
    assert main(["vist", "score", str(old / "story"), "--refs", str(gold), "--n-boot", "0", "--json"]) == 0
    story_scores = json.loads(capsys.readouterr().out)
    assert main(["vmc", "score", str(old / "cap"), "--n-boot", "0", "--json"]) == 0
    (caption_scores,) = json.loads(capsys.readouterr().out)
    assert Path(caption_scores["stored"]).parent == old / "cap" / "scores"
    fingerprint = json.loads((old / "cap" / "run.json").read_text())["fingerprint"]
    assert json.loads(Path(caption_scores["stored"]).read_text())["source"]["run_fingerprint"] == fingerprint
    # connote report shows each old folder in its paper's section, with the scores just stored
    assert main(["report", str(old / "story"), str(old / "cap"), str(old / "syn"), "--allow-mixed", "--json"]) == 0
    sections = {s["kind"]: s for s in json.loads(capsys.readouterr().out)["sections"]}
    assert set(sections) == {"vist-storytelling", "vmc-captioning", "vmc-synth"}
    for kind, folder in (("vist-storytelling", "story"), ("vmc-captioning", "cap"), ("vmc-synth", "syn")):
        assert [r["folder"] for r in sections[kind]["runs"]] == [str(old / folder)]
    (values,) = sections["vist-storytelling"]["tables"][0]["values"]
    assert values["METEOR"] == story_scores["scores"]["METEOR"] and values["scores_file"].startswith(str(old))
    # connote reproduce finds the old caption run as a vmc/table1 run
    assert main(["reproduce", "vmc/table1", str(old / "cap"), "--json"]) == 0
    assert [e["folder"] for e in json.loads(capsys.readouterr().out)["runs"]] == [str(old / "cap")]
    # the synth table's image folder, recorded in the old run.json, is found by its readers
    from connote.vmc.studies.synth_check import read_table
    from connote.vmc.train.stage1 import synth_files

    images = json.loads((old / "syn" / "run.json").read_text())["images"]
    assert read_table(old / "syn", None)[1] == Path(images)
    assert synth_files(old / "syn", None) == (old / "syn" / "metaphors.json", Path(images))
