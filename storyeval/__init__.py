"""storyeval: statistical meta-evaluation of story evaluation metrics.

The package is organised by step (``data`` -> ``metrics`` / ``llm`` -> ``meta`` -> ``report``);
the most used functions are importable from here, lazily, so that ``import storyeval`` is fast.
"""

from __future__ import annotations

import importlib
from typing import Any

from storyeval._version import __version__

_LAZY = {
    "load_hanna": "storyeval.data",
    "load_hanna_stories": "storyeval.data",
    "load_user_study": "storyeval.data",
    "read_scores": "storyeval.data",
    "Dataset": "storyeval.data",
    "meta_evaluate": "storyeval.meta.pipeline",
    "MetaResult": "storyeval.meta.pipeline",
    "pairwise_correlations": "storyeval.correlation.kernel",
    "correlate": "storyeval.correlation.levels",
    "williams_test": "storyeval.compare.williams",
    "adjust_pvalues": "storyeval.compare.multitest",
    "icc2k": "storyeval.agreement.icc",
    "gwet_ac1": "storyeval.agreement.coefficients",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'storyeval' has no attribute {name!r}")
