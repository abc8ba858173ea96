"""Kendall concordance counts for many measures at once: the cost centre of the meta-evaluation.

For measures x (p columns) and y (q columns) over n observations, `kendall_counts` returns
S = sum over observation pairs i < j of sign(x_j - x_i) sign(y_j - y_i) for every (x, y) pair of
measures, and the numbers of pairs not tied in x and in y (the tau-b denominator), with no Python
loop over pairs of observations or of measures:

* complete data: blocks of observation rows are paired with the rows after them by
  broadcasting; each block gives float32 sign matrices and one matrix product adds its counts
  (exact: integers below 2**24). Two threads overlap the memory-bound sign blocks.
* few low-cardinality y columns (human criteria): counted by level instead of by pair;
* missing values: masked sign products over chunks of observation pairs.

These kernels cost O(n^2) per batch of measures. For many observations, counting per pair of
measures in O(n log n) (`storyeval.correlation.kendall_sorted`: sort once per measure, count
inversions) wins; `kendall_plan` predicts the time of every applicable kernel from measured
per-operation costs and `kendall_counts` runs the cheapest. All kernels return the same exact
integer counts.

The matrix products run near the BLAS peak; computing only the blocks of measure pairs a
request needs (e.g. no products between LLM ratings of different criteria) was measured and
does not pay: the thinner products run at about half the speed.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["KERNELS", "dense_ranks", "kendall_counts", "kendall_plan"]

#: The Kendall kernels `kendall_counts` chooses from.
KERNELS = ("blocks", "levels", "sorted")

# Working-memory budget of one chunk of observation pairs (bytes): cache-sized chunks beat
# large ones (measured on HANNA: 4 MB about 1.3x faster than 64 MB for x != y).
_KENDALL_CHUNK_BYTES = 4 * 2**20
# float32 products of +-1/0 entries are exact while every partial sum stays below 2**24.
_FLOAT32_EXACT = 2**24

# --------------------------------------------------------------------------------------------
# complete-data kernels, batched over a leading group axis: x (g, n, p), y (g, n, q)


def _pair_chunks(n: int, max_pairs: int):
    """Yield (i, j) index arrays covering the pairs i < j of ``range(n)`` in row blocks of at
    most ``max_pairs`` pairs (at least one row per block)."""
    counts = np.arange(n - 1, 0, -1, dtype=np.int64)  # pairs whose first index is i
    start = 0
    while start < n - 1:
        cum = np.cumsum(counts[start:])
        stop = start + max(1, int(np.searchsorted(cum, max_pairs, side="right")))
        rows = np.arange(start, stop, dtype=np.int64)
        c = counts[start:stop]
        i = np.repeat(rows, c)
        offsets = np.arange(i.size, dtype=np.int64) - np.repeat(np.cumsum(c) - c, c)
        yield i, i + 1 + offsets
        start = stop


def kendall_counts(x: np.ndarray, y: np.ndarray, masked: bool, same: bool = False,
                   kernel: str = "auto"):
    """Concordant-minus-discordant counts and non-tied pair counts.

    Returns ``s`` (g, p, q), ``tx`` and ``ty`` (g, p, q): pairs untied in x (resp. y) among the
    pairs of observations where both measures are present. With ``masked=False`` the inputs must
    be NaN-free and tx/ty only depend on one side. ``same=True`` (y is x) computes the sign
    matrices once. ``kernel`` forces one of `KERNELS` (``"levels"`` only applies to NaN-free,
    ungrouped data); ``"auto"`` takes the cheapest by `kendall_plan`. Every kernel returns
    the same exact integer counts.
    """
    g, n, p = x.shape
    q = y.shape[2]
    y_levels = None
    if kernel in ("auto", "levels") and _levels_applicable(g, n, masked, same):
        y = dense_ranks(y)  # the level count decides; the ranks are reused below
        y_levels = int(np.nanmax(y, axis=1, initial=0).sum())
    if kernel == "auto":
        kernel = kendall_plan(g, n, p, q, masked=masked, same=same, y_levels=y_levels)[0]
    if kernel not in KERNELS:
        raise ValueError(f"unknown Kendall kernel {kernel!r}; use one of {KERNELS}")
    if kernel == "sorted":
        from storyeval.correlation.kendall_sorted import sorted_counts

        s, tx, ty, _ = sorted_counts(x, x if same else y, same=same)
        return s, tx, ty
    # Signs of differences are those of dense-rank differences; float32 dense ranks are exact
    # (below 2**24) and halve the memory traffic of the pair gathers.
    x = dense_ranks(x).astype(np.float32)
    y = x if same else (y if y_levels is not None else dense_ranks(y)).astype(np.float32)
    if kernel == "levels":
        if y_levels is None:
            raise ValueError("the 'levels' kernel needs NaN-free data without groups and y != x")
        return _kendall_counts_by_levels(x, y)
    if not masked:
        return _kendall_counts_blocks(x, y, same)
    return _kendall_counts_masked(x, y, same)


def _kendall_counts_masked(x: np.ndarray, y: np.ndarray, same: bool):
    """`kendall_counts` with missing values (float32 dense ranks, NaN kept), by chunks of
    observation pairs and masked sign products."""
    g, n, p = x.shape
    q = y.shape[2]
    s = np.zeros((g, p, q))
    tx = np.zeros((g, p, q))
    ty = np.zeros((g, p, q))
    width = (p + (0 if same else q)) * 3 + 1
    max_pairs = int(min(_FLOAT32_EXACT - 1, max(256, _KENDALL_CHUNK_BYTES // (4 * width * g))))
    for i, j in _pair_chunks(n, max_pairs):
        sx = _rank_signs(x[:, j, :] - x[:, i, :])
        sy = sx if same else _rank_signs(y[:, j, :] - y[:, i, :])
        vx = ~np.isnan(sx)
        sx = np.where(vx, sx, np.float32(0.0))
        vxf = vx.astype(np.float32)
        if same:
            sy, vyf = sx, vxf
        else:
            vy = ~np.isnan(sy)
            sy = np.where(vy, sy, np.float32(0.0))
            vyf = vy.astype(np.float32)
        s += np.matmul(sx.transpose(0, 2, 1), sy)
        tx += np.matmul(np.abs(sx).transpose(0, 2, 1), vyf)
        if not same:
            ty += np.matmul(vxf.transpose(0, 2, 1), np.abs(sy))
    if same:  # untied-in-y counts of (a, b) are the untied-in-x counts of (b, a)
        ty = tx.transpose(0, 2, 1).copy()
    return s, tx, ty


# --------------------------------------------------------------------------------------------
# cost model
#
# Seconds per elementary operation, measured on the 2-core development machine (numpy 2.4,
# OpenBLAS, numba 0.68; benchmarks/bench_scale.py prints the kernels' times). Only the
# ratios matter: they place the switch points, and the kernels differ by orders of magnitude
# away from them.
_COST = {
    "mac": 2.0e-11,        # blocks: one float32 multiply-add of the sign-matrix products
    "sign": 1.6e-9,        # blocks: one sign of a (pair of observations, column)
    "block_call": 1.5e-5,  # blocks: one small matrix product per (group, block of rows)
    "masked": 1.6e-7,      # masked blocks: one (pair of observations, column), 3 products
    "level": 1.1e-8,       # levels: one (observation, x column, y level)
    "rank": 6e-9,          # sorted: one sort step (observation, column, log2 n)
    "pair_numba": 4e-9,    # sorted, numba: one (observation, pair of measures, log2 n)
    "pair_numpy": 6.5e-8,  # sorted, NumPy: the same
    "direct": 4e-9,        # sorted, numba, n <= 32: one (pair of observations, pair of measures)
    "task": 2e-7,          # sorted: one (group, pair of measures) task
    "load_numba": 0.8,     # sorted, numba: importing numba, loading the cached machine code
}


def kendall_plan(g: int, n: int, p: int, q: int, *, masked: bool, same: bool,
                 y_levels: int | None = None) -> tuple[str, dict[str, float]]:
    """The cheapest Kendall kernel for a (g, n, p) x (g, n, q) problem and the predicted
    seconds of every applicable kernel (`KERNELS`).

    ``y_levels`` (the summed distinct values of the y columns) makes the by-levels kernel
    applicable (NaN-free, one group, y != x). The sorted kernel's cost depends on its engine:
    numba when installed (with a one-off import cost in a process that has not loaded it
    yet), else NumPy.
    """
    pairs_of_obs = g * n * (n - 1) / 2
    costs: dict[str, float] = {}
    if masked:
        costs["blocks"] = pairs_of_obs * (
            _COST["mac"] * 3 * p * (p if same else q) + _COST["masked"] * (p + (0 if same else q)))
    else:
        rows = max(1, min(n, _KENDALL_CHUNK_BYTES // (4 * (p + (0 if same else q)) * g * n)))
        n_blocks = 2 * math.ceil(n / rows)
        costs["blocks"] = (pairs_of_obs * (_COST["mac"] * p * q
                                          + _COST["sign"] * (p + (0 if same else q)))
                           + g * n_blocks * _COST["block_call"])
    if y_levels is not None:
        costs["levels"] = _COST["level"] * n * p * y_levels
    costs["sorted"] = _sorted_cost(g, n, p, q, same)
    return min(costs, key=costs.get), costs


def _sorted_cost(g: int, n: int, p: int, q: int, same: bool) -> float:
    """Predicted seconds of `storyeval.correlation.kendall_sorted.sorted_counts`."""
    tasks = g * (p * (p - 1) / 2 if same else p * q)
    log_n = max(1.0, math.log2(max(n, 2)))
    numba = _numba_available()
    if numba and n <= 32:
        work = tasks * (_COST["task"] + _COST["direct"] * n * (n - 1) / 2)
    else:
        per_pair = _COST["pair_numba" if numba else "pair_numpy"]
        work = (g * (p + (0 if same else q)) * n * log_n * _COST["rank"]
                + tasks * (_COST["task"] + per_pair * n * log_n))
    if not numba:
        return work
    from storyeval.correlation.kendall_sorted import numba_load_seconds

    return work + numba_load_seconds("storyeval.correlation._kendall_numba")


def _numba_available() -> bool:
    """Whether the sorted kernel will run on numba (installed and not switched off)."""
    from storyeval.correlation.kendall_sorted import engine

    return engine() == "numba"


def _levels_applicable(g: int, n: int, masked: bool, same: bool) -> bool:
    """Whether the by-levels kernel can run: NaN-free, one group, y != x, enough rows."""
    return g == 1 and not masked and not same and n >= 64


def _kendall_counts_blocks(x: np.ndarray, y: np.ndarray, same: bool):
    """`kendall_counts` for NaN-free float32 ranks, by blocks of observation rows.

    A block of rows ``I = [a, b)`` is paired with the rows after it by broadcasting (no index
    gathers): the square ``I x I`` counts every pair twice (the products and the tie indicators
    are symmetric, the diagonal is 0), so it enters with weight 1/2 (exact: even integers), and
    the rectangle ``I x [b, n)`` enters once.
    """
    g, n, p = x.shape
    q = y.shape[2]
    blocks = _row_blocks(n, width=(p + (0 if same else q)) * g)

    def block(args):
        a, b, cols, weight = args
        sx = _block_signs(x, a, b, cols)
        sy = sx if same else _block_signs(y, a, b, cols)
        return weight * np.matmul(sx.transpose(0, 2, 1), sy)

    s = np.zeros((g, p, q))
    for part in _map_blocks(block, blocks):
        s += part
    # Untied pairs depend on one column only: from its tie groups (or, with y = x, the
    # diagonal of s), not from counting non-zero signs in every block.
    if same:
        tx = np.diagonal(s, axis1=1, axis2=2)[:, :, None]
        ty = tx.transpose(0, 2, 1)
    else:
        pairs = n * (n - 1) / 2
        tx = (pairs - _tied_pairs(x))[:, :, None]
        ty = (pairs - _tied_pairs(y))[:, None, :]
    return s, np.broadcast_to(tx, (g, p, q)).copy(), np.broadcast_to(ty, (g, p, q)).copy()


def _row_blocks(n: int, width: int) -> list[tuple[int, int, slice, float]]:
    """(a, b, cols, weight): rows [a, b) against rows ``cols``, covering every pair i < j once
    (the square blocks twice, hence weight 1/2), within the chunk memory budget for sign
    matrices ``width`` float32 columns wide."""
    rows = int(max(1, min(n, _KENDALL_CHUNK_BYTES // (4 * width * n))))
    rows = int(max(1, min(rows, (_FLOAT32_EXACT - 1) // n)))
    return [(a, min(n, a + rows), cols, weight)
            for a in range(0, n - 1, rows)
            for cols, weight in ((slice(a, min(n, a + rows)), 0.5),
                                 (slice(min(n, a + rows), n), 1.0))
            if cols.start < cols.stop]


def _map_blocks(func, blocks: list) -> list:
    """``func`` over the row blocks, on two threads when there are enough blocks.

    The sign blocks are memory-bound NumPy ufuncs that release the GIL: two threads overlap
    them. Every partial sum is an exact integer, so the result does not depend on the order.
    """
    workers = min(2, os.cpu_count() or 1) if len(blocks) > 2 else 1
    if workers == 1:
        return [func(args) for args in blocks]
    # one BLAS thread per worker: nested BLAS threads oversubscribe the cores
    with _single_threaded_blas(), ThreadPoolExecutor(workers) as pool:
        return list(pool.map(func, blocks))


def _single_threaded_blas():
    """Context limiting BLAS to one thread (threadpoolctl), or a no-op without it."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl is a core dependency
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _kendall_counts_by_levels(x: np.ndarray, y: np.ndarray):
    """`_kendall_counts` for NaN-free dense ranks, counting by the levels of y.

    For each x column, observations are put in x order; for each observation j and each y
    column, the observations strictly before j's x tie group are counted by y level (cumulative
    one-hot counts), so that (concordant - discordant) = sum_j [#(y < y_j) - #(y > y_j)] among
    them, with no pair of observations enumerated: O(n p k) per y column with k levels.
    Untied pair counts come from tie-group sizes: tx = C(n, 2) - sum_t C(t, 2).
    """
    _, n, p = x.shape
    q = y.shape[2]
    xr, yr = x[0], y[0].astype(np.int64) - 1  # y levels 0..k-1
    order = np.argsort(xr, axis=0, kind="stable")
    xs = np.take_along_axis(xr, order, axis=0)
    new_group = np.vstack([np.ones((1, p), bool), xs[1:] != xs[:-1]])
    rows = np.arange(n)[:, None]
    start = np.maximum.accumulate(np.where(new_group, rows, 0), axis=0)  # (n, p)
    s = np.zeros((p, q))
    count_type = np.int16 if n < 2**15 else np.int64
    for c in range(q):  # one y column at a time, vectorised over all x columns
        k = int(yr[:, c].max()) + 1
        levels = yr[order, c]  # (n, p): y level of the j-th observation in x order
        # le[t, a, l] = #(observations among the first t in x order with y level <= l)
        le = np.zeros((n + 1, p, k), dtype=count_type)
        np.less_equal(levels[:, :, None], np.arange(k), out=le[1:], casting="unsafe")
        np.cumsum(le, axis=0, out=le)
        # ... counted strictly before j's x tie group (pairs tied in x do not count)
        le = np.take_along_axis(le, start[:, :, None], axis=0).astype(np.int64)
        at_or_below = np.take_along_axis(le, levels[:, :, None], axis=2)[:, :, 0]
        below = np.where(levels > 0, np.take_along_axis(
            le, np.maximum(levels - 1, 0)[:, :, None], axis=2)[:, :, 0], 0)
        above = le[:, :, -1] - at_or_below
        s[:, c] = (below - above).sum(axis=0)
    pairs = n * (n - 1) / 2
    tx = pairs - _tied_pairs(x)[0]
    ty = pairs - _tied_pairs(y)[0]
    shape = (1, p, q)
    return (s[None], np.broadcast_to(tx[None, :, None], shape).copy(),
            np.broadcast_to(ty[None, None, :], shape).copy())


