"""Soft pairwise accuracy (SPA; Thompson et al. 2024, WMT24 metrics task) at the system level.

For every pair of systems (i, j), i before j, a one-sided paired test gives the p-value of
"system i is better than system j" once from the human scores (p_h) and once from the metric
(p_m). SPA is one minus the mean absolute difference of the two p-values over the pairs:

    SPA = 1 - mean_{i<j} |p_h(i, j) - p_m(i, j)|,

so a metric is rewarded for being as (un)certain about each comparison as the humans are, not
only for ordering the system means the same way (hard pairwise accuracy).

`soft_pairwise_accuracy` takes the p-values (any test; equal to mt-metrics-eval's
``pce.compute_one_minus_pce`` given the same matrices). `system_pvalues` computes them with
storyeval's own paired permutation test over prompts: the per-prompt scores of two systems are
swapped on a random half of the prompts (each prompt independently, probability 1/2; the same
swaps for every pair of systems and every measure), and

    p(i > j) = (1 + #{delta* >= delta}) / (1 + N),   delta = mean_i - mean_j over the prompts,

one-sided, N permutations; the observed arrangement counts as one of the N + 1 (the p-value is
never 0). It needs every system to have a story for every prompt (paired data).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["soft_pairwise_accuracy", "soft_pairwise_accuracy_table", "system_pvalues"]

_TOL = 1e-12


def _upper(p: np.ndarray, name: str) -> np.ndarray:
    """The pairs' p-values: a square matrix's strict upper triangle, or a vector as given."""
    p = np.asarray(p, dtype=np.float64)
    if p.ndim == 2:
        if p.shape[0] != p.shape[1]:
            raise InputError(f"{name} must be a square (systems x systems) matrix, got shape "
                             f"{p.shape}")
        p = p[np.triu_indices(p.shape[0], 1)]
    elif p.ndim != 1:
        raise InputError(f"{name} must be a systems x systems matrix or a vector of pairs")
    if np.isnan(p).any():
        raise InputError(f"{name} has a missing p-value (pair {int(np.isnan(p).argmax())} of "
                         "the upper triangle)")
    if ((p < 0) | (p > 1)).any():
        raise InputError(f"{name} has a value outside [0, 1]")
    return p


def soft_pairwise_accuracy(human_p, metric_p) -> float:
    """SPA from one-sided pairwise p-values of humans and metric.

    Parameters
    ----------
    human_p, metric_p : array-like
        Square (systems x systems) matrices whose strict upper triangle holds p(i better than
        j) (the lower triangle and diagonal are ignored), or vectors of the pairs' p-values in
        the same order.

    Examples
    --------
    >>> spa = soft_pairwise_accuracy([[0, 0.01, 0.2], [0, 0, 0.6], [0, 0, 0]],
    ...                              [[0, 0.03, 0.1], [0, 0, 0.9], [0, 0, 0]])
    >>> round(spa, 6)  # 1 - (0.02 + 0.1 + 0.3) / 3
    0.86
    """
    h, m = _upper(human_p, "human_p"), _upper(metric_p, "metric_p")
    if h.shape != m.shape:
        raise InputError(f"human_p and metric_p cover different numbers of pairs ({h.size} vs "
                         f"{m.size})")
    if h.size == 0:
        raise InputError("soft pairwise accuracy needs at least two systems")
    return float(1.0 - np.mean(np.abs(h - m)))


def _grid(wide: pd.DataFrame, columns: list[str]) -> tuple[np.ndarray, list]:
    """(systems, prompts, columns) scores; InputError naming a missing story."""
    names = list(wide.index.names)
    prompt_name = "prompt_id" if "prompt_id" in names else 1
    frame = wide[columns]
    table = frame.unstack(prompt_name)
    systems = list(table.index)
    values = table.to_numpy(dtype=np.float64).reshape(len(systems), len(columns), -1)
    if np.isnan(values).any():
        s, k, p = np.argwhere(np.isnan(values))[0]
        column, prompt = table.columns[k * values.shape[2] + p]
        raise InputError(f"soft pairwise accuracy needs every system scored on every prompt: "
                         f"measure {column!r} has no score for system {systems[s]!r}, "
                         f"prompt {prompt!r}")
    return values.transpose(0, 2, 1), systems  # (S, P, K)


def system_pvalues(
    wide: pd.DataFrame,
    columns: Sequence[str],
    *,
    n_permutations: int = 1000,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[np.ndarray, list]:
    """One-sided paired permutation p-values of "system i better than system j" per column.

    Returns an array (columns, systems, systems) with p(i > j) in the strict upper triangle
    (systems sorted; NaN elsewhere), and the systems. Masks are drawn once
    (``numpy.random.default_rng(random_state).random((n_permutations, prompts)) < 0.5``) and
    shared by every pair and column, so the p-values of humans and metric are paired.
    """
    columns = list(columns)
    if n_permutations < 1:
        raise InputError(f"n_permutations must be >= 1, got {n_permutations}")
    X, systems = _grid(wide, columns)
    S, P, K = X.shape
    if S < 2:
        raise InputError("soft pairwise accuracy needs at least two systems")
    rng = np.random.default_rng(random_state)
    signs = np.where(rng.random((n_permutations, P)) < 0.5, -1.0, 1.0)
    i, j = np.triu_indices(S, 1)
    out = np.full((K, S, S), np.nan)
    for k in range(K):  # one column at a time bounds the memory (N x pairs)
        d = (X[i, :, k] - X[j, :, k]) / P  # (pairs, P): per-prompt differences
        observed = d.sum(axis=1)
        null = signs @ d.T  # (N, pairs): swapping a prompt flips its difference's sign
        scale = np.maximum(1.0, np.abs(observed))
        extreme = (null >= observed - _TOL * scale).sum(axis=0)
        out[k, i, j] = (1.0 + extreme) / (1.0 + n_permutations)
    return out, systems


def soft_pairwise_accuracy_table(
    wide: pd.DataFrame,
    measures: Sequence[str],
    criteria: Sequence[str],
    *,
    n_permutations: int = 1000,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """SPA of every measure against every criterion (system level).

    Columns: ``measure, criterion, level, value, n_systems, n_pairs, n_permutations, test``.
    """
    measures, criteria = list(measures), list(criteria)
    columns = list(dict.fromkeys([*criteria, *measures]))
    pvals, systems = system_pvalues(wide, columns, n_permutations=n_permutations,
                                    random_state=random_state)
    pos = {c: k for k, c in enumerate(columns)}
    S = len(systems)
    rows = [{"measure": m, "criterion": c, "level": "system",
             "value": soft_pairwise_accuracy(pvals[pos[c]], pvals[pos[m]]),
             "n_systems": S, "n_pairs": S * (S - 1) // 2, "n_permutations": n_permutations,
             "test": "paired permutation over prompts, one-sided, p = (1 + #{d* >= d}) / (1 + N)"}
            for c in criteria for m in measures]
    return pd.DataFrame(rows)


def soft_pairwise_accuracy_ci(
    wide: pd.DataFrame,
    measure: str,
    criterion: str,
    *,
    n_resamples: int = 1000,
    n_permutations: int = 1000,
    confidence_level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of SPA, prompts resampled.

    Prompts are drawn with `storyeval.resample.bootstrap.draw_resamples` (``resample_by=
    "prompts"``, all systems kept); in every resample the human and the measure p-values are
    recomputed by the paired permutation test of `system_pvalues` (``n_permutations`` sign
    patterns over the resample's prompts, the same for both and for every resample), and SPA
    from them. One generator, ``numpy.random.default_rng(random_state)``, draws the resamples
    first, then the sign patterns.
    """
    from storyeval.resample._common import check_confidence
    from storyeval.resample.bootstrap import draw_resamples

    alpha = 1.0 - check_confidence(confidence_level)
    if n_permutations < 1:
        raise InputError(f"n_permutations must be >= 1, got {n_permutations}")
    X, _ = _grid(wide, [criterion, measure])  # (S, P, 2)
    S, P, _ = X.shape
    if S < 2:
        raise InputError("soft pairwise accuracy needs at least two systems")
    rng = np.random.default_rng(random_state)
    _, cP = draw_resamples(S, P, n_resamples=n_resamples, resample_by="prompts",
                           random_state=rng)
    signs = np.where(rng.random((n_permutations, P)) < 0.5, -1.0, 1.0)
    i, j = np.triu_indices(S, 1)
    # (P, pairs * 2): prompt-major, so a resample is a row selection and one BLAS product
    diffs = ((X[i] - X[j]) / P).transpose(1, 0, 2).reshape(P, -1)
    spa = np.empty(len(cP))
    for b, counts in enumerate(cP.astype(np.int64)):  # one matrix product per resample
        d = np.repeat(diffs, counts, axis=0)  # the drawn prompts, repeats included
        observed = d.sum(axis=0)  # (pairs * 2,)
        null = signs @ d  # (N, pairs * 2)
        scale = np.maximum(1.0, np.abs(observed))
        extreme = (null >= observed - _TOL * scale).sum(axis=0).reshape(-1, 2)
        p = (1.0 + extreme) / (1.0 + n_permutations)
        spa[b] = 1.0 - np.mean(np.abs(p[:, 0] - p[:, 1]))
    low, high = np.quantile(spa, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)
