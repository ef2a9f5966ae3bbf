"""Model-agnostic explanations: Shapley estimators, MM-SHAP scores, verb attribution, plots.

``connote.explain.shapley`` estimates Shapley values of any value function of a boolean feature mask;
``connote.explain.mmshap`` turns them into MM-SHAP rows (T-SHAP, V-SHAP, verb attribution) and the
Table 6 aggregates; ``connote.explain.plots`` draws them. Model backends supply the value function.
"""

from connote.explain.shapley import (
    DEFAULT_ESTIMATOR,
    ESTIMATORS,
    BudgetError,
    ShapleyResult,
    estimate,
)

__all__ = ["DEFAULT_ESTIMATOR", "ESTIMATORS", "BudgetError", "ShapleyResult", "estimate"]
