"""Active labelling: send to humans the items where the judge is least certain, and estimate
the human mean in a way that stays valid under that choice (active statistical inference,
Zrnic and Candes 2024).

Every item ``i`` gets a probability ``pi_i`` of a human label (`active_probabilities`:
proportional to the judge's uncertainty, mixed with uniform sampling, summing to the label
budget); each item is then labelled independently with its probability (`active_sample`, a
seeded Bernoulli draw). `active_mean` weights each labelled item's correction by ``1 /
pi_i``, which keeps the estimate unbiased whatever the probabilities, and gives a normal
interval. With ``pi_i`` equal for all items this is uniform random labelling with the same
estimator, the baseline of ``benchmarks/bench_active.py``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError

__all__ = [
    "ActiveResult",
    "active_mean",
    "active_probabilities",
    "active_sample",
    "uncertainty_from_probability",
    "uncertainty_from_votes",
]


def _vector(values, name: str) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise InputError(f"{name} is empty")
    return x


def uncertainty_from_probability(p) -> np.ndarray:
    """``sqrt(p (1 - p))``: the standard deviation of a 0/1 outcome the judge gives
    probability ``p`` (a win probability, a reward model's sigmoid), if ``p`` is calibrated."""
    x = _vector(p, "p")
    bad = np.flatnonzero(~((x >= 0) & (x <= 1)))
    if bad.size:
        raise InputError(f"probability {x[bad[0]]!r} at item {bad[0]} is not in [0, 1]")
    return np.sqrt(x * (1 - x))


def uncertainty_from_votes(votes) -> np.ndarray:
    """Disagreement of several verdicts per item (judges of a panel, the two presentation
    orders, tries): the standard deviation (divisor k) of each row of ``votes`` (items x k,
    values such as 1 / 0 / 0.5; NaN = no vote). 0 where they agree."""
    v = np.asarray(votes, dtype=float)
    if v.ndim != 2 or v.shape[1] < 2:
        raise InputError(f"votes must be items x judges with at least 2 columns, got shape "
                         f"{v.shape}")
    counts = np.sum(np.isfinite(v), axis=1)
    few = np.flatnonzero(counts < 2)
    if few.size:
        raise InputError(f"item {few[0]} has {counts[few[0]]} vote(s); at least 2 are needed")
    return np.nanstd(v, axis=1)


def _water_fill(u: np.ndarray, budget: float) -> np.ndarray:
    """``min(1, k u_i)`` with k such that the sum is ``budget`` (items with u = 0 get 0);
    when the budget is at least the number of items with u > 0, those get 1 and the rest of
    the budget is spread evenly over the others."""
    positive = u > 0
    if budget >= positive.sum():
        return np.where(positive, 1.0, (budget - positive.sum()) / max((~positive).sum(), 1))
    order = np.argsort(-u, kind="stable")
    s = u[order]
    tail = np.concatenate([np.cumsum(s[::-1])[::-1], [0.0]])  # sum of s[j:], j = 0..n
    # with the j largest items saturated at 1, k_j = (budget - j) / sum(s[j:]); the right j
    # is the first for which the (j+1)-th item is not above 1 at k_j
    j = np.arange(s.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(tail[:-1] > 0, (budget - j) / tail[:-1], np.inf)
        scaled = np.where(s > 0, k * s, 0.0)
    ok = (scaled <= 1 + 1e-12) & (budget - j >= 0) & np.isfinite(k)
    first = int(np.argmax(ok)) if ok.any() else s.size
    out = np.ones(s.size)
    if first < s.size:
        out[first:] = np.minimum(1.0, k[first] * s[first:])
    pi = np.empty_like(out)
    pi[order] = out
    return pi


def active_probabilities(uncertainty, budget: float, *, mix: float = 0.2) -> np.ndarray:
    """Probabilities of a human label per item, proportional to the judge's uncertainty.

    Parameters
    ----------
    uncertainty : array-like, shape (N,)
        A non-negative score per item: how uncertain the judge is (e.g.
        `uncertainty_from_probability`, `uncertainty_from_votes`, or an estimate of
        ``E[(human - judge)^2 | item]``'s square root).
    budget : float
        The expected number of human labels, ``0 < budget <= N``.
    mix : float, default 0.2
        Share of uniform sampling mixed in: ``pi = (1 - mix) pi_active + mix budget / N``.
        It keeps every probability above ``mix budget / N``, which bounds the weights
        ``1 / pi`` (a wrong uncertainty then costs at most a factor ``1 / mix`` in variance
        on the items it neglects); must be > 0 unless every uncertainty is > 0.

    Returns
    -------
    ndarray, shape (N,)
        ``pi_i`` in (0, 1], summing to ``budget``.

    Notes
    -----
    ``pi_active,i = min(1, k u_i)`` with k such that ``sum_i pi_active,i = budget``
    (capped at 1 by water-filling). The variance of `active_mean` is smallest for ``pi_i``
    proportional to ``sqrt(E[(Y - h)^2 | x_i])`` (Zrnic and Candes 2024, Sec. 3), which the
    uncertainty stands in for.

    Examples
    --------
    >>> active_probabilities([0.5, 0.1, 0.0, 0.4], 2, mix=0.2).round(3).tolist()
    [0.9, 0.26, 0.1, 0.74]
    """
    u = _vector(uncertainty, "uncertainty")
    bad = np.flatnonzero(~(np.isfinite(u) & (u >= 0)))
    if bad.size:
        raise InputError(f"uncertainty {u[bad[0]]!r} at item {bad[0]} is not a finite number "
                         ">= 0")
    n = u.size
    if isinstance(budget, bool) or not (0 < float(budget) <= n):
        raise InputError(f"budget must be in (0, {n}] (the number of items), got {budget!r}")
    if not 0 <= mix <= 1:
        raise InputError(f"mix must be in [0, 1], got {mix!r}")
    if mix == 0 and (u == 0).any():
        raise InputError("mix = 0 with items of uncertainty 0 would never label them, and the "
                         "estimate would not be valid: use mix > 0")
    uniform = np.full(n, float(budget) / n)
    active = _water_fill(u, float(budget)) if u.sum() > 0 else uniform
    return (1 - mix) * active + mix * uniform


def active_sample(probabilities, *, seed: int = 0) -> np.ndarray:
    """Which items go to humans: independent draws ``xi_i ~ Bernoulli(pi_i)``, seeded.

    Returns
    -------
    ndarray of bool, shape (N,)
        True for an item to label. The number of labels is random, ``sum(pi)`` on average.
    """
    pi = _vector(probabilities, "probabilities")
    if not ((pi > 0) & (pi <= 1)).all():
        i = int(np.flatnonzero(~((pi > 0) & (pi <= 1)))[0])
        raise InputError(f"probability {pi[i]!r} at item {i} is not in (0, 1]")
    return np.random.default_rng(seed).random(pi.size) < pi


@dataclass(frozen=True)
class ActiveResult:
    """An actively labelled estimate of a human mean.

    Attributes
    ----------
    estimate, se, low, high : float
        Point estimate, standard error and normal interval at `confidence_level`.
    lam : float
        The weight of the judge (0: human labels only).
    n_labelled, n_items : int
        Human labels and items.
    expected_labels : float
        ``sum(pi)``: the label budget.
    confidence_level : float
    """

    estimate: float
    se: float
    low: float
    high: float
    lam: float
    n_labelled: int
    n_items: int
    expected_labels: float
    confidence_level: float

    def __iter__(self):  # unpacks like (estimate, (low, high))
        return iter((self.estimate, (self.low, self.high)))

    def to_frame(self) -> pd.DataFrame:
        """One row."""
        return pd.DataFrame([asdict(self)])


def active_mean(human, predicted, probabilities, *, lam: float | str = "tuned",
                confidence_level: float = 0.95) -> ActiveResult:
    """The human mean from actively chosen human labels and a judge's scores on every item.

    Parameters
    ----------
    human : array-like, shape (N,)
        The human score of each item, NaN where not labelled. The labelled items must have
        been drawn independently with ``probabilities`` (`active_sample`).
    predicted : array-like, shape (N,)
        The judge's score of every item.
    probabilities : array-like, shape (N,)
        ``pi_i``, the probability with which item i was sent to humans (> 0 for every item).
    lam : "tuned" or float, default "tuned"
        The weight of the judge: a number, or tuned to minimise the estimated variance
        (clipped to [0, 1]).
    confidence_level : float, default 0.95

    Returns
    -------
    ActiveResult

    Notes
    -----
    With ``m`` the judge's mean over all N items, ``h_i = m + lam (f_i - m)``,
    ``xi_i = 1`` for a labelled item and ``T_i = h_i + (Y_i - h_i) xi_i / pi_i``:
    ``theta = mean_i T_i``, ``se^2 = var_i(T_i) / N`` (divisor N - 1), interval
    ``theta -/+ z se``. ``E[xi_i / pi_i] = 1``, so ``theta`` is unbiased for any
    probabilities and any fixed lam [1]. The tuned lam minimises the inverse-probability
    estimate of ``sum_i (1/pi_i - 1) (Y_i - h_i)^2``, the part of the variance the sampling
    adds: ``lam = sum_i xi_i/pi_i (1/pi_i - 1) (Y_i - m)(f_i - m) / sum_i (1/pi_i - 1)
    (f_i - m)^2`` (the paper's power tuning [1], on the judge centred at its mean); tuned on
    the same labels, the interval is valid as N grows. With equal ``pi_i = n / N`` this is
    uniform random labelling with the same estimator.

    References
    ----------
    1. Zrnic, T. & Candes, E. J. (2024). Active statistical inference. ICML 2024,
       arXiv:2403.03208.

    Validated by simulated coverage against uniform labelling at equal budget
    (benchmarks/bench_active.py, docs/planning.md) and a hand computation
    (tests/test_power_active.py).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 2000); y = (rng.random(2000) < p).astype(float)
    >>> pi = active_probabilities(uncertainty_from_probability(p), 200)
    >>> labelled = active_sample(pi, seed=1)
    >>> r = active_mean(np.where(labelled, y, np.nan), p, pi)
    >>> bool(r.low < y.mean() < r.high)
    True
    """
    y = _vector(human, "human")
    f = _vector(predicted, "predicted")
    pi = _vector(probabilities, "probabilities")
    if not (y.size == f.size == pi.size):
        raise InputError(f"human, predicted and probabilities have different lengths "
                         f"({y.size}, {f.size}, {pi.size})")
    for name, x, ok in (("predicted", f, np.isfinite(f)),
                        ("probabilities", pi, (pi > 0) & (pi <= 1)),
                        ("human", y, ~np.isinf(y))):
        bad = np.flatnonzero(~ok)
        if bad.size:
            raise InputError(f"active_mean: {name} value {x[bad[0]]!r} at item {bad[0]} is "
                             "not allowed (predicted finite, probabilities in (0, 1])")
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level}")
    xi = np.isfinite(y)
    n_lab = int(xi.sum())
    if n_lab < 2:
        raise InputError(f"active_mean needs at least 2 human labels, got {n_lab}")
    if isinstance(lam, str) and lam != "tuned":
        raise InputError(f"lam must be 'tuned' or a number, got {lam!r}")
    if not isinstance(lam, str) and not math.isfinite(float(lam)):
        raise InputError(f"lam must be finite, got {lam!r}")
    est, se_, lam_ = active_rows(y[None, :], f[None, :], pi[None, :], lam)
    estimate, se, lam_value = float(est[0]), float(se_[0]), float(lam_[0])
    q = float(stats.norm.ppf(0.5 + confidence_level / 2))
    return ActiveResult(estimate=estimate, se=se, low=estimate - q * se,
                        high=estimate + q * se, lam=lam_value, n_labelled=n_lab, n_items=y.size,
                        expected_labels=float(pi.sum()), confidence_level=confidence_level)


def active_rows(y: np.ndarray, f: np.ndarray, pi: np.ndarray, lam: float | str = "tuned"
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, se, lam) of `active_mean` for many studies at once, one per row of ``y``
    (NaN = not labelled), ``f`` and ``pi`` (all (R, N)); no check of the inputs."""
    xi = np.isfinite(y)
    w = np.where(xi, 1.0 / pi, 0.0)  # xi / pi
    yy = np.where(xi, y, 0.0)
    m = f.mean(axis=1, keepdims=True)
    fc = f - m
    extra = 1.0 / pi - 1.0
    if isinstance(lam, str):  # tuned: the IPW estimate of the variance's minimiser
        den = np.sum(extra * fc * fc, axis=1)
        num = np.sum(w * extra * (yy - m) * fc, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam_value = np.where(den > 0, np.clip(num / np.where(den > 0, den, 1), 0, 1), 0.0)
    else:
        lam_value = np.full(y.shape[0], float(lam))
    h = m + lam_value[:, None] * fc
    t = h + (yy - h) * w
    return t.mean(axis=1), t.std(axis=1, ddof=1) / math.sqrt(y.shape[1]), lam_value
