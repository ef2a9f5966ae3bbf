"""One finder of a run folder's results file (``runs.store.results_path``) for every reader: the current
``results.json``, else the ``run.json`` or ``judge.json`` of a folder written before every task wrote
``results.json``; ``connote runs`` and the trackers' reader go through it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.cli import main
from connote.commands.tracking import read_results
from connote.core.errors import InputError
from connote.runs.store import results_path


def test_the_current_name_first_then_the_old_ones(tmp_path: Path) -> None:
    assert results_path(tmp_path) == tmp_path / "results.json"  # none: the name a run writes
    (tmp_path / "judge.json").write_text(json.dumps({"task": "judge", "n": 2}))
    assert results_path(tmp_path) == tmp_path / "judge.json"
    (tmp_path / "run.json").write_text(json.dumps({"task": "vmc-captioning", "n": 3}))
    assert results_path(tmp_path) == tmp_path / "run.json"
    assert read_results(tmp_path) == (tmp_path / "run.json", {"task": "vmc-captioning", "n": 3})
    (tmp_path / "results.json").write_text(json.dumps({"task": "vmc-captioning", "n": 4}))
    assert results_path(tmp_path) == tmp_path / "results.json" and read_results(tmp_path)[1]["n"] == 4


def test_an_old_judge_folder_is_listed_and_a_folder_without_results_refused(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture) -> None:
    judge = tmp_path / "runs" / "judge"
    judge.mkdir(parents=True)
    (judge / "judge.json").write_text(json.dumps({"task": "judge", "fingerprint": "abc", "n_failed": 0,
                                                  "mean_share": 3.5, "created": "2026-01-01T00:00:00+0000"}))
    assert main(["runs", str(tmp_path / "runs"), "--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert (entry["folder"], entry["signature"], entry["headline"], entry["state"]) == (
        str(judge), "abc", {"mean_share": 3.5}, "complete")
    with pytest.raises(InputError, match="no results.json, run.json, judge.json"):
        read_results(tmp_path)
