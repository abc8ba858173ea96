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

__all__ = ["kendall_deltas", "kendall_midp"]


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
def _shared_coefficients(v, rtol, signs, den_h, distinct_h, tau_c, num, den, near, sign_p,
                         order, group, column, r):  # pragma: no cover - compiled
    """``r[c, p]``: tau-b or tau-c of the values ``v[:, p]`` (systems x permutations) under
    the tie rule against the pair signs ``signs[c]`` of each criterion ``c`` of a group of
    rows that share the swapped values ``v`` (the same measures a and b, orientations and
    masks; only the criterion differs), as `storyeval.correlation.resampled.direct` computes
    it for unit weights (NaN where its denominator is 0). ``num`` (C, permutations), ``den``,
    ``near``, ``sign_p``, ``order``, ``group``, ``column`` are scratch space.

    The pair signs of ``v`` are computed once for all criteria (one pass over the
    permutations per pair of systems, contiguous and branch-free: vectorised), then added to
    each criterion's sums with that criterion's sign of the pair. The raw order of the values
    is their snapped order unless two different values are within the tolerance (chaining
    joins only such neighbours): the few permutations with a near tie, or every one for tau-c
    (which needs the number of groups), are grouped one by one (`_groups`)."""
    n, total = v.shape
    crits = signs.shape[0]
    num[:, :] = 0
    den[:] = 0
    near[:] = 0
    q = 0
    for i in range(n - 1):
        vi = v[i]
        for j in range(i + 1, n):
            vj = v[j]
            if crits == 1:  # one criterion (e.g. 10^5 stories, one aspect): one pass
                sh = signs[0, q]
                row = num[0]
                for p in range(total):
                    x = vi[p]
                    y = vj[p]
                    gt = y > x
                    lt = y < x
                    row[p] += sh * (np.int64(gt) - np.int64(lt))
                    den[p] += gt | lt
                    near[p] |= (gt | lt) & (abs(y - x) <= rtol * max(abs(x), abs(y)))
                q += 1
                continue
            for p in range(total):
                x = vi[p]
                y = vj[p]
                gt = y > x
                lt = y < x
                sign_p[p] = np.int64(gt) - np.int64(lt)
                den[p] += gt | lt
                near[p] |= (gt | lt) & (abs(y - x) <= rtol * max(abs(x), abs(y)))
            for c in range(crits):
                sh = signs[c, q]
                if sh != 0:
                    row = num[c]
                    for p in range(total):
                        row[p] += sh * sign_p[p]
            q += 1
    for p in range(total):
        if tau_c or near[p]:
            for s in range(n):
                column[s] = v[s, p]
            for c in range(crits):
                c_num, c_den, distinct = _grouped_counts(column, rtol, signs[c], order, group)
                if tau_c:
                    m = float(min(distinct, distinct_h[c]))
                    size = float(n)
                    scale = size * size * (m - 1.0) / max(m, 1.0)
                    r[c, p] = 2.0 * float(c_num) / scale if scale > 0 else np.nan
                else:
                    prod = float(c_den) * float(den_h[c])
                    r[c, p] = float(c_num) / math.sqrt(prod) if prod > 0 else np.nan
            continue
        for c in range(crits):
            prod = float(den[p]) * float(den_h[c])
            r[c, p] = float(num[c, p]) / math.sqrt(prod) if prod > 0 else np.nan


@nb.njit(cache=True, nogil=True, inline="always")
def _oriented(x, alternative):  # pragma: no cover - compiled
    """``x`` as the test orders it (larger is more extreme): 0 two-sided |x|, 1 greater x,
    2 less -x (`storyeval.compare.procedures._oriented`)."""
    if alternative == 0:
        return abs(x)
    if alternative == 2:
        return -x
    return x


@nb.njit(cache=True, nogil=True)
def _midp_summary(d, alternative, alpha, tol, buf):  # pragma: no cover - compiled
    """(more, tied, defined, spread) of one row's deltas ``d`` (the observed first, then the
    swaps'),
    as `storyeval.compare.procedures._midp_counts` and `_midp_spread` compute them with NumPy
    (the same operations in the same order: the same bits). ``alternative``: 0 two-sided,
    1 greater, 2 less. ``buf`` is scratch space of len(d) - 1."""
    total = d.size
    n = total - 1
    obs = _oriented(d[0], alternative)
    more = 0
    tied = 0
    defined = 0
    for p in range(1, total):
        x = _oriented(d[p], alternative)
        more += x > obs + tol
        tied += abs(x - obs) <= tol
        defined += x == x
        buf[p - 1] = x if x == x else -np.inf  # undefined swaps sort below every value
    cut = alpha * (defined + 1)
    top = math.ceil(cut - 0.5) - 1
    if top < 0:
        spread = np.inf
    else:
        k = max(0, n - 1 - top)
        v = np.partition(buf, k)[k]
        above = 0
        tied_v = 0
        for p in range(1, total):
            x = _oriented(d[p], alternative)
            above += x > v + tol
            tied_v += abs(x - v) <= tol
        at = above + 0.5 * (1 + tied_v)
        spread = v - 4 * tol * max(1.0, abs(v)) if at < cut else v
        if not math.isfinite(v):
            spread = np.nan
    if not math.isfinite(d[0]):
        spread = np.nan
    return more, tied, defined, spread


