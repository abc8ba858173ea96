"""Accuracy of the best of several judging templates, accounting for the choice (the winner's
curse): LitBench picked the best of 5-6 prompt templates on its data and reported its accuracy.

Two remedies:

* ``"max-t"`` (default): simultaneous intervals for all K templates from the cluster bootstrap
  of the largest studentised deviation, max_k |a*_k - a_k| / se_k; the chosen template's
  interval is a_best +- q se_best with q that statistic's quantile. It holds its level
  whichever template is chosen, and uses all the data.
* ``"split"``: choose on a validation share of the clusters (seeded), report the chosen
  template's cluster-t interval on the remaining clusters.

Which is the default was decided by `simulate_selection` (docs: "LitBench"): with 5 templates of
equal true accuracy, the naive interval of the best covers its accuracy far less often than
its nominal level, max-t covers it at or above the level, and split does too with wider
intervals (half the data).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError
from storyeval.resample.clusters import bootstrap_weights, cluster_codes, cluster_sums, rng_from

__all__ = ["SELECTION_METHODS", "selected_accuracy", "simulate_selection"]

SELECTION_METHODS = ("max-t", "split", "naive")


def _cr1(s: np.ndarray, codes: np.ndarray, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy and CR1 standard error of each column of s (n, K)."""
    n = s.shape[0]
    a = s.mean(axis=0)
    tot = cluster_sums(s, codes, g)
    cnt = np.bincount(codes, minlength=g).astype(np.float64)
    resid = tot - cnt[:, None] * a[None, :]
    se = np.sqrt(g / (g - 1) * (resid ** 2).sum(axis=0)) / n if g > 1 else np.full_like(a,
                                                                                         np.nan)
    return a, se


