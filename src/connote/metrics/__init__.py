"""Caption metrics without Java: BLEU, METEOR 1.5, ROUGE-L, CIDEr-D, BERTScore, ACS/ACD, CLIPScore.

The functional core is :func:`compute_scores` (the same dictionaries pycocoevalcap takes, the same
score names and numbers); thin classes sit on top (:class:`~connote.metrics.meteor.Meteor`,
:class:`~connote.metrics.bertscore.BERTScorer`, ...). Every result carries a signature per metric
naming every setting that changes the number. Metrics are registered in
:mod:`connote.metrics.registry` (with the table of score names); each declares typed options
(:mod:`connote.metrics.options`).

Names are imported on first use, so ``import connote.metrics`` costs nothing and a command loads only
the metrics it computes.

>>> from connote.metrics import compute_scores
>>> r = compute_scores({"1": "a dog runs"}, {"1": ["a dog runs", "the dog is running"]}, ["bleu", "rouge_l"])
>>> sorted(r.scores)
['Bleu_1', 'Bleu_2', 'Bleu_3', 'Bleu_4', 'ROUGE_L']
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "METRICS": "connote.metrics.registry",
    "DEFAULT_METRICS": "connote.metrics.registry",
    "SCORE_NAMES": "connote.metrics.registry",
    "display_name": "connote.metrics.registry",
    "ScoreResult": "connote.metrics._core",
    "compute_scores": "connote.metrics._core",
    "OptionError": "connote.metrics.options",
    "corpus_bleu": "connote.metrics.bleu",
    "corpus_cider": "connote.metrics.cider",
    "DocumentFrequencies": "connote.metrics.cider",
    "Meteor": "connote.metrics.meteor",
    "corpus_rouge_l": "connote.metrics.rouge",
    "ptb_tokenize": "connote.metrics.tokenize",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'connote.metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
