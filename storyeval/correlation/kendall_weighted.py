"""Kendall counts under observation weights, for many weight vectors at once, O(n log n) each.

Bootstrap resamples are multiplicities ``w`` (how often each story is drawn) and a paired
permutation is a 0/1 choice between two copies of every story (`storyeval.resample`). For
complete columns x, y of n observations and a weight vector w this module counts

    S_w = sum_{i<j} w_i w_j sign(x_j - x_i) sign(y_j - y_i)

(copies of one story are tied in both columns and drop out, so ``S_w`` is ``C - D`` of the
explicitly resampled vectors) and the weighted pairs not tied in a column,
``U_w = (W^2 - sum_g W_g^2) / 2`` with ``W`` the total weight and ``W_g`` that of tie group g
(the tau-b denominator of the resampled vector). All counts are exact integers held in float64
(below 2**53).

Engines, as in `storyeval.correlation.kendall_sorted`:

* **numba** (the ``fast`` extra): per (column u, chunk of weight vectors), the weights are
  gathered in u's order once; then, for every pair with u on its side with more levels, the
  observations are visited in that order while a Fenwick tree over the ranks of the other
  column (13 levels for a criterion) holds one weight per vector, so the innermost loop runs
  over the weight vectors and vectorises: O(B n log k) per pair.
* **NumPy**: per chunk of pairs, for all weight vectors at once, the observations in (y, x)
  order and the weighted strict inversions D of the x ranks by a wavelet decomposition (the
  bits, groups and partitions computed once per pair, only the weights carried per vector),
  with ``S_w = (W^2 - sum W_x^2 - sum W_y^2 + sum W_xy^2) / 2 - 2 D``: also O(B n log k),
  about 50 times slower.

Both give identical counts (tests/test_kendall_weighted.py also compares them with the O(n^2)
sign-matrix formulation and with scipy on explicitly resampled vectors).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from storyeval.correlation.kendall_sorted import _lex_order, _on_threads, engine, rank_order

__all__ = ["WeightedCounts", "WeightedKendall"]

# NumPy engine: about 6 float64 arrays of (pairs, B, n) live at once per chunk of pairs
_CHUNK_BYTES = 64 * 2**20
# numba engine: the tree and per-level weights, (levels + 1) x chunk float64 each, stay within
# this many bytes (cache-resident)
_TREE_BYTES = 2**17
# numba engine: the weights of one chunk, gathered in a column's order (n x chunk float64)
_GATHER_BYTES = 2**25


class WeightedCounts(NamedTuple):
    """Weighted counts, each (B, M): one row per weight vector, one column per pair (x, y)."""

    s: np.ndarray  #: sum_{i<j} w_i w_j sign(x_j - x_i) sign(y_j - y_i)
    untied_x: np.ndarray  #: weighted pairs not tied in x: (W^2 - sum_g W_g^2) / 2
    untied_y: np.ndarray  #: the same for y
    distinct_x: np.ndarray  #: distinct x values among observations with positive weight
    distinct_y: np.ndarray  #: the same for y


class WeightedKendall:
    """Weighted Kendall counts of column pairs (ia[m], ic[m]) of complete data.

    Parameters
    ----------
    values : (n, K) float array without NaN
    ia, ic : (M,) column indices of the pairs
    engine_name : {"numba", "numpy"}, optional
        Default: numba when installed (see `storyeval.correlation.kendall_sorted.engine`).

    Examples
    --------
    >>> import numpy as np
    >>> wk = WeightedKendall(np.array([[1., 1.], [2., 3.], [3., 2.]]), [0], [1])
    >>> c = wk.counts(np.array([[1., 1., 1.], [2., 1., 0.]]))
    >>> c.s.ravel().tolist(), c.untied_x.ravel().tolist()
    ([1.0, 2.0], [3.0, 2.0])
    """

    def __init__(self, values: np.ndarray, ia, ic, engine_name: str | None = None):
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or np.isnan(values).any():
            raise ValueError("WeightedKendall needs a complete (n, K) array")
        self.n, self.K = values.shape
        self.ia = np.asarray(ia, dtype=np.int64)
        self.ic = np.asarray(ic, dtype=np.int64)
        self.engine = engine() if engine_name is None else engine_name
        ranks, order, levels = rank_order(values[None])
        self.ranks, self.order, self.levels = ranks[0], order[0], levels[0]
        # first sorted position of every tie group, per column (for group weights)
        srt = np.take_along_axis(self.ranks, self.order.astype(np.int64), axis=1)
        self._starts = [np.flatnonzero(np.r_[True, row[1:] != row[:-1]]) for row in srt]

    def counts(self, W: np.ndarray) -> WeightedCounts:
        """The weighted counts of every pair for every weight vector (rows of ``W``, (B, n),
        integer valued, e.g. bootstrap multiplicities)."""
        W = np.asarray(W, dtype=np.float64)
        if W.ndim != 2 or W.shape[1] != self.n:
            raise ValueError(f"weights must be (B, {self.n}), got {W.shape}")
        total = W.sum(axis=1)[:, None] ** 2
        if self.engine == "numba":
            s, tied_x, tied_y, distinct_x, distinct_y = self._counts_numba(W)
        else:
            tied, distinct = self._column_groups(W)
            s = self._concordance_numpy(W, tied)
            tied_x, tied_y = tied[:, self.ia], tied[:, self.ic]
            distinct_x, distinct_y = distinct[:, self.ia], distinct[:, self.ic]
        return WeightedCounts(s, 0.5 * (total - tied_x), 0.5 * (total - tied_y),
                              distinct_x, distinct_y)

    def _column_groups(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(B, K) sums of squared tie-group weights and numbers of groups with weight > 0."""
        tied = np.zeros((W.shape[0], self.K))
        distinct = np.zeros((W.shape[0], self.K))
        for k in np.unique(np.r_[self.ia, self.ic]):  # one vectorised group sum per column
            g = np.add.reduceat(W[:, self.order[k]], self._starts[k], axis=1)
            tied[:, k] = np.einsum("bg,bg->b", g, g)
            distinct[:, k] = (g > 0).sum(axis=1)
        return tied, distinct

    def _counts_numba(self, W: np.ndarray) -> np.ndarray:
        import storyeval.correlation._kendall_numba as compiled

        B, M = W.shape[0], self.ia.size
        out = np.zeros((5, B, M))
        # u: the side with more levels (the tree goes to the other); pairs grouped by u
        swap = (self.levels[self.ia] <= self.levels[self.ic]).astype(np.int64)
        u = np.where(swap == 1, self.ic, self.ia)
        v = np.where(swap == 1, self.ia, self.ic)
        pair = np.argsort(u, kind="stable")
        u_cols, first = np.unique(u[pair], return_index=True)
        first = np.r_[first, M].astype(np.int64)
        kv = int(self.levels[v].max(initial=1))
        widest = min(_TREE_BYTES // (16 * (kv + 1)), _GATHER_BYTES // (8 * self.n))
        widest = int(np.clip(widest, 4, 128))
        chunk = -(-B // -(-B // widest))  # equal chunks of at most `widest` vectors
        wt = np.ascontiguousarray(W.T)  # no copy for story-major weights (story_weights)
        args = (self.ranks, self.order, self.levels, u_cols.astype(np.int64), first, pair,
                v[pair], swap[pair], wt, chunk, out)
        _on_threads(compiled.weighted_pair_counts, args, len(u_cols) * -(-B // chunk))
        return out

    def _concordance_numpy(self, W: np.ndarray, tied: np.ndarray) -> np.ndarray:
        """S of every pair: ``(W^2 - sum W_x^2 - sum W_y^2 + sum W_xy^2) / 2 - 2 D``."""
        B, M = W.shape[0], self.ia.size
        total = W.sum(axis=1)
        out = np.empty((B, M))
        per_chunk = max(1, _CHUNK_BYTES // (8 * 6 * B * max(self.n, 1)))
        for p0 in range(0, M, per_chunk):  # chunks of pairs, all weight vectors at once
            pairs = np.arange(p0, min(M, p0 + per_chunk))
            # S is symmetric: the wavelet runs over the bits of the side with fewer levels
            fewer = self.levels[self.ia[pairs]] <= self.levels[self.ic[pairs]]
            a = np.where(fewer, self.ia[pairs], self.ic[pairs])
            c = np.where(fewer, self.ic[pairs], self.ia[pairs])
            order = _lex_order(self.order[a].astype(np.int64), self.ranks[c])  # (y, x) order
            xs = np.take_along_axis(self.ranks[a], order, axis=1).astype(np.int64)
            ys = np.take_along_axis(self.ranks[c], order, axis=1)
            w = np.take(W, order, axis=1).transpose(1, 0, 2)  # (pairs, B, n)
            d = _weighted_inversions(xs, w, int(self.levels[a].max()))
            same = np.zeros(xs.shape, dtype=bool)  # tied in both with the previous one
            same[:, 1:] = (xs[:, 1:] == xs[:, :-1]) & (ys[:, 1:] == ys[:, :-1])
            both = _run_squares(same, w)
            untied = 0.5 * (total[None, :] ** 2 - tied[:, a].T - tied[:, c].T + both)
            out[:, pairs] = (untied - 2.0 * d).T
        return out


def _weighted_inversions(xs: np.ndarray, w: np.ndarray, levels: int) -> np.ndarray:
    """Weighted strict inversions ``sum_{i before j} w_i w_j [x_i > x_j]`` of every sequence
    ``xs[p]`` (ranks 1..levels, (P, n)) under every weight vector ``w[p, b]`` ((P, B, n)).

    The wavelet decomposition of `storyeval.correlation.kendall_sorted._wavelet_inversions`, with the
    data-dependent part (each level's bits, groups and stable partition) computed once per
    sequence and only the weights carried per vector: from the top bit down, the elements stay
    grouped by their higher bits; a pair splits at the highest bit where its ranks differ and is
    an inversion when its bit-1 element comes first, so each bit-0 element adds its weight times
    the weight of the bit-1 elements before it in its group.
    """
    out = np.zeros(w.shape[:2])
    for bit in range(max(1, int(levels).bit_length()) - 1, -1, -1):
        one = ((xs >> bit) & 1).astype(np.float64)[:, None, :]  # (P, 1, n)
        high = xs >> (bit + 1)
        new_group = np.ones(xs.shape, dtype=bool)
        new_group[:, 1:] = high[:, 1:] != high[:, :-1]
        weighted_ones = w * one
        ones_before = np.cumsum(weighted_ones, axis=2) - weighted_ones  # exclusive
        # the running value at each group's start (non-decreasing: weights are >= 0)
        at_start = np.maximum.accumulate(np.where(new_group[:, None, :], ones_before, 0.0),
                                         axis=2)
        out += np.einsum("pbn,pbn->pb", w - weighted_ones, ones_before - at_start)
        step = np.argsort(xs >> bit, axis=1, kind="stable")  # the next level's order
        xs = np.take_along_axis(xs, step, axis=1)
        w = np.take_along_axis(w, step[:, None, :], axis=2)
    return out


def _run_squares(same_as_previous: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(P, B) sums of squared run weights: runs of consecutive elements of sequence p flagged
    equal by ``same_as_previous`` (P, n) (a sequence's first element starts a run), weights
    ``w`` (P, B, n)."""
    P, B, n = w.shape
    starts = ~same_as_previous
    starts[:, 0] = True
    first = np.flatnonzero(starts.ravel())  # run starts along the P sequences laid end to end
    runs = np.add.reduceat(w.transpose(1, 0, 2).reshape(B, P * n), first, axis=1)
    per_sequence = np.r_[0, np.cumsum(starts.sum(axis=1))[:-1]]  # first run of each sequence
    return np.add.reduceat(runs * runs, per_sequence, axis=1).T
