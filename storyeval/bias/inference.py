"""Prompt-clustered inference shared by the bias estimates: a cluster-robust t for contrasts of
ratios of sums, and for a Pearson correlation.

Every bias estimate of `storyeval.bias` is a smooth function of sums over units (stories,
verdicts, pairs) that are grouped in clusters (prompts): units of one prompt share the prompt's
difficulty and are not independent, the prompts are. The estimate is linearised (delta
method), its influence summed per cluster, and the cluster sums give a cluster-robust (CR1)
variance; the test and the interval use Student's t with ``clusters - 1`` degrees of freedom,
so the interval is the set of nulls the test does not reject.

* `ratio_contrast`: ``theta = sum_k w_k A_k / B_k`` with ``A_k, B_k`` sums of per-unit
  numerators and denominators (a mean, a share, a difference of means, a
  difference-in-differences);
* `clustered_correlation`: Pearson's r of two per-unit variables, tested and bounded on
  Fisher's z scale with a leave-one-cluster-out jackknife standard error;
* `ratio_contrasts` and `clustered_correlations`: the same for many data sets on one set of
  units at once (vectorised; the two functions above run this code with one data set).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError, UndefinedStatisticWarning

__all__ = ["CORRELATION_TEST", "ClusteredEstimate", "TEST_NAME", "clustered_correlation",
           "clustered_correlations", "ratio_contrast", "ratio_contrasts"]

#: The name of the test of `ratio_contrast` (every bias estimate but the correlation).
TEST_NAME = "cluster-robust t (CR1, delta method), df = clusters - 1"
#: The test of `clustered_correlation`.
CORRELATION_TEST = ("cluster jackknife t on Fisher's z (leave one cluster out), "
                    "df = clusters - 1")
_ALTERNATIVES = ("two-sided", "greater", "less")


@dataclass(frozen=True)
class ClusteredEstimate:
    """An estimate with its prompt-clustered standard error, interval and test.

    Unpacks as ``(estimate, pvalue)``. ``reason`` says why a value is NaN ("" otherwise).
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    null: float
    statistic: float
    df: int
    pvalue: float
    n: int
    n_clusters: int
    confidence_level: float
    alternative: str
    test: str = TEST_NAME
    reason: str = ""
    extra: dict = field(default_factory=dict)

    def __iter__(self):
        return iter((self.estimate, self.pvalue))

    def confidence_interval(self) -> tuple[float, float]:
        return self.ci_low, self.ci_high

    def to_dict(self) -> dict:
        """The fields as one table row (``extra`` merged in)."""
        row = {"estimate": self.estimate, "ci_low": self.ci_low, "ci_high": self.ci_high,
               "se": self.se, "null": self.null, "t": self.statistic, "df": self.df,
               "pvalue": self.pvalue, "n": self.n, "n_clusters": self.n_clusters,
               "test": self.test, "reason": self.reason}
        row.update(self.extra)
        return row


def _check(confidence_level: float, alternative: str) -> None:
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must lie in (0, 1), got {confidence_level!r}")
    if alternative not in _ALTERNATIVES:
        raise InputError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")


def _codes(clusters, n: int) -> tuple[np.ndarray, int]:
    if clusters is None:
        return np.arange(n), n
    labels = pd.Series(np.asarray(clusters, dtype=object))
    if len(labels) != n:
        raise InputError(f"clusters must have one label per unit ({n}), got {len(labels)}")
    codes, uniques = pd.factorize(labels, sort=False)
    if (codes < 0).any():
        raise InputError(f"clusters has a missing label at unit {int(np.argmax(codes < 0))}")
    return codes.astype(np.int64), len(uniques)


def _nan(reason: str, estimate: float, n: int, n_clusters: int, null: float,
         confidence_level: float, alternative: str, se: float = np.nan) -> ClusteredEstimate:
    warnings.warn(reason, UndefinedStatisticWarning, stacklevel=3)
    return ClusteredEstimate(estimate, se, np.nan, np.nan, null, np.nan, max(n_clusters - 1, 0),
                             np.nan, n, n_clusters, confidence_level, alternative, reason=reason)


