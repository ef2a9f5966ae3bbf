"""One label per item and question from several annotators: the papers' majority, or a reliability model.

* ``majority`` (the default, the papers' rule): the answer most annotators gave; a tie gives no label. Its
  ``posterior`` is the share of votes.
* ``dawid-skene``: Dawid and Skene (1979), each annotator's confusion matrix and the labels' prior learned
  by EM (``crowdkit.aggregation.DawidSkene``); the posterior is the model's probability of each label.
* ``mace``: MACE (Hovy et al. 2013), each annotator's probability of answering knowingly rather than
  spamming (``crowdkit.aggregation.MACE``, seeded); posterior as above.

The models also give each annotator's estimated reliability (Dawid-Skene: the probability of answering
the true label, weighted by the prior; MACE: the probability of knowing), reported beside their gold
accuracy. Only the answers of annotators the study's rule keeps go in.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Mapping
from typing import Any

from connote.core.errors import InputError
from connote.core.registry import require

METHODS = ("majority", "dawid-skene", "mace")

#: item -> rater -> label, for one question
Units = Mapping[str, Mapping[str, str]]


def majority(units: Units) -> dict[str, dict[str, Any]]:
    """item -> {label (None on a tie), posterior (vote shares), votes}."""
    out = {}
    for iid, by in units.items():
        votes = Counter(by.values())
        if not votes:
            continue
        ranked = votes.most_common()
        label = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
        total = sum(votes.values())
        out[iid] = {"label": label, "posterior": {v: round(n / total, 6) for v, n in sorted(votes.items())},
                    "votes": dict(sorted(votes.items()))}
    return out


def _frame(units: Units) -> Any:
    import pandas as pd

    rows = [(iid, rater, label) for iid, by in units.items() for rater, label in sorted(by.items())]
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def model(units: Units, method: str, seed: int = 0) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
    """(item -> {label, posterior, votes}, annotator -> estimated reliability) from a crowd-kit model."""
    require("crowdkit", "collect")
    from crowdkit.aggregation import MACE, DawidSkene

    data = _frame(units)
    if data.empty:
        return {}, {}
    with warnings.catch_warnings():  # crowd-kit's pandas calls warn of pandas' own deprecations, not of the data
        warnings.simplefilter("ignore")
        fitted = DawidSkene(n_iter=100).fit(data) if method == "dawid-skene" else MACE(random_state=seed).fit(data)
    if method == "dawid-skene":
        prior = fitted.priors_
        reliability = {str(w): float(sum(prior[k] * fitted.errors_.loc[(w, k), k] for k in prior.index
                                         if (w, k) in fitted.errors_.index))
                       for w in data["worker"].unique()}
    else:
        import pandas as pd

        # column 1 of spamming_ weighs the "answers the true label" branch of MACE's likelihood: knowing
        workers = pd.factorize(data["worker"])[1]
        reliability = {str(w): float(fitted.spamming_[k, 1]) for k, w in enumerate(workers)}
    probas = fitted.probas_
    out = {}
    for iid, by in units.items():
        if iid not in probas.index:
            continue
        row = probas.loc[iid]
        posterior = {str(v): round(float(p), 6) for v, p in sorted(row.items()) if p == p}
        best = max(posterior.values())
        tops = [v for v, p in posterior.items() if p == best]
        out[iid] = {"label": tops[0] if len(tops) == 1 else None, "posterior": posterior,
                    "votes": dict(sorted(Counter(by.values()).items()))}
    return out, {w: round(r, 6) for w, r in sorted(reliability.items())}


def aggregate(units: Units, method: str = "majority", seed: int = 0) -> tuple[dict[str, dict[str, Any]],
                                                                              dict[str, float]]:
    """Aggregate one question's answers by ``method`` (see the module docs); returns the per-item labels and,
    for a model, each annotator's estimated reliability."""
    if method not in METHODS:
        raise InputError(f"--aggregate must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "majority":
        return majority(units), {}
    return model(units, method, seed)
