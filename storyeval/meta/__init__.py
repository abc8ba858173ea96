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
``storyeval.meta.correlate``, ...) and the modules that moved out of it were removed in 0.4, as
announced: import them from their packages (``storyeval.agreement``, ``storyeval.correlation``,
...).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyeval.meta.baseline import human_baseline
    from storyeval.meta.pipeline import MetaResult, meta_evaluate

_LAZY = {
    "human_baseline": "storyeval.meta.baseline",
    "meta_evaluate": "storyeval.meta.pipeline",
    "MetaResult": "storyeval.meta.pipeline",
}

__all__ = ["MetaResult", "human_baseline", "meta_evaluate"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'storyeval.meta' has no attribute {name!r}")
