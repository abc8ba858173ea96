"""Correlation coefficients and the one Kendall engine.

Holds: the vectorised correlation kernel (`kernel`: Kendall tau-b/tau-c, Pearson, Spearman of
many column pairs at once), the tie rule shared by point estimates and resamples (`ties`), the
three levels of a meta-evaluation (`levels`: overall, system, prompt), and every piece of Kendall
counting: O(n log n) sorted counts and the choice between kernels (`kendall`, `kendall_sorted`,
the compiled numba kernels in `_kendall_numba`; per-item Kendall row sums of many column pairs,
compiled, in `_kendall_rows_numba`), weighted counts for bootstrap resamples and
permutations (`kendall_weighted`), and the resampling kernels with their cost model
(`resampled`, `resampled_overall`).

May import: ``storyeval.exceptions``, ``storyeval.data`` (types only), NumPy/SciPy. Nothing of
``resample``, ``compare``, ``agreement``, ``power``, ``meta``, ``report`` or ``cli``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyeval.correlation.kendall_weighted import (
        WeightedCounts,
        WeightedKendall,
    )
    from storyeval.correlation.kernel import (
        METHODS,
        NAN_POLICIES,
        CorrelationMatrix,
        pairwise_correlations,
        resolve_method,
    )
    from storyeval.correlation.levels import (
        LEVELS,
        CorrelationGrid,
        correlate,
        correlation_grid,
        correlation_matrix,
        level_data,
    )
    from storyeval.correlation.ties import (
        TIE_RTOL,
        TIE_RULE,
        snap_ties,
        tie_values,
    )

_LAZY = {
    "METHODS": "kernel",
    "NAN_POLICIES": "kernel",
    "CorrelationMatrix": "kernel",
    "pairwise_correlations": "kernel",
    "resolve_method": "kernel",
    "LEVELS": "levels",
    "CorrelationGrid": "levels",
    "correlate": "levels",
    "correlation_grid": "levels",
    "correlation_matrix": "levels",
    "level_data": "levels",
    "TIE_RTOL": "ties",
    "TIE_RULE": "ties",
    "snap_ties": "ties",
    "tie_values": "ties",
    "WeightedCounts": "kendall_weighted",
    "WeightedKendall": "kendall_weighted",
}

__all__ = [
    "LEVELS",
    "METHODS",
    "NAN_POLICIES",
    "TIE_RTOL",
    "TIE_RULE",
    "CorrelationGrid",
    "CorrelationMatrix",
    "WeightedCounts",
    "WeightedKendall",
    "correlate",
    "correlation_grid",
    "correlation_matrix",
    "level_data",
    "pairwise_correlations",
    "resolve_method",
    "snap_ties",
    "tie_values",
]


def __getattr__(name: str) -> Any:
    # lazy: importing one module of the package does not import the others
    if name in _LAZY:
        return getattr(importlib.import_module(f"storyeval.correlation.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'storyeval.correlation' has no attribute {name!r}")
