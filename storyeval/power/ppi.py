"""Prediction-powered inference (PPI, PPI++): a human mean from few human labels and a judge.

A judge (an LLM rater, a metric, a reward model) scores every item; humans label a random
subset. The prediction-powered estimate of the human mean is the judge's mean on the unlabelled
items plus a *rectifier*, the mean human-minus-judge gap on the labelled ones, which removes the
judge's bias. PPI++ scales the judge by a power-tuning factor ``lambda`` in [0, 1] chosen from the
data to minimise the variance, so that it never does (asymptotically) worse than the human-only
mean (``lambda = 0``). Three estimands share one kernel: a system's mean human score
(`ppi_mean`, and `ppi_mean_many` for many studies at once), a difference between two systems
(`ppi_mean_difference`, `ppi_mean_difference_many`) and a win rate, the mean of binary preferences (`ppi_win_rate`).

The default is PPI++ with a *cross-fitted* lambda (each labelled item's lambda estimated on the
other folds of labelled items, ``folds=5``) and a Student t interval (``interval="t"``):
with about 50 human labels, ppi-python's interval (lambda tuned on the same labels, normal
quantile; ``folds=1, interval="z"`` here) covers 0.93 instead of 0.95 on HANNA-like
simulations (benchmarks/bench_ppi.py, docs/planning.md).

The effective number of human labels (``n_eff = n * var_human_only / var_ppi``) says how many
human labels, used alone, would give the same standard error.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError, StoryevalWarning, user_stacklevel
from storyeval.power._ppi_kernel import METHODS, estimate_rows, std_rows, tuned_lambda_rows

__all__ = [
    "PPIResult",
    "ppi_mean",
    "ppi_mean_difference",
    "ppi_mean_difference_many",
    "ppi_mean_many",
    "ppi_win_rate",
]


@dataclass(frozen=True)
class PPIResult:
    """A prediction-powered estimate with its interval and the human-only one.

    Attributes
    ----------
    estimand : str
        ``"mean"``, ``"difference"`` (A - B) or ``"win rate"``.
    method : str
        ``"ppi++"`` (lambda tuned), ``"ppi"`` (lambda = 1) or ``"classical"`` (lambda = 0).
    estimate, se, low, high : float
        Point estimate, standard error and the two-sided interval at `confidence_level`.
    lam : float
        The lambda used; with cross-fitting the mean of the labelled items' lambdas (for a
        difference of independent systems, NaN: one per system).
    n_labelled, n_unlabelled : int
        Human-labelled items and judge-only items.
    human_estimate, human_se : float
        The human-only (classical) mean of the labelled items and its standard error.
    n_eff : float
        ``n_labelled * human_se**2 / se**2``: human labels the human-only estimate would need
        to reach `se`.
    width_ratio : float
        ``se / human_se``: the PPI interval's width relative to the human-only one.
    confidence_level : float
    interval : str
        ``"z"`` (normal quantile, variances with divisors n and N: ppi-python's interval) or
        ``"t"`` (Student t quantile with `df` degrees of freedom, divisors n - 1 and N - 1).
    folds : int
        Folds over which PPI++'s lambda was cross-fitted; 1: lambda estimated on all labelled
        items (ppi-python's), or not tuned (PPI, classical).
    seed : int
        Seed of the split into folds (used only when ``folds > 1``).
    df : float
        Degrees of freedom of the t interval (n - 1; Welch-Satterthwaite for a difference of
        independent systems); NaN for ``"z"``.
    """

    estimand: str
    method: str
    estimate: float
    se: float
    low: float
    high: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    human_estimate: float
    human_se: float
    n_eff: float
    width_ratio: float
    confidence_level: float
    interval: str = "z"
    folds: int = 1
    seed: int = 0
    df: float = math.nan

    def __iter__(self):  # unpacks like (estimate, (low, high))
        return iter((self.estimate, (self.low, self.high)))

    def confidence_interval(self, confidence_level: float | None = None) -> tuple[float, float]:
        """The two-sided interval ``estimate -/+ q * se`` at another level (same reference
        distribution, z or t with `df`)."""
        level = self.confidence_level if confidence_level is None else confidence_level
        _check_level(level)
        q = _quantile(level, self.interval, self.df)
        return self.estimate - q * self.se, self.estimate + q * self.se

    def human_interval(self, confidence_level: float | None = None) -> tuple[float, float]:
        """The human-only interval ``human_estimate -/+ q * human_se`` (the same quantile q as
        `confidence_interval`)."""
        level = self.confidence_level if confidence_level is None else confidence_level
        _check_level(level)
        q = _quantile(level, self.interval, self.df)
        return self.human_estimate - q * self.human_se, self.human_estimate + q * self.human_se

    def to_frame(self) -> pd.DataFrame:
        """One row, one estimand."""
        return pd.DataFrame([asdict(self)])


_COLUMNS = [f.name for f in fields(PPIResult)]


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {level}")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_options(method: str, interval: str, folds: int, level: float, seed: int) -> None:
    _check_level(level)
    if not _is_int(seed):
        raise InputError(f"seed must be an integer, got {seed!r}")
    if method not in METHODS:
        raise InputError(f"method must be one of {list(METHODS)}, got {method!r}")
    if interval not in ("z", "t"):
        raise InputError(f"interval must be 'z' or 't', got {interval!r}")
    if not _is_int(folds) or folds < 1:
        raise InputError(f"folds must be an integer >= 1, got {folds!r}")


def _quantile(level: float, interval: str, df: float):
    if interval == "z":
        return stats.norm.ppf(0.5 + level / 2)
    return stats.t.ppf(0.5 + level / 2, df)


def _split(human, predicted, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Y, Yhat on labelled, Yhat on unlabelled) from aligned arrays; NaN human = unlabelled."""
    y = np.asarray(human, dtype=float).ravel()
    f = np.asarray(predicted, dtype=float).ravel()
    if y.shape != f.shape:
        raise InputError(f"{name}: human and predicted have different lengths "
                         f"({y.size} and {f.size}); give one entry per item (NaN human = "
                         "not labelled)")
    bad = np.flatnonzero(~np.isfinite(f))
    if bad.size:
        raise InputError(f"{name}: predicted value missing or not finite at item {bad[0]}; "
                         "the judge must score every item")
    if np.isinf(y).any():
        raise InputError(f"{name}: infinite human value at item {np.flatnonzero(np.isinf(y))[0]}")
    labelled = ~np.isnan(y)
    n, big_n = int(labelled.sum()), int((~labelled).sum())
    if n < 2 or big_n < 2:
        raise InputError(f"{name}: PPI needs at least 2 human-labelled and 2 unlabelled items, "
                         f"got {n} and {big_n}")
    return y[labelled], f[labelled], f[~labelled]


def tuned_lambda(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray) -> float:
    """PPI++'s variance-minimising lambda for a mean, clipped to [0, 1].

    Notes
    -----
    ``lambda = cov(Y, f) / ((1 + n/N) var(f))`` with the covariance over the ``n`` labelled
    items (divisor n) and the variance over all ``n + N`` predictions (divisor n + N - 1),
    the plug-in of the minimiser of ``Var(lambda)`` below (Angelopoulos, Duchi & Zrnic 2023,
    Example 6.1); ppi-python's ``_calc_lam_glm`` with ``clip=True``.
    """
    rows = [np.asarray(a, dtype=float)[None, :] for a in (y, f_lab, f_unl)]
    return float(tuned_lambda_rows(*rows)[0])


def _scale(*arrays: np.ndarray) -> np.ndarray:
    """Per row, a power of two s such that every value / s is at most 2^480 in magnitude (1 for
    ordinary values): squares and sums of squares of the scaled values cannot overflow, and
    dividing by a power of two is exact, so results are unchanged."""
    top = np.max([np.max(np.abs(a), axis=1) for a in arrays], axis=0)
    exponent = np.frexp(top)[1]
    return np.ldexp(1.0, np.maximum(exponent - 480, 0))


def _check_finite(name: str, **values: np.ndarray) -> None:
    for what, value in values.items():
        if not np.all(np.isfinite(value)):
            raise InputError(f"{name}: the {what} overflows (the values are too large in "
                             "magnitude, up to about 1e308); rescale the scores")


#: A binary human label needs at least this many labelled events and non-events for the
#: default interval's coverage (measured: 0.898-0.938 with 3-7 labelled events of a 5-7%
#: outcome, 0.932-0.941 with 10-14; benchmarks/bench_ppi.py --rare, docs/planning.md).
RARE_EVENTS_BELOW = 15


def rare_binary_studies(y: np.ndarray) -> np.ndarray:
    """Per study (row of the labelled human values ``y``, (R, n)), whether the labels are
    0/1 with fewer than `RARE_EVENTS_BELOW` of the rarer value."""
    binary = np.isin(y, (0.0, 1.0)).all(axis=1)
    ones = (y == 1.0).sum(axis=1)
    return binary & (np.minimum(ones, y.shape[1] - ones) < RARE_EVENTS_BELOW)


def _warn_rare_binary(y: np.ndarray) -> None:
    rare = rare_binary_studies(y)
    if rare.any():
        ones = (y[rare] == 1.0).sum(axis=1)
        fewest = int(np.minimum(ones, y.shape[1] - ones).min())
        what = "a study" if len(y) == 1 else f"{int(rare.sum())} of {len(y)} studies"
        warnings.warn(
            f"binary human labels with {fewest} labelled events (or non-events) in {what}, "
            f"fewer than {RARE_EVENTS_BELOW}: the interval undercovers a rare outcome (the "
            "default covered 0.898-0.938 with 3-7 labelled events of a 5-7% outcome; "
            "docs/planning.md); label more items", StoryevalWarning,
            stacklevel=user_stacklevel())


def _frame(estimand: str, method: str, y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray,
           *, folds: int, seed: int, level: float, interval: str) -> pd.DataFrame:
    """Rows of PPIResult columns for dense studies ``y``, ``f_lab`` (R, n), ``f_unl`` (R, N).
    Computed on values divided by a power of two (`_scale`), so that huge finite values do not
    overflow when squared; an estimate or standard error beyond the float range is an error."""
    _warn_rare_binary(y)
    ddof = 0 if interval == "z" else 1
    n, big_n = y.shape[1], f_unl.shape[1]
    s = _scale(y, f_lab, f_unl)[:, None]
    estimate, se, lam, used = estimate_rows(y / s, f_lab / s, f_unl / s, method=method,
                                            folds=folds, seed=seed, ddof=ddof)
    sy = _scale(y)[:, None]  # the humans' own scale: their interval stays exact
    human = (y / sy).mean(axis=1) * sy[:, 0]
    human_se = std_rows(y, ddof) / math.sqrt(n)
    with np.errstate(over="ignore"):
        estimate, se = estimate * s[:, 0], se * s[:, 0]
    _check_finite(estimand, estimate=estimate, **{"standard error": se})
    df = math.nan if interval == "z" else n - 1.0
    q = _quantile(level, interval, df)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(human_se > 0, se / human_se, np.nan)
        n_eff = np.where(se > 0, n * (human_se / se) ** 2, np.nan)
    return pd.DataFrame({
        "estimand": estimand, "method": method, "estimate": estimate, "se": se,
        "low": estimate - q * se, "high": estimate + q * se, "lam": lam, "n_labelled": n,
        "n_unlabelled": big_n, "human_estimate": human, "human_se": human_se,
        "n_eff": n_eff, "width_ratio": ratio, "confidence_level": level, "interval": interval,
        "folds": used, "seed": seed, "df": df}, columns=_COLUMNS)


def _paired_difference(dh: np.ndarray, df: np.ndarray, options: dict[str, Any]) -> PPIResult:
    """`ppi_mean` of the paired differences A - B, antisymmetric in A and B (see
    `_antisymmetric`)."""
    forward = ppi_mean(dh, df, **options).to_frame()
    backward = ppi_mean(-dh, -df, **options).to_frame() if _crossfitted(forward).any() else None
    return _to_result(_antisymmetric(forward, backward))


def _crossfitted(frame: pd.DataFrame) -> np.ndarray:
    return ((frame["folds"] > 1) & (frame["method"] == "ppi++")).to_numpy()


def _antisymmetric(forward: pd.DataFrame, backward: pd.DataFrame | None) -> pd.DataFrame:
    """Rows of a paired difference that swapping A and B negates exactly.

    Cross-fitting deals the labelled items to folds in the order of their sorted values, and
    negating the differences (B - A) reverses that order: the folds, hence the lambdas, would
    differ. Where a row is cross-fitted, its estimate is therefore the mean of the cross-fits
    of A - B (`forward`) and of -(B - A) (`backward`, computed on the negated differences),
    and its standard error the mean of theirs (not below the standard error of the mean of
    the two estimates); other rows (one fold: ppi-python's PPI++) are `forward` as is.
    """
    out = forward.assign(estimand="difference")
    if backward is None:
        return out
    rows = _crossfitted(forward)
    est = 0.5 * (forward["estimate"].to_numpy() - backward["estimate"].to_numpy())
    se = 0.5 * (forward["se"].to_numpy() + backward["se"].to_numpy())
    q = np.array([_quantile(level, interval, dof) for level, interval, dof in
                  zip(forward["confidence_level"], forward["interval"], forward["df"])])
    human_se = forward["human_se"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(human_se > 0, se / human_se, np.nan)
        n_eff = np.where(se > 0, forward["n_labelled"].to_numpy() * (human_se / se) ** 2, np.nan)
    lam = 0.5 * (forward["lam"].to_numpy() + backward["lam"].to_numpy())
    for column, values in (("estimate", est), ("se", se), ("low", est - q * se),
                           ("high", est + q * se), ("lam", lam), ("n_eff", n_eff),
                           ("width_ratio", ratio)):
        out[column] = np.where(rows, values, out[column].to_numpy())
    return out


def _to_result(frame: pd.DataFrame) -> PPIResult:
    row = frame.iloc[0]
    values = {name: (row[name].item() if hasattr(row[name], "item") else row[name])
              for name in _COLUMNS}
    return PPIResult(**values)


def ppi_mean(human, predicted, *, method: str = "ppi++", folds: int = 5, seed: int = 0,
             confidence_level: float = 0.95, interval: str = "t") -> PPIResult:
    """Prediction-powered estimate of the mean human score, with its interval.

    Parameters
    ----------
    human : array-like, shape (N_total,)
        The human score of each item, NaN where no human labelled it (the labelled items must
        be a uniformly random subset).
    predicted : array-like, shape (N_total,)
        The judge's score of every item (no missing value).
    method : {"ppi++", "ppi", "classical"}, default "ppi++"
        ``ppi++``: lambda tuned from the data; ``ppi``: lambda = 1 (the original PPI);
        ``classical``: lambda = 0 (human labels only).
    folds : int, default 5
        PPI++ only: cross-fit lambda over this many folds of the labelled items (at most one
        fold per item); 1 estimates lambda on all labelled items (ppi-python's PPI++).
    seed : int, default 0
        Seed of the split into folds.
    confidence_level : float, default 0.95
    interval : {"t", "z"}, default "t"
        ``"t"``: Student t with n - 1 degrees of freedom and unbiased (n - 1, N - 1)
        variances. ``"z"``: the normal interval of PPI / PPI++ (as ppi-python).

    Returns
    -------
    PPIResult

    Notes
    -----
    With labelled ``(Y_i, f_i)``, i = 1..n, unlabelled predictions ``f~_j``, j = 1..N, and
    ``lambda_i`` the lambda applied to item i,

    ``theta = lambda mean(f~) + mean_i(Y_i - lambda_i f_i)``, ``lambda = mean_i lambda_i``,
    ``se^2 = lambda^2 var(f~) / N + var_i(Y_i - lambda_i f_i) / n``,

    and the interval ``theta -/+ q se`` (q: the normal or t quantile). Without cross-fitting
    every ``lambda_i`` is the same (`tuned_lambda`, or 1, or 0) and this is PPI / PPI++.
    Cross-fitting sorts the labelled items by (Y, f), deals them to ``folds`` folds by a seeded
    permutation and sets ``lambda_i`` to `tuned_lambda` on the other folds' labelled items and
    the unlabelled predictions: no item's rectifier is scaled by a lambda fitted to its own
    label, which removes the optimism of PPI++'s interval with few labels. The human-only
    estimate is ``mean(Y)`` with ``se^2 = var(Y) / n``. Unbiased for any judge when the
    labelled subset is random; the rectifier corrects the judge's bias.

    A binary human label (0/1) with fewer than `RARE_EVENTS_BELOW` (15) labelled events or
    non-events warns (`StoryevalWarning`): on a 5-7% outcome with 53-200 labels (3-14 events)
    the default covered 0.898-0.941 and the human-only t (Wald) interval 0.868-0.940
    (benchmarks/bench_ppi.py --rare; docs/planning.md).

    References
    ----------
    1. Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), Prediction-powered inference,
       Science 382.
    2. Angelopoulos, Duchi & Zrnic (2023), PPI++: Efficient prediction-powered inference,
       arXiv:2311.01453.

    Validated against ``ppi_py.ppi_mean_pointestimate`` and ``ppi_py.ppi_mean_ci`` (ppi-python
    0.2.3; lam=None, 1 and 0, with ``folds=1, interval="z"``) to 1e-9; the cross-fitted and t
    variants against hand computations, and all by simulated coverage on HANNA
    (benchmarks/bench_ppi.py).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> h = rng.normal(3, 1, 1000); f = h + rng.normal(0.5, 0.5, 1000)
    >>> h[100:] = np.nan
    >>> r = ppi_mean(h, f)
    >>> bool(r.n_eff > r.n_labelled), r.folds, r.interval
    (True, 5, 't')
    """
    _check_options(method, interval, folds, confidence_level, seed)
    y, f_lab, f_unl = _split(human, predicted, "ppi_mean")
    return _to_result(_frame("mean", method, y[None, :], f_lab[None, :], f_unl[None, :],
                             folds=int(folds), seed=int(seed), level=confidence_level,
                             interval=interval))


def ppi_mean_many(human, predicted, *, method: str = "ppi++", folds: int = 5, seed: int = 0,
                  confidence_level: float = 0.95, interval: str = "t") -> pd.DataFrame:
    """`ppi_mean` of many studies at once (vectorised): one row of results per study.

    Parameters
    ----------
    human, predicted : array-like, shape (R, N_total)
        Row r is study r, as `ppi_mean`'s arguments (NaN human = not labelled); studies may
        label different numbers of items.
    method, folds, seed, confidence_level, interval
        As in `ppi_mean` (every study's folds drawn with the same `seed`, as R separate
        `ppi_mean` calls).

    Returns
    -------
    pandas.DataFrame
        R rows, the columns of `PPIResult`, row r equal to ``ppi_mean(human[r],
        predicted[r], ...)``.

    Notes
    -----
    Studies with the same number of labelled items are computed together as dense arrays,
    the labelled items kept in their order; no Python loop over studies.

    Examples
    --------
    >>> nan = float("nan")
    >>> h = [[1, 2, 3, nan, nan], [2, nan, nan, 1, nan]]
    >>> ppi_mean_many(h, [[1, 2, 2, 3, 1], [2, 1, 2, 1, 3]]).n_labelled.tolist()
    [3, 2]
    """
    _check_options(method, interval, folds, confidence_level, seed)
    h = np.asarray(human, dtype=float)
    f = np.asarray(predicted, dtype=float)
    if h.ndim != 2 or h.shape != f.shape:
        raise InputError(f"ppi_mean_many: human and predicted must be 2-D arrays of the same "
                         f"shape (studies x items), got {h.shape} and {f.shape}")
    for what, bad in (("predicted value missing or not finite", ~np.isfinite(f)),
                      ("infinite human value", np.isinf(h))):
        if bad.any():
            r, i = np.argwhere(bad)[0]
            raise InputError(f"ppi_mean_many: {what} in study {r} at item {i}")
    labelled = ~np.isnan(h)
    counts = labelled.sum(axis=1)
    few = np.flatnonzero((counts < 2) | (h.shape[1] - counts < 2))
    if few.size:
        raise InputError(f"ppi_mean_many: study {few[0]} has {counts[few[0]]} human-labelled "
                         f"and {h.shape[1] - counts[few[0]]} unlabelled items; PPI needs at "
                         "least 2 of each")
    parts = []
    for n in np.unique(counts):
        rows = np.flatnonzero(counts == n)
        order = np.argsort(~labelled[rows], axis=1, kind="stable")
        hs, fs = np.take_along_axis(h[rows], order, 1), np.take_along_axis(f[rows], order, 1)
        part = _frame("mean", method, hs[:, :n], fs[:, :n], fs[:, n:], folds=int(folds),
                      seed=int(seed), level=confidence_level, interval=interval)
        parts.append(part.set_axis(rows))
    return pd.concat(parts).sort_index()


def ppi_win_rate(human, predicted, *, method: str = "ppi++", folds: int = 5, seed: int = 0,
                 confidence_level: float = 0.95, interval: str = "t") -> PPIResult:
    """Prediction-powered win rate: the mean of human preferences for system A over B.

    Parameters
    ----------
    human : array-like, shape (N_total,)
        Per pair: 1 if the human preferred A, 0 if B, 0.5 for a tie, NaN if not labelled.
    predicted : array-like, shape (N_total,)
        The judge's verdict (1 / 0 / 0.5) or its probability that A wins, on every pair.
    method, folds, seed, confidence_level, interval
        As in `ppi_mean`.

    Returns
    -------
    PPIResult
        ``estimand="win rate"``; the estimand counts a tie as half a win.

    Notes
    -----
    A win rate is a mean of values in [0, 1]: `ppi_mean` applies unchanged.

    Validated against ``ppi_py.ppi_mean_ci`` on binary labels to 1e-9 (``folds=1,
    interval="z"``).

    Examples
    --------
    >>> ppi_win_rate([1, 0, 0.5, float("nan"), float("nan")], [1, 0, 0, 1, 1]).n_labelled
    3
    """
    for name, values in (("human", human), ("predicted", predicted)):
        arr = np.asarray(values, dtype=float)
        outside = np.flatnonzero((arr < 0) | (arr > 1))
        if outside.size:
            raise InputError(f"ppi_win_rate: {name} value {arr[outside[0]]} at item "
                             f"{outside[0]} is outside [0, 1] (1 = A wins, 0 = B, 0.5 = tie)")
    result = ppi_mean(human, predicted, method=method, folds=folds, seed=seed,
                      confidence_level=confidence_level, interval=interval)
    return PPIResult(**{**asdict(result), "estimand": "win rate"})


def _difference_frame(a: pd.DataFrame, b: pd.DataFrame, level: float,
                      interval: str) -> pd.DataFrame:
    """Rows A - B of two frames of independent `ppi_mean_many` results (same index)."""
    se = np.hypot(a.se, b.se)
    human_se = np.hypot(a.human_se, b.human_se)
    n = a.n_labelled + b.n_labelled
    if interval == "z":
        df = pd.Series(np.nan, index=a.index)
    else:  # Welch-Satterthwaite, n_a + n_b - 2 when both standard errors are 0; on the
        # standard errors divided by the larger one (no overflow of se^4)
        top = np.maximum(a.se, b.se)
        top = np.where(top > 0, top, 1.0)
        ra, rb = a.se / top, b.se / top
        den = ra**4 / (a.n_labelled - 1) + rb**4 / (b.n_labelled - 1)
        df = pd.Series(np.where(den > 0, (ra**2 + rb**2) ** 2 / np.where(den > 0, den, 1.0),
                                n - 2.0), index=a.index)
    q = _quantile(level, interval, df.to_numpy())
    estimate = a.estimate - b.estimate
    _check_finite("difference", estimate=estimate.to_numpy(), **{"standard error": se})
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        n_eff = np.where(se > 0, n * (human_se / se) ** 2, np.nan)
        ratio = np.where(human_se > 0, se / human_se, np.nan)
    return pd.DataFrame({
        "estimand": "difference", "method": a.method, "estimate": estimate, "se": se,
        "low": estimate - q * se, "high": estimate + q * se, "lam": np.nan, "n_labelled": n,
        "n_unlabelled": a.n_unlabelled + b.n_unlabelled,
        "human_estimate": a.human_estimate - b.human_estimate, "human_se": human_se,
        "n_eff": n_eff, "width_ratio": ratio, "confidence_level": level, "interval": interval,
        "folds": np.maximum(a.folds, b.folds), "seed": a.seed, "df": df}, columns=_COLUMNS)


def ppi_mean_difference_many(human_a, predicted_a, human_b, predicted_b, *,
                             paired: bool = False, method: str = "ppi++", folds: int = 5,
                             seed: int = 0, confidence_level: float = 0.95,
                             interval: str = "t") -> pd.DataFrame:
    """`ppi_mean_difference` of many studies at once (vectorised): one row per study.

    Parameters
    ----------
    human_a, predicted_a, human_b, predicted_b : array-like, shape (R, N_a) and (R, N_b)
        Row r is study r, as `ppi_mean_difference`'s arguments (``N_a == N_b`` and the same
        NaN pattern when paired).
    paired, method, folds, seed, confidence_level, interval
        As in `ppi_mean_difference`.

    Returns
    -------
    pandas.DataFrame
        R rows, the columns of `PPIResult`, row r equal to ``ppi_mean_difference(human_a[r],
        predicted_a[r], human_b[r], predicted_b[r], ...)``.

    Examples
    --------
    >>> nan = float("nan")
    >>> r = ppi_mean_difference_many([[3, 4, 5, nan, nan]], [[3, 4, 4, 5, 2]],
    ...                              [[2, 3, 3, nan, nan]], [[2, 2, 3, 4, 1]], paired=True)
    >>> r.estimand.tolist()
    ['difference']
    """
    options: dict[str, Any] = {"method": method, "folds": folds, "seed": seed,
                               "confidence_level": confidence_level, "interval": interval}
    _check_options(method, interval, folds, confidence_level, seed)
    ha, hb = np.asarray(human_a, dtype=float), np.asarray(human_b, dtype=float)
    fa, fb = np.asarray(predicted_a, dtype=float), np.asarray(predicted_b, dtype=float)
    if paired:
        if ha.shape != hb.shape or not np.array_equal(np.isnan(ha), np.isnan(hb)):
            raise InputError("ppi_mean_difference_many(paired=True): the two systems must have "
                             "the same items and the same human-labelled ones (same NaN "
                             "pattern)")
        if fa.shape != fb.shape:
            raise InputError("ppi_mean_difference_many(paired=True): predicted_a and "
                             f"predicted_b have different shapes ({fa.shape} and {fb.shape})")
        dh, df = ha - hb, fa - fb
        forward = ppi_mean_many(dh, df, **options)
        backward = ppi_mean_many(-dh, -df, **options) if _crossfitted(forward).any() else None
        return _antisymmetric(forward, backward)
    if ha.shape[:1] != hb.shape[:1]:
        raise InputError(f"ppi_mean_difference_many: system A has {ha.shape[0]} studies and "
                         f"system B {hb.shape[0]}")
    return _difference_frame(ppi_mean_many(ha, fa, **options), ppi_mean_many(hb, fb, **options),
                             confidence_level, interval)


def ppi_mean_difference(human_a, predicted_a, human_b, predicted_b, *, paired: bool = False,
                        method: str = "ppi++", folds: int = 5, seed: int = 0,
                        confidence_level: float = 0.95, interval: str = "t") -> PPIResult:
    """Prediction-powered difference between two systems' mean human scores (A - B).

    Parameters
    ----------
    human_a, predicted_a, human_b, predicted_b : array-like
        Per system, as in `ppi_mean`.
    paired : bool, default False
        False: the systems' items are independent samples (each its own estimate and lambda;
        the variances add). True: item i of A and item i of B answer the same prompt and were
        labelled together (same NaN pattern); the estimate is `ppi_mean` of the per-prompt
        differences, which keeps the prompt-level correlation (cross-fitted in both
        directions and averaged, so that swapping A and B negates it exactly).
    method, folds, seed, confidence_level, interval
        As in `ppi_mean` (``"t"`` for independent systems: Welch-Satterthwaite degrees of
        freedom from the two standard errors and label counts).

    Returns
    -------
    PPIResult
        ``estimand="difference"``; ``lam`` is NaN for independent systems (one lambda each).

    Notes
    -----
    Independent: ``theta = theta_A - theta_B``, ``se^2 = se_A^2 + se_B^2``,
    ``df = se^4 / (se_A^4 / (n_A - 1) + se_B^4 / (n_B - 1))``; the human-only reference
    likewise. Paired: ``Y_i = h_Ai - h_Bi``, ``f_i = f_Ai - f_Bi``.

    Validated against ``ppi_py.ppi_mean_ci`` (each system, or the differences; ``folds=1,
    interval="z"``) to 1e-9.

    Examples
    --------
    >>> nan = float("nan")
    >>> r = ppi_mean_difference([3, 4, 5, nan, nan], [3, 4, 4, 5, 2],
    ...                         [2, 3, 3, nan, nan], [2, 2, 3, 4, 1], paired=True)
    >>> r.estimand
    'difference'
    """
    options: dict[str, Any] = {"method": method, "folds": folds, "seed": seed,
                               "confidence_level": confidence_level, "interval": interval}
    _check_options(method, interval, folds, confidence_level, seed)
    if paired:
        ha, hb = np.asarray(human_a, dtype=float), np.asarray(human_b, dtype=float)
        if ha.shape != hb.shape or not np.array_equal(np.isnan(ha), np.isnan(hb)):
            raise InputError("ppi_mean_difference(paired=True): the two systems must have the "
                             "same items and the same human-labelled ones (same NaN pattern)")
        fa, fb = np.asarray(predicted_a, dtype=float), np.asarray(predicted_b, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            dh, df = ha - hb, fa - fb
        for what, d, x1, x2 in (("human", dh, ha, hb), ("predicted", df, fa, fb)):
            over = np.flatnonzero(np.isinf(d) & np.isfinite(x1) & np.isfinite(x2))
            if over.size:
                raise InputError(f"ppi_mean_difference(paired=True): the difference of the "
                                 f"{what} values A - B overflows at item {over[0]} "
                                 f"({x1[over[0]]:g} - {x2[over[0]]:g}); rescale the scores")
        return _paired_difference(dh, df, options)
    a = ppi_mean(human_a, predicted_a, **options)
    b = ppi_mean(human_b, predicted_b, **options)
    return _to_result(_difference_frame(a.to_frame(), b.to_frame(), confidence_level, interval))
