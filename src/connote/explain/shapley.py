"""Shapley value estimators over a model-agnostic value function of a feature mask.

A *game* is a value function ``value_fn(masks) -> values``: ``masks`` is a boolean array of shape
``(m, n)`` (``True`` = the feature is present, ``False`` = masked) and the function returns ``m`` floats.
The function is always called with many masks at once so that a model backend can evaluate the masked
variants in large batches; the number of *model calls* is the number of mask rows evaluated.

Five estimators are registered in :data:`ESTIMATORS`:

``exact``
    Enumerates all ``2**n`` coalitions (``n <= 20``). Zero estimator error.
``permutation``
    Antithetic permutation sampling, the MM-SHAP setting (shap's ``PermutationExplainer``): each
    sampled permutation is walked forward (adding features) and backward (removing them in the same
    order). ``n_permutations=10`` costs ``2 + 20 * (n - 1)`` calls here (shap's count is about
    ``20 * (n + 1)`` because it re-evaluates the empty and full coalitions). A forward/backward pair
    is exact for games without interactions of order three or more.
``adaptive`` (the default, :data:`DEFAULT_ESTIMATOR`)
    Antithetic permutations taken as rows of random Latin squares (``sampling="latin"``: every row a
    uniform permutation, so unbiased; positions balanced across a square's rows, so a lower error than
    independent permutations at the same calls), drawn in rounds until the expected absolute error of a
    target statistic (e.g. T-SHAP) is below ``tolerance``, capped by the budget (default: 20
    permutations' calls, about twice the MM-SHAP setting's). Where fewer permutations reach the target
    accuracy, it stops early.
``stratified``
    ``adaptive`` with the permutations drawn in position-stratified pairs: the second permutation
    of a pair swaps the first one's quarters (``B1 B0 B3 B2``, each reshuffled), so every feature is
    seen once near the ends and once near the middle, and the pair shares one coalition per walk
    direction (2 calls fewer). Unbiased; lower per-feature error than independent pairs at the same
    calls, but not reliably a lower T-SHAP error (``docs/explain.md``), so it is not the default.
``kernel``
    Paired KernelSHAP with the efficiency constraint: coalition sizes whose share of the budget
    covers all their coalitions are enumerated completely (smallest and largest first), the rest is
    sampled in complementary pairs without re-evaluating duplicates, and the Shapley values solve the
    constrained weighted least-squares problem whose exact solution is the Shapley value.
    ``sampling="leverage"`` samples coalition sizes uniformly instead (Leverage SHAP style).
    With ``budget >= 2**n`` it is exact. In ``benchmarks/shapley.py`` it beats permutation sampling
    in per-feature error at n = 14 but not in T-SHAP error, and at n = 28 in neither, on the default
    benchmark model (see ``docs/explain.md``).

All estimators return a :class:`ShapleyResult` whose values sum to ``full - base`` (exactly, up to
rounding) and carry a per-feature standard error together with
bootstrap replicates, so any derived statistic (e.g. T-SHAP) gets an error estimate too
(:meth:`ShapleyResult.se_of`, small-sample corrected for permutation estimators).

>>> import numpy as np
>>> weights = np.array([1.0, 2.0, 3.0])
>>> game = lambda masks: masks.astype(float) @ weights
>>> estimate(game, 3, estimator="exact").values.tolist()
[1.0, 2.0, 3.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from connote.core.registry import Registry

ValueFn = Callable[[np.ndarray], np.ndarray]

#: Largest ``n`` the exact estimator accepts (``2**20`` model calls).
MAX_EXACT_FEATURES = 20
#: Estimator used when none is named.
DEFAULT_ESTIMATOR = "adaptive"
#: The adaptive estimator inflates its error estimate by t(P-1) / z at this quantile, so a small
#: number of permutations (an unreliable spread) is not taken at face value.
CONFIDENCE = 0.95
#: Bootstrap replicates drawn for the error estimate.
DEFAULT_BOOTSTRAP = 200
#: Permutation design of the ``adaptive`` estimator (``"latin"`` or ``"independent"``).
ADAPTIVE_SAMPLING = "latin"
#: The ``adaptive`` estimator's default call cap, in antithetic permutations.
ADAPTIVE_CAP_PERMUTATIONS = 20


class BudgetError(ValueError):
    """The call budget is too small for the estimator (the message says the minimum)."""


class Estimator(Protocol):
    """Signature shared by every registered estimator."""

    def __call__(self, value_fn: ValueFn, n_features: int, *, budget: int | None = None,
                 seed: int = 0, batch_size: int | None = None, **options: Any) -> ShapleyResult: ...


@dataclass
class ShapleyResult:
    """Estimated Shapley values of one game and what they cost.

    Attributes:
        values: ``(n,)`` Shapley value per feature.
        base: value with every feature masked, ``v(empty)``.
        full: value with no feature masked, ``v(all)``.
        calls: mask rows evaluated (model calls).
        error_estimate: ``(n,)`` standard error per feature (zeros for exact enumeration, ``inf``
            where the budget gave too few samples to estimate it).
        estimator: registered name of the estimator.
        budget: the call cap the estimator ran under (``None``: its own default).
        replicates: ``(B, n)`` bootstrap replicates of ``values`` (``None`` for exact results); the
            spread of any statistic over them is its standard error, see :meth:`se_of`.
        info: estimator-specific details (permutations drawn, sizes enumerated, ...).
    """

    values: np.ndarray
    base: float
    full: float
    calls: int
    error_estimate: np.ndarray
    estimator: str
    budget: int | None = None
    replicates: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        return int(self.values.shape[0])

    @property
    def error(self) -> float:
        """Overall standard error: root mean square of the per-feature standard errors."""
        if self.error_estimate.size == 0:
            return 0.0
        return float(np.sqrt(np.mean(np.square(self.error_estimate))))

    @property
    def efficiency_gap(self) -> float:
        """``sum(values) - (full - base)``; zero up to rounding for the built-in estimators."""
        return float(np.sum(self.values) - (self.full - self.base))

    def se_of(self, statistic: Callable[[np.ndarray], float]) -> float:
        """Standard error of ``statistic(values)`` from the bootstrap replicates.

        For permutation estimators (``info["resampled_units"] = P`` permutations resampled) the
        bootstrap spread is scaled by ``sqrt(P / (P - 1))``, the small-sample correction of the
        bootstrap of a mean. Exact results return ``0.0``; results without replicates (too few
        samples) return ``inf``.
        """
        if self.estimator == "exact" or float(np.max(self.error_estimate, initial=0.0)) == 0.0:
            return 0.0
        if self.replicates is None or len(self.replicates) < 2:
            return math.inf
        stats = _over_rows(statistic, self.replicates)
        stats = stats[np.isfinite(stats)]
        if stats.size < 2:
            return math.inf
        # the bootstrap spread of a mean of P resampled units understates its standard error by
        # sqrt((P - 1) / P) (a factor 0.71 at P = 2); undo that so the s.e. is calibrated
        units = int(self.info.get("resampled_units", 0) or 0)
        scale = math.sqrt(units / (units - 1)) if units > 1 else 1.0
        return float(np.std(stats, ddof=1)) * scale


ESTIMATORS: Registry[Estimator] = Registry("shapley estimator")


def _over_rows(statistic: Callable[[np.ndarray], Any], rows: np.ndarray) -> np.ndarray:
    """``statistic`` of every row: one call on the whole ``(B, n)`` array when the statistic says it
    takes one (``statistic.rows = True``: returns ``(B,)``), else one call per row."""
    if getattr(statistic, "rows", False):
        return np.asarray(statistic(rows), dtype=float).reshape(-1)
    return np.array([statistic(r) for r in rows], dtype=float)


class _Game:
    """Wraps a value function: counts calls, enforces the budget, evaluates in chunks."""

    def __init__(self, value_fn: ValueFn, n: int, budget: int | None, batch_size: int | None) -> None:
        self.value_fn = value_fn
        self.n = n
        self.budget = budget
        self.batch_size = batch_size
        self.calls = 0

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        masks = np.ascontiguousarray(masks, dtype=bool)
        if masks.ndim != 2 or masks.shape[1] != self.n:
            raise ValueError(f"masks must have shape (m, {self.n}), got {masks.shape}")
        m = masks.shape[0]
        if self.budget is not None and self.calls + m > self.budget:  # pragma: no cover - internal guard
            raise BudgetError(f"internal: {self.calls + m} calls would exceed the budget {self.budget}")
        step = self.batch_size or max(m, 1)
        out = []
        for start in range(0, m, step):
            chunk = masks[start:start + step]
            vals = np.asarray(self.value_fn(chunk), dtype=float).reshape(-1)
            if vals.shape[0] != chunk.shape[0]:
                raise ValueError(
                    f"value_fn returned {vals.shape[0]} values for {chunk.shape[0]} masks"
                )
            out.append(vals)
        self.calls += m
        return np.concatenate(out) if out else np.zeros(0)


def _check_common(n_features: int, budget: int | None, batch_size: int | None) -> None:
    if n_features < 0:
        raise ValueError(f"n_features must be >= 0, got {n_features}")
    if budget is not None and budget < 2:
        raise BudgetError(f"budget {budget} is too small: every estimator needs >= 2 calls (base, full)")
    if batch_size is not None and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")


def _ends(game: _Game, n: int) -> tuple[float, float]:
    both = np.zeros((2, n), dtype=bool)
    both[1] = True
    vals = game(both)
    return float(vals[0]), float(vals[1])


def _trivial(game: _Game, n: int, name: str, budget: int | None) -> ShapleyResult | None:
    """Games with 0 or 1 features need no estimation."""
    if n > 1:
        return None
    base, full = _ends(game, n)
    values = np.full(n, full - base)
    return ShapleyResult(values, base, full, game.calls, np.zeros(n), name, budget, None, {})


# --------------------------------------------------------------------------------------- exact


def all_masks(n: int) -> np.ndarray:
    """All ``2**n`` masks; row ``k`` is the binary expansion of ``k`` (feature ``i`` = bit ``i``)."""
    idx = np.arange(2**n, dtype=np.int64)
    return ((idx[:, None] >> np.arange(n, dtype=np.int64)) & 1).astype(bool)


def shapley_from_table(table: np.ndarray) -> np.ndarray:
    """Exact Shapley values from the values of all ``2**n`` coalitions (indexed as in :func:`all_masks`)."""
    size = int(table.shape[0])
    n = size.bit_length() - 1
    if 2**n != size:
        raise ValueError(f"table length {size} is not a power of two")
    idx = np.arange(size, dtype=np.int64)
    popcount = np.zeros(size, dtype=np.int64)
    for i in range(n):
        popcount += (idx >> i) & 1
    # weight of a coalition S (not containing i) of size s: s! (n - s - 1)! / n!
    weights = np.array([math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n)
                        for s in range(n)]) if n else np.zeros(0)
    values = np.zeros(n)
    for i in range(n):
        without = idx[((idx >> i) & 1) == 0]
        with_i = without | (1 << i)
        values[i] = np.sum(weights[popcount[without]] * (table[with_i] - table[without]))
    return values


@ESTIMATORS.register("exact", help="enumerate all 2^n coalitions (n <= 20); exact values")
def exact_shapley(value_fn: ValueFn, n_features: int, *, budget: int | None = None, seed: int = 0,
                  batch_size: int | None = None) -> ShapleyResult:
    """Exact Shapley values by evaluating every coalition (``2**n`` calls).

    Raises :class:`BudgetError` when ``budget < 2**n`` and ``ValueError`` when ``n`` exceeds
    :data:`MAX_EXACT_FEATURES`. ``seed`` is accepted for a uniform signature and unused.
    """
    _check_common(n_features, budget, batch_size)
    n = n_features
    if n > MAX_EXACT_FEATURES:
        raise ValueError(f"exact enumeration is limited to {MAX_EXACT_FEATURES} features, got {n}")
    if budget is not None and budget < 2**n:
        raise BudgetError(f"exact enumeration of {n} features needs {min_calls('exact', n)} calls; budget is {budget}")
    game = _Game(value_fn, n, budget, batch_size)
    table = game(all_masks(n))
    values = shapley_from_table(table)
    return ShapleyResult(values, float(table[0]), float(table[-1]), game.calls, np.zeros(n), "exact",
                         budget, None, {})


# --------------------------------------------------------------------------------- permutation


def permutation_calls(n_features: int, n_permutations: int) -> int:
    """Calls spent by :func:`permutation_shapley` for ``n_permutations`` antithetic permutations."""
    if n_features <= 1:
        return 2
    return 2 + 2 * n_permutations * (n_features - 1)


def min_calls(estimator: str, n_features: int) -> int:
    """The fewest model calls with which ``estimator`` explains ``n_features`` features; a smaller budget is a
    :class:`BudgetError`. ``exact``: every coalition; ``permutation``, ``adaptive``, ``stratified``: one
    antithetic permutation (:func:`permutation_calls`); ``kernel`` (and any other): base and full.

    >>> min_calls("adaptive", 16), min_calls("exact", 4), min_calls("kernel", 16)
    (32, 16, 2)
    """
    if n_features <= 1 or estimator not in ("exact", "permutation", "adaptive", "stratified"):
        return 2
    return 2**n_features if estimator == "exact" else permutation_calls(n_features, 1)


@ESTIMATORS.register("permutation",
                     help="antithetic permutation sampling (MM-SHAP / shap PermutationExplainer setting)")
def permutation_shapley(value_fn: ValueFn, n_features: int, *, budget: int | None = None, seed: int = 0,
                        batch_size: int | None = None, n_permutations: int | None = None,
                        n_bootstrap: int = DEFAULT_BOOTSTRAP, sampling: str = "independent") -> ShapleyResult:
    """Antithetic permutation sampling: each permutation is walked forward and backward.

    Args:
        value_fn: the game, called with boolean masks of shape ``(m, n)``.
        n_features: number of players ``n``.
        budget: maximum number of calls. With ``n_permutations=None`` the estimator spends as many
            permutations as the budget allows; without a budget it draws 10 (the MM-SHAP setting).
        seed: seeds the permutations and the bootstrap.
        batch_size: largest number of masks passed to ``value_fn`` at once (``None``: all).
        n_permutations: permutations to draw (capped by the budget).
        n_bootstrap: bootstrap replicates for the error estimate.
        sampling: ``"independent"`` (default: independent uniform permutations, the MM-SHAP / shap
            setting) or ``"latin"`` (rows of random Latin squares, :class:`_LatinPermutations`).

    Every permutation telescopes from ``base`` to ``full``, so efficiency holds exactly. The
    standard error is the spread of the per-permutation estimates divided by ``sqrt(permutations)``.
    """
    _check_common(n_features, budget, batch_size)
    n = n_features
    game = _Game(value_fn, n, budget, batch_size)
    trivial = _trivial(game, n, "permutation", budget)
    if trivial is not None:
        return trivial
    per_perm = 2 * (n - 1)
    if n_permutations is None:
        n_permutations = 10 if budget is None else (budget - 2) // per_perm
    elif budget is not None:
        n_permutations = min(n_permutations, (budget - 2) // per_perm)
    if n_permutations < 1:
        raise BudgetError(
            f"permutation sampling of {n} features needs >= {min_calls('permutation', n)} calls; budget is {budget}"
        )
    rng = np.random.default_rng(seed)
    draw = _sampler(sampling, rng, n)
    per_perm_est, base, full = _antithetic_rounds(game, rng, n, n_permutations, draw=draw)
    values = per_perm_est.mean(axis=0)
    if n_permutations >= 2:
        se = per_perm_est.std(axis=0, ddof=1) / math.sqrt(n_permutations)
        boot_rng = np.random.default_rng([seed, 1])
        pick = boot_rng.integers(0, n_permutations, size=(n_bootstrap, n_permutations))
        replicates = per_perm_est[pick].mean(axis=1)
    else:
        se = np.full(n, math.inf)
        replicates = None
    return ShapleyResult(values, base, full, game.calls, se, "permutation", budget, replicates,
                         {"n_permutations": int(n_permutations), "resampled_units": int(n_permutations),
                          "sampling": sampling})


def _bootstrap_means(per_perm_est: np.ndarray, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    p = per_perm_est.shape[0]
    pick = rng.integers(0, p, size=(n_bootstrap, p))
    return per_perm_est[pick].mean(axis=1)


@ESTIMATORS.register("adaptive",
                     help="antithetic permutations in rounds until the target error is reached (default)")
def adaptive_shapley(value_fn: ValueFn, n_features: int, *, budget: int | None = None, seed: int = 0,
                     batch_size: int | None = None, tolerance: float = 0.01,
                     statistic: Callable[[np.ndarray], float] | None = None, min_permutations: int = 2,
                     confidence: float = CONFIDENCE, n_bootstrap: int = DEFAULT_BOOTSTRAP,
                     stratified: bool = False, sampling: str = ADAPTIVE_SAMPLING) -> ShapleyResult:
    """Antithetic permutation sampling that stops as soon as the target accuracy is reached.

    Rounds of antithetic permutations (each round one batch of masks) are added until the expected
    absolute error of the target quantity is at most ``tolerance`` or the budget is spent. The target
    is ``statistic(values)`` (e.g. T-SHAP) when given, else the root mean square of the per-feature
    standard errors. The expected absolute error is ``|bias| + sqrt(2 / pi) * se * t``, where ``se``
    and ``bias`` are the bootstrap standard error and bias of the statistic over permutations and
    ``t = t_{P-1}(q) / z(q)`` (``q = confidence``) inflates the spread of few permutations (guarding against stopping
    on a lucky small sample). Each further round adds the permutations the current error predicts
    are needed for 80% of the tolerance (at most doubling).

    Args:
        value_fn: the game, called with boolean masks of shape ``(m, n)``.
        n_features: number of players ``n``.
        budget: call cap (default: :func:`permutation_calls` with :data:`ADAPTIVE_CAP_PERMUTATIONS` = 20
            permutations, about twice the MM-SHAP setting's calls: with 10, the benchmark model's pairs
            spent the whole cap without reaching the default tolerance).
        seed: seeds the permutations and the bootstrap.
        batch_size: largest number of masks passed to ``value_fn`` at once (``None``: a round).
        tolerance: target expected absolute error of the statistic (``0`` spends the whole budget).
        statistic: function of the value vector whose accuracy decides when to stop.
        min_permutations: permutations of the first round (>= 2, needed for an error estimate).
        confidence: quantile of the small-sample inflation ``t_{P-1}(q) / z(q)`` (default 0.95).
        n_bootstrap: bootstrap replicates for the error estimate.
        stratified: draw each round's permutations in position-stratified pairs
            (:func:`_stratified_permutations`; registered as ``stratified``; ``sampling`` is then unused).
        sampling: ``"latin"`` (default: the rounds take consecutive rows of random Latin squares,
            :class:`_LatinPermutations`) or ``"independent"`` (independent uniform permutations, the
            estimator before 2 December 2026).

    ``info`` records the rounds, permutations, the final expected error and why it stopped.
    """
    from scipy.stats import norm
    from scipy.stats import t as student_t

    _check_common(n_features, budget, batch_size)
    n = n_features
    if budget is None:
        budget = permutation_calls(n, ADAPTIVE_CAP_PERMUTATIONS)
    game = _Game(value_fn, n, budget, batch_size)
    trivial = _trivial(game, n, "stratified" if stratified else "adaptive", budget)
    if trivial is not None:
        return trivial
    per_perm = 2 * (n - 1)
    affordable = (budget - 2) // per_perm
    if affordable < 1:
        raise BudgetError(
            f"adaptive sampling of {n} features needs >= {min_calls('adaptive', n)} calls; budget is {budget}"
        )
    rng = np.random.default_rng(seed)
    boot_rng = np.random.default_rng([seed, 1])
    draw = None if stratified else _sampler(sampling, rng, n)
    first = max(2, min_permutations)
    if not stratified:
        first = min(first, affordable)
    est, base, full = _antithetic_rounds(game, rng, n, first, stratified=stratified, max_calls=budget, draw=draw)
    if est.shape[0] == 0:  # pragma: no cover - affordable >= 1 guarantees one permutation
        raise BudgetError(f"budget {budget} too small")
    rounds = 1
    factor = math.sqrt(2.0 / math.pi)
    while True:
        p = est.shape[0]
        bias = 0.0
        if p >= 2 and not np.any(est.std(axis=0) > 0):  # every permutation agrees: nothing to estimate
            reps, expected = None, 0.0
        elif p >= 2:
            reps = _bootstrap_means(est, n_bootstrap, boot_rng)
            if statistic is None:
                se = float(np.sqrt(np.mean(est.var(axis=0, ddof=1) / p)))
            else:
                stats = _over_rows(statistic, reps)
                stats = stats[np.isfinite(stats)]
                se = float(np.std(stats, ddof=1)) if stats.size > 1 else math.inf
                # plug-in statistics of noisy values are biased (e.g. sums of |phi|): add the
                # bootstrap estimate of that bias
                bias = abs(float(np.mean(stats)) - statistic(est.mean(axis=0))) if stats.size else 0.0
            expected = bias + factor * se * float(student_t.ppf(confidence, p - 1)) / float(norm.ppf(confidence))
        else:
            reps, expected = None, math.inf
        left = (budget - game.calls) // (per_perm - 1 if stratified else per_perm)
        if expected <= tolerance:
            reason = "tolerance"
            break
        if left < 1:
            reason = "budget"
            break
        # plan for 80% of the tolerance: fewer rounds, and a margin against stopping on a lucky estimate
        need = p * (expected / (0.8 * tolerance)) ** 2 if tolerance > 0 and math.isfinite(expected) else 2 * p
        more = int(min(left, p, max(1, math.ceil(need - p))))
        if stratified:
            more += more % 2  # whole stratified pairs; the round drops what the budget cannot pay
        new = _antithetic_rounds(game, rng, n, more, (base, full), stratified=stratified,
                                 max_calls=budget - game.calls, draw=draw)[0]
        if new.shape[0] == 0:
            reason = "budget"
            break
        est = np.concatenate([est, new], axis=0)
        rounds += 1
    p = est.shape[0]
    values = est.mean(axis=0)
    se_feat = est.std(axis=0, ddof=1) / math.sqrt(p) if p >= 2 else np.full(n, math.inf)
    info = {"n_permutations": int(p), "rounds": rounds, "stopped": reason, "tolerance": tolerance,
            "expected_error": expected, "resampled_units": int(p),
            "sampling": "stratified" if stratified else sampling}
    name = "stratified" if stratified else "adaptive"
    return ShapleyResult(values, base, full, game.calls, se_feat, name, budget, reps, info)


@ESTIMATORS.register("stratified",
                     help="adaptive, with permutations drawn in position-stratified pairs")
def stratified_shapley(value_fn: ValueFn, n_features: int, *, budget: int | None = None, seed: int = 0,
                       batch_size: int | None = None, **options: Any) -> ShapleyResult:
    """:func:`adaptive_shapley` with ``stratified=True``: permutations in position-stratified pairs.

    Each pair (:func:`_stratified_permutations`) puts every feature once near the ends and once near
    the middle of a permutation and shares one coalition per walk direction, so two permutations
    cost ``4 (n - 1) - 2`` calls (108 instead of 110 at ``n = 28``). Every permutation is still
    uniformly distributed, so the values are unbiased and exactly efficient. The two permutations of
    a pair are typically negatively correlated (about -0.25 per feature on the benchmark model); the
    bootstrap treats them as independent, which then overstates the error (conservative). With
    ``tolerance=0`` it spends the budget like ``permutation``.
    """
    return adaptive_shapley(value_fn, n_features, budget=budget, seed=seed, batch_size=batch_size,
                            stratified=True, **options)


def _stratified_permutations(rng: np.random.Generator, n: int, n_permutations: int) -> np.ndarray:
    """Permutations in position-stratified pairs: ``(P, n)``.

    The first permutation of a pair is uniform; it is cut into four blocks ``B0 B1 B2 B3`` of
    (nearly) equal length and the second is ``B1 B0 B3 B2``, each block shuffled again. The second is
    then uniform too (every estimate stays unbiased), but a feature near either end of the first
    permutation lands near the middle of the second and vice versa: walked forward and backward,
    each feature is seen once with small/large coalitions and once with middle-sized ones. Both
    permutations pass through the same coalition ``B0 + B1`` (forward) and ``B2 + B3`` (backward),
    so a pair costs two calls fewer than two independent permutations.
    """
    out = []
    cuts = [round(n * j / 4) for j in range(5)]
    for j in range(n_permutations):
        if j % 2 == 0:
            first = rng.permutation(n)
            out.append(first)
        else:
            blocks = [first[cuts[b]:cuts[b + 1]] for b in range(4)]
            out.append(np.concatenate([rng.permutation(blocks[b]) for b in (1, 0, 3, 2)]))
    return np.stack(out) if out else np.zeros((0, n), dtype=np.int64)


#: Permutation designs of the permutation estimators (``sampling=``).
SAMPLING_DESIGNS = ("independent", "latin")


class _LatinPermutations:
    """Permutations taken row by row from random Latin squares: within each block of ``n`` rows every
    feature stands at every position exactly once.

    Row ``k`` of a square is ``r -> a[(b[k] + c[r]) mod n]`` with ``a``, ``b``, ``c`` independent uniform
    permutations (a new square when the rows run out). For any fixed ``k`` the map ``r -> (b[k] + c[r])
    mod n`` is a bijection, so composed with the uniform ``a`` every row is a uniform permutation: each
    row's marginal contributions are unbiased for the Shapley values, whatever rows are taken. Across
    the rows of a square the positions are balanced instead of independent (each feature meets every
    coalition size once per walk direction), which removes the position part of the sampling noise.
    """

    def __init__(self, rng: np.random.Generator, n: int) -> None:
        self.rng, self.n = rng, n
        self.square: np.ndarray | None = None
        self.next_row = 0

    def _new_square(self) -> np.ndarray:
        n, rng = self.n, self.rng
        a, b, c = rng.permutation(n), rng.permutation(n), rng.permutation(n)
        return a[(b[:, None] + c[None, :]) % n]

    def __call__(self, m: int) -> np.ndarray:
        rows = []
        while len(rows) < m:
            if self.square is None or self.next_row >= self.n:
                self.square, self.next_row = self._new_square(), 0
            take = min(m - len(rows), self.n - self.next_row)
            rows.extend(self.square[self.next_row:self.next_row + take])
            self.next_row += take
        return np.stack(rows) if rows else np.zeros((0, self.n), dtype=np.int64)


def _sampler(sampling: str, rng: np.random.Generator, n: int) -> Callable[[int], np.ndarray] | None:
    """``draw`` for :func:`_antithetic_rounds`: ``None`` (independent permutations) or Latin-square rows."""
    if sampling not in SAMPLING_DESIGNS:
        raise ValueError(f"sampling must be one of {', '.join(SAMPLING_DESIGNS)}, got {sampling!r}")
    return _LatinPermutations(rng, n) if sampling == "latin" else None


def _walk_masks(perms: np.ndarray, n: int) -> np.ndarray:
    """``(P, 2, n-1, n)`` masks: forward walk (first k features) and backward walk (last k) of each."""
    p = perms.shape[0]
    ranks = np.empty_like(perms)
    ranks[np.arange(p)[:, None], perms] = np.arange(n)[None, :]  # position of each feature
    k = np.arange(1, n)[:, None]  # prefix lengths
    fwd = ranks[:, None, :] < k[None, :, :]  # (P, n-1, n): first k features of the permutation
    bwd = ranks[:, None, :] >= (n - k)[None, :, :]  # (P, n-1, n): last k features of the permutation
    return np.stack([fwd, bwd], axis=1)


def _antithetic_rounds(game: _Game, rng: np.random.Generator, n: int, n_permutations: int,
                       ends: tuple[float, float] | None = None, stratified: bool = False,
                       max_calls: int | None = None,
                       draw: Callable[[int], np.ndarray] | None = None) -> tuple[np.ndarray, float, float]:
    """Per-permutation estimates ``(P, n)`` and ``(base, full)``: every permutation walked forward and
    backward, all masks in one batch (with the empty and full coalitions when ``ends`` is ``None``).

    The permutations are independent uniform draws from ``rng``, or ``draw(P)``'s rows when given
    (:class:`_LatinPermutations`). ``stratified`` draws them in pairs (:func:`_stratified_permutations`)
    and evaluates each distinct coalition once; then fewer than ``n_permutations`` may be returned so
    that the round costs at most ``max_calls`` (``P = 0`` when not even one permutation fits).
    """
    if not stratified:
        if draw is not None:
            perms = draw(n_permutations)
        else:
            perms = np.stack([rng.permutation(n) for _ in range(n_permutations)])  # (P, n)
        masks = _walk_masks(perms, n).reshape(-1, n)
        inverse = None
    else:
        perms = _stratified_permutations(rng, n, n_permutations)
        extra = 2 if ends is None else 0
        while True:
            masks_all = _walk_masks(perms, n).reshape(-1, n)
            masks, inverse = np.unique(masks_all, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            if max_calls is None or masks.shape[0] + extra <= max_calls or perms.shape[0] == 0:
                break
            perms = perms[:-1]
        n_permutations = perms.shape[0]
        if n_permutations == 0:
            return np.zeros((0, n)), math.nan, math.nan
    if ends is None:
        both = np.zeros((2, n), dtype=bool)
        both[1] = True
        vals = game(np.concatenate([both, masks], axis=0))
        base, full = float(vals[0]), float(vals[1])
        vals = vals[2:]
    else:
        base, full = ends
        vals = game(masks)
    if inverse is not None:
        vals = vals[inverse]
    vals = vals.reshape(n_permutations, 2, n - 1)
    start = np.full((n_permutations, 1), base)
    stop = np.full((n_permutations, 1), full)
    fwd_gain = np.diff(np.concatenate([start, vals[:, 0], stop], axis=1), axis=1)  # gain of perms[:, j]
    bwd_gain = np.diff(np.concatenate([start, vals[:, 1], stop], axis=1), axis=1)  # gain of perms[:, n-1-j]
    est = np.zeros((n_permutations, n))
    np.put_along_axis(est, perms, fwd_gain, axis=1)
    back = np.zeros((n_permutations, n))
    np.put_along_axis(back, perms[:, ::-1], bwd_gain, axis=1)
    return 0.5 * (est + back), base, full


# -------------------------------------------------------------------------------------- kernel


def kernel_default_budget(n_features: int) -> int:
    """Default call budget of the kernel estimator: half the MM-SHAP permutation setting."""
    return max(2 * n_features + 2, permutation_calls(n_features, 10) // 2)


def _solve_constrained(ata: np.ndarray, atb: np.ndarray, delta: float) -> np.ndarray:
    """``argmin phi' A phi - 2 b' phi`` subject to ``sum(phi) = delta`` (KKT system, least squares)."""
    n = ata.shape[0]
    kkt = np.zeros((n + 1, n + 1))
    kkt[:n, :n] = ata
    kkt[:n, n] = 1.0
    kkt[n, :n] = 1.0
    rhs = np.concatenate([atb, [delta]])
    # least squares (minimum norm) rather than solve: with few samples A can be singular
    sol = np.linalg.lstsq(kkt, rhs, rcond=1e-10)[0]
    return sol[:n]


def _random_subsets(rng: np.random.Generator, n: int, sizes: np.ndarray) -> np.ndarray:
    """One uniformly random subset of each requested size: boolean ``(len(sizes), n)``."""
    keys = rng.random((sizes.shape[0], n))
    ranks = np.argsort(np.argsort(keys, axis=1), axis=1)
    return ranks < sizes[:, None]


@ESTIMATORS.register("kernel",
                     help="paired KernelSHAP with efficiency constraint and full small/large sizes (default)")
def kernel_shapley(value_fn: ValueFn, n_features: int, *, budget: int | None = None, seed: int = 0,
                   batch_size: int | None = None, sampling: str = "kernel", paired: bool = True,
                   n_bootstrap: int = DEFAULT_BOOTSTRAP) -> ShapleyResult:
    """Paired KernelSHAP with the efficiency constraint.

    Shapley values are the solution of a weighted least-squares problem over all coalitions
    (weights ``(n - 1) / (C(n, s) s (n - s))`` for size ``s``) constrained to ``sum = full - base``.
    The estimator enumerates the outermost coalition sizes (1 and ``n-1``, then 2 and ``n-2``, ...)
    while the budget's proportional share covers all their coalitions, samples the remaining sizes
    (complementary pairs, duplicates re-weighted rather than re-evaluated) and solves the
    constrained problem. With ``budget >= 2**n`` every size is enumerated and the values are exact.

    Args:
        value_fn: the game, called with boolean masks of shape ``(m, n)``.
        n_features: number of players ``n``.
        budget: maximum number of calls (default :func:`kernel_default_budget`).
        seed: seeds the sampling and the bootstrap.
        batch_size: largest number of masks passed to ``value_fn`` at once (``None``: all).
        sampling: ``"kernel"`` draws sampled sizes in proportion to their Shapley-kernel weight;
            ``"leverage"`` draws sizes uniformly and importance-weights them.
        paired: sample each coalition together with its complement (antithetic sampling).
        n_bootstrap: bootstrap replicates (over sampled pairs) for the error estimate.
    """
    _check_common(n_features, budget, batch_size)
    if sampling not in ("kernel", "leverage"):
        raise ValueError(f"sampling must be 'kernel' or 'leverage', got {sampling!r}")
    n = n_features
    if budget is None:
        budget = kernel_default_budget(n)
    game = _Game(value_fn, n, budget, batch_size)
    trivial = _trivial(game, n, "kernel", budget)
    if trivial is not None:
        return trivial
    rng = np.random.default_rng(seed)

    # strata: size pairs {s, n-s} for s = 1 .. n//2 (one size when s == n - s)
    strata = list(range(1, n // 2 + 1))
    size_weight = {s: (n - 1) / (s * (n - s)) for s in range(1, n)}
    stratum_weight = {s: size_weight[s] * (1 if 2 * s == n else 2) for s in strata}
    stratum_count = {s: math.comb(n, s) * (1 if 2 * s == n else 2) for s in strata}
    total_weight = sum(stratum_weight.values())

    left = budget - 2
    enumerated: list[int] = []
    remaining = list(strata)
    while remaining:
        if left >= sum(stratum_count[t] for t in remaining):  # everything fits: exact
            for t in remaining:
                enumerated.append(t)
                left -= stratum_count[t]
            remaining = []
            break
        s = remaining[0]
        w_left = sum(stratum_weight[t] for t in remaining)
        share = left * stratum_weight[s] / w_left if sampling == "kernel" else left / len(remaining)
        if stratum_count[s] <= left and share >= stratum_count[s]:
            enumerated.append(s)
            left -= stratum_count[s]
            remaining.pop(0)
        else:
            break

    # enumerated part: every coalition with its exact kernel weight
    enum_masks: list[np.ndarray] = []
    enum_weights: list[np.ndarray] = []
    for s in enumerated:
        sizes = [s] if 2 * s == n else [s, n - s]
        for size in sizes:
            combos = _combinations_mask(n, size)
            enum_masks.append(combos)
            enum_weights.append(np.full(combos.shape[0], size_weight[size] / math.comb(n, size)))

    # sampled part: units (a coalition and, if paired, its complement) without re-evaluation
    unit_masks: list[np.ndarray] = []
    unit_draws: list[int] = []
    unit_stratum: list[int] = []
    seen: dict[bytes, int] = {}
    if remaining:
        rem_w = np.array([stratum_weight[s] for s in remaining])
        probs = rem_w / rem_w.sum() if sampling == "kernel" else np.full(len(remaining), 1 / len(remaining))
        unit_cost = 2 if paired else 1
        max_units = left // unit_cost
        draws_cap = 50 * max_units + 100
        n_draws = 0
        while len(unit_masks) < max_units and n_draws < draws_cap:
            batch = max(1, 2 * (max_units - len(unit_masks)))
            which = rng.choice(len(remaining), size=batch, p=probs)
            sizes = np.array([remaining[i] for i in which])
            if not paired:  # an unpaired draw from stratum s takes size s or n - s with equal chance
                flip = rng.random(batch) < 0.5
                sizes = np.where(flip, n - sizes, sizes)
            subsets = _random_subsets(rng, n, sizes)
            for row, st in zip(subsets, which):
                if len(unit_masks) >= max_units or n_draws >= draws_cap:
                    break
                n_draws += 1
                key = _unit_key(row, paired)
                if key in seen:
                    unit_draws[seen[key]] += 1
                    continue
                seen[key] = len(unit_masks)
                unit_masks.append(row)
                unit_draws.append(1)
                unit_stratum.append(remaining[int(st)])
        total_draws = sum(unit_draws)
    else:
        total_draws = 0

    # evaluate everything in one go
    sampled = np.array(unit_masks, dtype=bool).reshape(-1, n)
    if paired and sampled.shape[0]:
        sampled_rows = np.concatenate([sampled, ~sampled], axis=0)
    else:
        sampled_rows = sampled
    enum_rows = np.concatenate(enum_masks, axis=0) if enum_masks else np.zeros((0, n), dtype=bool)
    ends = np.zeros((2, n), dtype=bool)
    ends[1] = True
    vals = game(np.concatenate([ends, enum_rows, sampled_rows], axis=0))
    base, full = float(vals[0]), float(vals[1])
    delta = full - base
    y_enum = vals[2:2 + enum_rows.shape[0]] - base
    y_samp = vals[2 + enum_rows.shape[0]:] - base

    z_enum = enum_rows.astype(float)
    w_enum = np.concatenate(enum_weights) if enum_weights else np.zeros(0)
    ata_enum = (z_enum * w_enum[:, None]).T @ z_enum
    atb_enum = (z_enum * w_enum[:, None]).T @ y_enum

    n_units = len(unit_masks)
    z_s = sampled.astype(float)
    if paired:
        z_c = 1.0 - z_s
        y_s, y_c = y_samp[:n_units], y_samp[n_units:]
    if n_units:
        # importance weight of one draw from stratum s: stratum weight / (draw probability * draws)
        w_rem = sum(stratum_weight[t] for t in remaining)
        prob_of = {s: (stratum_weight[s] / w_rem if sampling == "kernel" else 1 / len(remaining))
                   for s in remaining}
        per_draw = np.array([stratum_weight[s] / prob_of[s] for s in unit_stratum]) / total_draws
    draws = np.array(unit_draws, dtype=float)

    def sampled_terms(scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sampled contribution to ``A = Z'WZ`` and ``b = Z'Wy`` for per-unit weights ``scale``."""
        if paired:
            # a unit contributes the coalition and its complement, each with half the weight
            half = 0.5 * scale
            ata_s = (z_s * half[:, None]).T @ z_s + (z_c * half[:, None]).T @ z_c
            atb_s = (z_s * half[:, None]).T @ y_s + (z_c * half[:, None]).T @ y_c
        else:
            ata_s = (z_s * scale[:, None]).T @ z_s
            atb_s = (z_s * scale[:, None]).T @ y_samp
        return ata_s, atb_s

    if n_units:
        ata_s, atb_s = sampled_terms(per_draw * draws)
        values = _solve_constrained(ata_enum + ata_s, atb_enum + atb_s, delta)
    else:
        values = _solve_constrained(ata_enum, atb_enum, delta)

    if n_units == 0:
        se = np.zeros(n)  # everything enumerated: exact
        replicates = None
    elif n_units < 2:
        se = np.full(n, math.inf)
        replicates = None
    else:
        boot_rng = np.random.default_rng([seed, 1])
        # resample the draws: multinomial over units with probabilities proportional to their draws
        counts = boot_rng.multinomial(total_draws, draws / total_draws, size=n_bootstrap).astype(float)
        reps = np.empty((n_bootstrap, n))
        for b in range(n_bootstrap):
            ata_s, atb_s = sampled_terms(per_draw * counts[b])
            reps[b] = _solve_constrained(ata_enum + ata_s, atb_enum + atb_s, delta)
        se = reps.std(axis=0, ddof=1)
        replicates = reps
    info = {"sampling": sampling, "paired": paired, "enumerated_sizes": enumerated,
            "sampled_units": n_units, "draws": int(total_draws), "total_weight": total_weight}
    return ShapleyResult(values, base, full, game.calls, se, "kernel", budget, replicates, info)


