"""SugarCrepe and ARO scored as their released evaluators score them.

An item is right when the caption scores higher than its hard negative, s(caption) > s(negative) with
s = p(match) (SugarCrepe's ``main_eval.py``: ``pos_score > neg_score``; ARO's ``evaluate_scores``: argmax over
[false, true] is the true caption, so a tie is wrong in both). SugarCrepe: accuracy per category. ARO:
VG-Relation's accuracy per relation and their macro mean over the relations that are not in the list of
symmetric relations the repository's "Replicate ARO!" notebook drops before averaging (157 names: "by", "of",
"near", ...; every published VG-Relation number uses it), with the mean over every relation beside it
(``macro_all_relations``, what ``evaluate_scores`` alone returns); VG-Attribution's accuracy per attribute
pair, counting only pairs with at least 25 cases (the released evaluator's filter), and their macro mean. The
plain accuracy over all cases is reported beside each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connote.suites.base import PairSuiteTask, SuiteExplainTask, accuracy_block, pct
from connote.suites.sugarcrepe.data import CATEGORIES, read_sugarcrepe

#: GPT-4V with the repository's two-caption choice prompt, correct / total as published per category.
GPT4V = {
    "positive first": {"swap_att": (607, 666), "swap_obj": (211, 246), "add_att": (604, 692),
                       "add_obj": (1859, 2062), "replace_att": (734, 788), "replace_obj": (1578, 1652),
                       "replace_rel": (1240, 1406)},
    "negative first": {"swap_att": (593, 666), "swap_obj": (198, 246), "add_att": (666, 692),
                       "add_obj": (1918, 2062), "replace_att": (740, 788), "replace_obj": (1604, 1652),
                       "replace_rel": (1298, 1406)},
}
#: VG-Attribution: attribute pairs with fewer cases are left out of the macro mean (evaluate_scores).
MIN_ATTRIBUTE_PAIR = 25
#: VG-Relation: the relations ARO's notebook ("Replicate ARO! VG-Relation, VG-Attribution.ipynb") leaves out of
#: the macro accuracy as symmetric (a relation whose swapped caption can be as true), exactly as it lists them.
SYMMETRIC_RELATIONS = frozenset(name.strip() for name in """
adjusting|attached to|between|bigger than|biting|boarding|brushing|chewing|cleaning|climbing|close to|
coming from|coming out of|contain|crossing|dragging|draped over|drinking|drinking from|driving|driving down|
driving on|eating from|eating in|enclosing|exiting|facing|filled with|floating in|floating on|flying|
flying above|flying in|flying over|flying through|full of|going down|going into|going through|grazing in|
growing in|growing on|guiding|hanging from|hanging in|hanging off|hanging over|higher than|holding onto|hugging|
in between|jumping off|jumping on|jumping over|kept in|larger than|leading|leaning over|leaving|licking|
longer than|looking in|looking into|looking out|looking over|looking through|lying next to|lying on top of|
making|mixed with|mounted on|moving|on the back of|on the edge of|on the front of|on the other side of|opening|
painted on|parked at|parked beside|parked by|parked in|parked in front of|parked near|parked next to|perched on|
petting|piled on|playing|playing in|playing on|playing with|pouring|reaching for|reading|reflected on|riding on|
running in|running on|running through|seen through|sitting behind|sitting beside|sitting by|sitting in front of|
sitting near|sitting next to|sitting under|skiing down|skiing on|sleeping in|sleeping on|smiling at|sniffing|
splashing|sprinkled on|stacked on|standing against|standing around|standing behind|standing beside|
standing in front of|standing near|standing next to|staring at|stuck in|surrounding|swimming in|swinging|
talking to|topped with|touching|traveling down|traveling on|tying|typing on|underneath|wading in|waiting for|
walking across|walking by|walking down|walking next to|walking through|working in|working on|worn on|
wrapped around|wrapped in|by|of|near|next to|with|beside|on the side of|around
""".split("|"))


def right(row: dict[str, Any]) -> bool:
    return row["scores"][0] > row["scores"][1]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def aro_scores(rows: Sequence[dict[str, Any]], min_count: int,
               exclude: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Accuracy, per-group accuracy and the macro mean over groups with at least ``min_count`` cases, leaving
    ``exclude``'s groups out of the macro (VG-Relation: :data:`SYMMETRIC_RELATIONS`, as ARO's notebook);
    with an ``exclude``, ``macro_all_relations`` is the mean over every group beside it."""
    groups = {}
    for g in sorted({r["group"] for r in rows}):
        in_group = [right(r) for r in rows if r["group"] == g]
        if len(in_group) >= min_count:
            groups[g] = accuracy_block(in_group)
    out = {**accuracy_block([right(r) for r in rows]),
           "macro": _mean([s["accuracy"] for g, s in groups.items() if g not in exclude]),
           "groups": groups, "min_count": min_count}
    if exclude:
        out["macro_all_relations"] = _mean([s["accuracy"] for s in groups.values()])
        out["excluded_from_macro"] = sorted(g for g in groups if g in exclude)
    return out


