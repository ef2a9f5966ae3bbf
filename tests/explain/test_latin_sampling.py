"""Latin-square permutation sampling (the adaptive default's design): structure, unbiasedness against exact
enumeration, lower variance than independent permutations at the same calls, the batched T-SHAP statistic."""

from __future__ import annotations

import math

import numpy as np
import pytest

from connote.explain.mmshap import explain_pair, mm_shap_scores, t_shap_statistic
from connote.explain.shapley import (
    ADAPTIVE_CAP_PERMUTATIONS,
    _LatinPermutations,
    all_masks,
    estimate,
    permutation_calls,
    shapley_from_table,
)
from tests.explain.test_shapley_estimators import harsanyi, harsanyi_values, random_dividends


def test_latin_rows_are_permutations_and_each_block_is_a_latin_square():
    n = 7
    draw = _LatinPermutations(np.random.default_rng(3), n)
    rows = np.concatenate([draw(3), draw(5), draw(9)])  # rounds of any size, across squares
    assert rows.shape == (17, n)
    assert all(sorted(r.tolist()) == list(range(n)) for r in rows)
    for block in (rows[:7], rows[7:14]):  # every feature at every position exactly once per square
        assert all(sorted(block[:, j].tolist()) == list(range(n)) for j in range(n))
    assert not np.array_equal(rows[:7], rows[7:14])  # a new square when the rows run out


def test_latin_sampling_unbiased_against_exact_enumeration():
    # every row is a uniform permutation, so the mean over seeds converges to the exact Shapley values;
    # the bound is computed from the spread over the seeds (4.5 standard errors, 9 features)
    n = 9
    game = harsanyi(random_dividends(n, seed=83, max_order=5, terms=40))
    truth = shapley_from_table(game(all_masks(n)))
    np.testing.assert_allclose(truth, harsanyi_values(random_dividends(n, seed=83, max_order=5, terms=40), n),
                               atol=1e-12)
    runs = np.array([estimate(game, n, estimator="permutation", sampling="latin", n_permutations=4, seed=s).values
                     for s in range(400)])
    mean, sem = runs.mean(axis=0), runs.std(axis=0, ddof=1) / math.sqrt(len(runs))
    assert np.all(sem > 0)
    assert np.all(np.abs(mean - truth) <= 4.5 * sem), (np.abs(mean - truth) / sem).round(2)
    # and efficient in every run
    np.testing.assert_allclose(runs.sum(axis=1), game(np.ones((1, n), bool))[0] - game(np.zeros((1, n), bool))[0],
                               atol=1e-9)


def test_adaptive_latin_unbiased_at_a_fixed_budget():
    n = 8
    div = random_dividends(n, seed=89, max_order=5, terms=30)
    truth = harsanyi_values(div, n)
    runs = np.array([estimate(harsanyi(div), n, tolerance=0.0, budget=permutation_calls(n, 3), seed=s).values
                     for s in range(400)])
    mean, sem = runs.mean(axis=0), runs.std(axis=0, ddof=1) / math.sqrt(len(runs))
    assert np.all(np.abs(mean - truth) <= 4.5 * sem), (np.abs(mean - truth) / sem).round(2)


@pytest.mark.parametrize("permutations", [5, 10])
def test_latin_lower_error_than_independent_at_the_same_calls(permutations):
    n = 10
    div = random_dividends(n, seed=97, max_order=5, terms=40)
    truth = harsanyi_values(div, n)
    err = {"latin": [], "independent": []}
    for s in range(120):
        for design in err:
            res = estimate(harsanyi(div), n, estimator="permutation", sampling=design, n_permutations=permutations,
                           seed=s)
            assert res.calls == permutation_calls(n, permutations)
            err[design].append(np.sum((res.values - truth) ** 2))
    assert np.mean(err["latin"]) < 0.9 * np.mean(err["independent"]), {k: np.mean(v) for k, v in err.items()}


def test_full_square_removes_the_position_noise_of_additive_in_size_games():
    # v(S) = f(|S|) + w.S: a player's marginal depends only on its position, and a full square visits every
    # position once per player, so n Latin rows are exact where independent rows are not
    n = 6
    w = np.arange(1.0, n + 1)
    f = np.array([0.0, 0.3, -1.2, 2.0, 0.1, -0.7, 1.5])

    def game(masks):
        return f[masks.sum(axis=1)] + masks.astype(float) @ w

    truth = shapley_from_table(game(all_masks(n)))
    one_way = estimate(game, n, estimator="permutation", sampling="latin", n_permutations=n, seed=2)
    np.testing.assert_allclose(one_way.values, truth, atol=1e-12)
    indep = estimate(game, n, estimator="permutation", n_permutations=n, seed=2)
    assert np.max(np.abs(indep.values - truth)) > 1e-3


def test_permutation_default_stays_independent_and_unknown_design_refused():
    n = 6
    game = harsanyi(random_dividends(n, seed=5))
    a = estimate(game, n, estimator="permutation", n_permutations=3, seed=4)
    b = estimate(game, n, estimator="permutation", n_permutations=3, seed=4, sampling="independent")
    np.testing.assert_array_equal(a.values, b.values)
    assert a.info["sampling"] == "independent"
    with pytest.raises(ValueError, match="sampling must be one of independent, latin"):
        estimate(game, n, estimator="permutation", sampling="sobol")


def test_t_shap_statistic_takes_rows_and_vectors():
    stat = t_shap_statistic(3)
    v = np.random.default_rng(0).normal(size=(6, 8))
    expected = [mm_shap_scores(r[:3], r[3:])[0] for r in v]
    np.testing.assert_allclose(stat(v), expected, rtol=1e-12)
    assert stat(v[2]) == pytest.approx(expected[2], rel=1e-12)
    assert math.isnan(stat(np.zeros(8)))
    assert stat.rows is True


def test_explain_pair_default_spends_up_to_the_cap_and_reports_its_design():
    n_text, p = 4, 3
    n = n_text + p * p
    div = random_dividends(n, seed=7, max_order=4, terms=40)
    row = explain_pair(harsanyi(div), n_text, p * p, find_verb=False, tolerance=0.0)
    assert row["estimator"] == "adaptive" and row["calls"] == permutation_calls(n, ADAPTIVE_CAP_PERMUTATIONS)
    truth = harsanyi_values(div, n)
    assert abs(row["t_shap"] - mm_shap_scores(truth[:n_text], truth[n_text:])[0]) < 0.05
    assert row["t_shap_se"] is not None and row["t_shap_se"] > 0
