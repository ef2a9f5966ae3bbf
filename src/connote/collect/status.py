"""``connote collect status``: items done / in progress / left, per annotator, and the study's reliability so far.

An item is *done* when it has its N complete answers (from annotators the study's rule keeps), *in progress*
when it has some complete answers or is assigned to an annotator who has not answered it yet, and *left*
otherwise. Per annotator: items done, assigned and open, attention checks and gold items answered, and
whether the rule excludes them (why, how many answers that drops). Krippendorff's alpha is that of the
answers so far (the import's, with the same interval). Read from Potato's files, so it works while the
server runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from connote.collect import study_module
from connote.collect.answers import collect, read_annotators
from connote.collect.project import read_manifest


def study_status(folder: str | Path, *, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The status of a study folder as a JSON-ready dict (``reliability``: the block import writes, majority)."""
    from connote.collect.answers import excluded_lines
    from connote.collect.study_reliability import reliability_of

    folder = Path(folder)
    manifest = read_manifest(folder)
    module = study_module(manifest["study"])
    per_item = int(manifest["per_item"])
    items = list(manifest["items"])
    collected = collect(folder, manifest, module.is_complete)
    complete = {i: len(collected.by_item[i]) for i in items}
    pending: dict[str, int] = {i: 0 for i in items}
    people = []
    for name, ann in read_annotators(folder).items():
        if name not in collected.screening.annotators:
            continue
        quality = collected.screening.annotators[name]
        open_ = [i for i in ann.assigned
                 if i in pending and not (i in ann.answers and module.is_complete(ann.answers[i]))]
        for i in open_:
            pending[i] += 1
        people.append({"annotator": name, "done": collected.done.get(name, 0), "assigned_open": len(open_),
                       **quality.to_dict(), "answers_dropped": collected.dropped.get(name, 0)})
    done_items = [i for i in items if complete[i] >= per_item]
    progress = [i for i in items if i not in done_items and (complete[i] or pending[i])]
    left = [i for i in items if i not in done_items and i not in progress]
    reliability, _ = reliability_of(manifest, collected, n_boot=n_boot, seed=seed)
    return {
        "study": manifest["study"], "folder": str(folder), "per_item": per_item, "items": len(items),
        "done": len(done_items), "in_progress": len(progress), "left": len(left),
        "answers": sum(complete.values()), "answers_needed": per_item * len(items),
        "per_item_answers": complete, "in_progress_items": progress, "annotators": people,
        "excluded": excluded_lines(collected), "left_out_at_make": manifest.get("left_out", []),
        "reliability": reliability,
    }


def format_status(status: dict[str, Any]) -> str:
    """A short plain-text report of :func:`study_status`."""
    from connote.collect.study_reliability import annotator_quality_line, format_reliability

    lines = [f"{status['study']} in {status['folder']}: {status['items']} items x {status['per_item']} annotators",
             f"  done {status['done']}, in progress {status['in_progress']}, left {status['left']} "
             f"({status['answers']}/{status['answers_needed']} answers)"]
    lines += [f"  {p['annotator']}: {p['done']} done, {p['assigned_open']} assigned and open; "
              f"{annotator_quality_line(p)}" for p in status["annotators"]]
    lines += format_reliability(status["reliability"], annotators=False)
    for reason in status["excluded"]:
        lines.append(f"  excluded {reason}")
    if status["left_out_at_make"]:
        lines.append(f"  {len(status['left_out_at_make'])} source item(s) were left out when the study was made")
    return "\n".join(lines)
