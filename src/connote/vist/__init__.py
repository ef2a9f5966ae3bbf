"""Visual storytelling (VIST): data, validation, the two scoring protocols, analysis and baselines.

Submodules (import what you need; heavy dependencies load lazily):

* :mod:`connote.vist.data` -- official SIS/DII/DIS files;
* :mod:`connote.vist.challenge` -- the challenge format (submissions, template, AREL predictions) and gold;
* :mod:`connote.vist.validate` -- submission validation against the challenge template;
* :mod:`connote.vist.protocols` -- ``challenge`` and ``album`` scoring, bootstrap intervals and tests;
* :mod:`connote.vist.stats` -- the paper's Table 2 and Table 3 (NPMI);
* :mod:`connote.metrics.correlation` -- metric vs human-rating correlation;
* :mod:`connote.vist.construct` -- album filters, anonymisation, 80/10/10 split;
* :mod:`connote.vist.seq2seq` -- the paper's GRU baseline with its decoding heuristics;
* :mod:`connote.vist.generators` -- story generators for photo sequences and ``generate``.
"""

from connote.vist.challenge import Gold, Submission, SubmissionEntry, read_gold, read_submission
from connote.vist.data import Album, Image, PhotoSequence, Problem, Story, Storylet, VistFile, read_official, seq_id
from connote.vist.version import VERSION as TASK_VERSION  # the task's one version (history in vist/version.py)

__all__ = ["TASK_VERSION", "Album", "Gold", "Image", "PhotoSequence", "Problem", "Story", "Storylet", "Submission",
           "SubmissionEntry", "VistFile", "read_gold", "read_official", "read_submission", "seq_id"]
