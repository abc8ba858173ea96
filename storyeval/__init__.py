"""storyeval: statistical meta-evaluation of story evaluation metrics.

The package is organised by step (``data`` -> ``metrics`` / ``llm`` -> ``meta`` -> ``report``);
the most used functions are importable from here, lazily, so that ``import storyeval`` is fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from storyeval._version import __version__

if TYPE_CHECKING:  # the lazy exports below, as type checkers and IDEs should see them
    from storyeval import data as data
    from storyeval import exceptions as exceptions
    from storyeval.agreement.coefficients import gwet_ac1 as gwet_ac1
    from storyeval.agreement.icc import icc2k as icc2k
    from storyeval.compare.multitest import adjust_pvalues as adjust_pvalues
    from storyeval.compare.williams import williams_test as williams_test
    from storyeval.correlation.kernel import pairwise_correlations as pairwise_correlations
    from storyeval.correlation.levels import correlate as correlate
    from storyeval.data import Dataset as Dataset
    from storyeval.data import load_hanna as load_hanna
    from storyeval.data import load_hanna_stories as load_hanna_stories
    from storyeval.data import load_user_study as load_user_study
    from storyeval.data import read_dataset as read_dataset
    from storyeval.data import read_scores as read_scores
    from storyeval.meta.pipeline import MetaResult as MetaResult
    from storyeval.meta.pipeline import meta_evaluate as meta_evaluate

_LAZY = {
    "load_hanna": "storyeval.data",
    "load_hanna_stories": "storyeval.data",
    "load_user_study": "storyeval.data",
    "read_dataset": "storyeval.data",
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

_SUBMODULES = ("data", "exceptions")

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBMODULES:  # storyeval.data.read_dataset(...) after a bare `import storyeval`
        return importlib.import_module(f"storyeval.{name}")
    raise AttributeError(f"module 'storyeval' has no attribute {name!r}")
