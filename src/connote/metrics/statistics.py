"""The statistics every paper's numbers use: bootstrap intervals of a mean and paired bootstrap tests
(``scipy.stats.bootstrap``, seeded) and the Wilson interval of a proportion (``scipy.stats.binomtest``).

One module so that the VIST protocols, VMC's scoring and report, CV-Probes' cells and the probe suites compute
an interval the same way.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

CI_METHODS = ("percentile", "BCa", "basic")


def _mean_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(b - a, axis=axis)


def _check_method(method: str) -> str:
    if method not in CI_METHODS:
        raise ValueError(f"unknown interval method {method!r}; valid: {', '.join(CI_METHODS)}")
    return method


def bootstrap_ci(values: Sequence[float], *, n_boot: int = 1000, alpha: float = 0.05,
                 seed: int = 0, method: str = "percentile") -> tuple[float, float]:
    """Bootstrap interval of the mean from ``scipy.stats.bootstrap`` (``nan`` when there are no values).

    ``method``: ``percentile`` (default; the resampled means' quantiles), ``BCa`` (bias-corrected and
    accelerated) or ``basic``. Seeded: the same ``seed`` gives the same resamples. One value (or all
    values equal) gives the degenerate interval ``(mean, mean)``.
    """
    from scipy import stats

    _check_method(method)
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return (float("nan"), float("nan"))
    if x.size == 1 or np.ptp(x) == 0:  # scipy needs two distinct values; every resample has this mean
        return (float(x.mean()), float(x.mean()))
    res = stats.bootstrap((x,), np.mean, n_resamples=n_boot, confidence_level=1 - alpha, method=method,
                          vectorized=True, rng=np.random.default_rng(seed))
    return (float(res.confidence_interval.low), float(res.confidence_interval.high))


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, n_boot: int = 1000, alpha: float = 0.05,
                     seed: int = 0, method: str = "percentile") -> dict[str, float]:
    """Paired bootstrap test of ``mean(b) - mean(a)`` over the same items (``scipy.stats.bootstrap``, paired).

    Items are resampled together in both runs. Returns the observed difference, its interval
    (``method`` as in :func:`bootstrap_ci`), the share of resamples in which B beats A, and a two-sided
    p-value for "no difference" computed on the resampled differences shifted to the null:
    ``(#{|d* - d| >= |d|} + 1) / (n_boot + 1)``.
    """
    from scipy import stats

    _check_method(method)
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError("paired bootstrap needs scores for the same items in both runs")
    if x.size == 0:
        return {"delta": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"),
                "p_value": float("nan"), "b_wins": float("nan"), "n": 0}
    d = y - x
    obs = float(d.mean())
    if d.size == 1 or np.ptp(d) == 0:  # every resample has the observed difference
        boots = np.full(n_boot, obs)
        lo = hi = obs
    else:
        res = stats.bootstrap((x, y), _mean_difference, n_resamples=n_boot, confidence_level=1 - alpha,
                              method=method, paired=True, vectorized=True, rng=np.random.default_rng(seed))
        boots = np.asarray(res.bootstrap_distribution, dtype=float)
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    p = (int(np.sum(np.abs(boots - obs) >= abs(obs) - 1e-15)) + 1) / (n_boot + 1)
    return {"delta": obs, "ci_low": float(lo), "ci_high": float(hi), "p_value": float(min(1.0, p)),
            "b_wins": float(np.mean(boots > 0)), "n": int(d.size)}


def accuracy_interval(correct: int, n: int, confidence: float = 0.95) -> list[float] | None:
    """Wilson score interval of an accuracy: honest at the small n of a cell.

    The formula of scipy's ``binomtest(correct, n).proportion_ci(method="wilson")`` (no continuity correction;
    equal to it within 1e-15), computed with the standard library so that summarising a resumed run does not
    import ``scipy.stats`` (seconds)."""
    if n == 0:
        return None
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = correct / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return [0.0 if correct == 0 else center - half, 1.0 if correct == n else center + half]
