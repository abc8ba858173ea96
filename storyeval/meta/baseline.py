"""Human baseline: how well one annotator agrees with the human judgment, per criterion and level.

Two variants (METHODS.md, "Human baseline"):

* ``"upper_bound"``: mean over annotators i of corr(annotator i, mean of all annotators). It is
  the "Human" column of the HANNA paper's figures; annotator i sits on both sides, so it is an
  optimistic (upper) bound.
* ``"leave_one_out"``: mean over i of corr(annotator i, mean of the other annotators), an
  unbiased estimate of how well a single rater agrees with an independent human judgment.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from storyeval.correlation.kernel import _check_nan_policy, resolve_method
from storyeval.correlation.levels import (
    _PROPAGATED,
    LEVELS,
    TIE_RTOL,
    _check_level,
    _correlate_arrays,
    _index_levels,
    _plain,
)
from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel

__all__ = ["VARIANTS", "human_baseline"]

VARIANTS: tuple[str, ...] = ("upper_bound", "leave_one_out")

_COLUMNS = ["criterion", "level", "coefficient", "variant", "value", "n", "n_groups",
            "n_annotators", "reason"]


_LEFT_OUT = "left out"
_UNITS = {"overall": "rated stories", "system": "rated systems",
          "prompt": "systems rated on any prompt"}


def _baseline_row(crit: str, level: str, method: str, variant: str, vals: np.ndarray,
                  n: np.ndarray, n_groups: np.ndarray, reason: np.ndarray,
                  names: Sequence[str] = ()) -> dict:
    """One baseline value: the mean of the annotators' coefficients. An annotator with fewer
    than 2 observations at the level (a crowd worker who rated one story) has no coefficient,
    nor has one who gave every story the same rating (constant input); such annotators are
    left out of the mean, and the row's ``reason`` says how many, which and why, rather than
    one of them blanking the criterion. With no annotator left, the value is NaN; a value NaN
    because missing scores propagate (``nan_policy="propagate"``) stays NaN."""
    few = n < 2
    undefined = np.isnan(vals) & ~few & (reason != _PROPAGATED)
    drop = few | undefined
    used = ~drop if drop.any() and not drop.all() else np.ones(len(vals), dtype=bool)
    why = list(dict.fromkeys(r for r in reason[used] if r))
    if not used.all():
        n_few, n_undef = int((few & ~used).sum()), int((undefined & ~used).sum())
        both = n_few and n_undef
        parts = []
        if n_few:
            parts.append(f"{f'{n_few} ' if both else ''}with fewer than 2 "
                         f"{_UNITS.get(level, 'observations')} (no coefficient)")
        if n_undef:
            which = [str(names[int(i)]) for i in np.flatnonzero(undefined & ~used)] if len(
                names) == len(vals) else []
            parts.append(f"{f'{n_undef} ' if both else ''}whose coefficient is undefined (the "
                         "same rating for every story at this level"
                         + (f": {', '.join(which)}" if which else "") + ")")
        why.insert(0, f"{_LEFT_OUT} {int((~used).sum())} of {len(vals)} annotators "
                      f"{' and '.join(parts)}; the value averages the other {int(used.sum())}")
    return {"criterion": crit, "level": level, "coefficient": method, "variant": variant,
            "value": float(np.mean(vals[used])), "n": int(n[used].min()),
            "n_groups": int(n_groups[used].min()), "n_annotators": int(used.sum()),
            "reason": "; ".join(why)}


def _check_columns(wide: pd.DataFrame, names: Sequence[str], argname: str) -> None:
    missing = [m for m in names if m not in wide.columns]
    if missing:
        raise InputError(f"{argname}: column(s) not in the score table: {missing}")


def human_baseline(
    wide: pd.DataFrame,
    annotators: Mapping[str, Sequence[str]],
    *,
    loo_columns: Mapping[str, Sequence[str]] | None = None,
    mean_columns: Mapping[str, str] | None = None,
    levels: Sequence[str] | str = LEVELS,
    method: str = "kendall_b",
    nan_policy: str = "raise",
    variants: Sequence[str] | str = VARIANTS,
    tie_rtol: float = TIE_RTOL,
) -> pd.DataFrame:
    """Human baseline per criterion and level, in both variants.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, one float column per measure (``Dataset.wide()``), with
        the annotator columns (``Dataset.annotators()`` names them). Filter systems
        beforehand (HANNA: the paper leaves out ``Human``).
    annotators : mapping criterion -> sequence of str
        The columns of the individual annotators for each criterion (at least two).
    loo_columns : mapping criterion -> sequence of str, optional
        For each criterion, column k holds the mean of the annotators other than annotator k
        (HANNA: ``Human Avg k``). If absent, computed from ``annotators``.
    mean_columns : mapping criterion -> str, optional
        The column holding the mean of all annotators (HANNA: ``Relevance``, ...). If absent,
        computed from ``annotators``.
    levels : str or sequence of {"overall", "system", "prompt"}, default all three
    method : {"kendall_b", "kendall_c", "pearson", "spearman"}, default "kendall_b"
    nan_policy : {"raise", "omit", "propagate"}, default "raise"
        As in [`storyeval.correlation.levels.correlate`][]; computed means use the available
        annotators under ``"omit"``.
    variants : str or sequence of {"upper_bound", "leave_one_out"}, default both
    tie_rtol : float, default 1e-12
        Tie tolerance for system means (see [`storyeval.correlation.levels.level_data`][]).

    Returns
    -------
    DataFrame
        Columns ``criterion, level, coefficient, variant, value, n, n_groups, n_annotators,
        reason``: one row per criterion x level x variant; ``reason`` says why a value is NaN
        or which annotators it leaves out (see Notes). ``n`` is the smallest ``n`` over the
        annotators' correlations (stories, systems, or systems per prompt), ``n_groups`` the
        prompts averaged at the prompt level (smallest over annotators; 1 otherwise).

    Notes
    -----
    With annotators a_1..a_k on criterion c and A = (1/k) sum_i a_i:

    * upper_bound = (1/k) sum_i corr(a_i, A);
    * leave_one_out = (1/k) sum_i corr(a_i, (1/(k-1)) sum_{j != i} a_j).

    At the system level each column (annotator, mean) is first averaged over a system's
    stories. Annotators whose coefficient is undefined are left out of the average: those with
    fewer than 2 observations at the level (stories, systems; under ``nan_policy="omit"``,
    e.g. crowd workers who rated a single story) and those who gave every story the same
    rating (a constant column); ``n_annotators`` counts the annotators averaged, ``reason``
    says how many were left out, which and why, and an `UndefinedStatisticWarning` says so
    too. The value is NaN only when no annotator is left, or when missing scores propagate
    (``nan_policy="propagate"``).

    References
    ----------
    1. Chhun, C., Suchanek, F. M., Clavel, C. (2024). Do Language Models Enjoy Their Own
       Stories? Prompting Large Language Models for Automatic Story Evaluation. TACL 12.

    Validated against the paper's system-level Kendall baseline (0.73, mean over the six
    criteria, 10 generation systems) and per-annotator ``scipy.stats.kendalltau`` on HANNA
    (tests/test_baseline.py).

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_product([["A", "B", "C"], [0, 1]], names=["system", "prompt_id"])
    >>> wide = pd.DataFrame({"h1": [1., 2., 3., 3., 5., 4.], "h2": [2., 1., 3., 4., 4., 5.]}, idx)
    >>> res = human_baseline(wide, {"Quality": ["h1", "h2"]}, levels="system")
    >>> res[["variant", "value", "n"]].values.tolist()
    [['upper_bound', 1.0, 3], ['leave_one_out', 1.0, 3]]
    """
    _index_levels(wide)
    method = resolve_method(method)
    nan_policy = _check_nan_policy(nan_policy)
    levels = [levels] if isinstance(levels, str) else list(levels)
    for lev in levels:
        _check_level(lev)
    variants = [variants] if isinstance(variants, str) else list(variants)
    for var in variants:
        if var not in VARIANTS:
            raise InputError(f"variants: unknown variant {var!r}; valid: {', '.join(VARIANTS)}")
    if not isinstance(annotators, Mapping) or not annotators:
        raise InputError("annotators must be a non-empty mapping criterion -> annotator columns")

    # All criteria share one kernel call per level: every annotator column against every
    # target column (criterion means and leave-one-out means); the entries needed are picked.
    columns: dict[str, pd.Series] = {}  # one frame at the end: pandas inserts are slow
    plan = []
    for crit, cols in annotators.items():
        cols = [cols] if isinstance(cols, str) else list(cols)
        if len(cols) < 2:
            raise InputError(f"annotators[{crit!r}]: at least two annotator columns are needed, "
                             f"got {cols}")
        _check_columns(wide, cols, f"annotators[{crit!r}]")
        k = len(cols)
        ratings = wide.loc[:, cols].astype(np.float64)
        if nan_policy == "raise" and ratings.isna().to_numpy().any():
            r, c = np.argwhere(ratings.isna().to_numpy())[0]
            raise InputError(f"annotators[{crit!r}]: missing value (NaN) in column {cols[c]!r} "
                             f"at story {_plain(ratings.index[r])!r}; use nan_policy='omit' or "
                             "'propagate'")
        skip = nan_policy == "omit"
        # frame columns carry the data's names, so that warnings name real measures
        ann = list(cols)
        for name, col in zip(ann, cols):
            columns[name] = ratings[col]
        mean = (mean_columns[crit] if mean_columns is not None and crit in mean_columns
                else f"mean of the {crit} annotators")
        if mean_columns is not None and crit in mean_columns:
            _check_columns(wide, [mean_columns[crit]], f"mean_columns[{crit!r}]")
            columns[mean] = wide[mean_columns[crit]].astype(np.float64)
        else:
            columns[mean] = ratings.mean(axis=1, skipna=skip)
        loo_names = [f"mean of the {crit} annotators but {col}" for col in cols]
        if loo_columns is not None and crit in loo_columns:
            loo = [loo_columns[crit]] if isinstance(loo_columns[crit], str) else list(
                loo_columns[crit])
            if len(loo) != k:
                raise InputError(f"loo_columns[{crit!r}] has {len(loo)} column(s) but "
                                 f"annotators[{crit!r}] has {k}; column i must be the mean of "
                                 "the annotators other than annotator i")
            _check_columns(wide, loo, f"loo_columns[{crit!r}]")
            loo_names = list(loo)
            for name, col in zip(loo_names, loo):
                columns[name] = wide[col].astype(np.float64)
        else:
            for i, name in enumerate(loo_names):
                columns[name] = ratings.drop(columns=cols[i]).mean(axis=1, skipna=skip)
        # upper bound: annotator i vs the mean of all; leave-one-out: annotator i vs the others
        targets = {"upper_bound": [mean] * k, "leave_one_out": loo_names}
        plan.append((crit, ann, targets))
    frame = pd.DataFrame(columns, index=wide.index)
    xs = [a for _, ann, _ in plan for a in ann]
    ys = list(dict.fromkeys(t for _, _, targets in plan for var in variants
                            for t in targets[var]))
    rows = []
    for lev in levels:
        value, n, n_groups, reason = _correlate_arrays(frame, xs, ys, lev, method, nan_policy,
                                                       tie_rtol)
        for crit, ann, targets in plan:
            for var in variants:
                pick = ([xs.index(a) for a in ann], [ys.index(t) for t in targets[var]])
                rows.append(_baseline_row(crit, lev, method, var, value[pick], n[pick],
                                          n_groups[pick], reason[pick], names=ann))
    left_out = [r for r in rows if r["reason"].startswith(_LEFT_OUT)]
    if left_out:
        warnings.warn("human baseline: " + "; ".join(
            f"{r['criterion']}, {r['level']}, {r['variant']}: {r['reason']}"
            for r in left_out[:4]) + (f" and {len(left_out) - 4} more" if len(left_out) > 4
                                      else ""), UndefinedStatisticWarning, stacklevel=user_stacklevel())
    order = {crit: i for i, crit in enumerate(annotators)}
    rows.sort(key=lambda r: (order[r["criterion"]], levels.index(r["level"])))
    return pd.DataFrame(rows, columns=_COLUMNS)
