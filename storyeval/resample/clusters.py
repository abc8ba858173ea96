"""Vectorised resampling kernels shared by the pairwise inference modules: cluster sums, cluster
bootstrap weights and cluster sign flips (all as matrix products, no loop over pairs)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp

from storyeval.exceptions import (
    FewClustersWarning,
    InputError,
    UndefinedStatisticWarning,
    user_stacklevel,
)
from storyeval.resample._common import check_confidence  # noqa: F401 (re-exported)

#: Below this many clusters a cluster bootstrap or sign-flip test is unreliable (warned).
MIN_CLUSTERS = 20


def rng_from(random_state: int | np.random.Generator | None) -> np.random.Generator:
    """A NumPy generator from a seed, a generator or None (fresh entropy)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


def check_resamples(n_resamples: int) -> int:
    if not (isinstance(n_resamples, (int, np.integer)) and n_resamples >= 1):
        raise InputError(f"n_resamples must be a positive integer, got {n_resamples!r}")
    return int(n_resamples)


def cluster_codes(clusters: np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """Integer codes 0..C-1 of the cluster labels (every unit its own cluster when None)."""
    if clusters is None:
        return np.arange(n), n
    labels = np.asarray(clusters)
    if labels.shape != (n,):
        raise InputError(f"clusters must have one label per unit ({n}), got shape "
                         f"{labels.shape}")
    codes, uniques = _factorize(labels)
    return codes, len(uniques)


def _factorize(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import pandas as pd

    codes, uniques = pd.factorize(pd.Series(labels), sort=False)
    if (codes < 0).any():
        raise InputError(f"clusters has a missing label at unit {int(np.argmax(codes < 0))}")
    return codes.astype(np.int64), np.asarray(uniques)


def cluster_sums(values: np.ndarray, codes: np.ndarray, n_clusters: int) -> np.ndarray:
    """Sum of the rows of ``values`` (n, k) within each cluster: (C, k), as one sparse product."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    onehot = sp.csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))),
                           shape=(n_clusters, len(codes)))
    return np.asarray(onehot @ values)


def bootstrap_weights(n_clusters: int, n_resamples: int, rng: np.random.Generator
                      ) -> np.ndarray:
    """(B, C) multiplicities of a cluster bootstrap: each row draws C clusters with
    replacement; ``weights @ cluster_sums`` are the resampled totals."""
    draws = rng.integers(0, n_clusters, size=(n_resamples, n_clusters))
    # counting the draws of each row at once: offset row b by b * C, one bincount
    flat = (draws + n_clusters * np.arange(n_resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=n_resamples * n_clusters)
    return counts.reshape(n_resamples, n_clusters).astype(np.float64)


def sign_flips(n_clusters: int, n_resamples: int, rng: np.random.Generator
               ) -> tuple[np.ndarray, bool]:
    """(B, C) random signs of a cluster sign-flip permutation test, or all 2^C sign vectors
    when that is no more than ``n_resamples`` (then the test is exact); and whether exact."""
    if n_clusters <= 20 and 2 ** n_clusters <= n_resamples:
        grid = (np.arange(2 ** n_clusters)[:, None] >> np.arange(n_clusters)) & 1
        return 1.0 - 2.0 * grid, True
    return 1.0 - 2.0 * rng.integers(0, 2, size=(n_resamples, n_clusters)), False


def sign_flip_ratio_interval(sums: np.ndarray, signs: np.ndarray, exact: bool,
                             confidence_level: float) -> tuple[float, float]:
    """The interval that inverts the two-sided cluster sign-flip test of a ratio estimate.

    ``sums`` (C, 2) holds each cluster's sum of the differences ``D_c`` and its units
    ``n_c``; the estimate is ``d = sum D_c / sum n_c``. The test of ``H0: delta`` flips the
    signs of the centred cluster sums ``D_c - delta n_c``: a sign vector is as extreme as the
    data when ``|sum s_c (D_c - delta n_c)| >= |sum (D_c - delta n_c)|``, which holds exactly
    for ``delta`` between the ratio of the flipped clusters and the ratio of the others (the
    two roots of a downward parabola in ``delta``; a vector that flips all or none is always
    extreme). Both ratios bracket ``d`` (a weighted mean of them), so the p-value falls as
    ``delta`` leaves ``d`` and ``{delta: p(delta) >= 1 - confidence_level}`` is the interval
    returned: from the k-th smallest lower end to the k-th largest upper end, k the fewest
    extreme vectors with p >= alpha (p = k / B when ``exact``, else (1 + k) / (1 + B), as the
    test computes it). At ``delta = 0`` it is the test at 0, so the interval excludes 0
    exactly when that test's p < alpha.
    """
    d_sum, n_sum = float(sums[:, 0].sum()), float(sums[:, 1].sum())
    a_s, b_s = signs @ sums[:, 0], signs @ sums[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        flipped = (d_sum - a_s) / (n_sum - b_s)  # ratio of the clusters with sign -1
        kept = (d_sum + a_s) / (n_sum + b_s)  # ratio of the clusters with sign +1
    always = ~(np.isfinite(flipped) & np.isfinite(kept))  # flips all clusters or none
    low = np.where(always, -np.inf, np.minimum(flipped, kept))
    high = np.where(always, np.inf, np.maximum(flipped, kept))
    total = len(signs)
    counts = np.arange(total + 1)
    p = counts / total if exact else (1 + counts) / (1 + total)
    # accepted where the test does not reject (p < alpha rejects); p(total) = 1: always found
    k = int(np.argmax(~(p < 1 - confidence_level)))
    if k == 0:
        return -math.inf, math.inf
    return float(np.sort(low)[k - 1]), float(-np.sort(-high)[k - 1])


def percentile_interval(draws: np.ndarray, confidence_level: float) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    """Percentile interval of each column of ``draws`` (B, k), ignoring NaN draws."""
    tail = (1 - confidence_level) / 2
    with np.errstate(all="ignore"):
        low, high = np.nanquantile(draws, [tail, 1 - tail], axis=0)
    return low, high


#: Why a cluster bootstrap of one cluster gives no interval and no p-value.
ONE_CLUSTER_REASON = ("a single cluster: a cluster bootstrap has nothing to resample (every "
                      "resample is the data itself), so it gives no interval and no p-value")


def single_cluster(n_clusters: int, what: str) -> bool:
    """Whether a cluster resampling has fewer than two clusters; then it warns
    (`UndefinedStatisticWarning`, ``ONE_CLUSTER_REASON``) and the caller returns NaN with that
    reason instead of a zero-width interval and the smallest possible p-value."""
    if n_clusters >= 2:
        return False
    warnings.warn(f"{what}: {ONE_CLUSTER_REASON}", UndefinedStatisticWarning, stacklevel=user_stacklevel())
    return True


def warn_few_clusters(n_clusters: int, what: str) -> None:
    """Warn that a cluster resampling has fewer than `MIN_CLUSTERS` clusters."""
    if n_clusters < MIN_CLUSTERS:
        warnings.warn(f"{what}: only {n_clusters} clusters; bootstrap intervals and "
                      "bootstrap p-values over fewer than 20 clusters are unreliable (too "
                      "narrow, too small); the sign-flip permutation test stays valid",
                      FewClustersWarning, stacklevel=3)
