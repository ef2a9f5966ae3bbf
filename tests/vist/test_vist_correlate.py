"""Metric-human correlation against scipy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from connote.cli import main
from connote.errors import InputError
from connote.vist.correlate import correlate, read_metric_scores, read_ratings

RATINGS = """story_id,rating,rater
s1,1,r1
s1,2,r2
s2,3,r1
s2,5,r2
s3,4,r1
s4,2,r1
s4,2,r3
s5,5,r2
s6,1,r1
"""
SCORES = {"s1": {"METEOR": 0.10, "BLEU-4": 0.02}, "s2": {"METEOR": 0.35, "BLEU-4": 0.01},
          "s3": {"METEOR": 0.30, "BLEU-4": 0.05}, "s4": {"METEOR": 0.12, "BLEU-4": 0.04},
          "s5": {"METEOR": 0.40, "BLEU-4": 0.03}, "s7": {"METEOR": 0.9, "BLEU-4": 0.9}}


def test_against_scipy(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    p.write_text(RATINGS)
    ratings = read_ratings(p)
    assert ratings["s1"] == [1.0, 2.0] and len(ratings) == 6
    res = correlate(ratings, SCORES, n_boot=300, seed=1)
    ids = ["s1", "s2", "s3", "s4", "s5"]  # s6 has no score, s7 no rating
    y = [1.5, 4.0, 4.0, 2.0, 5.0]
    for m in ("METEOR", "BLEU-4"):
        x = [SCORES[i][m] for i in ids]
        pr, sr = stats.pearsonr(x, y), stats.spearmanr(x, y)
        r = res[m]
        assert r["n"] == 5
        assert r["pearson"] == pytest.approx(pr[0]) and r["pearson_p"] == pytest.approx(pr[1])
        assert r["spearman"] == pytest.approx(sr[0]) and r["spearman_p"] == pytest.approx(sr[1])
        lo, hi = r["pearson_ci"]
        assert -1 <= lo <= hi <= 1
    assert res["METEOR"]["pearson"] > 0.9
    assert res == correlate(ratings, SCORES, n_boot=300, seed=1)  # seeded


def test_headerless_and_errors(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    p.write_text("a,3,x\nb,4,y\n")
    assert read_ratings(p) == {"a": [3.0], "b": [4.0]}
    p.write_text("story_id,rating,rater\na,3,x\nb,good,y\n")
    with pytest.raises(InputError, match="line 3"):
        read_ratings(p)
    assert np.isnan(correlate({"a": [1.0]}, {"a": {"M": 1.0}})["M"]["pearson"])


def test_scores_csv(tmp_path: Path) -> None:
    p = tmp_path / "s.csv"
    p.write_text("story_id,METEOR,BLEU-4\ns1,0.1,0.2\ns2,0.3,\n")
    assert read_metric_scores(p) == {"s1": {"METEOR": 0.1, "BLEU-4": 0.2}, "s2": {"METEOR": 0.3}}


def test_cli(tmp_path: Path, capsys) -> None:
    r, s = tmp_path / "r.csv", tmp_path / "s.json"
    r.write_text(RATINGS)
    s.write_text(json.dumps(SCORES))
    assert main(["vist", "correlate", str(r), "--scores", str(s), "--json", "--n-boot", "50"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"METEOR", "BLEU-4"} and out["METEOR"]["n"] == 5


def test_leave_one_out(tmp_path: Path, capsys) -> None:
    from vist_fixtures import official, story_anns, write

    from connote.vist.correlate import leave_one_out_scores

    seq = ("1", "2")
    stories = {"a": (seq, "x y"), "b": (seq, "x z"), "c": (seq, "q"), "d": (("9",), "alone")}

    def scorer(hyps, refs):
        per = {k: {"Bleu_1": max(len(set(hyps[k].split()) & set(r.split())) / len(set(hyps[k].split()))
                                 for r in refs[k])} for k in hyps}
        return {}, per, {}

    out = leave_one_out_scores(stories, corpus_scorer=scorer)
    assert out == {"a": {"BLEU-1": 0.5}, "b": {"BLEU-1": 0.5}, "c": {"BLEU-1": 0.0}}  # d has no other story
    assert set(leave_one_out_scores(stories, corpus_scorer=scorer, only={"a"})) == {"a"}

    photos = ["11", "12", "13", "14", "15"]
    texts = [["we went to the beach .", "the sea was calm .", "we ate lunch .", "we swam .", "the sun set ."],
             ["we went to the beach .", "the water was calm .", "lunch was good .", "we swam a lot .", "sunset ."],
             ["a dog .", "a cat .", "a car .", "a tree .", "a house ."]]
    anns = [a for k, t in enumerate(texts) for a in story_anns(f"S{k}", "A1", photos, t, start=5 * k)]
    sis = write(tmp_path / "r.story-in-sequence.json", official(anns))
    ratings = tmp_path / "r.csv"
    ratings.write_text("story_id,rating,rater\nS0,5,a\nS1,4,a\nS2,1,a\nS2,2,b\n")
    assert main(["vist", "correlate", str(ratings), "--stories", str(sis), "--json", "--n-boot", "20",
                 "--metrics", "meteor,rouge_l"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert set(res) == {"METEOR", "ROUGE-L"} and res["METEOR"]["n"] == 3 and res["METEOR"]["pearson"] > 0.9
    assert main(["vist", "correlate", str(ratings)]) == 2
