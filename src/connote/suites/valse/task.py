"""VALSE scored as its released scripts score it (Heidelberg-NLP/VALSE ``lxmert_valse_eval.py``).

Per piece, on the MTurk-validated samples (``mturk.caption >= 2``, the README's rule; the unfiltered set is
reported beside it), with p = p(match):

* ``acc_r`` pairwise accuracy: p(caption) > p(foil);
* ``p_c`` caption precision as the paper names it: the share of captions judged to fit, p(caption) > 0.5;
* ``p_f`` foil precision: the share of foils judged not to fit, p(foil) < 0.5;
* ``acc`` = (p_c + p_f) / 2, the script's ``foil_accuracy / count * 50``.

A sample whose foil's two ITM logits tie (p(foil) = 0.5 exactly) is left out of every metric and of ``n``, as the
script does (it prints the sample, "something is wrong with the tokenisation", and does not count it); such
samples are counted in ``n_ties``.

As a binary image-text decision over all 2n pairs, ``precision`` is the share of captions among the pairs
judged to fit and ``recall`` the share of captions judged to fit (equal to p_c). ``Avg.`` is the mean over
pieces, as the paper's tables give it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connote.suites.base import PairSuiteTask, SuiteExplainTask, pct, ratio
from connote.suites.valse.data import read_valse

METRICS = ("acc_r", "acc", "p_c", "p_f", "precision", "recall")


def valse_scores(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The VALSE metrics of one set of caption/foil rows (``scores`` = [p(caption), p(foil)]); a foil at exactly
    p = 0.5 (its two logits tie) drops its sample, as ``lxmert_valse_eval.py`` does."""
    ties = sum(r["scores"][1] == 0.5 for r in rows)
    rows = [r for r in rows if r["scores"][1] != 0.5]
    n = len(rows)
    fits = sum(r["scores"][0] > 0.5 for r in rows)
    detected = sum(r["scores"][1] < 0.5 for r in rows)
    ranked = sum(r["scores"][0] > r["scores"][1] for r in rows)
    foils_fit = n - detected
    p_c, p_f = ratio(fits, n), ratio(detected, n)
    return {"n": n, "n_ties": ties, "acc_r": ratio(ranked, n), "p_c": p_c, "p_f": p_f,
            "acc": None if p_c is None else (p_c + p_f) / 2,
            "precision": ratio(fits, fits + foils_fit), "recall": p_c}


def _mean(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


class ValseTask(PairSuiteTask):
    name = "valse"
    version = 2  # 2: a sample whose foil logits tie is dropped, as the script (was: counted as detected)
    reads = "a folder of VALSE piece JSONs as released ({id: {image_file, caption, foil, classes, mturk, ...}})"
    title = "VALSE: pairwise accuracy acc_r, acc, p_c, p_f per piece, on the MTurk-validated subset."
    headline = ("subsets", "valid", "average", "acc_r")
    headline_label = "VALSE acc_r (%)"
    columns = [(f"{m} avg (%)", f"subsets/valid/average/{m}") for m in ("acc_r", "acc", "p_c", "p_f")]
    PUBLISHED = [("Chance", {"subsets/valid/average/acc_r": 0.5, "subsets/valid/average/acc": 0.5},
                  "by definition: two captions per image, a yes/no each")]

    def read(self, data, images):
        return read_valse(data, images)

    def metrics(self, rows):
        subsets = {}
        for subset in ("valid", "all"):
            chosen = [r for r in rows if r["valid"] or subset == "all"]
            pieces = {p: valse_scores([r for r in chosen if r["piece"] == p])
                      for p in sorted({r["piece"] for r in rows})}
            subsets[subset] = {"pieces": pieces,
                               "average": {m: _mean([s[m] for s in pieces.values() if s["n"]]) for m in METRICS}}
        return {"subsets": subsets, "rule": "valid: mturk.caption >= 2 (2 of 3 annotators chose the caption)",
                "decision": "p_match > 0.5"}

    @classmethod
    def table(cls, results):
        header = ["Piece", "acc_r (%)", "acc (%)", "p_c (%)", "p_f (%)", "precision (%)", "n valid", "n all"]
        valid, every = results["subsets"]["valid"], results["subsets"]["all"]
        rows = []
        for piece, s in valid["pieces"].items():
            rows.append([piece, *(pct(s[m]) for m in METRICS[:5]), str(s["n"]), str(every["pieces"][piece]["n"])])
        avg = valid["average"]
        rows.append(["Avg. (valid)", *(pct(avg[m]) for m in METRICS[:5]), "", ""])
        avg = every["average"]
        rows.append(["Avg. (all, unvalidated too)", *(pct(avg[m]) for m in METRICS[:5]), "", ""])
        return header, rows


class ValseExplainTask(SuiteExplainTask):
    name = "valse-mmshap"
    version = 1
    reads = "VALSE piece JSONs (as valse; classes / classes_foil are the attribution targets)"
    title = "MM-SHAP on VALSE: T-SHAP on caption and foil per piece (as the MM-SHAP paper), with the foiled word."
    suite = ValseTask
    group_by = "piece"
