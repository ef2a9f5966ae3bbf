"""Which metric agrees with people: generated ratings of a known correlation, paired tests, pairwise
preferences and VMC evaluation labels, through the commands."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from connote.cli import main
from connote.core.errors import InputError
from connote.metrics.correlation import (
    paired_tests,
    pairwise_agreement,
    pairwise_dataset,
    ratings_kind,
    read_preferences,
    williams_test,
)
from connote.vmc.correlate import read_vmc_labels

N = 40


def known(r: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Human means y and a metric x with Pearson(x, y) == r exactly (x = r * y' + sqrt(1 - r^2) * e', e' _|_ y')."""
    rng = np.random.default_rng(seed)
    y = rng.integers(1, 6, size=N).astype(float) + rng.integers(1, 6, size=N)  # two raters' sum
    yc = y - y.mean()
    e = rng.normal(size=N)
    e -= e.mean()
    e -= (e @ yc) / (yc @ yc) * yc
    return r * yc / np.linalg.norm(yc) + math.sqrt(1 - r * r) * e / np.linalg.norm(e), y


def write_study(tmp_path: Path) -> tuple[Path, Path, np.ndarray, dict[str, np.ndarray]]:
    x6, y = known(0.6)
    x3, _ = known(0.3, seed=0)
    ratings = tmp_path / "ratings.csv"
    rng = np.random.default_rng(1)
    with open(ratings, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["story_id", "rating", "rater"])
        for i, total in enumerate(y):
            first = float(rng.integers(max(1, total - 5), min(5, total - 1) + 1))
            w.writerow([f"s{i}", first, "r1"])
            w.writerow([f"s{i}", total - first, "r2"])
    metrics = {"exact": y.copy(), "r06": x6, "r03": x3}
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({f"s{i}": {m: float(v[i]) for m, v in metrics.items()} for i in range(N)}))
    return ratings, scores, y / 2, metrics