@nb.njit(cache=True, nogil=True)
def _groups_kernel(swapped, mean, observed, scale, shift, h, ia, ib, sa, sb, rtol, tau_c,
                   members, bounds, fused, alternative, alpha, tol, out, counts, spread, flag,
                   start, stop):  # pragma: no cover - compiled
    """Rows of groups ``start:stop`` (``members[bounds[g]:bounds[g + 1]]``: rows with the same
    measures and orientations, one per criterion) for every permutation. ``fused``: each
    row's mid-p summary into ``counts[row]`` (more, tied, defined) and ``spread[row]`` (the observed
    delta, the interval's half-width; `_midp_summary`; ``out`` unused); else its deltas into
    ``out[row]``. ``flag[row]`` is set
    where a swapped or criterion mean is not finite (the row is left to the NumPy engine).
    ``swapped`` is (K, S, N + 1): a column's permutations contiguous."""
    _, n, total = swapped.shape
    n_pairs = n * (n - 1) // 2
    widest = 0
    for g in range(start, stop):
        widest = max(widest, bounds[g + 1] - bounds[g])
    signs = np.empty((widest, n_pairs), np.int64)
    den_h = np.empty(widest, np.int64)
    distinct_h = np.empty(widest, np.int64)
    rows = np.empty(widest, np.int64)
    group_h = np.empty(n, np.int64)
    group = np.empty(n, np.int64)
    order = np.empty(n, np.int64)
    column = np.empty(n)
    hv = np.empty(n)
    va = np.empty((n, total))
    vb = np.empty((n, total))
    num = np.empty((widest, total), np.int64)
    den = np.empty(total, np.int64)
    near = np.empty(total, np.bool_)
    sign_p = np.empty(total, np.int64)
    r_a = np.empty((widest, total))
    r_b = np.empty((widest, total))
    delta = np.empty(total)
    buf = np.empty(max(total - 1, 1))
    for g in range(start, stop):
        first = members[bounds[g]]
        ka = ia[first]
        kb = ib[first]
        ra = sa[first]
        rb = sb[first]
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
        crits = 0
        for m in range(bounds[g], bounds[g + 1]):
            row = members[m]
            finite = True
            for s in range(n):
                hv[s] = h[s, row]
                finite = finite and math.isfinite(hv[s])
            if bad or not finite:
                flag[row] = True
                continue
            # h has been through the tie rule already: its ties are equal values (as in direct)
            distinct_h[crits] = _groups(hv, 0.0, order, group_h)
            d_h = 0
            q = 0
            for i in range(n - 1):
                for j in range(i + 1, n):
                    sgn = (group_h[j] > group_h[i]) - (group_h[j] < group_h[i])
                    signs[crits, q] = sgn
                    d_h += sgn != 0
                    q += 1
            den_h[crits] = d_h
            rows[crits] = row
            crits += 1
        if crits == 0:
            continue
        _shared_coefficients(va, rtol, signs[:crits], den_h[:crits], distinct_h[:crits], tau_c,
                             num[:crits], den, near, sign_p, order, group, column, r_a)
        _shared_coefficients(vb, rtol, signs[:crits], den_h[:crits], distinct_h[:crits], tau_c,
                             num[:crits], den, near, sign_p, order, group, column, r_b)
        for c in range(crits):
            row = rows[c]
            if fused:
                for p in range(total):
                    delta[p] = r_a[c, p] - r_b[c, p]
                more, tied, defined, width = _midp_summary(delta, alternative, alpha, tol,
                                                           buf)
                counts[row, 0] = more
                counts[row, 1] = tied
                counts[row, 2] = defined
                spread[row, 0] = delta[0]
                spread[row, 1] = width
            else:
                for p in range(total):
                    out[row, p] = r_a[c, p] - r_b[c, p]


