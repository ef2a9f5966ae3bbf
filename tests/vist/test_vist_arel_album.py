"""`vist score --protocol album` equals AREL's evaluator on AREL's own released test predictions.

AREL's `vist_eval/album_eval.py` scores `{album_id: [story]}` against all of an album's stories with
BLEU-1..4 (`option='closest'`), METEOR (the jar run as `-t hter`: "MSR VIST group's measurement"), ROUGE-L and
CIDEr-D, on the text as given (no tokenizer call). Its BLEU and CIDEr-D scorers are pycocoevalcap's own code
(Python 2 spelling only), so pycocoevalcap's classes stand in for them here; ROUGE-L is written below from
`vist_eval/rouge/rouge.py` (tokens split on single spaces, so AREL's two leading spaces count); METEOR is the
real meteor-1.5.jar, fed exactly as `vist_eval/meteor/meteor.py` feeds it. The predictions
(tests/vist/data, see its README) are real outputs connote did not produce; the references are the human
stories of the challenge's example file in ../shared/data/vist.
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from needs import missing

from connote.cli import main

PREDICTIONS = Path(__file__).parent / "data" / "arel-IRL-init-iter100.prediction_test.first100.json"
AREL_METEOR = ["-t", "hter"]  # vist_eval/meteor/meteor.py
COCO_METEOR = ["-l", "en", "-norm"]  # the line AREL comments out (pycocoevalcap's)


def _pycoco_dir() -> Path:
    try:
        import pycocoevalcap
    except ImportError:
        missing("pycocoevalcap is not installed")
    return Path(list(pycocoevalcap.__path__)[0])


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        missing("java is not installed (apt-get install default-jre-headless)")
    return java


def jar_meteor(java: str, meteor_dir: Path, args: list[str], gts: dict, res: dict) -> tuple[float, list[float]]:
    """AREL's Meteor.compute_score: one SCORE line per album, then one EVAL line; corpus and per-album scores."""
    p = subprocess.Popen([java, "-jar", "-Xmx2G", "meteor-1.5.jar", "-", "-", "-stdio", *args], cwd=meteor_dir,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        eval_line = "EVAL"
        for i in gts:
            hyp = res[i][0].replace("|||", "").replace("  ", " ")
            p.stdin.write(" ||| ".join(("SCORE", " ||| ".join(gts[i]), hyp)) + "\n")
            p.stdin.flush()
            eval_line += " ||| " + p.stdout.readline().strip()
        p.stdin.write(eval_line + "\n")
        p.stdin.flush()
        per = [float(p.stdout.readline().strip()) for _ in gts]
        return float(p.stdout.readline().strip()), per
    finally:
        p.stdin.close()
        p.kill()
        p.wait()


def arel_rouge_l(gts: dict, res: dict) -> tuple[float, list[float]]:
    """vist_eval/rouge/rouge.py: LCS over tokens split on " ", max precision and recall, beta 1.2, mean."""

    def lcs(a: list[str], b: list[str]) -> int:
        if len(a) < len(b):
            a, b = b, a
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for j in range(1, len(b) + 1):
            for i in range(1, len(a) + 1):
                table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
        return table[len(a)][len(b)]

    scores = []
    for i in gts:
        cand = res[i][0].split(" ")
        prec, rec = [], []
        for ref in gts[i]:
            toks = ref.split(" ")
            n = lcs(toks, cand)
            prec.append(n / len(cand))
            rec.append(n / len(toks))
        p, r = max(prec), max(rec)
        scores.append((1 + 1.2 ** 2) * p * r / (r + 1.2 ** 2 * p) if p and r else 0.0)
    return sum(scores) / len(scores), scores


@pytest.fixture(scope="module")
def arel_case(vist_dir: Path, tmp_path_factory) -> tuple[Path, Path, dict, dict]:
    """(predictions, gold file of those albums' human stories, AREL's gts, AREL's res)."""
    preds = json.loads(PREDICTIONS.read_text(encoding="utf-8"))
    human = json.loads((vist_dir / "example-submission-file.test.json").read_text(encoding="utf-8"))
    stories = [s for s in human["output_stories"] if s["album_id"] in preds]
    gold = tmp_path_factory.mktemp("arel") / "gold.json"
    gold.write_text(json.dumps({**human, "output_stories": stories}), encoding="utf-8")
    gts: dict[str, list[str]] = collections.defaultdict(list)
    for s in stories:
        gts[s["album_id"]].append(s["story_text_normalized"])
    res = {a: [v[0]] for a, v in preds.items()}  # eval_utils.Evaluator.measure: the first story per album
    assert sorted(gts) == sorted(res) and len(res) == 100  # album_eval's own assertion
    return PREDICTIONS, gold, dict(gts), res


def _score(capsys, pred: Path, gold: Path, *extra: str) -> dict:
    code = main(["vist", "score", str(pred), "--gold", str(gold), "-p", "album", "--n-boot", "0", "--json",
                 "--no-save", *extra])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_album_protocol_equals_arel_evaluator(arel_case, capsys) -> None:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider

    pred, gold, gts, res = arel_case
    java, meteor_dir = _java(), _pycoco_dir() / "meteor"
    out = _score(capsys, pred, gold)
    assert out["settings"]["meteor"] == "arel" and out["settings"]["meteor_jar"] == "-t hter"
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    meteor, meteor_per = jar_meteor(java, meteor_dir, AREL_METEOR, gts, res)
    rouge, _ = arel_rouge_l(gts, res)
    cider, _ = Cider().compute_score(gts, res)
    expected = {"BLEU-1": bleu[0], "BLEU-2": bleu[1], "BLEU-3": bleu[2], "BLEU-4": bleu[3], "METEOR": meteor,
                "ROUGE-L": rouge, "CIDEr-D": cider}
    assert out["scores"] == pytest.approx(expected, abs=1e-9)
    assert meteor == pytest.approx(0.2982, abs=5e-5)  # AREL's setting; the COCO one is far lower (next test)
    per_album = {a: out["per_album"][a]["METEOR"] for a in gts}
    assert list(per_album.values()) == pytest.approx(meteor_per, abs=1e-9)


def test_album_protocol_coco_meteor_is_the_named_option(arel_case, capsys) -> None:
    pred, gold, gts, res = arel_case
    out = _score(capsys, pred, gold, "--meteor", "coco")
    meteor, _ = jar_meteor(_java(), _pycoco_dir() / "meteor", COCO_METEOR, gts, res)
    assert out["settings"]["meteor"] == "coco" and out["settings"]["meteor_jar"] == "-l en -norm"
    assert out["scores"]["METEOR"] == pytest.approx(meteor, abs=1e-9)
    assert meteor == pytest.approx(0.1139, abs=5e-5)


def test_meteor_setting_is_in_the_stored_signature(arel_case, tmp_path: Path, capsys) -> None:
    pred, gold, _, _ = arel_case
    local = tmp_path / "prediction_test.json"
    local.write_bytes(pred.read_bytes())
    for setting in ("arel", "coco"):
        assert main(["vist", "score", str(local), "--gold", str(gold), "-p", "album", "--n-boot", "0", "--save",
                     "--meteor", setting]) == 0
    stored = sorted((tmp_path / "scores").glob("album-*.json"))
    assert len(stored) == 2  # the setting is part of the key: one file per setting, neither replaced
    settings = {json.loads(p.read_text())["settings"]["meteor"] for p in stored}
    assert settings == {"arel", "coco"}


def test_arel_predictions_need_the_album_protocol(arel_case, capsys) -> None:
    pred, gold, _, _ = arel_case
    assert main(["vist", "score", str(pred), "--gold", str(gold)]) == 2
    assert "--protocol album" in capsys.readouterr().err
    assert main(["vist", "score", str(pred), "--gold", str(gold), "--meteor", "coco"]) == 2
    assert main(["vist", "score", str(pred), "--gold", str(gold), "-p", "album", "--meteor", "jar"]) == 2