def _tied_pairs(a: np.ndarray) -> np.ndarray:
    """sum over tie groups of C(t, 2), per column of a NaN-free (g, n, p) array -> (g, p).

    In sorted order, observation i ties with the i - start(i) observations before it in its
    tie group, so the sum of those differences counts every tied pair once.
    """
    srt = np.sort(a, axis=1)
    position = np.arange(a.shape[1])[None, :, None]
    new_group = np.ones(srt.shape, dtype=bool)
    new_group[:, 1:] = srt[:, 1:] != srt[:, :-1]
    start = np.maximum.accumulate(np.where(new_group, position, 0), axis=1)
    return (position - start).sum(axis=1).astype(np.float64)


def _block_signs(v: np.ndarray, a: int, b: int, cols: slice) -> np.ndarray:
    """sign(v[j] - v[i]) for rows i in [a, b) and j in ``cols``, as (g, pairs, p) float32."""
    out = np.subtract(v[:, None, cols, :], v[:, a:b, None, :])
    return _rank_signs(out).reshape(v.shape[0], -1, v.shape[2])


def _rank_signs(diff: np.ndarray) -> np.ndarray:
    """sign() of differences of dense ranks, in place: they are integers (or NaN), so clipping
    to [-1, 1] is the sign, and NumPy's SIMD clip is about 20x faster than np.sign."""
    return np.clip(diff, -1, 1, out=diff)


def dense_ranks(a: np.ndarray) -> np.ndarray:
    """Dense ranks 1..k of the values of each column of a (g, n, p) array, NaN kept as NaN."""
    m = ~np.isnan(a)
    filled = np.where(m, a, np.inf)
    order = np.argsort(filled, axis=1, kind="stable")
    srt = np.take_along_axis(filled, order, axis=1)
    step = np.ones(srt.shape, dtype=np.float64)
    if srt.shape[1] > 1:
        with np.errstate(invalid="ignore"):  # inf - inf between missing values
            step[:, 1:] = np.diff(srt, axis=1) != 0
    dense = np.empty_like(step)
    np.put_along_axis(dense, order, np.cumsum(step, axis=1), axis=1)
    return np.where(m, dense, np.nan)


