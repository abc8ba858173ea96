"""Compiled Kendall deltas of the system-level permutation test (numba; the optional ``fast`` extra).

Imported only by `storyeval.compare.procedures.system_permutation` when numba is installed and
the Kendall engine is ``numba`` (`storyeval.correlation.kendall_sorted.engine`). For every
compared row (a criterion h, measures a and b) and every permutation, the kernel forms the
swapped system means of a and b with the same floating-point operations, in the same order, as
the NumPy engine, applies the system-level tie rule (`storyeval.correlation.ties.snap_ties`) and
computes ``tau(h, a*) - tau(h, b*)`` (tau-b or tau-c) as `storyeval.correlation.resampled.direct`
does: integer sign-product sums, one correctly rounded division (and square root). The results
are therefore bit-identical to the NumPy engine's, without its (permutations x rows x systems x
3) temporaries.

A rank coefficient sees only the order of the snapped means: snapping replaces every value by
the smallest of its group (sorted values chained while ``|gap| <= rtol * max(|u|, |v|)``), so
two snapped values compare as their groups do. The kernel compares group numbers and never
materialises the snapped values.

A row whose swapped means are not all finite (overflow) is flagged and left to the NumPy
engine, whose tie rule and sign conventions for inf and NaN the kernel does not reproduce.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from storyeval.correlation.kendall_sorted import _on_threads

__all__ = ["kendall_deltas"]


@nb.njit(cache=True, nogil=True)
def _groups(v, rtol, order, group):  # pragma: no cover - compiled
    """Group number of each value of ``v`` under the tie rule (0 = the smallest group); returns
    the number of groups. ``order`` is scratch space of len(v)."""
    n = v.size
    for i in range(n):  # insertion sort of the indices (a few systems)
        key = v[i]
        j = i - 1
        while j >= 0 and v[order[j]] > key:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = i
    g = 0
    group[order[0]] = 0
    for t in range(1, n):
        u = v[order[t - 1]]
        w = v[order[t]]
        gap = abs(w - u)
        # the chaining test of snap_ties (equal values are always joined: rtol = 0 keeps ties)
        if not gap <= rtol * max(abs(u), abs(w)):
            g += 1
        group[order[t]] = g
    return g + 1


@nb.njit(cache=True, nogil=True)
def _grouped_counts(v, rtol, sign_h, order, group):  # pragma: no cover - compiled
    """(num, den, distinct) of the values ``v`` under the tie rule: the sign-product sum with
    the criterion's pair signs, the pairs not tied in ``v`` and the number of groups."""
    n = v.size
    distinct = _groups(v, rtol, order, group)
    num = 0
    den = 0
    q = 0
    for i in range(n - 1):
        gi = group[i]
        for j in range(i + 1, n):
            gj = group[j]
            s = (gj > gi) - (gj < gi)
            num += s * sign_h[q]
            den += s != 0
            q += 1
    return num, den, distinct


@nb.njit(cache=True, nogil=True)
def _coefficients(v, rtol, sign_h, den_h, distinct_h, tau_c, num, den, near, order, group,
                  column, r):  # pragma: no cover - compiled
    """``r[p]``: tau-b or tau-c of the values ``v[:, p]`` (systems x permutations) under the
    tie rule against the criterion's pair signs, as `storyeval.correlation.resampled.direct`
    computes it for unit weights (NaN where its denominator is 0). ``num``, ``den``, ``near``,
    ``order``, ``group``, ``column`` are scratch space.

    The raw order of the values is their snapped order unless two different values are within
    the tolerance (chaining joins only such neighbours): every pair of systems is compared in
    one pass over the permutations (contiguous, branch-free: vectorised), and the few
    permutations with a near tie, or every one for tau-c (which needs the number of groups),
    are grouped one by one (`_groups`)."""
    n, total = v.shape
    num[:] = 0
    den[:] = 0
    near[:] = 0
    q = 0
    for i in range(n - 1):
        vi = v[i]
        for j in range(i + 1, n):
            vj = v[j]
            sh = sign_h[q]
            for p in range(total):
                x = vi[p]
                y = vj[p]
                gt = y > x
                lt = y < x
                num[p] += sh * (np.int64(gt) - np.int64(lt))
                den[p] += gt | lt
                near[p] |= (gt | lt) & (abs(y - x) <= rtol * max(abs(x), abs(y)))
            q += 1
    for p in range(total):
        if tau_c or near[p]:
            for s in range(n):
                column[s] = v[s, p]
            c_num, c_den, distinct = _grouped_counts(column, rtol, sign_h, order, group)
            num[p] = c_num
            den[p] = c_den
            if tau_c:
                m = float(min(distinct, distinct_h))
                size = float(n)
                scale = size * size * (m - 1.0) / max(m, 1.0)
                r[p] = 2.0 * float(c_num) / scale if scale > 0 else np.nan
                continue
        prod = float(den[p]) * float(den_h)
        r[p] = float(num[p]) / math.sqrt(prod) if prod > 0 else np.nan


