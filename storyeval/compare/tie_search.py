"""Exact search for the best tie epsilon without enumerating every pair (tie calibration at scale).

`storyeval.compare.tie_calibration` scores a pair as correct when the metric orders it as the
humans do with ``|m_i - m_j| > epsilon``, or when the humans tie it and ``|m_i - m_j| <=
epsilon``. At one epsilon the number of correct pairs of a pool is

    correct(eps) = conc - conc_le(eps) + tied_le(eps),

``conc`` the pairs the metric orders strictly as the humans do, ``conc_le(eps)`` those of them
with ``|dm| <= eps`` and ``tied_le(eps)`` the human-tied pairs with ``|dm| <= eps``. Sorting the
observations by (group, metric ascending, human descending), the pairs with ``|dm| <= eps`` of
observation k are the window ``k < j < hi_k`` (``hi_k`` one searchsorted per epsilon, checked
against the float difference ``m_j - m_k`` exactly as the pairwise code computes it), and both
counts are window counts of "human rank above / equal to k's": differences of prefix counts
``#{j < p : r_j >= v}``, answered by a prefix-count matrix (few human levels) or a merge-sort
tree (any number). One epsilon costs O(n log n) time and O(n) memory.

The best epsilon is found by branch and bound over epsilon intervals: on ``(a, b]`` both counts
are monotone, so ``correct(eps) <= min(correct(a) + tied_le(b) - tied_le(a), correct(b) +
conc_le(b) - conc_le(a))``. Intervals whose bound cannot reach the best value found (or can
only tie it at a larger epsilon) are dropped; the others are split at epsilons drawn
systematically from their own pair differences, and an interval with few pairs left
(`ENUMERATE_PAIRS`) has its pairs enumerated and its whole curve computed. The result is the
pairwise algorithm's: the same candidates (0 and every pair difference), the same values and
the same choice (the smallest epsilon reaching the maximum), without its O(n^2) memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from storyeval.correlation.resampled import _one_blas_thread

__all__ = ["ENUMERATE_PAIRS", "TieSearch", "counts_at", "resampled_best", "search_best_epsilon"]

#: Most pairs one interval of epsilon enumerates at once (its curve then computed exactly).
ENUMERATE_PAIRS = 2**21
#: New epsilons evaluated inside an interval too large to enumerate.
_SPLITS = 16
#: The prefix-count matrix is used while (observations + 1) x (levels + 1) stays below this.
_MATRIX_CELLS = 2**26
_FLOAT_TIE = 1e-12


class _PrefixCounts:
    """``ge(p, v) = #{j < p : r_j >= v}`` for arrays of positions p and levels v."""

    def __init__(self, r: np.ndarray, n_levels: int):
        self.n = len(r)
        self.n_levels = n_levels
        if (self.n + 1) * (n_levels + 1) <= _MATRIX_CELLS:
            table = np.zeros((n_levels + 1, self.n + 1), dtype=np.int32)
            for v in range(n_levels):
                np.cumsum(r >= v, out=table[v, 1:])
            self.table: np.ndarray | None = table.ravel()
            self.levels: list[np.ndarray] = []
            return
        self.table = None  # merge-sort tree: per level, keys block * L + r sorted
        block = np.arange(self.n, dtype=np.int64)
        self.levels = []
        width = 1
        while width <= self.n:
            self.levels.append(np.sort((block // width) * n_levels + r))
            width *= 2

    def ge(self, p: np.ndarray, v: np.ndarray) -> np.ndarray:
        if self.table is not None:
            return self.table[v * (self.n + 1) + p].astype(np.int64)
        out = np.zeros(len(p), dtype=np.int64)
        for b, keys in enumerate(self.levels):
            on = np.flatnonzero((p >> b) & 1)
            if len(on) == 0:
                continue
            q = (p[on] >> b) - 1
            end = np.minimum((q + 1) << b, self.n)
            out[on] += end - np.searchsorted(keys, q * self.n_levels + v[on] - 1, side="right")
        return out


@dataclass
class _Pool:
    """Observations sorted by (group, metric ascending, human descending)."""

    m: np.ndarray
    r: np.ndarray
    group: np.ndarray        # group code (0..G-1) of every observation
    starts: np.ndarray       # first observation of every group
    end: np.ndarray          # per observation: one past its group's last observation
    run_start: np.ndarray    # per observation: first of its run of equal metric scores
    run_end: np.ndarray      # per observation: one past the last of that run
    counter: _PrefixCounts
    base_ge: np.ndarray      # ge(k + 1, r_k) and ge(k + 1, r_k + 1)
    base_gt: np.ndarray
    keys: np.ndarray | None  # group + 1j * metric (several groups) for searchsorted
    pairs: np.ndarray        # pairs per group
    index: np.ndarray        # per observation: its position in the arrays given to `_pool`


def _lexical(group: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Complex keys that NumPy orders by group, then value (lexicographically)."""
    z = np.empty(len(value), dtype=np.complex128)
    z.real, z.imag = group, value
    return z


def _pool(h: np.ndarray, m: np.ndarray, codes: np.ndarray) -> _Pool:
    """The sorted pool of observations in groups of two or more (codes 0..G-1 from any ints)."""
    sizes = np.bincount(codes)
    keep = sizes[codes] >= 2
    kept = np.flatnonzero(keep)
    h, m, codes = h[keep], m[keep], codes[keep]
    _, codes = np.unique(codes, return_inverse=True)
    levels, r = np.unique(h, return_inverse=True)
    order = np.lexsort((-r, m, codes))
    m, r, codes = m[order], r[order].astype(np.int64), codes[order].astype(np.int64)
    n = len(m)
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if n else np.zeros(0, int)
    ends = np.r_[starts[1:], n]
    sizes = ends - starts
    end = np.repeat(ends, sizes)
    new_run = np.r_[True, (m[1:] != m[:-1]) | (codes[1:] != codes[:-1])] if n else np.zeros(0, bool)
    run_first = np.flatnonzero(new_run)
    run_len = np.diff(np.r_[run_first, n])
    run_start = np.repeat(run_first, run_len)
    run_end = np.repeat(run_first + run_len, run_len)
    counter = _PrefixCounts(r, len(levels))
    k1 = np.arange(1, n + 1, dtype=np.int64)
    return _Pool(m, r, codes, starts, end, run_start, run_end, counter,
                 counter.ge(k1, r), counter.ge(k1, r + 1),
                 _lexical(codes, m) if len(starts) > 1 else None, sizes * (sizes - 1) // 2,
                 kept[order])


def _window_end(pool: _Pool, eps: float, strict: bool = False) -> np.ndarray:
    """``hi_k``: one past the last j of k's group with ``m_j - m_k <= eps`` (``< eps`` when
    ``strict``), the difference computed in float64 as the pairwise code computes it."""
    n = len(pool.m)
    k = np.arange(n, dtype=np.int64)
    side: Literal["left", "right"] = "left" if strict else "right"
    if pool.keys is None:
        hi = np.searchsorted(pool.m, pool.m + eps, side=side)
    else:
        hi = np.searchsorted(pool.keys, _lexical(pool.group, pool.m + eps), side=side)
    hi = np.clip(hi.astype(np.int64), k + 1, pool.end)

    def inside(j: np.ndarray, i: np.ndarray) -> np.ndarray:
        d = pool.m[j] - pool.m[i]
        return d < eps if strict else d <= eps

    while True:  # `m_k + eps` rounds: move by runs of equal scores until the difference decides
        up = np.flatnonzero(hi < pool.end)
        up = up[inside(hi[up], up)]
        if len(up) == 0:
            break
        hi[up] = pool.run_end[hi[up]]
    while True:
        down = np.flatnonzero(hi > k + 1)
        down = down[~inside(hi[down] - 1, down)]
        if len(down) == 0:
            break
        hi[down] = np.maximum(pool.run_start[hi[down] - 1], down + 1)
    return hi


@dataclass(frozen=True)
class _Point:
    """Per-group counts at one epsilon."""

    eps: float
    pairs_le: np.ndarray  # pairs with |dm| <= eps
    conc_le: np.ndarray   # concordant pairs with |dm| <= eps
    tied_le: np.ndarray   # human-tied pairs with |dm| <= eps


def _point(pool: _Pool, eps: float, hi: np.ndarray | None = None) -> _Point:
    if hi is None:
        hi = _window_end(pool, eps)
    ge_eq = pool.counter.ge(hi, pool.r)
    ge_gt = pool.counter.ge(hi, pool.r + 1)
    gt = ge_gt - pool.base_gt
    eq = (ge_eq - ge_gt) - (pool.base_ge - pool.base_gt)
    width = hi - np.arange(1, len(hi) + 1)
    return _Point(eps, np.add.reduceat(width, pool.starts), np.add.reduceat(gt, pool.starts),
                  np.add.reduceat(eq, pool.starts))


def counts_at(h: np.ndarray, m: np.ndarray, codes: np.ndarray,
              eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Correct pairs and pairs per group (groups with a pair) at one epsilon, O(n log n)."""
    pool = _pool(h, m, codes)
    conc = _point(pool, np.inf, pool.end.copy()).conc_le
    p = _point(pool, eps)
    return conc - p.conc_le + p.tied_le, pool.pairs


@dataclass
class TieSearch:
    """Result of `search_best_epsilon`: the candidates evaluated and their values.

    ``correct`` holds ``sum_g w_g * correct_g`` with ``w_g = 1`` when every group has the same
    number of pairs (``exact``: integer counts) and ``1 / (pairs_g * G)`` otherwise.
    """

    thresholds: np.ndarray
    correct: np.ndarray
    exact: bool
    pairs: np.ndarray
    n_evaluated: int = 0
    n_enumerated: int = 0
    best: int = field(default=0)


class _Search:
    def __init__(self, pool: _Pool):
        self.pool = pool
        self.exact = bool(np.all(pool.pairs == pool.pairs[0]))
        self.w = (np.ones(len(pool.pairs)) if self.exact
                  else 1.0 / (pool.pairs * len(pool.pairs)))
        self.conc = _point(pool, np.inf, pool.end.copy()).conc_le
        self.found: dict[float, float] = {}  # evaluated epsilons
        self.chunks: list[tuple[np.ndarray, np.ndarray]] = []  # enumerated curves
        self.n_evaluated = self.n_enumerated = 0

    def weigh(self, counts: np.ndarray) -> float:
        if self.exact:
            return float(np.sum(counts))  # integers below 2^53: exact in float64
        return float(np.dot(self.w, counts))

    def evaluate(self, eps: float, hi: np.ndarray | None = None) -> _Point:
        pt = _point(self.pool, eps, hi)
        self.found[eps] = self.weigh(self.conc - pt.conc_le + pt.tied_le)
        self.n_evaluated += 1
        return pt

    def curve(self) -> tuple[np.ndarray, np.ndarray]:
        """Every candidate with a value so far, increasing (no duplicates)."""
        eps = np.concatenate([np.fromiter(self.found, dtype=np.float64),
                              *(c[0] for c in self.chunks)])
        vals = np.concatenate([np.fromiter(self.found.values(), dtype=np.float64),
                               *(c[1] for c in self.chunks)])
        eps, first = np.unique(eps, return_index=True)
        return eps, vals[first]

    def incumbent(self) -> tuple[float, float]:
        """Best value found and the smallest epsilon reaching it (within float noise)."""
        eps, vals = self.curve()
        top = float(vals.max())
        return top, float(eps[vals >= top - self.tolerance(top)][0])

    def tolerance(self, top: float) -> float:
        return 0.0 if self.exact else _FLOAT_TIE * max(1.0, abs(top))

    def bound(self, a: _Point, b: _Point) -> float:
        """Largest value any epsilon in (a, b) can reach."""
        up = self.found[a.eps] + self.weigh(b.tied_le - a.tied_le)
        down = self.found[b.eps] + self.weigh(b.conc_le - a.conc_le)
        return min(up, down)

    def inner_pairs(self, a: _Point, b: _Point) -> tuple[np.ndarray, np.ndarray]:
        """Per observation k: the first j with m_j - m_k > a and the count with < b."""
        start = _window_end(self.pool, a.eps)
        return start, np.maximum(_window_end(self.pool, b.eps, strict=True) - start, 0)

    def enumerate(self, a: _Point, start: np.ndarray, count: np.ndarray) -> None:
        """The exact curve at every candidate strictly between a and b (its best kept).

        Between two candidates the value rises by the human-tied pairs and falls by the
        concordant pairs that become metric ties; discordant pairs change nothing, so a
        maximum first reached inside lies at the difference of a human-tied pair."""
        pool = self.pool
        k = np.repeat(np.arange(len(count)), count)
        j = start[k] + np.arange(len(k)) - np.repeat(np.cumsum(count) - count, count)
        self.n_enumerated += len(k)
        rk, rj = pool.r[k], pool.r[j]
        tied, conc = rj == rk, rj > rk
        if not tied.any():
            return  # the curve only falls inside (a, b)
        diff = pool.m[j] - pool.m[k]
        up, down = diff[tied], diff[conc]
        if self.exact:
            up.sort()
            down.sort()
            last = np.flatnonzero(np.r_[up[1:] != up[:-1], True])
            eps = up[last]
            gain = (last + 1) - np.searchsorted(down, eps, side="right")
        else:
            g = pool.group[k]
            both = np.r_[up, down]
            weight = np.r_[self.w[g[tied]], -self.w[g[conc]]]
            order = np.argsort(both)
            both, steps = both[order], np.cumsum(weight[order])
            ends = np.flatnonzero(np.r_[both[1:] != both[:-1], True])
            eps, gain = both[ends], steps[ends]
        values = self.found[a.eps] + gain
        top = values.max()  # keep the interval's best candidates, not its whole curve
        keep = np.unique([int(np.argmax(values)),
                          int(np.argmax(values >= top - self.tolerance(top)))])
        self.chunks.append((eps[keep], values[keep]))

    def split(self, a: _Point, b: _Point, start: np.ndarray, count: np.ndarray) -> list[_Point]:
        """Evaluate epsilons drawn systematically from the pair differences inside (a, b)."""
        pool = self.pool
        cum = np.cumsum(count)
        total = int(cum[-1])
        ranks = ((np.arange(_SPLITS) + 0.5) * total / _SPLITS).astype(np.int64)
        k = np.searchsorted(cum, ranks, side="right")
        j = start[k] + ranks - (cum[k] - count[k])
        cuts = np.unique(pool.m[j] - pool.m[k])  # all inside (a, b)
        return [a, *(self.evaluate(float(c)) for c in cuts), b]


def search_best_epsilon(h: np.ndarray, m: np.ndarray, codes: np.ndarray) -> TieSearch:
    """The best tie epsilon of tie-calibrated pairwise accuracy, exactly, without all pairs.

    Parameters
    ----------
    h, m : ndarray of float64
        Human and metric scores (no NaN).
    codes : ndarray of int
        Group code per observation (pairs are formed within groups; at least one pair).

    Returns
    -------
    TieSearch
        Every candidate given a value (0, the largest difference, the interval cuts and every
        candidate of the enumerated intervals), increasing, with its weighted correct count;
        ``best`` indexes the smallest epsilon reaching the largest value.

    Notes
    -----
    Validated against the pairwise algorithm of `storyeval.compare.tie_calibration` (every
    candidate) and mt-metrics-eval's ``KendallWithTiesOpt`` (tests/test_tie_search.py).
    """
    pool = _pool(h, m, codes)
    search = _Search(pool)
    ends = np.r_[pool.starts[1:], len(pool.m)]
    span = float(np.max(pool.m[ends - 1] - pool.m[pool.starts]))
    intervals = [(search.evaluate(0.0), search.evaluate(span))] if span > 0 else []
    if span == 0:
        search.evaluate(0.0)
    while intervals:
        best, best_eps = search.incumbent()
        survivors: list[tuple[_Point, _Point]] = []
        for a, b in intervals:
            bound = search.bound(a, b)
            if bound < best - search.tolerance(best) or (a.eps >= best_eps and bound <= best):
                continue  # nothing inside beats the best (or ties it at a smaller epsilon)
            start, count = search.inner_pairs(a, b)
            inside = int(count.sum())
            if inside == 0:
                continue
            if inside <= ENUMERATE_PAIRS:
                search.enumerate(a, start, count)
                continue
            cuts = search.split(a, b, start, count)
            survivors.extend(zip(cuts[:-1], cuts[1:]))
        intervals = survivors
    thresholds, correct = search.curve()
    _, best_eps = search.incumbent()
    return TieSearch(thresholds, correct, search.exact, pool.pairs, search.n_evaluated,
                     search.n_enumerated, int(np.searchsorted(thresholds, best_eps)))


# --------------------------------------------------------------------------------------------
# bootstrap: the best value of every resample, without enumerating every pair
#
# A resample reweighs the observations' pairs: at the overall level (one pool) a pair of stories
# of prompts p and q counts c_p c_q times (c: the prompt's draws), the product of per-story
# weights u_k = c_p(k); at the prompt level a prompt's pairs weigh c_p / (pairs of p) / sum c.
# Either way the value at one epsilon is ``CONC - conc_le(eps) + tied_le(eps)`` with weighted
# counts, and the branch and bound above applies unchanged. What does not depend on the
# weights is computed once and shared by all resamples: the window ends at every epsilon
# evaluated, the prompt level's per-prompt counts there, the cuts of every interval and the pairs
# of every interval small enough to enumerate. Per resample and epsilon the overall level then
# costs a few gathers from the resample's weighted prefix table (O(n) per epsilon, O(n L) per
# resample for the table, L human levels), the prompt level a dot product over the prompts.

#: Most pairs one interval enumerates in the bootstrap search (its curve is then recomputed
#: under every resample's weights).
RESAMPLE_ENUMERATE_PAIRS = 2**19
#: Epsilons evaluated inside an interval too large to enumerate, per resample (few: a good
#: incumbent prunes most intervals, and every evaluation costs O(n)).
_RESAMPLE_SPLITS = 2
#: The overall level's weighted prefix table ((levels + 1) x (n + 1) floats) at most.
RESAMPLE_TABLE_CELLS = 2**25
#: Bytes the shared structures of the bootstrap search may hold; beyond, they are dropped and
#: recomputed where needed (same values, more time).
_SHARED_BYTES = 2**29


class _SharedSearch:
    """What every resample's search of one pool shares (see above)."""

    def __init__(self, pool: _Pool, grouped: bool):
        self.pool, self.grouped = pool, grouped
        self.hi: dict[float, np.ndarray] = {}
        self.points: dict[float, _Point] = {}
        self.flats: dict[float, np.ndarray] = {}
        self.bytes = 0
        self.inner: dict[tuple[float, float], tuple] = {}
        ends = np.r_[pool.starts[1:], len(pool.m)]
        self.span = float(np.max(pool.m[ends - 1] - pool.m[pool.starts]))
        self.hints: list[float] = []  # the best epsilons of earlier resamples

    def _room(self, size: int) -> None:
        """Drop every shared structure when ``size`` more bytes would exceed the budget."""
        self.bytes += size
        if self.bytes > _SHARED_BYTES:
            self.hi.clear()
            self.points.clear()
            self.inner.clear()
            self.flats.clear()
            self.bytes = size

    def window(self, eps: float) -> np.ndarray:
        if eps not in self.hi:
            hi = _window_end(self.pool, eps)
            self._room(hi.nbytes)
            self.hi[eps] = hi
        return self.hi[eps]

    def flat(self, eps: float, stride: int) -> np.ndarray:
        """``hi_k stride + r_k``: where the weighted prefix tables are read at ``eps``."""
        if eps not in self.flats:
            at = self.window(eps) * stride + self.pool.r
            self._room(at.nbytes)
            self.flats[eps] = at
        return self.flats[eps]

    def point(self, eps: float) -> _Point:
        """Unweighted per-group counts (the prompt level's resamples only reweigh groups)."""
        if eps not in self.points:
            self.points[eps] = _point(self.pool, eps, self.window(eps))
        return self.points[eps]

    def interval(self, a: float, b: float) -> tuple:
        """``("none",)``, ``("cuts", eps...)`` or ``("pairs", k, j, sign, run_end, diff)``: the
        candidates strictly inside (a, b), split or enumerated (sorted by difference)."""
        key = (a, b)
        if key in self.inner:
            return self.inner[key]
        pool = self.pool
        start = self.window(a)
        count = np.maximum(_window_end(pool, b, strict=True) - start, 0)
        total = int(count.sum())
        if total == 0:
            out: tuple = ("none",)
        elif total > RESAMPLE_ENUMERATE_PAIRS:
            cum = np.cumsum(count)
            ranks = ((np.arange(_RESAMPLE_SPLITS) + 0.5) * total
                     / _RESAMPLE_SPLITS).astype(np.int64)
            k = np.searchsorted(cum, ranks, side="right")
            j = start[k] + ranks - (cum[k] - count[k])
            out = ("cuts", *np.unique(pool.m[j] - pool.m[k]).tolist())
        else:
            k = np.repeat(np.arange(len(count)), count)
            j = start[k] + np.arange(len(k)) - np.repeat(np.cumsum(count) - count, count)
            sign = np.sign(pool.r[j] - pool.r[k])  # +1 concordant, 0 human tie, -1 discordant
            keep = sign >= 0
            k, j, sign = k[keep], j[keep], sign[keep]
            if not len(k):  # only discordant pairs inside: the value is constant there
                self.inner[key] = ("none",)
                return self.inner[key]
            diff = pool.m[j] - pool.m[k]
            order = np.argsort(diff, kind="stable")
            k, j, diff = k[order].astype(np.int32), j[order].astype(np.int32), diff[order]
            step = np.where(sign[order] == 0, 1.0, -1.0)  # tie gained, concordant pair lost
            run_end = np.flatnonzero(np.r_[diff[1:] != diff[:-1], True])
            out = ("pairs", k, j, step, run_end, diff)
            self._room(k.nbytes + j.nbytes + step.nbytes + run_end.nbytes + diff.nbytes)
        self.inner[key] = out
        return out


class _StoryWeights:
    """Overall level: pair weight ``u_k u_j`` from per-story weights ``u`` (sorted order).

    The prefix table ``T[p, v] = sum_{j < p, r_j >= v} u_j`` is stored position-major: the
    window ends of consecutive observations rise with them, so one epsilon's reads sweep the
    table in order (memory-bound reads, several times faster than level-major)."""

    def __init__(self, pool: _Pool, u: np.ndarray):
        n, levels = len(pool.m), pool.counter.n_levels
        onehot = np.zeros((n, levels + 1))
        onehot[np.arange(n), pool.r] = u
        at_least = np.cumsum(onehot[:, ::-1], axis=1)[:, ::-1]  # u_j [r_j >= v]
        table = np.zeros((n + 1, levels + 1))
        np.cumsum(at_least, axis=0, out=table[1:])
        self.table, self.stride, self.u = table.ravel(), levels + 1, u
        base = np.arange(1, n + 1) * self.stride + pool.r  # ge(k + 1, r_k)
        base_ge, base_gt = self.table[base], self.table[base + 1]
        self.denominator = (u.sum() ** 2 - (u**2).sum()) / 2
        self.u_base_gt = float(u @ base_gt)
        self.u_base_eq = float(u @ (base_ge - base_gt))

    def counts(self, shared: _SharedSearch, eps: float) -> tuple[float, float]:
        at = shared.flat(eps, self.stride)  # hi_k (levels + 1) + r_k
        ge_eq = self.table[at]
        ge_gt = self.table[at + 1]
        u_gt = float(self.u @ ge_gt)
        return u_gt - self.u_base_gt, float(self.u @ ge_eq) - u_gt - self.u_base_eq

    def pair_weights(self, k: np.ndarray, j: np.ndarray) -> np.ndarray:
        return self.u[k] * self.u[j]


class _GroupWeights:
    """Prompt level: a group's pairs weigh ``factor[g]`` (its draws / its pairs / all draws)."""

    def __init__(self, pool: _Pool, factor: np.ndarray):
        self.factor, self.group = factor, pool.group
        self.denominator = 1.0

    def counts(self, shared: _SharedSearch, eps: float) -> tuple[float, float]:
        pt = shared.point(eps)
        return float(self.factor @ pt.conc_le), float(self.factor @ pt.tied_le)

    def pair_weights(self, k: np.ndarray, j: np.ndarray) -> np.ndarray:
        return self.factor[self.group[k]]


def _resample_best(shared: _SharedSearch, weights, conc: float) -> tuple[float, float]:
    """Largest weighted correct count of one resample over all epsilons, and an epsilon
    reaching it (branch and bound of `search_best_epsilon` on the shared structures)."""
    found: dict[float, tuple[float, float, float]] = {}

    def value(eps: float) -> float:
        if eps not in found:
            c, t = weights.counts(shared, eps)
            found[eps] = (conc - c + t, c, t)
        return found[eps][0]

    # the hints (earlier resamples' best epsilons) only give a first incumbent: the intervals
    # start from (0, span) and split at the same cuts in every resample, so that their shared
    # structures are found again
    best, best_eps = max((value(e), e) for e in (0.0, shared.span, *shared.hints))
    intervals = [(0.0, shared.span)] if shared.span > 0 else []
    while intervals:
        survivors: list[tuple[float, float]] = []
        for a, b in intervals:
            fa, ca, ta = found[a]
            fb, cb, tb = found[b]
            if min(fa + (tb - ta), fb + (cb - ca)) <= best + _FLOAT_TIE * max(1.0, abs(best)):
                continue  # nothing inside (a, b) beats the best
            inner = shared.interval(a, b)
            if inner[0] == "pairs":
                _, k, j, step, run_end, diff = inner
                curve = fa + np.cumsum(step * weights.pair_weights(k, j))[run_end]
                top = int(np.argmax(curve))
                if curve[top] > best:
                    best, best_eps = float(curve[top]), float(diff[run_end[top]])
            elif inner[0] == "cuts":
                cuts = [a, *inner[1:], b]
                for e in inner[1:]:
                    if value(e) > best:
                        best, best_eps = value(e), e
                survivors.extend(zip(cuts[:-1], cuts[1:]))
        intervals = survivors
    return best, best_eps


def resampled_best(h: np.ndarray, m: np.ndarray, codes: np.ndarray, clusters: np.ndarray,
                   draws: np.ndarray, *, grouped: bool) -> np.ndarray | None:
    """Tie-calibrated accuracy (acc23) at its best epsilon in every resample of clusters.

    Parameters
    ----------
    h, m : ndarray of float64
        Human and metric scores (no NaN).
    codes : ndarray of int
        Group of every observation (pairs within groups): all zeros for one pool.
    clusters : ndarray of int
        Cluster (prompt) code of every observation.
    draws : ndarray (B, n_clusters)
        How often each cluster is drawn in each resample.
    grouped : bool
        False: one pool, a pair of observations of clusters p and q weighs ``c_p c_q``;
        True: groups are the clusters, a group's pairs weigh ``c_g / pairs_g`` (normalised).

    Returns
    -------
    ndarray (B,) or None
        The statistic of every resample (NaN where no pair has weight); None when the
        overall level's weighted prefix table would exceed `RESAMPLE_TABLE_CELLS` (too many
        human levels: the caller enumerates the pairs instead).

    Notes
    -----
    The same values as recomputing the curve over every pair under every resample's weights
    (`storyeval.compare.tie_calibration`), checked in tests/test_tie_calibration.py.
    """
    pool = _pool(h, m, codes)
    n = len(pool.m)
    if not grouped and (pool.counter.n_levels + 1) * (n + 1) > RESAMPLE_TABLE_CELLS:
        return None
    with _one_blas_thread():  # dot products of n: threaded BLAS only waits (20x under load)
        return _resampled(pool, clusters, draws, grouped)


def _resampled(pool: _Pool, clusters: np.ndarray, draws: np.ndarray,
               grouped: bool) -> np.ndarray:
    shared = _SharedSearch(pool, grouped)
    clusters = clusters[pool.index]
    out = np.full(len(draws), np.nan)
    group_cluster = clusters[pool.starts]
    conc_g = shared.point(shared.span).conc_le if grouped else None  # all pairs concordant
    for b, c in enumerate(draws):
        weights: _StoryWeights | _GroupWeights
        if grouped:
            drawn = c[group_cluster].astype(np.float64)
            if drawn.sum() == 0:
                continue
            weights = _GroupWeights(pool, drawn / (pool.pairs * drawn.sum()))
            conc = float(weights.factor @ conc_g)
        else:
            weights = _StoryWeights(pool, c[clusters].astype(np.float64))
            if weights.denominator == 0:
                continue
            conc = weights.counts(shared, shared.span)[0]
        best, eps = _resample_best(shared, weights, conc)
        out[b] = best / weights.denominator
        if eps not in shared.hints:
            shared.hints = [eps, *shared.hints][:4]
    return out
