"""``connote cv-probes explain``: MM-SHAP attributions for probe pairs (the paper's Table 6).

For each explained pair: Shapley values over caption tokens and image patches from the chosen
estimator under a per-pair cap on model calls, T-SHAP / V-SHAP, the verb's attribution and share.
The verb is the manifest's ``verb`` column (every word-piece of the caption word that is a form of it);
the spaCy tagger is asked only where the column is empty. Rows stream into the run store keyed by
model + explanation settings and the pair's content, so explaining resumes (one runner for every task).
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from connote.core.errors import InputError, ItemError
from connote.cv_probes.manifest import read_probe_manifest
from connote.cv_probes.task import write_sample
from connote.explain import mmshap
from connote.explain.mmshap import default_estimator
from connote.explain.options import MmshapOptions
from connote.explain.shapley import ADAPTIVE_CAP_PERMUTATIONS, ADAPTIVE_SAMPLING
from connote.media.images import load_image
from connote.metrics.options import opt
from connote.models.masking import DEFAULT_COMPAT, check_compat, masking_game, require_masking
from connote.runs.runner import WorkItem
from connote.runs.store import content_key, write_json, write_jsonl, write_text
from connote.tasks.api import Task

TASK_NAME = "cv-probes-mmshap"
#: 2: ``--compat mmshap`` (the public MM-SHAP code's features, grid and masked id) is the default, with
#: its 10-permutation estimator; the verb comes from the manifest's ``verb`` column.
TASK_VERSION = 2


def pair_game(matcher: Any, item: Any, *, captions: str, grid: int | None, allow_network: bool,
              compat: str = DEFAULT_COMPAT) -> Any:
    """The masking game of a manifest item's pair (raises ItemError/ValueError for an unusable image or caption)."""
    image = load_image(item.image, allow_network=allow_network)
    return masking_game(matcher, image, item.text(captions), grid=grid, compat=compat)


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
        game = pair_game(matcher, item, captions=captions, grid=grid, allow_network=allow_network, compat=compat)
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


@dataclass(frozen=True)
class ExplainOptions(MmshapOptions):
    """The options of ``cv-probes-mmshap`` (``connote cv-probes explain``'s flags; ``connote run --set``)."""

    captions: Literal["simplified", "original"] = opt("simplified", "simplified (as the paper) | original")
    figures: int = opt(5, "save heat-map figures for the first N pairs", ge=0)


