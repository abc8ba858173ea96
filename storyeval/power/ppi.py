"""Prediction-powered inference (PPI, PPI++): a human mean from few human labels and a judge.

A judge (an LLM rater, a metric, a reward model) scores every item; humans label a random
subset. The prediction-powered estimate of the human mean is the judge's mean on the unlabelled
items plus a *rectifier*, the mean human-minus-judge gap on the labelled ones, which removes the
judge's bias. PPI++ scales the judge by a power-tuning factor ``lambda`` in [0, 1] chosen from the
data to minimise the variance, so that it never does (asymptotically) worse than the human-only
mean (``lambda = 0``). Three estimands share one kernel: a system's mean human score
(`ppi_mean`), a difference between two systems (`ppi_mean_difference`) and a win rate, the mean
of binary preferences (`ppi_win_rate`).

The effective number of human labels (``n_eff = n * var_human_only / var_ppi``) says how many
human labels, used alone, would give the same standard error.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError

__all__ = [
    "PPIResult",
    "ppi_mean",
    "ppi_mean_difference",
    "ppi_win_rate",
]

_METHODS = ("ppi++", "ppi", "classical")


@dataclass(frozen=True)
class PPIResult:
    """A prediction-powered estimate with its normal (z) interval and the human-only one.

    Attributes
    ----------
    estimand : str
        ``"mean"``, ``"difference"`` (A - B) or ``"win rate"``.
    method : str
        ``"ppi++"`` (lambda tuned), ``"ppi"`` (lambda = 1) or ``"classical"`` (lambda = 0).
    estimate, se, low, high : float
        Point estimate, standard error and the two-sided interval at `confidence_level`.
    lam : float
        The lambda used (for a difference of independent systems, NaN: one per system, see
        ``lam_a``/``lam_b`` in `to_frame`).
    n_labelled, n_unlabelled : int
        Human-labelled items and judge-only items.
    human_estimate, human_se : float
        The human-only (classical) mean of the labelled items and its standard error.
    interval : str
        ``"z"`` (normal quantile, variances with divisors n and N: ppi-python's interval) or
        ``"t"`` (Student t quantile with n - 1 degrees of freedom, divisors n - 1 and N - 1).
    n_eff : float
        ``n_labelled * human_se**2 / se**2``: human labels the human-only estimate would need
        to reach `se`.
    width_ratio : float
        ``se / human_se``: the PPI interval's width relative to the human-only one.
    confidence_level : float
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

    def __iter__(self):  # unpacks like (estimate, (low, high))
        return iter((self.estimate, (self.low, self.high)))

    def confidence_interval(self, confidence_level: float | None = None) -> tuple[float, float]:
        """The two-sided normal interval ``estimate -/+ z * se`` at another level."""
        level = self.confidence_level if confidence_level is None else confidence_level
        _check_level(level)
        z = _quantile(level, self.interval, self.n_labelled)
        return self.estimate - z * self.se, self.estimate + z * self.se

    def to_frame(self) -> pd.DataFrame:
        """One row, one estimand."""
        return pd.DataFrame([asdict(self)])


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {level}")


def _quantile(level: float, interval: str, n: int) -> float:
    if interval == "z":
        return float(stats.norm.ppf(0.5 + level / 2))
    if interval == "t":
        return float(stats.t.ppf(0.5 + level / 2, n - 1))
    raise InputError(f"interval must be 'z' or 't', got {interval!r}")


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
    Example 6.1).
    """
    n, big_n = y.size, f_unl.size
    cov = float(np.mean((y - y.mean()) * (f_lab - f_lab.mean())))
    var_f = float(np.var(np.concatenate([f_lab, f_unl]), ddof=1))
    if var_f == 0:
        return 0.0
    return float(np.clip(cov / ((1 + n / big_n) * var_f), 0.0, 1.0))


def _kernel(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray, method: str,
            ddof: int = 0) -> tuple[float, float, float]:
    """(estimate, se, lambda) of the prediction-powered mean."""
    if method not in _METHODS:
        raise InputError(f"method must be one of {list(_METHODS)}, got {method!r}")
    lam = {"ppi": 1.0, "classical": 0.0}.get(method)
    if lam is None:
        lam = tuned_lambda(y, f_lab, f_unl)
    rect = y - lam * f_lab
    estimate = float(lam * f_unl.mean() + rect.mean())
    var = lam**2 * np.var(f_unl, ddof=ddof) / f_unl.size + np.var(rect, ddof=ddof) / y.size
    return estimate, float(math.sqrt(var)), lam


def _result(estimand: str, method: str, estimate: float, se: float, lam: float, n: int,
            big_n: int, human_estimate: float, human_se: float, level: float,
            interval: str = "z") -> PPIResult:
    z = _quantile(level, interval, n)
    ratio = se / human_se if human_se > 0 else math.nan
    n_eff = n * human_se**2 / se**2 if se > 0 else math.nan
    return PPIResult(estimand, method, estimate, se, estimate - z * se, estimate + z * se, lam,
                     n, big_n, human_estimate, human_se, n_eff, ratio, level, interval)


def ppi_mean(human, predicted, *, method: str = "ppi++", confidence_level: float = 0.95,
             interval: str = "z") -> PPIResult:
    """Prediction-powered estimate of the mean human score, with a normal interval.

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
    confidence_level : float, default 0.95
    interval : {"z", "t"}, default "z"
        ``"z"``: the normal interval of PPI / PPI++ (as ppi-python). ``"t"``: a small-sample
        variant, Student t with n - 1 degrees of freedom and unbiased (n - 1, N - 1) variances;
        it covers better below ~100 human labels (benchmarks/bench_ppi.py).

    Returns
    -------
    PPIResult

    Notes
    -----
    With labelled ``(Y_i, f_i)``, i = 1..n, and unlabelled predictions ``f~_j``, j = 1..N,

    ``theta = lambda * mean(f~) + mean(Y - lambda f)``,
    ``se^2 = lambda^2 var(f~) / N + var(Y - lambda f) / n`` (variances with divisor N, n),

    and the interval ``theta -/+ z_{(1+level)/2} se``. The human-only estimate is
    ``mean(Y)`` with ``se^2 = var(Y) / n``. Unbiased for any judge when the labelled subset is
    random; the rectifier corrects the judge's bias.

    References
    ----------
    1. Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), Prediction-powered inference,
       Science 382.
    2. Angelopoulos, Duchi & Zrnic (2023), PPI++: Efficient prediction-powered inference,
       arXiv:2311.01453.

    Validated against ``ppi_py.ppi_mean_pointestimate`` and ``ppi_py.ppi_mean_ci`` (ppi-python
    0.2.3; lam=None, 1 and 0) to 1e-9, and by simulated coverage (benchmarks/bench_ppi.py).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> h = rng.normal(3, 1, 1000); f = h + rng.normal(0.5, 0.5, 1000)
    >>> h[100:] = np.nan
    >>> r = ppi_mean(h, f)
    >>> bool(r.n_eff > r.n_labelled)
    True
    """
    _check_level(confidence_level)
    _quantile(confidence_level, interval, 2)
    ddof = 0 if interval == "z" else 1
    y, f_lab, f_unl = _split(human, predicted, "ppi_mean")
    estimate, se, lam = _kernel(y, f_lab, f_unl, method, ddof)
    human_se = float(np.std(y, ddof=ddof) / math.sqrt(y.size))
    return _result("mean", method, estimate, se, lam, y.size, f_unl.size, float(y.mean()),
                   human_se, confidence_level, interval)


def ppi_win_rate(human, predicted, *, method: str = "ppi++", confidence_level: float = 0.95,
                 interval: str = "z") -> PPIResult:
    """Prediction-powered win rate: the mean of human preferences for system A over B.

    Parameters
    ----------
    human : array-like, shape (N_total,)
        Per pair: 1 if the human preferred A, 0 if B, 0.5 for a tie, NaN if not labelled.
    predicted : array-like, shape (N_total,)
        The judge's verdict (1 / 0 / 0.5) or its probability that A wins, on every pair.
    method, confidence_level, interval
        As in `ppi_mean`.

    Returns
    -------
    PPIResult
        ``estimand="win rate"``; the estimand counts a tie as half a win.

    Notes
    -----
    A win rate is a mean of values in [0, 1]: `ppi_mean` applies unchanged.

    Validated against ``ppi_py.ppi_mean_ci`` on binary labels to 1e-9.

    Examples
    --------
    >>> ppi_win_rate([1, 0, 1, float("nan"), float("nan")], [1, 0, 0, 1, 1]).n_labelled
    3
    """
    for name, values in (("human", human), ("predicted", predicted)):
        arr = np.asarray(values, dtype=float)
        outside = np.flatnonzero((arr < 0) | (arr > 1))
        if outside.size:
            raise InputError(f"ppi_win_rate: {name} value {arr[outside[0]]} at item "
                             f"{outside[0]} is outside [0, 1] (1 = A wins, 0 = B, 0.5 = tie)")
    result = ppi_mean(human, predicted, method=method, confidence_level=confidence_level,
                      interval=interval)
    return PPIResult(**{**asdict(result), "estimand": "win rate"})


def ppi_mean_difference(human_a, predicted_a, human_b, predicted_b, *, paired: bool = False,
                        method: str = "ppi++", confidence_level: float = 0.95,
                        interval: str = "z") -> PPIResult:
    """Prediction-powered difference between two systems' mean human scores (A - B).

    Parameters
    ----------
    human_a, predicted_a, human_b, predicted_b : array-like
        Per system, as in `ppi_mean`.
    paired : bool, default False
        False: the systems' items are independent samples (each its own estimate and lambda;
        the variances add). True: item i of A and item i of B answer the same prompt and were
        labelled together (same NaN pattern); the estimate is `ppi_mean` of the per-prompt
        differences, which keeps the prompt-level correlation.
    method, confidence_level, interval
        As in `ppi_mean` (``"t"`` for independent systems: n_a + n_b - 1 degrees of freedom).

    Returns
    -------
    PPIResult
        ``estimand="difference"``; ``lam`` is NaN for independent systems (one lambda each).

    Notes
    -----
    Independent: ``theta = theta_A - theta_B``, ``se^2 = se_A^2 + se_B^2``; the human-only
    reference likewise. Paired: ``Y_i = h_Ai - h_Bi``, ``f_i = f_Ai - f_Bi``.

    Validated against ``ppi_py.ppi_mean_ci`` (each system, or the differences) to 1e-9.

    Examples
    --------
    >>> nan = float("nan")
    >>> r = ppi_mean_difference([3, 4, 5, nan, nan], [3, 4, 4, 5, 2],
    ...                         [2, 3, 3, nan, nan], [2, 2, 3, 4, 1], paired=True)
    >>> r.estimand
    'difference'
    """
    _check_level(confidence_level)
    if paired:
        ha, hb = np.asarray(human_a, dtype=float), np.asarray(human_b, dtype=float)
        if ha.shape != hb.shape or not np.array_equal(np.isnan(ha), np.isnan(hb)):
            raise InputError("ppi_mean_difference(paired=True): the two systems must have the "
                             "same items and the same human-labelled ones (same NaN pattern)")
        result = ppi_mean(ha - hb, np.asarray(predicted_a, dtype=float)
                          - np.asarray(predicted_b, dtype=float), method=method,
                          confidence_level=confidence_level, interval=interval)
        return PPIResult(**{**asdict(result), "estimand": "difference"})
    a = ppi_mean(human_a, predicted_a, method=method, confidence_level=confidence_level,
                 interval=interval)
    b = ppi_mean(human_b, predicted_b, method=method, confidence_level=confidence_level,
                 interval=interval)
    se = math.hypot(a.se, b.se)
    human_se = math.hypot(a.human_se, b.human_se)
    n = a.n_labelled + b.n_labelled
    return _result("difference", method, a.estimate - b.estimate, se, math.nan, n,
                   a.n_unlabelled + b.n_unlabelled, a.human_estimate - b.human_estimate,
                   human_se, confidence_level, interval)
