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


def test_vist_correlate_and_stats_print_aligned_tables_within_80_columns(tmp_path, monkeypatch, capsys) -> None:
    from connote.vist.sample import write_sample_vist

    monkeypatch.setenv("COLUMNS", "80")
    ratings = tmp_path / "ratings.csv"
    scores = {f"s{k}": {"METEOR": 0.1 * k, "smoothed-BLEU": 0.05 * k * k, "MiniLM-cosine": 1 - 0.1 * k}
              for k in range(1, 7)}
    ratings.write_text("story_id,rating,rater\n" + "".join(f"s{k},{1 + k % 5},a\ns{k},{1 + (k * 3) % 5},b\n"
                                                           for k in range(1, 7)))
    (tmp_path / "scores.json").write_text(json.dumps(scores))
    assert main(["vist", "correlate", str(ratings), "--scores", str(tmp_path / "scores.json"), "--n-boot", "50",
                 "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["metric", "n", "pearson", "(p)", "spearman", "(p)", "kendall", "(p)"]
    assert lines[1].split()[:2] == ["METEOR", "6"] and lines[1].index("6") == lines[0].index("n")  # aligned
    assert max(map(len, lines)) <= 80 and "\t" not in "\n".join(lines)
    assert sum(line.startswith("MiniLM-cosine") for line in lines) == 2  # coefficients and intervals
    paths = write_sample_vist(tmp_path / "sample")
    assert main(["vist", "stats", str(paths["train"]), str(paths["test"]), "--no-parse", "--no-progress"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["tier", "pairs", "vocab", "avg_tokens", "pct_abstract", "frazier", "yngve",
                                "perplexity"]
    assert lines[1].split()[:3] == ["SIS:train", "15", "22"] and max(map(len, lines)) <= 80  # labelled by file
    assert lines[2].split()[0] == "SIS:test"


def test_story_backends_wraps_at_80_columns(monkeypatch, capsys) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["story", "backends"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80 and lines[0].startswith("caption-llm    Captioner per image")
    assert any(line.startswith(" " * 15) for line in lines)  # wrapped descriptions hang under themselves
