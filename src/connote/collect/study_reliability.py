"""A study's reliability in one block: each annotator's quality and the rule's verdict, Krippendorff's alpha per
question and for the study, and the aggregated labels (what ``collect status``, ``collect import`` and the
report's study section show).

``import`` writes the block beside its outputs (``<out>.reliability.json``, or ``reliability.json`` in an output
folder) and the aggregated labels as JSON Lines (``<out>.aggregated.jsonl`` / ``aggregated.jsonl``): one row per
item and question with the method's name, the label (null on a tie) and the posterior of every answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connote.collect.aggregation import aggregate
from connote.collect.answers import Collected
from connote.collect.quality import judge, questions
from connote.collect.reliability import judgement_table, study_alpha

FORMAT = 1


def annotator_rows(collected: Collected, model_reliability: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """One row per annotator: complete answers, kept or excluded (why, answers dropped), attention checks and
    gold items, and the reliability model's estimate when one ran."""
    rows = []
    for name, quality in sorted(collected.screening.annotators.items()):
        row = {"annotator": name, "answers": collected.done.get(name, 0), **quality.to_dict(),
               "answers_dropped": collected.dropped.get(name, 0)}
        if model_reliability:
            row["model_reliability"] = model_reliability.get(name)
        rows.append(row)
    return rows


def reliability_of(manifest: Mapping[str, Any], collected: Collected, *, method: str = "majority", n_boot: int = 1000,
                   seed: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The study's reliability block and its aggregated rows (``item_id, question, method, label, posterior,
    votes``), from the answers of the annotators the study's rule keeps."""
    from connote.collect import study_module

    module = study_module(manifest["study"])
    asked = questions(module)
    quality = manifest.get("quality") or {}
    block: dict[str, Any] = {"format": FORMAT, "study": manifest["study"], "rule": collected.screening.rule,
                             "gold_items": len(quality.get("gold") or {}),
                             "attention_checks": len(manifest.get("attention") or {})}
    if not asked:
        block["annotators"] = annotator_rows(collected)
        block["alpha"] = {"questions": {}, "why_undefined": "the study's answers are free text: no categorical "
                                                            "question to measure agreement on"}
        return block, []
    table = judgement_table(collected.by_item, asked, judge(module))
    block["alpha"] = study_alpha(table, asked, n_boot=n_boot, seed=seed)
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    estimates: dict[str, list[float]] = {}
    for q in asked:
        labels, reliability = aggregate(table[q.name], method, seed)
        majority_labels, _ = aggregate(table[q.name], "majority") if method != "majority" else (labels, {})
        for name, r in reliability.items():
            estimates.setdefault(name, []).append(r)
        summary[q.name] = {"items": len(labels), "labelled": sum(v["label"] is not None for v in labels.values()),
                           "ties": sum(v["label"] is None for v in labels.values()),
                           "same_as_majority": sum(v["label"] == majority_labels[i]["label"]
                                                   for i, v in labels.items())}
        rows += [{"item_id": iid, "question": q.name, "method": method, **v} for iid, v in labels.items()]
    block["aggregation"] = {"method": method, "seed": seed, "questions": summary}
    block["annotators"] = annotator_rows(
        collected, {n: round(sum(v) / len(v), 6) for n, v in estimates.items()} if estimates else None)
    return block, rows


def output_paths(out: Path) -> tuple[Path, Path]:
    """Where an import to ``out`` puts the reliability block and the aggregated labels."""
    if out.is_dir():
        return out / "reliability.json", out / "aggregated.jsonl"
    return out.with_name(out.stem + ".reliability.json"), out.with_name(out.stem + ".aggregated.jsonl")


def write_reliability(out: Path, block: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """Write the block (and the aggregated rows, when there are questions) beside ``out``; returns the paths."""
    from connote.runs.store import write_json, write_jsonl

    block_path, rows_path = output_paths(out)
    written = []
    if rows or block.get("aggregation"):
        write_jsonl(rows_path, rows)
        block["aggregation"]["file"] = rows_path.name
        written.append(str(rows_path))
    write_json(block_path, block)
    return [str(block_path), *written]


def _interval(a: Mapping[str, Any]) -> str:
    if a.get("alpha") is None:
        return f"undefined ({a.get('why_undefined', 'no answers')})"
    span = f" [{a['low']:.3f}, {a['high']:.3f}]" if a.get("low") is not None else ""
    return (f"{a['alpha']:.3f}{span} over {a['items']} item(s), {a['level']}"
            + (f", {int(a['confidence'] * 100)}% bootstrap over items (n={a['n_boot']})" if span else ""))


def annotator_quality_line(row: Mapping[str, Any]) -> str:
    """``kept`` or ``EXCLUDED, N answer(s) dropped``, then attention checks passed, gold accuracy and the model's
    reliability estimate of one annotator row."""
    gold = (f"gold {row['gold_correct']}/{row['gold_answered']} ({row['gold_accuracy']:.2f})"
            if row["gold_answered"] else "no gold item answered")
    estimate = row.get("model_reliability")
    model = f", model reliability {estimate:.2f}" if estimate is not None else ""
    state = f"EXCLUDED, {row['answers_dropped']} answer(s) dropped" if row["excluded"] else "kept"
    passed = row["attention_checks_answered"] - len(row["attention_failures"])
    return f"{state}; attention checks {passed}/{row['attention_checks_answered']} passed, {gold}{model}"


def format_reliability(block: Mapping[str, Any], *, annotators: bool = True) -> list[str]:
    """Plain-text lines of a reliability block (``collect status`` and ``import`` print them)."""
    rule = block["rule"]
    lines = [f"  rule: exclude on more than {rule['max_failed_checks']} failed attention check(s)"
             + (f" or gold accuracy below {rule['min_gold_accuracy']:.2f}" if rule.get("min_gold_accuracy") is not None
                else "") + f" ({block['attention_checks']} attention check(s), {block['gold_items']} gold item(s))"]
    if annotators:
        lines += [f"  {row['annotator']}: {row['answers']} answer(s), {annotator_quality_line(row)}"
                  for row in block["annotators"]]
    alpha = block["alpha"]
    if "study" in alpha:
        lines.append(f"  Krippendorff's alpha, study: {_interval(alpha['study'])}")
    for name, a in alpha["questions"].items():
        lines.append(f"  Krippendorff's alpha, {name}: {_interval(a)}")
    if "why_undefined" in alpha:
        lines.append(f"  Krippendorff's alpha: not measured ({alpha['why_undefined']})")
    agg = block.get("aggregation")
    if agg:
        for name, s in agg["questions"].items():
            lines.append(f"  aggregation ({agg['method']}), {name}: {s['labelled']} of {s['items']} item(s) labelled, "
                         f"{s['ties']} tie(s), {s['same_as_majority']} as the majority")
    return lines
