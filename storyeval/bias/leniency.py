"""Leniency and scale use of pointwise raters against the human mean.

* `leniency`: per rater and criterion, the mean offset ``mean(R - H)`` (> 0: the rater is more
  lenient than the humans; tested against 0) and the mean absolute error ``mean |R - H|``
  (interval only), both with prompt-clustered intervals, on the stories both scored.
* `scale_use`: the share of each scale point among a rater's ratings (and, for comparison,
  among the individual annotators' ratings).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from storyeval.bias.inference import ratio_contrast
from storyeval.exceptions import InputError

__all__ = ["leniency", "scale_use"]


def leniency(wide: pd.DataFrame, pairs: Sequence[tuple[str, str]], *,
             confidence_level: float = 0.95, alternative: str = "two-sided") -> pd.DataFrame:
    """Mean offset and mean absolute error of raters against human scores, per criterion.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``; the rater and human columns.
    pairs : sequence of (rater column, human column)
        E.g. ``[("Beluga-13B RE 1", "Relevance"), ...]``.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}
        Of the offset's test (``"greater"``: more lenient than the humans).

    Returns
    -------
    DataFrame
        Two rows per pair: ``rater, criterion, estimand`` (``offset`` tested against 0;
        ``MAE`` with its interval only), ``estimate``, interval, test, ``n`` (stories both
        scored) and ``n_clusters`` (prompts).

    Notes
    -----
    Both are means over stories, `storyeval.bias.inference.ratio_contrast` with unit
    denominators, clustered by prompt: the cluster-robust standard error of a mean.

    Validated against statsmodels OLS with prompt-clustered errors
    (tests/test_bias_leniency.py).
    """
    prompts = wide.index.get_level_values("prompt_id").to_numpy()
    rows = []
    kw: dict[str, Any] = {"confidence_level": confidence_level}
    for rater, human in pairs:
        for col in (rater, human):
            if col not in wide.columns:
                raise InputError(f"no column {col!r} in the scores")
        d = wide[rater].to_numpy(dtype=np.float64) - wide[human].to_numpy(dtype=np.float64)
        ok = np.isfinite(d)
        if not ok.any():
            raise InputError(f"{rater!r} and {human!r} share no scored story")
        off = ratio_contrast(d[ok], np.ones(int(ok.sum())), clusters=prompts[ok],
                             alternative=alternative, **kw)
        rows.append({"rater": rater, "criterion": human, "estimand": "offset",
                     **off.to_dict()})
        mae = ratio_contrast(np.abs(d[ok]), np.ones(int(ok.sum())), clusters=prompts[ok], **kw)
        row = {"rater": rater, "criterion": human, "estimand": "MAE", **mae.to_dict()}
        row.update(null=np.nan, t=np.nan, pvalue=np.nan,
                   reason=row["reason"] or "interval only (no null value)")
        rows.append(row)
    return pd.DataFrame(rows)


def scale_use(wide: pd.DataFrame, columns: Mapping[str, Sequence[str]], *,
              points: Sequence[float] | None = None) -> pd.DataFrame:
    """Share of each scale point among the ratings of each named group of columns.

    Parameters
    ----------
    wide : DataFrame
        The scores.
    columns : mapping
        Label -> columns whose ratings are pooled (one rater's column; or the annotators of a
        criterion, ``{"humans (annotators)": ["Human 1 RE", "Human 2 RE", "Human 3 RE"]}``).
    points : sequence of float, optional
        The scale points (default: 1..5 when every rating lies in [1, 5], else the distinct
        rounded values). A rating is counted at the nearest point (a mean over tries or
        annotators falls between points: ``rounded`` says how many did).

    Returns
    -------
    DataFrame
        ``label, point, share, count, n, rounded``.
    """
    rows = []
    for label, cols in columns.items():
        missing = [c for c in cols if c not in wide.columns]
        if missing:
            raise InputError(f"no column {missing[0]!r} in the scores")
        values = wide[list(cols)].to_numpy(dtype=np.float64).ravel()
        values = values[np.isfinite(values)]
        if not len(values):
            raise InputError(f"{label!r}: no rating")
        grid = np.asarray(points if points is not None else
                          (np.arange(1.0, 6.0) if (values.min() >= 1 and values.max() <= 5)
                           else np.unique(np.round(values))), dtype=np.float64)
        nearest = grid[np.argmin(np.abs(values[:, None] - grid[None, :]), axis=1)]
        rounded = int(np.sum(nearest != values))
        counts = (nearest[:, None] == grid[None, :]).sum(axis=0)
        for point, count in zip(grid, counts):
            rows.append({"label": label, "point": float(point),
                         "share": float(count / len(values)), "count": int(count),
                         "n": len(values), "rounded": rounded})
    return pd.DataFrame(rows)
