"""``connote explain``: MM-SHAP attributions for probe pairs (the paper's Table 6).

For each explained pair: Shapley values over caption tokens and image patches from the chosen
estimator under a per-pair cap on model calls, T-SHAP / V-SHAP, the verb's attribution and share.
The verb is the manifest's ``verb`` column (every word-piece of the caption word that is a form of it);
the spaCy tagger is asked only where the column is empty. Rows stream into the run store keyed by
model + explanation settings, so explaining resumes.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

from connote.data.images import load_image
from connote.data.probes import read_probe_manifest
from connote.errors import InputError, ItemError
from connote.explain import mmshap
from connote.explain.shapley import DEFAULT_ESTIMATOR
from connote.models.masking import DEFAULT_COMPAT, check_compat, masking_game, require_masking
from connote.models.registry import load_model, parse_spec
from connote.progress import progress_bar
from connote.runs import RunStore, run_metadata, write_json

TASK_NAME = "cv-probes-mmshap"
#: 2: ``--compat mmshap`` (the public MM-SHAP code's features, grid and masked id) is the default, with
#: its 10-permutation estimator; the verb comes from the manifest's ``verb`` column.
TASK_VERSION = 2
#: Estimator used when none is given: the public code's setting under ``mmshap``, adaptive otherwise.
DEFAULT_ESTIMATORS = {"mmshap": "permutation", "connote": DEFAULT_ESTIMATOR}


def default_estimator(compat: str | None) -> str:
    """The estimator ``connote explain`` uses for a ``--compat`` mode when ``--estimator`` is not given."""
    return DEFAULT_ESTIMATORS[check_compat(compat)]


def explain_item(matcher: Any, item: Any, *, captions: str, estimator: str, budget: int | None,
                 seed: int, grid: int | None, allow_network: bool, nlp: Any,
                 compat: str = DEFAULT_COMPAT) -> dict[str, Any]:
    """One ``explanations.jsonl`` row for a manifest item (errors recorded in the row, never raised)."""
    extra = {"image_kind": item.image_kind, "caption_kind": item.caption_kind, "cell": item.cell,
             "label": item.label, "image": item.image}
    base = {"item_id": item.item_id, "caption": item.text(captions), **extra}
    if item.error:
        return {**base, "error": item.error, "calls": 0}
    try:
        image = load_image(item.image, allow_network=allow_network)
        game = masking_game(matcher, image, item.text(captions), grid=grid, compat=compat)
    except (ItemError, ValueError) as exc:
        return {**base, "error": str(exc), "calls": 0}
    try:
        row = mmshap.explain_pair(game.value_fn, game.n_text, game.n_patches, estimator=estimator,
                                  budget=budget, seed=seed, item_id=item.item_id, caption=item.text(captions),
                                  text_tokens=game.tokens, spans=game.spans, verb=item.verb, nlp=nlp, extra=extra)
    except Exception as exc:  # a failing pair is recorded, the run goes on
        return {**base, "error": f"{type(exc).__name__}: {exc}", "calls": game.calls[0]}
    row["model_calls"] = game.calls[0]
    row["compat"] = game.compat
    return row


def run_explain(data: str | Path, model: str, out: str | Path, *, captions: str = "simplified",
                estimator: str | None = None, budget: int | None = None, sample: int | None = None,
                seed: int = 0, grid: int | None = None, allow_network: bool = False, progress: bool = True,
                figures: int = 0, model_obj: Any = None, compat: str = DEFAULT_COMPAT) -> dict[str, Any]:
    """Explain (a seeded sample of) the pairs of a manifest; returns results.json content.

    ``compat``: ``mmshap`` (default; the public MM-SHAP code's features, grid and masked id) or
    ``connote``; ``estimator`` ``None`` means :func:`default_estimator` of ``compat``.
    """
    compat = check_compat(compat)
    estimator = estimator or default_estimator(compat)
    items = read_probe_manifest(data, captions=captions)
    if sample is not None and sample < len(items):
        items = sorted(random.Random(seed).sample(items, sample), key=lambda it: it.item_id)
    matcher = model_obj if model_obj is not None else load_model(parse_spec(model))
    require_masking(matcher)  # refuse a backend whose inputs cannot be masked before any work
    out = Path(out)
    store = RunStore(out)
    # verb_source: the data's verb column first, the tagger where it is empty (task version 2)
    settings = {"task": TASK_NAME, "task_version": TASK_VERSION, "captions": captions, "estimator": estimator,
                "budget": budget, "seed": seed, "grid": grid, "compat": compat, "verb_source": "data,tagger",
                "model": matcher.describe()}
    fp = store.register(settings)
    done = store.done_ids(fp)
    todo = [it for it in items if it.item_id not in done]
    nlp = mmshap.load_tagger()
    with progress_bar(len(todo), f"explaining {len(todo)} pairs [{model}]", enabled=progress) as bar:
        for item in todo:
            store.put(fp, [explain_item(matcher, item, captions=captions, estimator=estimator, budget=budget,
                                        seed=seed, grid=grid, allow_network=allow_network, nlp=nlp,
                                        compat=compat)])
            bar.advance()
    stored = store.rows(fp)
    rows = [stored[it.item_id] for it in items if it.item_id in stored]
    store.close()
    with open(out / "explanations.jsonl.tmp", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    (out / "explanations.jsonl.tmp").replace(out / "explanations.jsonl")
    flagged = [r for r in rows if mmshap.VERB_NOT_FOUND in (r.get("flags") or [])]
    results = {**mmshap.aggregate([r for r in rows if r.get("error") is None]),
               "task": TASK_NAME, "task_version": TASK_VERSION, "model": model, "fingerprint": fp,
               "model_fingerprint": settings["model"], "estimator": estimator, "budget": budget, "compat": compat,
               "n_pairs": len(rows), "n_errors": sum(r.get("error") is not None for r in rows),
               "n_no_verb": sum(mmshap.NO_VERB in (r.get("flags") or []) for r in rows),
               "n_verb_not_found": len(flagged), "verb_not_found": [r["item_id"] for r in flagged],
               "n_verb_from_data": sum(r.get("verb_source") == "data" for r in rows),
               "n_verb_from_tagger": sum(r.get("verb_source") == "tagger" for r in rows),
               "calls_total": sum(int(r.get("calls") or 0) for r in rows),
               **run_metadata({"data": str(data), "model": model, "captions": captions, "estimator": estimator,
                               "budget": budget, "sample": sample, "grid": grid, "compat": compat}, seed=seed)}
    write_json(out / "results.json", results)
    (out / "results.md").write_text(mmshap.format_table(results), encoding="utf-8")
    _figures(rows, out, figures, allow_network, results)
    return results


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def figure_name(item_id: Any, taken: set[str]) -> str:
    """A file name for an item's figure that cannot leave the figures folder.

    Characters outside ``[A-Za-z0-9._-]`` become ``_``, leading dots are dropped (no ``..``, no hidden
    files), the stem is capped at 80 characters, and a short hash of the id is appended whenever the
    name had to change or is already taken, so distinct ids never share a file.
    """
    raw = str(item_id)
    stem = _UNSAFE.sub("_", raw).lstrip(".")[:80] or "item"
    if stem != raw or stem.lower() in taken:
        stem = f"{stem}-{hashlib.sha256(raw.encode('utf-8')).hexdigest()[:10]}"
    name = f"{stem}.png"
    taken.add(stem.lower())
    return name


def _figures(rows: list[dict[str, Any]], out: Path, n: int, allow_network: bool, results: dict[str, Any]) -> None:
    """``figures/cells.png``, one figure per pair for the first ``n`` pairs, and ``figures/index.json``
    (item_id -> file name inside ``figures/``)."""
    from connote.explain import plots

    fig_dir = out / "figures"
    if fig_dir.is_symlink():
        raise InputError("the run folder's figures/ is a symbolic link; refusing to write through it", path=fig_dir)
    fig_dir.mkdir(exist_ok=True)
    plots.plot_cell_summary(results, fig_dir / "cells.png")
    taken = {"cells", "index"}
    index: dict[str, str] = {}
    root = fig_dir.resolve()
    for row in [r for r in rows if r.get("error") is None][:n]:
        try:
            image = load_image(row["image"], allow_network=allow_network)
        except ItemError:
            continue
        name = figure_name(row["item_id"], taken)
        target = fig_dir / name
        if target.resolve().parent != root:  # pragma: no cover - figure_name makes this impossible
            raise AssertionError(f"figure path {target} escapes {root}")
        plots.plot_pair(row, image, target)
        index[str(row["item_id"])] = name
    write_json(fig_dir / "index.json", index)