def _row_groups(ia: np.ndarray, ib: np.ndarray, sa: np.ndarray,
                sb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows grouped by (a, b, orientations): rows in a group differ only by criterion and
    share their swapped values. Returns (members, bounds): group g is
    ``members[bounds[g]:bounds[g + 1]]``, rows in their original order within a group."""
    if len(ia) == 0:
        return np.zeros(0, np.int64), np.zeros(1, np.int64)
    keys = np.stack([ia, ib, np.sign(sa), np.sign(sb)]).astype(np.int64)
    _, code = np.unique(keys, axis=1, return_inverse=True)
    code = code.ravel()
    members = np.argsort(code, kind="stable").astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(code))]).astype(np.int64)
    return members, bounds


def _run(swapped, mean, observed, scale, shift, h, ia, ib, sa, sb, rtol, method, fused,
         alternative, alpha, tol, out, counts, spread, flag) -> None:
    """The kernel over the row groups on up to two threads."""
    if method not in ("kendall_b", "kendall_c"):
        raise ValueError(f"no compiled permutation kernel for {method!r}")
    members, bounds = _row_groups(np.asarray(ia), np.asarray(ib), np.asarray(sa),
                                  np.asarray(sb))
    args = (np.ascontiguousarray(np.asarray(swapped, dtype=np.float64).transpose(2, 1, 0)),
            np.ascontiguousarray(mean, dtype=np.float64),
            np.ascontiguousarray(observed, dtype=np.float64),
            np.ascontiguousarray(scale, dtype=np.float64),
            np.ascontiguousarray(shift, dtype=np.float64),
            np.ascontiguousarray(h, dtype=np.float64),
            np.ascontiguousarray(ia, dtype=np.int64), np.ascontiguousarray(ib, dtype=np.int64),
            np.ascontiguousarray(sa, dtype=np.float64),
            np.ascontiguousarray(sb, dtype=np.float64),
            float(rtol), method == "kendall_c", members, bounds, fused,
            {"two-sided": 0, "greater": 1, "less": 2}[alternative], float(alpha), float(tol),
            out, counts, spread, flag)
    _on_threads(_groups_kernel, args, len(bounds) - 1)


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
    size = len(ia)
    out = np.full((size, swapped.shape[0]), np.nan)
    flag = np.zeros(size, dtype=np.bool_)
    if swapped.shape[1] < 2:  # no pair of systems: every coefficient undefined, as direct's
        if method not in ("kendall_b", "kendall_c"):
            raise ValueError(f"no compiled permutation kernel for {method!r}")
        return out.T, flag
    _run(swapped, mean, observed, scale, shift, h, ia, ib, sa, sb, rtol, method, False,
         "two-sided", 0.05, 0.0, out, np.zeros((1, 3), np.int64), np.zeros((1, 2)), flag)
    return out.T, flag


def kendall_midp(swapped: np.ndarray, mean: np.ndarray, observed: np.ndarray,
                 scale: np.ndarray, shift: np.ndarray, h: np.ndarray, ia: np.ndarray,
                 ib: np.ndarray, sa: np.ndarray, sb: np.ndarray, rtol: float, method: str,
                 alternative: str, alpha: float, tol: float,
                 ) -> tuple[np.ndarray, ...]:
    """The mid-p test's summary of every row without its (N + 1, R) deltas: ``(observed,
    more, tied, defined, spread, flag)`` (the observed delta, the swaps more extreme, tied
    and defined, the interval's half-width), equal bit for bit to
    `storyeval.compare.procedures._midp_counts` and `_midp_spread` of `kendall_deltas`'s output (arguments as there; ``alternative``,
    ``alpha`` and the tolerance ``tol`` as the test's). Rows flagged (a mean not finite) are
    left undone (zeros, NaN spread) for the NumPy engine. Memory: per thread, a few
    (systems x permutations) buffers instead of a (permutations x rows) matrix."""
    size = len(ia)
    counts = np.zeros((size, 3), np.int64)
    spread = np.full((size, 2), np.nan)
    flag = np.zeros(size, dtype=np.bool_)
    if swapped.shape[1] < 2:  # every coefficient undefined: the NumPy engine says so
        if method not in ("kendall_b", "kendall_c"):
            raise ValueError(f"no compiled permutation kernel for {method!r}")
        flag[:] = True
    else:
        _run(swapped, mean, observed, scale, shift, h, ia, ib, sa, sb, rtol, method, True,
             alternative, alpha, tol, np.zeros((1, 1)), counts, spread, flag)
    return spread[:, 0], counts[:, 0], counts[:, 1], counts[:, 2], spread[:, 1], flag