@nb.njit(cache=True, nogil=True)
def _rows(swapped, mean, observed, scale, shift, h, ia, ib, sa, sb, rtol, tau_c, out, flag,
          start, stop):  # pragma: no cover - compiled
    """Deltas of rows ``start:stop`` for every permutation (``out[row]``); ``flag[row]`` is
    set where a swapped or criterion mean is not finite (the row is left to the NumPy
    engine). ``swapped`` is (K, S, N + 1): a column's permutations contiguous."""
    _, n, total = swapped.shape
    n_pairs = n * (n - 1) // 2
    sign_h = np.empty(n_pairs, np.int64)
    group_h = np.empty(n, np.int64)
    group = np.empty(n, np.int64)
    order = np.empty(n, np.int64)
    column = np.empty(n)
    hv = np.empty(n)
    va = np.empty((n, total))
    vb = np.empty((n, total))
    num = np.empty(total, np.int64)
    den = np.empty(total, np.int64)
    near = np.empty(total, np.bool_)
    r_a = np.empty(total)
    r_b = np.empty(total)
    for row in range(start, stop):
        ka = ia[row]
        kb = ib[row]
        ra = sa[row]
        rb = sb[row]
        finite = True
        for s in range(n):
            hv[s] = h[s, row]
            finite = finite and math.isfinite(hv[s])
        # the swapped means, (a_s + move) * scale + sa * shift as the NumPy engine computes
        # them, and the identity arrangement: the reported system means
        shift_a = ra * shift[ka]
        shift_b = rb * shift[kb]
        bad = False
        for s in range(n):
            base_a = mean[s, ka] * ra
            base_b = mean[s, kb] * rb
            xa = swapped[ka, s]
            xb = swapped[kb, s]
            for p in range(1, total):
                move = xb[p] * rb - xa[p] * ra
                va[s, p] = (base_a + move) * scale[ka] + shift_a
                vb[s, p] = (base_b - move) * scale[kb] + shift_b
                # x - x is 0 for finite x, NaN for inf and NaN (an OR that vectorises)
                bad |= (va[s, p] - va[s, p] != 0.0) | (vb[s, p] - vb[s, p] != 0.0)
            va[s, 0] = observed[s, ka] * ra
            vb[s, 0] = observed[s, kb] * rb
            bad |= (va[s, 0] - va[s, 0] != 0.0) | (vb[s, 0] - vb[s, 0] != 0.0)
        if bad or not finite:
            flag[row] = True
            continue
        # h has been through the tie rule already: its ties are equal values (as in direct)
        distinct_h = _groups(hv, 0.0, order, group_h)
        den_h = 0
        q = 0
        for i in range(n - 1):
            for j in range(i + 1, n):
                sign_h[q] = (group_h[j] > group_h[i]) - (group_h[j] < group_h[i])
                den_h += sign_h[q] != 0
                q += 1
        _coefficients(va, rtol, sign_h, den_h, distinct_h, tau_c, num, den, near, order, group,
                      column, r_a)
        _coefficients(vb, rtol, sign_h, den_h, distinct_h, tau_c, num, den, near, order, group,
                      column, r_b)
        for p in range(total):
            out[row, p] = r_a[p] - r_b[p]


def kendall_deltas(swapped: np.ndarray, mean: np.ndarray, observed: np.ndarray,
                   scale: np.ndarray, shift: np.ndarray, h: np.ndarray, ia: np.ndarray,
                   ib: np.ndarray, sa: np.ndarray, sb: np.ndarray, rtol: float,
                   method: str) -> tuple[np.ndarray, np.ndarray]:
    """``delta* = tau(h, a*) - tau(h, b*)`` of every permutation and row (tau-b or tau-c).

    ``swapped`` (N + 1, S, K): the swapped prompts' column sums per system divided by the
    stories per system (row 0, the identity, unused); ``mean``, ``observed`` (S, K): the
    z-scored and the reported system means; ``scale``, ``shift`` (K,): the z-scoring to undo;
    ``h`` (S, R): the criterion's system means of each row after the tie rule; ``ia``, ``ib``,
    ``sa``, ``sb`` (R,): the rows' columns and orientations. Returns the (N + 1, R) deltas and
    an (R,) flag of the rows left undone (NaN there: a mean not finite).
    """
    if method not in ("kendall_b", "kendall_c"):
        raise ValueError(f"no compiled permutation kernel for {method!r}")
    size = len(ia)
    out = np.full((size, swapped.shape[0]), np.nan)
    flag = np.zeros(size, dtype=np.bool_)
    if swapped.shape[1] < 2:  # no pair of systems: every coefficient undefined, as direct's
        return out.T, flag
    args = (np.ascontiguousarray(np.asarray(swapped, dtype=np.float64).transpose(2, 1, 0)),
            np.ascontiguousarray(mean, dtype=np.float64),
            np.ascontiguousarray(observed, dtype=np.float64),
            np.ascontiguousarray(scale, dtype=np.float64),
            np.ascontiguousarray(shift, dtype=np.float64),
            np.ascontiguousarray(h, dtype=np.float64),
            np.ascontiguousarray(ia, dtype=np.int64), np.ascontiguousarray(ib, dtype=np.int64),
            np.ascontiguousarray(sa, dtype=np.float64),
            np.ascontiguousarray(sb, dtype=np.float64),
            float(rtol), method == "kendall_c", out, flag)
    _on_threads(_rows, args, size)
    return out.T, flag
