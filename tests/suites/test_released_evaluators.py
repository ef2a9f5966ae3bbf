"""The suites' numbers against their released evaluators' definitions, written here from a reading of each
(never copied), on inputs where the released definition and the one connote used before part:

* ARO's "Replicate ARO!" notebook drops its symmetric relations before VG-Relation's macro accuracy;
* VALSE's ``lxmert_valse_eval.py`` drops a sample whose foil logits tie from every metric;
* SVO-Probes' notebook de-duplicates <sentence, image> pairs on the sentence as the CSV holds it.

Each test runs the suite's task end to end (its reader on files in the released layout, the runner, a matcher
that looks p(match) up in a table) and compares with the released definition computed on the same scores.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from PIL import Image

from connote.suites.sugarcrepe.task import SYMMETRIC_RELATIONS, SugarCrepeTask
from connote.suites.svo.task import SvoTask
from connote.suites.valse.task import ValseTask


class CaptionTable:
    """p(match) by (image file name, caption); images are told apart by their size, set per file below."""

    backend = "caption-table"

    def __init__(self, table: dict, sizes: dict) -> None:
        self.table, self.sizes = table, sizes

    def describe(self) -> dict:
        return {"backend": self.backend, "n": len(self.table)}

    def match_probability(self, images, captions, pairs):
        return [self.table[(self.sizes[images[i].size], captions[c])] for i, c in pairs]


def _image(path: Path, size: tuple[int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, (120, 90, 60)).save(path)


# ------------------------------------------------------------------------------------------------- ARO


def notebook_vg_relation_macro(relations: list[str], scores: list[tuple[float, float]]) -> float:
    """ARO's notebook: evaluate_scores' per-relation accuracy (argmax over [false, true] is index 1; a tie
    goes to index 0), then the records whose relation is in the notebook's symmetric list are dropped and the
    rest averaged."""
    accuracy: dict[str, list[bool]] = {}
    for rel, (s_true, s_false) in zip(relations, scores):
        argmax = 0 if s_false >= s_true else 1
        accuracy.setdefault(rel, []).append(argmax == 1)
    kept = [sum(v) / len(v) for rel, v in sorted(accuracy.items()) if rel not in SYMMETRIC_RELATIONS]
    return sum(kept) / len(kept)


def test_aro_vg_relation_macro_leaves_the_notebooks_symmetric_relations_out(tmp_path: Path) -> None:
    assert len(SYMMETRIC_RELATIONS) == 157 and {"by", "of", "near", "next to", "with", "beside"} <= SYMMETRIC_RELATIONS
    rng = random.Random(38)
    relations = ["on", "in", "behind", "under", "wearing", "holding", "by", "of", "near", "next to", "with",
                 "sitting on", "parked in", "standing next to"]
    data = tmp_path / "aro"
    _image(data / "images" / "scene.png", (40, 30))
    cases, table, rels, scores = [], {}, [], []
    for k in range(300):
        rel = rng.choice(relations)
        # symmetric relations easier than the rest, so leaving them out moves the macro mean
        p_true = rng.random() if rel not in SYMMETRIC_RELATIONS else 0.3 + 0.7 * rng.random()
        p_false = rng.random() if k % 29 else p_true  # a few ties: wrong in both definitions
        true, false = f"the a{k} is {rel} the b{k}", f"the b{k} is {rel} the a{k}"
        cases.append({"image_id": str(k), "image_path": "scene.png", "relation_name": rel, "bbox_x": 0,
                      "bbox_y": 0, "bbox_w": 40, "bbox_h": 30, "true_caption": true, "false_caption": false})
        table[("scene", true)], table[("scene", false)] = p_true, p_false
        rels.append(rel)
        scores.append((p_true, p_false))
    (data / "visual_genome_relation.json").write_text(json.dumps(cases))
    results, outcome = SugarCrepeTask(data, progress=False).run(CaptionTable(table, {(40, 30): "scene"}),
                                                                tmp_path / "run")
    assert outcome.failed == 0
    vgr = results["vg_relation"]
    want = notebook_vg_relation_macro(rels, scores)
    assert vgr["macro"] == pytest.approx(want, abs=1e-12)
    # every relation averaged (evaluate_scores without the notebook's filter): the number connote gave before
    per_relation = [g["accuracy"] for g in vgr["groups"].values()]
    assert vgr["macro_all_relations"] == pytest.approx(sum(per_relation) / len(per_relation), abs=1e-12)
    assert abs(vgr["macro"] - vgr["macro_all_relations"]) > 0.01
    assert vgr["excluded_from_macro"] == sorted(r for r in set(rels) if r in SYMMETRIC_RELATIONS)
    assert "symmetric relations kept" in (tmp_path / "run" / "results.md").read_text()


# ----------------------------------------------------------------------------------------------- VALSE


def script_valse(samples: list[tuple[float, float]]) -> dict[str, float]:
    """lxmert_valse_eval.py on ITM probabilities (p = softmax of the two logits, so p(foil) = 0.5 exactly when the
    foil's logits tie): a tie skips the sample (not counted); caption fits when its match logit wins
    (p > 0.5); foil detected when its no-match logit is >= the match logit, which after the tie check means
    p < 0.5; pairwise when the caption's match score beats the foil's."""
    count = foil_accuracy = capt_fits = foil_detected = pairwise = 0
    for p_caption, p_foil in samples:
        if p_foil == 0.5:
            continue
        if p_caption > 0.5:
            foil_accuracy += 1
            capt_fits += 1
        if p_foil <= 0.5:
            foil_detected += 1
            foil_accuracy += 1
        if p_caption > p_foil:
            pairwise += 1
        count += 1
    return {"n": count, "acc": foil_accuracy / count * 50 / 100, "p_c": capt_fits / count,
            "p_f": foil_detected / count, "acc_r": pairwise / count}


def test_valse_drops_a_sample_whose_foil_logits_tie_as_the_script(tmp_path: Path) -> None:
    data = tmp_path / "valse"
    samples = [(0.8, 0.3), (0.6, 0.5), (0.4, 0.5), (0.7, 0.9), (0.2, 0.1), (0.55, 0.45)]
    entries, table, sizes = {}, {}, {}
    for k, (p_c, p_f) in enumerate(samples):
        _image(data / "images" / f"im{k}.png", (20 + k, 20))
        sizes[(20 + k, 20)] = f"im{k}"
        entries[f"existence_{k}"] = {"image_file": f"im{k}.png", "caption": [f"caption {k}"], "foil": f"foil {k}",
                                     "mturk": {"foil": 0, "caption": 3, "other": 0}}
        table[(f"im{k}", f"caption {k}")], table[(f"im{k}", f"foil {k}")] = p_c, p_f
    (data / "existence.json").write_text(json.dumps(entries, indent=2))
    results, _ = ValseTask(data, progress=False).run(CaptionTable(table, sizes), tmp_path / "run")
    got = results["subsets"]["valid"]["pieces"]["existence"]
    want = script_valse(samples)
    assert got["n"] == want["n"] == 4 and got["n_ties"] == 2
    for metric in ("acc", "p_c", "p_f", "acc_r"):
        assert got[metric] == pytest.approx(want[metric], abs=1e-12), metric
    # the former reading (a tie counted as a detected foil, every sample counted) gives other numbers
    assert got["p_f"] != pytest.approx(sum(p <= 0.5 for _, p in samples) / len(samples))


# ------------------------------------------------------------------------------------------ SVO-Probes


def notebook_svo_accuracy(rows: list[dict]) -> tuple[float, float, float]:
    """The notebook's ``accuracy``: drop_duplicates over (sentence, image id, score) as the frame holds them
    (pandas' read_csv keeps the sentence as written), positive right when predicted 1, negative when 0."""
    pos = {(r["sentence"], r["pos_image_id"], r["pos"]) for r in rows}
    neg = {(r["sentence"], r["neg_image_id"], r["neg"]) for r in rows}
    pos_acc = sum(p for *_, p in pos) / len(pos)
    neg_acc = sum(1 - p for *_, p in neg) / len(neg)
    return (pos_acc + neg_acc) / 2, pos_acc, neg_acc


def test_svo_probes_pairs_are_distinct_by_the_sentence_as_written(tmp_path: Path) -> None:
    data = tmp_path / "svo"
    # sentences that the former key (lower-cased, spaces collapsed) merged; the model scores each as written
    rows = [("A dog runs.", 1, 2, 0.9, 0.2), ("a dog runs.", 1, 3, 0.3, 0.1), ("A dog  runs.", 1, 4, 0.4, 0.7),
            ("A dog runs.", 1, 2, 0.9, 0.2), ("A cat sleeps.", 5, 6, 0.2, 0.6)]
    table, sizes = {}, {}
    for image_id in range(1, 7):
        _image(data / "images" / f"{image_id}.png", (10 + image_id, 10))
        sizes[(10 + image_id, 10)] = str(image_id)
    with open(data / "svo_probes.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["", "sentence", "pos_triplet", "neg_triplet", "subj_neg", "verb_neg", "obj_neg", "pos_url",
                    "neg_url", "pos_image_id", "neg_image_id"])
        for k, (sentence, pos, neg, p_pos, p_neg) in enumerate(rows):
            w.writerow([k, sentence, "dog,run,park", "dog,sit,park", "False", "True", "False", "", "", pos, neg])
            table[(str(pos), sentence)], table[(str(neg), sentence)] = p_pos, p_neg
    results, _ = SvoTask(data, progress=False).run(CaptionTable(table, sizes), tmp_path / "run")
    verb = results["types"]["verb"]
    frame = [{"sentence": s, "pos_image_id": p, "neg_image_id": n, "pos": int(pp > 0.5), "neg": int(pn > 0.5)}
             for s, p, n, pp, pn in rows]
    avg, pos_acc, neg_acc = notebook_svo_accuracy(frame)
    assert verb["positive"]["n"] == 4 and verb["negative"]["n"] == 4  # the repeated row counts once
    assert (verb["average"], verb["positive"]["accuracy"], verb["negative"]["accuracy"]) == pytest.approx(
        (avg, pos_acc, neg_acc), abs=1e-12)
    # 1 of 4 right; the former key merged the three dog sentences into the last one's pair (right): 1 of 2
    assert verb["positive"]["accuracy"] == 0.25
