"""Intraclass correlation ICC(2,k): two-way random effects, absolute agreement, mean of k raters.

Used for the consistency of LLM raters (the three tries of one Eval-Prompt act as three raters
over the stories) and for the agreement of HANNA's three human annotators. [`icc2k`][] takes
one (items x raters) table; [`icc2k_many`][] computes many groups (e.g. every model x
Eval-Prompt x criterion) in one vectorised call.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel

__all__ = ["ICCResult", "icc2k", "icc2k_many"]

NanPolicy = Literal["raise", "omit"]


@dataclass(frozen=True)
class ICCResult:
    """Result of [`icc2k`][].

    Unpacks like a tuple ``(statistic, pvalue)``. ``statistic`` is ICC(2,k); ``icc_single`` is
    ICC(2,1) from the same ANOVA. ``ms_rows``, ``ms_cols``, ``ms_error`` are the two-way ANOVA
    mean squares (items, raters, residual), kept so that the interval can be recomputed at any
    confidence level.
    """

    statistic: float
    pvalue: float
    icc_single: float
    F: float
    df1: int
    df2: int
    n_items: int
    k: int
    ms_rows: float
    ms_cols: float
    ms_error: float
    confidence_level: float = 0.95
    n_items_omitted: int = 0
    reason: str = ""
    variant: str = field(default="ICC(2,k)")

    def __iter__(self):
        return iter((self.statistic, self.pvalue))

    def confidence_interval(self, confidence_level: float | None = None) -> tuple[float, float]:
        """F-based interval of ICC(2,k) (McGraw and Wong 1996), as pingouin computes it."""
        level = self.confidence_level if confidence_level is None else confidence_level
        out = _icc_arrays(
            np.array([self.ms_rows]), np.array([self.ms_cols]), np.array([self.ms_error]),
            np.array([float(self.n_items)]), self.k, level,
        )
        return float(out["ci_low"][0]), float(out["ci_high"][0])

    def confidence_interval_single(
        self, confidence_level: float | None = None
    ) -> tuple[float, float]:
        """F-based interval of ICC(2,1) (McGraw and Wong 1996)."""
        level = self.confidence_level if confidence_level is None else confidence_level
        out = _icc_arrays(
            np.array([self.ms_rows]), np.array([self.ms_cols]), np.array([self.ms_error]),
            np.array([float(self.n_items)]), self.k, level,
        )
        return float(out["ci_single_low"][0]), float(out["ci_single_high"][0])

    def to_frame(self) -> pd.DataFrame:
        """One-row table: icc2k, ci_low, ci_high, icc21, its interval, F test, sizes."""
        low, high = self.confidence_interval()
        low1, high1 = self.confidence_interval_single()
        return pd.DataFrame(
            [{
                "icc2k": self.statistic, "ci_low": low, "ci_high": high,
                "icc21": self.icc_single, "icc21_ci_low": low1, "icc21_ci_high": high1,
                "F": self.F, "df1": self.df1, "df2": self.df2, "pvalue": self.pvalue,
                "n_items": self.n_items, "k": self.k, "confidence_level": self.confidence_level,
                "reason": self.reason,
            }]
        )


def _check_level(confidence_level: float) -> None:
    if not (isinstance(confidence_level, (int, float)) and 0 < confidence_level < 1):
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")


def _icc_arrays(
    msr: np.ndarray, msc: np.ndarray, mse: np.ndarray, n: np.ndarray, k: int, level: float
) -> dict[str, np.ndarray]:
    """ICC(2,1), ICC(2,k), F test and F-based intervals from mean squares, elementwise."""
    alpha = 1.0 - level
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        icc1 = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
        icck = (msr - mse) / (msr + (msc - mse) / n)
        fstat = msr / mse
        df1 = n - 1
        df2 = (n - 1) * (k - 1)
        pvalue = stats.f.sf(fstat, df1, df2)
        # Satterthwaite degrees of freedom of the denominator (McGraw and Wong 1996, Table 7).
        fj = msc / mse
        vn = df2 * (k * icc1 * fj + n * (1 + (k - 1) * icc1) - k * icc1) ** 2
        vd = df1 * k**2 * icc1**2 * fj**2 + (n * (1 + (k - 1) * icc1) - k * icc1) ** 2
        v = vn / vd
        f_up = stats.f.ppf(1 - alpha / 2, df1, v)
        f_lo = stats.f.ppf(1 - alpha / 2, v, df1)
        low1 = n * (msr - f_up * mse) / (f_up * (k * msc + (k * n - k - n) * mse) + n * msr)
        high1 = n * (f_lo * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f_lo * msr)
        # Spearman-Brown maps ICC(2,1) in (-1/(k-1), 1] increasingly onto (-inf, 1]; a bound
        # at or below -1/(k-1) is an ICC(2,k) bound of -inf (it would otherwise flip sign and
        # give an inverted interval).
        lowk = np.where(1 + low1 * (k - 1) > 0, low1 * k / (1 + low1 * (k - 1)), -np.inf)
        highk = np.where(1 + high1 * (k - 1) > 0, high1 * k / (1 + high1 * (k - 1)), -np.inf)
        lowk = np.where(np.isnan(low1), np.nan, lowk)
        highk = np.where(np.isnan(high1), np.nan, highk)
    return {
        "icc2k": icck, "ci_low": lowk, "ci_high": highk,
        "icc21": icc1, "ci_single_low": low1, "ci_single_high": high1,
        "F": fstat, "pvalue": pvalue,
    }


def _mean_squares(y: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, ...]:
    """Two-way ANOVA mean squares of ``y`` (groups, n, k) over the items where ``keep``."""
    k = y.shape[2]
    w = keep.astype(float)  # (G, n)
    y0 = np.where(keep[..., None], y, 0.0)
    n = w.sum(axis=1)  # (G,)
    with np.errstate(divide="ignore", invalid="ignore"):
        grand = y0.sum(axis=(1, 2)) / (n * k)
        row_mean = y0.mean(axis=2)  # (G, n); zero where dropped
        col_mean = y0.sum(axis=1) / n[:, None]  # (G, k)
        ss_rows = k * (w * (row_mean - grand[:, None]) ** 2).sum(axis=1)
        ss_cols = n * ((col_mean - grand[:, None]) ** 2).sum(axis=1)
        ss_total = (w[..., None] * (y0 - grand[:, None, None]) ** 2).sum(axis=(1, 2))
        ss_err = ss_total - ss_rows - ss_cols
        msr = ss_rows / (n - 1)
        msc = ss_cols / (k - 1)
        mse = ss_err / ((n - 1) * (k - 1))
    return msr, msc, mse, n


def _as_3d(ratings: np.ndarray, name: str) -> np.ndarray:
    try:
        y = np.asarray(ratings, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric: {exc}") from None
    if y.ndim != 3:
        raise InputError(
            f"{name} must be a 3-D array (groups, n_items, k_raters), got shape {y.shape}"
        )
    if y.shape[2] < 2:
        raise InputError(f"{name} needs at least 2 raters (columns), got {y.shape[2]}")
    if np.isinf(y).any():
        g, i, j = np.argwhere(np.isinf(y))[0]
        raise InputError(f"{name} has an infinite rating at group {g}, item {i}, rater {j}")
    return y


def _reasons(n: np.ndarray, icc: np.ndarray, msr: np.ndarray, mse: np.ndarray, msc: np.ndarray):
    reasons = np.full(n.shape, "", dtype=object)
    with np.errstate(invalid="ignore"):
        den = msr + (msc - mse) / np.where(n > 0, n, 1)
    bad_den = np.isclose(den, 0.0, atol=1e-300) & (n >= 2)
    reasons[bad_den] = "all ratings equal: no variance between items or raters"
    negative = (den < 0) & ~bad_den & (n >= 2)
    reasons[negative] = ("negative denominator: the residual mean square exceeds n x MSR + MSC "
                         "(the raters disagree far more than the items differ), so the "
                         "variance estimates are negative and ICC(2,k) is undefined")
    reasons[n < 2] = "fewer than 2 complete items"
    reasons[(reasons == "") & ~np.isfinite(icc)] = "undefined (zero denominator)"
    return reasons


def icc2k_many(
    ratings: np.ndarray,
    *,
    confidence_level: float = 0.95,
    nan_policy: NanPolicy = "raise",
    groups: Sequence | None = None,
) -> pd.DataFrame:
    """ICC(2,k) and ICC(2,1) for many (items x raters) tables at once.

    Parameters
    ----------
    ratings : array_like, shape (n_groups, n_items, k_raters)
        One (items x raters) table per group, e.g. per model x Eval-Prompt x criterion with the
        three tries as raters. All groups share ``n_items`` and ``k``; with ``nan_policy="omit"``
        each group drops its own incomplete items.
    confidence_level : float, default 0.95
        Level of the F-based intervals.
    nan_policy : {"raise", "omit"}, default "raise"
        ``"raise"``: any NaN is an error. ``"omit"``: items with a NaN rating are dropped from
        their group (listwise deletion, as pingouin does); the count is in ``n_items_omitted``.
    groups : sequence, optional
        Labels of the groups (the index of the result); default ``0..n_groups-1``.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``icc2k, ci_low, ci_high, icc21, icc21_ci_low, icc21_ci_high, F,
        df1, df2, pvalue, n_items, n_items_omitted, k, reason``. Undefined values are NaN with
        ``reason`` set and an [`UndefinedStatisticWarning`][].

    Notes
    -----
    With $MSR$, $MSC$, $MSE$ the mean squares of items (rows), raters (columns) and residual of
    the two-way ANOVA without interaction, $n$ items and $k$ raters (Shrout and Fleiss 1979, case 2;
    McGraw and Wong 1996, ICC(A,k) / ICC(A,1)):

    $$
    ICC(2,k) = \\frac{MSR - MSE}{MSR + (MSC - MSE)/n}, \\quad
    ICC(2,1) = \\frac{MSR - MSE}{MSR + (k-1) MSE + k (MSC - MSE)/n}.
    $$

    The F test is $F = MSR/MSE$ on $(n-1, (n-1)(k-1))$ degrees of freedom. The interval is the
    McGraw and Wong (1996) one with Satterthwaite degrees of freedom v for ICC(2,1), carried to
    ICC(2,k) by the Spearman-Brown formula, exactly as pingouin computes it (pingouin fixes the
    level at 95%; here it is an argument). When $MSE = 0$ (every rater gives every item the same
    rating, e.g. an LLM repeating itself) ICC = 1 but the F-based interval is undefined (NaN).
    When the denominator $MSR + (MSC - MSE)/n$ is negative ($MSE > n \\cdot MSR + MSC$: the
    raters disagree far more than the items differ) the variance-component estimates are
    negative and ICC(2,k) would come out above 1: it is NaN with that ``reason``. A bound of the
    ICC(2,1) interval at or below $-1/(k-1)$ gives an ICC(2,k) bound of $-\\infty$ (pingouin
    reports the Spearman-Brown value, which then flips sign and inverts the interval).

    References
    ----------
    1. Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
       reliability. Psychological Bulletin, 86(2), 420-428.
    2. McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass
       correlation coefficients. Psychological Methods, 1(1), 30-46.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([[[1, 2, 1], [3, 3, 4], [5, 4, 5], [2, 2, 2]]] * 2, dtype=float)
    >>> icc2k_many(y)["icc2k"].round(3).tolist()
    [0.962, 0.962]

    Validated against ``pingouin.intraclass_corr`` (row ``ICC(A,k)`` / ``ICC2k``) to 1e-10,
    intervals included.
    """
    _check_level(confidence_level)
    if nan_policy not in ("raise", "omit"):
        raise InputError(f"nan_policy must be 'raise' or 'omit', got {nan_policy!r}")
    y = _as_3d(ratings, "ratings")
    n_groups, n_total, k = y.shape
    if groups is not None:
        groups = list(groups)
        if len(groups) != n_groups:
            raise InputError(
                f"groups has {len(groups)} labels but ratings has {n_groups} groups"
            )
    complete = ~np.isnan(y).any(axis=2)  # (G, n)
    if nan_policy == "raise" and not complete.all():
        g, i = np.argwhere(~complete)[0]
        raise InputError(
            f"ratings has a missing value at group {g}, item {i}; "
            "pass nan_policy='omit' to drop incomplete items"
        )
    msr, msc, mse, n = _mean_squares(y, complete)
    out = _icc_arrays(msr, msc, mse, n, k, confidence_level)
    reasons = _reasons(n, out["icc2k"], msr, mse, msc)
    undefined = reasons != ""
    for key in out:
        out[key] = np.where(undefined, np.nan, out[key])
    if undefined.any():
        first = int(np.flatnonzero(undefined)[0])
        label = groups[first] if groups is not None else first
        warnings.warn(
            f"ICC(2,k) undefined for {int(undefined.sum())} of {n_groups} group(s) "
            f"(first: {label!r}: {reasons[first]}); returned NaN",
            UndefinedStatisticWarning,
            stacklevel=user_stacklevel(),
        )
    frame = pd.DataFrame(
        {
            "icc2k": out["icc2k"], "ci_low": out["ci_low"], "ci_high": out["ci_high"],
            "icc21": out["icc21"], "icc21_ci_low": out["ci_single_low"],
            "icc21_ci_high": out["ci_single_high"], "F": out["F"],
            "df1": (n - 1).astype(int), "df2": ((n - 1) * (k - 1)).astype(int),
            "pvalue": out["pvalue"], "n_items": n.astype(int),
            "n_items_omitted": (n_total - n).astype(int), "k": k, "reason": reasons.astype(str),
        },
        index=pd.Index(groups if groups is not None else range(n_groups), name="group"),
    )
    return frame


def _long_to_wide(
    data: pd.DataFrame, item: str | None, rater: str | None, rating: str | None
) -> np.ndarray:
    names = {"item": item, "rater": rater, "rating": rating}
    missing_arg = [k for k, v in names.items() if v is None]
    if missing_arg:
        raise InputError(
            "a long DataFrame needs the column names item=, rater= and rating=; missing: "
            + ", ".join(missing_arg)
        )
    absent = [v for v in names.values() if v not in data.columns]
    if absent:
        raise InputError(f"column(s) {absent} not in ratings; columns are {list(data.columns)}")
    dup = data.duplicated([item, rater])
    if dup.any():
        row = data.index[np.flatnonzero(dup.to_numpy())[0]]
        raise InputError(
            f"ratings has more than one rating for the same ({item}, {rater}) at row {row!r}"
        )
    values = pd.to_numeric(data[rating], errors="coerce")
    bad = values.isna() & data[rating].notna()
    if bad.any():
        row = data.index[np.flatnonzero(bad.to_numpy())[0]]
        raise InputError(f"column {rating!r} is not numeric at row {row!r}: {data[rating][row]!r}")
    wide = data.assign(**{rating: values}).pivot(index=item, columns=rater, values=rating)
    return wide.to_numpy(dtype=float)


def icc2k(
    ratings: np.ndarray | pd.DataFrame,
    *,
    item: str | None = None,
    rater: str | None = None,
    rating: str | None = None,
    confidence_level: float = 0.95,
    nan_policy: NanPolicy = "raise",
) -> ICCResult:
    """ICC(2,k): two-way random effects, absolute agreement, reliability of the mean of k raters.

    Parameters
    ----------
    ratings : array_like of shape (n_items, k_raters) or pandas.DataFrame
        Wide table (one row per item, one column per rater), or a long DataFrame with one row per
        rating whose columns are named by ``item``, ``rater`` and ``rating``. A wide DataFrame
        (when ``item`` is not given) is used as is. A missing (item, rater) pair in long data is a
        missing rating.
    item, rater, rating : str, optional
        Column names of a long DataFrame.
    confidence_level : float, default 0.95
        Level of the F-based interval.
    nan_policy : {"raise", "omit"}, default "raise"
        ``"omit"`` drops items with a missing rating (listwise, like pingouin).

    Returns
    -------
    ICCResult
        ``statistic`` ICC(2,k), ``pvalue`` of the F test, ``icc_single`` ICC(2,1),
        ``confidence_interval()`` and ``confidence_interval_single()``.

    Notes
    -----
    See [`icc2k_many`][] for the formulas (Shrout and Fleiss ICC(2,k) = McGraw and Wong
    ICC(A,k)).

    References
    ----------
    1. Shrout, P. E., & Fleiss, J. L. (1979). Psychological Bulletin, 86(2), 420-428.
    2. McGraw, K. O., & Wong, S. P. (1996). Psychological Methods, 1(1), 30-46.

    Examples
    --------
    >>> res = icc2k([[1, 2, 1], [3, 3, 4], [5, 4, 5], [2, 2, 2]])
    >>> round(res.statistic, 3), [round(x, 3) for x in res.confidence_interval()]
    (0.962, [0.762, 0.997])

    Validated against ``pingouin.intraclass_corr`` (``ICC(A,k)``, formerly ``ICC2k``) to 1e-10,
    intervals included.
    """
    if isinstance(ratings, pd.DataFrame) and item is not None:
        y = _long_to_wide(ratings, item, rater, rating)
    elif isinstance(ratings, pd.DataFrame) and (rater is not None or rating is not None):
        raise InputError("item= is required with rater= and rating= for a long DataFrame")
    else:
        try:
            y = np.asarray(ratings, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InputError(f"ratings must be numeric: {exc}") from None
    if y.ndim != 2:
        raise InputError(f"ratings must be 2-D (n_items, k_raters), got shape {y.shape}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        row = icc2k_many(y[None], confidence_level=confidence_level, nan_policy=nan_policy)
    reason = str(row["reason"].iloc[0])
    if reason:
        warnings.warn(f"ICC(2,k) undefined: {reason}; returned NaN", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
    n_eff = int(row["n_items"].iloc[0])
    msr, msc, mse, _ = _mean_squares(y[None], ~np.isnan(y[None]).any(axis=2))
    return ICCResult(
        statistic=float(row["icc2k"].iloc[0]),
        pvalue=float(row["pvalue"].iloc[0]),
        icc_single=float(row["icc21"].iloc[0]),
        F=float(row["F"].iloc[0]),
        df1=int(row["df1"].iloc[0]),
        df2=int(row["df2"].iloc[0]),
        n_items=n_eff,
        k=int(y.shape[1]),
        ms_rows=float(msr[0]) if not reason else np.nan,
        ms_cols=float(msc[0]) if not reason else np.nan,
        ms_error=float(mse[0]) if not reason else np.nan,
        confidence_level=confidence_level,
        n_items_omitted=int(row["n_items_omitted"].iloc[0]),
        reason=reason,
    )
