"""Sample-size planning for comparisons of correlations, by simulation.

Holds: the front end `plan_power` and its result (`planner`), the simulated data-generating
model (`model`) and the batched tests run on it (`batch`).

May import: ``storyeval.exceptions``, ``storyeval.correlation``, ``storyeval.compare``,
``storyeval._figure_io`` (drawing).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyeval.power.planner import (
        COEFFICIENTS,
        PLANNER_TESTS,
        PowerResult,
        fisher_z_power,
        plan_power,
        simulate_power,
    )

_LAZY = {
    "COEFFICIENTS": "planner",
    "PLANNER_TESTS": "planner",
    "PowerResult": "planner",
    "fisher_z_power": "planner",
    "plan_power": "planner",
    "simulate_power": "planner",
}

__all__ = [
    "COEFFICIENTS",
    "PLANNER_TESTS",
    "PowerResult",
    "fisher_z_power",
    "plan_power",
    "simulate_power",
]


def __getattr__(name: str) -> Any:
    # lazy: importing one module of the package does not import the others
    if name in _LAZY:
        return getattr(importlib.import_module(f"storyeval.power.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'storyeval.power' has no attribute {name!r}")
