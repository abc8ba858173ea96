"""Meta-evaluation: the pipeline behind ``storyeval meta``.

`meta_evaluate` composes the other packages: correlations at three levels
(``storyeval.correlation``), the human baseline (`baseline`), comparison tests with effect sizes
and p-value adjustment (``storyeval.compare``), resampling columns added to a result
(`resampling`: bootstrap intervals, permutation p-values, chance baselines, through
``storyeval.resample``), the WMT meta-metrics' glue (`wmt`) and length diagnostics
(`length`). The ``--metrics`` specifications are read by ``storyeval.data.selection``;
agreement and reliability live in ``storyeval.agreement``, power planning in
``storyeval.power``.

May import every package below it (data, correlation, resample, compare, agreement); nothing of
``report`` or ``cli``.

The names that lived here before release 0.2 (``storyeval.meta.icc2k``,
``storyeval.meta.correlate``, ...) still resolve for one release, with a DeprecationWarning
naming their new home.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyeval.meta.baseline import human_baseline
    from storyeval.meta.pipeline import MetaResult, meta_evaluate

_LAZY = {
    "human_baseline": "storyeval.meta.baseline",
    "meta_evaluate": "storyeval.meta.pipeline",
    "MetaResult": "storyeval.meta.pipeline",
}

#: Names re-exported here before 0.2 whose home is now another package.
_MOVED = {
    "select_measures": "storyeval.data.selection",
    "select_criteria": "storyeval.data.selection",
    "pairwise_correlations": "storyeval.correlation",
    "CorrelationMatrix": "storyeval.correlation",
    "correlate": "storyeval.correlation",
    "correlation_matrix": "storyeval.correlation",
    "correlation_grid": "storyeval.correlation",
    "CorrelationGrid": "storyeval.correlation",
    "level_data": "storyeval.correlation",
    "williams_test": "storyeval.compare",
    "WilliamsResult": "storyeval.compare",
    "ustat_diff": "storyeval.compare",
    "jackknife_diff": "storyeval.compare",
    "zou_ci": "storyeval.compare",
    "resolve_tests": "storyeval.compare",
    "adjust_pvalues": "storyeval.compare",
    "adjust_frame": "storyeval.compare",
    "icc2k": "storyeval.agreement",
    "icc2k_many": "storyeval.agreement",
    "ICCResult": "storyeval.agreement",
    "gwet_ac1": "storyeval.agreement",
    "fleiss_kappa": "storyeval.agreement",
    "krippendorff_alpha": "storyeval.agreement",
    "annotator_icc": "storyeval.agreement",
    "annotator_agreement": "storyeval.agreement",
    "user_study_table": "storyeval.reproduction",
    "plan_power": "storyeval.power",
    "PowerResult": "storyeval.power",
    "fisher_z_power": "storyeval.power",
}

__all__ = ["MetaResult", "human_baseline", "meta_evaluate"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _MOVED:
        from storyeval._moved import REMOVED_IN

        warnings.warn(f"storyeval.meta.{name} moved to {_MOVED[name]}.{name}; the old path will "
                      f"be removed in storyeval {REMOVED_IN}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(_MOVED[name]), name)
    raise AttributeError(f"module 'storyeval.meta' has no attribute {name!r}")
