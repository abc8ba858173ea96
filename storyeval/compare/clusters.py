"""Significance clusters (rank groups) of measures, as the WMT metrics task ranks metrics.

Per criterion and level, the measures are sorted by their correlation with the criterion
(decreasing; equal values by name). Walking down the sorted list, measure ``i`` starts a new
cluster when some measure of the current cluster (from the cluster's first member to ``i - 1``)
is significantly better than ``i`` (p <= alpha); otherwise it joins the current cluster. The
cluster number is the measure's rank (1 = top group). This is mt-metrics-eval's
``data.AssignRanks`` rule; `assign_clusters` applies it to any matrix of p-values.

`significance_clusters` fills that matrix with storyeval's calibrated paired tests
(`storyeval.compare.procedures.calibrated_test`: overall level ``ustat`` for tau-b, ``williams`` for
Pearson, ``jackknife`` otherwise; system level ``permutation-random``), two-sided by default:
"significantly better" means the two correlations differ at level alpha and the first is larger.
WMT's one-sided p-value in the direction of the sorted order equals half the two-sided one, i.e.
WMT's clusters at alpha = 0.05 correspond to ``alternative="greater"`` here (a two-sided test at
0.10). Correlations are compared signed (a negatively correlated measure ranks low).

`average_ranks` averages each measure's rank over criteria (optionally weighted), as WMT
averages ranks over tasks; only measures ranked under every criterion are averaged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["assign_clusters", "average_ranks", "significance_clusters"]

CLUSTER_LEVELS = ("overall", "system")


def assign_clusters(pvalues: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """Cluster ranks (1, 1, 2, ...) of measures sorted from best to worst.

    Parameters
    ----------
    pvalues : (n, n) array
        ``pvalues[j, i]`` for ``j < i``: the p-value of "measure j is better than measure i"
        (NaN counts as not significant); other entries are ignored.
    alpha : float
        Significance level (a p-value ``<= alpha`` is significant).

    Examples
    --------
    >>> p = np.array([[0, .30, .01], [0, 0, .20], [0, 0, 0]])
    >>> assign_clusters(p).tolist()
    [1, 1, 2]
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != p.shape[1]:
        raise InputError(f"pvalues must be a square matrix, got shape {p.shape}")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must lie in (0, 1), got {alpha}")
    significant = np.triu(np.nan_to_num(p, nan=np.inf) <= alpha, 1)
    ranks = np.ones(len(p), dtype=np.int64)
    start = 0
    for i in range(1, len(p)):  # sequential by definition: each start depends on the last
        if significant[start:i, i].any():
            ranks[i] = ranks[i - 1] + 1
            start = i
        else:
            ranks[i] = ranks[i - 1]
    return ranks


def _comparisons(order: list[str], values: np.ndarray, grid, criterion: str,
                 level: str) -> dict[str, np.ndarray]:
    """Every pair (a better than b in the sorted order) as the rows `compare_rows` takes."""
    i, j = np.triu_indices(len(order), 1)
    names = np.asarray(order, dtype=object)
    a, b = names[i], names[j]
    r_ab = grid.take(a, b)
    n = np.minimum(grid.take(a, [criterion] * len(a))["n"], r_ab["n"])
    crit = np.empty(len(a), dtype=object)
    crit.fill(criterion)
    lev = np.empty(len(a), dtype=object)
    lev.fill(level)
    return {"level": lev, "criterion": crit, "measure_a": a, "measure_b": b,
            "r_a": values[i], "r_b": values[j], "r_ab": r_ab["value"], "n": n}


