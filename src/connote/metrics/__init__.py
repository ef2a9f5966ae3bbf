"""Caption metrics without Java: BLEU, METEOR 1.5, ROUGE-L, CIDEr-D, BERTScore, ACS/ACD, CLIPScore.

The functional core is :func:`compute_scores` (the same dictionaries pycocoevalcap takes, the same
score names and numbers); thin classes sit on top (:class:`~connote.metrics.meteor.Meteor`,
:class:`~connote.metrics.bertscore.BERTScorer`, ...). Every result carries a signature per metric
naming every setting that changes the number.

>>> from connote.metrics import compute_scores
>>> r = compute_scores({"1": "a dog runs"}, {"1": ["a dog runs", "the dog is running"]}, ["bleu", "rouge_l"])
>>> sorted(r.scores)
['Bleu_1', 'Bleu_2', 'Bleu_3', 'Bleu_4', 'ROUGE_L']
"""

from connote.metrics._core import DEFAULT_METRICS, METRICS, ScoreResult, compute_scores
from connote.metrics.bleu import corpus_bleu
from connote.metrics.cider import DocumentFrequencies, corpus_cider
from connote.metrics.meteor import Meteor
from connote.metrics.rouge import corpus_rouge_l
from connote.metrics.tokenize import ptb_tokenize

__all__ = [
    "METRICS",
    "DEFAULT_METRICS",
    "ScoreResult",
    "compute_scores",
    "corpus_bleu",
    "corpus_rouge_l",
    "corpus_cider",
    "DocumentFrequencies",
    "Meteor",
    "ptb_tokenize",
]