class ExplainTask(Task):
    """MM-SHAP per probe pair (Table 6): T-SHAP/V-SHAP, the verb's attribution and share, per cell."""

    name = TASK_NAME
    version = TASK_VERSION
    capability = "mask"
    reads = "a probe manifest (as cv-probes; the verb column names the verb to credit)"
    title = "MM-SHAP: T-SHAP/V-SHAP and the verb's share per probe pair, split by predicted match (Table 6)."
    label = "pairs"
    report_kind = "cv-probes-explain"  # connote.cv_probes.report_explain: Table 6
    batch_size = 1  # each pair is many model calls of its own; one pair per stored row
    options = ExplainOptions
    default_model = "objects"
    sample_data = staticmethod(write_sample)

    @classmethod
    def from_options(cls, data: Path, options: dict[str, Any], *, seed: int = 0, progress: bool = True) -> Task:
        return cls(data, **options, seed=seed, progress=progress)

    def extra_results(self, spec: Any) -> dict[str, Any]:
        return {"model": str(spec)}

    def print_result(self, result: Any, *, as_json: bool = False) -> int:
        if as_json:
            return super().print_result(result, as_json=True)
        results = result.results
        print(result.text)
        print(f"{results['n_pairs']} pairs, {results['calls_total']} model calls, {results['n_errors']} errors, "
              f"{results['n_no_verb']} without a verb, {results['n_verb_not_found']} whose manifest verb is not in "
              f"the caption (in the T-SHAP means, not the verb means); run folder: {result.out}")
        return 0

    def __init__(self, data: str | Path, *, captions: str = "simplified", estimator: str | None = None,
                 budget: int | None = None, sample: int | None = None, seed: int = 0, grid: int | None = None,
                 allow_network: bool = False, progress: bool = True, compat: str = DEFAULT_COMPAT,
                 figures: int | None = None) -> None:
        """``figures``: write ``figures/`` (the cell summary and heat maps of the first N pairs); None: none."""
        self.compat = check_compat(compat)
        self.figures = figures
        self.estimator = estimator or default_estimator(self.compat)
        self.data, self.captions, self.budget, self.sample = data, captions, budget, sample
        self.seed, self.grid, self.allow_network, self.progress = seed, grid, allow_network, progress
        items = read_probe_manifest(data, captions=captions)
        if sample is not None and sample < len(items):
            items = sorted(random.Random(seed).sample(items, sample), key=lambda it: it.item_id)
        self.items = items
        self._nlp: Any = None
        self._model: Any = None

    def bind(self, model: Any) -> None:
        """MM-SHAP's check in place of the capability check: a backend whose inputs cannot be masked is refused
        before any work (naming the backends that can)."""
        require_masking(model)
        self._model = model

    def batches(self, todo: list[WorkItem]) -> list[list[WorkItem]] | None:
        """One pair per stored row (the default grouping). This is also where a ``--budget`` too small for a pair
        to compute is refused, before any pair is explained: the model is built by now, and only the pairs that
        are to be computed are read."""
        mmshap.refuse_small_budget(self.budget, self.estimator, (
            (w.item_id, functools.partial(pair_game, self._model, w.payload, captions=self.captions, grid=self.grid,
                                          allow_network=self.allow_network, compat=self.compat))
            for w in todo if w.error is None))
        return None

    def settings(self) -> dict[str, Any]:
        # verb_source: the data's verb column first, the tagger where it is empty (task version 2)
        settings = {"captions": self.captions, "estimator": self.estimator, "budget": self.budget, "seed": self.seed,
                    "grid": self.grid, "compat": self.compat, "verb_source": "data,tagger"}
        if self.estimator == "adaptive":  # its design and default cap changed (2 December 2026): older rows not reused
            settings["adaptive"] = f"{ADAPTIVE_SAMPLING}, <= {ADAPTIVE_CAP_PERMUTATIONS} permutations"
        return settings

    def config(self) -> dict[str, Any]:
        return {"data": str(self.data), **self.settings(), "sample": self.sample}

    def work_items(self) -> list[WorkItem]:
        from connote.cv_probes.task import image_identity

        return [WorkItem(it.item_id, content_key({"caption": it.text(self.captions), "verb": it.verb,
                                                  "image_kind": it.image_kind, "caption_kind": it.caption_kind,
                                                  "label": it.label, "image": image_identity(it.image)}), it)
                for it in self.items]

    def compute(self, model: Any, batch: list[WorkItem]) -> list[dict[str, Any]]:
        if self._nlp is None:
            self._nlp = mmshap.load_tagger()
        return [explain_item(model, w.payload, captions=self.captions, estimator=self.estimator, budget=self.budget,
                             seed=self.seed, grid=self.grid, allow_network=self.allow_network, nlp=self._nlp,
                             compat=self.compat) for w in batch]

    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        it = item.payload
        return {"item_id": it.item_id, "caption": it.text(self.captions), "image_kind": it.image_kind,
                "caption_kind": it.caption_kind, "cell": it.cell, "label": it.label, "image": it.image,
                "error": message, "calls": 0}

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        flagged = [r for r in rows if mmshap.VERB_NOT_FOUND in (r.get("flags") or [])]
        return {**mmshap.aggregate([r for r in rows if r.get("error") is None]),
                "estimator": self.estimator, "budget": self.budget, "compat": self.compat,
                "n_pairs": len(rows), "n_errors": sum(r.get("error") is not None for r in rows),
                "n_no_verb": sum(mmshap.NO_VERB in (r.get("flags") or []) for r in rows),
                "n_verb_not_found": len(flagged), "verb_not_found": [r["item_id"] for r in flagged],
                "n_verb_from_data": sum(r.get("verb_source") == "data" for r in rows),
                "n_verb_from_tagger": sum(r.get("verb_source") == "tagger" for r in rows),
                "calls_total": sum(int(r.get("calls") or 0) for r in rows)}

    def render(self, results: dict[str, Any]) -> str:
        return mmshap.format_table(results)

    def write_outputs(self, out: Path, rows: list[dict[str, Any]], results: dict[str, Any]) -> None:
        write_jsonl(out / "explanations.jsonl", ({k: v for k, v in r.items() if k != "item_key"} for r in rows))
        write_json(out / "results.json", results)
        if self.figures is not None:
            _figures(rows, out, self.figures, self.allow_network, results)


