"""Winoground's scores (Thrush et al. 2022, Section 3), from s(caption, image) = p(match):

* text score: for each image the right caption scores higher, s(c0,i0) > s(c1,i0) and s(c1,i1) > s(c0,i1);
* image score: for each caption the right image scores higher, s(c0,i0) > s(c0,i1) and s(c1,i1) > s(c1,i0);
* group score: both.

Given overall and per ``collapsed_tag`` (Object, Relation, Both).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connote.suites.base import PairSuiteTask, SuiteExplainTask, accuracy_block, pct
from connote.suites.winoground.data import read_winoground


def example_scores(scores: Sequence[float]) -> tuple[bool, bool, bool]:
    """(text, image, group) correct for scores in the order c0_i0, c1_i0, c0_i1, c1_i1."""
    c0_i0, c1_i0, c0_i1, c1_i1 = scores
    text = c0_i0 > c1_i0 and c1_i1 > c0_i1
    image = c0_i0 > c0_i1 and c1_i1 > c1_i0
    return text, image, text and image


def winoground_scores(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    flags = [example_scores(r["scores"]) for r in rows]
    return {name: accuracy_block([f[k] for f in flags]) for k, name in enumerate(("text", "image", "group"))}


class WinogroundTask(PairSuiteTask):
    name = "winoground"
    version = 1
    reads = "Winoground's examples.jsonl (id, image_0/1, caption_0/1, tags) and images/ as on the hub"
    title = "Winoground: text, image and group scores (two images x two captions), per collapsed tag."
    headline = ("overall", "group", "accuracy")
    headline_label = "Winoground group (%)"
    columns = [(f"{m.capitalize()} (%)", f"overall/{m}/accuracy") for m in ("text", "image", "group")]
    PUBLISHED = [
        ("Chance", {"overall/text/accuracy": 0.25, "overall/image/accuracy": 0.25, "overall/group/accuracy": 1 / 6},
         "random scores: 1/4, 1/4, 1/6 (Thrush et al. 2022)"),
        ("UNITER large", {"overall/text/accuracy": 0.38, "overall/image/accuracy": 0.14,
                          "overall/group/accuracy": 0.105},
         "Thrush et al. 2022, as paperswithcode lists the paper's results"),
        ("VinVL", {"overall/text/accuracy": 0.3775, "overall/image/accuracy": 0.1775, "overall/group/accuracy": 0.145},
         "Thrush et al. 2022, as paperswithcode lists the paper's results"),
    ]

    def read(self, data, images):
        return read_winoground(data, images)

    def metrics(self, rows):
        tags = sorted({str(r.get("collapsed_tag")) for r in rows if r.get("collapsed_tag")})
        return {"overall": winoground_scores(rows),
                "tags": {t: winoground_scores([r for r in rows if r.get("collapsed_tag") == t]) for t in tags},
                "score": "p_match"}

    @classmethod
    def table(cls, results):
        header = ["Examples", "Text (%)", "Image (%)", "Group (%)", "n"]
        rows = [["all", *(pct(results["overall"][m]["accuracy"]) for m in ("text", "image", "group")),
                 str(results["overall"]["text"]["n"])]]
        for tag, s in results["tags"].items():
            rows.append([tag, *(pct(s[m]["accuracy"]) for m in ("text", "image", "group")), str(s["text"]["n"])])
        return header, rows


class WinogroundExplainTask(SuiteExplainTask):
    name = "winoground-mmshap"
    version = 1
    reads = "Winoground's examples.jsonl (as winoground; the first swapped word is the attribution target)"
    title = "MM-SHAP on Winoground: T-SHAP of each matching pair and the swapped word's share, per collapsed tag."
    suite = WinogroundTask
    group_by = "collapsed_tag"