def _t_parts(estimate, se, df, null: float, confidence_level: float, alternative: str):
    """(t, p, low, high) of Student's t with ``df`` degrees of freedom (arrays or scalars)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (estimate - null) / se
        if alternative == "two-sided":
            p = np.minimum(2 * stats.t.sf(np.abs(t), df), 1.0)
            q = stats.t.ppf(0.5 + confidence_level / 2, df)
            return t, p, estimate - q * se, estimate + q * se
        q = stats.t.ppf(confidence_level, df)
        if alternative == "greater":
            return t, stats.t.sf(t, df), estimate - q * se, np.full_like(t, np.inf)
        return t, stats.t.cdf(t, df), np.full_like(t, -np.inf), estimate + q * se


def _t_inference(estimate: float, se: float, df: int, null: float, confidence_level: float,
                 alternative: str) -> tuple[float, float, float, float]:
    """(t, p, low, high) of Student's t with ``df`` degrees of freedom."""
    t, p, low, high = _t_parts(np.float64(estimate), np.float64(se), df, null,
                               confidence_level, alternative)
    return float(t), float(p), float(low), float(high)


def _cluster_sums(x: np.ndarray, codes: np.ndarray, n_codes: int) -> np.ndarray:
    """Sums over the units of every cluster along axis 1 of ``x`` (shape (R, n, ...)):
    shape (R, n_codes, ...)."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    out = np.zeros((x.shape[0], n_codes, *x.shape[2:]))
    out[:, sorted_codes[starts]] = np.add.reduceat(x[:, order], starts, axis=1)
    return out


#: Why a value of `ratio_contrasts` / `clustered_correlations` is NaN, by code.
_REASONS = {1: "a ratio has no unit (denominator 0)",
            2: "fewer than two clusters hold data: no cluster-robust variance",
            3: "the estimate does not vary over clusters (standard error 0)",
            4: "a correlation needs at least 3 units and two non-constant variables",
            5: "the correlation is +-1, or undefined without some cluster",
            6: "the correlation does not vary over clusters"}


def _ratio_core(a: np.ndarray, b: np.ndarray, w: np.ndarray, codes: np.ndarray,
                n_codes: int) -> dict[str, np.ndarray]:
    """Estimate, CR1 standard error and counts of R ratio contrasts; ``a, b`` (R, n, K)."""
    used = (b != 0).any(axis=2)
    n = used.sum(axis=1)
    n_clusters = (_cluster_sums(used.astype(np.float64), codes, n_codes) > 0).sum(axis=1)
    big_a, big_b = a.sum(axis=1), b.sum(axis=1)
    no_unit = (big_b == 0).any(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        theta_k = big_a / big_b
        influence = ((a - theta_k[:, None, :] * b) / big_b[:, None, :]) @ w
        theta = theta_k @ w
        u = _cluster_sums(influence, codes, n_codes)
        se = np.sqrt(n_clusters / (n_clusters - 1) * np.sum(u**2, axis=1))
    reason = np.where(no_unit, 1, np.where(n_clusters < 2, 2, np.where(
        ~(se > 1e-15 * np.maximum(1.0, np.abs(theta))), 3, 0)))
    theta = np.where(no_unit, np.nan, theta)
    se = np.where((reason == 1) | (reason == 2), np.nan, se)
    return {"estimate": theta, "se": se, "n": n, "n_clusters": n_clusters, "reason": reason}


def _as_batch(a: np.ndarray, batched: bool) -> np.ndarray:
    if not batched:
        a = a[None]
    return a[..., None] if a.ndim == 2 else a


def ratio_contrasts(numerators, denominators, *, weights=None, clusters=None, null: float = 0.0,
                    confidence_level: float = 0.95,
                    alternative: str = "two-sided") -> pd.DataFrame:
    """`ratio_contrast` of many data sets on the same units and clusters, vectorised.

    Parameters
    ----------
    numerators, denominators : array_like, shape (R, n) or (R, n, K)
        Data set r's per-unit contributions (``a_rik``, ``b_rik``); a unit that does not
        enter a ratio in data set r has ``a_rik = b_rik = 0``.
    weights, clusters, null, confidence_level, alternative
        As in `ratio_contrast` (one set of clusters for every data set).

    Returns
    -------
    DataFrame
        One row per data set: ``estimate, ci_low, ci_high, se, null, t, df, pvalue, n,
        n_clusters, reason`` (NaN with a reason where `ratio_contrast` would warn; no
        warning is issued here).

    Notes
    -----
    The same computation as `ratio_contrast` (which calls it with R = 1), without a Python
    loop over data sets: used by the calibration benchmark (``benchmarks/bench_bias.py``).
    Validated against `ratio_contrast` on each data set (tests/test_bias_inference.py).
    """
    _check(confidence_level, alternative)
    a, b, w, codes, n_codes = _ratio_inputs(numerators, denominators, weights, clusters,
                                            batched=True)
    core = _ratio_core(a, b, w, codes, n_codes)
    return _frame(core, null, confidence_level, alternative, TEST_NAME)


def _frame(core: dict, null: float, confidence_level: float, alternative: str,
           test: str, scale=None) -> pd.DataFrame:
    df = np.maximum(core["n_clusters"] - 1, 0)
    ok = core["reason"] == 0
    est = core.get("z", core["estimate"])
    se = np.where(ok, core["se"], np.nan)
    t, p, low, high = _t_parts(est, se, np.maximum(df, 1), null, confidence_level,
                               alternative)
    if scale is not None:
        low, high = scale(low), scale(high)
    frame = pd.DataFrame({"estimate": core["estimate"], "ci_low": low, "ci_high": high,
                          "se": core.get("se_out", core["se"]), "null": null, "t": t,
                          "df": df, "pvalue": p, "n": core["n"],
                          "n_clusters": core["n_clusters"], "test": test,
                          "reason": [_REASONS.get(int(c), "") for c in core["reason"]]})
    frame.loc[~ok, ["ci_low", "ci_high", "t", "pvalue"]] = np.nan
    return frame


def _ratio_inputs(numerators, denominators, weights, clusters, batched: bool):
    a = _as_batch(np.asarray(numerators, dtype=np.float64), batched)
    b = _as_batch(np.asarray(denominators, dtype=np.float64), batched)
    if a.shape != b.shape or a.ndim != 3:
        raise InputError(f"numerators and denominators differ in shape: {a.shape} vs {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("numerators and denominators must be finite (drop missing units "
                         "first)")
    w = np.ones(a.shape[2]) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (a.shape[2],):
        raise InputError(f"weights need one value per ratio ({a.shape[2]}), got {w.shape}")
    codes, n_codes = _codes(clusters, a.shape[1])
    return a, b, w, codes, n_codes


def ratio_contrast(numerators, denominators, *, weights=None, clusters=None, null: float = 0.0,
                   confidence_level: float = 0.95,
                   alternative: str = "two-sided") -> ClusteredEstimate:
    """Contrast of ratios of sums, ``theta = sum_k w_k A_k / B_k``, with a cluster-robust t.

    Parameters
    ----------
    numerators, denominators : array_like, shape (n,) or (n, K)
        Per-unit contributions ``a_ik`` and ``b_ik`` (``A_k = sum_i a_ik``); a unit that does
        not enter ratio k has ``a_ik = b_ik = 0``.
    weights : array_like, shape (K,), optional
        ``w_k`` (default all ones).
    clusters : array_like, shape (n,), optional
        Cluster label of every unit (the prompt); None: every unit is its own cluster.
    null : float, default 0
        The value the test compares ``theta`` with.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: ``theta > null``.

    Returns
    -------
    ClusteredEstimate
        NaN with a reason (and an `UndefinedStatisticWarning`) when a denominator is 0, fewer
        than two clusters hold data, or the estimate does not vary over clusters (se = 0).

    Notes
    -----
    Linearisation: ``theta_k = A_k / B_k`` has influence ``(a_ik - theta_k b_ik) / B_k``; the
    cluster sums ``u_c = sum_k w_k sum_{i in c} (a_ik - theta_k b_ik) / B_k`` give
    ``Var = C / (C - 1) sum_c u_c^2`` (CR1), ``t = (theta - null) / sqrt(Var)`` on ``C - 1``
    degrees of freedom, C the clusters holding a unit with a nonzero denominator. For one
    ratio with unit denominators this is the cluster-robust standard error of a mean; for a
    difference of two group means it is that of the slope of a dummy regression.

    Validated against statsmodels ``OLS(...).fit(cov_type="cluster")`` (the mean, and the
    difference of means; statsmodels multiplies the variance by ``(N - 1) / (N - K)`` as
    well) and scipy's one-sample t-test of per-cluster differences in a balanced design
    (tests/test_bias_inference.py).

    Examples
    --------
    >>> r = ratio_contrast([1.0, 2.0, 3.0, 6.0], [1, 1, 1, 1], clusters=[0, 0, 1, 1])
    >>> round(r.estimate, 3), r.n_clusters
    (3.0, 2)
    """
    _check(confidence_level, alternative)
    a, b, w, codes, n_codes = _ratio_inputs(numerators, denominators, weights, clusters,
                                            batched=False)
    core = {k: v[0] for k, v in _ratio_core(a, b, w, codes, n_codes).items()}
    theta, n, n_clusters = float(core["estimate"]), int(core["n"]), int(core["n_clusters"])
    if core["reason"]:
        return _nan(_REASONS[int(core["reason"])], theta, n, n_clusters, null,
                    confidence_level, alternative, se=float(core["se"]))
    se, df = float(core["se"]), n_clusters - 1
    t, p, low, high = _t_inference(theta, se, df, null, confidence_level, alternative)
    return ClusteredEstimate(theta, se, low, high, null, t, df, p, n, n_clusters,
                             confidence_level, alternative)


def clustered_correlation(x, y, *, clusters=None, confidence_level: float = 0.95,
                          alternative: str = "two-sided") -> ClusteredEstimate:
    """Pearson's r of ``x`` and ``y`` with a cluster-jackknife test of r = 0 and interval.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Finite per-unit values.
    clusters : array_like, shape (n,), optional
        Cluster label of every unit (the prompt); None: independent units.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}

    Returns
    -------
    ClusteredEstimate
        ``estimate`` is r. The test and the interval are on Fisher's z scale (``z = atanh
        r``) with the leave-one-cluster-out jackknife standard error and t on C - 1 degrees
        of freedom; the interval is transformed back; ``se`` is ``se_z (1 - r^2)``.

    Notes
    -----
    ``z_(-c)`` is the z of the data without cluster c (from cluster sums of ``1, x, y, x^2,
    y^2, xy``: no loop over clusters); ``se_z^2 = (C - 1) / C sum_c (z_(-c) - mean z_(-))^2``.
    The jackknife is used rather than the linearised CR1 variance of `ratio_contrast`:
    with 20 prompts and 5 systems the CR1 test of r rejected 6.4% of true nulls at 5%, the
    jackknife 5.5% (3,000 simulated data sets, ``storyeval.bias.simulate``).

    Validated against an explicit leave-one-cluster-out loop over ``numpy.corrcoef`` and a
    cluster bootstrap of r (tests/test_bias_inference.py).
    """
    _check(confidence_level, alternative)
    xv, yv = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if xv.shape != yv.shape or xv.ndim != 1:
        raise InputError(f"x and y must be one-dimensional of one length; got {xv.shape} and "
                         f"{yv.shape}")
    core = {k: v[0] for k, v in _correlation_core(*_correlation_inputs(xv[None], yv[None],
                                                                        clusters)).items()}
    r, n, n_clusters = float(core["estimate"]), int(core["n"]), int(core["n_clusters"])
    if core["reason"]:
        return _nan(_REASONS[int(core["reason"])], r, n, n_clusters, 0.0, confidence_level,
                    alternative, se=0.0 if core["reason"] == 6 else np.nan)
    se_z = float(core["se"])
    t, p, low, high = _t_inference(float(core["z"]), se_z, n_clusters - 1, 0.0,
                                   confidence_level, alternative)
    return ClusteredEstimate(r, se_z * (1 - r**2), float(np.tanh(low)), float(np.tanh(high)),
                             0.0, t, n_clusters - 1, p, n, n_clusters, confidence_level,
                             alternative, test=CORRELATION_TEST)


def _correlation_inputs(xv: np.ndarray, yv: np.ndarray, clusters):
    if xv.shape != yv.shape or xv.ndim != 2:
        raise InputError(f"x and y must be of one shape (R, n); got {xv.shape} and {yv.shape}")
    if not (np.isfinite(xv).all() and np.isfinite(yv).all()):
        raise InputError("x and y must be finite (drop missing units first)")
    codes, n_clusters = _codes(clusters, xv.shape[1])
    return xv, yv, codes, n_clusters


def _correlation_core(xv: np.ndarray, yv: np.ndarray, codes: np.ndarray,
                      n_clusters: int) -> dict[str, np.ndarray]:
    """r, Fisher z and its jackknife standard error of R data sets; ``x, y`` (R, n)."""
    n_sets, n = xv.shape
    # centre first (numerically stable moments), then leave-one-cluster-out correlations
    xc = xv - xv.mean(axis=1, keepdims=True)
    yc = yv - yv.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sum(xc * yc, axis=1) / np.sqrt(np.sum(xc**2, axis=1) * np.sum(yc**2, axis=1))
        sums = _cluster_sums(np.stack([np.ones_like(xc), xc, yc, xc * xc, yc * yc, xc * yc],
                                      axis=2), codes, n_clusters)
        m, sx, sy, sxx, syy, sxy = np.moveaxis(sums.sum(axis=1)[:, None, :] - sums, 2, 0)
        r_loo = (sxy - sx * sy / m) / np.sqrt((sxx - sx**2 / m) * (syy - sy**2 / m))
        z_loo = np.arctanh(r_loo)
        se_z = np.sqrt((n_clusters - 1) / n_clusters
                       * np.sum((z_loo - z_loo.mean(axis=1, keepdims=True))**2, axis=1))
        z = np.arctanh(r)
    flat = (xv.std(axis=1) == 0) | (yv.std(axis=1) == 0)
    bad = ~(np.isfinite(r_loo).all(axis=1) & (np.abs(r) < 1) & (np.abs(r_loo) < 1).all(axis=1))
    reason = np.where((n < 3) | flat, 4, np.where(n_clusters < 2, 2, np.where(
        bad, 5, np.where(~(se_z > 0), 6, 0))))
    r = np.where(reason == 4, np.nan, r)
    return {"estimate": r, "z": z, "se": se_z, "se_out": se_z * (1 - r**2),
            "n": np.full(n_sets, n), "n_clusters": np.full(n_sets, n_clusters),
            "reason": reason}


def clustered_correlations(x, y, *, clusters=None, confidence_level: float = 0.95,
                           alternative: str = "two-sided") -> pd.DataFrame:
    """`clustered_correlation` of many data sets on the same units and clusters, vectorised.

    Parameters
    ----------
    x, y : array_like, shape (R, n)
        Data set r's per-unit values.
    clusters, confidence_level, alternative
        As in `clustered_correlation`.

    Returns
    -------
    DataFrame
        One row per data set, the columns of `ratio_contrasts` (``estimate`` is r, ``se``
        the standard error of r, the interval transformed back from Fisher's z).

    Notes
    -----
    The computation of `clustered_correlation` (which calls it with R = 1) without a loop
    over data sets; validated against it (tests/test_bias_inference.py).
    """
    _check(confidence_level, alternative)
    core = _correlation_core(*_correlation_inputs(np.asarray(x, dtype=np.float64),
                                                  np.asarray(y, dtype=np.float64), clusters))
    return _frame(core, 0.0, confidence_level, alternative, CORRELATION_TEST, scale=np.tanh)
