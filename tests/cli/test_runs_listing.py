"""``connote runs``: the sample runs listed with task, model, data, signature, headline numbers, date and state;
``connote report`` reads its ``--json`` listing and glob patterns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connote.cli import main


@pytest.mark.slow
def test_the_sample_runs_are_listed_with_their_numbers_and_reported_from_the_listing(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    root = tmp_path / "runs"
    assert main(["cv-probes", "run", "--out", str(root / "probes"), "--no-progress"]) == 0
    assert main(["vist", "generate", "--out", str(root / "story"), "--no-progress"]) == 0
    probes = json.loads((root / "probes" / "results.json").read_text())
    capsys.readouterr()
    assert main(["runs", str(root), "--json"]) == 0
    listing = {Path(e["folder"]).name: e for e in json.loads(capsys.readouterr().out)}
    assert set(listing) == {"probes", "story"}  # the samples inside the run folders are not runs
    entry = listing["probes"]
    assert (entry["task"], entry["model"], entry["signature"], entry["state"]) == (
        "cv-probes", "objects", probes["fingerprint"], "complete")
    assert entry["headline"]["harmonic_mean"] == probes["harmonic_mean"] and entry["date"] == probes["created"]
    assert listing["story"]["task"] == "vist-storytelling" and listing["story"]["state"] == "complete"
    # an older task version is stale; failed items make a run partial
    results = dict(probes, task_version=probes["task_version"] - 1)
    (root / "probes" / "results.json").write_text(json.dumps(results))
    assert main(["runs", str(root / "probes"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["state"] == "stale"
    # so is a run whose model backend's code differs from the code installed now (the digest it recorded)
    assert set(probes["code"]) == {"task", "model"}
    (root / "probes" / "results.json").write_text(json.dumps(dict(probes, code=dict(probes["code"], model="0" * 64))))
    assert main(["runs", str(root / "probes"), "--json"]) == 0
    assert [(e["state"], e["changed"]) for e in json.loads(capsys.readouterr().out)] == [("stale", ["model code"])]
    (root / "probes" / "results.json").write_text(json.dumps(dict(probes, n_failed=2)))
    assert main(["runs", str(root / "probes"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["state"] == "partial"
    (root / "probes" / "results.json").write_text(json.dumps(probes))
    assert main(["runs", str(root)]) == 0
    assert "2 run folder(s)" in capsys.readouterr().out
    # the listing (and a glob) is what connote report reads
    listing_file = tmp_path / "list.json"
    assert main(["runs", str(root), "--json"]) == 0
    listing_file.write_text(capsys.readouterr().out)
    assert main(["report", str(listing_file), "--allow-mixed", "--json"]) == 0
    from_listing = json.loads(capsys.readouterr().out)
    folders = {r["folder"] for s in from_listing["sections"] for r in s["runs"]}
    assert {Path(f).name for f in folders} == {"probes", "story"}
    assert main(["report", str(root / "p*"), "--json"]) == 0
    assert [r["folder"] for s in json.loads(capsys.readouterr().out)["sections"] for r in s["runs"]] == [
        str(root / "probes")]


def test_a_bad_listing_or_an_empty_pattern_is_one_line_and_exit_2(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "list.json"
    bad.write_text(json.dumps([{"fold": "x"}]))  # a JSON list is read as a listing
    assert main(["report", str(bad)]) == 2
    assert "expected the output of connote runs --json" in capsys.readouterr().err
    bad.write_text(json.dumps({"folder": "x"}))  # a JSON object goes to the result readers (a study's files are)
    assert main(["report", str(bad)]) == 2
    assert "is not a result folder" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "none-*")]) == 2
    assert "the pattern matches no file or folder" in capsys.readouterr().err
    assert main(["runs", str(tmp_path / "missing")]) == 2
