"""Every registered Shapley estimator keeps the estimator contract (registry-wide).

As the backend, metric and run-kind contracts do, this module loops over the registry as its public listing gives
it (:data:`connote.explain.shapley.ESTIMATORS`), so an estimator registered later (a plugin's too) is held to the
same rules without an edit here: on small games with known values it returns one value per feature, keeps
efficiency (the values sum to ``v(all) - v(none)``), gives an additive game's weights and a null player 0, stays
within the call budget it is given and refuses one below :func:`~connote.explain.shapley.min_budget` with a
:class:`~connote.explain.shapley.BudgetError`, is deterministic for a seed, and sends the game only masks of its
width. How close each estimator comes on harder games is ``test_shapley_estimators.py``'s.
"""

from __future__ import annotations

import numpy as np
import pytest

from connote.explain.shapley import ESTIMATORS, BudgetError, ShapleyResult, estimate, min_budget

WEIGHTS = np.array([1.0, -2.0, 0.5, 0.0, 3.0])  # feature 3 is a null player


def additive(masks: np.ndarray) -> np.ndarray:
    return masks.astype(float) @ WEIGHTS


def interacting(masks: np.ndarray) -> np.ndarray:
    """An additive part, a pairwise and a three-way interaction; feature 3 still adds nothing."""
    m = masks.astype(float)
    return m @ WEIGHTS + 1.5 * m[:, 0] * m[:, 1] - 0.8 * m[:, 1] * m[:, 2] * m[:, 4]


class Recorded:
    """A game that keeps every mask batch it was sent."""

    def __init__(self, game) -> None:
        self.game, self.batches = game, []

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        self.batches.append(np.array(masks, copy=True))
        return self.game(masks)


BUDGET = 200
N = len(WEIGHTS)


@pytest.mark.parametrize("name", ESTIMATORS.names())
def test_an_additive_game_gives_its_weights_and_the_values_are_efficient(name: str) -> None:
    res = estimate(additive, N, estimator=name, budget=BUDGET, seed=0)
    assert isinstance(res, ShapleyResult) and res.estimator == name
    assert res.values.shape == (N,) and res.error_estimate.shape == (N,)
    assert res.base == 0.0 and res.full == pytest.approx(WEIGHTS.sum())
    np.testing.assert_allclose(res.values, WEIGHTS, atol=1e-9)
    assert abs(res.efficiency_gap) < 1e-9


@pytest.mark.parametrize("name", ESTIMATORS.names())
def test_efficiency_budget_and_seed_on_an_interacting_game(name: str) -> None:
    game = Recorded(interacting)
    res = estimate(game, N, estimator=name, budget=BUDGET, seed=3)
    assert abs(res.efficiency_gap) < 1e-9
    assert res.calls <= BUDGET and res.calls == sum(len(b) for b in game.batches)
    assert all(b.dtype == bool and b.ndim == 2 and b.shape[1] == N for b in game.batches)
    again = estimate(interacting, N, estimator=name, budget=BUDGET, seed=3)
    np.testing.assert_array_equal(res.values, again.values)


@pytest.mark.parametrize("name", ESTIMATORS.names())
def test_a_budget_below_the_minimum_is_refused(name: str) -> None:
    least = min_budget(name, N)
    assert estimate(additive, N, estimator=name, budget=least, seed=0).calls <= least
    with pytest.raises(BudgetError):
        estimate(additive, N, estimator=name, budget=least - 1, seed=0)


@pytest.mark.parametrize("name", ESTIMATORS.names())
@pytest.mark.parametrize("n", [0, 1])
def test_games_of_no_or_one_feature(name: str, n: int) -> None:
    res = estimate(lambda m: m.sum(axis=1) * 2.0 + 1.0, n, estimator=name, seed=0)
    assert res.values.shape == (n,) and res.base == 1.0 and res.full == 1.0 + 2.0 * n
    np.testing.assert_allclose(res.values, [2.0] * n)