@pytest.mark.slow
def test_known_correlations_and_paired_tests_through_the_command(tmp_path: Path, capsys) -> None:
    ratings, scores, y, metrics = write_study(tmp_path)
    assert main(["vist", "correlate", str(ratings), "--scores", str(scores), "--paired", "--n-boot", "300",
                 "--json", "--no-progress"]) == 0
    res = json.loads(capsys.readouterr().out)
    corr = res["correlations"]
    assert corr["r06"]["pearson"] == pytest.approx(0.6, abs=1e-9)
    assert corr["exact"]["pearson"] == pytest.approx(1.0) and corr["exact"]["kendall"] == pytest.approx(1.0)
    assert corr["r06"]["spearman"] == pytest.approx(stats.spearmanr(metrics["r06"], y).statistic)
    lo, hi = corr["r06"]["pearson_ci"]
    assert lo < 0.6 < hi
    tests = {(t["a"], t["b"]): t for t in res["paired"]}
    t = tests[("exact", "r06")]
    assert t["n"] == N and t["pearson_diff"] == pytest.approx(0.4, abs=1e-9)
    # Williams' t from its definition: r12 = 1, r13 = 0.6, r23 = corr(exact, r06) = 0.6
    r12, r13, r23 = 1.0, 0.6, 0.6
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    want_t = (r12 - r13) * math.sqrt((N - 1) * (1 + r23)) / math.sqrt(
        2 * k * (N - 1) / (N - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3)
    assert t["williams_t"] == pytest.approx(want_t)
    assert t["williams_p"] == pytest.approx(2 * stats.t.sf(want_t, N - 3))
    assert t["pearson_p"] < 0.05 and t["pearson_ci"][0] > 0  # a perfect metric beats r = 0.6 on 40 stories
    near = tests[("r03", "r06")]
    assert near["pearson_diff"] == pytest.approx(-0.3, abs=1e-9) and near["pearson_ci"][0] < near["pearson_diff"]
    # the table form
    assert main(["vist", "correlate", str(ratings), "--scores", str(scores), "--paired", "--n-boot", "50",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "paired tests" in out and "williams p" in out and "0.600" in out


def test_williams_symmetry_and_degenerate() -> None:
    t1, p1 = williams_test(0.5, 0.3, 0.4, 30)
    t2, p2 = williams_test(0.3, 0.5, 0.4, 30)
    assert t1 == pytest.approx(-t2) and p1 == pytest.approx(p2) and 0 < p1 < 1
    assert math.isnan(williams_test(0.5, 0.3, 0.4, 3)[0])
    ratings = {f"s{i}": [float(i)] for i in range(3)}
    assert paired_tests(ratings, {k: {"a": 1.0, "b": 2.0} for k in ratings})[0]["note"].startswith("fewer")


def test_pairwise_preferences(tmp_path: Path) -> None:
    p = tmp_path / "prefs.csv"
    p.write_text("story_a,story_b,preferred,rater\n1,2,a,x\n1,2,a,y\n1,2,b,z\n3,4,4,x\n5,6,b,x\n7,8,a,x\n")
    assert ratings_kind(p) == "pairwise"
    prefs = read_preferences(p)
    assert prefs[0] == ("1|2", "1", "2", 1.0) and prefs[3] == ("3|4", "3", "4", -1.0)
    scores = {"1": {"m": 0.9}, "2": {"m": 0.1}, "3": {"m": 0.5}, "4": {"m": 0.2}, "5": {"m": 0.3},
              "6": {"m": 0.3}, "7": {"m": 0.0}}  # 8 unscored: pair 7|8 left out
    votes, diffs = pairwise_dataset(prefs, scores)
    assert votes["1|2"] == [1.0, 1.0, -1.0] and diffs["1|2"]["m"] == pytest.approx(0.8)
    assert "7|8" not in diffs
    agree = pairwise_agreement(votes, diffs)["m"]
    # 1|2: majority a, metric a (agree); 3|4: people b, metric a (disagree); 5|6: metric tie (1/2)
    assert agree["n_pairs"] == 3 and agree["accuracy"] == pytest.approx(1.5 / 3) and agree["tau"] == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("story_a,story_b,preferred\n1,2,c\n")
    with pytest.raises(InputError, match="line 2"):
        read_preferences(bad)


def write_vmc_import(folder: Path) -> dict[str, float]:
    """labels.csv and captions.csv as `connote collect import` writes them; returns per-item creativity shares."""
    folder.mkdir()
    rng = np.random.default_rng(3)
    items = [f"v{i}_run" for i in range(12)]
    shares = {}
    with open(folder / "labels.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item_id", "rater", "criterion", "label"])
        for iid in items:
            votes = rng.integers(0, 2, size=3)
            shares[iid] = float(votes.mean())
            for r, v in zip("abc", votes):
                w.writerow([iid, r, "creativity", int(v)])
                w.writerow([iid, r, "fluency", 1])
    with open(folder / "captions.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item_id", "video_id", "run", "caption"])
        for iid in items:
            w.writerow([iid, iid.split("_")[0], "run", f"the {iid} is as bold as a lion"])
    return shares


def test_metaphor_correlate_with_vmc_labels(tmp_path: Path, capsys) -> None:
    shares = write_vmc_import(tmp_path / "import")
    assert ratings_kind(tmp_path / "import") == "vmc-labels"
    assert read_vmc_labels(tmp_path / "import")["creativity"]["v0_run"] == pytest.approx(
        [float(x) for x in np.random.default_rng(3).integers(0, 2, size=3)])
    ids = sorted(shares)
    acd = {iid: shares[iid] * 0.5 + 0.1 * (k % 3) for k, iid in enumerate(ids)}
    scores = tmp_path / "acd.json"
    scores.write_text(json.dumps({iid: {"ACD": v} for iid, v in acd.items()}))
    assert main(["metaphor", "correlate", str(tmp_path / "import"), "--scores", str(scores), "--criteria",
                 "creativity,fluency", "--n-boot", "100", "--json", "--no-progress"]) == 0
    res = json.loads(capsys.readouterr().out)["criteria"]
    want = stats.pearsonr([acd[i] for i in ids], [shares[i] for i in ids]).statistic
    assert res["creativity"]["correlations"]["ACD"]["pearson"] == pytest.approx(want)
    assert res["fluency"]["correlations"]["ACD"]["note"]  # every caption fluent: a constant column
    assert main(["metaphor", "correlate", str(tmp_path / "import"), "--criteria", "novelty"]) == 2
    assert main(["vist", "correlate", str(tmp_path / "import" / "labels.csv"), "--scores", str(scores)]) == 2


def test_report_shows_the_correlation_table(tmp_path: Path, capsys) -> None:
    ratings, scores, _, _ = write_study(tmp_path)
    assert main(["vist", "correlate", str(ratings), "--scores", str(scores), "--paired", "--n-boot", "100",
                 "--no-progress", "--out", str(tmp_path / "corr")]) == 0
    capsys.readouterr()
    saved = json.loads((tmp_path / "corr" / "correlation.json").read_text())
    assert saved["per_item"]["s3"]["r06"] == pytest.approx(json.loads(scores.read_text())["s3"]["r06"])
    assert main(["report", str(tmp_path / "corr"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (section,) = [s for s in doc["sections"] if s["kind"] == "metric-correlation"]
    table = next(t for t in section["tables"] if t["key"] == "correlation-rating")
    rows = {r[0]: r for r in table["rows"]}
    assert set(rows) == {"exact", "r06", "r03"} and rows["r06"][1] == str(N) and rows["r06"][3].startswith("0.600 [")
    values = {v["metric"]: v for v in table["values"]}
    assert values["r03"]["pearson"] == pytest.approx(0.3, abs=1e-9)
    assert any(t["key"] == "correlation-rating-paired" for t in section["tables"])
    assert main(["report", str(tmp_path / "corr")]) == 0
    assert "Metric-human correlation" in capsys.readouterr().out
