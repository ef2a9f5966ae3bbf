"""CV-Probes evaluation: image-text matching accuracy per SG/PG cell, harmonic mean, correlations.

The protocol of the CV-Probes paper (Tables 3-5): a pair counts as "match" when
p(1|I,T) > p(0|I,T), i.e. p_match > 0.5; accuracy is reported in four cells
(image kind x caption kind), summarised by their harmonic mean; Pearson's r between p_match and
the share of human "match" votes is reported per cell.

Rows stream into the run store as each chunk finishes. A row is reused only when the run's
fingerprint (task version, model, captions setting) and the pair's content (caption, kinds, label,
votes, the image file's bytes) are unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from connote.cv_probes.manifest import read_probe_manifest
from connote.cv_probes.records import CELLS, ProbeItem
from connote.media.images import image_identity, load_distinct, load_image, takes_encoded_images
from connote.metrics.options import opt
from connote.metrics.statistics import accuracy_interval  # noqa: F401 (the task's cells use it; kept importable here)
from connote.runs import write_json
from connote.runs.runner import WorkItem
from connote.runs.store import content_key, write_jsonl
from connote.tasks.api import Sample, Task

ITEM_FIELDS = ("item_id", "image_kind", "caption_kind", "label", "p_match", "predicted", "correct",
               "error", "human_score", "human_votes", "caption")


def probe_item_key(item: ProbeItem, captions: str) -> str:
    """The content key of one pair: everything about it that changes its row."""
    return content_key({"caption": item.text(captions), "image_kind": item.image_kind,
                        "caption_kind": item.caption_kind, "label": item.label, "votes": item.human_votes,
                        "image": image_identity(item.image)})


def _row(item: ProbeItem, captions: str, p: float | None, error: str | None) -> dict[str, Any]:
    predicted = None if p is None else int(p > 0.5)
    return {
        "item_id": item.item_id, "image_kind": item.image_kind, "caption_kind": item.caption_kind,
        "label": item.label, "p_match": p, "predicted": predicted,
        "correct": None if predicted is None else bool(predicted == item.label),
        "error": error, "human_score": item.human_score, "human_votes": item.human_votes,
        "caption": item.text(captions),
    }


#: Pairs per stored chunk when ``--chunk`` is not given: on a CPU 256 pairs take seconds, so a kill loses little;
#: a GPU scores 256 pairs in tens of milliseconds, so it takes chunks large enough to fill it between commits.
CHUNK_PAIRS = {"cpu": 256, "cuda": 4096}


def chunk_pairs(model: Any) -> int:
    """Pairs per chunk for ``model``: :data:`CHUNK_PAIRS` of its device (a model without one: the CPU's)."""
    device = str(getattr(model, "device", None) or "cpu") if model is not None else "cpu"
    return CHUNK_PAIRS["cuda" if device.startswith("cuda") else "cpu"]


def _chunks_by_image(items: Sequence[WorkItem], pairs_per_chunk: int) -> list[list[WorkItem]]:
    """Chunks of whole images (all captions of an image together), about ``pairs_per_chunk`` pairs."""
    by_image: dict[str, list[WorkItem]] = {}
    for it in items:
        by_image.setdefault(it.payload.image, []).append(it)
    chunks, cur = [], []
    for group in by_image.values():
        cur.extend(group)
        if len(cur) >= pairs_per_chunk:
            chunks.append(cur)
            cur = []
    if cur:
        chunks.append(cur)
    return chunks


def load_chunk_images(chunk: Sequence[ProbeItem], allow_network: bool,
                      model: Any) -> tuple[list[Any], dict[str, int], dict[str, str]]:
    """The distinct images of ``chunk``, each loaded once, in first-use order, on a few threads:
    ``(images, slot of each image path, error of each image that could not be loaded)``. For a model that decodes
    JPEGs itself (:func:`~connote.media.images.takes_encoded_images`) a JPEG it reads as Pillow would stays
    encoded (:func:`~connote.media.images.load_image`)."""
    keep_jpeg = takes_encoded_images(model)
    return load_distinct([it.image for it in chunk],
                         lambda ref: load_image(ref, allow_network=allow_network, keep_jpeg=keep_jpeg))


def score_chunk(model: Any, chunk: Sequence[ProbeItem], captions: str, allow_network: bool,
                loaded: tuple[list[Any], dict[str, int], dict[str, str]] | None = None) -> list[dict]:
    """Score one chunk. An image that cannot be loaded and a pair the model could not score become
    per-item errors; a failing model call raises (the runner then retries pair by pair). ``loaded`` is the
    chunk's images from :func:`load_chunk_images` (read ahead by the runner), else they are loaded here."""
    images, slots, image_errors = loaded if loaded is not None else load_chunk_images(chunk, allow_network, model)
    ok = [it for it in chunk if it.image in slots]
    probs: list[Any] = []
    if ok:
        probs = list(model.match_probability(images, [it.text(captions) for it in ok],
                                             [(slots[it.image], k) for k, it in enumerate(ok)]))
    by_id: dict[str, dict[str, Any]] = {}
    for it, p in zip(ok, probs):
        if isinstance(p, BaseException):  # backends report per-pair failures this way
            by_id[it.item_id] = _row(it, captions, None, f"model error: {type(p).__name__}: {p}")
        elif p is None or (isinstance(p, float) and not math.isfinite(p)):
            by_id[it.item_id] = _row(it, captions, None, f"model returned no probability ({p})")
        else:
            by_id[it.item_id] = _row(it, captions, float(p), None)
    for it in chunk:
        if it.image in image_errors:
            by_id[it.item_id] = _row(it, captions, None, image_errors[it.image])
    return [by_id[it.item_id] for it in chunk]


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


def human_majority_correct(votes: Sequence[int], label: int) -> bool:
    """The majority of the annotators' votes against the label; a tie counts as wrong."""
    yes = sum(1 for v in votes if v)
    no = len(votes) - yes
    if yes == no:
        return False
    return int(yes > no) == label


def human_row(rows: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Table 4's "Human" row: per cell, the accuracy of the majority vote against the label, and its HM.

    None when no pair has votes. Computed over every pair with votes (the model's errors do not remove a
    pair from the human row).
    """
    voted = [r for r in rows if r.get("human_votes")]
    if not voted:
        return None
    cells = {}
    for cell in CELLS:
        in_cell = [r for r in voted if f"{r['image_kind']}-{r['caption_kind']}" == cell]
        k = sum(human_majority_correct(r["human_votes"], r["label"]) for r in in_cell)
        cells[cell] = {"accuracy": k / len(in_cell) if in_cell else None, "n": len(in_cell),
                       "interval": accuracy_interval(k, len(in_cell))}
    return {"cells": cells, "harmonic_mean": harmonic_mean([c["accuracy"] for c in cells.values()]),
            "rule": "majority of votes; a tie counts as wrong"}


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ``cells`` block of results.json, the harmonic mean and (with votes) the Human row."""
    cells: dict[str, Any] = {}
    for cell in CELLS:
        in_cell = [r for r in rows if f"{r['image_kind']}-{r['caption_kind']}" == cell]
        scored = [r for r in in_cell if r["error"] is None]
        k = sum(bool(r["correct"]) for r in scored)
        acc = k / len(scored) if scored else None
        voted = [r for r in scored if r.get("human_score") is not None]
        r_, p_ = pearson([r["p_match"] for r in voted], [r["human_score"] for r in voted])
        cells[cell] = {"accuracy": acc, "n": len(scored), "errors": len(in_cell) - len(scored),
                       "interval": accuracy_interval(k, len(scored)),
                       "n_votes": len(voted), "pearson_r": r_, "pearson_p": p_}
    other = [r for r in rows if f"{r['image_kind']}-{r['caption_kind']}" not in CELLS]
    out = {"cells": cells, "harmonic_mean": harmonic_mean([c["accuracy"] for c in cells.values()]),
           "n_items": len(rows), "n_scored": sum(c["n"] for c in cells.values()),
           "n_errors": sum(c["errors"] for c in cells.values()) + len(other),
           "errors_outside_cells": len(other), "interval_method": "wilson 95%"}
    human = human_row(rows)
    if human is not None:
        out["human"] = human
    return out


def format_pct(v: float | None) -> str:
    """An accuracy fraction as a percentage with two decimals; — for no value."""
    return "—" if v is None else f"{100 * v:.2f}"


def format_interval(interval: Sequence[float] | None) -> str:
    """A [low, high] accuracy interval in %."""
    return "—" if not interval else f"{100 * interval[0]:.1f}–{100 * interval[1]:.1f}"


def format_r(cell: dict[str, Any]) -> str:
    """A cell's Pearson r with * where p < 0.05; — without votes."""
    r, p = cell.get("pearson_r"), cell.get("pearson_p")
    if r is None:
        return "—"
    return f"{r:.3f}" + ("*" if p is not None and p < 0.05 else "")


def markdown_table(results: dict[str, Any], title: str | None = None) -> str:
    """The paper's Table 3/4 (accuracy %) and Table 5 (Pearson r) for one run."""
    cells = results["cells"]
    lines = []
    if title:
        lines += [f"### {title}", ""]
    # one header row (image kind / caption kind per column), so GitHub and markdown-it render a table
    lines += ["| Image / caption kind | SG / SG | SG / PG | PG / SG | PG / PG | Harmonic mean |",
              "|---|---:|---:|---:|---:|---:|"]
    hm = results.get("harmonic_mean")
    accuracies = " | ".join(format_pct(cells[c]["accuracy"]) for c in CELLS)
    lines.append(f"| Accuracy (%) | {accuracies} | {format_pct(hm)} |")
    lines.append("| 95% CI (Wilson) | " + " | ".join(format_interval(cells[c].get("interval"))
                                                         for c in CELLS) + " | |")
    human = results.get("human")
    if human:
        lines.append("| Human, majority of votes (%) | " + " | ".join(
            format_pct(human["cells"][c]["accuracy"]) for c in CELLS) + f" | {format_pct(human['harmonic_mean'])} |")
    lines.append("| Items (n) | " + " | ".join(str(cells[c]["n"]) for c in CELLS) + " | |")
    if any(cells[c]["errors"] for c in CELLS):
        lines.append("| Errored (excluded) | " + " | ".join(str(cells[c]["errors"]) for c in CELLS) + " | |")
    lines.append("| Pearson r vs human votes | " + " | ".join(format_r(cells[c]) for c in CELLS) + " | |")
    # the reason a Pearson r is missing: none of the data has votes, or (with votes) its cell has too few or
    # they do not vary (:func:`pearson`); the HTML report's note says the same
    no_r = ("no human votes in the data" if not any(cells[c].get("n_votes") for c in CELLS) else
            "fewer than 3 pairs with human votes in the cell, or their vote shares or p(match) all equal")
    note = f"Accuracy excludes errored items; * p < 0.05; — no value (accuracy: no scored pairs; Pearson r: {no_r})."
    if human:  # explain the Human row only where there is one
        note += " Human: the majority of the annotators' votes against the label (a tie counts as wrong)."
    lines += ["", note]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ProbeOptions:
    """The options of ``cv-probes`` (``connote cv-probes run``'s flags; ``connote run cv-probes --set``)."""

    captions: Literal["original", "simplified"] = opt("original", "original | simplified (Table 4)")
    pairs_per_chunk: int | None = opt(None, "pairs per stored batch (default: 256 on a CPU, 4096 on a GPU)", ge=1,
                                      flag="--chunk")
    allow_network: bool = opt(False, "fetch http(s) images")


def write_sample(folder: Path) -> Sample:
    """The sample probe set built from the packaged photos (a run without ``--data``)."""
    from connote.media.sample import write_sample_probes

    return Sample(write_sample_probes(folder), "sample probe set")


class ProbeTask(Task):
    """CV-Probes: p(match) per image-caption pair, accuracy per SG/PG cell, harmonic mean, Pearson r."""

    name = "cv-probes"
    #: Bumped whenever the protocol, prompt or aggregation changes a number.
    #: 2: rows carry the human votes (the Human row of Table 4).
    version = 2
    capability = "match"
    reads = "a probe manifest (CSV/JSONL: item_id, image, image_kind, caption, caption_simplified, caption_kind, " \
            "verb, human_votes, label)"
    title = "Contextual verb probes: image-text matching accuracy per SG/PG cell (Tables 3-5)."
    label = "pairs"
    report_kind = "cv-probes"  # connote.cv_probes.report: Tables 3-5
    invariance_field = "p_match"
    options = ProbeOptions
    default_model = "objects"
    outputs = ("results.json", "items.jsonl", "results.md")
    sample_data = staticmethod(write_sample)

    def __init__(self, data: str | Path, *, captions: str = "original", pairs_per_chunk: int | None = None,
                 allow_network: bool = False, progress: bool = True) -> None:
        self.data = Path(data)
        self.captions, self.allow_network = captions, allow_network
        #: pairs per stored chunk; None: :func:`chunk_pairs` of the model's device once the model is bound
        self.pairs_per_chunk = int(pairs_per_chunk) if pairs_per_chunk else None
        self._model: Any = None
        self.progress = progress
        self.items = read_probe_manifest(data, captions=captions)  # exit 2 on a bad manifest, before any model

    def settings(self) -> dict[str, Any]:
        return {"captions": self.captions}

    def config(self) -> dict[str, Any]:
        return {"data": str(self.data), "captions": self.captions, "pairs_per_chunk": self.pairs_per_chunk or "auto",
                "allow_network": self.allow_network}

    def bind(self, model: Any) -> None:
        super().bind(model)
        self._model = model

    def work_items(self) -> list[WorkItem]:
        return [WorkItem(it.item_id, probe_item_key(it, self.captions), it, it.error) for it in self.items]

    def batches(self, todo: list[WorkItem]) -> list[list[WorkItem]]:
        if not todo:
            return []
        return _chunks_by_image(todo, self.pairs_per_chunk or chunk_pairs(self._model))

    def prepare(self, batch: list[WorkItem]) -> Any:
        """The chunk's images read and decoded (JPEGs left encoded for a model that decodes them on its device)
        on a few threads, while the model scores the chunk before."""
        return load_chunk_images([w.payload for w in batch], self.allow_network, self._model)

    def compute(self, model: Any, batch: list[WorkItem], ready: Any = None) -> list[dict[str, Any]]:
        return score_chunk(model, [w.payload for w in batch], self.captions, self.allow_network, loaded=ready)

    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        return _row(item.payload, self.captions, None, message)

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return summarize(rows)

    def render(self, results: dict[str, Any]) -> str:
        return markdown_table(results, title=f"{results.get('model')} ({self.captions} captions)")

    def extra_results(self, spec: Any) -> dict[str, Any]:
        """What results.json records beside the numbers: the model spec, the captions, the manifest's path."""
        return {"model": str(spec), "captions": self.captions, "data": str(self.data.resolve())}

    def write_outputs(self, out: Path, rows: list[dict[str, Any]], results: dict[str, Any]) -> None:
        write_json(out / "results.json", results)
        write_jsonl(out / "items.jsonl", ({k: r.get(k) for k in ITEM_FIELDS} for r in rows))


def run_probe(data: str | Path, model: str | None = None, out: str | Path = "runs/probe", *,
              captions: str = "original", pairs_per_chunk: int | None = None, allow_network: bool = False,
              progress: bool = True, seed: int = 0, model_obj: Any = None) -> dict[str, Any]:
    """Evaluate a matcher on a probe manifest; returns the results.json content (empty off rank 0).

    The manifest is parsed (and rejected with file/line/column) before any model loads.
    ``model`` is a spec like ``hf-blip-itm:Salesforce/blip-itm-base-coco``; None means the
    embedded ``objects`` baseline. ``model_obj`` lets library users pass a built ``Matcher``.
    (A compatibility name for library callers: the command is :func:`connote.tasks.api.run_task` with a
    :class:`ProbeTask` and :meth:`ProbeTask.extra_results`.)
    """
    from connote.tasks.api import run_task

    task = ProbeTask(data, captions=captions, pairs_per_chunk=pairs_per_chunk, allow_network=allow_network,
                     progress=progress)
    spec = model or (str(model_obj.describe().get("backend", type(model_obj).__name__)) if model_obj is not None
                     else "objects")
    return run_task(task, model_obj if model_obj is not None else spec, out, seed=seed,
                    extra_results=task.extra_results(spec)).results
