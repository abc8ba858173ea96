"""Paired comparison of generation systems under an LLM judge: by-prompt differences.

`storyeval.llm.outputs.judge_systems` ranks systems by their mean rating with unpaired
t-intervals; but every system writes a story for the same prompts, so the comparison of two
systems is paired by prompt: the difference of their stories' scores on each prompt removes the
prompt's difficulty from the comparison.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from storyeval._multitest import bh
from storyeval.exceptions import InputError

__all__ = ["judge_systems_paired"]


def judge_systems_paired(scores: pd.DataFrame, *, confidence_level: float = 0.95) -> pd.DataFrame:
    """By-prompt paired differences between every two systems, per LLM measure.

    Parameters
    ----------
    scores : DataFrame
        A per-story score table with ``system, prompt_id, measure, value`` (the output of
        `storyeval.llm.outputs.to_scores`; one story per system and prompt).
    confidence_level : float, default 0.95

    Returns
    -------
    DataFrame
        ``measure, system_a, system_b, mean_difference, sd, n_prompts, ci_low, ci_high,
        statistic, pvalue, pvalue_bh, test``: for each measure and pair of systems (``a`` the
        one with the higher mean), ``d_p = score_a(p) - score_b(p)`` over the prompts where
        both have a score; paired t-test (two-sided) and t-interval of the mean difference;
        ``pvalue_bh``: Benjamini-Hochberg over the pairs of one measure.

    Notes
    -----
    ``t = mean(d) / (sd(d) / sqrt(n))`` with ``n - 1`` degrees of freedom. Validated against
    ``scipy.stats.ttest_rel`` in tests/test_llm_paired.py.
    """
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    missing = [c for c in ("system", "prompt_id", "measure", "value") if c not in scores.columns]
    if missing:
        raise InputError(f"scores: missing column(s) {missing}")
    dup = scores.duplicated(["measure", "system", "prompt_id"]).to_numpy()
    if dup.any():
        row = int(np.argmax(dup))
        raise InputError(f"scores: row {row} repeats a (measure, system, prompt) story; the "
                         "paired comparison needs one story per system and prompt")
    frames = []
    for measure, sub in scores.groupby("measure", sort=False):
        wide = sub.pivot(index="prompt_id", columns="system", values="value")
        x = wide.to_numpy(dtype=np.float64)
        systems = np.asarray(wide.columns, dtype=object)
        order = np.argsort(-np.nanmean(x, axis=0), kind="stable")
        x, systems = x[:, order], systems[order]
        i, j = np.triu_indices(len(systems), 1)
        d = x[:, i] - x[:, j]  # prompts x pairs
        n = np.sum(np.isfinite(d), axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.nanmean(np.where(np.isfinite(d), d, np.nan), axis=0) if d.size else d
            sd = np.sqrt(np.nansum((d - mean) ** 2, axis=0) / (n - 1))
            se = sd / np.sqrt(n)
            t = mean / se
            df = np.maximum(n - 1, 1)
            p = np.where(n >= 2, 2 * stats.t.sf(np.abs(t), df), np.nan)
            half = np.where(n >= 2, stats.t.ppf(0.5 + confidence_level / 2, df) * se, np.nan)
        p_bh = bh(np.where(np.isfinite(p), p, np.nan))  # NaN: an undefined test, left out
        frames.append(pd.DataFrame({
            "measure": measure, "system_a": systems[i], "system_b": systems[j],
            "mean_difference": mean, "sd": sd, "n_prompts": n, "ci_low": mean - half,
            "ci_high": mean + half, "statistic": t, "pvalue": p, "pvalue_bh": p_bh,
            "test": "paired t over prompts (two-sided)"}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
