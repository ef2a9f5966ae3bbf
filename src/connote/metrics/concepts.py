"""Metaphor concept metrics ACS and ACD (video metaphor captioning).

A metaphor caption follows "<primary concept> is as <property> as <secondary concept>". The caption
is split into its two concepts; their similarity CS is the cosine of their sentence embeddings
(CS = 1 when a concept is missing). Over a set of predictions:

* ACS = mean CS (lower: the model relates more distant concepts);
* ACD = mean of BERTScore-F1(prediction) x (1 - CS) (distance that still describes the video).

``split_concepts(caption, improved=False)`` follows the public code: the property is the single
word between "as ... as", and a trailing "is"/"are" is dropped from the primary concept.
``improved=True`` also accepts multi-word properties ("as power - packed as", "as light as a
feather" -> property "power - packed"), ignores case and surrounding punctuation; it is switchable
because it changes ACS/ACD for such captions, and the signature records which split was used.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from connote.metrics.options import opt

_TRAILING = ("is", "are")
_IMPROVED = re.compile(r"^(?P<primary>.*?)\bas\s+(?P<property>.+?)\s+as\b(?P<secondary>.*)$", re.I | re.S)


@dataclass
class Concepts:
    """The parts of a metaphor caption; ``None`` where the template was not found."""

    primary: str | None
    property: str | None
    secondary: str | None


def _strip_trailing_copula(words: list[str]) -> list[str]:
    while words and words[-1].lower() in _TRAILING:
        words = words[:-1]
        break  # only one trailing "is"/"are", as the public code
    return words


def split_concepts(caption: str, improved: bool = False) -> Concepts:
    """Split "<primary> is as <property> as <secondary>" into its concepts.

    >>> split_concepts("the athlete is as strong as an ox")
    Concepts(primary='the athlete', property='strong', secondary='an ox')
    >>> split_concepts("the car is as power - packed as a rocket").secondary is None
    True
    >>> split_concepts("the car is as power - packed as a rocket", improved=True).property
    'power - packed'
    """
    if improved:
        m = _IMPROVED.match(caption.strip())
        if not m:
            return Concepts(None, None, None)
        primary = " ".join(_strip_trailing_copula(m.group("primary").split())).strip(" ,.;:!?") or None
        secondary = m.group("secondary").strip().strip(" ,.;:!?") or None
        return Concepts(primary, m.group("property").strip(), secondary)
    words = caption.split()
    for i, w in enumerate(words):
        if w == "as" and i + 2 < len(words) and words[i + 2] == "as":
            primary = " ".join(_strip_trailing_copula(words[:i])) or None
            secondary = " ".join(words[i + 3:]) or None
            return Concepts(primary, words[i + 1], secondary)
    return Concepts(None, None, None)


def _embed(encoder: Any, texts: list[str]) -> np.ndarray:
    fn = getattr(encoder, "embed_texts", None) or getattr(encoder, "encode", None) or encoder
    vecs = np.asarray(fn(texts), dtype=np.float64)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms == 0, 1.0, norms)


def concept_similarities(captions: Sequence[str], encoder: Any, *, improved: bool = False) -> list[float]:
    """CS per caption: cosine between primary and secondary concept embeddings (1 if one is missing).

    ``encoder``: an :class:`~connote.models.protocols.Embedder` (``embed_texts``), a
    sentence-transformers model (``encode``) or a callable texts -> (n, d) array.
    """
    parts = [split_concepts(c, improved) for c in captions]
    todo = [(i, p.primary, p.secondary) for i, p in enumerate(parts) if p.primary and p.secondary]
    out = [1.0] * len(captions)
    if todo:
        emb = _embed(encoder, [t[1] for t in todo] + [t[2] for t in todo])
        a, b = emb[: len(todo)], emb[len(todo):]
        cos = (a * b).sum(axis=1)
        for (i, _, _), c in zip(todo, cos.tolist()):
            out[i] = float(c)
    return out


def acs_acd(captions: Sequence[str], bertscore_f1: Sequence[float], encoder: Any, *,
            improved: bool = False) -> dict[str, Any]:
    """ACS and ACD over predictions, with the per-caption CS.

    ``bertscore_f1``: BERTScore-F1 of each prediction against its references (see
    :mod:`connote.metrics.bertscore`).
    """
    if len(captions) != len(bertscore_f1):
        raise ValueError("captions and BERTScore values differ in length")
    cs = concept_similarities(captions, encoder, improved=improved)
    n = max(len(cs), 1)
    acs = sum(cs) / n
    acd = sum(f * (1.0 - c) for f, c in zip(bertscore_f1, cs)) / n
    return {"ACS": acs, "ACD": acd, "CS": cs}


def signature(encoder: Any, improved: bool) -> str:
    """Settings that change ACS/ACD."""
    from connote import __version__

    desc = getattr(encoder, "describe", None)
    name = desc().get("name", type(encoder).__name__) if callable(desc) else type(encoder).__name__
    return (f"acs_acd|split:{'improved' if improved else 'public'}|encoder:{name}|missing:cs=1"
            f"|version:connote-{__version__}")


@dataclass(frozen=True)
class ConceptOptions:
    """Options of the ``acs_acd`` metric (BERTScore's options also apply: ACD weighs by its F1)."""

    concept_encoder: Any = opt(None, "sentence encoder (an Embedder, a sentence-transformers model or a callable)")
    concept_split: Literal["public", "improved"] = opt("public", "public (the paper's code) or improved")
    bertscore_f1: Any = opt(None, "precomputed BERTScore-F1 per caption (else computed with bertscore_model)")


def compute(inp: Any, options: ConceptOptions):
    """``compute_scores(..., ["acs_acd"], concept_encoder=..., bertscore_model=...)``."""
    from connote.metrics.bertscore import BERTScoreOptions, scorer_from_settings
    from connote.metrics.options import parse_options
    from connote.metrics.registry import MetricOutput

    encoder = options.concept_encoder
    if encoder is None:
        raise ValueError("ACS/ACD need concept_encoder=<Embedder or sentence-transformers model>")
    improved = options.concept_split == "improved"
    f1 = options.bertscore_f1
    bsig = "given"
    if f1 is None:
        scorer = scorer_from_settings(parse_options(BERTScoreOptions, inp.settings))
        f1 = scorer.score(inp.hyps, inp.refs).f1
        bsig = scorer.signature()
    out = acs_acd(inp.hyps, list(f1), encoder, improved=improved)
    per = {i: {"CS": c} for i, c in zip(inp.ids, out["CS"])}
    return MetricOutput({"ACS": out["ACS"], "ACD": out["ACD"]}, per, f"{signature(encoder, improved)}|f1:[{bsig}]",
                        [])
