"""``connote explain``: MM-SHAP attributions for probe pairs (the paper's Table 6).

For each explained pair: Shapley values over caption tokens and image patches from the chosen
estimator under a per-pair cap on model calls, T-SHAP / V-SHAP, the verb's attribution and share.
Rows stream into the run store keyed by model + explanation settings, so explaining resumes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from connote.data.images import load_image
from connote.data.probes import read_probe_manifest
from connote.errors import ItemError
from connote.explain import mmshap
from connote.explain.shapley import DEFAULT_ESTIMATOR
from connote.models.masking import game_builder, masking_game
from connote.models.registry import load_model, parse_spec
from connote.progress import progress_bar
from connote.runs import RunStore, run_metadata, write_json

TASK_NAME = "cv-probes-mmshap"
TASK_VERSION = 1


def explain_item(matcher: Any, item: Any, *, captions: str, estimator: str, budget: int | None,
                 seed: int, grid: int | None, allow_network: bool, nlp: Any) -> dict[str, Any]:
    extra = {"image_kind": item.image_kind, "caption_kind": item.caption_kind, "cell": item.cell,
             "label": item.label, "image": item.image}
    base = {"item_id": item.item_id, "caption": item.text(captions), **extra}
    if item.error:
        return {**base, "error": item.error, "calls": 0}
    try:
        image = load_image(item.image, allow_network=allow_network)
        game = masking_game(matcher, image, item.text(captions), grid=grid)
    except (ItemError, ValueError) as exc:
        return {**base, "error": str(exc), "calls": 0}
    try:
        row = mmshap.explain_pair(game.value_fn, game.n_text, game.n_patches, estimator=estimator,
                                  budget=budget, seed=seed, item_id=item.item_id, caption=item.text(captions),
                                  text_tokens=game.tokens, spans=game.spans, verb=None, nlp=nlp, extra=extra)
    except Exception as exc:  # a failing pair is recorded, the run goes on
        return {**base, "error": f"{type(exc).__name__}: {exc}", "calls": game.calls[0]}
    row["model_calls"] = game.calls[0]
    return row


def run_explain(data: str | Path, model: str, out: str | Path, *, captions: str = "simplified",
                estimator: str = DEFAULT_ESTIMATOR, budget: int | None = None, sample: int | None = None,
                seed: int = 0, grid: int | None = None, allow_network: bool = False, progress: bool = True,
                figures: int = 0, model_obj: Any = None) -> dict[str, Any]:
    """Explain (a seeded sample of) the pairs of a manifest; returns results.json content."""
    items = read_probe_manifest(data, captions=captions)
    if sample is not None and sample < len(items):
        items = sorted(random.Random(seed).sample(items, sample), key=lambda it: it.item_id)
    matcher = model_obj if model_obj is not None else load_model(parse_spec(model))
    game_builder(matcher)  # refuse a backend whose inputs cannot be masked before any work
    out = Path(out)
    store = RunStore(out)
    settings = {"task": TASK_NAME, "task_version": TASK_VERSION, "captions": captions, "estimator": estimator,
                "budget": budget, "seed": seed, "grid": grid, "model": matcher.describe()}
    fp = store.register(settings)
    done = store.done_ids(fp)
    todo = [it for it in items if it.item_id not in done]
    nlp = mmshap.load_tagger()
    with progress_bar(len(todo), f"explaining {len(todo)} pairs [{model}]", enabled=progress) as bar:
        for item in todo:
            store.put(fp, [explain_item(matcher, item, captions=captions, estimator=estimator, budget=budget,
                                        seed=seed, grid=grid, allow_network=allow_network, nlp=nlp)])
            bar.advance()
    stored = store.rows(fp)
    rows = [stored[it.item_id] for it in items if it.item_id in stored]
    store.close()
    with open(out / "explanations.jsonl.tmp", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    (out / "explanations.jsonl.tmp").replace(out / "explanations.jsonl")
    results = {**mmshap.aggregate([r for r in rows if r.get("error") is None]),
               "task": TASK_NAME, "task_version": TASK_VERSION, "model": model, "fingerprint": fp,
               "model_fingerprint": settings["model"], "estimator": estimator, "budget": budget,
               "n_pairs": len(rows), "n_errors": sum(r.get("error") is not None for r in rows),
               "n_no_verb": sum(mmshap.NO_VERB in (r.get("flags") or []) for r in rows),
               "calls_total": sum(int(r.get("calls") or 0) for r in rows),
               **run_metadata({"data": str(data), "model": model, "captions": captions, "estimator": estimator,
                               "budget": budget, "sample": sample, "grid": grid}, seed=seed)}
    write_json(out / "results.json", results)
    (out / "results.md").write_text(mmshap.format_table(results), encoding="utf-8")
    _figures(rows, out, figures, allow_network, results)
    return results


def _figures(rows: list[dict[str, Any]], out: Path, n: int, allow_network: bool, results: dict[str, Any]) -> None:
    from connote.explain import plots

    fig_dir = out / "figures"
    fig_dir.mkdir(exist_ok=True)
    plots.plot_cell_summary(results, fig_dir / "cells.png")
    for row in [r for r in rows if r.get("error") is None][:n]:
        try:
            image = load_image(row["image"], allow_network=allow_network)
        except ItemError:
            continue
        plots.plot_pair(row, image, fig_dir / f"{row['item_id']}.png")
