"""Prediction-powered Bradley-Terry strengths: PPI++ for the logistic model of pairwise
preferences, from few human and many judge verdicts.

Design: one row per comparison unit (`storyeval.pairwise.ppr.comparison_units`) with
``x = e_a - e_b`` and the outcome ``Y`` = the human share of verdicts won by ``a`` (a tie
counts half), ``Yhat`` = the judge's share. The strengths ``theta`` minimise PPI++'s rectified
logistic loss

    L_lambda(theta) = lambda / N sum_U l(theta; x, Yhat) - lambda / n sum_L l(theta; x, Yhat)
                      + 1 / n sum_L l(theta; x, Y),    l = -y x.theta + log(1 + e^{x.theta}),

over the N judge-only units U and the n human-labelled units L. The loss depends on ``theta``
only through differences: one item is fixed at 0 (``reference``) or the strengths are reported
centred (mean zero, the default), with the covariance mapped accordingly.

Lambda: starting from PPI (``lambda = 1``), lambda is re-estimated at the current estimate
``lam_steps`` times (PPI++'s plug-in minimiser of the trace of the reported strengths'
covariance, clipped to [0, 1]). ppi-python's ``ppi_logistic_pointestimate`` takes one step
(``lam_steps=1``); ``ppi_logistic_ci`` takes two and centres its interval on that estimate
(the default here, so that the printed estimate is the interval's centre).

Variance: the sandwich ``H^-1 (n/N Var(lambda grad_U) + Var(grad_L - lambda grad_hat_L)) H^-1
/ n`` of ppi-python with ``variance="comparison"``; with ``variance="prompt"`` (default) the
gradients of one prompt are summed before squaring (cluster-robust, with the factor
``P / (P - 1)``), because the comparisons of one prompt share its stories. A prompt bootstrap
(``n_resamples``) is the alternative; in simulation its percentile intervals covered less than
the sandwich's (benchmarks/bench_ppr.py), so the sandwich is the default.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel

__all__ = ["PPIStrengths", "ppi_bradley_terry", "ppi_logistic_bt"]

_VARIANCES = ("prompt", "comparison")


@dataclass(frozen=True)
class PPIStrengths:
    """Prediction-powered Bradley-Terry strengths.

    Attributes
    ----------
    items : list
    estimate : ndarray (k,)
        Log-strengths (centred, or 0 at the reference item).
    covariance : ndarray (k, k)
        Their covariance (rank k - 1).
    lam : float
        The lambda of the estimate.
    low, high : ndarray (k,)
        Normal intervals at `confidence_level` (the reference item: [0, 0]).
    confidence_level : float
    n_labelled, n_unlabelled : int
    variance : str
    reference : str or None
    converged : bool
    reason : str
        Why the estimate is NaN (empty otherwise).
    """

    items: list
    estimate: np.ndarray
    covariance: np.ndarray
    lam: float
    low: np.ndarray
    high: np.ndarray
    confidence_level: float
    n_labelled: int
    n_unlabelled: int
    variance: str
    reference: str | None
    converged: bool = True
    reason: str = ""

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diag(self.covariance), 0.0))


@dataclass
class _Design:
    """Units as arrays; ``lab`` marks the human-labelled ones."""

    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    yhat: np.ndarray
    lab: np.ndarray
    k: int
    cluster: np.ndarray | None
    keep: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    transform: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def n(self) -> int:
        return int(self.lab.sum())

    @property
    def big_n(self) -> int:
        return int((~self.lab).sum())


def _pair_sums(d: _Design, lam: float, weight: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """(C, S) of the rectified loss: sum_pairs C_ij log(1 + e^{t_i - t_j}) - S_ij (t_i - t_j);
    ``weight``: how often each unit enters (a bootstrap resample), default once."""
    k = d.k
    w = np.ones(len(d.a)) if weight is None else weight
    idx = d.a * k + d.b
    lab = d.lab
    n, big_n = float(w[lab].sum()), float(w[~lab].sum())
    c = (lam / big_n) * np.bincount(idx[~lab], w[~lab], minlength=k * k) if big_n else 0.0
    c = c + ((1 - lam) / n) * np.bincount(idx[lab], w[lab], minlength=k * k)
    s = (lam / big_n) * np.bincount(idx[~lab], w[~lab] * d.yhat[~lab],
                                    minlength=k * k) if big_n else 0.0
    s = s + np.bincount(idx[lab], w[lab] * (d.y[lab] - lam * d.yhat[lab]) / n,
                        minlength=k * k)
    return np.asarray(c).reshape(k, k), np.asarray(s).reshape(k, k)


def _loss(theta, c, s) -> float:
    diff = theta[:, None] - theta[None, :]
    return float(np.sum(c * np.logaddexp(0.0, diff) - s * diff))


def _fit(d: _Design, lam: float, max_iter: int = 200, weight: np.ndarray | None = None,
         start: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """Newton's method with backtracking on the free coordinates (``d.keep``); full theta with
    the dropped item at 0."""
    c, s = _pair_sums(d, lam, weight)
    theta = np.zeros(d.k) if start is None else start.copy()
    keep = d.keep
    current = _loss(theta, c, s)
    for _ in range(max_iter):
        diff = theta[:, None] - theta[None, :]
        p = expit(diff)
        r = c * p - s
        grad = r.sum(axis=1) - r.sum(axis=0)
        w = c * p * (1 - p)
        w = w + w.T
        hess = np.diag(w.sum(axis=1)) - w
        g, h = grad[keep], hess[np.ix_(keep, keep)]
        try:
            step = np.linalg.solve(h, g)
        except np.linalg.LinAlgError:
            return np.full(d.k, np.nan), False
        t = 1.0
        while True:
            trial = theta.copy()
            trial[keep] -= t * step
            new = _loss(trial, c, s)
            if new <= current + 1e-4 * t * -float(g @ step) or t < 1e-10:
                break
            t /= 2
        theta, current = trial, new
        if np.max(np.abs(t * step)) < 1e-13 * max(1.0, np.max(np.abs(theta))):
            return theta, bool(np.all(np.abs(theta) < 50))
    return theta, False


def _residuals(d: _Design, theta: np.ndarray, target: np.ndarray, rows: np.ndarray
               ) -> np.ndarray:
    """``mu - target`` of the units ``rows``: unit c's gradient of l is this residual times
    ``x_c = e_a - e_b`` (two non-zero entries), which the products below use instead of dense
    (units x items) gradient matrices."""
    return expit(theta[d.a[rows]] - theta[d.b[rows]]) - target[rows]


def _iid_product(d: _Design, rows: np.ndarray, r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """``sum_c (g1_c - mean g1)(g2_c - mean g2)^T`` over the units ``rows`` (free coordinates)."""
    k = d.k
    a, b = d.a[rows], d.b[rows]
    p = r1 * r2
    flat = (np.bincount(a * k + a, p, k * k) + np.bincount(b * k + b, p, k * k)
            - np.bincount(a * k + b, p, k * k) - np.bincount(b * k + a, p, k * k))
    m1 = np.bincount(a, r1, k) - np.bincount(b, r1, k)
    m2 = np.bincount(a, r2, k) - np.bincount(b, r2, k)
    out = flat.reshape(k, k) - np.outer(m1, m2) / max(len(rows), 1)
    return out[np.ix_(d.keep, d.keep)]


def _cluster_sums(d: _Design, rows: np.ndarray, r: np.ndarray, n_clusters: int) -> np.ndarray:
    """(P, k - 1): per cluster, the sum of its units' centred gradients (free coordinates)."""
    k = d.k
    cluster = d.cluster if d.cluster is not None else np.zeros(len(d.a), np.int64)
    cl, a, b = cluster[rows], d.a[rows], d.b[rows]
    raw = (np.bincount(cl * k + a, r, n_clusters * k)
           - np.bincount(cl * k + b, r, n_clusters * k)).reshape(n_clusters, k)
    mean = (np.bincount(a, r, k) - np.bincount(b, r, k)) / max(len(rows), 1)
    sums = raw - np.bincount(cl, minlength=n_clusters)[:, None] * mean[None, :]
    return sums[:, d.keep]