def significance_clusters(
    wide: pd.DataFrame,
    measures: Sequence[str],
    criteria: Sequence[str],
    *,
    levels: Sequence[str] = CLUSTER_LEVELS,
    method: str = "kendall_b",
    test: str | Mapping[str, str] = "auto",
    alternative: str = "two-sided",
    alpha: float = 0.05,
    n_permutations: int = 1000,
    n_resamples: int = 1000,
    random_state: int | None = 0,
    tie_rtol: float = 1e-12,
) -> pd.DataFrame:
    """Rank ``measures`` into significance clusters per criterion and level.

    Every pair of measures is tested once (n(n-1)/2 tests per criterion and level) with the
    level's test (``"auto"``: the calibrated one; a mapping level -> test name chooses others,
    see `storyeval.compare.procedures.TESTS`; Williams' t is not offered). Returns one row per
    measure, criterion and level: ``measure, criterion, level, coefficient, value, rank,
    cluster_size, p_vs_cluster_top, test, alternative, alpha``; ``p_vs_cluster_top`` is the
    p-value of the comparison with the first member of the measure's cluster (NaN for it).
    """
    from storyeval.compare.procedures import TESTS, calibrated_test, compare_rows
    from storyeval.correlation.kernel import resolve_method
    from storyeval.correlation.levels import correlation_grid

    method = resolve_method(method)
    measures, criteria = list(dict.fromkeys(measures)), list(criteria)
    if len(measures) < 2:
        raise InputError("significance clusters need at least two measures")
    chosen = dict(test) if isinstance(test, Mapping) else dict.fromkeys(levels, test)
    frames = []
    for level in levels:
        if level not in CLUSTER_LEVELS:
            raise InputError(f"significance clusters are computed at the overall and system "
                             f"levels, not {level!r}")
        name = chosen.get(level, "auto")
        name = calibrated_test(level, method) if name == "auto" else name
        if name not in TESTS or name in ("paper", "williams", "auto"):
            raise InputError(f"clusters: unknown or unsupported test {name!r} (use ustat, "
                             "jackknife, bootstrap, permutation or permutation-random)")
        grid = correlation_grid(wide, measures, [*criteria, *measures], level=level,
                                method=method, tie_rtol=tie_rtol)
        for criterion in criteria:
            values = grid.take(measures, [criterion] * len(measures))["value"]
            order_idx = sorted(range(len(measures)),
                               key=lambda k: (-np.nan_to_num(values[k], nan=-np.inf),
                                              measures[k]))
            order = [measures[k] for k in order_idx]
            sorted_values = values[order_idx]
            comp = _comparisons(order, sorted_values, grid, criterion, level)
            res = compare_rows(wide, comp, level=level, method=method, test=name,
                               alternative=alternative, sign_convention="raw",
                               n_permutations=n_permutations, n_resamples=n_resamples,
                               random_state=random_state, tie_rtol=tie_rtol)
            pmat = np.full((len(order), len(order)), np.nan)
            i, j = np.triu_indices(len(order), 1)
            # two-sided p: significant only where the better-sorted measure is not smaller
            larger = sorted_values[i] >= sorted_values[j]
            pmat[i, j] = np.where(larger, res["p"], np.nan)
            ranks = assign_clusters(pmat, alpha)
            top = np.array([np.flatnonzero(ranks == r)[0] for r in ranks])
            p_top = np.where(top == np.arange(len(order)), np.nan,
                             pmat[top, np.arange(len(order))])
            frames.append(pd.DataFrame({
                "measure": order, "criterion": criterion, "level": level,
                "coefficient": method, "value": sorted_values, "rank": ranks,
                "cluster_size": np.bincount(ranks)[ranks], "p_vs_cluster_top": p_top,
                "test": name, "alternative": alternative, "alpha": alpha}))
    return pd.concat(frames, ignore_index=True)


def average_ranks(clusters: pd.DataFrame,
                  weights: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Each measure's (weighted) mean cluster rank over criteria, per level.

    ``weights`` maps criteria to non-negative weights (normalised to sum to 1; default equal).
    Measures not ranked under every criterion of a level are left out. Columns: ``level,
    measure, average_rank`` plus one column per criterion with its rank, sorted by level and
    average rank.
    """
    out = []
    for level, part in clusters.groupby("level", sort=False):
        table = part.pivot(index="measure", columns="criterion", values="rank")
        crits = list(dict.fromkeys(part["criterion"]))
        table = table[crits].dropna()
        w = np.array([1.0 if weights is None else float(weights.get(c, 0.0)) for c in crits])
        if (w < 0).any() or w.sum() <= 0:
            raise InputError("criterion weights must be non-negative and not all zero")
        avg = table.to_numpy(dtype=float) @ (w / w.sum())
        frame = table.astype(int).reset_index()
        frame.insert(0, "level", level)
        frame.insert(2, "average_rank", avg)
        out.append(frame.sort_values(["average_rank", "measure"], kind="stable"))
    result = pd.concat(out, ignore_index=True)
    result.columns.name = None
    return result
