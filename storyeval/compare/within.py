"""Comparing two measures at the within-system level.

The within-system level (`storyeval.correlation.levels`, ``level="within"``; mt-metrics-eval's
``average_by="sys"``) correlates each system's stories across its prompts and averages over the
systems: ``r_W(h, a) = (1/S) sum_s r(h[s, :], a[s, :])``. Two measures a and b are compared by
``delta = r_W(h, a) - r_W(h, b)``. The systems are fixed (the estimand is the difference for
these systems) and the prompts are the sample: every system wrote one story per prompt, so the
stories of one prompt are dependent across systems (a hard prompt is hard for everyone), and
the unit that is resampled or left out is the whole prompt, in every system at once.

Test ``prompt-jackknife`` (the calibrated default at this level): the delete-one-prompt
jackknife standard error of ``delta`` and Student's t with ``prompts - 1`` degrees of freedom,

``t = delta / se``, ``se^2 = (P - 1) / P sum_p (delta_(p) - mean_q delta_(q))^2``,

``delta_(p)`` the difference recomputed without prompt p (every system's coefficient without
its story of prompt p). Its interval ``delta +- t_{P-1} se`` is the interval the test inverts,
so it excludes 0 exactly when ``p < 1 - confidence_level`` (two-sided and one-sided). It asks
nothing of exchangeability: a and b may differ in scale, noise or tails (measured level on such
nulls: docs "Which test?", section "The within-system level"; `benchmarks/bench_within.py`).
``bootstrap`` (paired bootstrap of prompts, percentile) also runs at this level.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError, StoryevalWarning

__all__ = ["WITHIN_LEVEL_TEST", "WITHIN_LEVEL_TESTS", "WITHIN_INTERVAL", "compare_within_level",
           "within_jackknife"]

#: The calibrated default test at the within-system level.
WITHIN_LEVEL_TEST = "prompt-jackknife"
#: The tests that run at the within-system level.
WITHIN_LEVEL_TESTS = ("prompt-jackknife", "bootstrap")
WITHIN_DESCRIPTION = ("t-test of the within-system difference r_W(h,a) - r_W(h,b) with the "
                      "delete-one-prompt jackknife variance, prompts - 1 df (systems fixed; a "
                      "prompt left out of every system at once)")
WITHIN_INTERVAL = ("jackknife t interval over prompts (prompts - 1 df; the interval the test "
                   "inverts)")
#: Below this many prompts the jackknife test is conservative (its variance estimate errs on the
#: large side); rows with fewer carry `FEW_PROMPTS_NOTE`.
FEW_PROMPTS = 30
#: Measured P(p < 0.05) of ``prompt-jackknife`` on the null cells with 10 prompts
#: (benchmarks/bench_within.py; docs "Which test?", "Within-system comparisons").
FEW_PROMPTS_LEVEL = (0.013, 0.027)
FEW_PROMPTS_NOTE = ("fewer than {n} prompts: the within-system jackknife test is conservative "
                    "there (measured type-I error {low:.3f}-{high:.3f} at nominal 0.05 with 10 "
                    "prompts, docs: Which test?); its power is low")


def _t_quantile(level: float, df: np.ndarray) -> np.ndarray:
    from scipy import special  # light: no scipy.stats import on a small run

    return np.asarray(special.stdtrit(df, level), dtype=np.float64)


def _t_sf(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    from scipy import special

    return np.asarray(special.stdtr(df, -t), dtype=np.float64)


def within_jackknife(wide: pd.DataFrame, pairs: list[tuple[str, str]], *,
                     method: str = "kendall_b") -> tuple[np.ndarray, np.ndarray]:
    """Within-system coefficients of every (measure, criterion) pair on the data and with each
    prompt left out: ``(value (M,), jack (P, M))``, prompts in sorted order.

    Needs every system to have a story for every prompt and no missing score (as the
    bootstrap); InputError otherwise. The leave-one-out coefficients come from the resampling
    engine with weight 0 on the prompt left out (`storyeval.correlation.resampled`), the same
    numbers as the coefficient of the explicitly shortened vectors.
    """
    from storyeval.correlation.resampled import level_statistic
    from storyeval.resample._data import make_grid, resolve_pairs

    pairs = resolve_pairs(pairs)
    grid = make_grid(wide, [c for p in pairs for c in p])
    col = {c: k for k, c in enumerate(grid.columns)}
    ia = np.array([col[p[0]] for p in pairs])
    ic = np.array([col[p[1]] for p in pairs])
    S, P = grid.n_systems, grid.n_prompts
    if P < 4:
        raise InputError(f"the within-system jackknife needs at least 4 prompts, got {P}")
    cS = np.ones((P + 1, S))
    cP = np.vstack([np.ones(P), 1.0 - np.eye(P)])
    theta = level_statistic(grid.X, ia, ic, method, "within", cS, cP)
    return theta[0], theta[1:]


def compare_within_level(wide: pd.DataFrame, comp: Mapping[str, np.ndarray], sa: np.ndarray,
                         sb: np.ndarray, *, method: str = "kendall_b",
                         alternative: str = "two-sided",
                         confidence_level: float = 0.95) -> dict[str, np.ndarray]:
    """The ``prompt-jackknife`` test of every comparison row at the within-system level.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, every system with a story for every prompt.
    comp : mapping of arrays
        ``criterion, measure_a, measure_b`` per row.
    sa, sb : ndarray
        +-1 orientation of a and b per row (``delta = sa r_W(h, a) - sb r_W(h, b)``).
    method : {"kendall_b", "kendall_c", "pearson", "spearman"}
    alternative : {"two-sided", "greater", "less"}
    confidence_level : float

    Returns
    -------
    dict of ndarray
        ``t, p, statistic_kind, test_reason, delta, ci_low, ci_high, ci_method, ci_reason,
        note, df, se``. One-sided intervals are ``[low, 2]`` / ``[-2, high]``; ``note`` says
        when fewer than `FEW_PROMPTS` prompts make the test conservative.

    Notes
    -----
    ``t = delta / se`` with ``se`` the delete-one-prompt jackknife standard error, p from
    Student's t with ``P - 1`` df; interval ``delta +- t_{P-1, 1 - alpha/2} se`` (one-sided:
    ``t_{P-1, 1 - alpha}``). A row whose jackknife differences are all equal (``se = 0``): p = 1
    and the interval ``[0, 0]`` when ``delta = 0`` (identical measures), else undefined.

    References
    ----------
    1. Efron, B., Stein, C. (1981). The jackknife estimate of variance. Ann. Statist. 9(3).
    2. Deutsch, D., Dror, R., Roth, D. (2021). A Statistical Analysis of Summarization
       Evaluation Metrics Using Resampling Methods. TACL 9 (the within-system level,
       "summary-level" there).

    Validated against a direct leave-one-prompt-out recomputation with ``scipy.stats``
    coefficients and ``scipy.stats.t`` (tests/test_within_inference.py); its level and the
    interval's coverage are measured by ``benchmarks/bench_within.py``.
    """
    size = len(comp["criterion"])
    sa, sb = np.asarray(sa, dtype=np.float64), np.asarray(sb, dtype=np.float64)
    nan = np.full(size, np.nan)
    out: dict[str, np.ndarray] = {
        "t": nan.copy(), "p": nan.copy(), "delta": nan.copy(), "ci_low": nan.copy(),
        "ci_high": nan.copy(), "df": nan.copy(), "se": nan.copy(),
        "statistic_kind": np.full(size, "t(prompts-1)", dtype=object),
        "test_reason": np.full(size, "", dtype=object),
        "ci_method": np.full(size, WITHIN_INTERVAL + ("" if alternative == "two-sided"
                                                      else f", one-sided ({alternative})"),
                             dtype=object),
        "ci_reason": np.full(size, "", dtype=object),
        "note": np.full(size, "", dtype=object)}
    if size == 0:
        return out
    keys = list(dict.fromkeys([*zip(comp["measure_a"], comp["criterion"]),
                               *zip(comp["measure_b"], comp["criterion"])]))
    where = {k: i for i, k in enumerate(keys)}
    ka = np.array([where[k] for k in zip(comp["measure_a"], comp["criterion"])])
    kb = np.array([where[k] for k in zip(comp["measure_b"], comp["criterion"])])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StoryevalWarning)
            value, jack = within_jackknife(wide, [(str(m), str(c)) for m, c in keys],
                                           method=method)
    except InputError as exc:
        out["test_reason"] = np.full(size, f"no within-system jackknife: {exc}", dtype=object)
        return out
    P = jack.shape[0]
    if P < FEW_PROMPTS:
        low_level, high_level = FEW_PROMPTS_LEVEL
        out["note"] = np.full(size, FEW_PROMPTS_NOTE.format(n=FEW_PROMPTS, low=low_level,
                                                            high=high_level), dtype=object)
    delta = sa * value[ka] - sb * value[kb]
    d = sa * jack[:, ka] - sb * jack[:, kb]  # (P, rows)
    finite = np.isfinite(d).all(axis=0) & np.isfinite(delta)
    with np.errstate(invalid="ignore"):
        dev = d - d.mean(axis=0)
        se = np.sqrt((P - 1) / P * (dev**2).sum(axis=0))
    # a spread of pure rounding (identical measures): no variance
    se = np.where(se <= 1e-12 * np.maximum(1.0, np.abs(delta)), 0.0, se)
    df = np.full(size, float(P - 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se > 0, delta / se, np.where(np.abs(delta) <= 1e-12, 0.0, np.nan))
    if alternative == "two-sided":
        p = np.minimum(1.0, 2.0 * _t_sf(np.abs(t), df))
        q = _t_quantile(0.5 + confidence_level / 2, df)
        low, high = delta - q * se, delta + q * se
    else:
        q = _t_quantile(confidence_level, df)
        if alternative == "greater":
            p = _t_sf(t, df)
            low, high = delta - q * se, np.full(size, 2.0)
        elif alternative == "less":
            p = _t_sf(-t, df)
            low, high = np.full(size, -2.0), delta + q * se
        else:
            raise InputError(f"alternative must be 'two-sided', 'greater' or 'less', not "
                             f"{alternative!r}")
    ok = finite & np.isfinite(t)
    out.update(t=np.where(ok, t, np.nan), p=np.where(ok, p, np.nan), df=df,
               se=np.where(finite, se, np.nan), delta=np.where(np.isfinite(delta), delta, np.nan),
               ci_low=np.where(ok, low, np.nan), ci_high=np.where(ok, high, np.nan))
    reason = np.where(~np.isfinite(delta), "coefficient undefined (constant input)",
                      np.where(~finite, "a leave-one-prompt-out coefficient is undefined",
                               np.where(~ok, "jackknife variance 0 with a nonzero difference",
                                        "")))
    out["test_reason"] = reason.astype(object)
    return out
