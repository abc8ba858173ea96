"""Coefficients and two-sided comparison tests over a batch of simulated replications (the
replications are a leading axis), for the power planner `storyeval.power.planner`."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from storyeval.exceptions import InputError


def _coef(x: np.ndarray, y: np.ndarray, coef: str) -> np.ndarray:
    """Coefficient along the last axis, batched (tau-b with ties)."""
    from storyeval.compare.dependent import _untied, kendall_rows

    if coef == "kendall_b":
        r = kendall_rows(x, y)
        with np.errstate(invalid="ignore", divide="ignore"):
            return r.sum(-1) / np.sqrt(_untied(x).sum(-1) * _untied(y).sum(-1))
    if coef == "spearman":
        x, y = stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1)
    x = x - x.mean(-1, keepdims=True)
    y = y - y.mean(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (x * y).sum(-1) / np.sqrt((x * x).sum(-1) * (y * y).sum(-1))


def _pvalues(test: str, h: np.ndarray, a: np.ndarray, b: np.ndarray, coef: str) -> np.ndarray:
    """Two-sided p-values of an analytic test on items along the last axis."""
    from storyeval.compare.dependent import jackknife_diff, normal_test, ustat_diff
    from storyeval.compare.williams import williams_test

    n = h.shape[-1]
    if test == "ustat":
        return normal_test(ustat_diff(h, a, b))[1]
    if test == "jackknife":
        return normal_test(jackknife_diff(h, a, b, coef))[1]
    if test == "williams":
        r12, r13, r23 = _coef(h, a, coef), _coef(h, b, coef), _coef(a, b, coef)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return williams_test(r12, r13, r23, n, alternative="two-sided", direction="fixed",
                                 sign_convention="raw").pvalue
    raise InputError(f"unknown test {test!r}")  # pragma: no cover - checked before


def _means_coef(x: np.ndarray, y: np.ndarray, coef: str) -> np.ndarray:
    """`_coef` of continuous system means (no ties: tau-b is tau-a), Kendall over the
    S (S - 1) / 2 pairs directly (few systems)."""
    if coef != "kendall_b":
        return _coef(x, y, coef)
    i, j = np.triu_indices(x.shape[-1], 1)
    sx = np.sign(x[..., j] - x[..., i])
    sy = np.sign(y[..., j] - y[..., i])
    return np.einsum("...k,...k->...", np.broadcast_to(sx, np.broadcast_shapes(sx.shape, sy.shape)),
                     sy) / len(i)


def _perm_random(h, a, b, coef, n_permutations, rng, ties: str = "random") -> np.ndarray:
    """``permutation-random`` on story cubes (reps, S, P): swap a/b (z-scored) of whole prompts,
    ties with the observed difference broken at random (`compare.system_permutation`);
    ``ties="mid"``: ``permutation-midp``: the swaps tied with the observed |delta| count one
    half (the mid-p value), as `meta`'s test does (nothing ordered by another coefficient)."""
    P = h.shape[-1]
    za = (a - a.mean((1, 2), keepdims=True)) / a.std((1, 2), keepdims=True)
    zb = (b - b.mean((1, 2), keepdims=True)) / b.std((1, 2), keepdims=True)
    H, Za, Zb = h.mean(-1), za.mean(-1), zb.mean(-1)
    m = (rng.random((h.shape[0], n_permutations, P)) < 0.5).astype(float)
    shift = np.einsum("rnp,rsp->rns", m, zb - za) / P
    Hn = H[:, None]
    dp = _means_coef(Hn, Za[:, None] + shift, coef) - _means_coef(Hn, Zb[:, None] - shift, coef)
    obs = np.abs(_means_coef(H, Za, coef) - _means_coef(H, Zb, coef))[:, None]
    more = np.abs(dp) > obs + 1e-12
    tied = np.abs(np.abs(dp) - obs) <= 1e-12
    more, tied = more.sum(-1), tied.sum(-1)
    u = 0.5 if ties == "mid" else rng.random(h.shape[0])
    return (more + u * (1 + tied)) / (n_permutations + 1)
