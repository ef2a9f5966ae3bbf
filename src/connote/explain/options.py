"""The options every MM-SHAP task takes (``cv-probes-mmshap`` and the suites' ``*-mmshap``), declared once."""

from __future__ import annotations

from dataclasses import dataclass

from connote.metrics.options import OptionError, opt


@dataclass(frozen=True)
class MmshapOptions:
    """Estimator, budget, sample and patch grid of an MM-SHAP run (``--set`` keys of ``connote run``)."""

    estimator: str | None = opt(None, "permutation | adaptive | stratified | kernel | exact (default: the "
                                         "compat mode's)")
    budget: int | None = opt(None, "max model calls per pair", ge=1)
    sample: int | None = opt(None, "explain a seeded random sample of N pairs", ge=1)
    grid: int | None = opt(None, "patch grid p (default ceil(sqrt(#text features)))", ge=1)
    compat: str = opt("mmshap", "mmshap (the public MM-SHAP code's features, grid and masked id) | connote")
    allow_network: bool = opt(False, "fetch http(s) images")

    def __post_init__(self) -> None:
        from connote.explain.shapley import ESTIMATORS

        if self.estimator is not None and self.estimator not in ESTIMATORS:
            raise OptionError(f"unknown estimator {self.estimator!r}; valid: {', '.join(ESTIMATORS.names())}")
        from connote.models.masking import COMPAT_MODES

        if self.compat not in COMPAT_MODES:
            raise OptionError(f"unknown --compat {self.compat!r}; valid: {', '.join(COMPAT_MODES)}")
