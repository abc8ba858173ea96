"""Covariate ("style") control in the Bradley-Terry fit: strengths with the effect of a per-story
covariate such as length taken out, next to the uncontrolled strengths (Chatbot Arena's style
control).

Model (ties as half a win for each side, as in Arena's style control)::

    P(a beats b) = sigmoid(theta_a - theta_b + beta^T z),   z = (x_a - x_b) / sd(x_a - x_b)

with ``x`` the covariates of the two stories, standardised so that ``beta`` is the log-odds
change per standard deviation of the covariate difference. Fitted by Newton's method on the
battles (gradient and Hessian accumulated with ``bincount``), ``theta`` centred.

Intervals: prompts are resampled with replacement (all verdicts of a drawn prompt enter as
often as it is drawn, as in `storyeval.pairwise.leaderboard`), each resample is refitted from
the full-sample estimate, and the controlled strengths and the coefficients get percentile
intervals and bootstrap standard errors. A coefficient is per standard deviation of the
covariate difference *of the resample* (the standardisation is part of the estimate).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from storyeval.correlation.resampled import _one_blas_thread
from storyeval.exceptions import InputError

__all__ = ["controlled_strengths", "fit_controlled"]


def fit_controlled(
    a: np.ndarray,
    b: np.ndarray,
    score: np.ndarray,
    z: np.ndarray,
    n_items: int,
    *,
    weight: np.ndarray | None = None,
    tol: float = 1e-10,
    max_iter: int = 100,
    start: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Logistic Bradley-Terry with battle covariates; returns (theta centred, beta, converged).

    Parameters
    ----------
    a, b : int arrays (n,)
    score : float array (n,)
        1 if ``a`` won, 0 if ``b`` won, 0.5 for a tie.
    z : float array (n, k)
        Covariate differences of the battles.
    n_items : int
    weight : float array (n,), optional
    start : (theta, beta), optional
        Starting point of Newton's method (default zeros).

    Notes
    -----
    Negative log-likelihood ``sum_n w_n [log(1 + e^{eta_n}) - y_n eta_n]``, ``eta_n = theta_a -
    theta_b + beta^T z_n``; Newton steps with the translation direction of ``theta`` removed by
    adding ``1 1^T`` to its Hessian block. Validated against statsmodels' binomial GLM in
    tests/test_pairwise_style_control.py.
    """
    s = int(n_items)
    z = np.asarray(z, dtype=np.float64).reshape(len(a), -1)
    k = z.shape[1]
    w = np.ones(len(a)) if weight is None else np.asarray(weight, dtype=np.float64)
    theta = np.zeros(s) if start is None else np.array(start[0], dtype=np.float64)
    beta = np.zeros(k) if start is None else np.array(start[1], dtype=np.float64)
    converged = False
    for _ in range(max_iter):
        eta = theta[a] - theta[b] + z @ beta
        p = 1.0 / (1.0 + np.exp(-eta))
        r = w * (p - score)
        v = w * p * (1 - p)
        g_t = np.bincount(a, r, s) - np.bincount(b, r, s)
        g_b = z.T @ r
        h = np.zeros((s + k, s + k))
        hv = np.bincount(a * s + b, v, s * s).reshape(s, s)
        h_tt = -(hv + hv.T)
        h_tt[np.diag_indices(s)] = np.bincount(a, v, s) + np.bincount(b, v, s)
        h[:s, :s] = h_tt + 1.0
        h_tb = np.zeros((s, k))
        for c in range(k):  # one bincount per covariate
            h_tb[:, c] = np.bincount(a, v * z[:, c], s) - np.bincount(b, v * z[:, c], s)
        h[:s, s:] = h_tb
        h[s:, :s] = h_tb.T
        h[s:, s:] = (z * v[:, None]).T @ z
        try:
            step = -np.linalg.solve(h, np.concatenate([g_t, g_b]))
        except np.linalg.LinAlgError:  # a singular Hessian: no (unique) estimate
            break
        if not np.isfinite(step).all():
            break
        theta += step[:s]
        beta += step[s:]
        if np.max(np.abs(step)) < tol:
            converged = True
            break
    return theta - theta.mean(), beta, converged


