"""Williams' test for two dependent correlations that share one variable.

A human criterion ``h`` and two measures ``a`` and ``b`` are scored on the same ``n`` items, so
``corr(h, a)`` and ``corr(h, b)`` are not independent: the test accounts for ``corr(a, b)``.
This is the test the HANNA paper (Chhun et al., 2024) uses, following Graham and Baldwin (2014),
to ask whether one evaluation measure correlates better with human judgment than another.

Everything is vectorised: ``r12``, ``r13``, ``r23`` and ``n`` broadcast against each other, so a
whole grid of comparisons (criteria x measures x levels) is one call.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError, UndefinedStatisticWarning

__all__ = ["WILLIAMS_NOTE", "WilliamsResult", "williams_test"]

WILLIAMS_NOTE = (
    "Williams' test is derived for Pearson correlations of jointly normal variables; "
    "applied to Kendall or Spearman correlations it is an approximation."
)

# Reasons for a NaN result, in the order in which they are checked (the first that applies wins).
REASON_NAN_INPUT = "NaN input"
REASON_SMALL_N = "n <= 3"
REASON_R_OUT_OF_RANGE = "|r| > 1"
REASON_NEGATIVE_K = "negative variance term (K < 0)"
REASON_ZERO_VARIANCE = "zero variance (denominator is 0)"

# Rounding slack: |r| up to 1 + _R_TOL is read as +-1 (e.g. a Pearson r of 1.0000000000000002),
# and K in [-_K_TOL, 0) is read as 0 (a singular correlation matrix computed in floating point).
_R_TOL = 1e-12
_K_TOL = 1e-12

_ALTERNATIVES = ("greater", "less", "two-sided")
_SIGN_CONVENTIONS = ("paper", "raw")
_DIRECTIONS = ("larger", "fixed")


@dataclass(frozen=True)
class WilliamsResult:
    """Result of [`williams_test`][]; unpacks as ``statistic, pvalue``.

    Every array attribute has the broadcast shape of the inputs (plain Python/NumPy scalars for
    scalar inputs).

    Attributes
    ----------
    statistic : float or ndarray
        Williams' t (NaN where undefined, see ``reason``). Also available as ``t``.
    pvalue : float or ndarray
        p-value for ``alternative`` from Student's t with ``df`` degrees of freedom.
    df : float or ndarray
        Degrees of freedom, ``n - 3`` (NaN where ``n <= 3`` or ``n`` is NaN).
    r12, r13, r23 : float or ndarray
        The correlations as they entered the formula, after the sign convention and, with
        ``direction="larger"``, after swapping: ``r12`` is always the measure tested as the better
        one (the hypothesis tested is ``r12 > r13`` for ``alternative="greater"``).
    n : float or ndarray
        Number of items correlated.
    K : float or ndarray
        Determinant of the 3 x 3 correlation matrix,
        ``1 - r12**2 - r13**2 - r23**2 + 2 r12 r13 r23`` (before clamping tiny negatives to 0).
    swapped : bool or ndarray
        True where ``a`` and ``b`` were exchanged (``direction="larger"`` and b's correlation was
        the larger): the test then asks whether **b** correlates better than a.
    hypothesis : str or ndarray
        The alternative hypothesis of each test in words of the caller's ``a`` and ``b``, e.g.
        ``"|r(h,a)| > |r(h,b)|"`` or ``"|r(h,b)| > |r(h,a)|"`` when swapped.
    reason : str or ndarray
        ``""`` where the test is defined, otherwise why it is NaN (``"n <= 3"``,
        ``"negative variance term (K < 0)"``, ``"|r| > 1"``, ``"NaN input"``,
        ``"zero variance (denominator is 0)"``).
    alternative, sign_convention, direction : str
        The options used.
    note : str
        The caveat that the test is derived for Pearson correlations (`WILLIAMS_NOTE`).
    """

    statistic: Any
    pvalue: Any
    df: Any
    r12: Any
    r13: Any
    r23: Any
    n: Any
    K: Any
    swapped: Any
    hypothesis: Any
    reason: Any
    alternative: str
    sign_convention: str
    direction: str
    note: str = field(default=WILLIAMS_NOTE)

    # scipy-like: ``t, p = williams_test(...)``
    def __iter__(self):
        return iter((self.statistic, self.pvalue))

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int):
        return (self.statistic, self.pvalue)[index]

    @property
    def t(self):
        """Alias of `statistic`."""
        return self.statistic

    def to_frame(self) -> pd.DataFrame:
        """One row per test (inputs flattened in C order), one column per attribute.

        Columns: ``r12, r13, r23, n, df, K, statistic, pvalue, alternative, hypothesis, swapped,
        sign_convention, direction, reason, note``.
        """
        cols = {
            name: np.ravel(getattr(self, name))
            for name in ("r12", "r13", "r23", "n", "df", "K", "statistic", "pvalue")
        }
        frame = pd.DataFrame(cols)
        frame["alternative"] = self.alternative
        frame["hypothesis"] = np.ravel(self.hypothesis).astype(object)
        frame["swapped"] = np.ravel(self.swapped).astype(bool)
        frame["sign_convention"] = self.sign_convention
        frame["direction"] = self.direction
        frame["reason"] = np.ravel(self.reason).astype(object)
        frame["note"] = self.note
        return frame


def _as_float_array(value: Any, name: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"williams_test: argument {name!r} must be numeric ({exc})") from None
    return arr


def _check_option(value: str, name: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise InputError(
            f"williams_test: {name}={value!r} is not one of {', '.join(map(repr, allowed))}"
        )


def williams_test(
    r12: Any,
    r13: Any,
    r23: Any,
    n: Any,
    *,
    alternative: Literal["greater", "less", "two-sided"] = "greater",
    sign_convention: Literal["paper", "raw"] = "paper",
    direction: Literal["larger", "fixed"] = "larger",
) -> WilliamsResult:
    """Williams' t-test of ``corr(h, a)`` against ``corr(h, b)`` on the same items.

    Parameters
    ----------
    r12 : float or array_like
        Correlation between the human criterion ``h`` and measure ``a``.
    r13 : float or array_like
        Correlation between ``h`` and measure ``b``.
    r23 : float or array_like
        Correlation between ``a`` and ``b`` (same coefficient, same level, same items).
    n : int or array_like of int
        Number of items correlated (e.g. 960 stories overall, 10 systems at system level).
        ``r12, r13, r23, n`` broadcast against each other (NumPy rules).
    alternative : {"greater", "less", "two-sided"}, default "greater"
        ``"greater"``: H1 is ``r12 > r13`` (a correlates better with h than b), one-sided
        ``p = P(T_{n-3} > t)``; ``"less"``: ``p = P(T_{n-3} < t)``; ``"two-sided"``:
        ``p = 2 P(T_{n-3} > |t|)``. With ``direction="larger"`` these refer to the measures
        after swapping (see ``hypothesis`` in the result).
    sign_convention : {"paper", "raw"}, default "paper"
        ``"paper"`` (the HANNA analysis): ``r12`` and ``r13`` enter as absolute values and
        ``r23`` is multiplied by ``sign(r12) sign(r13)``, so that a measure where lower is
        better (e.g. BaryScore) is compared by the strength of its association. This is the
        same as flipping the sign of any measure that correlates negatively with ``h``; a zero
        correlation counts as positive (no flip). ``"raw"``: the correlations are used as given.
    direction : {"larger", "fixed"}, default "larger"
        ``"larger"`` (the HANNA analysis): each test is run in the direction of the larger
        correlation, i.e. ``a`` and ``b`` are swapped where ``r13 > r12`` (after the sign
        convention, so ``|r13| > |r12|`` under ``"paper"``); ``swapped`` and ``hypothesis`` in
        the result say which way each test went. ``"fixed"``: always test ``a`` against ``b``.

    Returns
    -------
    WilliamsResult
        Unpacks as ``(statistic, pvalue)``; also carries ``df``, the correlations as used, ``n``,
        ``K``, ``swapped``, ``hypothesis``, ``reason`` and ``note``, and ``to_frame()``.

    Raises
    ------
    InputError
        If an argument is not numeric, the shapes do not broadcast, ``n`` is not a finite whole number,
        or an option is unknown.

    Warns
    -----
    UndefinedStatisticWarning
        Once per call, with counts per reason, if some tests are undefined. Those get NaN
        ``statistic`` and ``pvalue`` (never 0) and a ``reason``: any NaN input; ``n <= 3`` (no
        degrees of freedom); ``|r| > 1``; ``K < 0`` (the three correlations cannot come from one
        correlation matrix, which happens with Kendall or Spearman coefficients, and the square
        root of the variance term is undefined); a zero denominator.

    Notes
    -----
    With $K = 1 - r_{12}^2 - r_{13}^2 - r_{23}^2 + 2 r_{12} r_{13} r_{23}$ (the determinant of
    the correlation matrix of ``h, a, b``), Williams' (1959) statistic, in the form given by
    Steiger (1980), is

    $$
    t = \\frac{(r_{12} - r_{13}) \\sqrt{(n - 1)(1 + r_{23})}}
              {\\sqrt{2 K \\frac{n - 1}{n - 3} + \\frac{(r_{12} + r_{13})^2}{4} (1 - r_{23})^3}}
    $$

    and follows Student's t with $n - 3$ degrees of freedom under H0: $\\rho_{12} = \\rho_{13}$.
    The test is derived for Pearson correlations of normal variables. The HANNA paper applies
    it to Kendall's tau as an approximation; the result says so in ``note``.

    Floating-point slack: ``|r|`` up to ``1 + 1e-12`` is read as ``+-1`` and ``K`` in
    ``[-1e-12, 0)`` as 0; anything beyond is reported as undefined.

    References
    ----------
    1. Williams, E. J. (1959). The comparison of regression variables. Journal of the Royal
       Statistical Society B, 21(2), 396-399.
    2. Steiger, J. H. (1980). Tests for comparing elements of a correlation matrix.
       Psychological Bulletin, 87(2), 245-251.
    3. Graham, Y. and Baldwin, T. (2014). Testing for significance of increased correlation
       with human judgment. EMNLP 2014, 172-176.
    4. Chhun, C., Suchanek, F. M. and Clavel, C. (2024). Do language models enjoy their own
       stories? Prompting large language models for automatic story evaluation. TACL 12.

    Examples
    --------
    >>> from storyeval.compare.williams import williams_test
    >>> res = williams_test(0.5, 0.3, 0.4, 50)
    >>> t, p = res
    >>> round(float(t), 4), round(float(p), 4)
    (1.4378, 0.0786)
    >>> res = williams_test([0.25, -0.30], [0.18, 0.20], [0.5, -0.4], [960, 10])
    >>> res.swapped.tolist(), res.hypothesis[1]
    ([False, False], '|r(h,a)| > |r(h,b)|')

    Validated against an independent scalar implementation of the formula, a hand-worked
    case, the documented output of R bruceR's ``cor_diff``, and the HANNA paper's BH-adjusted
    Williams p-values (Beluga-13B vs ChatGPT, Eval-Prompt 1).
    """
    _check_option(alternative, "alternative", _ALTERNATIVES)
    _check_option(sign_convention, "sign_convention", _SIGN_CONVENTIONS)
    _check_option(direction, "direction", _DIRECTIONS)

    a12 = _as_float_array(r12, "r12")
    a13 = _as_float_array(r13, "r13")
    a23 = _as_float_array(r23, "r23")
    nn = _as_float_array(n, "n")
    try:
        a12, a13, a23, nn = np.broadcast_arrays(a12, a13, a23, nn)
    except ValueError:
        shapes = ", ".join(
            f"{name} {np.shape(v)}"
            for name, v in (("r12", a12), ("r13", a13), ("r23", a23), ("n", nn))
        )
        raise InputError(f"williams_test: argument shapes do not broadcast: {shapes}") from None
    shape = a12.shape

    if np.any(np.isinf(nn)):
        bad = np.argwhere(np.isinf(nn))[0]
        raise InputError(
            f"williams_test: n must be finite; got {nn[tuple(bad)]!r} "
            f"at index {tuple(int(i) for i in bad)}"
        )
    finite_n = np.isfinite(nn)
    if np.any(finite_n & (nn != np.round(nn))):
        bad = np.argwhere(finite_n & (nn != np.round(nn)))[0]
        raise InputError(
            f"williams_test: n must be a whole number of items; got {nn[tuple(bad)]!r} "
            f"at index {tuple(int(i) for i in bad)}"
        )

    reason = np.full(shape, "", dtype=object)

    def flag(mask: np.ndarray, text: str) -> None:
        reason[(reason == "") & mask] = text

    nan_in = np.isnan(a12) | np.isnan(a13) | np.isnan(a23) | np.isnan(nn)
    flag(nan_in, REASON_NAN_INPUT)
    with np.errstate(invalid="ignore"):
        flag(nn <= 3, REASON_SMALL_N)
        too_big = (
            (np.abs(a12) > 1 + _R_TOL) | (np.abs(a13) > 1 + _R_TOL) | (np.abs(a23) > 1 + _R_TOL)
        )
    flag(too_big, REASON_R_OUT_OF_RANGE)

    # Within rounding slack of +-1: read as +-1. Beyond: kept as given (and flagged above).
    x12, x13, x23 = (np.where(too_big, v, np.clip(v, -1.0, 1.0)) for v in (a12, a13, a23))

    if sign_convention == "paper":
        s12 = np.where(x12 < 0, -1.0, 1.0)
        s13 = np.where(x13 < 0, -1.0, 1.0)
        x23 = x23 * s12 * s13
        x12 = np.abs(x12)
        x13 = np.abs(x13)

    if direction == "larger":
        swapped = x13 > x12  # False for NaN
        x12, x13 = np.where(swapped, x13, x12), np.where(swapped, x12, x13)
    else:
        swapped = np.zeros(shape, dtype=bool)

    K = 1.0 - x12**2 - x13**2 - x23**2 + 2.0 * x12 * x13 * x23
    with np.errstate(invalid="ignore"):
        flag(K < -_K_TOL, REASON_NEGATIVE_K)
    Kc = np.where((K < 0) & (K >= -_K_TOL), 0.0, K)

    with np.errstate(invalid="ignore", divide="ignore"):
        df = np.where(nn > 3, nn - 3.0, np.nan)
        var = 2.0 * Kc * (nn - 1.0) / df + ((x12 + x13) ** 2 / 4.0) * (1.0 - x23) ** 3
        flag(var <= 0, REASON_ZERO_VARIANCE)
        ok = reason == ""
        num = (x12 - x13) * np.sqrt(np.where(ok, (nn - 1.0) * (1.0 + x23), np.nan))
        t = np.where(ok, num / np.sqrt(np.where(ok, var, np.nan)), np.nan)
        dfp = np.where(ok, df, np.nan)
        from scipy import special  # stats.t.sf(x, df) is special.stdtr(df, -x); when used

        if alternative == "greater":
            p = special.stdtr(dfp, -t)
        elif alternative == "less":
            p = special.stdtr(dfp, t)
        else:
            p = np.minimum(2.0 * special.stdtr(dfp, -np.abs(t)), 1.0)
    p = np.where(ok, p, np.nan)

    undefined = ~ok
    if np.any(undefined):
        counts = Counter(reason[undefined].tolist())
        detail = ", ".join(f"{c} {r}" for r, c in counts.items())
        warnings.warn(
            f"Williams test undefined for {int(undefined.sum())} of {undefined.size} "
            f"comparison(s) ({detail}); returned NaN, see result.reason",
            UndefinedStatisticWarning,
            stacklevel=2,
        )

    prefix = "|r(h,{})|" if sign_convention == "paper" else "r(h,{})"
    op = {"greater": " > ", "less": " < ", "two-sided": " != "}[alternative]
    labels = np.array(
        [
            prefix.format("a") + op + prefix.format("b"),
            prefix.format("b") + op + prefix.format("a"),
        ],
        dtype=object,
    )
    hypothesis = labels[np.asarray(swapped, dtype=np.intp)]

    def out(arr: Any) -> Any:
        arr = np.asarray(arr)
        return arr[()] if arr.ndim == 0 else arr

    return WilliamsResult(
        statistic=out(np.asarray(t, dtype=float)),
        pvalue=out(np.asarray(p, dtype=float)),
        df=out(np.asarray(df, dtype=float)),
        r12=out(x12),
        r13=out(x13),
        r23=out(x23),
        n=out(nn.copy()),
        K=out(K),
        swapped=out(np.asarray(swapped, dtype=bool)),
        hypothesis=out(hypothesis),
        reason=out(reason),
        alternative=alternative,
        sign_convention=sign_convention,
        direction=direction,
    )
