"""Comparing two measures at the prompt level (WMT's "item" or segment grouping).

The prompt-level correlation of a measure with a criterion is the mean over prompts of the
within-prompt correlations across systems (`storyeval.correlation.levels`). Two measures are
compared by the per-prompt differences ``d_p = r_p(h, a) - r_p(h, b)``: prompts are independent
units, so a paired one-sample t-test of the ``d_p`` (df = prompts - 1) tests whether the two
prompt-level correlations differ, and its t interval is the interval the test inverts (they
agree by construction). Under the null that a and b are exchangeable within prompts each
``d_p`` is symmetric about 0, where the t-test holds its level with few prompts (measured:
docs "Which test?").
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError

__all__ = ["PROMPT_LEVEL_TEST", "compare_prompt_level"]

PROMPT_LEVEL_TEST = ("paired t-test over prompts of r_p(h,a) - r_p(h,b) (within-prompt "
                     "correlations across systems), df = prompts - 1; t interval")


def _names(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value]


def compare_prompt_level(wide: pd.DataFrame, criterion: str | Sequence[str],
                         measure_a: str | Sequence[str], measure_b: str | Sequence[str], *,
                         method: str = "kendall_b", confidence_level: float = 0.95,
                         alternative: str = "two-sided") -> pd.DataFrame:
    """Paired t-test and interval of the difference of two prompt-level correlations.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, one float column per measure (``Dataset.wide()``); every
        system scored on every prompt.
    criterion, measure_a, measure_b : str or sequence of str
        One comparison (strings) or several (equal-length sequences; a string is repeated).
    method : {"kendall_b", "pearson", "spearman", "kendall_c"}
        The within-prompt coefficient.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: ``a`` correlates more with the criterion than ``b``.

    Returns
    -------
    DataFrame
        One row per comparison: ``criterion, measure_a, measure_b, delta`` (mean of ``d_p``),
        ``t, df, p, ci_low, ci_high, n_prompts`` (prompts where both within-prompt
        correlations are defined), ``test`` and ``reason`` (why ``p`` is NaN, else "").

    Notes
    -----
    ``d_p = r_p(h, a) - r_p(h, b)`` over the m prompts where both are defined (a prompt whose
    criterion or measure is constant across systems has no correlation);
    ``t = mean(d) / (sd(d) / sqrt(m))`` with ``m - 1`` degrees of freedom; the interval is
    ``mean(d) +- t_{(1 + cl) / 2, m - 1} sd(d) / sqrt(m)`` (one-sided alternatives: the
    matching one-sided bound), so ``p < 1 - cl`` exactly when it excludes 0. ``delta`` equals
    the difference of the two prompt-level correlations when both average the same prompts.
    The estimand is the mean within-prompt difference over the population of prompts, for
    the systems observed. Validated against ``scipy.stats.ttest_1samp`` on the ``d_p``
    computed with ``scipy.stats.kendalltau`` / ``pearsonr`` (tests/test_prompt_level.py).
    """
    from storyeval.correlation.kernel import pairwise_correlations
    from storyeval.correlation.levels import level_data

    if alternative not in ("two-sided", "greater", "less"):
        raise InputError(f"unknown alternative {alternative!r}; use two-sided, greater or less")
    if not 0.0 < confidence_level < 1.0:
        raise InputError(f"confidence_level must lie in (0, 1), not {confidence_level!r}")
    crit, a, b = _names(criterion), _names(measure_a), _names(measure_b)
    size = max(len(crit), len(a), len(b))
    crit, a, b = ([v[0]] * size if len(v) == 1 else v for v in (crit, a, b))
    if not len(crit) == len(a) == len(b) == size:
        raise InputError("criterion, measure_a and measure_b must have the same length")
    cols = list(dict.fromkeys([*crit, *a, *b]))
    cube = np.asarray(level_data(wide, cols, level="prompt"), dtype=np.float64)  # (P, S, K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        R = pairwise_correlations(cube, method=method, warn=False).statistic  # (P, K, K)
    pos = {c: k for k, c in enumerate(cols)}
    ih, ia, ib = (np.array([pos[c] for c in v]) for v in (crit, a, b))
    d = R[:, ih, ia] - R[:, ih, ib]  # (P, rows)
    ok = np.isfinite(d)
    m = ok.sum(0)
    d0 = np.where(ok, d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = d0.sum(0) / m
        var = np.where(ok, (d - mean) ** 2, 0.0).sum(0) / (m - 1)
        se = np.sqrt(var / m)
        t = mean / se
    df = m - 1
    if alternative == "two-sided":
        p = 2 * stats.t.sf(np.abs(t), df)
        q = stats.t.ppf(0.5 + confidence_level / 2, df)
        low, high = mean - q * se, mean + q * se
    else:
        sign = 1.0 if alternative == "greater" else -1.0
        p = stats.t.sf(sign * t, df)
        q = stats.t.ppf(confidence_level, df)
        low = np.where(sign > 0, mean - q * se, -np.inf)
        high = np.where(sign > 0, np.inf, mean + q * se)
    reason = np.where(m < 2, "fewer than 2 prompts with both within-prompt correlations defined",
                      np.where(se == 0, "the per-prompt differences are all equal", ""))
    bad = reason != ""
    p = np.where(bad, np.nan, p)
    t = np.where(bad, np.nan, t)
    low, high = np.where(bad, np.nan, low), np.where(bad, np.nan, high)
    return pd.DataFrame({"criterion": crit, "measure_a": a, "measure_b": b, "delta": mean,
                         "t": t, "df": df, "p": p, "ci_low": np.clip(low, -2.0, 2.0),
                         "ci_high": np.clip(high, -2.0, 2.0), "n_prompts": m,
                         "test": PROMPT_LEVEL_TEST, "reason": reason.astype(object)})
