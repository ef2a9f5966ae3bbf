"""`vist score --protocol album` equals AREL's evaluator on a prediction file in AREL's own layout.

AREL's `vist_eval/album_eval.py` scores `{album_id: [story]}` against all of an album's stories with
BLEU-1..4 (`option='closest'`), METEOR (the jar run as `-t hter`: "MSR VIST group's measurement"), ROUGE-L and
CIDEr-D, on the text as given (no tokenizer call). Its BLEU and CIDEr-D scorers are pycocoevalcap's own code
(Python 2 spelling only), so pycocoevalcap's classes stand in for them here; ROUGE-L is written below from
`vist_eval/rouge/rouge.py` (tokens split on single spaces, so AREL's two leading spaces count); METEOR is the
real meteor-1.5.jar, fed exactly as `vist_eval/meteor/meteor.py` feeds it. The text is real and connote did not
write it: the human stories of the challenge's example file in ../shared/data/vist, read in place; each album's
first story, with AREL's two leading spaces, is the prediction and its other stories are the references (the
`arel_format_files` fixture in tests/conftest.py).
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from connote.cli import main
from tests.support.needs import missing

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
def arel_case(arel_format_files: tuple[Path, Path]) -> tuple[Path, Path, dict, dict]:
    """(predictions, gold file of those albums' other human stories, AREL's gts, AREL's res)."""
    pred, gold = arel_format_files
    preds = json.loads(pred.read_text(encoding="utf-8"))
    gts: dict[str, list[str]] = collections.defaultdict(list)
    for s in json.loads(gold.read_text(encoding="utf-8"))["output_stories"]:
        gts[s["album_id"]].append(s["story_text_normalized"])
    res = {a: [v[0]] for a, v in preds.items()}  # eval_utils.Evaluator.measure: the first story per album
    assert sorted(gts) == sorted(res) and len(res) == 100  # album_eval's own assertion
    assert all(res[a][0].startswith("  ") and res[a][0].strip() not in gts[a] for a in res)
    return pred, gold, dict(gts), res


@pytest.fixture(scope="module")
def jar(arel_case) -> dict[str, tuple[float, list[float]]]:
    """The real jar on the case under AREL's arguments and under COCO's: corpus and per-album METEOR."""
    _, _, gts, res = arel_case
    java, meteor_dir = _java(), _pycoco_dir() / "meteor"
    return {name: jar_meteor(java, meteor_dir, args, gts, res) for name, args in (("arel", AREL_METEOR),
                                                                                  ("coco", COCO_METEOR))}


def _score(capsys, pred: Path, gold: Path, *extra: str) -> dict:
    code = main(["vist", "score", str(pred), "--gold", str(gold), "-p", "album", "--n-boot", "0", "--json",
                 "--no-save", *extra])
    assert code == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_album_protocol_equals_arel_evaluator(arel_case, jar, capsys) -> None:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider

    pred, gold, gts, res = arel_case
    out = _score(capsys, pred, gold)
    assert out["settings"]["meteor"] == "arel" and out["settings"]["meteor_jar"] == "-t hter"
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    meteor, meteor_per = jar["arel"]
    rouge, _ = arel_rouge_l(gts, res)
    cider, _ = Cider().compute_score(gts, res)
    expected = {"BLEU-1": bleu[0], "BLEU-2": bleu[1], "BLEU-3": bleu[2], "BLEU-4": bleu[3], "METEOR": meteor,
                "ROUGE-L": rouge, "CIDEr-D": cider}
    assert out["scores"] == pytest.approx(expected, abs=1e-9)
    assert meteor == pytest.approx(0.2178, abs=5e-5)  # AREL's setting; the COCO one is far lower (next test)
    per_album = {a: out["per_album"][a]["METEOR"] for a in gts}
    assert list(per_album.values()) == pytest.approx(meteor_per, abs=1e-9)


@pytest.mark.slow
def test_album_protocol_coco_meteor_is_the_named_option(arel_case, jar, capsys) -> None:
    pred, gold, gts, _ = arel_case
    out = _score(capsys, pred, gold, "--meteor", "coco")
    meteor, meteor_per = jar["coco"]
    assert out["settings"]["meteor"] == "coco" and out["settings"]["meteor_jar"] == "-l en -norm"
    assert out["scores"]["METEOR"] == pytest.approx(meteor, abs=1e-9)
    assert [out["per_album"][a]["METEOR"] for a in gts] == pytest.approx(meteor_per, abs=1e-9)
    assert meteor == pytest.approx(0.0962, abs=5e-5)
    assert jar["arel"][0] > 2 * meteor  # same text, same jar: AREL's -t hter more than doubles COCO's METEOR


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
