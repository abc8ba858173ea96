"""Verdict tables from per-story scores: a pointwise measure, a reward model or one annotator's
ratings turned into side-by-side verdicts on every pair of systems within each prompt."""

from __future__ import annotations

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["verdicts_from_scores"]


def verdicts_from_scores(
    wide: pd.DataFrame,
    column: str,
    *,
    judge: str | None = None,
    dimension: str | None = None,
    tie_margin: float = 0.0,
) -> pd.DataFrame:
    """One verdict per pair of stories of the same prompt: the story scored higher wins, scores
    within ``tie_margin`` of each other are ``"same"``.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, a float column ``column`` (``Dataset.wide()``).
    column : str
        The scores (a measure, a criterion, one annotator's ratings).
    judge, dimension : str, optional
        Labels of the verdicts (default: ``column`` for both).
    tie_margin : float, default 0
        Scores that differ by at most this much are a tie (``"same"``): ``|a - b| <= margin``.
        0: only equal scores tie (a 1-5 rating scale ties often, a metric rarely).

    Returns
    -------
    DataFrame
        A verdict table (`storyeval.pairwise.verdicts`) with ``order = "AB"``: systems in
        index order within each prompt, story ids ``"{system}/{prompt_id}"``. Pairs where
        either story has no score (NaN, or no story) are left out.

    Examples
    --------
    >>> idx = pd.MultiIndex.from_product([["X", "Y"], [0]], names=["system", "prompt_id"])
    >>> verdicts_from_scores(pd.DataFrame({"m": [2.0, 1.0]}, index=idx), "m")["verdict"].tolist()
    ['A']
    """
    if column not in wide.columns:
        raise InputError(f"column {column!r} not in the table; columns are "
                         f"{list(wide.columns)[:10]}")
    if not (np.isfinite(tie_margin) and tie_margin >= 0):
        raise InputError(f"tie_margin must be a finite number >= 0, got {tie_margin!r}")
    idx = wide.index
    if not isinstance(idx, pd.MultiIndex) or idx.nlevels != 2:
        raise InputError("wide must be indexed by (system, prompt_id)")
    systems = pd.Index(pd.unique(idx.get_level_values(0)))
    prompts = pd.Index(pd.unique(idx.get_level_values(1)))
    grid = np.full((len(prompts), len(systems)), np.nan)
    grid[prompts.get_indexer(idx.get_level_values(1)),
         systems.get_indexer(idx.get_level_values(0))] = wide[column].to_numpy(dtype=float)
    i, j = np.triu_indices(len(systems), k=1)
    diff = grid[:, i] - grid[:, j]                      # (prompts, system pairs)
    p, k = np.nonzero(~np.isnan(diff))
    d = diff[p, k]
    prompt = prompts[p]
    sys_a, sys_b = systems[i[k]].astype(str), systems[j[k]].astype(str)
    pid = prompt.astype(str)
    return pd.DataFrame({
        "prompt_id": prompt, "story_a": sys_a + "/" + pid, "story_b": sys_b + "/" + pid,
        "dimension": dimension or column,
        "verdict": np.where(d > tie_margin, "A", np.where(d < -tie_margin, "B", "same")),
        "order": "AB",
        "judge": judge or column, "system_a": sys_a, "system_b": sys_b})
