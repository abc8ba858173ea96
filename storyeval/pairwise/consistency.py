"""Position bias of a pairwise judge: position consistency and first-position win rate."""

from __future__ import annotations

import numpy as np
import pandas as pd

from storyeval.pairwise.verdicts import validate_verdicts

__all__ = ["position_consistency"]


def _pair_keys(v: pd.DataFrame) -> pd.DataFrame:
    lo = np.where(v["story_a"] <= v["story_b"], v["story_a"], v["story_b"])
    hi = np.where(v["story_a"] <= v["story_b"], v["story_b"], v["story_a"])
    first = np.where(v["order"] == "AB", v["story_a"], v["story_b"])
    return pd.DataFrame({"judge": v["judge"].to_numpy(), "dimension": v["dimension"].to_numpy(),
                         "prompt_id": v["prompt_id"].to_numpy(), "lo": lo, "hi": hi,
                         "first_is_lo": first == lo,
                         # outcome from the point of view of the story 'lo': 1 win, 0 tie, -1 loss
                         "outcome": np.where(v["winner"].isna(), 0,
                                             np.where(v["winner"] == lo, 1, -1)),
                         "first_won": v["winner"].to_numpy() == first,
                         "tie": v["winner"].isna().to_numpy()})


def position_consistency(
    verdicts: pd.DataFrame,
    *,
    by: tuple[str, ...] = ("judge", "dimension"),
) -> pd.DataFrame:
    """Position consistency and first-position win rate of each judge on each dimension.

    Parameters
    ----------
    verdicts : DataFrame
        A verdict table (`storyeval.pairwise.verdicts`).
    by : tuple of str, default ("judge", "dimension")
        Grouping columns (any subset of ``judge``, ``dimension``; ``()`` pools everything).

    Returns
    -------
    DataFrame
        One row per group: ``n_verdicts``, ``n_pairs_both_orders`` (pairs judged in both
        orders), ``consistency`` (share of those pairs with the same verdict, naming the same
        story or "same" both times), ``consistent_decisive`` (share where both verdicts name the
        same story), ``first_position_win_rate`` (share of all verdicts won by the story shown
        first; ties count as not won), ``first_position_win_rate_decisive`` (the same among
        verdicts that are not ties; 0.5 means no position bias), ``tie_rate``, ``reason`` (why
        ``consistency`` is NaN: no pair judged in both orders).

    Notes
    -----
    For a pair judged as (X first, Y second) and (Y first, X second), the two verdicts are
    consistent when they name the same story or are both "same". A judge that always picks
    the first story has consistency 0 and decisive first-position win rate 1.

    References
    ----------
    1. Zheng, L. et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena.
       NeurIPS Datasets and Benchmarks (position consistency).

    Validated against hand-counted verdicts in tests/test_pairwise.py.

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"prompt_id": 0, "story_a": ["X/0", "X/0"], "story_b": ["Y/0", "Y/0"],
    ...                   "dimension": "Plot", "verdict": ["A", "B"], "order": ["AB", "BA"]})
    >>> position_consistency(v)[["consistency", "first_position_win_rate"]].values.tolist()
    [[0.0, 1.0]]
    """
    v = validate_verdicts(verdicts) if "winner" not in verdicts.columns else verdicts
    by = tuple(by)
    for col in by:
        if col not in ("judge", "dimension"):
            from storyeval.exceptions import InputError

            raise InputError(f"by may contain 'judge' and 'dimension' only, got {col!r}")
    keys = _pair_keys(v)
    group_cols = list(by)
    pair_cols = ["judge", "dimension", "prompt_id", "lo", "hi"]
    # one row per pair with its outcome in each order (NaN if that order is missing)
    wide = keys.pivot_table(index=pair_cols, columns="first_is_lo", values="outcome",
                            aggfunc="first")
    wide = wide.reindex(columns=[True, False])
    both = wide.dropna().reset_index()
    both["consistent"] = both[True] == both[False]
    both["consistent_decisive"] = both["consistent"] & (both[True] != 0)
    grouped_v = keys.groupby(group_cols, sort=True) if group_cols else [((), keys)]
    rows = []
    for name, g in grouped_v:
        name = name if isinstance(name, tuple) else (name,)
        sel = both
        for col, val in zip(group_cols, name):
            sel = sel[sel[col] == val]
        n_dec = int((~g["tie"]).sum())
        rows.append({
            **dict(zip(group_cols, name)),
            "n_verdicts": len(g),
            "n_pairs_both_orders": len(sel),
            "consistency": float(sel["consistent"].mean()) if len(sel) else np.nan,
            "consistent_decisive": float(sel["consistent_decisive"].mean()) if len(sel)
            else np.nan,
            "first_position_win_rate": float(g["first_won"].mean()),
            "first_position_win_rate_decisive": float(g.loc[~g["tie"], "first_won"].mean())
            if n_dec else np.nan,
            "tie_rate": float(g["tie"].mean()),
            "reason": "" if len(sel) else "no pair judged in both orders: consistency undefined",
        })
    return pd.DataFrame(rows)
