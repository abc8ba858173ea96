"""Meta-evaluation: correlations at three levels, human baseline, Williams tests, p-value
adjustment, agreement and reliability, and the pipeline behind ``storyeval meta``.

Modules, one idea each: ``correlation`` (the vectorised kernel), ``levels`` (overall / system /
prompt), ``baseline`` (human baseline), ``williams``, ``multitest`` (BH/BY families), ``icc``,
``compare`` (the named comparison tests and their calibrated default), ``dependent`` (variance
of the difference of two dependent correlations: U-statistic, jackknife, Zou's interval),
``power`` (sample size planning by simulation), ``agreement`` (Gwet's AC1, Fleiss' kappa,
Krippendorff's alpha), ``user_study``, ``selection`` (``--metrics`` specifications) and
``pipeline`` ([`meta_evaluate`][storyeval.meta.pipeline.meta_evaluate]).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "pairwise_correlations": "correlation",
    "CorrelationMatrix": "correlation",
    "correlate": "levels",
    "correlation_matrix": "levels",
    "correlation_grid": "levels",
    "CorrelationGrid": "levels",
    "level_data": "levels",
    "human_baseline": "baseline",
    "williams_test": "williams",
    "ustat_diff": "dependent",
    "jackknife_diff": "dependent",
    "zou_ci": "dependent",
    "resolve_tests": "compare",
    "WilliamsResult": "williams",
    "adjust_pvalues": "multitest",
    "adjust_frame": "multitest",
    "icc2k": "icc",
    "icc2k_many": "icc",
    "ICCResult": "icc",
    "gwet_ac1": "agreement",
    "fleiss_kappa": "agreement",
    "krippendorff_alpha": "agreement",
    "annotator_icc": "agreement",
    "annotator_agreement": "annotators",
    "user_study_table": "user_study",
    "select_measures": "selection",
    "select_criteria": "selection",
    "meta_evaluate": "pipeline",
    "plan_power": "power",
    "PowerResult": "power",
    "fisher_z_power": "power",
    "MetaResult": "pipeline",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"storyeval.meta.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'storyeval.meta' has no attribute {name!r}")