def _hessian_inverse(d: _Design, theta: np.ndarray, use_unlabelled: bool) -> np.ndarray:
    rows = np.ones(len(d.a), bool) if use_unlabelled else d.lab
    a, b = d.a[rows], d.b[rows]
    mu = expit(theta[a] - theta[b])
    v = mu * (1 - mu) / (len(d.a) if use_unlabelled else d.n)
    w = np.bincount(a * d.k + b, v, minlength=d.k * d.k).reshape(d.k, d.k)
    w = w + w.T
    h = (np.diag(w.sum(axis=1)) - w)[np.ix_(d.keep, d.keep)]
    return np.linalg.inv(h)


def _lambda(d: _Design, theta: np.ndarray) -> float:
    """PPI++'s lambda at theta (ppi-python's ``_calc_lam_glm``, ``clip=True``), the traces
    taken in the reported coordinates."""
    lab = d.lab
    inv = _hessian_inverse(d, theta, True)
    rows_l, rows_u = np.flatnonzero(lab), np.flatnonzero(~lab)
    r = _residuals(d, theta, d.y, rows_l)
    rh = _residuals(d, theta, d.yhat, rows_l)
    both = np.concatenate([rows_l, rows_u])
    rb = np.concatenate([rh, _residuals(d, theta, d.yhat, rows_u)])
    n, big_n = d.n, d.big_n
    if d.cluster is None:
        cross = _iid_product(d, rows_l, r, rh)
        var_hat = _iid_product(d, both, rb, rb) / (n + big_n - 1)
    else:
        p = int(d.cluster.max()) + 1
        gc, ghc = _cluster_sums(d, rows_l, r, p), _cluster_sums(d, rows_l, rh, p)
        cross = gc.T @ ghc
        whole = _cluster_sums(d, both, rb, p)
        var_hat = whole.T @ whole / (n + big_n - 1)
    cov = (cross + cross.T) / n
    v = d.transform @ inv
    num = np.trace(v @ cov @ v.T)
    den = 2 * (1 + n / big_n) * np.trace(v @ var_hat @ v.T)
    return float(np.clip(num / den, 0.0, 1.0)) if den > 0 else 0.0


