r"""Metaphor concept metrics ACS and ACD (video metaphor captioning).

A metaphor caption follows "<primary concept> is as <property> as <secondary concept>". The caption
is split into its two concepts; their similarity CS is the cosine of their sentence embeddings
(CS = 1 when a concept is missing). Over a set of predictions:

* ACS = mean CS (lower: the model relates more distant concepts);
* ACD = mean of BERTScore-F1(prediction) x (1 - CS) (distance that still describes the video).

Three splits, named in the signature (``concept_split``):

* ``notebook`` (default): exactly the authors' evaluation notebook (``scripts/video/eval/analyze_captions.ipynb``
  of abisekrk/video-metaphor-captioning), which produced Table 1: ``re.split(r"as \w+ as", caption)``, empty
  parts dropped after stripping; fewer than two parts -> CS = 1; otherwise the primary concept is the first
  part without its last word (whatever it is) and the secondary concept is the second part (any further part
  is ignored). Its quirks are kept: the pattern matches inside words ("was"/"bananas" end in "as"), a
  hyphenated property does not match ``\w+``, and a one-word first part leaves an empty primary concept,
  which is still embedded (:func:`notebook_concepts`).
* ``public``: connote's earlier token reading of that code (``split_concepts(caption)``): the property is the
  single word between the tokens "as ... as", and one trailing "is"/"are" is dropped from the primary concept.
* ``improved`` (``split_concepts(caption, improved=True)``): also multi-word properties ("as power - packed
  as" -> property "power - packed"), case and surrounding punctuation ignored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from connote.metrics.options import opt

_TRAILING = ("is", "are")
_NOTEBOOK = re.compile(r"as \w+ as")
CONCEPT_SPLITS = ("notebook", "public", "improved")
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


def notebook_concepts(caption: str) -> tuple[str, str] | None:
    """(primary, secondary) as the authors' notebook splits ``caption``; None where it gives CS = 1.

    >>> notebook_concepts("the athlete is as strong as an ox")
    ('the athlete', 'an ox')
    >>> notebook_concepts("it was fun as ever")  # "as fun as" matches inside "was": parts "it w", "ever"
    ('it', 'ever')
    >>> notebook_concepts("bananas as big as melons")  # a one-word first part: the primary concept is empty
    ('', 'melons')
    >>> notebook_concepts("the car is as power-packed as a rocket") is None
    True
    """
    parts = [part.strip() for part in _NOTEBOOK.split(caption) if part.strip()]
    if len(parts) < 2:
        return None
    return " ".join(parts[0].split()[:-1]), parts[1]


def _pairs(captions: Sequence[str], split: str) -> list[tuple[str, str] | None]:
    if split == "notebook":
        return [notebook_concepts(c) for c in captions]
    if split not in CONCEPT_SPLITS:
        raise ValueError(f"unknown concept split {split!r}; valid: {', '.join(CONCEPT_SPLITS)}")
    out: list[tuple[str, str] | None] = []
    for c in captions:
        p = split_concepts(c, split == "improved")
        out.append((p.primary, p.secondary) if p.primary and p.secondary else None)
    return out


def _embed(encoder: Any, texts: list[str]) -> np.ndarray:
    fn = getattr(encoder, "embed_texts", None) or getattr(encoder, "encode", None) or encoder
    vecs = np.asarray(fn(texts), dtype=np.float64)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms == 0, 1.0, norms)


def concept_similarities(captions: Sequence[str], encoder: Any, *, improved: bool = False,
                         split: str | None = None) -> list[float]:
    """CS per caption: cosine between primary and secondary concept embeddings (1 if one is missing).

    ``encoder``: an :class:`~connote.models.protocols.Embedder` (``embed_texts``), a
    sentence-transformers model (``encode``) or a callable texts -> (n, d) array. ``split``: one of
    :data:`CONCEPT_SPLITS` (default ``notebook``; ``improved=True`` without ``split`` is ``improved``).
    """
    split = split or ("improved" if improved else "notebook")
    todo = [(i, p[0], p[1]) for i, p in enumerate(_pairs(captions, split)) if p is not None]
    out = [1.0] * len(captions)
    if todo:
        emb = _embed(encoder, [t[1] for t in todo] + [t[2] for t in todo])
        a, b = emb[: len(todo)], emb[len(todo):]
        cos = (a * b).sum(axis=1)
        for (i, _, _), c in zip(todo, cos.tolist()):
            out[i] = float(c)
    return out


def acs_acd(captions: Sequence[str], bertscore_f1: Sequence[float], encoder: Any, *,
            improved: bool = False, split: str | None = None) -> dict[str, Any]:
    """ACS and ACD over predictions, with the per-caption CS.

    ``bertscore_f1``: BERTScore-F1 of each prediction against its references (see
    :mod:`connote.metrics.bertscore`).
    """
    if len(captions) != len(bertscore_f1):
        raise ValueError("captions and BERTScore values differ in length")
    cs = concept_similarities(captions, encoder, improved=improved, split=split)
    n = max(len(cs), 1)
    acs = sum(cs) / n
    acd = sum(f * (1.0 - c) for f, c in zip(bertscore_f1, cs)) / n
    return {"ACS": acs, "ACD": acd, "CS": cs}


def signature(encoder: Any, improved: bool | str) -> str:
    """Settings that change ACS/ACD (``improved``: the split's name, or the earlier bool)."""
    from connote import __version__

    desc = getattr(encoder, "describe", None)
    name = desc().get("name", type(encoder).__name__) if callable(desc) else type(encoder).__name__
    split = improved if isinstance(improved, str) else ("improved" if improved else "public")
    return (f"acs_acd|split:{split}|encoder:{name}|missing:cs=1"
            f"|version:connote-{__version__}")


@dataclass(frozen=True)
class ConceptOptions:
    """Options of the ``acs_acd`` metric (BERTScore's options also apply: ACD weighs by its F1)."""

    concept_encoder: Any = opt(None, "sentence encoder (an Embedder, a sentence-transformers model or a callable)")
    concept_split: Literal["notebook", "public", "improved"] = opt(
        "notebook", "notebook (the authors' evaluation notebook, quirks included), public (connote's earlier "
                    "token split) or improved")
    bertscore_f1: Any = opt(None, "precomputed BERTScore-F1 of each caption, {id: F1} (else computed with "
                                  "bertscore_model)")


def _given_f1(given: Any, ids: Sequence[str]) -> list[float]:
    """The precomputed F1 of each item, by id: a list would pair values with items by position, which nothing
    can check (the items come in the references' order)."""
    from collections.abc import Mapping

    from connote.metrics.options import OptionError

    if not isinstance(given, Mapping):
        raise OptionError(f"option bertscore_f1: expected {{id: BERTScore-F1}} for every item, got "
                          f"{type(given).__name__} (values by position cannot be matched to the items)")
    by_id = {str(k): v for k, v in given.items()}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise OptionError(f"option bertscore_f1: no value for id(s) {', '.join(repr(i) for i in missing[:10])}")
    return [float(by_id[i]) for i in ids]


def compute(inp: Any, options: ConceptOptions):
    """``compute_scores(..., ["acs_acd"], concept_encoder=..., bertscore_model=...)``."""
    from connote.metrics.bertscore import BERTScoreOptions, scorer_from_settings
    from connote.metrics.options import parse_options
    from connote.metrics.registry import MetricOutput

    encoder = options.concept_encoder
    if encoder is None:
        raise ValueError("ACS/ACD need concept_encoder=<Embedder or sentence-transformers model>")
    split = options.concept_split
    if options.bertscore_f1 is not None:
        f1, bsig = _given_f1(options.bertscore_f1, inp.ids), "given"
    else:
        scorer = scorer_from_settings(parse_options(BERTScoreOptions, inp.settings))
        f1, bsig = scorer.score(inp.hyps, inp.refs).f1, scorer.signature()
    out = acs_acd(inp.hyps, list(f1), encoder, split=split)
    per = {i: {"CS": c} for i, c in zip(inp.ids, out["CS"])}
    sig = f"{signature(encoder, split)}|tok:{inp.tok_tag()}|f1:[{bsig}]"
    return MetricOutput({"ACS": out["ACS"], "ACD": out["ACD"]}, per, sig, [])
