"""Win matrices: how often each item (system or story) beat each other item on one dimension."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError
from storyeval.pairwise.verdicts import validate_verdicts

__all__ = ["WinMatrix", "select_verdicts", "win_matrix"]

_BY = ("system", "story")


def select_verdicts(
    verdicts: pd.DataFrame,
    *,
    dimension: str | None = None,
    judge: str | None = None,
) -> pd.DataFrame:
    """Validated rows of one dimension (and optionally one judge).

    ``dimension=None`` is allowed only when the table holds a single dimension.
    """
    v = validate_verdicts(verdicts) if "winner" not in verdicts.columns else verdicts
    dims = list(dict.fromkeys(v["dimension"]))
    if dimension is None:
        if len(dims) != 1:
            raise InputError(f"the verdicts cover several dimensions {dims}; choose one with "
                             "dimension=...")
        dimension = dims[0]
    if dimension not in dims:
        raise InputError(f"dimension {dimension!r} not in the verdicts; available: {dims}")
    v = v[v["dimension"] == dimension]
    if judge is not None:
        judges = list(dict.fromkeys(v["judge"]))
        if judge not in judges:
            raise InputError(f"judge {judge!r} has no verdicts on {dimension!r}; available: "
                             f"{judges}")
        v = v[v["judge"] == judge]
    return v


def _item_columns(v: pd.DataFrame, by: str) -> tuple[str, str]:
    if by not in _BY:
        raise InputError(f"by must be one of {_BY}, got {by!r}")
    if by == "story":
        return "story_a", "story_b"
    if "system_a" not in v.columns or "system_b" not in v.columns:
        raise InputError("by='system' needs columns 'system_a' and 'system_b' (or story ids of "
                         "the form 'system/prompt_id')")
    return "system_a", "system_b"


def _codes(v: pd.DataFrame, by: str, items: list[str] | None = None):
    """Items and the item codes of both sides of every verdict."""
    ca, cb = _item_columns(v, by)
    a = v[ca].to_numpy(dtype=object)
    b = v[cb].to_numpy(dtype=object)
    if by == "system" and np.any(a == b):
        row = int(np.argmax(a == b))
        raise InputError(f"a verdict compares two stories of the same system {a[row]!r} "
                         f"(row {v.index[row]}); by='system' needs stories of different systems")
    if items is None:
        items = sorted(set(a) | set(b), key=str)
    pos = {it: k for k, it in enumerate(items)}
    unknown = sorted((set(a) | set(b)) - set(pos), key=str)
    if unknown:
        raise InputError(f"items {unknown} are not in the given items list")
    ia = np.array([pos[x] for x in a], dtype=np.int64)
    ib = np.array([pos[x] for x in b], dtype=np.int64)
    return list(items), ia, ib


def _totals(v: pd.DataFrame, by: str):
    """Counts over all prompts: items, wins[i, j] (i beat j), ties[i, j] (symmetric)."""
    items, ia, ib = _codes(v, by)
    k = len(items)
    verdict = v["verdict"].to_numpy()
    wins = np.zeros((k, k))
    ties = np.zeros((k, k))
    a_won, b_won, tie = verdict == "A", verdict == "B", verdict == "same"
    np.add.at(wins, (ia[a_won], ib[a_won]), 1.0)
    np.add.at(wins, (ib[b_won], ia[b_won]), 1.0)
    np.add.at(ties, (ia[tie], ib[tie]), 1.0)
    np.add.at(ties, (ib[tie], ia[tie]), 1.0)
    return items, wins, ties


def _counts(v: pd.DataFrame, by: str, items: list[str] | None = None):
    """Per-prompt counts: items, prompts, wins[p, i, j] (i beat j), ties[p, i, j] (symmetric)."""
    items, ia, ib = _codes(v, by, items)
    prompts, ip = np.unique(v["prompt_id"].to_numpy(), return_inverse=True)
    k, n_p = len(items), len(prompts)
    verdict = v["verdict"].to_numpy()
    wins = np.zeros((n_p, k, k))
    ties = np.zeros((n_p, k, k))
    a_won = verdict == "A"
    b_won = verdict == "B"
    tie = verdict == "same"
    np.add.at(wins, (ip[a_won], ia[a_won], ib[a_won]), 1.0)
    np.add.at(wins, (ip[b_won], ib[b_won], ia[b_won]), 1.0)
    np.add.at(ties, (ip[tie], ia[tie], ib[tie]), 1.0)
    np.add.at(ties, (ip[tie], ib[tie], ia[tie]), 1.0)
    return list(items), prompts, wins, ties


@dataclass(frozen=True)
class WinMatrix:
    """Wins and ties between items on one dimension.

    Attributes
    ----------
    wins : DataFrame
        ``wins.loc[i, j]``: number of verdicts where item ``i`` beat item ``j``.
    ties : DataFrame
        ``ties.loc[i, j]``: number of "same" verdicts between ``i`` and ``j`` (symmetric).
    dimension : str
    by : str
        ``"system"`` or ``"story"``.
    """

    wins: pd.DataFrame
    ties: pd.DataFrame
    dimension: str
    by: str

    @property
    def items(self) -> list[str]:
        return list(self.wins.index)

    def win_rate(self) -> pd.Series:
        """Share of each item's comparisons that it won, ties counted as half a win."""
        w = self.wins.to_numpy()
        t = self.ties.to_numpy()
        n = w + w.T + t
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = (w.sum(axis=1) + 0.5 * t.sum(axis=1)) / n.sum(axis=1)
        return pd.Series(rate, index=self.wins.index, name="win_rate")

    def to_frame(self) -> pd.DataFrame:
        """Long table: ``item, opponent, wins, losses, ties, n`` for every ordered item pair
        that met at least once."""
        w = self.wins.to_numpy()
        t = self.ties.to_numpy()
        i, j = np.nonzero((w + w.T + t) > 0)
        items = np.asarray(self.items, dtype=object)
        return pd.DataFrame({"dimension": self.dimension, "item": items[i], "opponent": items[j],
                             "wins": w[i, j], "losses": w[j, i], "ties": t[i, j],
                             "n": w[i, j] + w[j, i] + t[i, j]})