def _covariance(d: _Design, theta: np.ndarray, lam: float) -> np.ndarray:
    """Covariance of the free coordinates of the estimate at lambda."""
    lab = d.lab
    inv = _hessian_inverse(d, theta, lam != 0)
    rows_l, rows_u = np.flatnonzero(lab), np.flatnonzero(~lab)
    resid = _residuals(d, theta, d.y, rows_l) - lam * _residuals(d, theta, d.yhat, rows_l)
    ru = lam * _residuals(d, theta, d.yhat, rows_u)
    n, big_n = d.n, d.big_n
    if d.cluster is None:  # ppi-python: np.cov of each set (divisor m - 1)
        middle = _iid_product(d, rows_l, resid, resid) / (n - 1) / n
        if big_n > 1:
            middle = middle + _iid_product(d, rows_u, ru, ru) / (big_n - 1) / big_n
    else:
        p = int(d.cluster.max()) + 1
        psi = _cluster_sums(d, rows_l, resid, p) / n + _cluster_sums(d, rows_u, ru, p) / big_n
        used = np.zeros(p, bool)
        used[d.cluster] = True
        n_clusters = int(used.sum())
        middle = psi.T @ psi * (n_clusters / max(n_clusters - 1, 1))
    return inv @ middle @ inv


def _bootstrap(d: _Design, theta: np.ndarray, lam: float, n_resamples: int,
               random_state: int | np.random.Generator | None) -> np.ndarray:
    """(B, k) reported strengths refitted on prompt resamples at the estimate's lambda (a
    drawn prompt's comparisons, labelled and not, enter as often as it is drawn); rows of NaN
    where a resample has no finite minimiser."""
    if d.cluster is None:
        raise InputError("the bootstrap resamples prompts; give clusters (variance='prompt')")
    rng = np.random.default_rng(random_state)
    n_clusters = int(d.cluster.max()) + 1
    draws = rng.integers(0, n_clusters, (n_resamples, n_clusters))
    out = np.full((n_resamples, d.k), np.nan)
    for r in range(n_resamples):  # each refit is a k x k Newton on pair sums
        weight = np.bincount(draws[r], minlength=n_clusters)[d.cluster].astype(float)
        if weight[d.lab].sum() < 2 or weight[~d.lab].sum() < 2:
            continue
        fit, ok = _fit(d, lam, weight=weight, start=theta)
        if ok:
            out[r] = d.transform @ fit[d.keep]
    return out


def _design_check(d: _Design, items: list) -> None:
    n, big_n = d.n, d.big_n
    if n < 2 or big_n < 2:
        raise InputError(f"prediction-powered strengths need at least 2 human-labelled and 2 "
                         f"judge-only comparisons, got {n} and {big_n}")
    # the items must be linked by the labelled comparisons (else the human-only and the
    # rectifier's Hessian are singular)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    for rows, what in ((d.lab, "human-labelled"), (np.ones(len(d.a), bool), "judged")):
        graph = coo_matrix((np.ones(int(rows.sum())), (d.a[rows], d.b[rows])),
                           shape=(d.k, d.k))
        parts, label = connected_components(graph, directed=False)
        if parts > 1:
            other = items[int(np.flatnonzero(label != label[0])[0])]
            raise InputError(f"the {what} comparisons do not link {items[0]!r} and {other!r} "
                             "(directly or through other items): their strengths cannot be "
                             "compared; label comparisons between the groups")


