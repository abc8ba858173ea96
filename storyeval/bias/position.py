"""Position bias of pairwise judges with prompt-clustered intervals and tests.

Per judge and dimension (`position_bias`):

* ``first-position rate``: the share of decided verdicts won by the story shown first, tested
  against 0.5 (it equals `storyeval.pairwise.position_consistency`'s
  ``first_position_win_rate_decisive``). Without position bias it is 0.5 only when the
  presentation order is unrelated to the stories (randomised, or both orders shown).
* ``flip rate``: among pairs judged in both orders, the share whose two verdicts disagree
  (1 - ``consistency``); interval only: a judge that answers with noise flips without any
  position bias, so 0 is not its null value.
* ``net position flips``: among the same pairs, P(the first-shown story won both times) -
  P(the second-shown won both times), tested against 0: without position bias the two orders
  are exchangeable and both kinds of flip are equally likely.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from storyeval.bias._verdicts import PAIR, keyed, select
from storyeval.bias.inference import ratio_contrast
from storyeval.exceptions import InputError, UndefinedStatisticWarning

__all__ = ["position_bias"]

_NOISE = ("no test: a judge answering with noise flips without position bias (see net "
          "position flips)")


def _orders(k: pd.DataFrame) -> pd.DataFrame:
    """Pairs judged in both orders: outcome (lo's side) with lo shown first and second."""
    wide = k.pivot_table(index=PAIR, columns="first_is_lo", values="outcome", aggfunc="first")
    wide = wide.reindex(columns=[True, False]).dropna()
    return pd.DataFrame({"prompt_id": wide.index.get_level_values("prompt_id"),
                         "lo_first": wide[True].to_numpy(), "lo_second": wide[False].to_numpy()})


def position_bias(verdicts: pd.DataFrame, *, dimension: str | None = None,
                  confidence_level: float = 0.95, alternative: str = "two-sided"
                  ) -> pd.DataFrame:
    """First-position rate, flip rate and net position flips of every judge and dimension.

    Parameters
    ----------
    verdicts : DataFrame
        A verdict table (`storyeval.pairwise.verdicts`), column ``order`` saying which story
        was shown first.
    dimension : str, optional
        Keep one dimension.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: the first position is favoured.

    Returns
    -------
    DataFrame
        Rows ``judge, dimension, estimand`` (``first-position rate``, ``flip rate``, ``net
        position flips``), ``estimate``, interval, test (``null`` 0.5, none, 0), ``n``
        (decided verdicts, or pairs judged in both orders) and ``n_clusters`` (prompts).

    Notes
    -----
    All three are ratios of sums over verdicts or pairs, clustered by prompt
    (`storyeval.bias.inference.ratio_contrast`). For a pair judged with its story ``lo`` first
    (outcome ``o1`` from lo's side) and second (``o2``): a flip is ``o1 != o2``; the first
    won both times when ``o1 = 1, o2 = -1``, the second both times when ``o1 = -1, o2 = 1``.

    Validated against `storyeval.pairwise.position_consistency` and hand-counted verdicts
    (tests/test_bias_position.py).

    Examples
    --------
    >>> v = pd.DataFrame({"prompt_id": [0, 0, 1, 1], "story_a": ["X/0", "X/0", "X/1", "X/1"],
    ...                   "story_b": ["Y/0", "Y/0", "Y/1", "Y/1"], "dimension": "Plot",
    ...                   "verdict": ["A", "B", "A", "A"], "order": ["AB", "BA", "AB", "BA"]})
    >>> t = position_bias(v)
    >>> t.set_index("estimand")["estimate"].round(3).to_dict()
    {'first-position rate': 0.75, 'flip rate': 0.5, 'net position flips': 0.5}
    """
    k = select(keyed(verdicts), dimension=dimension)
    kw: dict[str, Any] = {"confidence_level": confidence_level, "alternative": alternative}
    rows = []
    for (judge, dim), g in k.groupby(["judge", "dimension"], sort=False):
        decided = (g["outcome"] != 0).to_numpy()
        first_won = decided & ((g["outcome"] == 1).to_numpy() == g["first_is_lo"].to_numpy())
        res = ratio_contrast(first_won.astype(float), decided.astype(float),
                             clusters=g["prompt_id"].to_numpy(), null=0.5, **kw)
        row = {"judge": judge, "dimension": dim, "estimand": "first-position rate",
               **res.to_dict()}
        if g["first_is_lo"].nunique() == 1 and not row["reason"]:
            row["reason"] = ("every verdict shows the same story of a pair first: position is "
                             "confounded with the pair's order (randomise or show both)")
        rows.append(row)
        both = _orders(g)
        if both.empty:
            reason = "no pair judged in both orders"
            warnings.warn(f"judge {judge!r}, {dim!r}: {reason}", UndefinedStatisticWarning,
                          stacklevel=2)
            for name in ("flip rate", "net position flips"):
                rows.append({"judge": judge, "dimension": dim, "estimand": name,
                             "estimate": np.nan, "n": 0, "reason": reason})
            continue
        o1, o2 = both["lo_first"].to_numpy(), both["lo_second"].to_numpy()
        ones = np.ones(len(both))
        clusters = both["prompt_id"].to_numpy()
        flip = ratio_contrast((o1 != o2).astype(float), ones, clusters=clusters, **kw)
        row = {"judge": judge, "dimension": dim, "estimand": "flip rate", **flip.to_dict()}
        row.update(null=np.nan, t=np.nan, pvalue=np.nan, reason=row["reason"] or _NOISE)
        rows.append(row)
        net = ((o1 == 1) & (o2 == -1)).astype(float) - ((o1 == -1) & (o2 == 1)).astype(float)
        res = ratio_contrast(net, ones, clusters=clusters, null=0.0, **kw)
        rows.append({"judge": judge, "dimension": dim, "estimand": "net position flips",
                     **res.to_dict()})
    if not rows:
        raise InputError("no verdicts to read")
    return pd.DataFrame(rows)
