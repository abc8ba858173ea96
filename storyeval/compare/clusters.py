"""Significance clusters (rank groups) of measures, as the WMT metrics task ranks metrics.

Per criterion and level, the measures are sorted by their *oriented* correlation with the
criterion, decreasing: the signed correlation, negated for a measure declared lower-is-better
(sign convention ``"raw"``), or its absolute value (``"paper"``), i.e. the orientation the
comparison tests used. Walking down the sorted list, measure ``i`` starts a new cluster when some
measure of the current cluster (from the cluster's first member to ``i - 1``) is significantly
better than ``i`` (p <= alpha); otherwise it joins the current cluster. The cluster number is
the measure's rank (1 = top group). This is mt-metrics-eval's ``data.AssignRanks`` rule;
`assign_clusters` applies it to any matrix of p-values.

One run, one set of p-values: `clusters_from_comparisons` reads the p-values of a comparison
table (``MetaResult.comparisons`` of the same ``storyeval meta`` run, whichever test produced
them; unadjusted ``p`` as WMT, or another column) and never tests again, so a pair is
significant in the clusters exactly when it is in the table. "j significantly better than i"
means: the row's p <= alpha, j's oriented correlation is the larger, and the row tested that
direction (two-sided; one-sided ``greater``/``less`` only in the direction it tested).
`significance_clusters` runs the tests itself on a wide table (every pair once, in the order
the measures are given) and clusters through the same function.

Tie rule: measures whose oriented correlations are equal (within ``tie_rtol`` relative, 1e-15
absolute) form one block that is ranked as a unit: the block starts a new cluster when some
member of the current cluster is significantly better than some member of the block, else the
whole block joins the current cluster. Their order within the block (by name) is for display
only and never decides a rank. A measure whose correlation is undefined (NaN: a constant
measure, too few systems) is not ranked: its ``rank`` is missing and ``reason`` says why.

`average_ranks` averages each measure's rank over criteria (optionally weighted), as WMT
averages ranks over tasks; only measures ranked under every criterion are averaged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["assign_clusters", "average_ranks", "clusters_from_comparisons",
           "significance_clusters", "tested_better", "tie_blocks"]

CLUSTER_LEVELS = ("overall", "system", "prompt")
#: The levels `significance_clusters` ranks unless told otherwise.
DEFAULT_CLUSTER_LEVELS = ("overall", "system")
CLUSTER_TIE_RULE = ("equal oriented correlations (relative tolerance {rtol:g}) are one block, "
                    "ranked as a unit: it starts a new cluster when some member of the current "
                    "cluster is significantly better than some member of the block")
UNDEFINED_REASON = "correlation undefined (NaN): not ranked"
CLUSTER_COLUMNS = ["measure", "criterion", "level", "coefficient", "value", "oriented", "rank",
                   "cluster_size", "p_vs_cluster_top", "p_vs_next", "better_than_next",
                   "test", "alternative", "p_column", "alpha", "reason"]


def assign_clusters(pvalues: np.ndarray, alpha: float = 0.05, *,
                    blocks: np.ndarray | None = None) -> np.ndarray:
    """Cluster ranks (1, 1, 2, ...) of measures sorted from best to worst.

    Parameters
    ----------
    pvalues : (n, n) array
        ``pvalues[j, i]`` for ``j < i``: the p-value of "measure j is better than measure i"
        (NaN counts as not significant); other entries are ignored.
    alpha : float
        Significance level (a p-value ``<= alpha`` is significant).
    blocks : (n,) array of int, optional
        Tie blocks (`tie_blocks`): consecutive measures with the same label are ranked as one
        unit and share a rank. Default: every measure its own block.

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
    n = len(p)
    labels = np.arange(n) if blocks is None else np.asarray(blocks)
    if labels.shape != (n,) or (n and np.any(np.diff(labels) < 0)):
        raise InputError("blocks must hold one non-decreasing label per measure")
    significant = np.triu(np.nan_to_num(p, nan=np.inf) <= alpha, 1)
    ranks = np.ones(n, dtype=np.int64)
    firsts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]]) if n else np.array([], int)
    ends = np.r_[firsts[1:], n]
    start, rank = 0, 1
    for first, end in zip(firsts[1:], ends[1:]):  # sequential: each start depends on the last
        if significant[start:first, first:end].any():
            rank, start = rank + 1, first
        ranks[first:end] = rank
    return ranks


