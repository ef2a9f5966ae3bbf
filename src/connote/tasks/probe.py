"""CV-Probes evaluation: image-text matching accuracy per SG/PG cell, harmonic mean, correlations.

The protocol of the CV-Probes paper (Tables 3-5): a pair counts as "match" when
p(1|I,T) > p(0|I,T), i.e. p_match > 0.5; accuracy is reported in four cells
(image kind x caption kind), summarised by their harmonic mean; Pearson's r between p_match and
the share of human "match" votes is reported per cell.

Results stream into the run store as each batch finishes, keyed by the model fingerprint, so
re-running resumes and a different model never reuses another's rows.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from connote.data.images import load_image
from connote.data.probes import read_probe_manifest
from connote.errors import ItemError
from connote.models.registry import load_model, parse_spec
from connote.progress import progress_bar
from connote.records import CELLS, ProbeItem
from connote.report.probe import format_pct, format_r
from connote.runs import RunStore, run_metadata, write_json
from connote.tasks.distributed import init_distributed

TASK_NAME = "cv-probes"
#: Bumped whenever the protocol, prompt or aggregation changes a number.
TASK_VERSION = 1
ITEM_FIELDS = ("item_id", "image_kind", "caption_kind", "label", "p_match", "predicted", "correct",
               "error", "human_score", "caption")


def _row(item: ProbeItem, captions: str, p: float | None, error: str | None) -> dict[str, Any]:
    predicted = None if p is None else int(p > 0.5)
    return {
        "item_id": item.item_id, "image_kind": item.image_kind, "caption_kind": item.caption_kind,
        "label": item.label, "p_match": p, "predicted": predicted,
        "correct": None if predicted is None else bool(predicted == item.label),
        "error": error, "human_score": item.human_score, "caption": item.text(captions),
    }


def _chunks_by_image(items: Sequence[ProbeItem], pairs_per_chunk: int) -> list[list[ProbeItem]]:
    """Chunks of whole images (all captions of an image together), about ``pairs_per_chunk`` pairs."""
    by_image: dict[str, list[ProbeItem]] = {}
    for it in items:
        by_image.setdefault(it.image, []).append(it)
    chunks, cur = [], []
    for group in by_image.values():
        cur.extend(group)
        if len(cur) >= pairs_per_chunk:
            chunks.append(cur)
            cur = []
    if cur:
        chunks.append(cur)
    return chunks


def score_chunk(model: Any, chunk: Sequence[ProbeItem], captions: str, allow_network: bool) -> list[dict]:
    """Score one chunk; image and model failures become per-item errors, never exceptions."""
    images: list[Any] = []
    slots: dict[str, int] = {}  # image path -> index in ``images``
    image_errors: dict[str, str] = {}
    for it in chunk:
        if it.image in slots or it.image in image_errors:
            continue
        try:
            images.append(load_image(it.image, allow_network=allow_network))
            slots[it.image] = len(images) - 1
        except ItemError as exc:
            image_errors[it.image] = str(exc)
    ok = [it for it in chunk if it.image in slots]
    texts = [it.text(captions) for it in ok]
    out = [_row(it, captions, None, image_errors[it.image]) for it in chunk if it.image in image_errors]
    if ok:
        try:
            probs = model.match_probability(images, texts, [(slots[it.image], k) for k, it in enumerate(ok)])
        except Exception as exc:  # one failing batch must not end the run
            out.extend(_row(it, captions, None, f"model error: {type(exc).__name__}: {exc}") for it in ok)
        else:
            for it, p in zip(ok, probs):
                if isinstance(p, BaseException):  # backends report per-pair failures this way
                    out.append(_row(it, captions, None, f"model error: {type(p).__name__}: {p}"))
                elif p is None or (isinstance(p, float) and math.isnan(p)):
                    out.append(_row(it, captions, None, "model returned no probability"))
                else:
                    out.append(_row(it, captions, float(p), None))
    return out


def harmonic_mean(values: Sequence[float | None]) -> float | None:
    """Harmonic mean of the cell accuracies; None if any cell has no scored item, 0 if any is 0."""
    if not values or any(v is None for v in values):
        return None
    if any(v == 0 for v in values):
        return 0.0
    return len(values) / sum(1.0 / v for v in values)  # type: ignore[operator]


def pearson(xs: Sequence[float], ys: Sequence[float]) -> tuple[float | None, float | None]:
    """Pearson r and two-sided p (scipy); None when fewer than 3 pairs or a constant side."""
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None, None
    from scipy.stats import pearsonr

    res = pearsonr(xs, ys)
    return float(res.statistic), float(res.pvalue)


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ``cells`` block of results.json and the harmonic mean."""
    cells: dict[str, Any] = {}
    for cell in CELLS:
        in_cell = [r for r in rows if f"{r['image_kind']}-{r['caption_kind']}" == cell]
        scored = [r for r in in_cell if r["error"] is None]
        acc = sum(bool(r["correct"]) for r in scored) / len(scored) if scored else None
        voted = [r for r in scored if r.get("human_score") is not None]
        r_, p_ = pearson([r["p_match"] for r in voted], [r["human_score"] for r in voted])
        cells[cell] = {"accuracy": acc, "n": len(scored), "errors": len(in_cell) - len(scored),
                       "n_votes": len(voted), "pearson_r": r_, "pearson_p": p_}
    other = [r for r in rows if f"{r['image_kind']}-{r['caption_kind']}" not in CELLS]
    return {"cells": cells, "harmonic_mean": harmonic_mean([c["accuracy"] for c in cells.values()]),
            "n_items": len(rows), "n_scored": sum(c["n"] for c in cells.values()),
            "n_errors": sum(c["errors"] for c in cells.values()) + len(other),
            "errors_outside_cells": len(other)}


