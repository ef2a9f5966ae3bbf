"""SVO-Probes scored as the released notebook (``probing_image_text_models.ipynb``) scores it.

A pair is predicted "match" when p(match) > 0.5. Positive accuracy is over the distinct <sentence,
positive image> pairs, negative accuracy over the distinct <sentence, negative image> pairs (the notebook's
``drop_duplicates`` on the sentence as the CSV holds it: two rows whose sentences differ only in case or
spacing are two pairs), and the average is their macro mean ``(pos + neg) / 2``. Scores are given overall
("All": rows whose negative changes exactly one of subject, verb, object) and per negative type; rows that
change more than one are left out of all four, as the notebook's three filters leave them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connote.suites.base import PairSuiteTask, SuiteExplainTask, accuracy_block, pct
from connote.suites.svo.data import SLOTS, read_svo

TYPES = ("all", *SLOTS)


def svo_scores(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per type: positive, negative and average accuracy (the notebook's ``accuracy``)."""
    out = {}
    for kind in TYPES:
        chosen = [r for r in rows if (r["neg_type"] in SLOTS if kind == "all" else r["neg_type"] == kind)]
        pos = {(r["sentence"], r["pos_image_id"]): r["scores"][0] > 0.5 for r in chosen}
        neg = {(r["sentence"], r["neg_image_id"]): r["scores"][1] <= 0.5 for r in chosen}
        p, n = accuracy_block(list(pos.values())), accuracy_block(list(neg.values()))
        avg = None if p["accuracy"] is None or n["accuracy"] is None else (p["accuracy"] + n["accuracy"]) / 2
        out[kind] = {"average": avg, "positive": p, "negative": n, "rows": len(chosen)}
    return out


class SvoTask(PairSuiteTask):
    name = "svo-probes"
    version = 2  # 2: pairs are distinct by the sentence as written (was: lower-cased, spaces collapsed)
    reads = "svo_probes.csv as released (sentence, pos/neg triplets, subj_neg/verb_neg/obj_neg, image ids, urls)"
    title = "SVO-Probes: accuracy on positive and negative images and their average, per subject/verb/object."
    headline = ("types", "all", "average")
    headline_label = "SVO-Probes avg (%)"
    columns = [("All avg (%)", "types/all/average"), ("All pos (%)", "types/all/positive/accuracy"),
               ("All neg (%)", "types/all/negative/accuracy"), ("Subj avg (%)", "types/subject/average"),
               ("Verb avg (%)", "types/verb/average"), ("Obj avg (%)", "types/object/average")]
    PUBLISHED = [("Chance (a fair coin per pair)", {"types/all/average": 0.5, "types/all/positive/accuracy": 0.5,
                                                    "types/all/negative/accuracy": 0.5},
                  "by definition: each pair is a yes/no decision")]

    def read(self, data, images):
        return read_svo(data, images)

    def metrics(self, rows):
        return {"types": svo_scores(rows), "n_mixed": sum(r["neg_type"] == "mixed" for r in rows),
                "decision": "p_match > 0.5"}

    @classmethod
    def table(cls, results):
        header = ["Negative type", "Avg (%)", "Positive (%)", "Negative (%)", "Rows (n)"]
        rows = []
        for kind in TYPES:
            t = results["types"][kind]
            rows.append([kind, pct(t["average"]), pct(t["positive"]["accuracy"]), pct(t["negative"]["accuracy"]),
                         str(t["rows"])])
        return header, rows


class SvoExplainTask(SuiteExplainTask):
    name = "svo-probes-mmshap"
    version = 1
    reads = "svo_probes.csv (as svo-probes; the changed word of the positive triplet is the target)"
    title = "MM-SHAP on SVO-Probes: T-SHAP and the changed subject/verb/object word's share, per negative type."
    suite = SvoTask
    group_by = "neg_type"
