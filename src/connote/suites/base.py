"""What every probe suite shares: its items, the matching task over them, MM-SHAP on them, reading helpers.

A suite (SVO-Probes, VALSE, Winoground, SugarCrepe/ARO) is a reader of its released files into
:class:`SuiteItem` s and a subclass of :class:`PairSuiteTask` that turns the rows into the suite's own
published metrics. An item holds one or more images, one or more captions and the (image, caption) pairs
the suite scores; :meth:`PairSuiteTask.compute` loads each distinct image of a batch once and asks the
model for every pair of the batch in one ``match_probability`` call, so the engine's image reuse applies.

:class:`SuiteExplainTask` runs MM-SHAP on the pairs a suite names (VALSE: caption and foil), crediting the
word the suite's fields say was changed (the verb, the swapped or foiled word) as the attribution target.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from connote.core.errors import InputError, ItemError
from connote.core.files import resolved
from connote.explain.options import MmshapOptions
from connote.media.images import image_identity, is_url, load_distinct, load_image, takes_encoded_images
from connote.metrics.options import opt
from connote.runs.runner import WorkItem
from connote.runs.store import content_key, write_json, write_jsonl
from connote.tasks.api import Sample, Task

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp")


@dataclass
class SuiteItem:
    """One test case of a suite: images, captions, the pairs to score, and the suite's own fields."""

    item_id: str
    images: list[str]
    captions: list[str]
    #: (image index, caption index) per score, in the order the suite's metric reads them.
    pairs: list[tuple[int, int]]
    #: Suite fields that enter the metrics (piece, category, negative type, mturk counts, tags).
    fields: dict[str, Any] = field(default_factory=dict)
    #: Crop box (x, y, w, h) per image, as ARO's VG-Relation / VG-Attribution give; None: the whole image.
    crops: list[tuple[float, float, float, float] | None] = field(default_factory=list)
    #: Pairs MM-SHAP explains: (pair index, role, attribution target word or None).
    explain: list[tuple[int, str, str | None]] = field(default_factory=list)
    line: int | None = None
    error: str | None = None


# ---------------------------------------------------------------------------------- reading helpers


def require_fields(entry: Any, names: Sequence[str], *, path: Path, line: int, key: str = "") -> dict[str, Any]:
    """``entry`` as a dict with string ``names``; anything else is an InputError naming file and line."""
    label = f"entry {key!r}" if key else "entry"
    if not isinstance(entry, dict):
        raise InputError(f"{label}: expected a JSON object, got {type(entry).__name__}", path=path, line=line)
    for name in names:
        if name not in entry:
            raise InputError(f"{label}: missing field {name!r}", path=path, line=line, column=name)
        if not isinstance(entry[name], str) or not entry[name].strip():
            raise InputError(f"{label}: field {name!r} must be a non-empty string, got "
                             f"{json.dumps(entry[name])[:60]}", path=path, line=line, column=name)
    return entry


def suite_image(name: str, roots: Sequence[Path]) -> str:
    """An image named in a suite file: a URL as is; else its file in the first root holding it (with or without
    a suffix; :func:`connote.media.photos.find_image`).

    A name found nowhere resolves under the first root, so loading it becomes the item's error.
    """
    from connote.media.photos import find_image

    if is_url(name):
        return name
    try:
        return resolved(find_image(roots, name, photo_id=False, extensions=IMAGE_SUFFIXES))
    except ItemError:
        return resolved(roots[0] / name) if roots else name


_WORDS = re.compile(r"[\w']+")


def first_difference(a: str, b: str) -> tuple[str | None, str | None]:
    """The first word where two captions part (case-insensitive): the swapped / replaced word of each."""
    wa, wb = _WORDS.findall(a.lower()), _WORDS.findall(b.lower())
    for x, y in zip(wa, wb):
        if x != y:
            return x, y
    if len(wa) != len(wb):
        longer = wa if len(wa) > len(wb) else wb
        extra = longer[min(len(wa), len(wb))]
        return (extra, None) if len(wa) > len(wb) else (None, extra)
    return None, None


# ------------------------------------------------------------------------------------------ metrics


def ratio(k: int, n: int) -> float | None:
    return k / n if n else None


