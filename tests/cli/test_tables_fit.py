"""Tables printed at 80 columns: nothing cut with an ellipsis; long names go to a legend."""

import csv
import json

import pytest

from connote.cli import main


def _labels(path, raters, criteria):
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item_id", "rater", "criterion", "label"])
        for i in range(8):
            for k, rater in enumerate(raters):
                for j, c in enumerate(criteria):
                    w.writerow([f"v{i}", rater, c, (i + k * j) % 3 + 1])
    return path


@pytest.mark.parametrize("raters", [["alice", "bob", "carol"],
                                    ["annotator_alice", "annotator_bob", "annotator_carol", "annotator_dave"]])
def test_agreement_fits_80_columns(tmp_path, monkeypatch, capsys, raters) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    labels = _labels(tmp_path / "labels.csv", raters, ["fluency", "creativity", "metaphor quality"])
    assert main(["agreement", str(labels)]) == 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if set(line) & set("┏┃┡│└")]
    assert "…" not in out and table and max(len(line) for line in table) <= 80  # paths below may be longer
    for name in raters:
        assert name in out  # in the header or in the legend
    if len(raters) > 3:
        assert "raters: A = annotator_alice, B = annotator_bob" in out and "Cohen A-D" in out
    assert "metaphor" in out and "quality" in out  # wrapped in its cell, not cut
    assert main(["agreement", str(labels), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["criterion"] for r in rows][:3] == ["fluency", "creativity", "metaphor quality"]


def test_story_backends_json(capsys) -> None:
    assert main(["story", "backends", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"retrieval", "seq2seq"} <= {r["name"] for r in rows} and all(r["help"] for r in rows)
