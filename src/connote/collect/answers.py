"""Reading what Potato stored: every annotator's answers, attention checks, completeness.

Potato keeps one folder per annotator under ``annotation_output/`` with ``user_state.json``;
its ``instance_id_to_label_to_value`` holds ``[{"schema", "name"}, value]`` pairs per item. The
annotator's name is the Potato user id: the typed username or the platform id (Prolific PID,
MTurk worker id) from the study link, so the same person arriving twice continues their state.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connote.collect.project import OUTPUT_DIR
from connote.collect.quality import Answer, Judge, Screening, choice, judge, passes, screen
from connote.core.errors import InputError
from connote.core.jsonio import read_json

__all__ = ["Annotator", "Answer", "Collected", "ImportReport", "Screening", "choice", "collect", "finish",
           "passes", "read_annotators", "screen", "text", "write_labels"]


@dataclass
class Annotator:
    """One annotator's answers by item id and the order Potato assigned them."""

    name: str
    answers: dict[str, Answer] = field(default_factory=dict)
    assigned: list[str] = field(default_factory=list)


#: An annotator id as platforms and typed usernames make them; anything else (markup, control characters,
#: quotes) is refused by name, never printed as given.
_ANNOTATOR_ID = re.compile(r"[\w.@+\- ]{1,200}")


def read_annotators(folder: str | Path, unreadable: list[str] | None = None) -> dict[str, Annotator]:
    """Every annotator of a study folder, by name (sorted).

    An annotator whose ``user_state.json`` does not parse (a server killed mid-write), or whose id is not an
    id (``<img src=x ...>``), is left out and named (``ascii()``-escaped) in ``unreadable``; the others are read.
    With ``unreadable=None`` the first such annotator is an ``InputError``.
    """
    out_dir = Path(folder) / OUTPUT_DIR
    annotators: dict[str, Annotator] = {}
    if not out_dir.is_dir():
        return annotators
    for state_path in sorted(out_dir.glob("*/user_state.json")):
        where = ascii(state_path.parent.name)
        problem = None
        try:
            state = read_json(state_path, what="user_state.json")
            if not isinstance(state, dict):
                problem = "user_state.json is not a JSON object"
        except InputError as exc:  # not UTF-8, malformed, duplicate keys, unreadable: this annotator is named
            problem = f"user_state.json unreadable ({exc.message})"
        name = str(state.get("user_id") or state_path.parent.name) if problem is None else ""
        if problem is None and not _ANNOTATOR_ID.fullmatch(name):
            problem = f"annotator id {ascii(name)} is not an id (letters, digits, spaces and ._@+- only)"
        if problem is not None:
            if unreadable is None:
                raise InputError(f"annotator {where}: {problem}", path=out_dir)
            unreadable.append(f"annotator folder {where}: {problem}; not imported")
            continue
        ann = Annotator(name=name, assigned=[str(i) for i in state.get("instance_id_ordering") or []])
        for iid, pairs in (state.get("instance_id_to_label_to_value") or {}).items():
            answer: Answer = {}
            for pair in pairs or []:
                if not isinstance(pair, list) or len(pair) != 2 or not isinstance(pair[0], Mapping):
                    continue
                schema, label = str(pair[0].get("schema", "")), str(pair[0].get("name", ""))
                answer.setdefault(schema, {})[label] = "" if pair[1] is None else str(pair[1])
            if answer:
                ann.answers[str(iid)] = answer
        annotators[name] = ann
    return dict(sorted(annotators.items()))


def text(answer: Answer, schema: str, label: str = "text_box") -> str:
    """A text answer, stripped ('' when absent)."""
    return str((answer.get(schema) or {}).get(label, "")).strip()


@dataclass
class Collected:
    """Complete answers per item from the annotators who passed, plus what is still open."""

    by_item: dict[str, dict[str, Answer]]  # item -> annotator -> answer (sorted)
    incomplete: dict[str, int]  # item -> complete answers so far (< per_item)
    screening: Screening
    unreadable: list[str] = field(default_factory=list)  # annotators left out, named
    dropped: dict[str, int] = field(default_factory=dict)  # excluded annotator -> complete answers not imported
    done: dict[str, int] = field(default_factory=dict)  # annotator -> complete answers to the study's items


def collect(folder: str | Path, manifest: Mapping[str, Any], is_complete: Callable[[Answer], bool],
            judgements: Judge | None = None) -> Collected:
    """Answers that are complete, from annotators the study's rule keeps, for the study's items (not the checks
    or gold items). ``judgements`` reads gold items (default: the study module's, :func:`quality.judge`)."""
    from connote.collect import study_module

    unreadable: list[str] = []
    annotators = read_annotators(folder, unreadable)
    if judgements is None and manifest.get("study"):
        judgements = judge(study_module(manifest["study"]))
    screening = screen(annotators, manifest, judgements)
    by_item: dict[str, dict[str, Answer]] = {iid: {} for iid in manifest["items"]}
    dropped, done = {}, {}
    for name, ann in annotators.items():
        complete = {iid: a for iid, a in ann.answers.items() if iid in by_item and is_complete(a)}
        done[name] = len(complete)
        if name in screening.excluded:
            dropped[name] = len(complete)
            continue
        for iid, answer in complete.items():
            by_item[iid][name] = answer
    per_item = int(manifest.get("per_item") or 1)
    incomplete = {iid: len(by) for iid, by in by_item.items() if len(by) < per_item}
    return Collected(by_item=by_item, incomplete=incomplete, screening=screening, unreadable=unreadable,
                     dropped=dropped, done=done)


@dataclass
class ImportReport:
    """What an import wrote and found: files, counts, open items, exclusions, agreement."""

    study: str
    outputs: list[str] = field(default_factory=list)
    imported: int = 0  # complete answers written
    items_complete: int = 0
    incomplete: dict[str, int] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)
    agreement: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    reliability: dict[str, Any] = field(default_factory=dict)  # alpha, annotators' quality, aggregation
    collected: Collected | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"study": self.study, "outputs": self.outputs, "imported": self.imported,
                "items_complete": self.items_complete, "incomplete": self.incomplete,
                "excluded": self.excluded, "agreement": self.agreement, **self.extra,
                **({"reliability": self.reliability} if self.reliability else {})}


def write_labels(path: Path, rows: list[tuple[str, str, str, str]]) -> list[dict[str, Any]]:
    """Write ``item_id, rater, criterion, label`` rows (the file ``connote agreement`` reads) and
    return the agreement that command reports for it, computed by reading the file back."""
    import csv

    from connote.metrics.agreement import COLUMNS, agreement_table, read_labels

    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows(sorted(rows))
    if not rows:
        return []
    return [r.to_dict() for r in agreement_table(read_labels(path))]


def excluded_lines(collected: Collected) -> list[str]:
    """Who was left out and why: unreadable annotator folders, then each excluded annotator with the rule's
    reasons and how many of their complete answers were dropped."""
    return collected.unreadable + [f"{name}: {'; '.join(why)}; {collected.dropped.get(name, 0)} answer(s) dropped"
                                   for name, why in sorted(collected.screening.excluded.items())]


def finish(report: ImportReport, collected: Collected) -> ImportReport:
    """Fill the report's shared parts from what was collected (and keep it for the study's reliability)."""
    report.collected = collected
    report.incomplete = dict(sorted(collected.incomplete.items()))
    report.excluded = excluded_lines(collected)
    report.imported = sum(len(by) for by in collected.by_item.values())
    report.items_complete = sum(1 for iid in collected.by_item if iid not in collected.incomplete)
    return report
