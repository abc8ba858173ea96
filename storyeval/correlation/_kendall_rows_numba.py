"""Compiled per-item Kendall row sums of many column pairs (numba; the optional ``fast`` extra).

Imported only by `storyeval.compare.dependent.shared_kendall_rows` when
`storyeval.correlation.kendall_sorted.engine` says ``"numba"``. For the pair (x, y) of columns
of an items x columns matrix, every item i gets

    r_i = sum_j sign(x_j - x_i) sign(y_j - y_i),

an exact integer (returned as float64, equal to the NumPy engine's values bit for bit).

Each column is sorted once (NumPy's argsort, any order within ties: the outputs do not depend
on it) and coded once (`column_codes`): its dense codes 0..G-1 per item (also as bytes when
G <= 256: the pair kernel reads them in y's order, at random, and bytes, a quarter of int32's
footprint, mostly stay in cache: about twice as fast at n = 10^6), which sorted positions tie
with the previous one (y's tie groups) and its untied counts. A pair then walks y's sorted
order one tie group at a time keeping, per x level, how many items lie below in y:
with ``D_B(c)`` (items strictly below in y with x above level c, minus those with x below) before
the group is inserted, ``D_A(c)`` after and ``T(c)`` the same over all items,

    r_i = T(c_i) - D_B(c_i) - D_A(c_i),

since the items above i in y are all minus those below minus those of its group, and items tied
with i in y count 0 (an item alone in its group: ``D_A = D_B``). The counts below are a prefix
array over the x levels (O(G) per insertion, vectorised; criteria have G <= 64) or, for more
levels, a Fenwick tree (O(log G)): O(n G) or O(n log G) per pair, O(n) memory. x and y swap
roles when y has fewer levels (r_i is symmetric), so two continuous columns cost O(n log n).
Pairs run on up to two threads (`storyeval.correlation.kendall_sorted._on_threads`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

# At or below this many x levels (codes fit a byte) the counts below are a prefix array (an
# insertion adds 1 to G + 1 int32 cells in a branch-free vector loop); above, a Fenwick tree.
# Measured on the 2-core development machine (random continuous y, n = 10^5 and 10^6): the
# prefix array takes 0.6-0.8 ms per pair at n = 10^5 for G = 13-64 (the Fenwick tree
# 1.8-2.2 ms) and still wins at G = 200.
PREFIX_MAX_LEVELS = 256


@nb.njit(cache=True, nogil=True)
def column_codes(XT, order, codes, codes8, tied, untied, levels, lo, hi):  # pragma: no cover
    """Columns ``lo..hi-1`` of ``XT`` (columns, n), given each column's ``order`` (ascending,
    ties in any order): dense codes per item (``codes``, and ``codes8`` modulo 256), whether each
    sorted position ties with the previous one (``tied``), untied counts per item (``n`` minus
    the size of the item's tie group, float64) and the number of levels."""
    n = XT.shape[1]
    for col in range(lo, hi):
        x = XT[col]
        o = order[col]
        code = -1
        p = 0
        while p < n:
            q = p + 1
            # adjacent values, as the NumPy engine's tie bounds (-0.0 == 0.0: one group)
            while q < n and x[o[q]] == x[o[q - 1]]:
                q += 1
            code += 1
            u = np.float64(n - (q - p))
            tied[col, p] = False
            for t in range(p, q):
                i = o[t]
                codes[col, i] = code
                codes8[col, i] = code & 255
                untied[col, i] = u
            for t in range(p + 1, q):
                tied[col, t] = True
            p = q
        levels[col] = code + 1


@nb.njit(cache=True, nogil=True)
def _level_balance(cx, G):  # pragma: no cover - compiled
    """``T(c)``: items with x level above c minus those below, for c = 0..G-1."""
    below = np.zeros(G + 1, np.int64)
    for i in range(cx.size):
        below[cx[i] + 1] += 1
    for g in range(G):
        below[g + 1] += below[g]
    n = below[G]
    total = np.empty(G, np.int64)
    for c in range(G):
        total[c] = (n - below[c + 1]) - below[c]
    return total


@nb.njit(cache=True, nogil=True)
def _rows_prefix(cx, G, oy, tied, out):  # pragma: no cover - compiled
    """One pair's rows with a prefix array: ``pre[g]`` the items inserted (below in y) with x
    level < g, so ``D(c) = pre[G] - pre[c + 1] - pre[c]``."""
    n = oy.size
    total = _level_balance(cx, G)
    pre = np.zeros(G + 1, np.int32)  # int32: twice the lanes per vector (n < 2**31)
    p = 0
    while p < n:
        q = p + 1
        while q < n and tied[q]:
            q += 1
        if q == p + 1:  # alone in its y tie group (continuous y: nearly every item)
            i = oy[p]
            c = cx[i]
            d = np.int64(pre[G]) - pre[c + 1] - pre[c]
            out[i] = total[c] - 2 * d
            for g in range(G + 1):
                pre[g] += g > c
        else:
            for t in range(p, q):
                i = oy[t]
                c = cx[i]
                out[i] = total[c] - (np.int64(pre[G]) - pre[c + 1] - pre[c])
            for t in range(p, q):
                c = cx[oy[t]]
                for g in range(G + 1):
                    pre[g] += g > c
            for t in range(p, q):
                i = oy[t]
                c = cx[i]
                out[i] -= np.int64(pre[G]) - pre[c + 1] - pre[c]
        p = q


@nb.njit(cache=True, nogil=True)
def _below(tree, c):  # pragma: no cover - compiled
    """Items inserted with level < c (Fenwick tree over levels 1..G, level c at index c + 1)."""
    s = np.int64(0)
    i = c
    while i > 0:
        s += tree[i]
        i -= i & (-i)
    return s


@nb.njit(cache=True, nogil=True)
def _insert(tree, c):  # pragma: no cover - compiled
    i = c + 1
    while i < tree.size:
        tree[i] += 1
        i += i & (-i)


@nb.njit(cache=True, nogil=True)
def _rows_fenwick(cx, G, oy, tied, out):  # pragma: no cover - compiled
    """One pair's rows with a Fenwick tree over the x levels and a count per level:
    ``D(c) = inserted - 2 below(c) - count(c)``."""
    n = oy.size
    total = _level_balance(cx, G)
    tree = np.zeros(G + 1, np.int32)
    count = np.zeros(G, np.int32)
    inserted = 0
    p = 0
    while p < n:
        q = p + 1
        while q < n and tied[q]:
            q += 1
        for t in range(p, q):
            i = oy[t]
            c = cx[i]
            out[i] = total[c] - (inserted - 2 * _below(tree, c) - count[c])
        for t in range(p, q):
            c = cx[oy[t]]
            _insert(tree, c)
            count[c] += 1
        inserted += q - p
        for t in range(p, q):
            i = oy[t]
            c = cx[i]
            out[i] -= inserted - 2 * _below(tree, c) - count[c]
        p = q


@nb.njit(cache=True, nogil=True)
def pair_rows(codes, codes8, tied, order, levels, xcols, ycols, rows, lo, hi):  # pragma: no cover
    """Rows of pairs ``lo..hi-1``: ``rows[k]`` for x = column ``xcols[k]``, y = ``ycols[k]``,
    from `column_codes`' outputs."""
    for k in range(lo, hi):
        x = xcols[k]
        y = ycols[k]
        if levels[y] < levels[x]:  # r_i is symmetric in x and y: count the fewer levels
            x, y = y, x
        G = levels[x]
        if G <= PREFIX_MAX_LEVELS:
            _rows_prefix(codes8[x], G, order[y], tied[y], rows[k])
        else:
            _rows_fenwick(codes[x], G, order[y], tied[y], rows[k])


def _code_columns(X: np.ndarray, order: np.ndarray, codes: np.ndarray, codes8: np.ndarray,
                  tied: np.ndarray, untied: np.ndarray, levels: np.ndarray, lo: int,
                  hi: int) -> None:
    """Sort and code columns ``lo..hi-1`` of ``X`` (items x columns), one thread's share: only
    these columns are copied contiguous (X is usually C-ordered: a copy of all its columns would
    add a stories x columns array)."""
    XT = np.ascontiguousarray(X[:, lo:hi].T, dtype=np.float64)
    # any sort will do (ties in any order give the same outputs): NumPy's default sort is
    # several times faster than its stable one, and releases the GIL
    order[lo:hi] = np.argsort(XT, axis=-1)
    column_codes(XT, order[lo:hi], codes[lo:hi], codes8[lo:hi], tied[lo:hi], untied[lo:hi],
                 levels[lo:hi], 0, hi - lo)


def shared_rows(X: np.ndarray, xcols: np.ndarray,
                ycols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`storyeval.compare.dependent.shared_kendall_rows` compiled: the rows of the pairs
    (pairs, n) and the untied counts of every column (columns, n), both float64."""
    from storyeval.correlation.kendall_sorted import _on_threads

    n, m = X.shape
    index = np.int32 if n < 2**31 else np.int64
    order = np.empty((m, n), index)
    codes = np.empty((m, n), index)
    codes8 = np.empty((m, n), np.uint8)
    tied = np.empty((m, n), np.bool_)
    untied = np.empty((m, n))
    levels = np.empty(m, np.int64)
    _on_threads(_code_columns, (X, order, codes, codes8, tied, untied, levels), m)
    xcols = np.ascontiguousarray(xcols, dtype=np.int64)
    ycols = np.ascontiguousarray(ycols, dtype=np.int64)
    rows = np.empty((len(xcols), n))
    _on_threads(pair_rows, (codes, codes8, tied, order, levels, xcols, ycols, rows), len(xcols))
    return rows, untied