def _unit_key(row: np.ndarray, paired: bool) -> bytes:
    """Identity of a sampled unit; a pair is identified by whichever side contains feature 0."""
    if paired and not row[0]:
        row = ~row
    return np.packbits(row).tobytes()


def _combinations_mask(n: int, size: int) -> np.ndarray:
    """All coalitions of ``size`` features as a boolean ``(C(n, size), n)`` array."""
    from itertools import combinations

    combos = np.array(list(combinations(range(n), size)), dtype=np.int64).reshape(-1, size)
    out = np.zeros((combos.shape[0], n), dtype=bool)
    np.put_along_axis(out, combos, True, axis=1)
    return out


# ---------------------------------------------------------------------------------- front door


def estimate(value_fn: ValueFn, n_features: int, *, estimator: str = DEFAULT_ESTIMATOR,
             budget: int | None = None, seed: int = 0, batch_size: int | None = None,
             **options: Any) -> ShapleyResult:
    """Run the registered ``estimator`` on a game (see :data:`ESTIMATORS` for the names)."""
    fn = ESTIMATORS.get(estimator)
    return fn(value_fn, n_features, budget=budget, seed=seed, batch_size=batch_size, **options)


def min_budget(estimator: str, n_features: int) -> int:
    """Smallest budget with which ``estimator`` runs on ``n_features`` features."""
    if estimator == "exact":
        return 2**n_features
    if estimator in ("permutation", "adaptive", "stratified"):
        return permutation_calls(n_features, 1)
    return 2