def accuracy_block(flags: Sequence[bool]) -> dict[str, Any]:
    """Accuracy of a list of right/wrong decisions, with n and its 95% Wilson interval."""
    from connote.metrics.statistics import accuracy_interval

    k, n = sum(bool(f) for f in flags), len(flags)
    return {"accuracy": ratio(k, n), "n": n, "correct": k, "interval": accuracy_interval(k, n)}


def pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.2f}"


def markdown(header: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None) -> str:
    lines = [f"### {title}", ""] if title else []
    lines += ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------- task


def _load(path: str, crop: tuple[float, float, float, float] | None, allow_network: bool,
          keep_jpeg: bool = False) -> Any:
    if crop is None:
        return load_image(path, allow_network=allow_network, keep_jpeg=keep_jpeg)
    from connote.media.images import DEFAULT_MAX_SIDE

    image = load_image(path, allow_network=allow_network, max_side=None)
    x, y, w, h = crop
    image = image.crop((x, y, x + w, y + h))
    image.thumbnail((DEFAULT_MAX_SIDE, DEFAULT_MAX_SIDE))
    return image


def item_key(item: SuiteItem) -> str:
    """Everything about an item that changes its scores: captions, pairs, crops, fields, image bytes."""
    return content_key({"captions": item.captions, "pairs": item.pairs, "crops": item.crops,
                        "fields": item.fields, "images": [image_identity(p) for p in item.images]})


@dataclass(frozen=True)
class SuiteOptions:
    """The options of a suite's matching task (``connote suite run``'s flags; ``connote run SUITE --set``)."""

    images: str | None = opt(None, "folder of the suite's images (default: as the release lays them out)")
    allow_network: bool = opt(False, "fetch http(s) images")


@dataclass(frozen=True)
class SuiteExplainOptions(MmshapOptions):
    """The options of a suite's MM-SHAP task (``connote suite explain``'s flags)."""

    images: str | None = opt(None, "folder of the suite's images")


class SuiteRunning:
    """How a suite's tasks are run by ``connote run`` / ``connote suite``: the suite's sample, the model spec in
    the results, the suite's closing lines."""

    default_model = "objects"
    outputs = ("results.json", "items.jsonl", "results.md")
    #: Whether the task draws with the run's seed (the MM-SHAP task's sample of pairs).
    takes_seed: ClassVar[bool] = False

    @classmethod
    def suite_name(cls) -> str:
        return cls.name  # type: ignore[attr-defined]

    @classmethod
    def sample_data(cls, folder: Path) -> Sample:
        from connote.suites import target

        suite = cls.suite_name()
        return Sample(target(suite, 2)(folder), f"{suite} sample")

    @classmethod
    def from_options(cls, data: Path, options: dict[str, Any], *, seed: int = 0, progress: bool = True) -> Task:
        from connote.media.embedded import quiet_transformers

        quiet_transformers()
        extra = {"seed": seed} if cls.takes_seed else {}
        return cls(data, **options, **extra, progress=progress)  # type: ignore[call-arg]

    def extra_results(self, spec: Any) -> dict[str, Any]:
        return {"model": str(spec)}


