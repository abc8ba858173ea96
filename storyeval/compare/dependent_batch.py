"""U-statistic estimates of many comparisons at once, from one matrix product per criterion.

`storyeval.compare.dependent.ustat_diff_from_rows` linearises ``tau_b(h, a) - tau_b(h, b)`` into
one U-statistic whose per-item kernel row means are ``g = L_a - L_b``, where ``L_x`` depends on
the pair (h, x) only:

``L_x = (r_x - N_x (t_h / T_h + t_x / T_x) / 2) / sqrt(T_h T_x)``

(``r_x``: the Kendall row sums of (h, x); ``t``: untied counts; ``N, T``: their means over the
ordered pairs). Sen's variance of the difference is ``c |L_a - L_b|^2`` with
``c = 4 / (n (n - 1)^3)``, so every comparison of a criterion needs only the Gram matrix
``L L^T`` of that criterion's pairs: ``|L_a|^2 + |L_b|^2 - 2 s_a s_b <L_a, L_b>`` (``s``: the
orientation of each measure, +-1), or, as `meta` runs it, the squared norm of the difference
reduced per comparison (bit-identical whatever other measures are compared; see
`gram_estimates`). Memory is the rows of the distinct (criterion, measure) pairs, (pairs, n),
plus one chunk of comparisons, whatever the number of comparisons; each pair's rows are
computed once instead of once per comparison.
"""

from __future__ import annotations

import numpy as np

from storyeval.compare.dependent import DiffEstimate

__all__ = ["gram_estimates", "jackknife_gram_estimates", "linearised_rows",
           "ustat_gram_estimates"]

_CANCEL = 0.05  # below this share of |L_a|^2 + |L_b|^2 the difference is summed directly
_DIRECT_BYTES = 64 * 2**20


def linearised_rows(rows: np.ndarray, untied_h: np.ndarray,
                    untied_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``tau_b`` of each pair and its linearised rows ``L`` (pairs, n) (see the module doc),
    from the Kendall row sums of (h, x) and the untied counts of h and x, all (pairs, n)."""
    n = rows.shape[-1]
    pairs = n * (n - 1.0)
    N = rows.sum(-1) / pairs
    Th, Tx = untied_h.sum(-1) / pairs, untied_x.sum(-1) / pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sqrt(Th * Tx)
        tau = N / s
        L = (rows - 0.5 * N[:, None] * (untied_h / Th[:, None] + untied_x / Tx[:, None]))
        L /= s[:, None]
    return tau, L


def ustat_gram_estimates(tau: np.ndarray, L: np.ndarray, criterion: np.ndarray,
                         ka: np.ndarray, kb: np.ndarray, sa: np.ndarray,
                         sb: np.ndarray) -> DiffEstimate:
    """``delta = s_a tau[ka] - s_b tau[kb]`` and Sen's standard error of every comparison
    (pairs ``ka``, ``kb`` of the same criterion; ``criterion``: the criterion code of each pair)
    from the Gram matrix of each criterion's rows ``L``."""
    n = L.shape[-1]
    return gram_estimates(tau, L, criterion, ka, kb, sa, sb, 4.0 / (n * (n - 1.0) ** 3))


def jackknife_gram_estimates(full: np.ndarray, loo: np.ndarray, criterion: np.ndarray,
                             ka: np.ndarray, kb: np.ndarray, sa: np.ndarray,
                             sb: np.ndarray) -> DiffEstimate:
    """The delete-one-item jackknife of every comparison (as
    `storyeval.compare.dependent.jackknife_diff`) from each pair's coefficient ``full`` and its
    leave-one-out values ``loo`` (pairs, n): ``se^2 = (n - 1) / n |C_a - s C_b|^2`` with ``C``
    the centred leave-one-out values."""
    n = loo.shape[-1]
    centred = loo - loo.mean(-1, keepdims=True)
    return gram_estimates(full, centred, criterion, ka, kb, sa, sb, (n - 1.0) / n)


def gram_estimates(theta: np.ndarray, rows: np.ndarray, criterion: np.ndarray,
                   ka: np.ndarray, kb: np.ndarray, sa: np.ndarray, sb: np.ndarray,
                   factor: float, *, gram: bool = False) -> DiffEstimate:
    """``s_a theta[ka] - s_b theta[kb]`` and ``sqrt(factor |s_a R_a - s_b R_b|^2)`` for every
    comparison.

    ``gram=False`` (what `meta` runs): the squared norms are reduced per comparison over the
    pairs' rows, in chunks of comparisons (no loop over pairs); each comparison's number then
    depends on its own two rows only, so it is bit-identical whatever other measures are in the
    run. ``gram=True``: from one Gram matrix ``R R^T`` per criterion (``criterion``: each
    pair's criterion code); as fast on HANNA's all-pairs run (benchmarks/bench_scale.py), but
    BLAS's blocking depends on the matrix size, so the last bits of a comparison change when
    measures join."""
    n = rows.shape[-1]
    if gram:
        norm2 = _gram_norms(rows, criterion, ka, kb, sa * sb)
    else:
        norm2 = np.empty(len(ka))
        step = max(1, _DIRECT_BYTES // max(8 * n, 1))
        for lo in range(0, len(ka), step):
            k = slice(lo, lo + step)
            diff = rows[ka[k]] - (sa[k] * sb[k])[:, None] * rows[kb[k]]
            norm2[k] = (diff * diff).sum(-1)
    with np.errstate(invalid="ignore"):
        var = factor * np.maximum(norm2, 0.0)
    return DiffEstimate(sa * theta[ka] - sb * theta[kb], np.sqrt(var))


def _gram_norms(L: np.ndarray, criterion: np.ndarray, ka: np.ndarray, kb: np.ndarray,
                sign: np.ndarray) -> np.ndarray:
    """``|L_a - sign L_b|^2`` from one Gram matrix per criterion (a loop over criteria)."""
    n = L.shape[-1]
    cross = np.empty(len(ka))
    sq = np.einsum("pn,pn->p", L, L)
    crit_a = criterion[ka]
    for code in np.unique(crit_a):
        members = np.flatnonzero(criterion == code)
        where = np.full(len(criterion), -1)
        where[members] = np.arange(len(members))
        gram = L[members] @ L[members].T
        rows_c = np.flatnonzero(crit_a == code)
        cross[rows_c] = gram[where[ka[rows_c]], where[kb[rows_c]]]
    total = sq[ka] + sq[kb]
    norm2 = total - 2.0 * sign * cross
    # nearly equal rows (two nearly identical measures): the expansion cancels, so these few
    # comparisons are summed directly
    close = np.flatnonzero(~(norm2 > _CANCEL * total))
    step = max(1, _DIRECT_BYTES // max(8 * n, 1))
    for lo in range(0, len(close), step):
        k = close[lo:lo + step]
        diff = L[ka[k]] - sign[k][:, None] * L[kb[k]]
        norm2[k] = np.einsum("kn,kn->k", diff, diff)
    return norm2
