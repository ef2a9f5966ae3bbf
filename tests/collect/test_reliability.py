"""Study reliability: the exclusion rule, Krippendorff's alpha against the ``krippendorff`` package and its
published example, and the reliability models against the majority on annotators of known reliability."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from connote.cli import main
from connote.collect.quality import Question
from connote.collect.reliability import study_alpha
from connote.collect.status import study_status
from tests.support import simulated

pytest.importorskip("krippendorff")
pytest.importorskip("crowdkit")


@pytest.fixture(scope="module")
def simulated_study(tmp_path_factory):
    root = tmp_path_factory.mktemp("simulated")
    study, truth = simulated.make_study(root)
    return study, truth, simulated.simulate(study, truth), root


def _import(study: Path, out: Path, method: str, capsys) -> dict:
    capsys.readouterr()
    assert main(["collect", "import", str(study), "--out", str(out), "--aggregate", method, "--n-boot", "200",
                 "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _expected_exclusions(given: dict[str, dict[str, str]], study: Path) -> dict[str, int]:
    """Who the study's rule names, computed here from the simulated answers: any failed attention check, or gold
    accuracy below the threshold; -> how many of their item answers that drops."""
    from connote.collect.project import read_manifest

    manifest = read_manifest(study)
    gold = manifest["quality"]["gold"]
    out = {}
    for name, answers in given.items():
        failed = any(answers[i] != want["match"] for i, want in manifest["attention"].items())
        accuracy = sum(answers[i] == g["match"] for i, g in gold.items()) / len(gold)
        if failed or accuracy < simulated.MIN_GOLD_ACCURACY:
            out[name] = sum(1 for i in answers if i in set(manifest["items"]))
    return out


def test_import_excludes_exactly_whom_the_rule_names(simulated_study, tmp_path, capsys):
    study, _, given, _ = simulated_study
    report = _import(study, tmp_path / "votes.csv", "majority", capsys)
    expected = _expected_exclusions(given, study)
    assert {"careless-1", "careless-2"} <= set(expected) and any(n.startswith("spammer") for n in expected)
    rows = {r["annotator"]: r for r in report["reliability"]["annotators"]}
    assert {n for n, r in rows.items() if r["excluded"]} == set(expected)
    assert {n: r["answers_dropped"] for n, r in rows.items() if r["excluded"]} == expected
    for name, dropped in expected.items():
        line = next(x for x in report["excluded"] if x.startswith(f"{name}: "))
        assert line.endswith(f"; {dropped} answer(s) dropped")
        why = "attention check attention-1" if name.startswith("careless") else "below the study's min_gold_accuracy"
        assert why in line, line
    # what was written holds only the kept annotators' answers to the study's items (not the checks or gold)
    from connote.collect.project import read_manifest

    items = set(read_manifest(study)["items"])
    assert report["imported"] == sum(1 for n, v in given.items() if n not in expected for i in v if i in items)
    from connote.cv_probes.manifest import read_probe_manifest

    written = {p.item_id: p.human_votes for p in read_probe_manifest(tmp_path / "votes.csv")}
    assert len(written) == simulated.PAIRS  # the gold items' rows are written back too, without votes
    assert all(not written[f"p{k:03d}"] for k in range(simulated.GOLD))
    status = study_status(study, n_boot=50)
    assert {p["annotator"] for p in status["annotators"] if p["excluded"]} == set(expected)
    capsys.readouterr()
    assert main(["collect", "status", str(study), "--n-boot", "50"]) == 0
    shown = capsys.readouterr().out
    assert "careless-1: " in shown and "EXCLUDED, " in shown and "Krippendorff's alpha, match: 0." in shown
    assert "rule: exclude on more than 0 failed attention check(s) or gold accuracy below 0.60" in shown
    assert main(["collect", "import", str(study), "--out", str(tmp_path / "again.csv"), "--n-boot", "50"]) == 0
    shown = capsys.readouterr().out
    assert "excluded spammer-1: gold accuracy" in shown and "aggregation (majority), match: " in shown


def test_alpha_matches_the_krippendorff_package_on_the_same_matrix(simulated_study, tmp_path, capsys):
    import krippendorff

    from connote.collect.project import read_manifest

    study, _, given, _ = simulated_study
    report = _import(study, tmp_path / "votes.csv", "majority", capsys)
    excluded = {r["annotator"] for r in report["reliability"]["annotators"] if r["excluded"]}
    items = read_manifest(study)["items"]
    kept = sorted(n for n in given if n not in excluded)
    code = {label: k for k, label in enumerate(simulated.LABELS)}
    matrix = np.array([[code[given[n][i]] if i in given[n] else np.nan for i in items] for n in kept])
    want = krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal")
    got = report["reliability"]["alpha"]["questions"]["match"]
    assert got["alpha"] == pytest.approx(want, abs=1e-6)
    assert got["low"] < got["alpha"] < got["high"] and got["items"] == len(items)
    print(f"\nalpha of the kept annotators: {got['alpha']:.4f} [{got['low']:.4f}, {got['high']:.4f}] "
          f"(krippendorff.alpha on the same raters x items matrix: {want:.4f})")


@pytest.mark.slow  # three imports, MACE's ten restarts
def test_reliability_models_recover_the_true_labels_better_than_the_majority(simulated_study, tmp_path, capsys):
    study, truth, _, _ = simulated_study
    accuracy, decided, coin = {}, {}, {}
    for method in ("majority", "dawid-skene", "mace"):
        out = tmp_path / method / "votes.csv"
        report = _import(study, out, method, capsys)
        assert report["reliability"]["aggregation"]["method"] == method
        rows = [json.loads(line) for line in out.with_name("votes.aggregated.jsonl").read_text().splitlines()]
        assert {r["method"] for r in rows} == {method} and len(rows) == len(truth) - simulated.GOLD
        assert all(abs(sum(r["posterior"].values()) - 1) < 1e-5 for r in rows)
        accuracy[method] = sum(r["label"] == truth[r["item_id"]] for r in rows) / len(rows)
        labelled = [r for r in rows if r["label"] is not None]
        decided[method] = sum(r["label"] == truth[r["item_id"]] for r in labelled) / len(labelled)
        # a tie settled by a fair coin is right half the time
        coin[method] = accuracy[method] + 0.5 * (len(rows) - len(labelled)) / len(rows)
        if method != "majority":
            reliability = {r["annotator"]: r["model_reliability"] for r in report["reliability"]["annotators"]
                           if not r["excluded"]}
            assert min(reliability[n] for n in reliability if n.startswith("expert")) > max(
                reliability[n] for n in reliability if n.startswith("noisy"))
    print("\nshare of items whose aggregated label is the true one (a tie: no label / settled by a coin; on the "
          "items with a label): " + ", ".join(f"{m} {accuracy[m]:.3f} / {coin[m]:.3f} ({decided[m]:.3f})"
                                              for m in accuracy))
    assert accuracy["dawid-skene"] > coin["majority"] and accuracy["mace"] > coin["majority"]


#: Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the example with missing values:
#: four observers, twelve units; alpha 0.743 nominal, 0.815 ordinal, 0.849 interval.
K2011 = ["1 2 3 3 2 1 4 1 2 . . .", "1 2 3 3 2 2 4 1 2 5 . 3", ". 3 3 3 2 3 4 2 2 5 1 .", "1 2 3 3 2 4 4 1 2 5 1 ."]


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_alpha_reproduces_krippendorffs_published_example(level, published):
    units: dict[str, dict[str, str]] = {}
    for rater, row in zip("ABCD", K2011):
        for unit, value in enumerate(row.split()):
            if value != ".":
                units.setdefault(f"u{unit:02d}", {})[rater] = value
    q = Question("q", ("1", "2", "3", "4", "5"), level=level)
    block = study_alpha({"q": units}, [q], n_boot=100, seed=3)["questions"]["q"]
    assert round(block["alpha"], 3) == published
    again = study_alpha({"q": units}, [q], n_boot=100, seed=3)["questions"]["q"]
    assert (again["low"], again["high"]) == (block["low"], block["high"])  # seeded


def test_alpha_is_undefined_with_a_reason_when_nobody_disagrees_or_nobody_overlaps():
    q = Question("q", ("yes", "no"))
    same = study_alpha({"q": {"a": {"r1": "yes", "r2": "yes"}, "b": {"r1": "yes", "r2": "yes"}}}, [q], n_boot=10)
    assert same["questions"]["q"]["alpha"] is None and "same value" in same["questions"]["q"]["why_undefined"]
    alone = study_alpha({"q": {"a": {"r1": "yes"}, "b": {"r2": "no"}}}, [q], n_boot=10)
    assert alone["questions"]["q"]["alpha"] is None and "fewer than two" in alone["questions"]["q"]["why_undefined"]


def test_study_alpha_pools_every_question_and_resamples_items_whole():
    import krippendorff

    qs = [Question("fluency", ("yes", "no")), Question("creativity", ("yes", "no"))]
    rng = np.random.default_rng(0)
    table = {q.name: {f"i{k}": {r: ("yes", "no")[int(rng.integers(0, 2))] for r in ("a", "b", "c")}
                      for k in range(40)} for q in qs}
    block = study_alpha(table, qs, n_boot=200, seed=1)
    # the pooled units are the (item, question) pairs, labels compared as strings
    matrix = np.array([[0 if table[q.name][f"i{k}"][r] == "yes" else 1 for q in qs for k in range(40)]
                       for r in ("a", "b", "c")])
    assert block["study"]["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=matrix,
                                                                       level_of_measurement="nominal"), abs=1e-6)
    assert block["study"]["items"] == 40 and block["study"]["pooled"] == ["fluency", "creativity"]


def test_the_report_shows_the_study_section(simulated_study, tmp_path, capsys):
    study, _, _, _ = simulated_study
    _import(study, tmp_path / "votes.csv", "dawid-skene", capsys)
    for given in (tmp_path / "votes.labels.csv", tmp_path / "votes.reliability.json"):
        assert main(["report", str(given), "--json"]) == 0
        sections = json.loads(capsys.readouterr().out)
        sections = sections.get("sections", sections) if isinstance(sections, dict) else sections
        study_section = next(s for s in sections if s["kind"] == "study")
        tables = {t["key"]: t for t in study_section["tables"]}
        assert set(tables) >= {"study-alpha", "study-annotators", "study-aggregation", "agreement-fleiss-study"}
        rows = {r[0]: r for r in tables["study-annotators"]["rows"]}
        assert rows["careless-1"][5] == "attention checks" and rows["spammer-1"][5] == "gold accuracy"
        assert rows["expert-1"][5] == "" and tables["study-aggregation"]["rows"][0][1] == "dawid-skene"


@pytest.mark.slow  # makes a study from the sample photos and imports it
def test_a_gold_item_of_several_questions_is_right_only_when_every_answer_is(tmp_path, capsys):
    from connote.collect.importing import import_study
    from connote.collect.project import read_manifest
    from connote.collect.samples import write_sample_album
    from tests.support.potato_state import potato_state

    write_sample_album(tmp_path / "sample")
    photos = sorted(p.name for p in (tmp_path / "sample" / "images").iterdir())[:6]
    table = tmp_path / "metaphors.json"
    table.write_text(json.dumps([{"id": f"s{k}", "image": name, "caption": f"the thing {k} is as bright as a star"}
                                 for k, name in enumerate(photos)]))
    gold = tmp_path / "gold.csv"
    gold.write_text("item_id,question,answer\ns0,fluency,yes\ns0,creativity,no\n")
    study = tmp_path / "study"
    assert main(["collect", "make", "vmc-synth-check", "--data", str(table), "--images",
                 str(tmp_path / "sample" / "images"), "--out", str(study), "--gold-items", str(gold),
                 "--min-gold-accuracy", "0.5"]) == 0
    manifest = read_manifest(study)
    checks = {i: dict(w) for i, w in manifest["attention"].items()}
    items = manifest["items"]
    answers = {"r1": {"s0": {"fluency": "yes", "creativity": "no"}},
               "r2": {"s0": {"fluency": "yes", "creativity": "yes"}},  # one of the two known answers wrong
               "r3": {"s0": {"fluency": "yes", "creativity": "no"}}}
    for k, rater in enumerate(answers):
        answers[rater].update({i: {"fluency": ("yes", "no")[(j + k) % 2], "creativity": ("yes", "no")[j % 2]}
                               for j, i in enumerate(items)})
        potato_state(study, rater, {**answers[rater], **checks})
    report = import_study(study, tmp_path / "out", n_boot=50)
    rows = {r["annotator"]: r for r in report.reliability["annotators"]}
    assert (rows["r1"]["gold_correct"], rows["r2"]["gold_correct"]) == (1, 0)
    assert [n for n, r in rows.items() if r["excluded"]] == ["r2"]
    alpha = report.reliability["alpha"]
    assert set(alpha["questions"]) == {"fluency", "creativity"} and alpha["study"]["pooled"] == ["fluency",
                                                                                                  "creativity"]
    assert alpha["questions"]["creativity"]["alpha"] == 1.0  # r1 and r3 agree on every creativity answer
    assert (tmp_path / "out" / "reliability.json").is_file() and (tmp_path / "out" / "aggregated.jsonl").is_file()