def _bootstrap(a, b, score, z, d, s, weight, prompts, start, *, n_resamples, random_state,
               show_progress):
    """Prompt-bootstrap refits: (B, S) controlled strengths and (B, k) coefficients (per SD
    of each resample's covariate differences); NaN rows where a refit does not converge."""
    from storyeval._progress import progress_bar
    from storyeval.pairwise.arena import _resample_weights

    rng = np.random.default_rng(random_state)
    n_p = int(prompts.max()) + 1
    thetas = np.full((n_resamples, s), np.nan)
    betas = np.full((n_resamples, z.shape[1]), np.nan)
    chunk = max(1, min(n_resamples, 2**22 // max(n_p, 1)))
    sd_full = d.std(axis=0)
    with progress_bar(total=n_resamples, desc="bootstrap", unit="resample",
                      show=show_progress) as bar:
        for lo in range(0, n_resamples, chunk):
            mult = _resample_weights(rng, n_p, min(chunk, n_resamples - lo))
            for r, m in enumerate(mult):
                w = weight * m[prompts]
                th, beta, conv = fit_controlled(a, b, score, z, s, weight=w, start=start)
                if conv:
                    mean = (w @ d) / w.sum()
                    sd = np.sqrt((w @ (d - mean) ** 2) / w.sum())
                    thetas[lo + r], betas[lo + r] = th, beta * sd / sd_full
                bar.update(1)
    return thetas, betas


def _summary(draws: np.ndarray, confidence_level: float) -> tuple[np.ndarray, ...]:
    """Percentile interval and standard deviation of the valid bootstrap rows."""
    good = draws[np.isfinite(draws).all(axis=1)]
    k = draws.shape[1]
    if not len(good):
        nan = np.full(k, np.nan)
        return nan, nan, nan
    a = (1 - confidence_level) / 2
    low, high = np.quantile(good, [a, 1 - a], axis=0)
    se = good.std(axis=0, ddof=1) if len(good) > 1 else np.full(k, np.nan)
    return low, high, se


def controlled_strengths(
    verdicts: pd.DataFrame,
    control: list[str],
    *,
    dimension: str | None = None,
    by: str = "system",
    judge: str | None = None,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
    show_progress: bool | None = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Uncontrolled and covariate-controlled Bradley-Terry strengths side by side, the
    controlled ones with prompt-bootstrap intervals.

    Parameters
    ----------
    verdicts : DataFrame
        A verdict table with, for every covariate ``c`` in ``control``, numeric columns
        ``c_a`` and ``c_b`` (the covariate of ``story_a`` and ``story_b``, e.g. ``length_a``).
    control : list of str
        Covariate names.
    dimension, by, judge
        As in `storyeval.pairwise.winmatrix.win_matrix`.
    n_resamples : int, default 1000
        Bootstrap resamples of prompts (0: point estimates only).
    confidence_level : float, default 0.95
        Two-sided percentile intervals.
    random_state : int or Generator, default 0
        Seed of the bootstrap.
    show_progress : bool, optional
        A progress bar of the bootstrap on standard error (None: on a terminal only).

    Returns
    -------
    (DataFrame, DataFrame)
        The table ``item, log_strength, rank, log_strength_controlled, ci_low_controlled,
        ci_high_controlled, se_controlled, rank_controlled, rank_change, ties_model, control,
        n_resamples, n_resamples_valid, seed`` (strongest controlled first) and the
        coefficients ``covariate, beta, se, ci_low, ci_high, sd_difference`` (``beta``:
        log-odds per standard deviation of the covariate difference; positive: the story with
        more of it wins more often). Ties count half a win each. ``se_*``: standard deviation
        of the bootstrap estimates; intervals: percentile intervals of the prompt bootstrap
        (see the module docstring); resamples whose refit does not converge (separated
        data) are left out (``n_resamples_valid``).

    Notes
    -----
    Coverage of the intervals in simulation: benchmarks/bench_controlled_coverage.py.
    """
    from storyeval.pairwise.leaderboard import battle_arrays
    from storyeval.pairwise.winmatrix import select_verdicts

    if not control:
        raise InputError("control: name at least one covariate")
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 0:
        raise InputError(f"n_resamples must be an integer >= 0, got {n_resamples!r}")
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    v = select_verdicts(verdicts, dimension=dimension, judge=judge)
    items, a, b, outcome, weight, prompts = battle_arrays(v, by)
    zs, sds, ds = [], [], []
    for c in control:
        cols = [f"{c}_a", f"{c}_b"]
        missing = [x for x in cols if x not in v.columns]
        if missing:
            raise InputError(f"control {c!r}: the verdicts have no column(s) {missing}")
        x = v[cols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(x).all(axis=1)
        if bad.any():
            raise InputError(f"control {c!r}: non-numeric or missing value at row "
                             f"{v.index[int(np.argmax(bad))]}")
        d = x[:, 0] - x[:, 1]
        sd = float(d.std())
        if sd == 0:
            raise InputError(f"control {c!r}: the covariate difference is constant")
        zs.append(d / sd)
        sds.append(sd)
        ds.append(d)
    z = np.stack(zs, axis=1)
    score = np.where(outcome == 0, 1.0, np.where(outcome == 1, 0.0, 0.5))
    s = len(items)
    thetas = np.full((n_resamples, s), np.nan)
    betas = np.full((n_resamples, len(control)), np.nan)
    with _one_blas_thread():  # S x S solves: threaded BLAS only waits (1000x under load)
        th0, _, _ = fit_controlled(a, b, score, np.zeros((len(a), 0)), s, weight=weight)
        th1, beta, conv = fit_controlled(a, b, score, z, s, weight=weight)
        if not conv:
            raise InputError("the controlled fit did not converge (separated data?)")
        if n_resamples:
            thetas, betas = _bootstrap(a, b, score, z, np.stack(ds, axis=1), s, weight,
                                       prompts, (th1, beta), n_resamples=n_resamples,
                                       random_state=random_state, show_progress=show_progress)
    t_low, t_high, t_se = _summary(thetas, confidence_level)
    b_low, b_high, b_se = _summary(betas, confidence_level)
    r0 = pd.Series(th0).rank(ascending=False, method="min").astype(int).to_numpy()
    r1 = pd.Series(th1).rank(ascending=False, method="min").astype(int).to_numpy()
    table = pd.DataFrame({"item": items, "log_strength": th0, "rank": r0,
                          "log_strength_controlled": th1, "ci_low_controlled": t_low,
                          "ci_high_controlled": t_high, "se_controlled": t_se,
                          "rank_controlled": r1, "rank_change": r0 - r1, "ties_model": "half",
                          "control": ",".join(control), "n_resamples": n_resamples,
                          "n_resamples_valid": int(np.isfinite(thetas).all(axis=1).sum()),
                          "seed": random_state if isinstance(random_state, (int, np.integer))
                          else None})
    table = table.sort_values("log_strength_controlled", ascending=False,
                              kind="stable").reset_index(drop=True)
    coef = pd.DataFrame({"covariate": control, "beta": beta, "se": b_se, "ci_low": b_low,
                         "ci_high": b_high, "sd_difference": sds})
    return table, coef