def selected_accuracy(
    correct: np.ndarray,
    clusters: np.ndarray | Sequence,
    *,
    names: Sequence[str] | None = None,
    method: str = "max-t",
    chance: float = 0.5,
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    validation_share: float = 0.5,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """The best template's accuracy with an interval that accounts for choosing it.

    Parameters
    ----------
    correct : (n, K) array
        Correctness (1/0, or a tie credit) of template k's verdict on unit i (the same units
        for every template).
    clusters : (n,) array
        Cluster of each unit (the prompt, or the pair when both orders are units).
    names : sequence of str, optional
        Template names (default ``template 1..K``).
    method : {"max-t", "split", "naive"}, default "max-t"
        See the module docstring; ``"naive"`` is the uncorrected cluster-t interval of the
        best template (for comparison).
    chance : float
        Null accuracy of the two-sided test.
    confidence_level, n_resamples, random_state
        Interval level; bootstrap draws (max-t) and the seed of the bootstrap or the split.
    validation_share : float
        Share of the clusters used to choose (``"split"``).

    Returns
    -------
    DataFrame
        One row per template: ``template, accuracy, se, selected`` and, on the chosen
        template's row, ``ci_low, ci_high, pvalue, method, n_units, n_clusters,
        critical_value, seed``. With ``"split"``, ``accuracy`` is measured on the test
        clusters and ``accuracy_validation`` beside it.

    Notes
    -----
    max-t: a_k and se_k (CR1, as `storyeval.pairwise.inference.cluster_t_accuracy`); B
    cluster-bootstrap draws give T*_b = max_k |a*_bk - a_k| / se_k; q = the level-quantile of
    T*; interval a_best +- q se_best; p-value (1 + #{T*_b >= |a_best - chance| / se_best}) /
    (1 + B), single-step adjusted over the K templates. Coverage measured by
    `simulate_selection`.
    """
    s = np.asarray(correct, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] < 2 or s.shape[1] < 1:
        raise InputError("correct: an (n units, K templates) array with n >= 2")
    if method not in SELECTION_METHODS:
        raise InputError(f"method: one of {SELECTION_METHODS}, got {method!r}")
    if not 0 < float(validation_share) < 1:
        raise InputError(f"validation_share: in (0, 1), got {validation_share!r}")
    k = s.shape[1]
    names = [f"template {j + 1}" for j in range(k)] if names is None else list(names)
    if len(names) != k:
        raise InputError(f"names: {len(names)} names for {k} templates")
    codes, g = cluster_codes(np.asarray(clusters), s.shape[0])
    rng = rng_from(random_state)
    a, se = _cr1(s, codes, g)
    out = pd.DataFrame({"template": names, "accuracy": a, "se": se})
    if method == "split":
        return _split(s, codes, g, out, rng, chance, confidence_level, validation_share)
    best = int(np.argmax(a))
    if method == "naive":
        q = float(stats.t.ppf(0.5 + confidence_level / 2, g - 1))
        t = abs(a[best] - chance) / se[best]
        p = float(2 * stats.t.sf(t, g - 1))
    else:
        w = bootstrap_weights(g, int(n_resamples), rng)
        tot = cluster_sums(s, codes, g)
        cnt = np.bincount(codes, minlength=g).astype(np.float64)
        draws = (w @ tot) / (w @ cnt)[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            tmax = np.nanmax(np.abs(draws - a) / se, axis=1)
        q = float(np.quantile(tmax, confidence_level))
        obs = abs(a[best] - chance) / se[best]
        p = float((1 + np.sum(tmax >= obs)) / (1 + len(tmax)))
    return _mark(out, best, a[best] - q * se[best], a[best] + q * se[best], p, method,
                 s.shape[0], g, q)


def _mark(out, best, low, high, p, method, n, g, q):
    out["selected"] = np.arange(len(out)) == best
    for col, val in (("ci_low", low), ("ci_high", high), ("pvalue", min(1.0, p)),
                     ("critical_value", q)):
        out[col] = np.where(out["selected"], val, np.nan)
    out["method"] = np.where(out["selected"], method, "")
    out["n_units"], out["n_clusters"] = n, g
    return out


def _split(s, codes, g, out, rng, chance, level, share):
    n_val = min(max(1, int(round(share * g))), g - 2)
    if n_val < 1:
        raise InputError(f"split: {g} clusters are too few to choose on some and test on "
                         "at least two others")
    val_clusters = rng.permutation(g)[:n_val]
    val = np.isin(codes, val_clusters)
    a_val = s[val].mean(axis=0)
    best = int(np.argmax(a_val))
    test_codes, g_test = cluster_codes(codes[~val], int((~val).sum()))
    a_test, se_test = _cr1(s[~val], test_codes, g_test)
    q = float(stats.t.ppf(0.5 + level / 2, g_test - 1))
    t = abs(a_test[best] - chance) / se_test[best]
    p = float(2 * stats.t.sf(t, g_test - 1))
    out = out.assign(accuracy=a_test, se=se_test, accuracy_validation=a_val)
    return _mark(out, best, a_test[best] - q * se_test[best], a_test[best] + q * se_test[best],
                 p, "split", int((~val).sum()), g_test, q)


def simulate_selection(
    *,
    n_templates: int = 5,
    n_clusters: int = 60,
    per_cluster: int = 4,
    accuracy: float = 0.6,
    cluster_sd: float = 0.8,
    n_sims: int = 400,
    confidence_level: float = 0.95,
    n_resamples: int = 500,
    seed: int = 0,
) -> pd.DataFrame:
    """Coverage and width of the chosen template's interval, for templates of equal true
    accuracy (the worst case of the winner's curse).

    Unit i of cluster g is judged correctly by template k with probability
    expit(logit(accuracy) + u_g + e_ik), u_g ~ N(0, cluster_sd^2) shared by the templates and
    e_ik ~ N(0, 0.5^2), calibrated so that every template's marginal accuracy is ``accuracy``
    (by a large Monte Carlo draw of the same model). Returns, per method: ``coverage`` (share
    of data sets whose interval holds the chosen template's true accuracy), ``mean_width``,
    ``bias`` (mean estimate minus the truth), the settings and the seed.
    """
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    n = n_clusters * per_cluster
    # the intercept whose marginal accuracy is `accuracy` (the random effects shrink it)
    z = rng.normal(size=200_000) * math.sqrt(cluster_sd ** 2 + 0.25)
    lo, hi = -10.0, 10.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expit(mid + z).mean() < accuracy else (lo, mid)
    b0 = (lo + hi) / 2
    truth = float(expit(b0 + z).mean())
    rows: dict[str, list[tuple[bool, float, float]]] = {m: [] for m in SELECTION_METHODS}
    clusters = np.repeat(np.arange(n_clusters), per_cluster)
    for sim in range(n_sims):
        u = rng.normal(0, cluster_sd, n_clusters)[clusters]
        eta = b0 + u[:, None] + rng.normal(0, 0.5, (n, n_templates))
        s = (rng.random((n, n_templates)) < expit(eta)).astype(float)
        for m in SELECTION_METHODS:
            r = selected_accuracy(s, clusters, method=m, confidence_level=confidence_level,
                                  n_resamples=n_resamples, random_state=seed * 100_003 + sim)
            row = r[r["selected"]].iloc[0]
            rows[m].append((row["ci_low"] <= truth <= row["ci_high"],
                            row["ci_high"] - row["ci_low"], row["accuracy"] - truth))
    return pd.DataFrame([{"method": m, "coverage": float(np.mean([x[0] for x in v])),
                          "mean_width": float(np.mean([x[1] for x in v])),
                          "bias": float(np.mean([x[2] for x in v])),
                          "n_templates": n_templates, "n_clusters": n_clusters,
                          "per_cluster": per_cluster, "accuracy": truth,
                          "n_sims": n_sims, "confidence_level": confidence_level,
                          "seed": seed} for m, v in rows.items()])
