"""The two VIST scoring protocols that exist in the wild, both available by name.

``challenge`` (the NAACL 2018 VIST challenge)
    References are grouped by photo sequence. Each template sequence's score is the **maximum**
    over its references of the single-reference METEOR (METEOR 1.5, task ``hter``); the system
    score is the mean over the template sequences (over the gold sequences when no template is
    given). Empty stories score 0.

``album`` (the protocol of the AREL code base)
    One prediction per album (the first story of the album in file order), all of the album's
    stories as references; COCO scorers BLEU-1..4, METEOR, ROUGE-L and CIDEr-D on the already
    tokenized text. METEOR as AREL's ``vist_eval/meteor/meteor.py`` runs the jar (``-t hter``, "MSR
    VIST group's measurement") by default (``meteor="arel"``); ``meteor="coco"`` is pycocoevalcap's
    ``-l en -norm`` (:data:`ALBUM_METEOR`). The setting is in ``settings`` and so in the score signature.

The metric implementations are injected: ``pair_scorer(hyps, refs) -> scores`` (parallel lists,
one single-reference score per pair) for ``challenge`` and ``corpus_scorer(hyps, refs) ->
(scores, per_item, signatures)`` for ``album``; both default to :mod:`connote.metrics`.

Missing sequences/albums are listed; with ``allow_missing`` they score 0 and count in the mean,
otherwise the mean is taken over the items present and ``complete`` is false (the CLI exits 1).
Items whose generation failed (``SubmissionEntry.error``) are counted in ``errors`` and treated as
missing ones: skipped (``complete`` false) or, with ``allow_missing``, scored 0.

Confidence intervals are bootstrap intervals over items (photo sequences or albums) from
``scipy.stats.bootstrap``, seeded: percentile by default, ``ci_method="BCa"`` or ``"basic"`` on request.
For the album protocol the corpus-level BLEU/METEOR/CIDEr are not means of per-album
scores; their intervals are those of the per-album mean (``ci_basis = "per-item mean"``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from connote.core.errors import InputError
from connote.metrics.registry import display_name, display_names
from connote.metrics.statistics import CI_METHODS, bootstrap_ci, paired_bootstrap  # noqa: F401 (the protocols' names)
from connote.vist.challenge import Gold, Submission
from connote.vist.data import SeqKey, seq_id
from connote.vist.version import VERSION as TASK_VERSION

PairScorer = Callable[[Sequence[str], Sequence[str]], Sequence[float]]
CorpusScorer = Callable[[dict[str, str], dict[str, list[str]]],
                        tuple[Mapping[str, float], Mapping[str, Any], Mapping[str, str]]]

PROTOCOLS = ("challenge", "album")
ALBUM_METRICS = ("bleu", "meteor", "rouge_l", "cider")
ALBUM_NAMES = display_names(ALBUM_METRICS)  # BLEU-1..4, METEOR, ROUGE-L, CIDEr-D (connote.metrics' name table)
#: The album protocol's METEOR settings: the metric options each one passes and the jar command line it equals.
ALBUM_METEOR: dict[str, dict[str, Any]] = {
    "arel": {"options": {"meteor_preset": "vist"}, "jar": "-t hter",
             "source": "AREL vist_eval/meteor/meteor.py (MSR VIST group's measurement)"},
    "coco": {"options": {"meteor_preset": "pycocoevalcap"}, "jar": "-l en -norm",
             "source": "pycocoevalcap meteor.py (the line AREL comments out)"},
}
DEFAULT_ALBUM_METEOR = "arel"
metric_name = display_name  # printed name of a score key: ``Bleu_4`` -> ``BLEU-4``, ``cider`` -> ``CIDEr-D``


# --------------------------------------------------------------------------- default scorers


def default_pair_scorer(**settings: Any) -> PairScorer:
    """Single-pair METEOR 1.5, task ``hter``, from :mod:`connote.metrics` (one scorer for the run).

    Defaults follow the VIST challenge's measurement (the jar run as ``-t hter``: no ``-norm``, no
    ``-lower``; VIST text is already lower-cased and tokenized); ``settings`` override any
    :class:`connote.metrics.meteor.Meteor` argument (e.g. ``norm=True``).
    """
    from connote.metrics.meteor import Meteor  # imported lazily: metrics load their resources on first use
    from connote.metrics.meteor.metric import MeteorResourceError

    # METEOR 1.5 needs all of the jar's resources unless reduced modules are named (then the signature says so)
    kwargs: dict[str, Any] = {"task": "hter", "norm": False, "lowercase": False, "strict": "modules" not in settings}
    kwargs.update(settings)
    try:
        meteor = Meteor(**kwargs)
    except FileNotFoundError as exc:
        raise MeteorResourceError(str(exc)) from None

    def score(hyps: Sequence[str], refs: Sequence[str]) -> list[float]:
        return [float(x) for x in meteor.score_pairs(zip(hyps, refs, strict=True))]

    score.signature = meteor.signature  # type: ignore[attr-defined]
    return score


def check_album_meteor(meteor: str) -> str:
    """``meteor`` if it names an album METEOR setting (:data:`ALBUM_METEOR`), else a ValueError naming them."""
    if meteor not in ALBUM_METEOR:
        raise ValueError(f"unknown METEOR setting {meteor!r}; valid: {', '.join(ALBUM_METEOR)}")
    return meteor


def default_corpus_scorer(metrics: Sequence[str] = ALBUM_METRICS, *, meteor: str = DEFAULT_ALBUM_METEOR,
                          **settings: Any) -> CorpusScorer:
    """COCO-style corpus scorers from :func:`connote.metrics.compute_scores`, METEOR under ``meteor``
    (``arel``: the jar's ``-t hter`` as AREL's evaluator runs it; ``coco``: ``-l en -norm``)."""
    if "meteor" in metrics:
        settings = {**ALBUM_METEOR[check_album_meteor(meteor)]["options"], **settings}

    def score(hyps: dict[str, str], refs: dict[str, list[str]]):
        from connote.metrics import compute_scores

        res = compute_scores(hyps, refs, metrics=tuple(metrics), per_item=True, **settings)
        return res.scores, res.per_item or {}, getattr(res, "signatures", {}) or {}

    return score


def _per_item(per_item: Any) -> dict[str, dict[str, float]]:
    """Normalise per-item scores to ``{item: {metric: value}}`` from either orientation."""
    if not per_item:
        return {}
    first = next(iter(per_item.values()))
    if isinstance(first, Mapping):
        # Either {item: {metric: v}} or {metric: {item: v}}
        keys = set(per_item)
        if all(metric_name(k) in ALBUM_NAMES or k.lower() in ("meteor", "bleu", "cider") for k in keys):
            out: dict[str, dict[str, float]] = defaultdict(dict)
            for m, items in per_item.items():
                for i, v in items.items():
                    out[str(i)][metric_name(m)] = _flt(v)
            return dict(out)
        return {str(i): {metric_name(m): _flt(v) for m, v in d.items()} for i, d in per_item.items()}
    raise TypeError("per-item scores must be a mapping of mappings")


def _flt(v: Any) -> float:
    if isinstance(v, (list, tuple)):  # e.g. BLEU returning all orders: take the last
        v = v[-1]
    return float(v)


# --------------------------------------------------------------------------- bootstrap


# --------------------------------------------------------------------------- results


@dataclass
class ProtocolResult:
    """Scores of one submission under one protocol (all scores on a 0-1 scale, CIDEr raw)."""

    protocol: str
    scores: dict[str, float]
    per_item: dict[str, dict[str, float]]
    per_album: dict[str, dict[str, float]]
    missing: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    no_gold: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    n_items: int = 0
    n_scored: int = 0
    n_empty: int = 0
    allow_missing: bool = False
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    ci_basis: str = "per-item mean"
    item_means: dict[str, float] = field(default_factory=dict)
    signatures: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Every target item scored: none missing and none errored (or ``allow_missing``, which scores them 0)."""
        return not (self.missing or self.errors) or self.allow_missing

    @property
    def n_covered(self) -> int:
        """Items whose own story was scored (missing and errored ones scored 0 are not counted)."""
        return self.n_scored - (len(self.missing) + len(self.errors) if self.allow_missing else 0)

    def item_scores(self, metric: str) -> dict[str, float]:
        return {i: s[metric] for i, s in self.per_item.items() if metric in s}

    def to_dict(self, *, per_item: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "protocol": self.protocol, "scores": self.scores,
            "ci": {k: list(v) for k, v in self.ci.items()}, "ci_basis": self.ci_basis,
            "item_means": self.item_means,
            "missing": self.missing, "n_missing": len(self.missing), "allow_missing": self.allow_missing,
            "complete": self.complete, "n_items": self.n_items, "n_scored": self.n_scored,
            "n_covered": self.n_covered,
            "n_empty": self.n_empty, "n_errors": len(self.errors), "errors": self.errors,
            "no_gold": self.no_gold, "n_extra": len(self.extra),
            "per_album": self.per_album, "signatures": self.signatures, "settings": self.settings,
        }
        if per_item:
            d["per_item"] = self.per_item
        return d


