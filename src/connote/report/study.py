"""The ``study`` report kind: the reliability of a human study, as ``connote collect import`` wrote it.

Recognises the ``reliability.json`` an import writes (given as the file, as the output folder that holds it,
or as the study's labels file ``X.labels.csv`` beside ``X.reliability.json``) and shows the study section:
Krippendorff's alpha per question and for the study with its bootstrap interval over items, each annotator's
attention checks, gold accuracy, the reliability model's estimate and the rule's verdict (why, answers
dropped), and how the labels were aggregated. A labels file beside it adds the kappa tables of the
``agreement`` kind. Several imports are shown one after the other.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from connote.core.errors import InputError
from connote.report.agreement import estimate_cell
from connote.report.document import Run, Section, Table

NAME = "study"


def reliability_file(path: Path) -> Path | None:
    """The reliability JSON that ``path`` is, holds, or sits beside (as ``X.labels.csv``); None otherwise."""
    if path.is_dir():
        candidate = path / "reliability.json"
    elif path.name.endswith("reliability.json"):
        candidate = path
    elif path.name.endswith(".labels.csv"):
        candidate = path.with_name(path.name.removesuffix(".labels.csv") + ".reliability.json")
    else:
        return None
    return candidate if candidate.is_file() else None


class StudyKind:
    """Recognises an import's reliability block and builds the study section."""

    name = NAME
    expects = "reliability.json written by connote collect import"

    def recognise(self, folder: Path) -> Run | None:
        path = reliability_file(folder)
        if path is None:
            return None
        try:
            block = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"not a reliability block ({exc})", path=path) from None
        if not isinstance(block, dict) or not {"study", "alpha", "annotators"} <= set(block):
            raise InputError("not a reliability block (expected study, alpha, annotators)", path=path)
        name = path.parent.name if path.name == "reliability.json" else path.name.removesuffix(".reliability.json")
        labels = path.parent / "labels.csv" if path.name == "reliability.json" else path.with_name(
            path.name.removesuffix(".reliability.json") + ".labels.csv")
        return Run(folder=path, kind=NAME, name=f"{block['study']}: {name}", group=("study",), data=str(path),
                   results={"block": block, "labels": str(labels) if labels.is_file() else None})

    def section(self, runs: list[Run]) -> Section:
        tables: list[Table] = []
        for k, run in enumerate(runs, start=1):
            tag = f"-{k}" if len(runs) > 1 else ""
            tables += study_tables(run.results["block"], run.name, tag)
            if run.results.get("labels"):
                from connote.report.agreement import KIND as AGREEMENT
                from connote.report.agreement import agreement_tables

                labelled = AGREEMENT.recognise(Path(run.results["labels"]))
                if labelled is not None:
                    tables += agreement_tables(labelled, f"{tag}-study")
        return Section(title="Human study: reliability", kind=NAME, runs=runs, tables=tables,
                       notes=[f"{r.name}: {r.folder}" for r in runs])


KIND = StudyKind()


def _alpha_row(name: str, a: Mapping[str, Any]) -> list[str]:
    span = f"[{a['low']:.3f}, {a['high']:.3f}]" if a.get("low") is not None else "—"
    return [name, a.get("level", ""), str(a.get("items", 0)), estimate_cell(a.get("alpha")), span]


def _annotator_row(r: Mapping[str, Any]) -> list[str]:
    gold = f"{r['gold_correct']}/{r['gold_answered']} ({estimate_cell(r['gold_accuracy'], 2)})"
    return [r["annotator"], str(r["answers"]),
            f"{r['attention_checks_answered'] - len(r['attention_failures'])}/{r['attention_checks_answered']}",
            gold if r["gold_answered"] else "—", estimate_cell(r.get("model_reliability"), 2), _excluded_for(r),
            str(r["answers_dropped"])]


def _excluded_for(row: Mapping[str, Any]) -> str:
    """The rule's verdict in a few words (the full reasons are the table's notes)."""
    why = []
    if any(r.startswith(("attention check", "failed")) for r in row["reasons"]):
        why.append("attention checks")
    if any(r.startswith("gold accuracy") for r in row["reasons"]):
        why.append("gold accuracy")
    return " + ".join(why) if row["excluded"] else ""


def study_tables(block: Mapping[str, Any], name: str, tag: str = "") -> list[Table]:
    """Alpha, annotators and aggregation tables of one reliability block."""
    alpha = block["alpha"]
    rows, values = [], []
    if "study" in alpha:
        rows.append(_alpha_row("study (all questions)", alpha["study"]))
        values.append({"question": "study", **alpha["study"]})
    for q, a in alpha["questions"].items():
        rows.append(_alpha_row(q, a))
        values.append({"question": q, **a})
    first = alpha.get("study") or next(iter(alpha["questions"].values()), {})
    notes = [f"Krippendorff's alpha (the krippendorff package) over the answers of the annotators the study's rule "
             f"keeps; interval: {int(first.get('confidence', 0.95) * 100)}% percentile bootstrap over items "
             f"({first.get('n_boot', 0)} resamples, seed {first.get('seed', 0)}); — undefined."]
    if "why_undefined" in alpha:
        notes.append(f"Not measured: {alpha['why_undefined']}.")
    tables = [Table(key=f"study-alpha{tag}", title=f"Krippendorff's alpha: {name}",
                    header=["Question", "Level", "Items", "α", "Interval"], rows=rows, values=values, notes=notes)]
    rule = block["rule"]
    threshold = rule.get("min_gold_accuracy")
    tables.append(Table(
        key=f"study-annotators{tag}", title=f"Annotators: {name}",
        header=["Annotator", "Answers", "Attention", "Gold", "Model", "Excluded for", "Dropped"],
        rows=[_annotator_row(r) for r in block["annotators"]],
        values=list(block["annotators"]),
        notes=[f"The study's rule: excluded after more than {rule['max_failed_checks']} failed attention check(s)"
               + (f" or with gold accuracy below {threshold:.2f}" if threshold is not None else "")
               + f"; {block['attention_checks']} attention check(s), {block['gold_items']} gold item(s). "
               "Attention: checks passed / answered; Gold: gold items right / answered (accuracy); Model: the "
               "reliability model's estimate; Dropped: the excluded annotator's answers not imported.",
               *(f"{r['annotator']}: {'; '.join(r['reasons'])}" for r in block["annotators"] if r["excluded"])]))
    agg = block.get("aggregation")
    if agg:
        tables.append(Table(
            key=f"study-aggregation{tag}", title=f"Aggregated labels ({agg['method']}): {name}",
            header=["Question", "Method", "Items", "Labelled", "Ties", "Same as majority"],
            rows=[[q, agg["method"], str(s["items"]), str(s["labelled"]), str(s["ties"]), str(s["same_as_majority"])]
                  for q, s in agg["questions"].items()],
            values=[{"question": q, "method": agg["method"], **s} for q, s in agg["questions"].items()],
            notes=[f"Per-item labels and posteriors: {agg.get('file', 'aggregated.jsonl')}; majority is the papers' "
                   "rule (a tie gives no label), dawid-skene and mace are crowd-kit's reliability models."]))
    return tables
