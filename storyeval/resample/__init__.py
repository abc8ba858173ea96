"""Resampling for meta-evaluation: bootstrap confidence intervals, paired permutation tests and
chance baselines, vectorised over many measures."""

from storyeval.resample.bootstrap import (
    CI_METHODS,
    RESAMPLE_BY,
    bootstrap_correlations,
    draw_resamples,
)
from storyeval.resample.chance import chance_baseline, chance_distribution
from storyeval.resample.permutation import UNITS, paired_permutation_test, permutation_pvalues

__all__ = [
    "CI_METHODS", "RESAMPLE_BY", "UNITS", "bootstrap_correlations", "chance_baseline",
    "chance_distribution", "draw_resamples", "paired_permutation_test", "permutation_pvalues",
]
