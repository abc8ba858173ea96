"""Comparing two measures' correlations with a criterion, and multiplicity.

Holds: Williams' test (`williams`), variances of the difference of two dependent correlations
(`dependent`: U-statistic, jackknife, Zou's interval), the named comparison procedures and the
calibrated default with effect sizes (`procedures`), and p-value adjustment over families
(`multitest`: BH, BY, Bonferroni, Holm).

May import: ``storyeval.exceptions``, ``storyeval.correlation``, ``storyeval.resample``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyeval.compare.dependent import (
        DiffEstimate,
        jackknife_diff,
        kendall_rows,
        normal_test,
        untied_counts,
        ustat_diff,
        ustat_diff_from_rows,
        zou_ci,
    )
    from storyeval.compare.multitest import (
        METHODS,
        NAMED_FAMILIES,
        SingleTestFamilyWarning,
        adjust_frame,
        adjust_pvalues,
        family_sizes,
        warn_single_test_families,
    )
    from storyeval.compare.procedures import (
        CALIBRATED,
        PAPER_LEVEL,
        TEST_DESCRIPTIONS,
        TESTS,
        calibrated_test,
        compare_rows,
        resolve_tests,
    )
    from storyeval.compare.prompt_level import compare_prompt_level
    from storyeval.compare.williams import (
        WILLIAMS_NOTE,
        WilliamsResult,
        williams_test,
    )
    from storyeval.compare.within import compare_within_level

_LAZY = {
    "WILLIAMS_NOTE": "williams",
    "WilliamsResult": "williams",
    "williams_test": "williams",
    "DiffEstimate": "dependent",
    "jackknife_diff": "dependent",
    "kendall_rows": "dependent",
    "normal_test": "dependent",
    "untied_counts": "dependent",
    "ustat_diff": "dependent",
    "ustat_diff_from_rows": "dependent",
    "zou_ci": "dependent",
    "CALIBRATED": "procedures",
    "PAPER_LEVEL": "procedures",
    "TESTS": "procedures",
    "TEST_DESCRIPTIONS": "procedures",
    "calibrated_test": "procedures",
    "compare_rows": "procedures",
    "compare_prompt_level": "prompt_level",
    "compare_within_level": "within",
    "resolve_tests": "procedures",
    "METHODS": "multitest",
    "NAMED_FAMILIES": "multitest",
    "SingleTestFamilyWarning": "multitest",
    "adjust_frame": "multitest",
    "adjust_pvalues": "multitest",
    "family_sizes": "multitest",
    "warn_single_test_families": "multitest",
}

__all__ = [
    "CALIBRATED",
    "METHODS",
    "NAMED_FAMILIES",
    "PAPER_LEVEL",
    "TESTS",
    "TEST_DESCRIPTIONS",
    "WILLIAMS_NOTE",
    "DiffEstimate",
    "SingleTestFamilyWarning",
    "WilliamsResult",
    "adjust_frame",
    "adjust_pvalues",
    "calibrated_test",
    "compare_prompt_level",
    "compare_rows",
    "compare_within_level",
    "family_sizes",
    "jackknife_diff",
    "kendall_rows",
    "normal_test",
    "resolve_tests",
    "untied_counts",
    "ustat_diff",
    "ustat_diff_from_rows",
    "warn_single_test_families",
    "williams_test",
    "zou_ci",
]


def __getattr__(name: str) -> Any:
    # lazy: importing one module of the package does not import the others
    if name in _LAZY:
        return getattr(importlib.import_module(f"storyeval.compare.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'storyeval.compare' has no attribute {name!r}")
