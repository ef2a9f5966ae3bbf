"""The functional core: ``compute_scores`` runs the registered metrics (see :mod:`connote.metrics.registry`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from connote.metrics._gc import gc_paused
from connote.metrics._inputs import check_inputs
from connote.metrics.options import check_known, option_names, parse_options
from connote.metrics.registry import DEFAULT_METRICS, METRICS, MetricInput, MetricOutput, all_option_names

__all__ = ["ScoreResult", "compute_scores", "metric_options", "DEFAULT_METRICS", "METRICS"]


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


def metric_options(names: Sequence[str], settings: Mapping[str, Any]) -> dict[str, Any]:
    """Each named metric's options, parsed from ``settings``.

    An option no chosen metric declares must be declared by some registered metric (options of
    metrics not computed are accepted, checked and unused); otherwise
    :class:`~connote.metrics.options.OptionError` names it, the closest valid name and the valid ones. Wrong
    types and out-of-range values are refused the same way, whether or not their metric is computed
    (``--jobs -3`` with ``--metrics bleu`` is bad input, not an option quietly dropped).
    """
    classes = {n: METRICS.get(n).options_class() for n in names}
    declared = {o for cls in classes.values() for o in option_names(cls)}
    rest = [k for k in settings if k not in declared]
    if rest:
        check_known(rest, all_option_names())
        for other in METRICS.names():
            if other not in classes:
                cls = METRICS.get(other).options_class()
                given = {k: settings[k] for k in rest if k in option_names(cls)}
                if given:
                    parse_options(cls, given)
    return {n: parse_options(cls, settings) for n, cls in classes.items()}


def compute_scores(hyps: Mapping[str, str | Sequence[str]], refs: Mapping[str, Sequence[str]],
                   metrics: Sequence[str] = DEFAULT_METRICS, *, tokenize: str | None = None,
                   per_item: bool = False, **settings: Any) -> ScoreResult:
    """Score hypotheses against references with COCO caption metrics (and more), no Java needed.

    Args:
        hyps: ``{id: text}`` or ``{id: [text]}``.
        refs: ``{id: [ref1, ref2, ...]}`` (the dicts pycocoevalcap takes).
        metrics: names from :data:`METRICS` (``bleu``, ``meteor``, ``rouge_l``, ``cider``, ``bertscore``,
            ``acs_acd``).
        tokenize: ``None`` (text is used as it is) or ``"ptb"`` (pycocoevalcap's PTB step, Java-free).
        per_item: also return ``{id: {score name: value}}``.
        settings: the metrics' typed options (each metric's dataclass lists them, e.g.
            :class:`connote.metrics.cider.CiderOptions`): ``meteor_task``/``meteor_language``/``meteor_norm``/
            ``meteor_data``/``paraphrase_file``/``wordnet``/``synonym_source``/``n_jobs``/``meteor_preset``
            (METEOR), ``df_corpus``/``cider_sigma`` (CIDEr), ``bertscore_model``/``bertscore_layer``/``idf``/
            ``baseline_file`` (BERTScore), ``concept_encoder``/``concept_split``/``bertscore_f1`` (ACS/ACD).
            An unknown name or a wrong type raises :class:`~connote.metrics.options.OptionError`.

    Returns:
        :class:`ScoreResult` with pycocoevalcap's score names (``Bleu_1`` ... ``Bleu_4``, ``METEOR``,
        ``ROUGE_L``, ``CIDEr``) and a signature per metric.

    >>> r = compute_scores({"1": "a cat sits"}, {"1": ["a cat sits", "a cat is sitting"]}, ["bleu"])
    >>> round(r.scores["Bleu_1"], 6)
    1.0
    """
    names = [m.strip() for m in metrics if m.strip()]
    specs = [METRICS.get(name) for name in names]  # unknown names fail here with the valid list
    hyp_source = settings.pop("_hyp_source", None)
    ref_source = settings.pop("_ref_source", None)
    options = metric_options(names, settings)
    ids, hyp_list, ref_list = check_inputs(hyps, refs, hyp_source=hyp_source, ref_source=ref_source)
    tok = tokenize or "none"
    if tok != "none":
        from connote.metrics.tokenize import tokenize_corpus  # (its patterns cost an import where none is asked)

        hyp_list = [t[0] for t in tokenize_corpus({str(i): [h] for i, h in enumerate(hyp_list)}, tok).values()]
        ref_list = list(tokenize_corpus({str(i): r for i, r in enumerate(ref_list)}, tok).values())
    inp = MetricInput(ids, hyp_list, ref_list, tok, per_item, dict(settings))
    results: dict[str, MetricOutput] = {}
    with gc_paused():
        # metrics with the asynchronous capability start first and work while the others are computed
        started = {s.name: s.start_fn()(inp, options[s.name]) for s in specs if s.asynchronous and len(specs) > 1}
        try:
            for s in specs:
                if s.name not in started:
                    results[s.name] = MetricOutput(*s.compute_fn()(inp, options[s.name]))
            for name, pending in list(started.items()):
                results[name] = MetricOutput(*pending.result())
                del started[name]
        finally:
            for pending in started.values():
                pending.cancel()
    scores: dict[str, float] = {}
    signatures: dict[str, str] = {}
    per: dict[str, dict[str, float]] = {i: {} for i in ids}
    warns: list[str] = []
    for s in specs:
        out = results[s.name]
        scores.update(out.scores)
        signatures[s.name] = out.signature
        warns.extend(out.warnings)
        if per_item:
            for i, vals in out.per_item.items():
                per[i].update(vals)
    return ScoreResult(scores, per if per_item else None, signatures, warns)
