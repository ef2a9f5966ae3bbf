"""The challenge and album protocols on a hand-checked example, with an injected deterministic scorer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from connote.cli import main
from connote.vist import protocols
from connote.vist.challenge import read_gold, read_submission
from connote.vist.protocols import (
    bootstrap_ci,
    compare,
    paired_bootstrap,
    score_album,
    score_challenge,
)
from tests.support.vist_fixtures import challenge, write

S1, S2, S3 = ["1", "2", "3", "4", "5"], ["6", "7", "8", "9", "10"], ["11", "12", "13", "14", "15"]


def jaccard(h: str, r: str) -> float:
    a, b = set(h.split()), set(r.split())
    return len(a & b) / len(a | b) if a | b else 0.0


CALLS: list[tuple[str, str]] = []


def pair_scorer(hyps, refs):
    CALLS.extend(zip(hyps, refs))
    return [jaccard(h, r) for h, r in zip(hyps, refs)]


def corpus_scorer(hyps, refs):
    per = {k: {"Bleu_4": max(jaccard(hyps[k], r) for r in refs[k]), "CIDEr": 2 * len(hyps[k].split())}
           for k in hyps}
    scores = {m: float(np.mean([p[m] for p in per.values()])) for m in ("Bleu_4", "CIDEr")}
    return scores, per, {"Bleu_4": "sig-b4"}


@pytest.fixture
def files(tmp_path: Path):
    tpl = write(tmp_path / "tpl.json", challenge([("A", S1, ""), ("A", S2, ""), ("B", S3, "")]))
    gold = write(tmp_path / "gold.json", challenge([("A", S1, "a b c d"), ("A", S1, "a b x y"),
                                                   ("A", S2, "p q"), ("B", S3, "m n")]))
    sub = write(tmp_path / "sub.json", challenge([("A", S1, "a b c z"), ("A", S2, ""),
                                                  ("Z", ["0"] * 5, "extra story")]))
    return tpl, gold, sub


def test_challenge_hand_checked(files) -> None:
    tpl, gold, sub = (read_submission(files[0]), read_gold(files[1]), read_submission(files[2]))
    CALLS.clear()
    r = score_challenge(sub, gold, template=tpl, pair_scorer=pair_scorer, n_boot=200)
    # S1: max(3/5, 2/6) = 0.6; S2 empty -> 0 (scorer not called); S3 missing, not scored
    assert CALLS == [("a b c z", "a b c d"), ("a b c z", "a b x y")]
    assert r.per_item == {"1-2-3-4-5": {"METEOR": pytest.approx(0.6)}, "6-7-8-9-10": {"METEOR": 0.0}}
    assert r.scores["METEOR"] == pytest.approx(0.3)
    assert r.missing == ["11-12-13-14-15"] and not r.complete and r.n_empty == 1
    assert r.extra == ["0-0-0-0-0"]
    assert r.per_album == {"A": {"METEOR": pytest.approx(0.3)}}
    r2 = score_challenge(sub, gold, template=tpl, pair_scorer=pair_scorer, allow_missing=True, n_boot=200)
    assert r2.scores["METEOR"] == pytest.approx(0.2) and r2.complete
    assert r2.per_album["B"] == {"METEOR": 0.0}
    lo, hi = r2.ci["METEOR"]
    assert 0.0 <= lo <= 0.2 <= hi <= 0.6
    d = r2.to_dict()
    assert d["protocol"] == "challenge" and d["scores"]["METEOR"] == pytest.approx(0.2)


def test_challenge_without_template_averages_over_gold(files) -> None:
    r = score_challenge(read_submission(files[2]), read_gold(files[1]), pair_scorer=pair_scorer,
                        allow_missing=True, n_boot=0)
    assert r.n_items == 3 and r.scores["METEOR"] == pytest.approx(0.2) and r.ci == {}


def test_errors_are_skipped_and_counted(tmp_path: Path, files) -> None:
    p = tmp_path / "gen.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in [
        {"album_id": "A", "photo_sequence": S1, "story": "a b c d"},
        {"album_id": "A", "photo_sequence": S2, "story": "", "error": "image 7 unreadable"},
        {"album_id": "B", "photo_sequence": S3, "story": "m"}]))
    r = score_challenge(read_submission(p), read_gold(files[1]), template=read_submission(files[0]),
                        pair_scorer=pair_scorer, n_boot=0)
    assert r.errors == {"6-7-8-9-10": "image 7 unreadable"}
    # an errored sequence is not scored, and the score covers fewer sequences than the template
    assert r.scores["METEOR"] == pytest.approx((1.0 + 0.5) / 2) and not r.complete
    assert r.n_covered == 2 and r.to_dict()["n_errors"] == 1
    r0 = score_challenge(read_submission(p), read_gold(files[1]), template=read_submission(files[0]),
                         pair_scorer=pair_scorer, n_boot=0, allow_missing=True)  # scored 0, as a missing one
    assert r0.scores["METEOR"] == pytest.approx((1.0 + 0.0 + 0.5) / 3) and r0.complete and r0.n_covered == 2
    ra = score_album(read_submission(p), read_gold(files[1]), template=read_submission(files[0]),
                     corpus_scorer=corpus_scorer, n_boot=0)
    assert ra.errors == {} and ra.complete  # album A's first story counts; B scored


def test_album_hand_checked(files) -> None:
    tpl, gold, sub = (read_submission(files[0]), read_gold(files[1]), read_submission(files[2]))
    r = score_album(sub, gold, template=tpl, corpus_scorer=corpus_scorer, n_boot=100)
    # album A: prediction "a b c z" vs refs {a b c d, a b x y, p q} -> 0.6; B missing
    assert r.per_item == {"A": {"BLEU-4": pytest.approx(0.6), "CIDEr-D": 8.0}}
    assert r.scores == {"BLEU-4": pytest.approx(0.6), "CIDEr-D": 8.0}
    assert r.missing == ["B"] and not r.complete and r.extra == ["Z"]
    assert r.signatures == {"BLEU-4": "sig-b4"}
    assert r.item_means == {"BLEU-4": pytest.approx(0.6), "CIDEr-D": 8.0}
    r2 = score_album(sub, gold, template=tpl, corpus_scorer=corpus_scorer, allow_missing=True, n_boot=100)
    assert r2.per_item["B"] == {"BLEU-4": 0.0, "CIDEr-D": 0.0}  # empty -> 0 whatever the scorer says
    assert r2.scores["BLEU-4"] == pytest.approx(0.3)


def test_per_item_orientation() -> None:
    per = protocols._per_item({"bleu_1": {"x": 0.5}, "meteor": {"x": 0.25}})
    assert per == {"x": {"BLEU-1": 0.5, "METEOR": 0.25}}
    assert protocols._per_item({"x": {"rouge_l": 0.1}}) == {"x": {"ROUGE-L": 0.1}}


def test_bootstrap_against_numpy() -> None:
    x = [0.1, 0.4, 0.35, 0.8, 0.0, 0.55]
    lo, hi = bootstrap_ci(x, n_boot=500, seed=3)
    rng = np.random.default_rng(3)
    means = np.asarray(x)[rng.integers(0, 6, size=(500, 6))].mean(axis=1)
    assert (lo, hi) == (np.quantile(means, 0.025), np.quantile(means, 0.975))
    assert bootstrap_ci(x, n_boot=500, seed=3) == (lo, hi)  # seeded


def test_bootstrap_is_scipys_percentile_and_bca() -> None:
    from scipy import stats

    x = np.array([0.1, 0.4, 0.35, 0.8, 0.0, 0.55, 0.2, 0.9])
    for method in ("percentile", "BCa", "basic"):
        ref = stats.bootstrap((x,), np.mean, n_resamples=400, method=method, confidence_level=0.9,
                              rng=np.random.default_rng(5)).confidence_interval
        assert bootstrap_ci(x, n_boot=400, alpha=0.1, seed=5, method=method) == pytest.approx((ref.low, ref.high))
    bca, pct = bootstrap_ci(x, n_boot=400, seed=5, method="BCa"), bootstrap_ci(x, n_boot=400, seed=5)
    assert bca != pct  # BCa corrects the percentile interval for bias and skew
    assert bootstrap_ci([0.3], n_boot=100) == (0.3, 0.3) and bootstrap_ci([0.2, 0.2]) == (0.2, 0.2)
    with pytest.raises(ValueError, match="valid"):
        bootstrap_ci(x, method="normal")


def test_paired_bootstrap_resamples_pairs_as_scipy() -> None:
    from scipy import stats

    a = np.array([0.1, 0.5, 0.2, 0.7, 0.4, 0.3, 0.9, 0.6])
    b = a + np.array([0.1, -0.05, 0.2, 0.0, 0.15, 0.05, -0.1, 0.1])
    res = paired_bootstrap(a, b, n_boot=300, seed=2, alpha=0.1)
    ref = stats.bootstrap((a, b), lambda u, v, axis: np.mean(v - u, axis=axis), paired=True, n_resamples=300,
                          method="percentile", confidence_level=0.9, rng=np.random.default_rng(2))
    assert (res["ci_low"], res["ci_high"]) == pytest.approx(tuple(ref.confidence_interval))
    assert res["b_wins"] == pytest.approx(float(np.mean(ref.bootstrap_distribution > 0)))
    bca = paired_bootstrap(a, b, n_boot=300, seed=2, method="BCa")
    assert bca["delta"] == res["delta"] and (bca["ci_low"], bca["ci_high"]) != (res["ci_low"], res["ci_high"])


def test_paired_bootstrap() -> None:
    a = [0.1, 0.2, 0.3, 0.4, 0.5] * 8
    same = paired_bootstrap(a, a, n_boot=200)
    assert same["delta"] == 0.0 and same["p_value"] == 1.0
    better = paired_bootstrap(a, [v + 0.1 for v in a], n_boot=200)
    assert better["delta"] == pytest.approx(0.1) and better["p_value"] == pytest.approx(1 / 201)
    assert better["b_wins"] == 1.0
    noisy = paired_bootstrap(a, [v + (0.05 if i % 2 else -0.05) for i, v in enumerate(a)], n_boot=500)
    assert noisy["p_value"] > 0.5
    with pytest.raises(ValueError):
        paired_bootstrap([1.0], [1.0, 2.0])


def test_compare_results(files) -> None:
    tpl, gold = read_submission(files[0]), read_gold(files[1])
    a = score_challenge(read_submission(files[2]), gold, template=tpl, pair_scorer=pair_scorer,
                        allow_missing=True, n_boot=0)
    t = compare(a, a, n_boot=50)
    assert t["METEOR"]["delta"] == 0.0 and t["METEOR"]["n"] == 3


def test_cli_score(files, monkeypatch, capsys) -> None:
    monkeypatch.setattr(protocols, "default_pair_scorer", lambda **kw: pair_scorer)
    monkeypatch.setattr(protocols, "default_corpus_scorer", lambda *a, **kw: corpus_scorer)
    tpl, gold, sub = map(str, files)
    assert main(["vist", "score", sub, "--gold", gold, "--template", tpl, "--json", "--n-boot", "50"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "challenge" and out["missing"] == ["11-12-13-14-15"]
    assert out["scores"]["METEOR"] == pytest.approx(0.3)
    perfect = write(Path(gold).parent / "perfect.json", challenge([("A", S1, "a b c d"), ("A", S2, "p q"),
                                                                   ("B", S3, "m n")]))
    assert main(["vist", "score", sub, "--gold", gold, "--template", tpl, "--json", "--allow-missing",
                 "--compare", str(perfect)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scores"]["METEOR"] == pytest.approx(0.2)
    assert out["compare"]["paired_bootstrap"]["METEOR"]["delta"] == pytest.approx(0.8)
    assert main(["vist", "score", sub, "--gold", gold, "-p", "album", "--allow-missing", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["protocol"] == "album" and out["scores"]["BLEU-4"] == pytest.approx(0.3)
    assert main(["vist", "score", sub, "--gold", gold, "-p", "nope"]) == 2


# ---------------------------------------------------------------- real files, injected scorer


def test_real_files_challenge(vist_dir: Path) -> None:
    tpl = read_submission(vist_dir / "vist-challenge-template.json")
    gold = read_gold(vist_dir / "example-submission-file.test.json")
    human = read_submission(vist_dir / "example-submission-file.test.json")
    r = score_challenge(human, gold, template=tpl, pair_scorer=pair_scorer, n_boot=0)
    assert r.n_scored == 1938 and r.scores["METEOR"] == 1.0 and len(r.extra) == 81
    CALLS.clear()
    empty = read_submission(vist_dir / "example-submission-file-extra.empty.test.json")
    r = score_challenge(empty, gold, template=tpl, pair_scorer=pair_scorer, n_boot=0)
    assert r.scores["METEOR"] == 0.0 and r.n_empty == 1938 and not CALLS
    missing = read_submission(vist_dir / "example-submission-file-extra.missing.happy.test.json")
    r = score_challenge(missing, gold, template=tpl, pair_scorer=pair_scorer, n_boot=0, allow_missing=True)
    assert len(r.missing) == 1 and r.n_scored == 1938 and 0 < r.scores["METEOR"] < 0.2
    assert len(r.per_album) == 971
    wrong = vist_dir / "example-submission-file-extra.wrong.happy.test.json"
    assert main(["vist", "score", str(wrong), "--gold", str(vist_dir / "example-submission-file.test.json")]) == 2


# ---------------------------------------------------------------- with the real connote.metrics


@pytest.fixture(scope="module")
def real_metrics():
    return pytest.importorskip("connote.metrics.meteor")


def test_real_metrics_challenge(vist_dir: Path, real_metrics) -> None:
    tpl = read_submission(vist_dir / "vist-challenge-template.json")
    tpl.entries = tpl.entries[:150]
    gold = read_gold(vist_dir / "example-submission-file.test.json")
    human = score_challenge(read_submission(vist_dir / "example-submission-file.test.json"), gold, template=tpl,
                            n_boot=100)
    assert human.scores["METEOR"] == pytest.approx(1.0)  # every sequence scored against its own story
    assert "task:hter" in human.signatures["METEOR"] and "norm:no" in human.signatures["METEOR"]
    happy = score_challenge(read_submission(vist_dir / "example-submission-file-extra.happy.test.json"), gold,
                            template=tpl, n_boot=100)
    assert 0.05 < happy.scores["METEOR"] < 0.3
    lo, hi = happy.ci["METEOR"]
    assert lo < happy.scores["METEOR"] < hi
    test = compare(happy, human, n_boot=100)["METEOR"]
    assert test["delta"] > 0.5 and test["p_value"] < 0.05


def test_real_metrics_album_and_cli(files, real_metrics, capsys) -> None:
    tpl, gold, sub = map(str, files)
    assert main(["vist", "score", gold, "--gold", gold, "-p", "album", "--json", "--n-boot", "20"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["scores"]) == {"BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4", "METEOR", "ROUGE-L", "CIDEr-D"}
    assert out["scores"]["ROUGE-L"] > 0.5 and out["per_album"]["A"]["BLEU-1"] > 0.5
    assert main(["vist", "score", gold, "--gold", gold, "-p", "album", "--json", "--tokenize", "ptb"]) == 0
    assert "tok:ptb" in json.loads(capsys.readouterr().out)["signatures"]["ROUGE-L"]
    assert main(["vist", "score", gold, "--gold", gold, "--tokenize", "ptb"]) == 2
    assert main(["vist", "score", sub, "--gold", gold, "--template", tpl, "--allow-missing", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["per_album"]["A"]["METEOR"] < 0.5 and out["scores"]["METEOR"] < 0.3


# ---------------------------------------------------------------- refusals: exit 2 with a message, exit 1 when short


def test_cli_refuses_gold_without_stories(files, capsys) -> None:
    tpl, _gold, sub = map(str, files)
    assert main(["vist", "score", sub, "--gold", tpl, "--n-boot", "0"]) == 2  # the template given as gold
    err = capsys.readouterr().err
    assert "tpl.json" in err and "no gold stories" in err and "every story text empty" in err
    assert "template" in err and "Traceback" not in err


def test_cli_refuses_duplicate_stories(files, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(protocols, "default_pair_scorer", lambda **kw: pair_scorer)
    tpl, gold, _sub = map(str, files)
    dup = write(tmp_path / "dup.json", challenge([("A", S1, "a b"), ("A", S2, "p"), ("A", S1, "a b c d")]))
    assert main(["vist", "score", str(dup), "--gold", gold, "--template", tpl]) == 2
    err = capsys.readouterr().err
    assert "dup.json" in err and "1 photo sequence(s) have more than one story: 1-2-3-4-5 (2 stories)" in err
    ok = write(tmp_path / "ok.json", challenge([("A", S1, "a b"), ("A", S2, "p"), ("B", S3, "m")]))
    assert main(["vist", "score", str(ok), "--gold", gold, "--template", tpl, "--compare", str(dup)]) == 2
    assert "dup.json" in capsys.readouterr().err


@pytest.mark.parametrize(("gold", "expected"), [
    ({"type": "story-in-sequence", "annotations": {"0": {}}}, "'annotations' is a JSON object; expected a list"),
    ({"type": "story-in-sequence", "annotations": [1, 2]},
     "no story could be read (2 problem(s); first problem: annotations[0]: not an annotation object)"),
    ({"type": "story-in-sequence", "annotations": [[{"album_id": "A", "photo_flickr_id": "1", "text": "x"}]]},
     "no 'story_id'"),
    ({"type": "story-in-sequence", "images": {"1": {}}, "annotations": []}, "'images' is a JSON object"),
    ({"output_stories": [{"album_id": "A"}]}, "missing or empty 'photo_sequence'"),
])
def test_cli_refuses_gold_of_the_wrong_shape(files, tmp_path: Path, gold, expected, capsys) -> None:
    bad = write(tmp_path / "bad.story-in-sequence.json", gold)
    assert main(["vist", "score", str(files[2]), "--gold", str(bad), "--n-boot", "0"]) == 2
    err = capsys.readouterr().err
    assert "bad.story-in-sequence.json" in err and expected in err and "Traceback" not in err


def test_cli_errored_sequence_counts_and_exits_1(files, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(protocols, "default_pair_scorer", lambda **kw: pair_scorer)
    tpl, gold, _sub = map(str, files)
    p = tmp_path / "gen.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in [
        {"album_id": "A", "photo_sequence": S1, "story": "a b c d"},
        {"album_id": "A", "photo_sequence": S2, "story": "", "error": "image 7 unreadable"},
        {"album_id": "B", "photo_sequence": S3, "story": "m n"}]))
    assert main(["vist", "score", str(p), "--gold", gold, "--template", tpl, "--n-boot", "0"]) == 1
    captured = capsys.readouterr()
    assert "errors 1" in captured.out and "failed (1): 6-7-8-9-10: image 7 unreadable" in captured.out
    assert "the score covers 2 of 3 sequences (0 missing, 1 failed)" in captured.err
    assert main(["vist", "score", str(p), "--gold", gold, "--template", tpl, "--n-boot", "0", "--allow-missing",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_errors"] == 1 and out["n_covered"] == 2 and out["scores"]["METEOR"] == pytest.approx(2 / 3)
    assert main(["vist", "score", str(p), "--gold", gold, "--ci-method", "normal"]) == 2


def test_real_template_as_gold_is_refused(vist_dir: Path, capsys) -> None:
    happy = vist_dir / "example-submission-file-extra.happy.test.json"
    assert main(["vist", "score", str(happy), "--gold", str(vist_dir / "vist-challenge-template.json")]) == 2
    err = capsys.readouterr().err
    assert "vist-challenge-template.json: no gold stories: 1938 photo sequence(s), every story text empty" in err
