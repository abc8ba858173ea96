"""The NumPy engine of the system-level permutation test's tau-b differences, in blocks.

For every compared row (a criterion h, measures a and b with their orientations) and every swap
of prompts between a and b, ``tau_b(h, a*) - tau_b(h, b*)`` of the swapped system means.
`TauBBlocks` computes them a block of rows at a time and hands each block to a consumer (the
mid-p summary of `storyeval.compare.procedures._kendall_b_midp`, or a matrix), so the (swaps x
rows) matrix need never exist. What makes it fast:

* the swapped means of a and b depend on the pair (a, b) and its orientations, not on the
  criterion: their pair signs (S (S - 1) / 2 per swap) are computed once per distinct pair (a
  *group*) and multiplied with every criterion's pair signs in one matrix product;
* the signs are float32 (exact for signs and their sums over pairs), from float64 differences
  rounded once; rounding is monotone, so every pair within the tie rule's bound ``rtol
  max|v|`` stays within the rounded bound and is checked again in float64 (a *candidate*);
* the means are laid out system-major (each system's swaps contiguous: NumPy's loops over a
  short last axis, e.g. two measures, ran 5-10x slower per value);
* blocks of groups whose temporaries take about `SIGN_BLOCK_BYTES` run in cache (32 MB blocks
  took twice as long), their temporaries allocated once per thread (fresh ones were faulted in
  anew each time), on up to two threads (NumPy releases the GIL; the blocks' rows are
  disjoint); a group whose signs alone exceed the block (many systems) goes in slices of swaps.

Pairs closer than the tie rule's tolerance are ties; where two swapped means are near but not
equal (the tie rule's chains could then join more), or not finite, the rows of that group are
handed back to `storyeval.compare.procedures._numpy_deltas`, whose tie rule is the reported
correlations' own: both engines give the same numbers, bit for bit
(tests/test_system_permutation_engine.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

#: Bytes of pair-sign temporaries (float32) per block.
SIGN_BLOCK_BYTES = 2**22
#: Most pairs of systems whose float32 sign sums are exact (2^24: about 5,800 systems); with
#: more, every row is handed back to the float64 reference engine.
EXACT_PAIRS = 2**24

Consumer = Callable[[np.ndarray, np.ndarray], None]


def criterion_columns(H: np.ndarray, ih: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct criteria's columns of the rows' criterion means ``H`` (S, rows), (S, C),
    and each row's criterion among them: what the swaps are compared with, once per
    criterion instead of once per row."""
    _, first, hrow = np.unique(ih, return_index=True, return_inverse=True)
    return H[:, first], hrow.ravel()


