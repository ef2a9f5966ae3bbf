"""``connote collect status``: items done / in progress / left, per annotator, attention-check failures.

An item is *done* when it has its N complete answers (from annotators who did not fail an attention
check), *in progress* when it has some complete answers or is assigned to an annotator who has not
answered it yet, and *left* otherwise. Read from Potato's files, so it works while the server runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from connote.collect import study_module
from connote.collect.answers import read_annotators, screen
from connote.collect.project import read_manifest


def study_status(folder: str | Path) -> dict[str, Any]:
    """The status of a study folder as a JSON-ready dict."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    module = study_module(manifest["study"])
    per_item = int(manifest["per_item"])
    items = list(manifest["items"])
    attention = manifest.get("attention") or {}
    unreadable: list[str] = []
    annotators = read_annotators(folder, unreadable)
    screening = screen(annotators, attention)
    complete: dict[str, int] = {i: 0 for i in items}
    pending: dict[str, int] = {i: 0 for i in items}
    people = []
    for name, ann in annotators.items():
        done = [i for i in items if i in ann.answers and module.is_complete(ann.answers[i])]
        open_ = [i for i in ann.assigned if i in complete and i not in done]
        if name not in screening.excluded:
            for i in done:
                complete[i] += 1
        for i in open_:
            pending[i] += 1
        people.append({"annotator": name, "done": len(done), "assigned_open": len(open_),
                       "attention_checks_answered": screening.checks_answered.get(name, 0),
                       "attention_failures": screening.excluded.get(name, [])})
    done_items = [i for i in items if complete[i] >= per_item]
    progress = [i for i in items if i not in done_items and (complete[i] or pending[i])]
    left = [i for i in items if i not in done_items and i not in progress]
    return {
        "study": manifest["study"], "folder": str(folder), "per_item": per_item, "items": len(items),
        "done": len(done_items), "in_progress": len(progress), "left": len(left),
        "answers": sum(complete.values()), "answers_needed": per_item * len(items),
        "per_item_answers": {i: complete[i] for i in items},
        "in_progress_items": progress, "annotators": people,
        "excluded": unreadable + screening.reasons(), "left_out_at_make": manifest.get("left_out", []),
    }


def format_status(status: dict[str, Any]) -> str:
    """A short plain-text report of :func:`study_status`."""
    lines = [f"{status['study']} in {status['folder']}: {status['items']} items x {status['per_item']} annotators",
             f"  done {status['done']}, in progress {status['in_progress']}, left {status['left']} "
             f"({status['answers']}/{status['answers_needed']} answers)"]
    for p in status["annotators"]:
        flag = f", FAILED {len(p['attention_failures'])} attention check(s)" if p["attention_failures"] else ""
        lines.append(f"  {p['annotator']}: {p['done']} done, {p['assigned_open']} assigned and open, "
                     f"{p['attention_checks_answered']} attention check(s) answered{flag}")
    for reason in status["excluded"]:
        lines.append(f"  excluded {reason}")
    if status["left_out_at_make"]:
        lines.append(f"  {len(status['left_out_at_make'])} source item(s) were left out when the study was made")
    return "\n".join(lines)
