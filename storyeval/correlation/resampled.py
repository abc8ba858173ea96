"""Batched weighted correlation kernels for resampling.

A bootstrap resample of stories is a vector of *multiplicities* ``w`` (how many times each story
is drawn); a resample of prompts (systems) gives every story of prompt ``p`` (system ``s``) the
multiplicity ``c_p`` (``c_s``), and resampling both gives ``c_s c_p``. Every coefficient is
computed from the weights, without materialising the resampled vectors:

* **Kendall** (overall level): with ``s_x(i, j) = sign(x_j - x_i)``, the resampled vectors have
  ``C - D = sum_{i<j} w_i w_j s_x(i,j) s_y(i,j)`` (copies of one story are tied in both
  variables and drop out) and ``n0 - n1 = sum_{i<j} w_i w_j |s_x(i,j)|`` pairs not tied in x,
  so ``tau_b = (C - D) / sqrt((n0 - n1)(n0 - n2))``. When the weights depend on the prompt only,
  ``sum_{i != j} w_i w_j A(i, j) = c^T T c`` with ``T[p, q] = sum_{i in p, j in q} A(i, j)``: the
  96 x 96 block sums are computed once per measure pair, then every resample costs one small
  quadratic form (a matrix product over all resamples). Likewise with systems (10 x 10 blocks).
  Any weights: the full story-pair matrix per measure pair (one matrix product per pair over
  all resamples, O(B n^2) per pair), or weighted O(n log k) counts per resample
  (`storyeval.correlation.kendall_weighted`); `storyeval.correlation.resampled_overall` holds that level's kernel
  and the plan that chooses among the three.
* **tau-c** uses the same ``C - D``, the resampled size ``N = sum w`` and the number of distinct
  values among the drawn stories.
* **Pearson**: weighted sums ``sum w x``, ``sum w x^2``, ``sum w x y`` (matrix products).
* **Spearman**: the mid-rank of story i among the resampled copies is
  ``sum_j w_j [x_j < x_i] + (sum_j w_j [x_j = x_i] + 1) / 2``; then weighted Pearson.
* **Small n** (system means, within-prompt correlations): all observation pairs enumerated.

Ties follow the one tie rule of `storyeval.correlation.ties` (as `correlate`): raw scores are compared
exactly; the system means of every resample are snapped (`tie_values`) before exact comparison.
"""

from __future__ import annotations

import functools
import math
from typing import Protocol

import numpy as np

# One tie rule for point estimates and resamples (storyeval.correlation.ties).
from storyeval.correlation.kernel import scale_to_unit
from storyeval.correlation.ties import TIE_RTOL, tie_values


class OverallStatistic(Protocol):
    """What `level_statistic` needs of the overall-level kernel
    (`storyeval.correlation.resampled_overall.OverallKernel`, which imports this module)."""

    def statistic(self, cS: np.ndarray, cP: np.ndarray) -> np.ndarray: ...

KENDALL = ("kendall_b", "kendall_c")
_CHUNK_BYTES = 48 * 2**20
_SMALL_CHUNK_BYTES = 2**21  # cache-sized chunks where the work per element is small


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        out = num / den
    return np.where(den > 0, out, np.nan)


@functools.cache
def _blas_controller():
    from threadpoolctl import ThreadpoolController  # lazy; found once (scanning costs ~2 ms)

    return ThreadpoolController()


def _one_blas_thread():
    """Context limiting BLAS to one thread (threadpoolctl, a core dependency)."""
    return _blas_controller().limit(limits=1, user_api="blas")


