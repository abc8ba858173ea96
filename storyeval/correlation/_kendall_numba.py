"""Compiled O(n log n) Kendall counts per pair of measures (numba; the optional ``fast`` extra).

Imported only by `storyeval.correlation.kendall_sorted` when numba is installed. Each task is one pair
of measures of one group; the kernels release the GIL and the caller runs ranges of tasks on
threads (numba's own ``parallel=True`` was measured: its threading layer adds about 0.7 s to the
first call of a process). Each task gives exact integer counts: S (concordant minus discordant pairs), the number N of observations present in both
measures, and the tied pairs Tu, Tv of each measure within those N observations.

A few observations (at most `DIRECT_MAX_N`, e.g. the systems of one prompt) are enumerated
pair by pair. Otherwise two per-pair algorithms, chosen by the number of distinct values (measured on the 2-core
development machine, random continuous data):

* **Fenwick tree** over the ranks of the measure with fewer levels, observations visited in the
  order of the other: about 5 ms per pair at n = 100,000, but slower than merging once the tree
  leaves the cache (430 ms against 130-210 ms at n = 1,000,000 and 10^6 levels). Human criteria
  (13 levels) always take this path.
* **counting sort + merge sort**: the observations are put in (u, v) order by a counting sort
  of v's sorted order on u's ranks (O(n), no per-pair comparison sort), then strict inversions
  of v are counted by a bottom-up, branch-free merge sort (Knight's algorithm, as scipy).
"""

from __future__ import annotations

import numba as nb
import numpy as np

# Below this many observations (a prompt's systems) all pairs are enumerated: no allocation.
DIRECT_MAX_N = 32
# Fenwick trees up to this many levels (int32, 512 kB) stay in the L2 cache; beyond, merging wins.
FENWICK_MAX_LEVELS = 2**17


@nb.njit(cache=True, nogil=True)
def _direct_pair(x, y, grp, a, b):  # pragma: no cover - compiled
    """(S, N, Tx, Ty) of columns x[grp, :, a] and y[grp, :, b] (raw values, NaN missing),
    enumerating the pairs of their few observations."""
    n = x.shape[1]
    s = 0
    n_obs = 0
    tx = 0
    ty = 0
    for i in range(n):
        xi = x[grp, i, a]
        yi = y[grp, i, b]
        if np.isnan(xi) or np.isnan(yi):
            continue
        n_obs += 1
        for j in range(i + 1, n):
            xj = x[grp, j, a]
            yj = y[grp, j, b]
            if np.isnan(xj) or np.isnan(yj):
                continue
            dx = (xj > xi) - (xj < xi)
            dy = (yj > yi) - (yj < yi)
            s += dx * dy
            tx += dx == 0
            ty += dy == 0
    return s, n_obs, tx, ty


@nb.njit(cache=True, nogil=True)
def _fenwick_pair(ou, ru, rv, kv):  # pragma: no cover - compiled
    """(S, N, Tu, Tv) visiting observations in u order (``ou``), a Fenwick tree over v ranks
    1..kv (0 = missing). Pairs tied in u (one u tie group) are queried before any is inserted,
    so they count neither as concordant nor as discordant."""
    n = ou.size
    # int32 counts (n < 2**31) halve the tree's cache footprint
    tree = np.zeros(kv + 1, np.int32)
    cnt = np.zeros(kv + 1, np.int32)
    s = 0
    tu = 0
    inserted = 0
    start = 0
    while start < n:
        level = ru[ou[start]]
        stop = start + 1
        while stop < n and ru[ou[stop]] == level:
            stop += 1
        members = 0
        for t in range(start, stop):
            r = rv[ou[t]]
            if level == 0 or r == 0:
                continue
            members += 1
            less = np.int64(0)
            i = r - 1
            while i > 0:
                less += tree[i]
                i -= i & (-i)
            s += 2 * less + cnt[r] - inserted  # less - greater
        for t in range(start, stop):
            r = rv[ou[t]]
            if level == 0 or r == 0:
                continue
            cnt[r] += 1
            i = r
            while i <= kv:
                tree[i] += 1
                i += i & (-i)
        inserted += members
        tu += members * (members - 1) // 2
        start = stop
    tv = 0
    for r in range(1, kv + 1):
        c = np.int64(cnt[r])
        tv += c * (c - 1) // 2
    return s, inserted, tu, tv