def _album_means(per_item: Mapping[str, Mapping[str, float]],
                 album_of: Mapping[str, str]) -> dict[str, dict[str, float]]:
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for item, scores in per_item.items():
        for m, v in scores.items():
            acc[album_of[item]][m].append(v)
    return {a: {m: float(np.mean(v)) for m, v in ms.items()} for a, ms in acc.items()}


def _cis(per_item: Mapping[str, Mapping[str, float]], metrics: Sequence[str], n_boot: int,
         seed: int, method: str = "percentile") -> dict[str, tuple[float, float]]:
    if n_boot <= 0:
        return {}
    items = sorted(per_item)
    return {m: bootstrap_ci([per_item[i][m] for i in items if m in per_item[i]], n_boot=n_boot, seed=seed,
                            method=method)
            for m in metrics}


def score_challenge(submission: Submission, gold: Gold, *, template: Submission | None = None,
                    allow_missing: bool = False, pair_scorer: PairScorer | None = None,
                    n_boot: int = 1000, seed: int = 0, ci_method: str = "percentile") -> ProtocolResult:
    """The VIST challenge protocol (see module docstring)."""
    scorer = pair_scorer or default_pair_scorer()
    signature = getattr(scorer, "signature", None)
    targets: list[SeqKey] = list(template.by_sequence()) if template is not None else list(gold.by_sequence)
    album_of: dict[str, str] = {}
    if template is not None:
        for e in template.entries:
            album_of.setdefault(seq_id(e.key), e.album_id)
    for k, a in gold.sequence_album.items():
        album_of.setdefault(seq_id(k), a)
    preds: dict[SeqKey, Any] = {}
    for e in submission.entries:
        preds.setdefault(e.key, e)  # the first story of a sequence counts
    target_set = set(targets)
    result = ProtocolResult(protocol="challenge", scores={}, per_item={}, per_album={},
                            allow_missing=allow_missing, n_items=len(targets),
                            extra=[seq_id(k) for k in preds if k not in target_set],
                            settings={"metric": "METEOR", "task": "hter", "aggregation": "max over references",
                                      "average": "template" if template is not None else "gold",
                                      "n_boot": n_boot, "seed": seed, "ci_method": ci_method,
                                      "task_version": TASK_VERSION})
    hyps: list[str] = []
    refs: list[str] = []
    owners: list[str] = []
    per_item: dict[str, dict[str, float]] = {}
    for k in targets:
        sid = seq_id(k)
        album_of.setdefault(sid, preds[k].album_id if k in preds else "")
        references = gold.by_sequence.get(k) or []
        if not references:
            result.no_gold.append(sid)
            continue
        e = preds.get(k)
        if e is None:
            result.missing.append(sid)
            if allow_missing:
                per_item[sid] = {"METEOR": 0.0}
            continue
        if e.error:
            result.errors[sid] = e.error
            if allow_missing:  # a failed sequence is scored as a missing one
                per_item[sid] = {"METEOR": 0.0}
            continue
        if not e.text.strip():
            result.n_empty += 1
            per_item[sid] = {"METEOR": 0.0}
            continue
        for r in references:
            hyps.append(e.text)
            refs.append(r)
            owners.append(sid)
    if hyps:
        values = list(scorer(hyps, refs))
        if len(values) != len(hyps):
            raise ValueError(f"pair scorer returned {len(values)} scores for {len(hyps)} pairs")
        best: dict[str, float] = {}
        for sid, v in zip(owners, values, strict=True):
            best[sid] = max(best.get(sid, float("-inf")), float(v))
        for sid, v in best.items():
            per_item[sid] = {"METEOR": v}
    order = {seq_id(k): i for i, k in enumerate(targets)}
    result.per_item = dict(sorted(per_item.items(), key=lambda kv: order[kv[0]]))
    result.n_scored = len(per_item)
    vals = [s["METEOR"] for s in result.per_item.values()]
    result.scores = {"METEOR": float(np.mean(vals)) if vals else 0.0}
    result.item_means = dict(result.scores)
    result.per_album = _album_means(result.per_item, album_of)
    result.ci = _cis(result.per_item, ["METEOR"], n_boot, seed, ci_method)
    if signature:
        result.signatures = {"METEOR": str(signature() if callable(signature) else signature)}
    return result


