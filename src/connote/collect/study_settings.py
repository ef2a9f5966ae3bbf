"""What ``collect make`` adds to a made study: the crowd platform, gold items and the exclusion rule.

A study module writes its Potato project (:func:`connote.collect.project.write_project`); this then rewrites
its ``config.yaml``, ``data.jsonl`` and ``connote-study.json`` for:

* ``--platform prolific|mturk`` (:mod:`connote.collect.crowd`);
* ``--gold-items GOLD.csv``: rows ``item_id,question,answer`` naming items of the study and the known answer
  to one of its multiple-choice questions. Those items leave the ordinary items (``data.jsonl``) for
  ``gold.jsonl``, and Potato shows one to every annotator after every ``--gold-every`` items (silently: no
  feedback), so each annotator's gold accuracy is measured on the same known answers;
* the rule: ``--min-gold-accuracy`` (default 0.7 with gold items, Potato's own default threshold) and
  ``--max-failed-checks`` (default 0: the first failed attention check excludes).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import yaml

from connote.collect.project import CONFIG, DATA, MANIFEST, read_manifest
from connote.collect.quality import DEFAULT_RULE, questions
from connote.core.errors import InputError
from connote.core.jsonio import read_jsonl
from connote.runs.store import write_jsonl

GOLD = "gold.jsonl"
GOLD_COLUMNS = ("item_id", "question", "answer")
DEFAULT_MIN_GOLD_ACCURACY = 0.7


def read_gold(path: Path, study: str, items: set[str]) -> dict[str, dict[str, str]]:
    """``item -> {question: answer}`` from a gold CSV, every row checked against the study: its item, one of its
    multiple-choice questions, one of that question's answers (a bad row: exit 2 naming its line)."""
    from connote.collect import study_module
    from connote.core.jsonio import read_text

    radios = {q.name: q for q in questions(study_module(study)) if q.radio and q.labels}
    if not radios:
        raise InputError(f"{study} has no multiple-choice question a gold item could check (its attention checks "
                         "screen annotators)", path=path)
    reader = csv.DictReader(io.StringIO(read_text(path, what="gold items file"), newline=""))
    header = [h.strip() for h in reader.fieldnames or []]
    if any(c not in header for c in GOLD_COLUMNS):
        raise InputError(f"expected the columns {', '.join(GOLD_COLUMNS)}", path=path, line=1)
    gold: dict[str, dict[str, str]] = {}
    for line, raw in enumerate(reader, start=2):
        row = {k.strip(): (v or "").strip() for k, v in raw.items() if k}
        iid, question, answer = (row.get(c, "") for c in GOLD_COLUMNS)
        if not any((iid, question, answer)):
            continue
        if iid not in items:
            raise InputError(f"item {iid!r} is not an item of the study (see its data.jsonl ids)", path=path,
                             line=line, column="item_id")
        if question not in radios:
            raise InputError(f"question {question!r} is not one of the study's: {', '.join(radios)}", path=path,
                             line=line, column="question")
        if answer not in (radios[question].labels or ()):
            raise InputError(f"answer {answer!r} is not one of {', '.join(radios[question].labels or ())}",
                             path=path, line=line, column="answer")
        if question in gold.get(iid, {}):
            raise InputError(f"item {iid!r} has a gold answer for {question!r} twice", path=path, line=line)
        gold.setdefault(iid, {})[question] = answer
    if not gold:
        raise InputError("no gold items in the file", path=path)
    if len(gold) >= len(items):
        raise InputError("every item would be a gold item; keep some items to annotate", path=path)
    return gold


def _rule(gold: bool, min_gold_accuracy: float | None, max_failed_checks: int | None) -> dict[str, Any]:
    if min_gold_accuracy is not None and not gold:
        raise InputError("--min-gold-accuracy needs --gold-items (the gold items it is measured on)")
    if min_gold_accuracy is not None and not 0 <= min_gold_accuracy <= 1:
        raise InputError(f"--min-gold-accuracy must be between 0 and 1, got {min_gold_accuracy}")
    if max_failed_checks is not None and max_failed_checks < 0:
        raise InputError(f"--max-failed-checks must be 0 or more, got {max_failed_checks}")
    rule = dict(DEFAULT_RULE)
    if max_failed_checks is not None:
        rule["max_failed_checks"] = max_failed_checks
    if gold:
        rule["min_gold_accuracy"] = DEFAULT_MIN_GOLD_ACCURACY if min_gold_accuracy is None else min_gold_accuracy
    return rule


def configure_study(folder: Path, *, platform: str | None = None, per_participant: int | None = None,
                    gold_items: Path | None = None, gold_every: int = 5, min_gold_accuracy: float | None = None,
                    max_failed_checks: int | None = None) -> dict[str, Any]:
    """Apply the platform, gold items and exclusion rule to the made study in ``folder``; returns its manifest."""
    from connote.collect.crowd import platform_config

    if gold_every < 1:
        raise InputError(f"--gold-every must be at least 1, got {gold_every}")
    manifest = read_manifest(folder)
    config = yaml.safe_load((folder / CONFIG).read_text(encoding="utf-8"))
    gold = read_gold(gold_items, manifest["study"], set(manifest["items"])) if gold_items is not None else {}
    rule = _rule(bool(gold), min_gold_accuracy, max_failed_checks)
    if platform is not None:
        config.update(platform_config(platform, manifest["completion_code"], per_participant))
        manifest["login"] = platform
    elif per_participant is not None:
        config["max_annotations_per_user"] = per_participant
    if gold:
        _move_gold_items(folder, gold)
        config["gold_standards"] = {
            "enabled": True, "items_file": GOLD, "mode": "mixed", "frequency": gold_every,
            "accuracy": {"min_threshold": rule["min_gold_accuracy"], "evaluation_count": 1},
            "feedback": {"show_correct_answer": False, "show_explanation": False}}
        manifest["items"] = [i for i in manifest["items"] if i not in gold]
    manifest["platform"] = platform
    manifest["quality"] = {"rule": rule, "gold": gold, "gold_every": gold_every if gold else None}
    (folder / CONFIG).write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=100),
                                 encoding="utf-8")
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False, sort_keys=True) + "\n",
                                   encoding="utf-8")
    return manifest


def _move_gold_items(folder: Path, gold: dict[str, dict[str, str]]) -> None:
    """Move the gold items from ``data.jsonl`` to ``gold.jsonl`` with Potato's ``gold_label``."""
    kept, moved = [], []
    for _, item in read_jsonl(folder / DATA, what="study items"):
        if item["id"] in gold:
            moved.append({**item, "gold_label": gold[item["id"]]})
        else:
            kept.append(item)
    write_jsonl(folder / DATA, kept)
    write_jsonl(folder / GOLD, moved)