@nb.njit(cache=True, nogil=True)
def _merge_pair(ov, ru, rv, ku):  # pragma: no cover - compiled
    """(S, N, Tu, Tv) by Knight's algorithm: v values in (u, v) order, then strict inversions
    of v by merge sort; S = n0 - Tu - Tv + Tuv - 2 inversions."""
    n = ov.size
    start = np.zeros(ku + 2, np.int64)
    for t in range(n):  # counting sort of v's order by u rank: (u, v) order, missing left out
        j = ov[t]
        if ru[j] != 0 and rv[j] != 0:
            start[ru[j] + 1] += 1
    tu = 0
    for k in range(1, ku + 2):
        tu += start[k] * (start[k] - 1) // 2
        start[k] += start[k - 1]
    m = start[ku + 1]
    a = np.empty(m, np.int64)
    fill = start.copy()
    for t in range(n):
        j = ov[t]
        if ru[j] != 0 and rv[j] != 0:
            a[fill[ru[j]]] = rv[j]
            fill[ru[j]] += 1
    tuv = 0  # pairs tied in both: runs of equal v inside each u bucket
    for k in range(1, ku + 1):
        run = 1
        for t in range(start[k] + 1, start[k + 1]):
            if a[t] == a[t - 1]:
                tuv += run
                run += 1
            else:
                run = 1
    swaps = _count_inversions(a)
    # a is now sorted by v: tied-in-v pairs from its runs
    tv = 0
    run = 1
    for t in range(1, m):
        if a[t] == a[t - 1]:
            tv += run
            run += 1
        else:
            run = 1
    n0 = m * (m - 1) // 2
    return n0 - tu - tv + tuv - 2 * swaps, m, tu, tv


@nb.njit(cache=True, nogil=True)
def _count_inversions(a):  # pragma: no cover - compiled
    """Strict inversions of ``a``, which ends up sorted: insertion sort of blocks of 16, then
    bottom-up merges written without branches on the data (random data mispredicts them)."""
    m = a.size
    swaps = 0
    width = 16
    for lo in range(0, m, width):
        hi = min(lo + width, m)
        for i in range(lo + 1, hi):
            v = a[i]
            j = i - 1
            while j >= lo and a[j] > v:
                a[j + 1] = a[j]
                j -= 1
                swaps += 1
            a[j + 1] = v
    src = a
    dst = np.empty_like(a)
    while width < m:
        for lo in range(0, m, 2 * width):
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                vi = src[i]
                vj = src[j]
                take = np.int64(vj < vi)
                dst[k] = vi + (vj - vi) * take
                swaps += (mid - i) * take
                j += take
                i += 1 - take
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < hi:
                dst[k] = src[j]
                j += 1
                k += 1
        src, dst = dst, src
        width *= 2
    if src is not a:
        a[:] = src
    return swaps


@nb.njit(cache=True, nogil=True)
def _store(out, grp, a, b, s, n_obs, tied_x, tied_y, same):  # pragma: no cover - compiled
    """Write S, untied-in-x, untied-in-y and N of pair (a, b) (and of (b, a) when y is x)."""
    n0 = n_obs * (n_obs - 1) // 2
    out[0, grp, a, b] = s
    out[1, grp, a, b] = n0 - tied_x
    out[2, grp, a, b] = n0 - tied_y
    out[3, grp, a, b] = n_obs
    if same:  # (b, a) is (a, b) with the roles of x and y exchanged
        out[0, grp, b, a] = s
        out[1, grp, b, a] = n0 - tied_y
        out[2, grp, b, a] = n0 - tied_x
        out[3, grp, b, a] = n_obs


@nb.njit(cache=True, nogil=True)
def direct_counts(x, y, pa, pb, same, out, start, stop):  # pragma: no cover - compiled
    """Counts of the tasks start..stop-1 (task = group * pairs + pair) for few observations:
    x (g, n, p), y (g, n, q) raw values (NaN missing); pairs (pa[m], pb[m]). Writes S, untied
    in x, untied in y and N into ``out`` (4, g, p, q) (the diagonal is left to the caller when
    ``same``)."""
    n_pairs = pa.size
    for task in range(start, stop):
        grp = task // n_pairs
        m = task % n_pairs
        s, n_obs, tx, ty = _direct_pair(x, y, grp, pa[m], pb[m])
        _store(out, grp, pa[m], pb[m], s, n_obs, tx, ty, same)


@nb.njit(cache=True, nogil=True)
def pair_counts(rx, ox, kx, ry, oy, ky, pa, pb, same, out, start, stop
                ):  # pragma: no cover - compiled
    """Counts of the tasks start..stop-1 (task = group * pairs + pair m, the pair being x
    column pa[m] and y column pb[m]) into ``out`` as `direct_counts`.

    rx, ox : (g, p, n) int32 dense ranks (1..k, 0 = missing) and orders by rank (missing
    last); kx : (g, p) levels. Same for y.
    """
    n_pairs = pa.size
    for task in range(start, stop):
        grp = task // n_pairs
        m = task % n_pairs
        a = pa[m]
        b = pb[m]
        # S is symmetric in x and y: the tree goes to the side with fewer levels (v)
        x_is_v = kx[grp, a] <= ky[grp, b]
        if x_is_v:
            ru, ou, ku = ry[grp, b], oy[grp, b], ky[grp, b]
            rv, ov, kv = rx[grp, a], ox[grp, a], kx[grp, a]
        else:
            ru, ou, ku = rx[grp, a], ox[grp, a], kx[grp, a]
            rv, ov, kv = ry[grp, b], oy[grp, b], ky[grp, b]
        if kv <= FENWICK_MAX_LEVELS:
            s, n_obs, tu, tv = _fenwick_pair(ou, ru, rv, kv)
        else:
            s, n_obs, tu, tv = _merge_pair(ov, ru, rv, ku)
        if x_is_v:
            _store(out, grp, a, b, s, n_obs, tv, tu, same)
        else:
            _store(out, grp, a, b, s, n_obs, tu, tv, same)


