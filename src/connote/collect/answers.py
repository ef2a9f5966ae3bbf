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
from connote.core.errors import InputError
from connote.core.jsonio import read_json

# schema -> label -> value
Answer = dict[str, dict[str, str]]


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


def choice(answer: Answer, schema: str) -> str | None:
    """The chosen label of a radio question (Potato stores the label as the key)."""
    labels = answer.get(schema) or {}
    picked = [label for label, value in labels.items() if str(value).lower() not in ("", "false", "0", "off")]
    return picked[0] if len(picked) == 1 else None


def text(answer: Answer, schema: str, label: str = "text_box") -> str:
    """A text answer, stripped ('' when absent)."""
    return str((answer.get(schema) or {}).get(label, "")).strip()


@dataclass
class Screening:
    """Who passed the attention checks, and why the others are excluded."""

    excluded: dict[str, list[str]] = field(default_factory=dict)  # annotator -> reasons
    checks_answered: dict[str, int] = field(default_factory=dict)

    def reasons(self) -> list[str]:
        return [f"{name}: {'; '.join(why)}" for name, why in sorted(self.excluded.items())]


def _norm(value: str) -> str:
    return " ".join(str(value).lower().replace(".", " ").replace("!", " ").split())


def passes(answer: Answer, schema: str, want: str) -> tuple[bool, str]:
    """Whether ``answer`` gives ``want`` for ``schema``, and what it gave: a radio's one chosen label, or
    a text scheme's one non-empty value (case, spacing and final full stop ignored)."""
    given = [(label, value) for label, value in (answer.get(schema) or {}).items()
             if str(value).strip() and str(value).lower() not in ("false", "off")]
    if len(given) != 1:
        return False, "; ".join(f"{label}={value}" for label, value in given) or "nothing"
    label, value = given[0]
    shown = label if str(value).lower() in ("true", "on", label.lower()) else value
    return _norm(want) in (_norm(label) if str(value).lower() in ("true", "on") else "", _norm(value)), shown


def screen(annotators: Mapping[str, Annotator], expected: Mapping[str, Mapping[str, str]]) -> Screening:
    """Fail an annotator on any attention check answered other than its known answer."""
    result = Screening()
    for name, ann in annotators.items():
        answered = 0
        for iid, want in sorted(expected.items()):
            got = ann.answers.get(iid)
            if not got:
                continue
            answered += 1
            for schema, label in want.items():
                ok, given = passes(got, schema, label)
                if not ok:
                    result.excluded.setdefault(name, []).append(
                        f"attention check {iid} answered {given!r} for {schema!r}, expected {label!r}")
        result.checks_answered[name] = answered
    return result


@dataclass
class Collected:
    """Complete answers per item from the annotators who passed, plus what is still open."""

    by_item: dict[str, dict[str, Answer]]  # item -> annotator -> answer (sorted)
    incomplete: dict[str, int]  # item -> complete answers so far (< per_item)
    screening: Screening
    unreadable: list[str] = field(default_factory=list)  # annotators left out, named


def collect(folder: str | Path, manifest: Mapping[str, Any], is_complete: Callable[[Answer], bool]) -> Collected:
    """Answers that are complete, from annotators not excluded, for the study's items (not the checks)."""
    unreadable: list[str] = []
    annotators = read_annotators(folder, unreadable)
    screening = screen(annotators, manifest.get("attention") or {})
    by_item: dict[str, dict[str, Answer]] = {iid: {} for iid in manifest["items"]}
    for name, ann in annotators.items():
        if name in screening.excluded:
            continue
        for iid, answer in ann.answers.items():
            if iid in by_item and is_complete(answer):
                by_item[iid][name] = answer
    per_item = int(manifest.get("per_item") or 1)
    incomplete = {iid: len(by) for iid, by in by_item.items() if len(by) < per_item}
    return Collected(by_item=by_item, incomplete=incomplete, screening=screening, unreadable=unreadable)


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

    def to_dict(self) -> dict[str, Any]:
        return {"study": self.study, "outputs": self.outputs, "imported": self.imported,
                "items_complete": self.items_complete, "incomplete": self.incomplete,
                "excluded": self.excluded, "agreement": self.agreement, **self.extra}


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


def finish(report: ImportReport, collected: Collected) -> ImportReport:
    """Fill the report's shared parts from what was collected."""
    report.incomplete = dict(sorted(collected.incomplete.items()))
    report.excluded = collected.unreadable + collected.screening.reasons()
    report.imported = sum(len(by) for by in collected.by_item.values())
    report.items_complete = sum(1 for iid in collected.by_item if iid not in collected.incomplete)
    return report