def ppi_logistic_bt(
    a, b, human, predicted, n_items: int, *,
    lam: float | None = None,
    lam_steps: int = 2,
    reference: int | None = None,
    cluster=None,
    confidence_level: float = 0.95,
    items: list | None = None,
    n_resamples: int = 0,
    random_state: int | np.random.Generator | None = 0,
) -> PPIStrengths:
    """PPI++ Bradley-Terry strengths from arrays of comparisons.

    Parameters
    ----------
    a, b : int arrays (m,)
        Item codes of the two sides of each comparison.
    human : float array (m,)
        Human score of ``a`` in [0, 1] (1 a won, 0 b won, 0.5 tie, or a share), NaN where no
        human judged.
    predicted : float array (m,)
        The judge's score of ``a`` in [0, 1] on every comparison.
    n_items : int
    lam : float, optional
        Fixed lambda in [0, 1] (0: human-only logistic regression; 1: PPI); None: tuned.
    lam_steps : int, default 2
        Re-estimations of lambda, starting from PPI's lambda = 1 (see the module docstring).
    reference : int, optional
        Item fixed at 0 (ppi-python's design without that column); None: centred strengths.
    cluster : int array (m,), optional
        Cluster (prompt) codes for the cluster-robust variance; None: independent
        comparisons (ppi-python's variance).
    confidence_level : float, default 0.95
    items : list, optional
        Item names.
    n_resamples : int, default 0
        With clusters: bootstrap resamples of the prompts (each refitted at the estimate's
        lambda); the intervals are then percentile intervals and the covariance (for the
        rank-sets) the bootstrap covariance. 0: the sandwich's normal intervals.
    random_state : int or Generator, default 0
        Seed of the bootstrap: ``default_rng(random_state).integers(0, P, (n_resamples, P))``
        are the drawn prompts.

    Returns
    -------
    PPIStrengths

    Notes
    -----
    Equal to ppi-python's ``ppi_logistic_pointestimate`` (``lam_steps=1``) and
    ``ppi_logistic_ci`` (``lam_steps=2``) with ``X`` the rows ``e_a - e_b`` without the
    reference's column, ``cluster=None`` and ``reference`` given, to 1e-9
    (tests/test_pairwise_ppi_strengths.py). Newton's method on the pair sums of the rectified
    loss (convex for lambda in [0, 1]).

    Examples
    --------
    >>> import numpy as np
    >>> a, b = np.tile([0, 1, 0], 20), np.tile([1, 2, 2], 20)
    >>> rng = np.random.default_rng(0)
    >>> judge = rng.integers(0, 2, 60).astype(float)
    >>> human = np.where(np.arange(60) < 30, np.where(rng.random(60) < 0.8, judge, 1 - judge),
    ...                  np.nan)
    >>> r = ppi_logistic_bt(a, b, human, judge, 3)
    >>> r.estimate.shape, bool(0 <= r.lam <= 1)
    ((3,), True)
    """
    av, bv = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    y, f = np.asarray(human, dtype=float), np.asarray(predicted, dtype=float)
    k = int(n_items)
    if not (av.shape == bv.shape == y.shape == f.shape) or av.ndim != 1:
        raise InputError("a, b, human and predicted must be 1-D arrays of one length")
    if ((av < 0) | (av >= k) | (bv < 0) | (bv >= k) | (av == bv)).any():
        raise InputError(f"item codes must be distinct and in 0..{k - 1}")
    if not np.isfinite(f).all() or ((f < 0) | (f > 1)).any():
        raise InputError("predicted must be in [0, 1] on every comparison")
    lab = ~np.isnan(y)
    if ((y[lab] < 0) | (y[lab] > 1)).any():
        raise InputError("human scores must be in [0, 1] (or NaN: not labelled)")
    if lam is not None and not (np.isfinite(lam) and 0 <= lam <= 1):
        raise InputError(f"lam must be in [0, 1], got {lam!r}")
    if not isinstance(lam_steps, (int, np.integer)) or lam_steps < 1:
        raise InputError(f"lam_steps must be an integer >= 1, got {lam_steps!r}")
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 0 or n_resamples == 1:
        raise InputError(f"n_resamples must be 0 or an integer >= 2, got {n_resamples!r}")
    if n_resamples and cluster is None:
        raise InputError("the bootstrap resamples prompts: give cluster (prompt codes)")
    names = list(items) if items is not None else list(range(k))
    ref = 0 if reference is None else int(reference)
    keep = np.delete(np.arange(k), ref)
    embed = np.zeros((k, k - 1))
    embed[keep, np.arange(k - 1)] = 1.0
    transform = embed if reference is not None else (np.eye(k) - 1.0 / k) @ embed
    clu = None if cluster is None else pd.factorize(np.asarray(cluster))[0]
    d = _Design(av, bv, np.where(lab, y, 0.0), f, lab, k, clu, keep, transform)
    _design_check(d, names)
    if lam is None:
        lam_, theta = 1.0, _fit(d, 1.0)[0]
        for _ in range(int(lam_steps)):
            if not np.isfinite(theta).all():
                break
            lam_ = _lambda(d, theta)
            theta = _fit(d, lam_)[0]
    else:
        lam_, theta = float(lam), _fit(d, float(lam))[0]
    ok = bool(np.isfinite(theta).all() and np.all(np.abs(theta) < 50))
    nan = np.full(k, np.nan)
    if not ok:
        reason = ("the rectified logistic loss has no finite minimiser (some item wins or loses "
                  "all its weighted comparisons)")
        warnings.warn(f"prediction-powered strengths: {reason}", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
        return PPIStrengths(names, nan, np.full((k, k), np.nan), lam_, nan, nan,
                            confidence_level, d.n, d.big_n,
                            "comparison" if clu is None else "prompt",
                            None if reference is None else str(names[ref]), False, reason)
    est = transform @ theta[keep]
    label = "comparison" if clu is None else "prompt"
    if n_resamples:
        samples = _bootstrap(d, theta, lam_, int(n_resamples), random_state)
        good = samples[np.isfinite(samples).all(axis=1)]
        if len(good) < 2:
            raise InputError("the prompt bootstrap found no finite strengths in its resamples")
        if len(good) < n_resamples:
            warnings.warn(f"prediction-powered strengths: no finite minimiser in "
                          f"{n_resamples - len(good)} of {n_resamples} prompt resamples (left "
                          "out)", UndefinedStatisticWarning, stacklevel=user_stacklevel())
        tail = (1 - confidence_level) / 2
        low, high = np.quantile(good, [tail, 1 - tail], axis=0)
        return PPIStrengths(names, est, np.cov(good.T), lam_, low, high, confidence_level,
                            d.n, d.big_n, f"{label} bootstrap ({len(good)} of {n_resamples})",
                            None if reference is None else str(names[ref]))
    cov = transform @ _covariance(d, theta, lam_) @ transform.T
    z = stats.norm.ppf(0.5 + confidence_level / 2)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return PPIStrengths(names, est, cov, lam_, est - z * se, est + z * se, confidence_level,
                        d.n, d.big_n, label, None if reference is None else str(names[ref]))


def ppi_bradley_terry(
    human: pd.DataFrame,
    judge: pd.DataFrame,
    *,
    dimension: str | None = None,
    by: str = "system",
    judge_name: str | None = None,
    human_source: str = "human verdicts",
    judge_source: str = "judge verdicts",
    lam: float | None = None,
    lam_steps: int = 2,
    reference: str | None = None,
    variance: str = "prompt",
    confidence_level: float = 0.95,
    n_resamples: int = 0,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[pd.DataFrame, PPIStrengths]:
    """Prediction-powered Bradley-Terry leaderboard from human and judge verdict tables.

    Parameters
    ----------
    human, judge : DataFrame
        Verdict tables; every comparison humans judged must be judged by the judge too
        (`storyeval.pairwise.ppr.comparison_units`).
    dimension, by, judge_name, human_source, judge_source
        As in `comparison_units`.
    lam, lam_steps
        As in `ppi_logistic_bt`.
    reference : str, optional
        An item fixed at log-strength 0; default: centred log-strengths (mean zero).
    variance : {"prompt", "comparison"}, default "prompt"
        Cluster-robust over prompts, or independent comparisons (ppi-python's).
    confidence_level : float, default 0.95
        Of the per-item intervals and of the simultaneous rank-sets.
    n_resamples : int, default 0
        0: normal intervals and rank-sets from the sandwich covariance (the default: its
        per-system intervals covered 0.883-0.913 at a stated 0.90 in benchmarks/bench_ppr.py,
        the bootstrap's 0.867-0.892). With ``variance="prompt"``, N > 0: prompt bootstrap
        resamples (as the leaderboard's), each refitted at the estimate's lambda: percentile
        intervals, rank-sets from the bootstrap covariance (``variance="comparison"`` ignores
        it).
    random_state : int or Generator, default 0
        Seed of the bootstrap (the command line's ``--seed``).

    Returns
    -------
    (table, result)
        ``table``: one row per item, strongest first: ``item, rank, log_strength, se,
        ci_low, ci_high, rank_set_low, rank_set_high, human_log_strength, human_se,
        width_ratio, n_labelled, n_unlabelled, lam``. ``human_*`` is the logistic fit to the
        human verdicts alone with the same variance; ``width_ratio = se / human_se``.
        Rank-sets: `storyeval.pairwise.ppr.rank_sets` on the strengths' covariance with
        ``df = k - 1`` (the centred strengths span k - 1 dimensions).

    References
    ----------
    1. Angelopoulos, A. N., Duchi, J. C., Zrnic, T. (2023). PPI++: Efficient
       prediction-powered inference. arXiv:2311.01453.
    2. Chatzi, I., et al. (2024). Prediction-powered ranking of large language models.
       NeurIPS 2024.

    Validated against ppi-python 0.2.3 (``ppi_logistic_pointestimate``, ``ppi_logistic_ci``)
    to 1e-9 in tests/test_pairwise_ppi_strengths.py; coverage by simulation in
    benchmarks/bench_ppr.py.
    """
    from scipy.stats import rankdata

    from storyeval.pairwise.ppr import comparison_units, rank_sets

    if variance not in _VARIANCES:
        raise InputError(f"variance must be one of {_VARIANCES}, got {variance!r}")
    units = comparison_units(human, judge, dimension=dimension, by=by, judge_name=judge_name,
                             human_source=human_source, judge_source=judge_source)
    items = units.items
    if reference is not None and reference not in items:
        raise InputError(f"reference {reference!r} is not an item; items: {items}")
    ref = None if reference is None else items.index(reference)
    y = units.human[:, 0] + 0.5 * units.human[:, 2]
    f = units.judge[:, 0] + 0.5 * units.judge[:, 2]
    clu = units.prompt if variance == "prompt" else None
    options: dict[str, Any] = {"reference": ref, "cluster": clu,
                               "confidence_level": confidence_level, "items": items}
    boot: dict[str, Any] = {"n_resamples": n_resamples if clu is not None else 0,
                            "random_state": random_state}
    try:
        res = ppi_logistic_bt(units.a, units.b, y, f, len(items), lam=lam,
                              lam_steps=lam_steps, **options, **boot)
    except InputError as exc:  # name the files
        raise InputError(f"{human_source} and {judge_source}: {exc}") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        hum = ppi_logistic_bt(units.a, units.b, y, f, len(items), lam=0.0, **options, **boot)
    k = len(items)
    if res.converged:
        low, high = rank_sets(res.estimate, res.covariance, confidence_level=confidence_level,
                              df=k - 1)
        rank = rankdata(-res.estimate, method="min").astype(np.int64)
    else:
        low = high = rank = np.zeros(k, dtype=np.int64)
    lab = units.labelled
    n_lab = np.bincount(units.a[lab], minlength=k) + np.bincount(units.b[lab], minlength=k)
    n_all = np.bincount(units.a, minlength=k) + np.bincount(units.b, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(hum.se > 0, res.se / hum.se, np.nan)

    def _ints(x):
        return pd.array(x, dtype="Int64") if res.converged else pd.array([pd.NA] * k,
                                                                         dtype="Int64")

    table = pd.DataFrame({
        "item": items, "rank": _ints(rank), "log_strength": res.estimate, "se": res.se,
        "ci_low": res.low, "ci_high": res.high, "rank_set_low": _ints(low),
        "rank_set_high": _ints(high), "human_log_strength": hum.estimate,
        "human_se": hum.se, "width_ratio": ratio, "n_labelled": n_lab,
        "n_unlabelled": n_all - n_lab, "lam": res.lam})
    table = table.iloc[np.argsort(-np.nan_to_num(res.estimate, nan=0.0), kind="stable")]
    return table.reset_index(drop=True), res
