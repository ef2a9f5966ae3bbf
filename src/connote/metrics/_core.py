"""The functional core: ``compute_scores`` and the text metrics behind it."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connote.metrics._gc import gc_paused
from connote.metrics._inputs import check_inputs
from connote.metrics.tokenize import tokenize_corpus
from connote.registry import Registry


@dataclass
class ScoreResult:
    """Corpus scores (pycocoevalcap names and scale), optional per-item scores, a signature per metric."""

    scores: dict[str, float]
    per_item: dict[str, dict[str, float]] | None
    signatures: dict[str, str]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scores": self.scores, "signatures": self.signatures}
        if self.per_item is not None:
            out["per_item"] = self.per_item
        if self.warnings:
            out["warnings"] = self.warnings
        return out


@dataclass
class _Batch:
    ids: list[str]
    hyps: list[str]
    refs: list[list[str]]
    tokenize: str
    per_item: bool
    settings: dict[str, Any]


MetricFn = Any  # (batch) -> (scores, per-item {id: {name: value}}, signature, warnings)

METRICS: Registry[MetricFn] = Registry("metric")


def _version() -> str:
    from connote import __version__

    return f"connote-{__version__}"


def _tok(batch: _Batch) -> str:
    return "ptb-connote" if batch.tokenize == "ptb" else "none"


@METRICS.register("bleu", help="BLEU-1..4, corpus level, closest reference length (pycocoevalcap)")
def _bleu(batch: _Batch):
    from connote.metrics.bleu import corpus_bleu

    n = int(batch.settings.get("bleu_n", 4))
    corpus, items = corpus_bleu(batch.hyps, batch.refs, n)
    scores = {f"Bleu_{k + 1}": corpus[k] for k in range(n)}
    per = {i: {f"Bleu_{k + 1}": v[k] for k in range(n)} for i, v in zip(batch.ids, items)}
    sig = f"bleu|n:{n}|ref:closest|smooth:pycoco|tok:{_tok(batch)}|version:{_version()}"
    return scores, per, sig, []


@METRICS.register("rouge_l", help="ROUGE-L F-measure, beta 1.2 (pycocoevalcap)")
def _rouge(batch: _Batch):
    from connote.metrics.rouge import corpus_rouge_l

    beta = float(batch.settings.get("rouge_beta", 1.2))
    mean, items = corpus_rouge_l(batch.hyps, batch.refs, beta)
    per = {i: {"ROUGE_L": v} for i, v in zip(batch.ids, items)}
    return {"ROUGE_L": mean}, per, f"rouge_l|beta:{beta:g}|tok:{_tok(batch)}|version:{_version()}", []


def resolve_document_frequencies(spec: Any, tokenize: str | None = None):
    """``None`` (evaluated references), a DocumentFrequencies, a saved-DF JSON, or a references JSON/dict.

    Reference texts (not saved frequencies) get the same ``tokenize`` step as the scored text.
    """
    from connote.metrics._inputs import read_json_mapping
    from connote.metrics.cider import DocumentFrequencies

    if spec is None or isinstance(spec, DocumentFrequencies):
        return spec
    def refs_of(data: Mapping[str, Any]) -> list[list[str]]:
        lists = {str(k): ([v] if isinstance(v, str) else list(v)) for k, v in data.items()}
        return list(tokenize_corpus(lists, tokenize).values())

    if isinstance(spec, Mapping):
        return DocumentFrequencies.from_references(refs_of(spec), source="mapping")
    if isinstance(spec, (str, os.PathLike)):
        import json

        with open(spec, encoding="utf-8") as fh:
            head = fh.read(200)
        if '"n_documents"' in head:
            try:
                return DocumentFrequencies.load(spec)
            except (KeyError, ValueError, json.JSONDecodeError):
                pass
        data = read_json_mapping(spec, "document-frequency corpus")
        return DocumentFrequencies.from_references(refs_of(data), source=os.path.basename(str(spec)))
    raise TypeError(f"cannot use {type(spec).__name__} as CIDEr document frequencies")


@METRICS.register("cider", help="CIDEr-D (sigma 6, clipping, length penalty, x10; pycocoevalcap 'CIDEr')")
def _cider(batch: _Batch):
    from connote.metrics.cider import corpus_cider

    sigma = float(batch.settings.get("cider_sigma", 6.0))
    dfs = resolve_document_frequencies(batch.settings.get("df_corpus"), batch.tokenize)
    mean, items = corpus_cider(batch.hyps, batch.refs, sigma=sigma, document_frequencies=dfs)
    per = {i: {"CIDEr": v} for i, v in zip(batch.ids, items)}
    if dfs is None:
        df = f"refs({len(batch.ids)})"
    else:
        df = f"corpus:{dfs.source}:{dfs.n_documents}docs:{dfs.fingerprint()}"
    sig = f"cider-d|n:4|sigma:{sigma:g}|clip:yes|df:{df}|tok:{_tok(batch)}|version:{_version()}"
    return {"CIDEr": mean}, per, sig, []


_METEOR_KEYS = {"meteor_language": "language", "meteor_task": "task", "meteor_norm": "norm",
                "meteor_modules": "modules", "meteor_beam": "beam_size", "meteor_data": "meteor_data",
                "paraphrase_file": "paraphrase_file", "wordnet": "wordnet", "synonym_source": "synonym_source",
                "meteor_parameters": "parameters", "meteor_weights": "weights", "n_jobs": "n_jobs"}


def meteor_from_settings(settings: Mapping[str, Any]):
    """A (cached) :class:`~connote.metrics.meteor.Meteor` for ``meteor_*`` settings."""
    from connote.metrics.meteor import Meteor

    kwargs = {v: settings[k] for k, v in _METEOR_KEYS.items() if k in settings and settings[k] is not None}
    kwargs.pop("n_jobs", None)
    preset = settings.get("meteor_preset")
    if preset:
        from connote.metrics.meteor import PRESETS

        if preset not in PRESETS:
            raise ValueError(f"unknown METEOR preset {preset!r}; valid presets: {', '.join(sorted(PRESETS))}")
        kwargs = {**PRESETS[preset], **{k: v for k, v in kwargs.items() if k not in PRESETS[preset]}}
    if "modules" in kwargs and isinstance(kwargs["modules"], str):
        kwargs["modules"] = [m for m in kwargs["modules"].replace("+", ",").split(",") if m]
    key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kwargs.items()))
    m = _METEOR_CACHE.get(key)
    if m is None:
        m = Meteor(**kwargs)
        _METEOR_CACHE[key] = m
    return m


_METEOR_CACHE: dict[tuple, Any] = {}


def pycoco_meteor_inputs(hyps: Sequence[str], refs: Sequence[Sequence[str]]) -> tuple[list[str], list[list[str]]]:
    """The text pycocoevalcap's METEOR wrapper actually sends to the jar.

    It deletes ``|||`` from hypotheses (and halves double spaces), while a ``|||`` inside a reference
    splits it into two references on the jar's side.
    """
    out_h = [h.replace("|||", "").replace("  ", " ") for h in hyps]
    out_r = [[part for r in rs for part in r.split("|||")] for rs in refs]
    return out_h, out_r


@METRICS.register("meteor", help="METEOR 1.5 without Java (default: -l en -norm, task rank, as pycocoevalcap)")
def _meteor(batch: _Batch):
    return _meteor_start(batch)()


def _meteor_start(batch: _Batch):
    """Start METEOR (its worker processes, if any, run while the caller computes other metrics)."""
    import warnings

    from connote.metrics.meteor import MeteorResourceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeteorResourceWarning)
        m = meteor_from_settings(batch.settings)
    msgs = [str(w.message) for w in caught] + [f"METEOR: {x}" for x in m.missing if not caught]
    for msg in msgs:
        warnings.warn(msg, MeteorResourceWarning, stacklevel=4)
    n_jobs = batch.settings.get("n_jobs")
    hyps, refs = pycoco_meteor_inputs(batch.hyps, batch.refs)
    pending = m._corpus_start(hyps, refs, n_jobs=n_jobs)

    def finish():
        score, items = pending.result()
        per = {i: {"METEOR": v} for i, v in zip(batch.ids, items)}
        return {"METEOR": score}, per, f"{m.signature()}|tok:{_tok(batch)}", msgs

    finish.cancel = pending.cancel  # type: ignore[attr-defined]
    return finish


METRICS.register("bertscore", "connote.metrics.bertscore:_registry_entry",
                 help="BERTScore P/R/F1 with any Hugging Face encoder (max over references)")

METRICS.register("acs_acd", "connote.metrics.concepts:_registry_entry",
                 help="ACS / ACD concept similarity and distance of metaphor captions")

DEFAULT_METRICS = ("bleu", "meteor", "rouge_l", "cider")


def compute_scores(hyps: Mapping[str, str | Sequence[str]], refs: Mapping[str, Sequence[str]],
                   metrics: Sequence[str] = DEFAULT_METRICS, *, tokenize: str | None = None,
                   per_item: bool = False, **settings: Any) -> ScoreResult:
    """Score hypotheses against references with COCO caption metrics (and more), no Java needed.

    Args:
        hyps: ``{id: text}`` or ``{id: [text]}``.
        refs: ``{id: [ref1, ref2, ...]}`` (the dicts pycocoevalcap takes).
        metrics: names from :data:`METRICS` (``bleu``, ``meteor``, ``rouge_l``, ``cider``, ``bertscore``).
        tokenize: ``None`` (text is used as it is) or ``"ptb"`` (pycocoevalcap's PTB step, Java-free).
        per_item: also return ``{id: {score name: value}}``.
        settings: ``meteor_task``/``meteor_language``/``meteor_norm``/``meteor_data``/``paraphrase_file``/
            ``wordnet``/``synonym_source``/``n_jobs``/``meteor_preset`` (``"pycocoevalcap"``/``"vist"``,
            which sets task and normalization) (METEOR), ``df_corpus``/``cider_sigma`` (CIDEr),
            ``bertscore_model``/``bertscore_layer``/``idf``/``baseline_file`` (BERTScore),
            ``concept_encoder``/``concept_split`` (``"public"``/``"improved"``)/``bertscore_f1`` (ACS/ACD).

    Returns:
        :class:`ScoreResult` with pycocoevalcap's score names (``Bleu_1`` ... ``Bleu_4``, ``METEOR``,
        ``ROUGE_L``, ``CIDEr``) and a signature per metric.

    >>> r = compute_scores({"1": "a cat sits"}, {"1": ["a cat sits", "a cat is sitting"]}, ["bleu"])
    >>> round(r.scores["Bleu_1"], 6)
    1.0
    """
    names = [m.strip() for m in metrics if m.strip()]
    fns = [(name, METRICS.get(name)) for name in names]  # unknown names fail here with the valid list
    ids, hyp_list, ref_list = check_inputs(hyps, refs, hyp_source=settings.pop("_hyp_source", None),
                                           ref_source=settings.pop("_ref_source", None))
    tok = tokenize or "none"
    if tok != "none":
        hyp_list = [t[0] for t in tokenize_corpus({str(i): [h] for i, h in enumerate(hyp_list)}, tok).values()]
        ref_list = list(tokenize_corpus({str(i): r for i, r in enumerate(ref_list)}, tok).values())
    batch = _Batch(ids, hyp_list, ref_list, tok, per_item, dict(settings))
    scores: dict[str, float] = {}
    signatures: dict[str, str] = {}
    per: dict[str, dict[str, float]] = {i: {} for i in ids}
    warns: list[str] = []
    results: dict[str, Any] = {}
    with gc_paused():
        # METEOR's worker processes (n_jobs > 1) align while the other metrics are computed here
        started = None
        if len(fns) > 1 and any(name == "meteor" and fn is _meteor for name, fn in fns):
            started = _meteor_start(batch)
        try:
            for name, fn in fns:
                if started is not None and name == "meteor":
                    continue
                results[name] = fn(batch)
            if started is not None:
                results["meteor"] = started()
                started = None
        finally:
            if started is not None:
                started.cancel()
    for name, _fn in fns:
        s, p, sig, w = results[name]
        scores.update(s)
        signatures[name] = sig
        warns.extend(w)
        if per_item:
            for i, vals in p.items():
                per[i].update(vals)
    return ScoreResult(scores, per if per_item else None, signatures, warns)
