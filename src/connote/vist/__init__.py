"""Visual storytelling (VIST): data, validation, the two scoring protocols, analysis and baselines.

Submodules (import what you need; heavy dependencies load lazily):

* :mod:`connote.vist.data` -- official SIS/DII/DIS files and the challenge format;
* :mod:`connote.vist.validate` -- submission validation against the challenge template;
* :mod:`connote.vist.protocols` -- ``challenge`` and ``album`` scoring, bootstrap intervals and tests;
* :mod:`connote.vist.stats` -- the paper's Table 2 and Table 3 (NPMI);
* :mod:`connote.metrics.correlation` -- metric vs human-rating correlation;
* :mod:`connote.vist.construct` -- album filters, anonymisation, 80/10/10 split;
* :mod:`connote.vist.seq2seq` -- the paper's GRU baseline with its decoding heuristics;
* :mod:`connote.vist.generators` -- story generators for photo sequences and ``generate``.
"""

from connote.vist.data import (
    Album,
    Gold,
    Image,
    PhotoSequence,
    Problem,
    Story,
    Storylet,
    Submission,
    SubmissionEntry,
    VistFile,
    read_gold,
    read_official,
    read_submission,
    seq_id,
)

TASK_VERSION = 2
"""Version of the VIST task's numbers; bumped whenever a default number changes.

2: errored sequences make a score incomplete (exit 1), bootstrap intervals from ``scipy.stats.bootstrap``
(same percentile numbers for the same seed), the baseline's encoder reads the photos in reverse,
+Grounded from training text and a captioner, the correlation study's default measures are the paper's
(METEOR, smoothed BLEU, MiniLM cosine) with Kendall's tau beside Pearson and Spearman.
"""

__all__ = ["TASK_VERSION", "Album", "Gold", "Image", "PhotoSequence", "Problem", "Story", "Storylet", "Submission",
           "SubmissionEntry", "VistFile", "read_gold", "read_official", "read_submission", "seq_id"]
