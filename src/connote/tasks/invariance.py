"""Batch invariance, measured: do a run's outputs change when its items are computed one per model call?

Batching greedy generation (or scoring) pads rows to a common length and hands the accelerator larger
matrices, whose kernels may sum in another order; in bf16 that can flip a near-tie between two tokens, and
the rest of the text follows. Both big evaluation harnesses tell users to stay at batch 1 for that reason
(lmms-eval#236: a score fell from 69.56 to 58.70 at batch 2). connote batches by default, so it measures
what batching did instead of assuming it did nothing: ``--check-invariance N`` reruns the first ``N`` items
that computed without error, each alone in its own model call, and compares each output with the run's.

The batch-1 rows go through the one runner into the same run store, under the run's description plus
``"batch": "one item per model call"``: a killed check loses at most the item in flight, and a rerun of
the command reuses them when nothing that made them changed. What is compared is the task's
:attr:`~connote.tasks.api.Task.invariance_field` of each row: a text (a story, a caption: changed or not) or
numbers (p(match), a suite's scores: changed or not, and the largest absolute difference).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from connote.runs.runner import WorkItem, run_items

#: What enters the batch-1 rows' fingerprint beside the run's own description.
BATCH_ONE = {"batch": "one item per model call"}
#: Changed items named in the results (the first ones, in item order).
SHOWN = 10


def _numbers(value: Any) -> list[float] | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                          for v in value):
        return [float(v) for v in value]
    return None


def compare_outputs(ids: Sequence[str], batched: Sequence[Any], alone: Sequence[Any]) -> dict[str, Any]:
    """How many outputs differ between the batched run and batch 1, and by how much where they are numbers.

    ``batched`` and ``alone`` are the compared field of each item, aligned with ``ids`` (None where the
    batch-1 call failed: such items are counted apart, not as changed).
    """
    changed: list[str] = []
    delta: float | None = None
    compared = 0
    for item, a, b in zip(ids, batched, alone, strict=True):
        if b is None:
            continue
        compared += 1
        xs, ys = _numbers(a), _numbers(b)
        if xs is not None and ys is not None and len(xs) == len(ys):
            d = max(abs(x - y) for x, y in zip(xs, ys))
            delta = d if delta is None else max(delta, d)
        if a != b:
            changed.append(item)
    out: dict[str, Any] = {"items": compared, "changed": len(changed),
                           "share_changed": len(changed) / compared if compared else None,
                           "changed_items": changed[:SHOWN], "failed_at_batch_1": len(ids) - compared}
    if delta is not None:
        out["max_abs_delta"] = delta
    return out


def check_batch_invariance(task: Any, model: Any, out: str | Path, description: dict[str, Any],
                           items: Sequence[WorkItem], rows: Sequence[dict[str, Any]], n: int,
                           compute: Callable[[list[WorkItem]], list[dict[str, Any]]]) -> dict[str, Any]:
    """Recompute the first ``n`` items of ``items`` not known to be bad, one per call, and compare
    :attr:`task.invariance_field` with their ``rows`` (items whose run row is an error are left out); returns
    the figures ``results.json`` records (the module docstring); empty off rank 0 of a launched run.

    ``description`` is the run's own (task, version, model, settings); ``compute`` is the task's compute
    with the model bound. Rows are stored in the run folder's store, so they are reused on a rerun.
    """
    field = task.invariance_field
    # the first n items not known to be bad: the same on every rank of a launched run (only rank 0 has rows)
    picked = [it for it in items if it.error is None][:n]
    if hasattr(model, "settle"):  # a lazy model builds now unless every batch-1 row is stored
        model.settle(out, lambda m: {**task.description(m), **BATCH_ONE}, picked)
        description = task.description(model)
    outcome = run_items(out, {**description, **BATCH_ONE}, picked, compute, on_error=task.error_row,
                        batches=lambda todo: [[it] for it in todo], progress=task.progress,
                        label=f"{task.label} at batch 1 (invariance check)")
    if not outcome.is_main:
        return {}
    by_id = {row["item_id"]: row for row in rows}
    pairs = [(by_id.get(it.item_id) or {}, row) for it, row in zip(picked, outcome.rows)]
    pairs = [(a, b) for a, b in pairs if a.get("error") is None]  # an item the run itself failed is no evidence
    figures = compare_outputs([b["item_id"] for _, b in pairs], [a.get(field) for a, _ in pairs],
                              [None if b.get("error") is not None else b.get(field) for _, b in pairs])
    figures.update({"asked": n, "field": field, "reference": BATCH_ONE["batch"]})
    return figures


def invariance_line(figures: dict[str, Any]) -> str:
    """One line for a terminal, a results table or a report note: ``batch invariance: k of N stories changed ...``
    for texts, ``batch invariance: max |Δ p_match| ... over N items`` for numbers."""
    if not figures:
        return ""
    n, k, field = figures.get("items", 0), figures.get("changed", 0), figures.get("field", "output")
    if figures.get("max_abs_delta") is not None:
        text = (f"batch invariance: max |Δ {field}| {figures['max_abs_delta']:.3g} over {n} items computed one per "
                f"call ({k} differ at all)")
    else:
        text = f"batch invariance: {k} of {n} items' {field} changed when computed one per call"
        if figures.get("share_changed") is not None:
            text += f" ({figures['share_changed']:.1%})"
    if figures.get("failed_at_batch_1"):
        text += f"; {figures['failed_at_batch_1']} failed at batch 1"
    return text


def invariance_brief(figures: Any) -> str:
    """The figure in a few words, for the run listing's signature cell: ``batch 1: 0 of 3 changed`` (and
    ``, max |Δ p_match| 3e-07`` for numbers); empty when the run did not check."""
    if not isinstance(figures, dict) or not figures:
        return ""
    text = f"batch 1: {figures.get('changed', 0)} of {figures.get('items', 0)} changed"
    if figures.get("max_abs_delta") is not None:
        text += f", max |Δ {figures.get('field', 'output')}| {figures['max_abs_delta']:.3g}"
    return text