def win_matrix(
    verdicts: pd.DataFrame,
    *,
    dimension: str | None = None,
    by: str = "system",
    judge: str | None = None,
) -> WinMatrix:
    """Win matrix of one dimension.

    Parameters
    ----------
    verdicts : DataFrame
        A verdict table (see `storyeval.pairwise.verdicts`).
    dimension : str, optional
        The dimension; may be omitted when the table holds only one.
    by : {"system", "story"}, default "system"
        Items compared: the stories' systems (paper 000's system ranking) or the stories.
    judge : str, optional
        Keep only this judge's verdicts (default: all judges pooled).

    Returns
    -------
    WinMatrix
        Every verdict counts once: a pair judged in both orders contributes two verdicts.

    Notes
    -----
    ``W[i, j] = #{verdicts: i better than j}``, ``T[i, j] = T[j, i] = #{verdicts: i and j the
    same}``; items sorted by name.

    Validated against hand-counted tables in tests/test_pairwise.py.

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"prompt_id": [0, 0], "story_a": ["X/0", "X/0"],
    ...                   "story_b": ["Y/0", "Y/0"], "dimension": "Plot",
    ...                   "verdict": ["A", "same"], "order": ["AB", "BA"]})
    >>> m = win_matrix(v)
    >>> int(m.wins.loc["X", "Y"]), int(m.ties.loc["X", "Y"])
    (1, 1)
    """
    v = select_verdicts(verdicts, dimension=dimension, judge=judge)
    items, wins, ties = _totals(v, by)  # no per-prompt arrays: O(k^2) memory
    dim = str(v["dimension"].iloc[0])
    idx = pd.Index(items, name="item")
    cols = pd.Index(items, name="opponent")
    return WinMatrix(pd.DataFrame(wins, index=idx, columns=cols),
                     pd.DataFrame(ties, index=idx, columns=cols), dim, by)
