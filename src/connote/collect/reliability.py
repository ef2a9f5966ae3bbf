"""Krippendorff's alpha of a study, per question and over the whole study, with a bootstrap interval over items.

Alpha comes from the ``krippendorff`` package (Castro's implementation of Krippendorff 2011), fed each unit's
count of every answer (``value_counts``), which is all alpha reads. A *unit* is one (item, question): the
per-question alpha has one unit per item, the study's alpha pools every question's units (as
``connote agreement``'s ``all`` row pools criteria). Answers are coded in the question's label order, so an
ordinal question's scale is that order.

The interval resamples **items** with replacement (all of an item's units together, so the study's
interval keeps each item's questions side by side), recomputes alpha on each resample, and takes the
percentiles: seeded, the same seed gives the same interval. A resample whose alpha is undefined (every
answer the same) is left out and counted. Alpha is undefined (``None``, with the reason) when fewer than
two answers are pairable or only one value occurs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from connote.collect.quality import Judge, Question
from connote.core.registry import require

#: item -> rater -> label, for one question
Units = Mapping[str, Mapping[str, str]]


def judgement_table(by_item: Mapping[str, Mapping[str, Any]], asked: Sequence[Question],
                    judgements: Judge) -> dict[str, dict[str, dict[str, str]]]:
    """question -> item -> rater -> label, from each kept annotator's complete answer (items in study order)."""
    table: dict[str, dict[str, dict[str, str]]] = {q.name: {} for q in asked}
    for iid, by in by_item.items():
        for rater, answer in sorted(by.items()):
            for question, label in judgements(answer).items():
                if question in table:
                    table[question].setdefault(iid, {})[rater] = label
    return table


def value_domain(question: Question, units: Units) -> list[str]:
    """The values of a question in scale order: its labels, or (labels not fixed) the answers given, sorted."""
    if question.labels is not None:
        return list(question.labels)
    return sorted({label for by in units.values() for label in by.values()}, key=lambda v: (len(v), v))


def _counts(units: Units, domain: list[str]) -> tuple[list[str], Any]:
    """The items that have units and their value-count rows (items x values)."""
    import numpy as np

    code = {v: k for k, v in enumerate(domain)}
    items = [iid for iid, by in units.items() if by]
    counts = np.zeros((len(items), len(domain)), dtype=float)
    for row, iid in enumerate(items):
        for label in units[iid].values():
            if label in code:
                counts[row, code[label]] += 1
    return items, counts


def krippendorff_alpha(counts: Any, level: str) -> float:
    """Alpha of a units x values count matrix (``krippendorff.alpha(value_counts=...)``); NaN when undefined."""
    import numpy as np

    krippendorff = require("krippendorff", "collect")
    pairable = counts[counts.sum(axis=1) >= 2]
    if pairable.sum() < 2 or np.count_nonzero(pairable.sum(axis=0)) < 2:
        return float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(krippendorff.alpha(value_counts=pairable, value_domain=list(range(counts.shape[1])),
                                        level_of_measurement=level))


def _undefined(counts: Any) -> str:
    pairable = counts[counts.sum(axis=1) >= 2]
    if pairable.sum() < 2:
        return "fewer than two annotators answered any item"
    return "every answer is the same value (no disagreement is possible to measure)"


def alpha_block(groups: Sequence[Any], level: str, *, n_boot: int = 1000, seed: int = 0,
                confidence: float = 0.95) -> dict[str, Any]:
    """Alpha of the units in ``groups`` (one count matrix per item: its units' rows) with the percentile
    interval of ``n_boot`` item resamples."""
    import numpy as np

    if not groups:
        return {"alpha": None, "low": None, "high": None, "items": 0, "pairable_values": 0, "level": level,
                "why_undefined": "no item has answers"}
    counts = np.vstack(groups)
    value = krippendorff_alpha(counts, level)
    block: dict[str, Any] = {"alpha": None if np.isnan(value) else round(value, 6), "low": None, "high": None,
                             "level": level, "items": len(groups),
                             "pairable_values": int(counts[counts.sum(axis=1) >= 2].sum()),
                             "n_boot": n_boot, "confidence": confidence, "seed": seed}
    if np.isnan(value):
        block["why_undefined"] = _undefined(counts)
        return block
    rng = np.random.default_rng(seed)
    single = all(len(g) == 1 for g in groups)  # one unit per item: a resample is a row index

    def resample() -> Any:
        picked = rng.integers(0, len(groups), len(groups))
        return counts[picked] if single else np.vstack([groups[k] for k in picked])

    boots = np.array([krippendorff_alpha(resample(), level) for _ in range(n_boot)])
    defined = boots[~np.isnan(boots)]
    if defined.size:
        tail = (1 - confidence) / 2 * 100
        block["low"], block["high"] = (round(float(x), 6) for x in np.percentile(defined, [tail, 100 - tail]))
    block["undefined_resamples"] = int(boots.size - defined.size)
    return block


def study_alpha(table: Mapping[str, Units], asked: Sequence[Question], *, n_boot: int = 1000, seed: int = 0,
                confidence: float = 0.95) -> dict[str, Any]:
    """Alpha per question and for the whole study (every question's units pooled; nominal unless every question
    has the same level), each with its bootstrap interval over items."""
    boot = {"n_boot": n_boot, "seed": seed, "confidence": confidence}
    per_item: dict[str, list[tuple[list[str], Any]]] = {}
    out: dict[str, Any] = {"questions": {}}
    pooled_domain: list[str] = []
    for q in asked:
        units = table.get(q.name, {})
        domain = value_domain(q, units)
        pooled_domain += [v for v in domain if v not in pooled_domain]
        items, counts = _counts(units, domain)
        out["questions"][q.name] = {**alpha_block([row[None, :] for row in counts], q.level, **boot),
                                    "values": domain}
        for iid, row in zip(items, counts):
            per_item.setdefault(iid, []).append((domain, row))
    if len(asked) > 1:
        levels = {q.level for q in asked}
        level = levels.pop() if len(levels) == 1 else "nominal"
        groups = [_on_scale(units, pooled_domain) for units in per_item.values()]
        out["study"] = {**alpha_block(groups, level, **boot), "values": pooled_domain,
                        "pooled": [q.name for q in asked]}
    elif asked:
        out["study"] = {**out["questions"][asked[0].name], "pooled": [asked[0].name]}
    return out


def _on_scale(units: list[tuple[list[str], Any]], domain: list[str]) -> Any:
    """One item's units (each question's value counts) as rows on the pooled value scale (labels compared as
    strings, as ``connote agreement``'s ``all`` row compares them)."""
    import numpy as np

    code = {v: k for k, v in enumerate(domain)}
    rows = np.zeros((len(units), len(domain)))
    for r, (values, counts) in enumerate(units):
        for value, n in zip(values, counts):
            rows[r, code[value]] += n
    return rows