def score_album(submission: Submission, gold: Gold, *, template: Submission | None = None,
                allow_missing: bool = False, corpus_scorer: CorpusScorer | None = None,
                n_boot: int = 1000, seed: int = 0, ci_method: str = "percentile",
                meteor: str = DEFAULT_ALBUM_METEOR) -> ProtocolResult:
    """The album protocol of the AREL code base (see module docstring).

    ``meteor`` names the METEOR setting (:data:`ALBUM_METEOR`) recorded in the settings; it builds the
    default scorer, and a ``corpus_scorer`` given must have been built with the same setting.
    """
    check_album_meteor(meteor)
    scorer = corpus_scorer or default_corpus_scorer(meteor=meteor)
    gold_albums = gold.by_album()
    if template is not None:
        albums = list(dict.fromkeys(e.album_id for e in template.entries))
    else:
        albums = list(gold_albums)
    preds: dict[str, Any] = {}
    for e in submission.entries:
        preds.setdefault(e.album_id, e)  # the first story of an album is its prediction
    album_set = set(albums)
    result = ProtocolResult(protocol="album", scores={}, per_item={}, per_album={},
                            allow_missing=allow_missing, n_items=len(albums),
                            extra=[a for a in preds if a not in album_set],
                            settings={"metrics": list(ALBUM_METRICS), "prediction": "first story of the album",
                                      "references": "all stories of the album",
                                      "meteor": meteor, "meteor_jar": ALBUM_METEOR[meteor]["jar"], "n_boot": n_boot,
                                      "seed": seed, "ci_method": ci_method, "task_version": TASK_VERSION})
    hyps: dict[str, str] = {}
    refs: dict[str, list[str]] = {}
    for a in albums:
        references = gold_albums.get(a) or []
        if not references:
            result.no_gold.append(a)
            continue
        e = preds.get(a)
        if e is None:
            result.missing.append(a)
            if not allow_missing:
                continue
            text = ""
        elif e.error:
            result.errors[a] = e.error
            if not allow_missing:
                continue
            text = ""  # a failed album is scored as a missing one
        else:
            text = e.text
        if not text.strip():
            result.n_empty += 1 if e is not None and not e.error else 0
        hyps[a] = text
        refs[a] = list(references)
    per_item: dict[str, dict[str, float]] = {}
    if hyps:
        scores, raw_per_item, sigs = scorer(hyps, refs)
        per_item = _per_item(raw_per_item)
        result.scores = {metric_name(k): float(v) for k, v in scores.items()}
        result.signatures = {metric_name(k): str(v) for k, v in (sigs or {}).items()}
        for a, text in hyps.items():  # empty stories score 0 whatever the scorer says
            if not text.strip():
                per_item[a] = {m: 0.0 for m in result.scores}
    result.per_item = {a: per_item.get(a, {}) for a in hyps}
    result.n_scored = len(hyps)
    result.per_album = result.per_item
    result.item_means = {m: float(np.mean([d[m] for d in result.per_item.values() if m in d]))
                         for m in result.scores if any(m in d for d in result.per_item.values())}
    result.ci = _cis(result.per_item, list(result.scores), n_boot, seed, ci_method)
    return result


