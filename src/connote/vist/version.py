"""The VIST task's one version: in the storytelling task's generation fingerprint
(:attr:`connote.vist.task.StorytellingTask.version`) and in every stored score signature
(:mod:`connote.vist.protocols`); ``connote.vist.TASK_VERSION`` is the same number.

Bumped whenever a default number of the task changes:

2: errored sequences make a score incomplete (exit 1), bootstrap intervals from ``scipy.stats.bootstrap``
(same percentile numbers for the same seed), the baseline's encoder reads the photos in reverse,
+Grounded from training text and a captioner, the correlation study's default measures are the paper's
(METEOR, smoothed BLEU, MiniLM cosine) with Kendall's tau beside Pearson and Spearman. (Generation rows were
stored as version 1 before the two numbers became one: such run folders are still reported, and a rerun in
one computes its stories again.)
"""

VERSION = 2