class TauBBlocks:
    """The tau-b deltas of the rows ``(ih, ia, ib, sa, sb)`` (arguments as
    `storyeval.compare.procedures._numpy_deltas`'s) for every swap; `run` hands them out a
    block of rows at a time."""

    def __init__(self, swapped: np.ndarray, mean: np.ndarray, observed_means: np.ndarray,
                 scale: np.ndarray, shift: np.ndarray, H: np.ndarray, ih: np.ndarray,
                 ia: np.ndarray, ib: np.ndarray, sa: np.ndarray, sb: np.ndarray,
                 tie_rtol: float) -> None:
        self.total, self.S = swapped.shape[0], swapped.shape[1]
        self.iu, self.ju = np.triu_indices(self.S, k=1)
        self.P = len(self.iu)
        Hu, self.hrow = criterion_columns(H, ih)
        # (C, pairs): float32 holds the signs and their sums over pairs exactly
        self.h_sign = np.sign(Hu[self.iu] - Hu[self.ju]).T.astype(np.float32)  # H is snapped
        self.h_den = (self.h_sign != 0).sum(1).astype(np.float64)
        self.groups, grow = np.unique(np.stack([ia, ib, sa, sb], 1), axis=0,
                                      return_inverse=True)
        self.grow = grow.ravel()
        self.fallback = np.zeros(len(self.groups), dtype=bool)
        self.by_system = np.ascontiguousarray(swapped.transpose(1, 2, 0))  # (S, M, N+1)
        self.mean, self.observed_means = mean, observed_means
        self.scale, self.shift, self.tie_rtol = scale, shift, tie_rtol
        per_swap = 4 * max(self.P, 1)
        self.step = max(1, int(SIGN_BLOCK_BYTES // (per_swap * self.total)))
        self.swap_step = min(self.total, max(1, int(SIGN_BLOCK_BYTES // per_swap)))
        self.cells = self.P * self.swap_step * min(self.step, len(self.groups))

    def run(self, consume: Consumer) -> np.ndarray:
        """``consume(rows, block)`` for every block of rows, ``block`` their (len(rows), N + 1)
        deltas (called from up to two threads); returns the rows handed back to
        `_numpy_deltas`."""
        from storyeval.correlation.resampled import _one_blas_thread

        if self.P > EXACT_PAIRS:  # float32 sums of the signs could round: none computed here
            return np.arange(len(self.grow))
        starts = list(range(0, len(self.groups), self.step))
        workers = min(2, os.cpu_count() or 1, len(starts))

        def share(k: int) -> None:
            work = self._workspace()
            for lo in starts[k::workers]:
                self._block(lo, work, consume)

        # the sign products are small (criteria x pairs x a block): BLAS threads would only
        # spin (0.9 s of a second core's time at 200 stories, and 0.1 s slower)
        with _one_blas_thread():
            if workers <= 1:
                share(0)
            else:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(share, range(workers)))
        return np.flatnonzero(self.fallback[self.grow])

    def _workspace(self) -> tuple[np.ndarray, ...]:
        """A thread's block temporaries: differences, the two comparisons, the signs of a and
        of b."""
        cells = self.cells
        return (np.empty(cells, dtype=np.float32), np.empty(cells, dtype=bool),
                np.empty(cells, dtype=bool), np.empty(cells, dtype=np.float32),
                np.empty(cells, dtype=np.float32))

    def _block(self, lo: int, work: tuple[np.ndarray, ...], consume: Consumer) -> None:
        """The rows of groups ``lo:lo + step``, their swaps in slices of `swap_step`."""
        g = self.groups[lo:lo + self.step]
        mine = np.flatnonzero((self.grow >= lo) & (self.grow < lo + len(g)))
        gi, ci = self.grow[mine] - lo, self.hrow[mine]
        block = np.empty((len(mine), self.total))
        near = np.zeros(len(g), dtype=bool)
        for t0 in range(0, self.total, self.swap_step):
            t1 = min(self.total, t0 + self.swap_step)
            A, B = self._means(g, t0, t1)
            a_sign, a_den, a_near = self._signs(A, work, 0)
            b_sign, b_den, b_near = self._signs(B, work, 1)
            near |= a_near | b_near
            block[:, t0:t1] = (self._tau(a_sign, a_den, gi, ci)
                               - self._tau(b_sign, b_den, gi, ci))
        self.fallback[lo:lo + self.step] = near
        consume(mine, block)

    def _means(self, g: np.ndarray, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
        """The swapped means (S, G, t1 - t0) of a and b of the groups ``g`` for swaps t0:t1,
        with the floating-point operations of `_numpy_deltas`; swap 0 is the identity
        arrangement, the reported system means."""
        ga, gb = g[:, 0].astype(np.int64), g[:, 1].astype(np.int64)
        gsa, gsb = g[:, 2, None], g[:, 3, None]
        X = self.by_system[:, :, t0:t1]
        mean, scale, shift = self.mean, self.scale, self.shift
        with np.errstate(over="ignore", invalid="ignore"):
            # np.take keeps the result C-contiguous (an index on an inner axis would not)
            move = np.take(X, gb, axis=1) * gsb - np.take(X, ga, axis=1) * gsa
            A = (mean[:, ga, None] * gsa + move) * scale[ga, None] + gsa * shift[ga, None]
            B = (mean[:, gb, None] * gsb - move) * scale[gb, None] + gsb * shift[gb, None]
        if t0 == 0:
            A[:, :, 0] = self.observed_means[:, ga] * g[:, 2]
            B[:, :, 0] = self.observed_means[:, gb] * g[:, 3]
        return A, B

    def _signs(self, V: np.ndarray, work: tuple[np.ndarray, ...],
               side: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pair signs (P, G, swaps) of the system-major means ``V`` (S, G, swaps) under the tie
        rule (in ``work[3 + side]``), untied pairs per swap (G, swaps), and the groups whose
        swaps hold a near tie or a non-finite mean."""
        P, S, rtol = self.P, self.S, self.tie_rtol
        shape = (P, *V.shape[1:])
        size = P * V.shape[1] * V.shape[2]
        d = work[0][:size].reshape(shape)
        pos, neg, sign = work[1][:size], work[2][:size], work[3 + side][:size]
        start = 0
        with np.errstate(over="ignore", invalid="ignore"):
            for i in range(S - 1):  # v_i - v_j of the pairs i < j, in np.triu_indices order
                np.subtract(V[i], V[i + 1:], out=d[start:start + S - 1 - i],
                            casting="same_kind")
                start += S - 1 - i
            bound = (rtol * np.abs(V).max(axis=0)).astype(np.float32)
            np.greater(d, bound, out=pos.reshape(shape))
            np.less(d, -bound, out=neg.reshape(shape))
        # candidates (and NaN differences) are neither: sign 0 until checked
        undecided = size - np.count_nonzero(pos) - np.count_nonzero(neg)
        np.subtract(pos.view(np.int8), neg.view(np.int8), out=sign)
        sign = sign.reshape(shape)
        if np.isfinite(V).all():
            near = np.zeros(V.shape[1], dtype=bool)
        else:
            near = ~np.isfinite(V).transpose(1, 0, 2).reshape(V.shape[1], -1).all(axis=1)
        untied = np.full(V.shape[1:], float(P))
        if undecided:
            self._check_candidates(V, sign, untied, near)
        return sign, untied, near

    def _check_candidates(self, V: np.ndarray, sign: np.ndarray, untied: np.ndarray,
                          near: np.ndarray) -> None:
        """The exact tie rule on the pairs left at sign 0: a tie stays 0 and is not counted as
        untied (a tie of unequal values flags its group as near); any other gets its sign."""
        k, g, n = np.nonzero(sign == 0)
        x, y = V[self.iu[k], g, n], V[self.ju[k], g, n]
        with np.errstate(invalid="ignore"):
            tied = np.abs(x - y) <= self.tie_rtol * np.maximum(np.abs(x), np.abs(y))
        sign[k[~tied], g[~tied], n[~tied]] = np.sign(x[~tied] - y[~tied])
        np.subtract.at(untied, (g[tied], n[tied]), 1.0)
        near[np.unique(g[tied & (x != y)])] = True

    def _tau(self, sign: np.ndarray, untied: np.ndarray, gi: np.ndarray,
             ci: np.ndarray) -> np.ndarray:
        """(rows, swaps) tau-b of the rows (group gi, criterion ci) of one side. The sign sums
        (exact integers in float32) by one matrix product with the block's criteria where the
        rows use most of its (criterion, group) cells (a few criteria shared by every pair of
        measures: the usual study), else row by row (e.g. a simulation whose every row has a
        criterion of its own: the product would be criteria x groups x swaps)."""
        crit, cinv = np.unique(ci, return_inverse=True)
        if len(crit) * sign.shape[1] <= 2 * len(ci):
            num = (self.h_sign[crit] @ sign.reshape(self.P, -1)).reshape(len(crit),
                                                                         *sign.shape[1:])
            num = num[cinv.ravel(), gi]
        else:
            num = np.einsum("rp,prn->rn", self.h_sign[ci], sign[:, gi])
        den = self.h_den[ci, None] * untied[gi]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.sqrt(den), np.nan)