def score(protocol: str, submission: Submission, gold: Gold, **kwargs: Any) -> ProtocolResult:
    """Score under a named protocol (``challenge`` or ``album``)."""
    if protocol == "challenge":
        kwargs.pop("corpus_scorer", None)
        kwargs.pop("meteor", None)
        return score_challenge(submission, gold, **kwargs)
    if protocol == "album":
        kwargs.pop("pair_scorer", None)
        return score_album(submission, gold, **kwargs)
    raise ValueError(f"unknown protocol {protocol!r}; valid protocols: {', '.join(PROTOCOLS)}")


def compare(a: ProtocolResult, b: ProtocolResult, *, n_boot: int = 1000, seed: int = 0,
            ci_method: str = "percentile") -> dict[str, dict[str, float]]:
    """Paired bootstrap test per metric over the items both runs scored."""
    if a.protocol != b.protocol:
        raise ValueError("compare results of the same protocol")
    out: dict[str, dict[str, float]] = {}
    common = sorted(set(a.per_item) & set(b.per_item))
    for m in a.scores:
        items = [i for i in common if m in a.per_item[i] and m in b.per_item[i]]
        out[m] = paired_bootstrap([a.per_item[i][m] for i in items], [b.per_item[i][m] for i in items],
                                  n_boot=n_boot, seed=seed, method=ci_method)
    return out