class SugarCrepeTask(PairSuiteTask):
    name = "sugarcrepe"
    version = 2  # 2: VG-Relation's macro leaves ARO's symmetric relations out, as its notebook
    reads = "a folder of SugarCrepe category JSONs ({id: {filename, caption, negative_caption}}) and/or ARO's " \
            "visual_genome_relation.json / visual_genome_attribution.json"
    title = "SugarCrepe (+ ARO VG-Relation/VG-Attribution): caption vs hard negative accuracy per category."
    headline = ("sugarcrepe_mean",)
    headline_label = "SugarCrepe mean (%)"
    columns = [(f"{c} (%)", f"categories/{c}/accuracy") for c in CATEGORIES] + [
        ("SugarCrepe mean (%)", "sugarcrepe_mean"), ("VG-Relation macro (%)", "vg_relation/macro"),
        ("VG-Attribution macro (%)", "vg_attribution/macro")]
    PUBLISHED = [
        ("Chance", {f"categories/{c}/accuracy": 0.5 for c in CATEGORIES}
         | {"sugarcrepe_mean": 0.5, "vg_relation/macro": 0.5, "vg_attribution/macro": 0.5},
         "by definition: two captions per image"),
        *((f"GPT-4V, choice prompt, {order}", {f"categories/{c}/accuracy": k / n for c, (k, n) in cells.items()},
           "RAIVNLab/sugar-crepe gpt-4v-results/readme.md (counts as published; swap_obj.json holds 245 items)")
          for order, cells in GPT4V.items()),
    ]

    def read(self, data, images):
        return read_sugarcrepe(data, images)

    def metrics(self, rows):
        cats = {c: accuracy_block([right(r) for r in rows if r["category"] == c])
                for c in CATEGORIES if any(r["category"] == c for r in rows)}
        out: dict[str, Any] = {"categories": cats, "rule": "s(caption) > s(negative); a tie is wrong",
                               "sugarcrepe_mean": (sum(c["accuracy"] for c in cats.values()) / len(cats)
                                                   if cats else None)}
        for name, min_count, exclude in (("vg_relation", 1, SYMMETRIC_RELATIONS),
                                         ("vg_attribution", MIN_ATTRIBUTE_PAIR, frozenset())):
            chosen = [r for r in rows if r["category"] == name]
            if chosen:
                out[name] = aro_scores(chosen, min_count, exclude)
        return out

    @classmethod
    def table(cls, results):
        header = ["Category", "Accuracy (%)", "Macro over relations / attribute pairs (%)", "n"]
        rows = [[c, pct(s["accuracy"]), "", str(s["n"])] for c, s in results["categories"].items()]
        if results["categories"]:
            rows.append(["SugarCrepe mean", pct(results["sugarcrepe_mean"]), "", ""])
        for name in ("vg_relation", "vg_attribution"):
            if name in results:
                s = results[name]
                rows.append([name, pct(s["accuracy"]), pct(s["macro"]), str(s["n"])])
                if "macro_all_relations" in s:
                    rows.append([f"{name}, symmetric relations kept", "", pct(s["macro_all_relations"]), ""])
        return header, rows


class SugarCrepeExplainTask(SuiteExplainTask):
    name = "sugarcrepe-mmshap"
    version = 1
    reads = "SugarCrepe / ARO JSONs (as sugarcrepe; the first word where caption and negative part is the target)"
    title = "MM-SHAP on SugarCrepe/ARO: T-SHAP on caption and hard negative per category, with the changed word."
    suite = SugarCrepeTask
    group_by = "category"
