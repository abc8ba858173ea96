"""Statistics of LitBench's human study (paper 002, section 6): the pooled per-vote accuracy of a
judge with votes clustered by pair, and which features of a judge's explanations go with a
correct verdict.

Both use the cluster-robust (CR1) covariance of an OLS fit with Student's t on G - 1 degrees of
freedom (G clusters), statsmodels' ``OLS(...).fit(cov_type="cluster", use_t=True)``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError
from storyeval.resample.clusters import cluster_codes, cluster_sums

__all__ = ["cluster_ols", "explanation_features", "keyword_indicators", "pooled_vote_accuracy"]


def cluster_ols(X: np.ndarray, y: np.ndarray, clusters: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, int]:
    """OLS coefficients and their cluster-robust (CR1) covariance.

    ``V = G / (G - 1) (n - 1) / (n - K) (X'X)^-1 [sum_g X_g' u_g u_g' X_g] (X'X)^-1`` with
    residuals u, n rows, K columns and G clusters (statsmodels' ``cov_type="cluster"``
    default correction). Returns ``(beta, V, G)``; raises for a rank-deficient X."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, k = X.shape
    codes, g = cluster_codes(clusters, n)
    xtx = X.T @ X
    if np.linalg.matrix_rank(xtx) < k:
        raise InputError("the regression is rank-deficient (a feature present in every "
                         "explanation or in none, or two identical features)")
    inv = np.linalg.inv(xtx)
    beta = inv @ (X.T @ y)
    scores = cluster_sums(X * (y - X @ beta)[:, None], codes, g)  # (G, K): X_g' u_g
    meat = scores.T @ scores
    factor = g / (g - 1) * (n - 1) / (n - k) if g > 1 and n > k else math.nan
    return beta, factor * inv @ meat @ inv, g


def pooled_vote_accuracy(
    correct: np.ndarray | Sequence[float],
    pairs: np.ndarray | Sequence,
    *,
    chance: float = 0.5,
    confidence_level: float = 0.95,
):
    """Accuracy pooled over every vote, with votes clustered by the pair they judge.

    Parameters
    ----------
    correct : (n,) array
        1 when a vote agrees with the reference verdict (LitBench: the upvote majority), 0
        when not (a tie credit in between is allowed).
    pairs : (n,) array
        The pair each vote judges (LitBench's online study: 10-13 votes per pair).
    chance, confidence_level
        Null accuracy of the two-sided test, and the interval's level.

    Returns
    -------
    AccuracyInference
        ``statistic`` = k/n over all votes, the cluster-robust t interval and p-value with
        G - 1 df (`storyeval.pairwise.inference.cluster_t_accuracy`).

    Notes
    -----
    Votes on one pair share the pair's difficulty, so they are not independent: a binomial
    interval over the votes would be too narrow by about sqrt(1 + (m - 1) rho) for m votes
    per pair with intra-pair correlation rho. The estimate is the intercept of the OLS fit of
    the indicator on a constant; its CR1 variance is G / (G - 1) sum_g (S_g - a N_g)^2 / n^2.

    Validated against statsmodels ``OLS(correct, ones).fit(cov_type="cluster",
    cov_kwds={"groups": pairs}, use_t=True)`` (tests/test_pairwise_human_study.py).
    """
    from storyeval.pairwise.inference import accuracy_inference

    s = np.asarray(correct, dtype=np.float64)
    if s.ndim != 1 or not len(s) or not np.isfinite(s).all() or ((s < 0) | (s > 1)).any():
        raise InputError("correct: a non-empty 1-D array of values in [0, 1]")
    return accuracy_inference(s, clusters=np.asarray(pairs), method="cluster-t", chance=chance,
                              confidence_level=confidence_level)


def keyword_indicators(texts: Sequence[str], keywords: Mapping[str, Sequence[str]]
                       ) -> pd.DataFrame:
    """One 0/1 column per feature: whether the text holds any of its keywords (whole words,
    case-insensitive; a keyword may be a phrase)."""
    series = pd.Series(list(texts), dtype="string").fillna("")
    out = {}
    for name, words in keywords.items():
        if not words:
            raise InputError(f"keywords: feature {name!r} has no keyword")
        pattern = r"\b(?:" + "|".join(re.escape(w.strip()) for w in words) + r")\b"
        out[name] = series.str.contains(pattern, case=False, regex=True).astype(int).to_numpy()
    return pd.DataFrame(out)


