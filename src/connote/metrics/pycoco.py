"""Drop-in replacements for pycocoevalcap's scorer classes (same ``compute_score(gts, res)``).

>>> from connote.metrics.pycoco import Bleu, Cider, Meteor, Rouge   # instead of pycocoevalcap's
>>> gts = {"1": ["a cat sits on a mat"]}; res = {"1": ["a cat sits on the mat"]}
>>> score, scores = Rouge().compute_score(gts, res)

Return values have pycocoevalcap's shapes: BLEU gives ``([b1..b4], [[per item]...])``, the others
``(corpus score, per-item scores)``; ``Cider`` returns a NumPy array of item scores as the original.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from connote.metrics._inputs import check_inputs
from connote.metrics.bleu import corpus_bleu
from connote.metrics.cider import DocumentFrequencies, corpus_cider
from connote.metrics.rouge import corpus_rouge_l


class Bleu:
    """pycocoevalcap ``Bleu(n)``."""

    def __init__(self, n: int = 4) -> None:
        self._n = n

    def compute_score(self, gts, res, verbose: int = 0) -> tuple[list[float], list[list[float]]]:
        _, hyps, refs = check_inputs(res, gts)
        corpus, items = corpus_bleu(hyps, refs, self._n)
        return corpus, [[it[k] for it in items] for k in range(self._n)]

    def method(self) -> str:
        return "Bleu"


class Rouge:
    """pycocoevalcap ``Rouge()`` (ROUGE-L)."""

    def compute_score(self, gts, res) -> tuple[float, np.ndarray]:
        _, hyps, refs = check_inputs(res, gts)
        mean, items = corpus_rouge_l(hyps, refs)
        return mean, np.array(items)

    def method(self) -> str:
        return "Rouge"


class Cider:
    """pycocoevalcap ``Cider()`` (CIDEr-D); ``document_frequencies`` fixes the IDF corpus."""

    def __init__(self, n: int = 4, sigma: float = 6.0, document_frequencies: DocumentFrequencies | None = None):
        self._n, self._sigma, self._df = n, sigma, document_frequencies

    def compute_score(self, gts, res) -> tuple[float, np.ndarray]:
        _, hyps, refs = check_inputs(res, gts)
        mean, items = corpus_cider(hyps, refs, n=self._n, sigma=self._sigma, document_frequencies=self._df)
        return mean, np.array(items)

    def method(self) -> str:
        return "CIDEr"


class Meteor:
    """pycocoevalcap ``Meteor()`` (``-l en -norm``, task rank) without a JVM; keyword arguments go to
    :class:`connote.metrics.meteor.Meteor` (e.g. ``task="hter"``)."""

    def __init__(self, **kwargs: Any) -> None:
        from connote.metrics.meteor import Meteor as _Meteor

        self._m = _Meteor(**kwargs)

    def compute_score(self, gts, res) -> tuple[float, list[float]]:
        from connote.metrics.meteor.metric import pycoco_meteor_inputs

        _, hyps, refs = check_inputs(res, gts)
        return self._m.corpus(*pycoco_meteor_inputs(hyps, refs))

    def method(self) -> str:
        return "METEOR"
