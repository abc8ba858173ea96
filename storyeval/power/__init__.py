"""Planning and economising a human study.

Holds: sample-size planning for comparisons of correlations by simulation: the front end
`plan_power` and its result (`planner`), the simulated data-generating model (`model`) and the
batched tests run on it (`batch`); closed-form power, sample size and minimum detectable
effect of pairwise and judge designs (`pairwise`); prediction-powered estimates (PPI, PPI++)
of human means, differences and win rates from few human labels and a judge (`ppi`); the
cheapest split between human labels and judge calls (`budget`); which items to label next and
the estimate that stays valid under that choice (`active`).

May import: ``storyeval.exceptions``, ``storyeval.correlation``, ``storyeval.compare``,
``storyeval._figure_io`` (drawing).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyeval.power.budget import LabelBudget, plan_label_budget, simulate_label_budget
    from storyeval.power.pairwise import (
        PairwisePlan,
        design_effect,
        minimum_detectable_effect,
        pairwise_power,
        pairwise_sample_size,
    )
    from storyeval.power.planner import (
        COEFFICIENTS,
        PLANNER_TESTS,
        PowerResult,
        fisher_z_power,
        plan_power,
        simulate_power,
    )
    from storyeval.power.ppi import (
        PPIResult,
        ppi_mean,
        ppi_mean_difference,
        ppi_mean_difference_many,
        ppi_mean_many,
        ppi_win_rate,
    )

_LAZY = {
    "LabelBudget": "budget",
    "plan_label_budget": "budget",
    "simulate_label_budget": "budget",
    "PPIResult": "ppi",
    "PairwisePlan": "pairwise",
    "design_effect": "pairwise",
    "minimum_detectable_effect": "pairwise",
    "pairwise_power": "pairwise",
    "pairwise_sample_size": "pairwise",
    "ppi_mean": "ppi",
    "ppi_mean_difference": "ppi",
    "ppi_mean_difference_many": "ppi",
    "ppi_mean_many": "ppi",
    "ppi_win_rate": "ppi",
    "COEFFICIENTS": "planner",
    "PLANNER_TESTS": "planner",
    "PowerResult": "planner",
    "fisher_z_power": "planner",
    "plan_power": "planner",
    "simulate_power": "planner",
}

__all__ = [
    "COEFFICIENTS",
    "LabelBudget",
    "PLANNER_TESTS",
    "PPIResult",
    "PairwisePlan",
    "PowerResult",
    "design_effect",
    "fisher_z_power",
    "minimum_detectable_effect",
    "pairwise_power",
    "pairwise_sample_size",
    "plan_label_budget",
    "plan_power",
    "ppi_mean",
    "ppi_mean_difference",
    "ppi_mean_difference_many",
    "ppi_mean_many",
    "ppi_win_rate",
    "simulate_label_budget",
    "simulate_power",
]


def __getattr__(name: str) -> Any:
    # lazy: importing one module of the package does not import the others
    if name in _LAZY:
        return getattr(importlib.import_module(f"storyeval.power.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'storyeval.power' has no attribute {name!r}")
