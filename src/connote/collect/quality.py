"""Who is kept: attention checks, gold items and the study's exclusion rule.

A study declares its categorical questions (``QUESTIONS`` in its module, :class:`Question`), what the
gold items and Krippendorff's alpha read. Two kinds of known-answer items screen annotators:

* **attention checks** (``attention.jsonl``): the page tells the annotator what to answer; failing one
  means not reading. An annotator who fails more than the rule's ``max_failed_checks`` (default 0: the
  first failure) is excluded.
* **gold items** (``gold.jsonl``, from ``collect make --gold-items``): ordinary-looking items whose true
  answer is known; Potato shows one every few items to every annotator. An annotator whose gold accuracy
  is below the rule's ``min_gold_accuracy`` is excluded.

The rule is set when the study is made and stored in ``connote-study.json`` under ``quality``; status and
import apply it, and name who was excluded, why, and how many of their answers were dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

#: Krippendorff's levels of measurement a question may have (the ``krippendorff`` package's names).
LEVELS = ("nominal", "ordinal", "interval")
#: The exclusion rule of a study made before the rule existed (and the defaults of ``collect make``).
DEFAULT_RULE = {"max_failed_checks": 0, "min_gold_accuracy": None}


@dataclass(frozen=True)
class Question:
    """One categorical question of a study: what alpha, gold items and aggregation read.

    ``labels`` are its answers in order (the scale of an ordinal question); ``None`` when the answers are
    whatever annotators chose (a sequence number). ``radio`` says it is a Potato radio scheme of this
    name, so a gold item can name it.
    """

    name: str
    labels: tuple[str, ...] | None = None
    level: str = "nominal"
    radio: bool = True


Answer = dict[str, dict[str, str]]
Judge = Callable[[Answer], dict[str, str]]


def choice(answer: Answer, schema: str) -> str | None:
    """The chosen label of a radio question (Potato stores the label as the key)."""
    labels = answer.get(schema) or {}
    picked = [label for label, value in labels.items() if str(value).lower() not in ("", "false", "0", "off")]
    return picked[0] if len(picked) == 1 else None


def questions(module: ModuleType) -> tuple[Question, ...]:
    """A study module's categorical questions (none for free-text studies)."""
    return tuple(getattr(module, "QUESTIONS", ()))


def judge(module: ModuleType) -> Judge:
    """``answer -> {question: label}`` for a study: the module's own ``judgements`` or, for radio questions,
    the one chosen label (a question without an answer is absent)."""
    own = getattr(module, "judgements", None)
    if own is not None:
        return own
    asked = questions(module)

    def judgements(answer: Answer) -> dict[str, str]:
        out = {}
        for q in asked:
            label = choice(answer, q.name)
            if label is not None and (q.labels is None or label in q.labels):
                out[q.name] = label
        return out

    return judgements


def study_rule(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The exclusion rule stored in a study's manifest (the defaults for a study made without one)."""
    return {**DEFAULT_RULE, **(manifest.get("quality") or {}).get("rule", {})}


@dataclass
class AnnotatorQuality:
    """One annotator's screening: attention checks and gold items answered, and what went wrong."""

    checks_answered: int = 0
    checks_failed: list[str] = field(default_factory=list)  # "attention check X answered ..., expected ..."
    gold_answered: int = 0
    gold_correct: int = 0
    excluded: list[str] = field(default_factory=list)  # the reasons, when the rule excludes the annotator

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_correct / self.gold_answered if self.gold_answered else None

    def to_dict(self) -> dict[str, Any]:
        acc = self.gold_accuracy
        return {"attention_checks_answered": self.checks_answered, "attention_failures": self.checks_failed,
                "gold_answered": self.gold_answered, "gold_correct": self.gold_correct,
                "gold_accuracy": None if acc is None else round(acc, 6), "excluded": bool(self.excluded),
                "reasons": self.excluded}


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


def _check_attention(quality: AnnotatorQuality, answers: Mapping[str, Answer],
                     expected: Mapping[str, Mapping[str, str]]) -> None:
    for iid, want in sorted(expected.items()):
        got = answers.get(iid)
        if not got:
            continue
        quality.checks_answered += 1
        for schema, label in want.items():
            ok, given = passes(got, schema, label)
            if not ok:
                quality.checks_failed.append(
                    f"attention check {iid} answered {given!r} for {schema!r}, expected {label!r}")


def _check_gold(quality: AnnotatorQuality, answers: Mapping[str, Answer], gold: Mapping[str, Mapping[str, str]],
                judgements: Judge | None) -> None:
    for iid, want in sorted(gold.items()):
        got = answers.get(iid)
        if not got:
            continue
        said = judgements(got) if judgements is not None else {}
        quality.gold_answered += 1
        quality.gold_correct += all(said.get(q) == label for q, label in want.items())


def apply_rule(quality: AnnotatorQuality, rule: Mapping[str, Any]) -> None:
    """Fill ``quality.excluded`` with the reasons ``rule`` excludes the annotator for (none: kept)."""
    allowed = int(rule.get("max_failed_checks") or 0)
    if len(quality.checks_failed) > allowed:
        quality.excluded += quality.checks_failed if allowed == 0 else [
            f"failed {len(quality.checks_failed)} attention checks, more than the study's max_failed_checks "
            f"{allowed} ({'; '.join(quality.checks_failed)})"]
    threshold = rule.get("min_gold_accuracy")
    accuracy = quality.gold_accuracy
    if threshold is not None and accuracy is not None and accuracy < float(threshold):
        quality.excluded.append(f"gold accuracy {accuracy:.2f} ({quality.gold_correct} of {quality.gold_answered} "
                                f"gold items) below the study's min_gold_accuracy {float(threshold):.2f}")


@dataclass
class Screening:
    """Who passed the attention checks and gold items under the study's rule, and why the others are excluded."""

    annotators: dict[str, AnnotatorQuality] = field(default_factory=dict)
    rule: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_RULE))

    @property
    def excluded(self) -> dict[str, list[str]]:
        """annotator -> reasons, for the excluded ones."""
        return {name: q.excluded for name, q in self.annotators.items() if q.excluded}

    @property
    def checks_answered(self) -> dict[str, int]:
        return {name: q.checks_answered for name, q in self.annotators.items()}

    def reasons(self) -> list[str]:
        return [f"{name}: {'; '.join(why)}" for name, why in sorted(self.excluded.items())]


def screen(annotators: Mapping[str, Any], manifest: Mapping[str, Any], judgements: Judge | None = None) -> Screening:
    """Screen every annotator (``answers.Annotator``) on the study's attention checks and gold items and apply
    its rule. ``judgements`` reads a gold item's answer (:func:`judge`)."""
    result = Screening(rule=study_rule(manifest))
    expected = manifest.get("attention") or {}
    gold = (manifest.get("quality") or {}).get("gold") or {}
    for name, ann in annotators.items():
        quality = AnnotatorQuality()
        _check_attention(quality, ann.answers, expected)
        _check_gold(quality, ann.answers, gold, judgements)
        apply_rule(quality, result.rule)
        result.annotators[name] = quality
    return result
