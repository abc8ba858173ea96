"""Judge-vs-human agreement on pairwise data, the design of Agents' Room (paper 000): the
correlation of the judge's and the humans' system strengths over systems x dimensions, and the
item-level correlation of their -1/0/+1 verdicts, with intervals from one prompt bootstrap
shared by both sides (paired).

Resampling is vectorised: per-prompt win and tie counts (or per-item verdict values) are summed
with a (resamples x prompts) multiplicity matrix; Spearman and Kendall tau-b of every resample
are computed at once (ranks along the resample axis; tau-b from pair signs, or from the joint
table of the few distinct verdict values at the item level).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel
from storyeval.resample.clusters import (
    bootstrap_weights,
    check_confidence,
    check_resamples,
    percentile_interval,
    rng_from,
)

__all__ = ["item_correlation", "ranking_agreement", "system_strengths"]

_STRENGTHS = ("win-rate", "bradley-terry")


# ------------------------------------------------------------------ vectorised correlations
def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman correlation of each row pair of x, y (B, m), midranks for ties."""
    rx = stats.rankdata(x, axis=1)
    ry = stats.rankdata(y, axis=1)
    return _pearson_rows(rx, ry)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (xc * yc).sum(axis=1) / np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))


def _kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each row pair (B, m) from the signs of all m(m-1)/2 pairs (m small:
    systems x dimensions)."""
    i, j = np.triu_indices(x.shape[1], k=1)
    sx = np.sign(x[:, j] - x[:, i])
    sy = np.sign(y[:, j] - y[:, i])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=1) / np.sqrt((sx != 0).sum(axis=1) * (sy != 0).sum(axis=1))


def _table_correlations(table: np.ndarray, vx: np.ndarray, vy: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Spearman and Kendall tau-b from joint tables ``table`` (B, kx, ky) of counts of the
    distinct values vx (kx,) and vy (ky,) (both sorted): midranks from the margins, tau-b from
    concordant / discordant cell products. Exact for any multiplicities (resampled items)."""
    n = table.sum(axis=(1, 2))
    cx, cy = table.sum(axis=2), table.sum(axis=1)
    rank_x = np.cumsum(cx, axis=1) - cx + (cx + 1) / 2
    rank_y = np.cumsum(cy, axis=1) - cy + (cy + 1) / 2
    mx = (cx * rank_x).sum(axis=1) / n
    my = (cy * rank_y).sum(axis=1) / n
    dx, dy = rank_x - mx[:, None], rank_y - my[:, None]
    cov = np.einsum("bij,bi,bj->b", table, dx, dy)
    var_x, var_y = (cx * dx ** 2).sum(axis=1), (cy * dy ** 2).sum(axis=1)
    # concordant: cells strictly above-right; discordant: strictly above-left
    above = np.cumsum(np.cumsum(table[:, ::-1, ::-1], axis=1), axis=2)[:, ::-1, ::-1]
    upper_right = np.zeros_like(table)
    upper_right[:, :-1, :-1] = above[:, 1:, 1:]
    left = np.cumsum(np.cumsum(table[:, ::-1, :], axis=1), axis=2)[:, ::-1, :]
    upper_left = np.zeros_like(table)
    upper_left[:, :-1, 1:] = left[:, 1:, :-1]
    conc = (table * upper_right).sum(axis=(1, 2))
    disc = (table * upper_left).sum(axis=(1, 2))
    n0 = n * (n - 1) / 2
    n1 = (cx * (cx - 1) / 2).sum(axis=1)
    n2 = (cy * (cy - 1) / 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = cov / np.sqrt(var_x * var_y)
        tau = (conc - disc) / np.sqrt((n0 - n1) * (n0 - n2))
    return rho, tau


# ------------------------------------------------------------------ counts per prompt
def _prompt_counts(v: pd.DataFrame, systems: list, prompts: pd.Index, dims: list
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt, dimension: wins[p, d, i, j] and ties[p, d, i, j] between systems."""
    from storyeval.pairwise.winmatrix import _counts

    k = len(systems)
    wins = np.zeros((len(prompts), len(dims), k, k))
    ties = np.zeros_like(wins)
    for d, dim in enumerate(dims):
        sub = v[v["dimension"] == dim]
        if sub.empty:
            raise InputError(f"no verdict on dimension {dim!r}")
        _, local, w, t = _counts(sub, "system", systems)
        at = prompts.get_indexer(local)
        wins[at, d] = w
        ties[at, d] = t
    return wins, ties


def _win_rates(wins: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """(..., d, k) share of each system's comparisons won (a tie is half a win)."""
    score = wins.sum(axis=-1) + 0.5 * ties.sum(axis=-1)
    total = wins.sum(axis=-1) + wins.sum(axis=-2) + ties.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return score / total


def _bt_strengths(wins: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """(d, k) centred Bradley-Terry-Davidson log-strengths, one fit per dimension."""
    from storyeval.pairwise.bradley_terry import fit_bradley_terry

    return np.stack([fit_bradley_terry(wins[d], ties[d]).log_strength
                     for d in range(wins.shape[0])])


def system_strengths(
    verdicts: pd.DataFrame,
    *,
    strength: str = "win-rate",
    systems: list | None = None,
    dimensions: list | None = None,
) -> pd.DataFrame:
    """Systems x dimensions table of win rates (ties half a win) or Bradley-Terry-Davidson
    log-strengths (centred)."""
    from storyeval.pairwise.verdicts import validate_verdicts

    v = validate_verdicts(verdicts)
    systems, dims, prompts = _layout(v, v, systems, dimensions)
    wins, ties = _prompt_counts(v, systems, prompts, dims)
    values = _strength_values(wins.sum(axis=0), ties.sum(axis=0), strength)
    return pd.DataFrame(values.T, index=pd.Index(systems, name="system"), columns=dims)


def _strength_values(wins: np.ndarray, ties: np.ndarray, strength: str) -> np.ndarray:
    if strength not in _STRENGTHS:
        raise InputError(f"strength must be one of {_STRENGTHS}, got {strength!r}")
    return _win_rates(wins, ties) if strength == "win-rate" else _bt_strengths(wins, ties)


def _layout(judge: pd.DataFrame, human: pd.DataFrame, systems, dimensions):
    for name, t in (("judge", judge), ("human", human)):
        if "system_a" not in t.columns:
            raise InputError(f"{name} verdicts need system_a/system_b (or story ids "
                             "'system/prompt_id') to rank systems")
    dims_h = list(dict.fromkeys(human["dimension"]))
    dims = dimensions or [d for d in dims_h if d in set(judge["dimension"])]
    if not dims:
        raise InputError(f"the judge and human verdicts share no dimension (human: {dims_h}, "
                         f"judge: {sorted(set(judge['dimension']))})")
    if systems is None:
        systems = sorted(set(human["system_a"]) | set(human["system_b"]), key=str)
        extra = (set(judge["system_a"]) | set(judge["system_b"])) - set(systems)
        if extra:
            raise InputError(f"the judge compares systems the humans never judged: "
                             f"{sorted(extra, key=str)}")
    prompts = pd.Index(pd.unique(pd.concat([judge["prompt_id"], human["prompt_id"]])))
    return list(systems), list(dims), prompts


# ------------------------------------------------------------------ item level
def _item_values(v: pd.DataFrame, dims: list) -> pd.Series:
    """Mean -1/0/+1 outcome (from the side of the story whose id sorts first) per item
    (dimension, prompt, lo, hi): several annotators or both orders are averaged."""
    from storyeval.pairwise.consistency import _pair_keys

    k = _pair_keys(v[v["dimension"].isin(dims)])
    k["prompt_id"] = k["prompt_id"].astype(str)
    return k.groupby(["dimension", "prompt_id", "lo", "hi"], sort=True)["outcome"].mean()


def item_correlation(
    judge_verdicts: pd.DataFrame,
    human_verdicts: pd.DataFrame,
    *,
    dimensions: list | None = None,
) -> dict:
    """Item-level Spearman and Kendall tau-b between the judge's and the humans' verdicts
    (-1/0/+1 from one story's side; averaged over annotators and orders) on the pairs both
    judged. Validated against scipy ``spearmanr`` and ``kendalltau``."""
    res = ranking_agreement(judge_verdicts, human_verdicts, dimensions=dimensions,
                            n_resamples=0)
    items = res[res["level"] == "items"].set_index("coefficient")["statistic"]
    return {"spearman": float(items["spearman"]), "kendall_tau_b": float(items["kendall_tau_b"])}


def ranking_agreement(
    judge_verdicts: pd.DataFrame,
    human_verdicts: pd.DataFrame,
    *,
    judge: str | None = None,
    strength: str = "win-rate",
    dimensions: list | None = None,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Agreement of a judge with the humans on system rankings and on items.

    Parameters
    ----------
    judge_verdicts, human_verdicts : DataFrame
        Verdict tables on the same systems (``system_a``/``system_b`` or ``system/prompt``
        story ids) and dimensions.
    judge : str, optional
        Keep one judge of ``judge_verdicts`` (needed when it holds several).
    strength : {"win-rate", "bradley-terry"}, default "win-rate"
        System strength per dimension: share of comparisons won (ties half), or the centred
        Bradley-Terry-Davidson log-strength (one maximum-likelihood fit per dimension and
        resample: slower).
    n_resamples : int, default 1000
        Prompt-bootstrap resamples (0: no interval). Prompts are drawn once per resample and
        used for both sides (paired).

    Returns
    -------
    DataFrame
        Rows ``level`` x ``coefficient``: level ``"systems x dimensions"`` (the S x D strengths
        of the judge correlated with the humans', pooled as in Agents' Room), ``"systems:
        DIM"`` per dimension when there are several, and ``"items"`` (pairs x dimensions both
        judged); coefficient ``spearman`` or ``kendall_tau_b``. Columns ``statistic, ci_low,
        ci_high, n_points, n_prompts, n_resamples, strength, reason``: a row whose side holds
        one value only (a judge that always picks the story shown first gives one item
        verdict everywhere) has no statistic nor interval, ``reason`` says why, and an
        `UndefinedStatisticWarning` is raised.

    Notes
    -----
    Percentile intervals over prompt resamples. A judge that copies the humans has
    correlation 1 at both levels.
    """
    from storyeval.pairwise.verdicts import validate_verdicts

    level = check_confidence(confidence_level)
    jv = validate_verdicts(judge_verdicts, source="judge_verdicts")
    hv = validate_verdicts(human_verdicts, source="human_verdicts")
    judges = sorted(set(jv["judge"]))
    if judge is not None:
        if judge not in judges:
            raise InputError(f"judge {judge!r} not in judge_verdicts; judges are {judges}")
        jv = jv[jv["judge"] == judge]
    elif len(judges) > 1:
        raise InputError(f"judge_verdicts holds several judges {judges}; choose one with "
                         "judge=NAME (storyeval pairwise ranking: --judge NAME)")
    systems, dims, prompts = _layout(jv, hv, None, dimensions)
    jw, jt = _prompt_counts(jv, systems, prompts, dims)
    hw, ht = _prompt_counts(hv, systems, prompts, dims)
    judge_items, human_items = _item_values(jv, dims), _item_values(hv, dims)
    common = judge_items.index.intersection(human_items.index)
    if not len(common):
        raise InputError("the judge and the humans judged no pair in common")
    jx = judge_items.loc[common].to_numpy()
    hy = human_items.loc[common].to_numpy()
    prompts_str = pd.Index(prompts.astype(str))
    item_prompt = prompts_str.get_indexer(common.get_level_values("prompt_id"))

    weights = np.ones((1, len(prompts)))
    if n_resamples:
        weights = np.vstack([weights, bootstrap_weights(
            len(prompts), check_resamples(n_resamples), rng_from(random_state))])
    js = _resampled_strengths(jw, jt, weights, strength)   # (B+1, d, k)
    hs = _resampled_strengths(hw, ht, weights, strength)
    blocks = [("systems x dimensions", js.reshape(len(weights), -1),
               hs.reshape(len(weights), -1))]
    if len(dims) > 1:
        blocks += [(f"systems: {dim}", js[:, d], hs[:, d]) for d, dim in enumerate(dims)]
    rows = []
    for name, x, y in blocks:
        why = _constant_reason(x[0], y[0], "system strengths")
        for coef, fn in (("spearman", _spearman_rows), ("kendall_tau_b", _kendall_rows)):
            rows.append(_row(name, coef, fn(x, y), x.shape[1], level, len(prompts),
                             n_resamples, strength, why))
    rho, tau = _item_draws(jx, hy, item_prompt, weights)
    why = _constant_reason(jx, hy, "item verdicts")
    rows.append(_row("items", "spearman", rho, len(common), level, len(prompts), n_resamples,
                     strength, why))
    rows.append(_row("items", "kendall_tau_b", tau, len(common), level, len(prompts),
                     n_resamples, strength, why))
    out = pd.DataFrame(rows)
    undefined = out.loc[out["reason"] != "", ["level", "reason"]].drop_duplicates("level")
    for name, why in zip(undefined["level"], undefined["reason"]):
        warnings.warn(f"ranking agreement, {name}: {why}", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
    return out


def _constant_reason(judge: np.ndarray, human: np.ndarray, what: str) -> str:
    """Why a correlation of the judge's and the humans' values is undefined (one side holds
    a single value), or "" when both vary."""
    sides = [side for side, v in (("the judge's", judge), ("the humans'", human))
             if np.unique(v[np.isfinite(v)]).size < 2]
    if not sides:
        return ""
    hint = (" (a judge that always picks the same position, e.g. the story shown first, "
            "gives one verdict everywhere)" if what == "item verdicts" and
            sides[0] == "the judge's" else "")
    return (f"{' and '.join(sides)} {what} are all equal{hint}: the correlation is "
            "undefined (no variance), so no value and no interval")


def _resampled_strengths(wins: np.ndarray, ties: np.ndarray, weights: np.ndarray,
                         strength: str) -> np.ndarray:
    """(B, d, k) strengths of each prompt resample (row 0: all prompts once)."""
    flat_w = weights @ wins.reshape(wins.shape[0], -1)
    flat_t = weights @ ties.reshape(ties.shape[0], -1)
    w = flat_w.reshape(len(weights), *wins.shape[1:])
    t = flat_t.reshape(len(weights), *ties.shape[1:])
    if strength == "win-rate":
        return _win_rates(w, t)
    if strength not in _STRENGTHS:
        raise InputError(f"strength must be one of {_STRENGTHS}, got {strength!r}")

    from storyeval.exceptions import UndefinedStatisticWarning

    with warnings.catch_warnings():  # a resample without an MLE is NaN and left out
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        return np.stack([_bt_strengths(w[b], t[b]) for b in range(len(weights))])


def _item_draws(x: np.ndarray, y: np.ndarray, item_prompt: np.ndarray, weights: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Spearman and tau-b of the items for each prompt resample, from joint count tables."""
    vx, cx = np.unique(x, return_inverse=True)
    vy, cy = np.unique(y, return_inverse=True)
    cell = cx * len(vy) + cy
    # (prompts, kx*ky) counts of each joint value, then multiplied by the prompt weights
    per_prompt = np.zeros((weights.shape[1], len(vx) * len(vy)))
    np.add.at(per_prompt, (item_prompt, cell), 1.0)
    tables = (weights @ per_prompt).reshape(len(weights), len(vx), len(vy))
    return _table_correlations(tables, vx, vy)


def _row(level_name: str, coef: str, draws: np.ndarray, n_points: int, level: float,
         n_prompts: int, n_resamples: int, strength: str, reason: str = "") -> dict:
    low = high = math.nan
    if reason:
        draws = np.full_like(draws, np.nan)
    elif n_resamples and np.isfinite(draws[1:]).any():
        lo, hi = percentile_interval(draws[1:, None], level)
        low, high = float(lo[0]), float(hi[0])
    return {"level": level_name, "coefficient": coef, "statistic": float(draws[0]),
            "ci_low": low, "ci_high": high, "n_points": int(n_points), "n_prompts": n_prompts,
            "n_resamples": n_resamples, "strength": strength, "reason": reason}