def duplicate_sequences(submission: Submission) -> dict[str, int]:
    """Photo sequences with more than one story in ``submission``: ``{sequence id: number of stories}``."""
    return {seq_id(k): len(v) for k, v in submission.by_sequence().items() if len(v) > 1}


def require_unique_sequences(submission: Submission) -> None:
    """Refuse a submission with several stories for one photo sequence (which one would be scored?)."""
    dups = duplicate_sequences(submission)
    if dups:
        shown = ", ".join(f"{k} ({n} stories)" for k, n in list(dups.items())[:5])
        raise InputError(f"{len(dups)} photo sequence(s) have more than one story: {shown}"
                         f"{' ...' if len(dups) > 5 else ''}; a submission holds one story per sequence "
                         f"(see 'connote vist validate')", path=submission.path)


# --------------------------------------------------------------------------- scores stored in a run folder

#: Task name under which a storytelling run's scores are stored (the task of the run's ``results.json``).
SCORES_TASK = "vist-storytelling"


def score_signature(result: ProtocolResult, *, gold: str | Path, template: str | Path | None = None,
                    tokenize: str | None = None) -> dict[str, Any]:
    """What made ``result``'s numbers (hashed into the stored file's name): the protocol, the gold's and the
    template's sha256, missing-item handling, tokenisation and the protocol settings (metric, aggregation,
    task version, bootstrap resamples, seed and interval method). The submission is not part of it."""
    from connote.core.files import file_sha256

    return {"task": SCORES_TASK, "protocol": result.protocol, "gold_sha256": file_sha256(gold),
            "template_sha256": file_sha256(template) if template is not None else None,
            "allow_missing": result.allow_missing, "tokenize": tokenize, "settings": dict(result.settings)}


def store_scores(run: str | Path, result: ProtocolResult, *, submission: str | Path, gold: str | Path,
                 template: str | Path | None = None, tokenize: str | None = None) -> tuple[Path, str | None]:
    """Store ``result`` (with per-sequence scores, for the paired test) in ``run/scores/<protocol>-<key>.json``.

    Returns (path, note); the note says when an earlier file of the same signature was replaced
    (see :func:`connote.runs.scores.save_scores`).
    """
    from connote.core.files import file_sha256
    from connote.runs.scores import save_scores

    def identity(p: str | Path | None) -> dict[str, Any] | None:
        return None if p is None else {"path": str(Path(p).resolve()), "sha256": file_sha256(p)}

    sig = score_signature(result, gold=gold, template=template, tokenize=tokenize)
    fields = {"gold": identity(gold), "template": identity(template), **result.to_dict(per_item=True)}
    return save_scores(run, SCORES_TASK, result.protocol, sig, fields, source=identity(submission))


def result_from_stored(stored: Mapping[str, Any]) -> ProtocolResult:
    """A :class:`ProtocolResult` from a stored scores file (what :func:`compare` needs: scores, per-item)."""
    return ProtocolResult(protocol=str(stored["protocol"]), scores=dict(stored.get("scores") or {}),
                          per_item={str(k): dict(v) for k, v in (stored.get("per_item") or {}).items()},
                          per_album=dict(stored.get("per_album") or {}),
                          allow_missing=bool(stored.get("allow_missing")),
                          ci={k: tuple(v) for k, v in (stored.get("ci") or {}).items() if v},
                          settings=dict(stored.get("settings") or {}))