def tie_blocks(values: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """Block labels of values sorted in decreasing order: a value within ``rtol`` (relative,
    or 1e-15 absolute) of the one before it shares its block."""
    v = np.asarray(values, dtype=np.float64)
    if len(v) == 0:
        return np.zeros(0, dtype=np.int64)
    close = np.isclose(v[1:], v[:-1], rtol=rtol, atol=1e-15)
    return np.r_[0, np.cumsum(~close)].astype(np.int64)


def _oriented(values: np.ndarray, measures: np.ndarray, sign_convention: str,
              lower_is_better: frozenset[str]) -> np.ndarray:
    if sign_convention == "paper":
        return np.abs(values)
    lower = np.isin(measures.astype(str), list(lower_is_better))
    return np.where(lower, -values, values)


def tested_better(rows: pd.DataFrame) -> np.ndarray:
    """Per comparison row, which measure a one-sided test put forward as the better one
    (``measure_a`` / ``measure_b``); None for a two-sided test (either direction)."""
    alt = rows["alternative"].to_numpy(dtype=object) if "alternative" in rows else \
        np.full(len(rows), "two-sided", dtype=object)
    swapped = (rows["swapped"].fillna(False).to_numpy(dtype=bool) if "swapped" in rows
               else np.zeros(len(rows), dtype=bool))
    a, b = rows["measure_a"].to_numpy(dtype=object), rows["measure_b"].to_numpy(dtype=object)
    first = np.where(alt == "less", b, a)
    second = np.where(alt == "less", a, b)
    better = np.where(swapped, second, first)
    return np.where(alt == "two-sided", np.full(len(rows), None, dtype=object), better)


def clusters_from_comparisons(
    correlations: pd.DataFrame,
    comparisons: pd.DataFrame,
    *,
    alpha: float = 0.05,
    sign_convention: str = "raw",
    lower_is_better: Sequence[str] | frozenset[str] = (),
    p_column: str = "p",
    tie_rtol: float = 1e-12,
    levels: Sequence[str] = CLUSTER_LEVELS,
) -> pd.DataFrame:
    """Significance clusters from the p-values of an existing comparison table.

    Parameters
    ----------
    correlations : DataFrame
        ``measure, criterion, level, value`` (and optionally ``coefficient``): each measure's
        signed correlation with the criterion (``MetaResult.correlations``).
    comparisons : DataFrame
        ``level, criterion, measure_a, measure_b`` and ``p_column``, with ``alternative``,
        ``swapped`` and ``test`` when present (``MetaResult.comparisons``). Every pair of
        ranked measures of a criterion and level must be in it (either order).
    alpha : float, default 0.05
        A pair is significant when its p-value is ``<= alpha``.
    sign_convention : {"raw", "paper"}, default "raw"
        The orientation the tests used: signed correlations with ``lower_is_better`` negated,
        or absolute correlations.
    lower_is_better : sequence of str
        Measures where lower is better (negated under ``"raw"``).
    p_column : str, default "p"
        The column of p-values read (``"p"``: unadjusted, as WMT's clusters).
    tie_rtol : float
        Relative tolerance of the tie rule (module docstring).
    levels : sequence of str
        Levels clustered (those present in ``comparisons``).

    Returns
    -------
    DataFrame
        One row per measure, criterion and level (`CLUSTER_COLUMNS`), ranked measures first
        in sorted order, then the unranked ones with their ``reason``. ``p_vs_next`` is the
        p-value against the next ranked measure and ``better_than_next`` whether that
        comparison is significant in the measure's favour.

    Notes
    -----
    Validated against mt-metrics-eval's ``data.AssignRanks`` (tests/data/mteval_reference.json)
    and against the comparison table it reads (tests/test_clusters.py: every pair's decision
    equals the table's).
    """
    if p_column not in comparisons.columns:
        raise InputError(f"clusters: the comparison table has no column {p_column!r}")
    if sign_convention not in ("raw", "paper"):
        raise InputError(f"clusters: sign_convention must be 'raw' or 'paper', got "
                         f"{sign_convention!r}")
    lower = frozenset(lower_is_better)
    frames = []
    present = set(comparisons["level"])
    by_group = (comparisons.groupby(["level", "criterion"], sort=False).indices
                if len(comparisons) else {})
    for (level, criterion), group in correlations.groupby(["level", "criterion"], sort=False):
        if level not in levels or level not in present:
            continue
        rows = comparisons.iloc[by_group.get((level, criterion), [])]
        frames.append(_cluster_one(group.drop_duplicates("measure"), rows, level, criterion,
                                   alpha, sign_convention, lower, p_column, tie_rtol))
    if not frames:
        raise InputError("clusters: no comparisons at the overall or system level to rank "
                         "the measures by")
    return pd.concat(frames, ignore_index=True)


def _pair_lookup(rows: pd.DataFrame, p_column: str) -> dict[tuple[str, str], tuple[float, object]]:
    """(a, b) and (b, a) -> (p, the measure a one-sided test put forward or None)."""
    p = rows[p_column].to_numpy(dtype=float)
    better = tested_better(rows)
    out: dict[tuple[str, str], tuple[float, object]] = {}
    # object arrays: iterating pandas' Arrow strings costs microseconds a cell
    for a, b, pv, bt in zip(rows["measure_a"].to_numpy(dtype=object),
                            rows["measure_b"].to_numpy(dtype=object), p, better):
        out[(a, b)] = out[(b, a)] = (pv, bt)
    return out


def _cluster_one(group: pd.DataFrame, rows: pd.DataFrame, level: str, criterion: str,
                 alpha: float, sign_convention: str, lower: frozenset[str], p_column: str,
                 tie_rtol: float) -> pd.DataFrame:
    names = group["measure"].to_numpy(dtype=object)
    values = group["value"].to_numpy(dtype=float)
    oriented = _oriented(values, names, sign_convention, lower)
    defined = np.isfinite(oriented)
    # sort by oriented value (decreasing); names order tie blocks for display only
    order = sorted(np.flatnonzero(defined), key=lambda k: (-oriented[k], str(names[k])))
    sorted_names, sorted_values = names[order], oriented[order]
    blocks = tie_blocks(sorted_values, tie_rtol)
    lookup = _pair_lookup(rows, p_column)
    n = len(order)
    pmat = np.full((n, n), np.nan)
    for j in range(n):
        for i in range(j + 1, n):
            key = (sorted_names[j], sorted_names[i])
            if key not in lookup:
                raise InputError(
                    f"clusters: the comparison table has no test of {key[0]!r} against "
                    f"{key[1]!r} ({criterion}, {level} level); clusters rank every pair "
                    "(compare all pairs: --reference all)")
            p, better = lookup[key]
            if blocks[j] != blocks[i] and better in (None, sorted_names[j]):
                pmat[j, i] = p
    ranks = assign_clusters(pmat, alpha, blocks=blocks)
    top = np.array([np.flatnonzero(ranks == r)[0] for r in ranks], dtype=int)
    p_top = np.array([np.nan if t == k else lookup[(sorted_names[t], sorted_names[k])][0]
                      for k, t in enumerate(top)])
    raw_next = [lookup[(sorted_names[k], sorted_names[k + 1])][0] for k in range(n - 1)]
    p_next = np.r_[raw_next, np.nan] if n else np.zeros(0)
    better_next = np.r_[[bool(pmat[k, k + 1] <= alpha) for k in range(n - 1)], False] \
        if n else np.zeros(0, dtype=bool)
    undefined = np.flatnonzero(~defined)
    undefined = undefined[np.argsort(names[undefined].astype(str), kind="stable")]
    # unique() first: iterating every row's Arrow string costs microseconds a cell
    test = "/".join(dict.fromkeys(rows["test"].unique().astype(str))) if "test" in rows else ""
    alternative = ("/".join(dict.fromkeys(rows["alternative"].unique().astype(str)))
                   if "alternative" in rows else "")
    coefficient = (group["coefficient"].iloc[0] if "coefficient" in group else "")
    return pd.DataFrame({
        "measure": np.r_[sorted_names, names[undefined]].astype(object),
        "criterion": criterion, "level": level, "coefficient": coefficient,
        "value": np.r_[values[order], values[undefined]],
        "oriented": np.r_[sorted_values, oriented[undefined]],
        "rank": pd.array([*ranks.tolist(), *[pd.NA] * len(undefined)], dtype="Int64"),
        "cluster_size": pd.array([*(np.bincount(ranks)[ranks].tolist() if n else []),
                                  *[pd.NA] * len(undefined)], dtype="Int64"),
        "p_vs_cluster_top": np.r_[p_top, np.full(len(undefined), np.nan)],
        "p_vs_next": np.r_[p_next, np.full(len(undefined), np.nan)],
        "better_than_next": np.r_[better_next, np.zeros(len(undefined), bool)].astype(bool),
        "test": test, "alternative": alternative, "p_column": p_column, "alpha": alpha,
        "reason": np.r_[np.full(n, "", dtype=object),
                        np.full(len(undefined), UNDEFINED_REASON, dtype=object)],
    }, columns=CLUSTER_COLUMNS)


def _all_pairs_comparisons(wide: pd.DataFrame, measures: list[str], values: np.ndarray,
                           grid, criterion: str, level: str) -> dict[str, np.ndarray]:
    """Every pair (a, b), a before b in the order given, as the rows `compare_rows` takes."""
    i, j = np.triu_indices(len(measures), 1)
    names = np.asarray(measures, dtype=object)
    a, b = names[i], names[j]
    r_ab = grid.take(a, b)
    n = np.minimum(grid.take(a, [criterion] * len(a))["n"], r_ab["n"])
    return {"level": np.full(len(a), level, dtype=object),
            "criterion": np.full(len(a), criterion, dtype=object), "measure_a": a,
            "measure_b": b, "r_a": values[i], "r_b": values[j], "r_ab": r_ab["value"], "n": n}


def significance_clusters(
    wide: pd.DataFrame,
    measures: Sequence[str],
    criteria: Sequence[str],
    *,
    levels: Sequence[str] = DEFAULT_CLUSTER_LEVELS,
    method: str = "kendall_b",
    test: str | Mapping[str, str] = "auto",
    alternative: str = "two-sided",
    alpha: float = 0.05,
    lower_is_better: Sequence[str] = (),
    n_permutations: int = 2000,
    n_resamples: int = 1000,
    random_state: int | None = 0,
    tie_rtol: float = 1e-12,
) -> pd.DataFrame:
    """Rank ``measures`` into significance clusters per criterion and level.

    Every pair of measures is tested once (n(n-1)/2 tests per criterion and level, each pair
    in the order ``measures`` gives it, so the p-values do not depend on the ranking) with
    the level's test (``"auto"``: the calibrated one; a mapping level -> test name chooses
    others, see `storyeval.compare.procedures.TESTS`; Williams' t is not offered), on signed
    correlations with ``lower_is_better`` measures negated; then `clusters_from_comparisons`
    ranks them. Returns its table (`CLUSTER_COLUMNS`). ``n_permutations`` defaults to
    `storyeval.compare.procedures.TEST_PERMUTATIONS`, as in `storyeval.meta.meta_evaluate`.
    """
    from storyeval.compare.procedures import TESTS, calibrated_test, compare_rows
    from storyeval.correlation.kernel import resolve_method
    from storyeval.correlation.levels import correlation_grid

    method = resolve_method(method)
    measures, criteria = list(dict.fromkeys(measures)), list(criteria)
    if len(measures) < 2:
        raise InputError("significance clusters need at least two measures")
    lower = frozenset(lower_is_better)
    unknown = sorted(lower - set(measures))
    if unknown:
        raise InputError(f"lower_is_better names measures that are not ranked: {unknown}")
    chosen = dict(test) if isinstance(test, Mapping) else dict.fromkeys(levels, test)
    corr_rows, comp_frames = [], []
    for level in levels:
        if level not in CLUSTER_LEVELS:
            raise InputError(f"significance clusters are computed at the overall, system and "
                             f"prompt levels, not {level!r}")
        name = chosen.get(level, "auto")
        name = calibrated_test(level, method) if name == "auto" else name
        if name not in TESTS or name in ("paper", "williams", "auto"):
            raise InputError(f"clusters: unknown or unsupported test {name!r} (use ustat, "
                             "jackknife, bootstrap, permutation or permutation-random)")
        grid = correlation_grid(wide, measures, [*criteria, *measures], level=level,
                                method=method, tie_rtol=tie_rtol)
        for criterion in criteria:
            values = grid.take(measures, [criterion] * len(measures))["value"]
            corr_rows.append(pd.DataFrame({"measure": measures, "criterion": criterion,
                                           "level": level, "coefficient": method,
                                           "value": values}))
            comp = _all_pairs_comparisons(wide, measures, values, grid, criterion, level)
            res = compare_rows(wide, comp, level=level, method=method, test=name,
                               alternative=alternative, sign_convention="raw",
                               lower_is_better=lower, n_permutations=n_permutations,
                               n_resamples=n_resamples, random_state=random_state,
                               tie_rtol=tie_rtol)
            comp_frames.append(pd.DataFrame({**{k: comp[k] for k in (
                "level", "criterion", "measure_a", "measure_b", "r_a", "r_b")},
                "p": res["p"], "delta": res["delta"], "alternative": alternative,
                "test": name}))
    comparisons = pd.concat(comp_frames, ignore_index=True)
    return clusters_from_comparisons(pd.concat(corr_rows, ignore_index=True), comparisons,
                                     alpha=alpha, sign_convention="raw",
                                     lower_is_better=lower, tie_rtol=tie_rtol, levels=levels)


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
