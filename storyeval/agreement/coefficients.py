"""Inter-rater agreement for labels: Gwet's AC1, Fleiss' kappa, Krippendorff's alpha; and the
ICC(2,k) of a dataset's human annotators ([`annotator_icc`][]).

All label functions take the same input: an ``(n_items, n_raters)`` table of labels with NaN /
None for a missing rating, plus the declared ``categories``; or, with ``data_format="counts"``,
an ``(n_items, q)`` matrix of how many raters chose each category. ICC lives in
`storyeval.agreement.icc` and is re-exported here; all coefficients per criterion of a dataset
are in [`storyeval.agreement.annotators.annotator_agreement`][].
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.agreement.icc import ICCResult, icc2k, icc2k_many
from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel
from storyeval.resample._common import check_confidence

__all__ = [
    "AgreementResult",
    "ICCResult",
    "ac1",
    "annotator_icc",
    "category_counts",
    "cohen_kappa",
    "fleiss_kappa",
    "gwet_ac1",
    "icc2k",
    "icc2k_many",
    "krippendorff_alpha",
]

DataFormat = Literal["ratings", "counts"]


@dataclass(frozen=True)
class AgreementResult:
    """Result of an agreement coefficient; unpacks like a tuple ``(statistic, pvalue)``.

    Attributes
    ----------
    statistic : float
        The coefficient (NaN if undefined; see ``reason``).
    standard_error : float
        Its standard error (NaN where the method has no analytic one).
    pvalue : float
        Two-sided p-value of the test of zero agreement (NaN where not available).
    method : str
        ``"gwet_ac1"``, ``"fleiss_kappa"`` or ``"krippendorff_alpha"`` (with the level).
    percent_agreement, chance_agreement : float
        pa and pe of the coefficient (NaN for Krippendorff's alpha, which is defined by
        disagreements).
    observed_disagreement, expected_disagreement : float
        D_o and D_e of Krippendorff's alpha (alpha = 1 - D_o / D_e); NaN for the other
        coefficients.
    n_items : int
        Items used (items without any rating are excluded and counted in ``n_items_excluded``).
    n_raters : int
        Columns of the ratings table (maximum raters per item for counts input).
    categories : tuple
        The declared categories (q = their number).
    df : float
        Degrees of freedom of the t interval (AC1: n_items - 1); NaN if no interval.
    """

    statistic: float
    standard_error: float
    pvalue: float
    method: str
    percent_agreement: float
    chance_agreement: float
    n_items: int
    n_raters: int
    categories: tuple
    confidence_level: float = 0.95
    df: float = math.nan
    n_items_excluded: int = 0
    reason: str = ""
    observed_disagreement: float = math.nan
    expected_disagreement: float = math.nan

    def __iter__(self):
        return iter((self.statistic, self.pvalue))

    @property
    def n_categories(self) -> int:
        return len(self.categories)

    def confidence_interval(self, confidence_level: float | None = None) -> tuple[float, float]:
        """``statistic -/+ t_{1-alpha/2, df} * standard_error``, upper bound capped at 1.

        NaN for coefficients without an analytic standard error (Fleiss' kappa: its standard
        error is the one under the null hypothesis, not valid for an interval; Krippendorff's
        alpha: bootstrap it).
        """
        level = self.confidence_level if confidence_level is None else confidence_level
        _check_level(level)
        if not (np.isfinite(self.standard_error) and np.isfinite(self.df)):
            return (math.nan, math.nan)
        half = stats.t.ppf(1 - (1 - level) / 2, self.df) * self.standard_error
        return (float(self.statistic - half), float(min(1.0, self.statistic + half)))

    def to_frame(self) -> pd.DataFrame:
        """One-row table of the result with its interval."""
        low, high = self.confidence_interval()
        return pd.DataFrame(
            [{
                "method": self.method, "statistic": self.statistic,
                "standard_error": self.standard_error, "ci_low": low, "ci_high": high,
                "pvalue": self.pvalue, "percent_agreement": self.percent_agreement,
                "chance_agreement": self.chance_agreement,
                "observed_disagreement": self.observed_disagreement,
                "expected_disagreement": self.expected_disagreement, "n_items": self.n_items,
                "n_raters": self.n_raters, "n_categories": self.n_categories,
                "confidence_level": self.confidence_level, "reason": self.reason,
            }]
        )


def _check_level(confidence_level: float) -> None:
    if not (isinstance(confidence_level, (int, float)) and 0 < confidence_level < 1):
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")


def _undefined(reason: str, what: str) -> None:
    warnings.warn(f"{what} undefined: {reason}; returned NaN", UndefinedStatisticWarning,
                  stacklevel=user_stacklevel())


# ----------------------------------------------------------------------------- input handling
def category_counts(
    ratings: Any, *, categories: Sequence | None = None
) -> tuple[np.ndarray, tuple]:
    """Counts matrix ``(n_items, q)`` from an ``(n_items, n_raters)`` table of labels.

    Parameters
    ----------
    ratings : array_like or pandas.DataFrame, shape (n_items, n_raters)
        Labels; NaN or None is a missing rating.
    categories : sequence, optional
        The declared categories, in order. Default: the sorted observed labels. A label not in
        ``categories`` is an error (naming its item and rater).

    Returns
    -------
    counts : numpy.ndarray of int, shape (n_items, q)
        ``counts[i, c]`` raters gave item i category ``categories[c]``.
    categories : tuple
    """
    table = ratings.to_numpy(dtype=object) if isinstance(ratings, pd.DataFrame) else np.asarray(
        ratings, dtype=object
    )
    if table.ndim != 2:
        raise InputError(f"ratings must be 2-D (n_items, n_raters), got shape {table.shape}")
    flat = table.ravel()
    missing = pd.isna(flat)
    observed = pd.unique(flat[~missing])
    if categories is None:
        try:
            cats = tuple(sorted(observed.tolist()))
        except TypeError:
            cats = tuple(observed.tolist())
    else:
        cats = tuple(categories)
        if len(set(cats)) != len(cats):
            raise InputError(f"categories has duplicates: {list(cats)}")
        if any(pd.isna(c) for c in cats):
            raise InputError("categories must not contain NaN/None")
    codes = np.full(flat.shape, -1, dtype=np.int64)
    codes[~missing] = pd.Index(list(cats), dtype=object).get_indexer(list(flat[~missing]))
    unknown = (~missing) & (codes < 0)
    if unknown.any():
        pos = int(np.flatnonzero(unknown)[0])
        i, j = divmod(pos, table.shape[1])
        raise InputError(
            f"ratings has label {flat[pos]!r} at item {i}, rater {j} that is not in "
            f"categories {list(cats)}"
        )
    counts = np.zeros((table.shape[0], len(cats)), dtype=np.int64)
    rows = np.repeat(np.arange(table.shape[0]), table.shape[1])
    np.add.at(counts, (rows[~missing], codes[~missing]), 1)
    return counts, cats


def _counts_from_input(
    ratings: Any, categories: Sequence | None, data_format: DataFormat, *, require_categories: bool
) -> tuple[np.ndarray, tuple, int]:
    """(counts of the items with >= 1 rating, categories, n_raters, n_excluded)."""
    if data_format == "ratings":
        if categories is None and require_categories:
            raise InputError(
                "categories is required: pass the declared category set (e.g. categories=[0, 1]);"
                " q is the number of declared categories, not only the observed ones"
            )
        counts, cats = category_counts(ratings, categories=categories)
        n_raters = int(np.shape(ratings)[1])
    elif data_format == "counts":
        try:
            counts = np.asarray(ratings, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InputError(f"counts must be numeric: {exc}") from None
        if counts.ndim != 2:
            raise InputError(f"counts must be 2-D (n_items, q), got shape {counts.shape}")
        bad = ~np.isfinite(counts) | (counts < 0) | (counts != np.round(counts))
        if bad.any():
            i, c = np.argwhere(bad)[0]
            raise InputError(
                f"counts must be non-negative integers; item {i}, column {c} is {float(counts[i, c])!r}"
            )
        counts = counts.astype(np.int64)
        if categories is None:
            cats = tuple(range(counts.shape[1]))
        else:
            cats = tuple(categories)
            if len(cats) != counts.shape[1]:
                raise InputError(
                    f"categories has {len(cats)} entries but counts has {counts.shape[1]} columns"
                )
        n_raters = int(counts.sum(axis=1).max(initial=0))
    else:
        raise InputError(f"data_format must be 'ratings' or 'counts', got {data_format!r}")
    if require_categories and len(cats) < 2:
        raise InputError(f"at least 2 categories are needed, got {list(cats)}")
    return counts, cats, n_raters


# ----------------------------------------------------------------------------- Gwet's AC1
def gwet_ac1(
    ratings: Any,
    *,
    categories: Sequence | None = None,
    data_format: DataFormat = "ratings",
    confidence_level: float = 0.95,
    population_size: float | None = None,
) -> AgreementResult:
    """Gwet's first-order agreement coefficient AC1 for nominal labels from several raters.

    Parameters
    ----------
    ratings : array_like, shape (n_items, n_raters) or (n_items, q)
        Labels with NaN/None for a missing rating; or, with ``data_format="counts"``, how many
        raters chose each category for each item.
    categories : sequence
        The declared categories (required for labels; for counts, optional names of the columns).
        q is their number, including categories nobody chose: q enters the chance agreement.
    data_format : {"ratings", "counts"}, default "ratings"
    confidence_level : float, default 0.95
    population_size : float, optional
        Number N of items in the population, for the finite-population correction 1 - n/N of the
        variance. Default None: infinite population, correction factor 1 (as irrCAC's default).

    Returns
    -------
    AgreementResult
        ``statistic`` AC1, ``standard_error``, ``pvalue`` (two-sided t test of AC1 = 0 on n-1
        df), ``confidence_interval()`` (t on n-1 df, upper bound capped at 1),
        ``percent_agreement`` pa and ``chance_agreement`` pe.

    Notes
    -----
    With $r_{ik}$ the number of raters who put item $i$ in category $k$, $r_i = \\sum_k r_{ik}$,
    $n$ the items with at least one rating and $n_2$ those with $r_i \\ge 2$ (Gwet 2008; Gwet 2014,
    ch. 2):

    $$
    p_a = \\frac{1}{n_2} \\sum_{i: r_i \\ge 2} \\sum_k \\frac{r_{ik}(r_{ik}-1)}{r_i(r_i-1)},
    \\quad \\pi_k = \\frac{1}{n}\\sum_i \\frac{r_{ik}}{r_i}, \\quad
    p_e = \\frac{1}{q-1}\\sum_k \\pi_k(1-\\pi_k), \\quad
    AC_1 = \\frac{p_a - p_e}{1 - p_e}.
    $$

    Variance (Gwet 2008, eq. 7 with the linearisation of Gwet 2014): with
    $p_{a|i}$ the item's term of $p_a$ (0 if $r_i < 2$),
    $AC_{1|i} = \\frac{n}{n_2} \\frac{p_{a|i} - p_e [r_i \\ge 2]}{1 - p_e}$,
    $p_{e|i} = \\frac{1}{q-1} \\sum_k \\frac{r_{ik}}{r_i}(1 - \\pi_k)$ and
    $AC^*_{1|i} = AC_{1|i} - 2 (1 - AC_1) \\frac{p_{e|i} - p_e}{1 - p_e}$,

    $$
    \\widehat{Var}(AC_1) = \\frac{1 - f}{n(n-1)} \\sum_i (AC^*_{1|i} - AC_1)^2,
    $$

    $f = n/N$ the sampling fraction (0 by default). Items without any rating are excluded
    (counted in ``n_items_excluded``).

    References
    ----------
    1. Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence
       of high agreement. British Journal of Mathematical and Statistical Psychology, 61(1),
       29-48.
    2. Gwet, K. L. (2014). Handbook of Inter-Rater Reliability (4th ed.). Advanced Analytics.

    Examples
    --------
    >>> res = gwet_ac1([[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]], categories=[0, 1])
    >>> round(res.statistic, 4), round(res.percent_agreement, 4), round(res.chance_agreement, 4)
    (0.7, 0.8333, 0.4444)

    Validated against a hand-worked case and irrCAC's ``gwet_ac1_raw`` (Fergadis 2022, a port of
    Gwet's R package) for the coefficient, standard error and interval.
    """
    _check_level(confidence_level)
    counts, cats, n_raters = _counts_from_input(
        ratings, categories, data_format, require_categories=True
    )
    q = len(cats)
    r_i = counts.sum(axis=1)
    rated = r_i >= 1
    n_excluded = int((~rated).sum())
    counts, r_i = counts[rated], r_i[rated].astype(float)
    n = counts.shape[0]
    multi = r_i >= 2
    n2 = int(multi.sum())
    base = {"method": "gwet_ac1", "n_items": n, "n_raters": n_raters, "categories": cats,
                "confidence_level": confidence_level, "n_items_excluded": n_excluded}
    if n2 == 0:
        reason = "no item has at least 2 ratings"
        _undefined(reason, "Gwet's AC1")
        return AgreementResult(math.nan, math.nan, math.nan, percent_agreement=math.nan,
                               chance_agreement=math.nan, reason=reason, **base)
    denom = np.where(multi, r_i * (r_i - 1), 1.0)
    pa_i = np.where(multi, (counts * (counts - 1)).sum(axis=1) / denom, 0.0)
    pa = pa_i.sum() / n2
    shares = counts / r_i[:, None]
    pi = shares.mean(axis=0)
    pe = float((pi * (1 - pi)).sum() / (q - 1))
    ac1 = float((pa - pe) / (1 - pe))
    # Linearised per-item terms (Gwet 2008; irrCAC / Gwet's R code use the same).
    ac1_i = (n / n2) * (pa_i - pe * multi) / (1 - pe)
    pe_i = (shares * (1 - pi)).sum(axis=1) / (q - 1)
    ac1_star = ac1_i - 2 * (1 - ac1) * (pe_i - pe) / (1 - pe)
    fpc = 1.0
    if population_size is not None:
        if not (population_size >= n):
            raise InputError(
                f"population_size must be at least the number of items ({n}), got "
                f"{population_size!r}"
            )
        fpc = 1.0 - n / population_size
    if n >= 2:
        var = fpc / (n * (n - 1)) * float(((ac1_star - ac1) ** 2).sum())
        se = math.sqrt(var)
        with np.errstate(divide="ignore", invalid="ignore"):
            tstat = ac1 / se if se > 0 else (math.inf if ac1 != 0 else math.nan)
        pvalue = float(2 * stats.t.sf(abs(tstat), n - 1)) if not math.isnan(tstat) else math.nan
        df = float(n - 1)
    else:
        se, pvalue, df = math.nan, math.nan, math.nan
    return AgreementResult(ac1, se, pvalue, percent_agreement=float(pa), chance_agreement=pe,
                           df=df, **base)


# ----------------------------------------------------------------------------- Fleiss' kappa
#: Alias of `gwet_ac1` (storyeval names the coefficient ``gwet_ac1`` everywhere: the function,
#: the ``method`` of its result, the columns ``gwet_ac1``, ``gwet_ac1_ci_low``, ``gwet_ac1_ci_high``
#: of the annotator and user-study tables, the ``coefficient`` rows of pairwise agreement).
ac1 = gwet_ac1


def fleiss_kappa(
    ratings: Any,
    *,
    categories: Sequence | None = None,
    data_format: DataFormat = "ratings",
    confidence_level: float = 0.95,
) -> AgreementResult:
    """Fleiss' kappa for nominal labels, every item rated by the same number m of raters.

    Parameters
    ----------
    ratings : array_like, shape (n_items, n_raters) or (n_items, q)
        Labels (NaN for missing) or, with ``data_format="counts"``, counts per category.
    categories : sequence, optional
        Declared categories (default: the observed labels). Unobserved categories do not change
        kappa (their p_j is 0).
    data_format : {"ratings", "counts"}, default "ratings"
    confidence_level : float, default 0.95
        Stored for reporting; kappa has no interval here (see Notes).

    Returns
    -------
    AgreementResult
        ``statistic`` kappa; ``standard_error`` the asymptotic standard error under the null
        hypothesis kappa = 0 (Fleiss, Nee and Landis 1979) and ``pvalue`` its two-sided z test.
        ``confidence_interval()`` is NaN: the null standard error does not give an interval.

    Notes
    -----
    With $n_{ij}$ raters putting item $i$ in category $j$, $N$ items, $m$ raters per item:
    $p_j = \\sum_i n_{ij} / (N m)$,
    $P_i = (\\sum_j n_{ij}^2 - m) / (m(m-1))$, $\\bar P = \\frac1N \\sum_i P_i$,
    $P_e = \\sum_j p_j^2$, $\\kappa = (\\bar P - P_e)/(1 - P_e)$. Null variance:
    $\\frac{2}{N m (m-1) (\\sum_j p_j q_j)^2}
    [(\\sum_j p_j q_j)^2 - \\sum_j p_j q_j (q_j - p_j)]$, $q_j = 1 - p_j$.
    Items without any rating are excluded; unequal numbers of ratings are an error.

    References
    ----------
    1. Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
       Psychological Bulletin, 76(5), 378-382.
    2. Fleiss, J. L., Nee, J. C. M., & Landis, J. R. (1979). Large sample variance of kappa
       in the case of different sets of raters. Psychological Bulletin, 86(5), 974-977.

    Examples
    --------
    >>> round(fleiss_kappa([[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]]).statistic, 4)
    0.625

    Validated against ``statsmodels.stats.inter_rater.fleiss_kappa`` to 1e-12.
    """
    _check_level(confidence_level)
    counts, cats, n_raters = _counts_from_input(
        ratings, categories, data_format, require_categories=False
    )
    r_i = counts.sum(axis=1)
    rated = r_i >= 1
    n_excluded = int((~rated).sum())
    counts, r_i = counts[rated], r_i[rated]
    if counts.shape[0] == 0:
        raise InputError("ratings has no rated item")
    m = int(r_i[0])
    if (r_i != m).any():
        i = int(np.flatnonzero(r_i != m)[0])
        raise InputError(
            f"Fleiss' kappa needs the same number of ratings per item: the first rated item has "
            f"{m}, rated item {i} has {int(r_i[i])} (use gwet_ac1 or krippendorff_alpha for "
            "missing ratings)"
        )
    if m < 2:
        raise InputError(f"Fleiss' kappa needs at least 2 ratings per item, got {m}")
    n = counts.shape[0]
    p = counts.sum(axis=0) / (n * m)
    p_i = ((counts.astype(float) ** 2).sum(axis=1) - m) / (m * (m - 1))
    p_bar = float(p_i.mean())
    p_e = float((p**2).sum())
    base = {"method": "fleiss_kappa", "percent_agreement": p_bar, "chance_agreement": p_e,
                "n_items": n, "n_raters": n_raters, "categories": cats,
                "confidence_level": confidence_level, "n_items_excluded": n_excluded}
    if np.isclose(p_e, 1.0):
        reason = "all ratings in one category: chance agreement is 1"
        _undefined(reason, "Fleiss' kappa")
        return AgreementResult(math.nan, math.nan, math.nan, reason=reason, **base)
    kappa = (p_bar - p_e) / (1 - p_e)
    pq = p * (1 - p)
    s = pq.sum()
    var0 = 2.0 / (n * m * (m - 1) * s**2) * (s**2 - (pq * ((1 - p) - p)).sum())
    se0 = math.sqrt(var0)
    pvalue = float(2 * stats.norm.sf(abs(kappa / se0))) if se0 > 0 else math.nan
    return AgreementResult(float(kappa), se0, pvalue, **base)


# ----------------------------------------------------------------------------- Krippendorff
def _alpha_delta(level: str, values: np.ndarray, n_c: np.ndarray) -> np.ndarray:
    q = len(n_c)
    if level == "nominal":
        return 1.0 - np.eye(q)
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    # ordinal: (sum_{g between c and k} n_g - (n_c + n_k)/2)^2 (Krippendorff 2011)
    cum = np.cumsum(n_c)
    return (cum[None, :] - cum[:, None] + (n_c[:, None] - n_c[None, :]) / 2.0) ** 2


def krippendorff_alpha(
    ratings: Any,
    *,
    level: Literal["nominal", "ordinal", "interval"] = "nominal",
    categories: Sequence | None = None,
    data_format: DataFormat = "ratings",
) -> AgreementResult:
    """Krippendorff's alpha for nominal, ordinal or interval data with missing ratings.

    Parameters
    ----------
    ratings : array_like, shape (n_items, n_raters) or (n_items, q)
        Values with NaN/None for a missing rating (items as rows; the ``krippendorff`` package
        takes the transpose), or counts with ``data_format="counts"``.
    level : {"nominal", "ordinal", "interval"}, default "nominal"
    categories : sequence, optional
        The value domain, in order (ordinal: the rank order; interval: numeric values).
        Default: the sorted observed values. Unobserved values do not change alpha.
    data_format : {"ratings", "counts"}, default "ratings"

    Returns
    -------
    AgreementResult
        ``statistic`` alpha, ``observed_disagreement`` D_o and ``expected_disagreement`` D_e
        (alpha = 1 - D_o/D_e; ``percent_agreement`` and ``chance_agreement`` are NaN). No
        analytic standard error (bootstrap it), so ``standard_error``/``pvalue`` are NaN.

    Notes
    -----
    Only units with $m_u \\ge 2$ values are pairable. Coincidences, computed as one matrix
    product from the counts $N$ (units x values):
    $o_{ck} = \\sum_u \\frac{n_{uc} n_{uk} - [c = k] n_{uc}}{m_u - 1}$,
    $n_c = \\sum_k o_{ck}$, $n = \\sum_c n_c$,

    $$
    \\alpha = 1 - (n-1)\\frac{\\sum_{c,k} o_{ck}\\, \\delta^2_{ck}}
                            {\\sum_{c,k} n_c n_k\\, \\delta^2_{ck}},
    $$

    with $\\delta^2_{ck} = [c \\ne k]$ (nominal), $(c - k)^2$ (interval),
    $(\\sum_{g=c}^{k} n_g - (n_c + n_k)/2)^2$ (ordinal).

    References
    ----------
    1. Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. University of
       Pennsylvania, Annenberg School for Communication.
    2. Hayes, A. F., & Krippendorff, K. (2007). Answering the call for a standard reliability
       measure for coding data. Communication Methods and Measures, 1(1), 77-89.

    Examples
    --------
    >>> round(krippendorff_alpha([[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]]).statistic, 4)
    0.6562

    Validated against the ``krippendorff`` package (``krippendorff.alpha``) for the three levels
    with missing values, to 1e-12.
    """
    if level not in ("nominal", "ordinal", "interval"):
        raise InputError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")
    counts, cats, n_raters = _counts_from_input(
        ratings, categories, data_format, require_categories=False
    )
    values = np.array([math.nan] * len(cats))
    if level == "interval":
        try:
            values = np.asarray(cats, dtype=float)
        except (TypeError, ValueError):
            raise InputError(
                f"level='interval' needs numeric values; categories are {list(cats)}"
            ) from None
    counts = counts.astype(float)
    m_u = counts.sum(axis=1)
    pairable = m_u >= 2
    n_excluded = int((m_u == 0).sum())
    nu = counts[pairable]
    w = 1.0 / (m_u[pairable] - 1.0)
    coincidence = (nu * w[:, None]).T @ nu - np.diag((nu * w[:, None]).sum(axis=0))
    n_c = coincidence.sum(axis=1)
    n_total = n_c.sum()
    base = {"method": f"krippendorff_alpha_{level}", "standard_error": math.nan, "pvalue": math.nan,
                "n_items": int(pairable.sum()), "n_raters": n_raters, "categories": cats,
                "n_items_excluded": n_excluded}
    delta = _alpha_delta(level, values, n_c)
    d_obs = float((coincidence * delta).sum())
    d_exp = float((np.outer(n_c, n_c) * delta).sum())
    if n_total <= 1 or d_exp == 0:
        reason = ("fewer than 2 pairable values" if n_total <= 1
                  else "a single value observed: no expected disagreement")
        _undefined(reason, "Krippendorff's alpha")
        return AgreementResult(math.nan, percent_agreement=math.nan, chance_agreement=math.nan,
                               reason=reason, **base)
    alpha = 1.0 - (n_total - 1.0) * d_obs / d_exp
    return AgreementResult(float(alpha), percent_agreement=math.nan,
                           chance_agreement=math.nan,
                           observed_disagreement=d_obs / n_total,
                           expected_disagreement=d_exp / (n_total * (n_total - 1.0)), **base)


# ----------------------------------------------------------------------------- annotators
ICC_COLUMNS = ["criterion", "icc2k", "ci_low", "ci_high", "icc21", "pvalue", "n_items",
               "n_items_omitted", "k", "reason"]


def annotator_icc(
    data: Any,
    annotators: Mapping[str, Sequence[str]] | None = None,
    *,
    exclude_systems: Iterable[str] = (),
    confidence_level: float = 0.95,
    nan_policy: Literal["raise", "omit"] = "raise",
) -> pd.DataFrame:
    """ICC(2,k) of the human annotators, one row per criterion.

    Parameters
    ----------
    data : storyeval.data.Dataset or pandas.DataFrame
        A dataset (its [`annotators`][storyeval.data.dataset.Dataset.annotators] are the default
        ``annotators``), or a wide table with one row per story and one column per annotator
        rating (e.g. ``Dataset.wide()``, indexed by ``(system, prompt_id)``).
    annotators : mapping of criterion to list of column names, optional
        The annotator columns of each criterion (at least 2 each; criteria may have different
        numbers). Required with a DataFrame; default for a Dataset: ``dataset.annotators()``.
    exclude_systems : iterable of str, default ()
        Systems (index level ``system``) to leave out, e.g. the reference system whose stories
        are human-written references.
    confidence_level : float, default 0.95
    nan_policy : {"raise", "omit"}, default "raise"
        ICC(2,k) needs every story rated by every annotator of the criterion. ``"raise"``: a
        missing rating is an error naming the criterion, the column and a story. ``"omit"``:
        incomplete stories are left out of that criterion, counted in ``n_items_omitted``.

    Returns
    -------
    pandas.DataFrame
        Columns ``criterion, icc2k, ci_low, ci_high, icc21, pvalue, n_items, n_items_omitted,
        k, reason`` (``n_items`` the stories used, ``k`` the annotator columns).

    Notes
    -----
    The annotators are the raters, the stories the items; each criterion is a separate
    two-way random-effects ANOVA (see [`icc2k_many`][]). When an "annotator" is a slot (the
    k-th rating of each story, given by different people on different stories), the
    random-raters assumption of the two-way random-effects model describes it well.

    Examples
    --------
    >>> wide = pd.DataFrame({"a": [1, 3, 5, 2], "b": [2, 3, 4, 2], "c": [1, 4, 5, 2]})
    >>> annotator_icc(wide, {"Fun": ["a", "b", "c"]})["icc2k"].round(3).tolist()
    [0.962]

    Validated against ``pingouin.intraclass_corr`` per criterion (tests/test_agreement.py,
    tests/test_agreement_data.py).
    """
    _check_level(confidence_level)
    if nan_policy not in ("raise", "omit"):
        raise InputError(f"nan_policy must be 'raise' or 'omit', got {nan_policy!r}")
    wide, columns = _annotator_inputs(data, annotators)
    wide = _drop_systems(wide, exclude_systems)
    rows = [_criterion_icc(wide, crit, cols, confidence_level, nan_policy)
            for crit, cols in columns.items()]
    return pd.concat(rows, ignore_index=True).loc[:, ICC_COLUMNS]


def _annotator_inputs(
    data: Any, annotators: Mapping[str, Sequence[str]] | None
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The wide table and the validated ``{criterion: [annotator columns]}`` mapping."""
    from storyeval.data.dataset import Dataset

    if isinstance(data, Dataset):
        wide = data.wide()
        if annotators is None:
            annotators = data.annotators()
            if not annotators:
                raise InputError(
                    f"dataset {data.name!r} has no criterion rated by at least 2 annotators; "
                    "agreement needs one rating per annotator (long ratings with an "
                    "'annotator' column, or annotator columns of a wide table)")
    elif isinstance(data, pd.DataFrame):
        if annotators is None:
            raise InputError(
                "annotators is required with a wide DataFrame: pass {criterion: [annotator "
                "columns]}, or pass the Dataset itself (its annotators() are the default)")
        wide = data
    else:
        raise InputError("data must be a storyeval Dataset or a pandas DataFrame, got "
                         f"{type(data).__name__}")
    return wide, _checked_columns(wide, annotators)


def _checked_columns(
    wide: pd.DataFrame, annotators: Mapping[str, Sequence[str]]
) -> dict[str, list[str]]:
    columns = {str(crit): list(cols) for crit, cols in dict(annotators).items()}
    if not columns:
        raise InputError("annotators is empty")
    few = {crit: cols for crit, cols in columns.items() if len(set(cols)) < 2}
    if few:
        crit = next(iter(few))
        raise InputError(f"criterion {crit!r} needs at least 2 distinct annotator columns, got "
                         f"{few[crit]}")
    absent = [c for cols in columns.values() for c in cols if c not in wide.columns]
    if absent:
        raise InputError(f"annotator column(s) {absent} not in wide; columns are "
                         f"{list(wide.columns)[:12]}")
    return columns


def _drop_systems(wide: pd.DataFrame, exclude_systems: Iterable[str]) -> pd.DataFrame:
    exclude = list(exclude_systems)
    if not exclude:
        return wide
    if "system" not in (wide.index.names or []):
        raise InputError("exclude_systems needs wide indexed by a 'system' level")
    systems = wide.index.get_level_values("system")
    unknown = sorted(set(exclude) - set(systems))
    if unknown:
        raise InputError(
            f"exclude_systems has unknown system(s) {unknown}; systems are "
            f"{sorted(set(systems))}"
        )
    return wide[~systems.isin(exclude)]


def _story_label(key: Any) -> str:
    if isinstance(key, tuple) and len(key) == 2:
        from storyeval.data.dataset import make_story_id

        return repr(make_story_id(*key))
    return repr(key)


def _require_complete(y: np.ndarray, index: pd.Index, criterion: str,
                      columns: Sequence[str]) -> None:
    """InputError naming the criterion, the column and the story of the first missing rating."""
    missing = np.isnan(y)
    if not missing.any():
        return
    i, j = np.argwhere(missing)[0]
    n_bad = int(missing.any(axis=1).sum())
    raise InputError(
        f"criterion {criterion!r}: annotator column {columns[j]!r} has no rating for story "
        f"{_story_label(index[i])}; ICC(2,k) needs every story rated by every annotator "
        f"({n_bad} of {len(y)} stories are incomplete): use nan_policy='omit' (command line: "
        "--nan-policy omit) to leave them out"
    )


def _criterion_icc(wide: pd.DataFrame, criterion: str, columns: list[str],
                   confidence_level: float, nan_policy: str) -> pd.DataFrame:
    """One row of [`annotator_icc`][]."""
    try:
        y = wide.loc[:, columns].to_numpy(dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"criterion {criterion!r}: annotator columns must be numeric: "
                         f"{exc}") from None
    if nan_policy == "raise":
        _require_complete(y, wide.index, criterion, columns)
    frame = icc2k_many(y[None], confidence_level=confidence_level, nan_policy="omit",
                       groups=[criterion])
    return frame.reset_index().rename(columns={"group": "criterion"})


def cohen_kappa(
    labels_a: Sequence,
    labels_b: Sequence,
    *,
    categories: Sequence | None = None,
    confidence_level: float = 0.95,
) -> dict:
    """Cohen's kappa of two raters on the same items with its large-sample standard error.

    Returns
    -------
    dict
        ``statistic, standard_error, standard_error_null, pvalue (two-sided z test of kappa =
        0 with the null standard error), ci_low, ci_high (Wald with the standard error),
        percent_agreement, chance_agreement, n_items``.

    Notes
    -----
    With the q x q table of proportions p_ij, row and column margins p_i., p_.j:
    p_o = sum_i p_ii, p_e = sum_i p_i. p_.i, kappa = (p_o - p_e) / (1 - p_e). Variance
    (Fleiss, Cohen and Everitt 1969): [sum_i p_ii (1 - (p_i. + p_.i)(1 - kappa))^2 +
    (1 - kappa)^2 sum_{i != j} p_ij (p_.i + p_j.)^2 - (kappa - p_e (1 - kappa))^2] /
    (n (1 - p_e)^2); under kappa = 0: [p_e + p_e^2 - sum_i p_i. p_.i (p_i. + p_.i)] /
    (n (1 - p_e)^2). Validated against statsmodels ``cohens_kappa`` (kappa, std_kappa,
    std_kappa0) to 1e-12.
    """
    level = check_confidence(confidence_level)
    a = np.asarray(labels_a, dtype=object)
    b = np.asarray(labels_b, dtype=object)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError("labels_a and labels_b must be aligned 1-D sequences")
    keep = ~(pd.isna(a) | pd.isna(b))
    a, b = a[keep], b[keep]
    cats = list(categories) if categories is not None else sorted(set(a) | set(b), key=str)
    index = pd.Index(cats, dtype=object)
    ia, ib = index.get_indexer(list(a)), index.get_indexer(list(b))
    if (ia < 0).any() or (ib < 0).any():
        bad = a[ia < 0][0] if (ia < 0).any() else b[ib < 0][0]
        raise InputError(f"label {bad!r} is not in categories {cats}")
    n = len(a)
    out = {"n_items": n}
    if n == 0:
        raise InputError("Cohen's kappa: no item labelled by both raters")
    table = np.zeros((len(cats), len(cats)))
    np.add.at(table, (ia, ib), 1.0)
    p = table / n
    row, col = p.sum(axis=1), p.sum(axis=0)
    p_o, p_e = float(np.trace(p)), float(row @ col)
    if np.isclose(p_e, 1.0):
        warnings.warn("Cohen's kappa undefined: both raters used one category only",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
        return {**out, "statistic": math.nan, "standard_error": math.nan,
                "standard_error_null": math.nan, "pvalue": math.nan, "ci_low": math.nan,
                "ci_high": math.nan, "percent_agreement": p_o, "chance_agreement": p_e}
    kappa = (p_o - p_e) / (1 - p_e)
    diag = np.diag(p)
    term_a = float((diag * (1 - (row + col) * (1 - kappa)) ** 2).sum())
    off = p * (col[:, None] + row[None, :]) ** 2
    term_b = (1 - kappa) ** 2 * float(off.sum() - np.trace(off))
    term_c = (kappa - p_e * (1 - kappa)) ** 2
    se = math.sqrt(max(term_a + term_b - term_c, 0.0) / (n * (1 - p_e) ** 2))
    se0 = math.sqrt(max(p_e + p_e ** 2 - float((row * col * (row + col)).sum()), 0.0)
                    / (n * (1 - p_e) ** 2))
    z = stats.norm.ppf(1 - (1 - level) / 2)
    pvalue = float(2 * stats.norm.sf(abs(kappa / se0))) if se0 > 0 else math.nan
    return {**out, "statistic": float(kappa), "standard_error": se, "standard_error_null": se0,
            "pvalue": pvalue, "ci_low": float(kappa - z * se),
            "ci_high": float(min(1.0, kappa + z * se)), "percent_agreement": p_o,
            "chance_agreement": p_e}
