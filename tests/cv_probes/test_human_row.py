"""Table 4's Human row, per-cell Wilson intervals, and a results.md that renders as one table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from connote.cli import main
from connote.cv_probes.task import accuracy_interval, human_majority_correct, run_probe


class Half:
    def describe(self) -> dict:
        return {"backend": "half"}

    def match_probability(self, images, captions, pairs):
        return [0.9 if "begs" in captions[c] else 0.1 for _, c in pairs]


@pytest.fixture
def voted(tmp_path: Path) -> Path:
    Image.new("RGB", (16, 16), (90, 90, 90)).save(tmp_path / "a.png")
    rows = ["item_id,image,image_kind,caption,caption_kind,human_votes,label",
            "1,a.png,SG,a man begs,SG,1;1;0,",   # majority match, label 1: right
            "2,a.png,SG,a man begs here,SG,0;0;1,",  # majority non-match, label 1: wrong
            "3,a.png,SG,a man sits,PG,1;1;1,",   # right
            "4,a.png,PG,a man begs now,SG,0;0;1,",   # label 0 (PG image, SG caption): right
            "5,a.png,PG,a man begs there,SG,1;0,",   # a tie: wrong
            "6,a.png,PG,a man sits down,PG,1;1;0,"]  # right
    path = tmp_path / "p.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_majority_rule_and_ties() -> None:
    assert human_majority_correct([1, 1, 0], 1) and not human_majority_correct([1, 1, 0], 0)
    assert not human_majority_correct([1, 0], 1) and not human_majority_correct([1, 0], 0)  # tie: wrong


def test_human_row_in_results_and_table(voted: Path, tmp_path: Path) -> None:
    res = run_probe(voted, out=tmp_path / "run", model_obj=Half(), progress=False)
    human = res["human"]["cells"]
    assert human["SG-SG"] == {"accuracy": 0.5, "n": 2, "interval": accuracy_interval(1, 2)}
    assert human["SG-PG"]["accuracy"] == 1.0 and human["PG-SG"]["accuracy"] == 0.5
    assert human["PG-PG"]["accuracy"] == 1.0
    assert res["human"]["harmonic_mean"] == pytest.approx(4 / (2 + 1 + 2 + 1))
    md = (tmp_path / "run" / "results.md").read_text()
    assert "| Human, majority of votes (%) | 50.00 | 100.00 | 50.00 | 100.00 | 66.67 |" in md
    stored = json.loads((tmp_path / "run" / "results.json").read_text())
    assert stored["human"]["rule"] == "majority of votes; a tie counts as wrong"


def test_wilson_interval_matches_scipy() -> None:
    from scipy.stats import binomtest

    lo, hi = accuracy_interval(7, 9)
    ci = binomtest(7, 9).proportion_ci(method="wilson")
    assert (lo, hi) == (pytest.approx(ci.low), pytest.approx(ci.high)) and lo < 7 / 9 < hi


def test_results_md_renders_as_one_table(voted: Path, tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    run_probe(voted, out=tmp_path / "run", model_obj=Half(), progress=False)
    html = MarkdownIt("commonmark").enable("table").render((tmp_path / "run" / "results.md").read_text())
    assert html.count("<table>") == 1
    body = html.split("</table>")[0]
    assert "Human, majority of votes" in body and "Accuracy (%)" in body and "95% CI (Wilson)" in body
    assert "<p>| " not in html  # no table row spilled out as stray text


def test_report_prints_the_human_row(voted: Path, tmp_path: Path, capsys) -> None:
    run_probe(voted, out=tmp_path / "run", model_obj=Half(), progress=False)
    assert main(["report", str(tmp_path / "run"), "--format", "markdown"]) == 0
    assert "| Human | 50.00 | 100.00 | 50.00 | 100.00 | 66.67 |" in capsys.readouterr().out


def test_report_refuses_runs_on_different_data(voted: Path, tmp_path: Path, capsys) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "p.csv").write_text(voted.read_text())
    Image.new("RGB", (16, 16), (10, 200, 10)).save(other / "a.png")  # same manifest text, another image
    run_probe(voted, out=tmp_path / "r1", model_obj=Half(), progress=False)
    run_probe(other / "p.csv", out=tmp_path / "r2", model_obj=Half(), progress=False)
    assert main(["report", str(tmp_path / "r1"), str(tmp_path / "r2")]) == 2
    err = capsys.readouterr().err
    assert "different data or task versions" in err and "../other/p.csv" in err  # the path from the run folder
    assert main(["report", str(tmp_path / "r1"), str(tmp_path / "r2"), "--allow-mixed", "--json"]) == 0
    titles = [s["title"] for s in json.loads(capsys.readouterr().out)["sections"]]  # one section per data
    assert len(titles) == 2 and "../other/p.csv" in titles[1] and "task version 2" in titles[0]