# --------------------------------------------------------------------------------------------
# weighted counts for resampling (storyeval.correlation.kendall_weighted)


# Up to this many levels, the weights below a level are summed level by level (no tree).
LINEAR_MAX_LEVELS = 16


@nb.njit(cache=True, nogil=True)
def _weighted_counts(su, vu, kv, w, out, m, swap, b0):  # pragma: no cover - compiled
    """Weighted counts of one pair (u, v) for the weight columns of ``w`` (n, width), whose
    rows are already in u order: ``su`` u ranks and ``vu`` v ranks (1..kv) in that order.
    Writes into ``out[:, b0 + b, m]``: S = sum_{i<j} w_i w_j sign(u_j - u_i) sign(v_j - v_i),
    the sums of squared tie-group weights of x and of y, and the numbers of x and y values with
    positive weight (x is u unless ``swap``).

    A u tie group is queried before any of it is inserted; a Fenwick tree over the v ranks (or,
    for few levels, the per-level weights summed directly) holds one weight per column, so the
    inner loops run over the columns and vectorise."""
    n, width = w.shape
    linear = kv <= LINEAR_MAX_LEVELS
    tree = np.zeros((kv + 1, width))
    at_level = np.zeros((kv + 1, width))  # inserted weight with exactly each v rank
    inserted = np.zeros(width)
    s = np.zeros(width)
    less = np.empty(width)
    group = np.empty(width)
    tied_u = np.zeros(width)
    distinct_u = np.zeros(width)
    start = 0
    while start < n:
        stop = start + 1
        while stop < n and su[stop] == su[start]:
            stop += 1
        for t in range(start, stop):
            r = vu[t]
            less[:] = 0.0
            if linear:
                for i in range(1, r):
                    for b in range(width):
                        less[b] += at_level[i, b]
            else:
                i = r - 1
                while i > 0:
                    for b in range(width):
                        less[b] += tree[i, b]
                    i -= i & (-i)
            for b in range(width):  # less - greater, greater = inserted - less - at_level
                s[b] += w[t, b] * (2.0 * less[b] + at_level[r, b] - inserted[b])
        group[:] = 0.0
        for t in range(start, stop):
            r = vu[t]
            for b in range(width):
                at_level[r, b] += w[t, b]
                group[b] += w[t, b]
            if not linear:
                i = r
                while i <= kv:
                    for b in range(width):
                        tree[i, b] += w[t, b]
                    i += i & (-i)
        for b in range(width):
            inserted[b] += group[b]
            tied_u[b] += group[b] * group[b]
            distinct_u[b] += group[b] > 0
        start = stop
    for b in range(width):
        tied_v = 0.0
        distinct_v = 0.0
        for r in range(1, kv + 1):
            tied_v += at_level[r, b] * at_level[r, b]
            distinct_v += at_level[r, b] > 0
        out[0, b0 + b, m] = s[b]
        out[1 + swap, b0 + b, m] = tied_u[b]
        out[2 - swap, b0 + b, m] = tied_v
        out[3 + swap, b0 + b, m] = distinct_u[b]
        out[4 - swap, b0 + b, m] = distinct_v


@nb.njit(cache=True, nogil=True)
def weighted_pair_counts(ranks, order, levels, u_cols, first, pair, v_cols, swap, wt, chunk,
                         out, start, stop):  # pragma: no cover - compiled
    """Weighted counts (`_weighted_counts`) of the tasks start..stop-1 into ``out`` (5, B, M).

    The pairs are grouped by their u column: group g is column ``u_cols[g]`` with the pairs
    ``pair[first[g]:first[g + 1]]`` (v columns ``v_cols``, ``swap`` 1 where x is v). A task is
    one group x one chunk of weight columns: the chunk's weights are gathered in u order once
    (the one random-access pass), then every pair of the group streams through them.
    ranks, order : (K, n) int32 dense ranks (1..k) and orders by rank of complete columns;
    levels : (K,); wt : (n, B) weights."""
    n = wt.shape[0]
    n_chunks = (wt.shape[1] + chunk - 1) // chunk
    for task in range(start, stop):
        g = task // n_chunks
        b0 = (task % n_chunks) * chunk
        b1 = min(wt.shape[1], b0 + chunk)
        ou = order[u_cols[g]]
        ru = ranks[u_cols[g]]
        w = np.empty((n, b1 - b0))
        su = np.empty(n, np.int32)
        for t in range(n):
            j = ou[t]
            su[t] = ru[j]
            for b in range(b1 - b0):
                w[t, b] = wt[j, b0 + b]
        vu = np.empty(n, np.int32)
        for k in range(first[g], first[g + 1]):
            rv = ranks[v_cols[k]]
            for t in range(n):
                vu[t] = rv[ou[t]]
            _weighted_counts(su, vu, levels[v_cols[k]], w, out, pair[k], swap[k], b0)