def markdown_table(results: dict[str, Any], title: str | None = None) -> str:
    """The paper's Table 3/4 (accuracy %) and Table 5 (Pearson r) for one run."""
    cells = results["cells"]
    lines = []
    if title:
        lines += [f"### {title}", ""]
    lines += ["| Images | SG | SG | PG | PG | |", "| Captions | SG | PG | SG | PG | Harmonic mean |",
              "|---|---:|---:|---:|---:|---:|"]
    hm = results.get("harmonic_mean")
    accuracies = " | ".join(format_pct(cells[c]["accuracy"]) for c in CELLS)
    lines.append(f"| Accuracy (%) | {accuracies} | {format_pct(hm)} |")
    lines.append("| Items (n) | " + " | ".join(str(cells[c]["n"]) for c in CELLS) + " | |")
    if any(cells[c]["errors"] for c in CELLS):
        lines.append("| Errored (excluded) | " + " | ".join(str(cells[c]["errors"]) for c in CELLS) + " | |")
    lines.append("| Pearson r vs human votes | " + " | ".join(format_r(cells[c]) for c in CELLS) + " | |")
    lines += ["", "Accuracy excludes errored items; * p < 0.05; — no value (no items or no human votes)."]
    return "\n".join(lines) + "\n"


def run_probe(data: str | Path, model: str | None = None, out: str | Path = "runs/probe", *,
              captions: str = "original", pairs_per_chunk: int = 256, allow_network: bool = False,
              progress: bool = True, seed: int = 0, model_obj: Any = None) -> dict[str, Any]:
    """Evaluate a matcher on a probe manifest; returns the results.json content.

    The manifest is parsed (and rejected with file/line/column) before any model loads.
    ``model`` is a spec like ``hf-blip-itm:Salesforce/blip-itm-base-coco``; None means the
    embedded ``objects`` baseline. ``model_obj`` lets library users pass a built ``Matcher``.
    """
    items = read_probe_manifest(data, captions=captions)
    spec = model or "objects"
    dist = init_distributed()
    out = Path(out)
    if dist.is_main:
        out.mkdir(parents=True, exist_ok=True)
    dist.barrier()
    try:
        import torch

        torch.manual_seed(seed)
    except ImportError:  # pragma: no cover - objects baseline still needs torch
        pass
    matcher = model_obj if model_obj is not None else load_model(parse_spec(spec))
    description = {"task": TASK_NAME, "task_version": TASK_VERSION, "captions": captions,
                   "model": matcher.describe()}
    store = RunStore(out)
    fp = store.register(description)
    done = store.done_ids(fp)
    dist.barrier()  # every rank must shard the same to-do list, before any rank writes
    bad = [it for it in items if it.error]
    todo = [it for it in items if not it.error and it.item_id not in done]
    if dist.is_main and bad:
        store.put(fp, [_row(it, captions, None, it.error) for it in bad])
    chunks = dist.shard(_chunks_by_image(todo, pairs_per_chunk))
    started = time.time()
    with progress_bar(sum(len(c) for c in chunks), f"scoring {len(todo)} pairs [{spec}]",
                      enabled=progress and dist.is_main) as bar:
        for chunk in chunks:
            store.put(fp, score_chunk(matcher, chunk, captions, allow_network))
            bar.advance(len(chunk))
    elapsed = time.time() - started
    dist.barrier()
    results: dict[str, Any] = {}
    if dist.is_main:
        rows_by_id = store.rows(fp)
        rows = [rows_by_id[it.item_id] for it in items if it.item_id in rows_by_id]
        results = summarize(rows)
        results.update({
            "task": TASK_NAME, "task_version": TASK_VERSION, "model": spec, "captions": captions,
            "fingerprint": fp, "model_fingerprint": description["model"],
            "data": str(Path(data).resolve()), "world_size": dist.world,
            "seconds_this_run": round(elapsed, 3), "pairs_this_run": len(todo),
            **run_metadata({"data": str(data), "model": spec, "captions": captions,
                            "pairs_per_chunk": pairs_per_chunk, "allow_network": allow_network},
                           seed=seed),
        })
        write_json(out / "results.json", results)
        with open(out / "items.jsonl.tmp", "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps({k: r.get(k) for k in ITEM_FIELDS}) + "\n")
        (out / "items.jsonl.tmp").replace(out / "items.jsonl")
        (out / "results.md").write_text(markdown_table(results, title=f"{spec} ({captions} captions)"),
                                        encoding="utf-8")
    store.close()
    dist.barrier()
    dist.close()
    return results