class PairSuiteTask(SuiteRunning, Task):
    """p(match) for every pair a suite names; the subclass's ``metrics`` turns the rows into its scores."""

    capability = "match"
    label = "items"
    batch_size = 16
    invariance_field = "scores"
    options = SuiteOptions
    #: The suite's published rows shown beside runs: (name, {metric: value in [0, 1]}, source).
    PUBLISHED: ClassVar[list[tuple[str, dict[str, float], str]]] = []

    def __init__(self, data: str | Path, *, images: str | Path | None = None, allow_network: bool = False,
                 progress: bool = True) -> None:
        self.data = Path(data)
        self.images = Path(images) if images is not None else None
        self.allow_network, self.progress = allow_network, progress
        self.items = self.read(self.data, self.images)  # exit 2 on a bad file, before any model
        if not self.items:
            raise InputError(f"no {self.name} items found", path=self.data)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "report_kind" not in cls.__dict__ and "name" in cls.__dict__:
            cls.report_kind = cls.name  # connote.suites.report: the suite's table beside its published rows

    # subclasses ---------------------------------------------------------------------------------
    def read(self, data: Path, images: Path | None) -> list[SuiteItem]:
        raise NotImplementedError

    def metrics(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def table(cls, results: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
        """The suite's table for one run (header, rows), used by results.md and ``connote report``."""
        raise NotImplementedError

    #: The headline metric of the suite, a path into results.json, shown in the cross-suite overview.
    headline: ClassVar[tuple[str, ...]] = ()
    headline_label: ClassVar[str] = ""
    #: The columns ``connote report`` puts runs and published rows side by side in: (label, "a/b/c" path
    #: into results.json, which is also the key of a published row's value).
    columns: ClassVar[list[tuple[str, str]]] = []

    # contract -----------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        return {}

    def config(self) -> dict[str, Any]:
        return {"data": str(self.data), "images": None if self.images is None else str(self.images),
                "allow_network": self.allow_network}

    def work_items(self) -> list[WorkItem]:
        return [WorkItem(it.item_id, item_key(it), it, it.error) for it in self.items]

    def _row(self, item: SuiteItem, scores: list[float] | None, error: str | None) -> dict[str, Any]:
        return {"item_id": item.item_id, **item.fields, "captions": item.captions, "pairs": item.pairs,
                "scores": scores, "error": error}

    def bind(self, model: Any) -> None:
        super().bind(model)
        self._model = model

    def prepare(self, batch: list[WorkItem]) -> Any:
        """The batch's images read and decoded on a few threads while the model scores the batch before
        (JPEGs left encoded for a model that decodes them on its GPU)."""
        return self._images(batch, getattr(self, "_model", None))

    def _images(self, batch: list[WorkItem], model: Any) -> tuple[list[Any], dict[tuple[str, Any], int],
                                                                 dict[str, str]]:
        """``(images, slot of each (path, crop), error of each item with an image that could not be loaded)``:
        each distinct image of the batch loaded once, in first-use order, on a few threads (JPEGs kept encoded
        for ``model`` where it decodes them itself)."""
        keep_jpeg = takes_encoded_images(model)
        refs = [(path, it.crops[k] if it.crops else None) for it in (w.payload for w in batch)
                for k, path in enumerate(it.images)]
        images, slots, failed = load_distinct(
            refs, lambda ref: _load(ref[0], ref[1], self.allow_network, keep_jpeg=keep_jpeg))
        bad: dict[str, str] = {}
        for w in batch:
            it: SuiteItem = w.payload
            for k, path in enumerate(it.images):
                error = failed.get((path, it.crops[k] if it.crops else None))
                if error is not None:
                    bad[w.item_id] = error
        return images, slots, bad

    def compute(self, model: Any, batch: list[WorkItem], ready: Any = None) -> list[dict[str, Any]]:
        images, slots, bad = ready if ready is not None else self._images(batch, model)
        captions: list[str] = []
        caption_slot: dict[str, int] = {}
        pairs: list[tuple[int, int]] = []
        owners: list[tuple[str, int]] = []
        ok = [w for w in batch if w.item_id not in bad]
        for w in ok:
            it = w.payload
            for i, c in it.pairs:
                text = it.captions[c]
                if text not in caption_slot:
                    caption_slot[text] = len(captions)
                    captions.append(text)
                crop = it.crops[i] if it.crops else None
                pairs.append((slots[(it.images[i], crop)], caption_slot[text]))
                owners.append((w.item_id, len(owners)))
        probs = list(model.match_probability(images, captions, pairs)) if pairs else []
        out: dict[str, dict[str, Any]] = {}
        cursor = 0
        for w in ok:
            it = w.payload
            mine = probs[cursor:cursor + len(it.pairs)]
            cursor += len(it.pairs)
            error = None
            for p in mine:
                if isinstance(p, BaseException):
                    error = f"model error: {type(p).__name__}: {p}"
                elif p is None or (isinstance(p, float) and not math.isfinite(p)):
                    error = f"model returned no probability ({p})"
            out[w.item_id] = self._row(it, None if error else [float(p) for p in mine], error)
        for w in batch:
            if w.item_id in bad:
                out[w.item_id] = self._row(w.payload, None, bad[w.item_id])
        return [out[w.item_id] for w in batch]

    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        return self._row(item.payload, None, message)

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        scored = [r for r in rows if r.get("error") is None and r.get("scores") is not None]
        return {**self.metrics(scored), "data": str(self.data.resolve()), "n_items": len(rows), "n_scored": len(scored),
                "n_errors": len(rows) - len(scored), "interval_method": "wilson 95%",
                "published": [{"name": n, "values": v, "source": s} for n, v, s in self.PUBLISHED]}

    def render(self, results: dict[str, Any]) -> str:
        header, rows = self.table(results)
        text = markdown(header, rows, title=f"{self.title.split(':')[0]} — {results.get('model', '?')}")
        if results.get("published"):
            text += "\nPublished rows shown beside runs by `connote report`: " + "; ".join(
                f"{p['name']} ({p['source']})" for p in results["published"]) + ".\n"
        return text

    def write_outputs(self, out: Path, rows: list[dict[str, Any]], results: dict[str, Any]) -> None:
        write_json(out / "results.json", results)
        write_jsonl(out / "items.jsonl", rows)


def headline_value(results: dict[str, Any], path: Sequence[str]) -> float | None:
    """The value at ``path`` in results.json (None when absent)."""
    node: Any = results
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, (int, float)) else None


# ------------------------------------------------------------------------------------------ explain


class SuiteExplainTask(SuiteRunning, Task):
    """MM-SHAP (T-SHAP, V-SHAP, the target word's share) on the pairs a suite names, per group and role."""

    capability = "mask"
    label = "pairs"
    batch_size = 1
    options = SuiteExplainOptions
    takes_seed = True
    #: The suite's matching task (its reader and its item fields).
    suite: ClassVar[type[PairSuiteTask]]
    #: The item field the means are grouped by (VALSE: piece; SugarCrepe: category; SVO: negative type).
    group_by: ClassVar[str] = ""

    def __init__(self, data: str | Path, *, images: str | Path | None = None, estimator: str | None = None,
                 budget: int | None = None, sample: int | None = None, seed: int = 0, grid: int | None = None,
                 compat: str | None = None, allow_network: bool = False, progress: bool = True) -> None:
        import random

        from connote.explain.mmshap import default_estimator
        from connote.models.masking import DEFAULT_COMPAT, check_compat

        self.compat = check_compat(compat or DEFAULT_COMPAT)
        self.estimator = estimator or default_estimator(self.compat)
        self.budget, self.sample, self.seed, self.grid = budget, sample, seed, grid
        self.allow_network, self.progress = allow_network, progress
        self.matching = self.suite(data, images=images, allow_network=allow_network, progress=progress)
        pairs = []
        for it in self.matching.items:
            for pair_index, role, target in it.explain:
                pairs.append((it, pair_index, role, target))
        if sample is not None and sample < len(pairs):
            chosen = sorted(random.Random(seed).sample(range(len(pairs)), sample))
            pairs = [pairs[k] for k in chosen]
        self.pairs = pairs
        self._model: Any = None

    def bind(self, model: Any) -> None:
        """MM-SHAP's check in place of the capability check (as ``cv-probes-mmshap``)."""
        from connote.models.masking import require_masking

        require_masking(model)
        self._model = model

    def batches(self, todo: list[WorkItem]) -> list[list[WorkItem]] | None:
        """One pair per stored row; a ``--budget`` too small for a pair to compute is refused first (as
        ``cv-probes-mmshap``: the model is built by now, and only the pairs to compute are read)."""
        import functools

        from connote.explain import mmshap

        mmshap.refuse_small_budget(self.budget, self.estimator, (
            (w.item_id, functools.partial(self._game, self._model, w.payload)) for w in todo if w.error is None))
        return None

    def _game(self, model: Any, payload: tuple) -> Any:
        from connote.models.masking import masking_game

        it, k, _, _ = payload
        i, c = it.pairs[k]
        image = _load(it.images[i], it.crops[i] if it.crops else None, self.allow_network)
        return masking_game(model, image, it.captions[c], grid=self.grid, compat=self.compat)

    def settings(self) -> dict[str, Any]:
        return {"estimator": self.estimator, "budget": self.budget, "seed": self.seed, "grid": self.grid,
                "compat": self.compat, "target_source": "suite fields"}

    def config(self) -> dict[str, Any]:
        return {**self.matching.config(), **self.settings(), "sample": self.sample}

    def work_items(self) -> list[WorkItem]:
        items = []
        for it, k, role, target in self.pairs:
            i, c = it.pairs[k]
            key = content_key({"caption": it.captions[c], "image": image_identity(it.images[i]), "role": role,
                               "target": target, "crop": it.crops[i] if it.crops else None})
            items.append(WorkItem(f"{it.item_id}/{role}", key, (it, k, role, target), it.error))
        return items

    @classmethod
    def suite_name(cls) -> str:
        return cls.suite.name

    def print_result(self, result: Any, *, as_json: bool = False) -> int:
        if as_json:
            return super().print_result(result, as_json=True)
        results = result.results
        print(result.text)
        print(f"{results['n_pairs']} pairs, {results['calls_total']} model calls, {results['n_errors']} errors; "
              f"run folder: {result.out}")
        return 0

    def _base(self, payload: tuple) -> dict[str, Any]:
        it, k, role, target = payload
        i, c = it.pairs[k]
        return {"item_id": f"{it.item_id}/{role}", "suite_item": it.item_id, "role": role,
                "group": str(it.fields.get(self.group_by, "")), "caption": it.captions[c],
                "image": it.images[i], "target": target}

    def compute(self, model: Any, batch: list[WorkItem]) -> list[dict[str, Any]]:
        from connote.explain import mmshap

        rows = []
        for w in batch:
            it, k, role, target = w.payload
            base = self._base(w.payload)
            i, c = it.pairs[k]
            try:
                game = self._game(model, w.payload)
            except (ItemError, ValueError) as exc:
                rows.append({**base, "error": str(exc), "calls": 0})
                continue
            row = mmshap.explain_pair(game.value_fn, game.n_text, game.n_patches, estimator=self.estimator,
                                      budget=self.budget, seed=self.seed, item_id=base["item_id"],
                                      caption=it.captions[c], text_tokens=game.tokens, spans=game.spans,
                                      verb=target, find_verb=target is not None, nlp=None,
                                      extra={k2: v for k2, v in base.items() if k2 not in ("item_id", "caption")})
            row["model_calls"] = game.calls[0]
            rows.append(row)
        return rows

    def error_row(self, item: WorkItem, message: str) -> dict[str, Any]:
        return {**self._base(item.payload), "error": message, "calls": 0}

    def aggregate(self, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
        ok = [r for r in rows if not r.get("error") and r.get("t_shap") is not None]
        groups: dict[str, dict[str, Any]] = {}
        for g in sorted({r["group"] for r in ok}) + ["all"]:
            in_group = [r for r in ok if g == "all" or r["group"] == g]
            groups[g] = {role: _shap_summary([r for r in in_group if r["role"] == role])
                         for role in sorted({r["role"] for r in in_group})}
        return {"groups": groups, "group_by": self.group_by, "estimator": self.estimator, "budget": self.budget,
                "compat": self.compat, "n_pairs": len(rows), "n_errors": len(rows) - len(ok),
                "calls_total": sum(int(r.get("calls") or 0) for r in rows)}

    def render(self, results: dict[str, Any]) -> str:
        roles = sorted({role for g in results["groups"].values() for role in g})
        header = [results["group_by"] or "group"] + [f"T-SHAP {r} (%)" for r in roles] + \
                 [f"target share {r} (%)" for r in roles]
        rows = []
        for g, by_role in results["groups"].items():
            rows.append([g] + [pct(by_role.get(r, {}).get("t_shap")) for r in roles]
                        + [pct(by_role.get(r, {}).get("target_share")) for r in roles])
        return markdown(header, rows, title=f"MM-SHAP on {self.suite.name} — {results.get('model', '?')}")

    def write_outputs(self, out: Path, rows: list[dict[str, Any]], results: dict[str, Any]) -> None:
        write_jsonl(out / "explanations.jsonl", rows)
        write_json(out / "results.json", results)


def _shap_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def mean(xs: list[float]) -> float | None:
        return sum(xs) / len(xs) if xs else None

    shares = [r["verb_share"] for r in rows if r.get("verb_share") is not None]
    return {"n": len(rows), "t_shap": mean([r["t_shap"] for r in rows]),
            "v_shap": mean([r["v_shap"] for r in rows if r.get("v_shap") is not None]),
            "target_share": mean(shares), "n_target": len(shares)}


# --------------------------------------------------------------------------------------------- samples


def sample_photo(name: str, path: Path) -> Path:
    """Write one of the packaged sample photos (``connote.media.sample``) to ``path`` (kept if present)."""
    from connote.media.sample import SAMPLE

    loaders: dict[str, Callable[[], Any]] = {row[0]: row[1] for row in SAMPLE}
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        image = loaders[name]()
        image.save(path, quality=92) if path.suffix.lower() in (".jpg", ".jpeg") else image.save(path)
    return path