def _chunks(total: int, per_item_bytes: int):
    step = max(1, int(_CHUNK_BYTES // max(per_item_bytes, 1)))
    for start in range(0, total, step):
        yield slice(start, min(total, start + step))


# ------------------------------------------------------------------------------------------------
# small n: every pair of observations enumerated


def _distinct_present(V: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Number of distinct values of V (..., n, K) among observations with w > 0."""
    Vm = np.where(w[..., None] > 0, V, np.nan)
    Vs = np.sort(Vm, axis=-2)
    any_present = (~np.isnan(Vs)).any(axis=-2)
    return any_present + (np.diff(Vs, axis=-2) > 0).sum(axis=-2)


def _weighted_pearson_cols(V, w, ia, ic):
    """Weighted Pearson of columns ia vs ic; V (..., n, K), w broadcastable (..., n)."""
    N = w.sum(axis=-1)[..., None]
    mean = np.einsum("...n,...nk->...k", w, V) / N
    D = V - mean[..., None, :]
    wd = w[..., None] * D
    var = np.einsum("...nk,...nk->...k", wd, D)
    cov = np.einsum("...nm,...nm->...m", wd[..., ia], D[..., ic])
    # constant exactly as in `correlate` (the tie rule: raw values compared exactly), not
    # "variance small next to the scale": near-constant columns have a defined r
    var = np.where(_distinct_present(V, w) <= 1, 0.0, var)
    r = _safe_div(cov, np.sqrt(var[..., ia] * var[..., ic]))
    return np.clip(r, -1.0, 1.0)


def _pair_signs(V: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Signs ``sign(V_j - V_i)`` of the Q = n(n-1)/2 observation pairs i < j (triu order) as
    int8 arranged (Q, K, *batch), and a (K, *batch) flag of the columns where a difference is
    NaN (None when every value is finite).

    Observations first, then columns: pairs are formed from whole contiguous slabs (no gather
    along a short axis) and sums over the pairs add contiguous rows."""
    n = V.shape[-2]
    Vq = np.ascontiguousarray(np.moveaxis(V, (-2, -1), (0, 1)))  # (n, K, *batch)
    s = np.empty((n * (n - 1) // 2, *Vq.shape[1:]), dtype=np.int8)
    stop = 0
    for i in range(n - 1):  # a loop over observations (systems), not over stories or pairs
        hi, lo = Vq[i + 1:], Vq[i]
        start, stop = stop, stop + n - 1 - i
        # for finite values sign(hi - lo) exactly (a difference is 0 only for equal values)
        np.subtract((hi > lo).view(np.int8), (hi < lo).view(np.int8), out=s[start:stop])
    if np.isfinite(Vq).all():
        return s, None
    iu, ju = np.triu_indices(n, k=1)
    with np.errstate(invalid="ignore"):
        bad = np.isnan(Vq[ju] - Vq[iu]).any(axis=0)  # NaN, or inf - inf: undefined as before
    return s, bad


def _sum_pairs(a: np.ndarray, dtype) -> np.ndarray:
    """Sum over axis 0 through a 2-D view: NumPy reduces it much faster than the N-D array."""
    flat = a.reshape(a.shape[0], math.prod(a.shape[1:]))
    return flat.sum(axis=0, dtype=dtype).reshape(a.shape[1:])


def _pair_sign_counts(V: np.ndarray, w: np.ndarray, ia: np.ndarray, ic: np.ndarray):
    """``sum_q w_q s_a s_c`` (..., M) and ``sum_q w_q |s_k|`` (..., K) over the pairs q, with
    ``w_q = w_i w_j``: exact integers (weights are multiplicities), as float64."""
    s, bad = _pair_signs(V)
    prod = np.take(s, ia, axis=1) * np.take(s, ic, axis=1)  # (Q, M, *batch) int8
    if np.all(w == 1):  # every weight 1 (e.g. resampled prompts): plain integer counts
        acc = np.int16 if len(s) < 2**15 else np.int64
        num, den = _sum_pairs(prod, acc), _sum_pairs(np.abs(s), acc)
    else:
        iu, ju = np.triu_indices(V.shape[-2], k=1)
        wq = np.moveaxis(w[..., iu] * w[..., ju], -1, 0)  # (Q, *wbatch) float64
        # align the batch axes of the signs and of the weights (they broadcast in einsum)
        nb = max(V.ndim, w.ndim + 1) - 2
        wq = wq.reshape(wq.shape[:1] + (1,) * (nb - wq.ndim + 1) + wq.shape[1:])
        lead = (1,) * (nb - V.ndim + 2)
        num = np.einsum("qm...,q...->m...", prod.reshape(prod.shape[:2] + lead + prod.shape[2:]),
                        wq)
        den = np.einsum("qk...,q...->k...", np.abs(s).reshape(s.shape[:2] + lead + s.shape[2:]),
                        wq)
    num = np.ascontiguousarray(np.moveaxis(num, 0, -1), dtype=np.float64)
    den = np.ascontiguousarray(np.moveaxis(den, 0, -1), dtype=np.float64)
    if bad is not None:  # a NaN comparison made the coefficient NaN (as sign(NaN) did)
        bad = np.moveaxis(bad, 0, -1)
        num[np.broadcast_to(bad[..., ia] | bad[..., ic], num.shape)] = np.nan
    return num, den


def direct(V: np.ndarray, w: np.ndarray, ia: np.ndarray, ic: np.ndarray, method: str):
    """Weighted coefficients for small n.

    V : (..., n, K) values; w : (..., n) multiplicities (broadcastable against V[..., 0]);
    returns (..., M) for the column pairs (ia[m], ic[m]).
    """
    w = np.asarray(w, dtype=np.float64)
    if method in KENDALL:
        shape = np.broadcast_shapes(w.shape, V.shape[:-1])
        num, den = _pair_sign_counts(V, w, ia, ic)
        num = np.broadcast_to(num, (*shape[:-1], len(ia)))
        if method == "kendall_b":
            den = np.broadcast_to(den, (*shape[:-1], V.shape[-1]))
            return _safe_div(num, np.sqrt(den[..., ia] * den[..., ic]))
        wb = np.broadcast_to(w, shape)
        distinct = _distinct_present(np.broadcast_to(V, (*shape, V.shape[-1])), wb)
        m = np.minimum(distinct[..., ia], distinct[..., ic]).astype(np.float64)
        N = wb.sum(axis=-1)[..., None]
        return _safe_div(2.0 * num, N**2 * (m - 1) / np.maximum(m, 1))
    if method == "pearson":
        return _weighted_pearson_cols(V, w, ia, ic)
    # spearman: weighted mid-ranks, then weighted Pearson
    d = V[..., None, :, :] - V[..., :, None, :]  # [..., i, j, k] = V_j - V_i
    less = (d < 0).astype(np.float64)
    eq = d == 0
    R = np.einsum("...j,...ijk->...ik", w, less + 0.5 * eq) + 0.5
    return _weighted_pearson_cols(R, w, ia, ic)


def level_statistic(X, ia, ic, method, level, cS, cP, *, kernel: OverallStatistic | None = None,
                    tie_rtol: float = TIE_RTOL):
    """(B, M) coefficients at a level for multiplicities cS (B, S), cP (B, P); the system
    means of every resample are snapped with ``tie_rtol`` (the tie rule of the point
    estimate)."""
    S, P, K = X.shape
    cS = np.asarray(cS, dtype=np.float64)
    cP = np.asarray(cP, dtype=np.float64)
    B = cS.shape[0]
    if level == "overall":
        return kernel.statistic(cS, cP)
    if level == "within":
        return _within_statistic(X, ia, ic, method, cS, cP)
    M = len(ia)
    out = np.empty((B, M))
    if level == "system":
        # the system means as a BLAS product (5x faster than einsum); its summation order
        # changes only last bits, which the tie rule's snapping absorbs. Small chunks keep
        # every temporary in cache; one BLAS thread, as idle OpenBLAS threads spin for a
        # while after each product and take a core from this (NumPy) thread.
        XP = X.transpose(1, 0, 2).reshape(P, S * K)
        step = max(1, _SMALL_CHUNK_BYTES // (S * (K + M) * 8))
        with _one_blas_thread():
            for start in range(0, B, step):
                sl = slice(start, start + step)
                means = (cP[sl] @ XP).reshape(-1, S, K) / cP[sl].sum(axis=1)[:, None, None]
                means = tie_values(means, "system", axis=1, rtol=tie_rtol)
                out[sl] = direct(means, cS[sl], ia, ic, method)
        return out
    # prompt level: within-prompt coefficient over systems (weights cS), mean over prompts (cP)
    # (P, S, K), each prompt's column scaled to (-1, 1) by a power of two (exact; changes no
    # coefficient) so that tiny within-prompt scores (CIDEr: 1e-200) do not underflow
    V = scale_to_unit(X.transpose(1, 0, 2), axis=1)
    if np.all(cS == cS[:1]) and np.all(cS[0] == 1):
        r = direct(V, np.ones(S), ia, ic, method)[None]  # (1, P, M)
        r = np.broadcast_to(r, (B, P, M))
        return _prompt_mean(r, cP)
    if method in KENDALL:
        # the within-prompt sign products do not depend on the resample: compute them once
        iu, ju = np.triu_indices(S, k=1)
        d = V[:, ju, :] - V[:, iu, :]
        s = np.sign(d)  # (P, Q, K); exact comparison (the tie rule)
        Q = len(iu)
        prod = (s[..., ia] * s[..., ic]).transpose(1, 0, 2).reshape(Q, P * M)
        absS = np.abs(s).transpose(1, 0, 2).reshape(Q, P * K)
        for sl in _chunks(B, P * (M + K) * 8 * 4 + P * S * K * 8 * 3):
            wq = cS[sl][:, iu] * cS[sl][:, ju]  # (b, Q)
            num = (wq @ prod).reshape(-1, P, M)
            if method == "kendall_b":
                den = (wq @ absS).reshape(-1, P, K)
                r = _safe_div(num, np.sqrt(den[..., ia] * den[..., ic]))
            else:
                w = cS[sl][:, None, :]
                distinct = _distinct_present(np.broadcast_to(V, (w.shape[0], P, S, K)),
                                             np.broadcast_to(w, (w.shape[0], P, S)))
                m = np.minimum(distinct[..., ia], distinct[..., ic]).astype(np.float64)
                N = cS[sl].sum(axis=1)[:, None, None]
                r = _safe_div(2.0 * num, N**2 * (m - 1) / np.maximum(m, 1))
            out[sl] = _prompt_mean(r, cP[sl])
        return out
    per_b = P * (S * S * K * 2 + S * S * M) * 8
    for sl in _chunks(B, per_b):
        r = direct(V[None], cS[sl][:, None, :], ia, ic, method)  # (b, P, M)
        out[sl] = _prompt_mean(r, cP[sl])
    return out


def _within_statistic(X: np.ndarray, ia: np.ndarray, ic: np.ndarray, method: str,
                      cS: np.ndarray, cP: np.ndarray) -> np.ndarray:
    """(B, M) within-system coefficients: each system's coefficient across its prompts
    (prompt multiplicities ``cP``), averaged over the systems where it is defined (system
    multiplicities ``cS``). The prompt level with the roles of systems and prompts exchanged
    (the same cube transposed, as `storyeval.correlation.levels` computes the point
    estimate). The pair-sign products of P prompts take P (P - 1) / 2 rows per system and
    pair: the pairs are taken in blocks of 32 MB of them."""
    S, P, K = X.shape
    Xt = X.transpose(1, 0, 2)  # (P, S, K): "systems" of the prompt branch are the prompts
    per_pair = max(1, P * (P - 1) // 2) * S * 8
    step = max(1, (2**25) // per_pair)
    out = np.empty((np.asarray(cS).shape[0], len(ia)))
    for lo in range(0, len(ia), step):
        a, c = ia[lo:lo + step], ic[lo:lo + step]
        cols, inverse = np.unique(np.concatenate([a, c]), return_inverse=True)
        inverse = inverse.ravel()
        if method == "kendall_b":
            out[:, lo:lo + step] = _within_kendall_b(X[:, :, cols], inverse[:len(a)],
                                                     inverse[len(a):], cS, cP)
            continue
        out[:, lo:lo + step] = level_statistic(
            Xt[:, :, cols], inverse[:len(a)], inverse[len(a):], method, "prompt", cP, cS)
    return out


def _within_kendall_b(X: np.ndarray, ia: np.ndarray, ic: np.ndarray, cS: np.ndarray,
                      cP: np.ndarray) -> np.ndarray:
    """(B, M) within-system tau-b: per system, ``C - D = sum_{i<j} w_i w_j s_x s_y`` and the
    untied pairs ``sum_{i<j} w_i w_j |s_x|`` over prompt pairs, for every resample in one
    matrix product. The terms are integers (products of multiplicities and signs) and every sum
    is at most ``(sum w)^2 / 2``: exact in float32 up to 5,792 prompts (float64 beyond), so the
    product runs in single precision with the same numbers."""
    S, P, _ = X.shape
    M = len(ia)
    iu, ju = np.triu_indices(P, k=1)
    Q = len(iu)
    dtype = np.float32 if P <= 5792 else np.float64
    # exact comparisons (no subtraction: tiny scores cannot underflow to a tie)
    xj, xi = X[:, ju, :], X[:, iu, :]
    sign = (xj > xi).astype(np.int8) - (xj < xi).astype(np.int8)  # (S, Q, K)
    del xj, xi
    parts = np.concatenate([sign[..., ia] * sign[..., ic], np.abs(sign)], axis=2)
    width = parts.shape[2]
    mat = np.ascontiguousarray(parts.transpose(1, 0, 2).reshape(Q, S * width), dtype=dtype)
    del parts, sign
    B = cP.shape[0]
    out = np.empty((B, M))
    for sl in _chunks(B, (Q + S * width) * 8 * 2):
        w = cP[sl].astype(dtype)
        wq = w[:, iu] * w[:, ju]  # (b, Q)
        res = (wq @ mat).astype(np.float64).reshape(-1, S, width)
        num, den = res[..., :M], res[..., M:]
        r = _safe_div(num, np.sqrt(den[..., ia] * den[..., ic]))  # (b, S, M)
        out[sl] = _prompt_mean(r, cS[sl])
    return out


def _prompt_mean(r: np.ndarray, cP: np.ndarray) -> np.ndarray:
    ok = np.isfinite(r)
    wsum = np.einsum("bp,bpm->bm", cP, ok.astype(np.float64))
    tot = np.einsum("bp,bpm->bm", cP, np.where(ok, r, 0.0))
    return _safe_div(tot, wsum)