def run_explain(data: str | Path, model: str, out: str | Path, *, captions: str = "simplified",
                estimator: str | None = None, budget: int | None = None, sample: int | None = None,
                seed: int = 0, grid: int | None = None, allow_network: bool = False, progress: bool = True,
                figures: int = 0, model_obj: Any = None, compat: str = DEFAULT_COMPAT) -> dict[str, Any]:
    """Explain (a seeded sample of) the pairs of a manifest; returns results.json content.

    ``compat``: ``mmshap`` (default; the public MM-SHAP code's features, grid and masked id) or
    ``connote``; ``estimator`` ``None`` means :func:`default_estimator` of ``compat``. (A compatibility name for
    library callers: the command is :func:`connote.tasks.api.run_task` with an :class:`ExplainTask`.)
    """
    from connote.tasks.api import run_task

    task = ExplainTask(data, captions=captions, estimator=estimator, budget=budget, sample=sample, seed=seed,
                       grid=grid, allow_network=allow_network, progress=progress, compat=compat, figures=figures)
    return run_task(task, model_obj if model_obj is not None else model, out, seed=seed,
                    extra_results={"model": model}).results


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_HASHED = re.compile(r"-[0-9a-fA-F]{10,16}$")


def figure_name(item_id: Any, taken: set[str]) -> str:
    """A file name for an item's figure that cannot leave the figures folder.

    Characters outside ``[A-Za-z0-9._-]`` become ``_``, leading dots are dropped (no ``..``, no hidden
    files), the stem is capped at 80 characters, and a hash of the id is appended whenever the name had to
    change, is already taken (case-insensitively), or itself ends like a hashed name (``-`` and 10 hex
    digits): so a hashed name is never also some other id's plain name, and distinct ids never share a file.
    """
    raw = str(item_id)
    stem = _UNSAFE.sub("_", raw).lstrip(".")[:80] or "item"
    if stem != raw or stem.lower() in taken or _HASHED.search(stem):
        stem = f"{stem}-{hashlib.sha256(raw.encode('utf-8')).hexdigest()[:16]}"
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
    made_from = _figures_key(rows, n, results)
    if _figures_current(fig_dir, made_from):  # a resumed run with the same rows: the figures are drawn already
        return
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
        if target.parent.resolve() != root:  # pragma: no cover - figure_name makes this impossible
            raise AssertionError(f"figure path {target} escapes {root}")
        plots.plot_pair(row, image, target)
        index[str(row["item_id"])] = name
    write_json(fig_dir / "index.json", index)
    write_text(out / FIGURES_STAMP, made_from)


#: In the run folder: the hash of what ``figures/`` was drawn from (:func:`_figures_key`).
FIGURES_STAMP = ".figures-made-from"


def _figures_key(rows: list[dict[str, Any]], n: int, results: dict[str, Any]) -> str:
    """Everything the figures are drawn from: the run's fingerprint, its rows (with their content keys, which
    hold the images' sha256), how many pairs get a figure, and the plotting code and library."""
    from importlib import metadata

    from connote.core.files import file_sha256
    from connote.explain import plots

    try:
        mpl = metadata.version("matplotlib")
    except metadata.PackageNotFoundError:
        mpl = None
    return content_key({"fingerprint": results.get("fingerprint"), "rows": rows, "n": n, "matplotlib": mpl,
                        "plots": file_sha256(plots.__file__)})


def _figures_current(fig_dir: Path, made_from: str) -> bool:
    """Whether ``fig_dir`` holds every figure drawn from ``made_from`` (its stamp, index and files)."""
    import json

    try:
        if (fig_dir.parent / FIGURES_STAMP).read_text(encoding="utf-8") != made_from:
            return False
        index = json.loads((fig_dir / "index.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    names = list(index.values()) if isinstance(index, dict) else [None]
    return all(isinstance(name, str) and "/" not in name and (fig_dir / name).is_file()
               for name in [*names, "cells.png"])