def explanation_features(
    correct: np.ndarray | Sequence[float],
    features: pd.DataFrame,
    clusters: np.ndarray | Sequence,
    *,
    model: str = "marginal",
    confidence_level: float = 0.95,
    adjust: str = "bh",
) -> pd.DataFrame:
    """Which explanation features go with a correct verdict: a regression of correctness on
    each feature's indicator, cluster-robust intervals, and BH-adjusted p-values over the
    features.

    Parameters
    ----------
    correct : (n,) array
        1 for a correct verdict, 0 for a wrong one.
    features : DataFrame
        n rows, one 0/1 column per feature (`keyword_indicators`, or your own labels).
    clusters : (n,) array
        Cluster of each verdict (the pair, or the prompt).
    model : {"marginal", "joint"}, default "marginal"
        ``"marginal"``: one regression per feature, correct ~ 1 + x_f, whose slope is the
        difference in accuracy between verdicts whose explanation has the feature and those
        without (LitBench's "+14.8% for discusses plot"); ``"joint"``: one regression on all
        features at once (each slope adjusted for the others).
    confidence_level : float
    adjust : {"bh", "by", "bonferroni", "holm", "none"}, default "bh"
        Multiplicity adjustment over the features (the family: every feature of this call).

    Returns
    -------
    DataFrame
        One row per feature: ``feature, n_with, accuracy_with, accuracy_without, effect,
        se, ci_low, ci_high, t, df, pvalue, p_adjusted, adjust, model, n_clusters``;
        ``effect`` is the slope (a difference of accuracies for the marginal model).

    Notes
    -----
    Slope b_f with CR1 standard error (`cluster_ols`), t = b_f / se against Student's t with
    G - 1 df (two-sided), interval b_f +- t_{(1+level)/2, G-1} se. Validated against
    statsmodels ``OLS(...).fit(cov_type="cluster", use_t=True)`` and
    ``multipletests(method="fdr_bh")`` (tests/test_pairwise_human_study.py).
    """
    from storyeval._multitest import adjust_pvalues

    y = np.asarray(correct, dtype=np.float64)
    F = features.to_numpy(dtype=np.float64)
    if F.shape[0] != len(y):
        raise InputError(f"features has {F.shape[0]} rows for {len(y)} verdicts")
    if not np.isin(F, (0.0, 1.0)).all():
        raise InputError("features: every column must hold 0/1 indicators")
    if model not in ("marginal", "joint"):
        raise InputError(f"model: 'marginal' or 'joint', got {model!r}")
    cl = np.asarray(clusters)
    names = [str(c) for c in features.columns]
    ones = np.ones((len(y), 1))
    if model == "joint":
        beta, V, g = cluster_ols(np.hstack([ones, F]), y, cl)
        est, se = beta[1:], np.sqrt(np.diag(V)[1:])
    else:
        est, se = np.empty(len(names)), np.empty(len(names))
        g = 0
        for j in range(len(names)):  # one small regression per feature (not per verdict)
            beta, V, g = cluster_ols(np.hstack([ones, F[:, [j]]]), y, cl)
            est[j], se[j] = beta[1], math.sqrt(V[1, 1]) if V[1, 1] >= 0 else math.nan
    df = g - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        t = est / se
    p = 2 * stats.t.sf(np.abs(t), df)
    q = stats.t.ppf(0.5 + confidence_level / 2, df)
    with_f = F.sum(axis=0)
    acc_with = (F * y[:, None]).sum(axis=0) / np.maximum(with_f, 1)
    acc_without = ((1 - F) * y[:, None]).sum(axis=0) / np.maximum(len(y) - with_f, 1)
    padj = adjust_pvalues(p, method=adjust)  # type: ignore[arg-type]
    return pd.DataFrame({"feature": names, "n_with": with_f.astype(int),
                         "accuracy_with": acc_with, "accuracy_without": acc_without,
                         "effect": est, "se": se, "ci_low": est - q * se,
                         "ci_high": est + q * se, "t": t, "df": df, "pvalue": p,
                         "p_adjusted": padj, "adjust": adjust, "model": model,
                         "n_clusters": g})
