"""Covariate ("style") control in the Bradley-Terry fit: strengths with the effect of a per-story
covariate such as length taken out, next to the uncontrolled strengths (Chatbot Arena's style
control).

Model (ties as half a win for each side, as in Arena's style control)::

    P(a beats b) = sigmoid(theta_a - theta_b + beta^T z),   z = (x_a - x_b) / sd(x_a - x_b)

with ``x`` the covariates of the two stories, standardised so that ``beta`` is the log-odds
change per standard deviation of the covariate difference. Fitted by Newton's method on the
battles (gradient and Hessian accumulated with ``bincount``), ``theta`` centred.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

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
    theta = np.zeros(s)
    beta = np.zeros(k)
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
        step = -np.linalg.solve(h, np.concatenate([g_t, g_b]))
        theta += step[:s]
        beta += step[s:]
        if np.max(np.abs(step)) < tol:
            converged = True
            break
    return theta - theta.mean(), beta, converged


def controlled_strengths(
    verdicts: pd.DataFrame,
    control: list[str],
    *,
    dimension: str | None = None,
    by: str = "system",
    judge: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Uncontrolled and covariate-controlled Bradley-Terry strengths side by side.

    Parameters
    ----------
    verdicts : DataFrame
        A verdict table with, for every covariate ``c`` in ``control``, numeric columns
        ``c_a`` and ``c_b`` (the covariate of ``story_a`` and ``story_b``, e.g. ``length_a``).
    control : list of str
        Covariate names.
    dimension, by, judge
        As in `storyeval.pairwise.winmatrix.win_matrix`.

    Returns
    -------
    (DataFrame, DataFrame)
        The table ``item, log_strength, rank, log_strength_controlled, rank_controlled,
        rank_change`` (strongest controlled first) and the coefficients ``covariate, beta,
        sd_difference`` (``beta``: log-odds per standard deviation of the covariate difference;
        positive: the story with more of it wins more often). Ties count half a win each.
    """
    from storyeval.pairwise.leaderboard import battle_arrays
    from storyeval.pairwise.winmatrix import select_verdicts

    if not control:
        raise InputError("control: name at least one covariate")
    v = select_verdicts(verdicts, dimension=dimension, judge=judge)
    items, a, b, outcome, weight, _ = battle_arrays(v, by)
    zs, sds = [], []
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
    z = np.stack(zs, axis=1)
    score = np.where(outcome == 0, 1.0, np.where(outcome == 1, 0.0, 0.5))
    s = len(items)
    th0, _, _ = fit_controlled(a, b, score, np.zeros((len(a), 0)), s, weight=weight)
    th1, beta, conv = fit_controlled(a, b, score, z, s, weight=weight)
    if not conv:
        raise InputError("the controlled fit did not converge (separated data?)")
    r0 = pd.Series(th0).rank(ascending=False, method="min").astype(int).to_numpy()
    r1 = pd.Series(th1).rank(ascending=False, method="min").astype(int).to_numpy()
    table = pd.DataFrame({"item": items, "log_strength": th0, "rank": r0,
                          "log_strength_controlled": th1, "rank_controlled": r1,
                          "rank_change": r0 - r1, "ties_model": "half",
                          "control": ",".join(control)})
    table = table.sort_values("log_strength_controlled", ascending=False,
                              kind="stable").reset_index(drop=True)
    coef = pd.DataFrame({"covariate": control, "beta": beta, "sd_difference": sds})
    return table, coef
