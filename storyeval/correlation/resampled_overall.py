"""The overall-level kernel: correlations over all stories under resampling weights.

A bootstrap resample is a vector of story multiplicities factorised over systems and prompts
(`story_weights`); `OverallKernel` evaluates every coefficient from the weights without
building resampled vectors (see `storyeval.correlation.resampled` for the formulas). For Kendall,
`overall_kendall_plan` picks the cheapest of three exact kernels (block sums, dense story-pair
products, weighted O(n log k) counts of `storyeval.correlation.kendall_weighted`).
"""

from __future__ import annotations

import numpy as np

from storyeval.correlation.resampled import (
    KENDALL,
    _chunks,
    _safe_div,
    _weighted_pearson_cols,
)


def story_weights(cS: np.ndarray, cP: np.ndarray, *, story_major: bool = False) -> np.ndarray:
    """(B, S*P) story multiplicities from system (B, S) and prompt (B, P) multiplicities.

    ``story_major``: the same values laid out story by story (a transposed view of a
    C-contiguous (S*P, B) array), which the compiled weighted Kendall counts read without a
    transposed copy (at 10^6 stories and 91 resamples a copy of 728 MB, about 0.3 s)."""
    if story_major:
        product = np.multiply(cS.T[:, None, :], cP.T[None, :, :], order="C")  # (S, P, B)
        return product.reshape(-1, cS.shape[0]).T
    return (cS[:, :, None] * cP[:, None, :]).reshape(cS.shape[0], -1)


class OverallKernel:
    """Correlations of column pairs over all stories under factorised weights.

    Parameters
    ----------
    X : (S, P, K) cube; ia, ic : column indices of the M pairs; method;
    mode : "prompts" (weights vary by prompt only), "systems", or "stories" (general);
    n_resamples : how many weight vectors will be evaluated (bootstrap resamples plus jackknife
        rows), for the choice of the Kendall kernel (`overall_kendall_plan`);
    kendall_kernel : force "blocks", "dense" or "sorted" (default: the cheapest).
    """

    def __init__(self, X: np.ndarray, ia, ic, method: str, mode: str, *,
                 n_resamples: int = 1000, kendall_kernel: str = "auto"):
        self.S, self.P, self.K = X.shape
        self.X = X
        self.ia = np.asarray(ia)
        self.ic = np.asarray(ic)
        self.method = method
        self.mode = mode
        self.cols = np.unique(np.concatenate([self.ia, self.ic]))
        self.kendall_kernel = None
        if method in KENDALL:
            if kendall_kernel == "auto":
                kendall_kernel, costs = overall_kendall_plan(X, self.ia, self.ic, mode,
                                                             n_resamples)
                _warn_if_slow(kendall_kernel, costs)
            self.kendall_kernel = kendall_kernel
            if kendall_kernel == "sorted":
                from storyeval.correlation.kendall_weighted import WeightedKendall

                self.weighted = WeightedKendall(X.reshape(self.S * self.P, self.K), self.ia,
                                                self.ic)
            elif kendall_kernel == "blocks":
                if mode not in ("prompts", "systems"):
                    raise ValueError("the 'blocks' Kendall kernel needs mode 'prompts' or "
                                     "'systems'")
                self._kendall_blocks()
            elif kendall_kernel != "dense":
                raise ValueError(f"unknown Kendall kernel {kendall_kernel!r}; use one of "
                                 f"{OVERALL_KENDALL_KERNELS}")
            if method == "kendall_c" and kendall_kernel != "sorted":
                self._distinct_incidence()
        elif method == "spearman":
            self._dense_codes()

    # -- Kendall -----------------------------------------------------------------------------
    def _signs(self, k: int, arrange: str | None = None) -> np.ndarray:
        """Sign tensor arranged (unit pair, within-unit pair) for column k (float32); the units
        are those of ``arrange`` (default: the mode), "stories" gives the (n, n) matrix."""
        x = self.X[:, :, k]
        d = np.sign(x[None, None, :, :] - x[:, :, None, None]).astype(np.float32)  # [s,p,u,q]
        S, P = self.S, self.P
        arrange = arrange or self.mode
        if arrange == "prompts":
            return d.transpose(1, 3, 0, 2).reshape(P * P, S * S)
        if arrange == "systems":
            return d.transpose(0, 2, 1, 3).reshape(S * S, P * P)
        return d.reshape(S * P, S * P)

    def _kendall_blocks(self) -> None:
        U = self.P if self.mode == "prompts" else self.S
        self.U = U
        ux, uy = np.unique(self.ia), np.unique(self.ic)
        Gy = np.stack([self._signs(k) for k in uy])  # (Ky, UU, r)
        GyT = np.ascontiguousarray(Gy.transpose(1, 2, 0))  # (UU, r, Ky)
        pos_y = {k: j for j, k in enumerate(uy)}
        T = np.zeros((U * U, len(self.ia)))
        absT = {}
        for k, j in pos_y.items():
            absT[k] = np.abs(Gy[j]).sum(axis=1, dtype=np.float64)
        r = Gy.shape[2]
        per_x = U * U * r * 4 * 3
        for sl in _chunks(len(ux), per_x):
            xs = ux[sl]
            Gx = np.stack([self._signs(k) for k in xs])  # (Kc, UU, r)
            for k, g in zip(xs, Gx):
                if k not in absT:
                    absT[k] = np.abs(g).sum(axis=1, dtype=np.float64)
            prod = np.matmul(Gx.transpose(1, 0, 2), GyT)  # (UU, Kc, Ky): exact integers
            pos_x = {k: i for i, k in enumerate(xs)}
            sel = np.flatnonzero(np.isin(self.ia, xs))
            T[:, sel] = prod[:, [pos_x[a] for a in self.ia[sel]],
                             [pos_y[c] for c in self.ic[sel]]]
        self.T = T.reshape(U, U, -1)
        self.absT = {k: v.reshape(U, U) for k, v in absT.items()}

    @staticmethod
    def _quad(C: np.ndarray, T: np.ndarray) -> np.ndarray:
        """0.5 * c_b^T T[:, :, m] c_b for all b (rows of C) and m: (B, M)."""
        U, _, M = T.shape
        out = np.empty((C.shape[0], M))
        T2 = T.reshape(U, U * M)
        for sl in _chunks(C.shape[0], U * M * 8):
            Y = (C[sl] @ T2).reshape(-1, U, M)
            out[sl] = 0.5 * np.einsum("bhm,bh->bm", Y, C[sl])
        return out

    def _kendall_num_den(self, cS, cP):
        if self.kendall_kernel == "blocks":
            C = cP if self.mode == "prompts" else cS
            num = self._quad(C, self.T)
            absT = np.stack([self.absT[k] for k in self.cols], axis=-1)
            den_c = self._quad(C, absT)
            den = {k: den_c[:, i] for i, k in enumerate(self.cols)}
            return num, den
        # general weights: one (B x n) @ (n x n) product per measure pair
        w = story_weights(cS, cP).astype(np.float32)
        w64 = w.astype(np.float64)
        cache: dict[int, np.ndarray] = {}

        def signs(k):
            if k not in cache:
                if len(cache) > 16:
                    cache.pop(next(iter(cache)))
                cache[k] = self._signs(k, "stories")
            return cache[k]

        def quad(A):
            return 0.5 * np.einsum("bj,bj->b", (w @ A).astype(np.float64), w64)

        num = np.empty((w.shape[0], len(self.ia)))
        order = np.argsort(self.ia, kind="stable")
        for m in order:  # one big matrix product per pair (documented O(B n^2) path)
            num[:, m] = quad(signs(self.ia[m]) * signs(self.ic[m]))
        den = {k: quad(np.abs(signs(k))) for k in self.cols}
        return num, den

    def _distinct_incidence(self) -> None:
        """Sparse incidence (unit x value-group) over all columns, for distinct counts."""
        S, P = self.S, self.P
        rows, cols, self.g_offsets = [], [], []
        offset = 0
        for k in self.cols:
            x = self.X[:, :, k]
            _, codes = np.unique(x, return_inverse=True)
            codes = codes.reshape(S, P)
            if self.mode == "prompts":
                unit = np.broadcast_to(np.arange(P)[None, :], (S, P))
            elif self.mode == "systems":
                unit = np.broadcast_to(np.arange(S)[:, None], (S, P))
            else:
                unit = np.arange(S * P).reshape(S, P)
            rows.append(unit.ravel())
            cols.append(codes.ravel() + offset)
            self.g_offsets.append(offset)
            offset += int(codes.max()) + 1
        n_units = {"prompts": P, "systems": S}.get(self.mode, S * P)
        data = np.ones(sum(len(r) for r in rows))
        from scipy import sparse  # imported when a kernel is built (not on a small run)

        inc = sparse.csr_matrix((data, (np.concatenate(rows), np.concatenate(cols))),
                                shape=(n_units, offset))
        inc.data[:] = 1.0
        self.incidence = inc
        self.g_total = offset

    def _distinct(self, cS, cP) -> dict[int, np.ndarray]:
        if self.mode == "prompts":
            present = (cP > 0).astype(np.float64)
        elif self.mode == "systems":
            present = (cS > 0).astype(np.float64)
        else:
            present = (story_weights(cS, cP) > 0).astype(np.float64)
        hit = np.asarray((self.incidence.T @ present.T).T) > 0  # (B, groups)
        counts = np.add.reduceat(hit, self.g_offsets, axis=1)
        return {k: counts[:, i] for i, k in enumerate(self.cols)}

    def _kendall_sorted(self, cS: np.ndarray, cP: np.ndarray) -> np.ndarray:
        """tau-b / tau-c from the O(n log n) weighted counts (`storyeval.correlation.kendall_weighted`)."""
        w = story_weights(cS, cP, story_major=self.weighted.engine == "numba")
        counts = self.weighted.counts(w)
        if self.method == "kendall_b":
            return _safe_div(counts.s, np.sqrt(counts.untied_x * counts.untied_y))
        m = np.minimum(counts.distinct_x, counts.distinct_y)
        N = w.sum(axis=1)[:, None]
        return _safe_div(2.0 * counts.s, N**2 * (m - 1) / np.maximum(m, 1))

    # -- Spearman ------------------------------------------------------------------------------
    def _dense_codes(self) -> None:
        n = self.S * self.P
        flat = self.X.reshape(n, self.K)
        codes = np.empty((n, self.K), dtype=np.int64)
        for k in self.cols:  # one np.unique per column (setup only)
            _, codes[:, k] = np.unique(flat[:, k], return_inverse=True)
        self.codes = codes
        self.gmax = int(codes[:, self.cols].max()) + 1
        ncol = len(self.cols)
        col_pos = np.arange(ncol)
        idx = (col_pos[None, :] * self.gmax + codes[:, self.cols])  # (n, ncol)
        self.code_index = idx
        from scipy import sparse

        self.indicator = sparse.csr_matrix(
            (np.ones(idx.size), (np.repeat(np.arange(n), ncol), idx.ravel())),
            shape=(n, ncol * self.gmax))

    def _spearman(self, w: np.ndarray) -> np.ndarray:
        ncol = len(self.cols)
        pos = {k: i for i, k in enumerate(self.cols)}
        ia = np.array([pos[k] for k in self.ia])
        ic = np.array([pos[k] for k in self.ic])
        n = w.shape[1]
        out = np.empty((w.shape[0], len(ia)))
        per_b = (ncol * self.gmax + n * ncol + n * len(ia)) * 8 * 2
        for sl in _chunks(w.shape[0], per_b):
            wb = w[sl]
            Wg = np.asarray((self.indicator.T @ wb.T).T).reshape(-1, ncol, self.gmax)
            mid = np.cumsum(Wg, axis=2) - Wg + (Wg + 1.0) / 2.0
            R = mid.reshape(wb.shape[0], -1)[:, self.code_index]  # (b, n, ncol)
            out[sl] = _weighted_pearson_cols(R, wb, ia, ic)
        return out

    # -- public -----------------------------------------------------------------------------------
    def statistic(self, cS: np.ndarray, cP: np.ndarray) -> np.ndarray:
        """(B, M) coefficients for system (B, S) and prompt (B, P) multiplicities."""
        cS = np.asarray(cS, dtype=np.float64)
        cP = np.asarray(cP, dtype=np.float64)
        if self.kendall_kernel == "sorted":
            return self._kendall_sorted(cS, cP)
        if self.method in KENDALL:
            num, den = self._kendall_num_den(cS, cP)
            if self.method == "kendall_b":
                dx = np.stack([den[k] for k in self.ia], axis=1)
                dy = np.stack([den[k] for k in self.ic], axis=1)
                return _safe_div(num, np.sqrt(dx * dy))
            distinct = self._distinct(cS, cP)
            mx = np.stack([distinct[k] for k in self.ia], axis=1)
            my = np.stack([distinct[k] for k in self.ic], axis=1)
            m = np.minimum(mx, my).astype(np.float64)
            N = (cS.sum(axis=1) * cP.sum(axis=1))[:, None]
            return _safe_div(2.0 * num, N**2 * (m - 1) / np.maximum(m, 1))
        w = story_weights(cS, cP)
        if self.method == "pearson":
            flat = self.X.reshape(-1, self.K)
            Xc = flat - flat.mean(axis=0)
            N = w.sum(axis=1)[:, None]
            S1 = w @ Xc
            S2 = w @ Xc**2
            Sxy = w @ (Xc[:, self.ia] * Xc[:, self.ic])
            var = S2 - S1**2 / N
            var = np.where(var <= 1e-12 * np.maximum(S2, 1e-300), 0.0, var)
            cov = Sxy - S1[:, self.ia] * S1[:, self.ic] / N
            return np.clip(_safe_div(cov, np.sqrt(var[:, self.ia] * var[:, self.ic])), -1, 1)
        return self._spearman(w)


OVERALL_KENDALL_KERNELS = ("blocks", "dense", "sorted")
# Seconds per unit of work, measured on the 2-core development machine (HANNA-sized and
# 3,000-20,000-story grids, 180 pairs); only their ratios matter.
_COST = {
    "block_setup": 1.4e-8,  # per story pair and column: the block sums of sign products
    "block_quad": 1.0e-10,  # per resample, unit pair and measure pair: c^T T c
    "dense": 8.2e-11,  # per resample, story pair and measure pair: w^T A w
    "sorted_numba": 2.0e-9,  # per resample, story and measure pair (Fenwick; x log2(k)/4)
    "sorted_numpy": 1.2e-7,  # the same with the NumPy engine
    "load_numba": 0.7,  # importing numba and loading the compiled kernels, once per process
}
# The block sums hold a float32 sign tensor of all story pairs per column: above this many
# bytes they are not an option.
_BLOCK_MAX_BYTES = 2**30


def overall_kendall_plan(X: np.ndarray, ia: np.ndarray, ic: np.ndarray, mode: str,
                         n_resamples: int) -> tuple[str, dict[str, float]]:
    """The cheapest overall-level Kendall kernel for ``n_resamples`` weight vectors and the
    predicted seconds of each applicable one.

    * ``blocks`` (modes "prompts", "systems"): block sums over pairs of units, O(n^2) per
      column once, then one small quadratic form per resample: best for HANNA-sized grids;
    * ``dense`` (any mode): one story-pair matrix per measure pair, O(n^2) per resample;
    * ``sorted``: weighted Fenwick counts, O(n log k) per resample and measure pair
      (`storyeval.correlation.kendall_weighted`), the only option at tens of thousands of stories.
    """
    from storyeval.correlation.kendall_sorted import engine

    S, P, K = X.shape
    n = S * P
    M = len(ia)
    cols = len(np.unique(np.concatenate([ia, ic])))
    costs: dict[str, float] = {}
    if mode in ("prompts", "systems") and 4.0 * n * n * (cols + 2) <= _BLOCK_MAX_BYTES:
        U = P if mode == "prompts" else S
        costs["blocks"] = (_COST["block_setup"] * n * n * cols
                           + _COST["block_quad"] * n_resamples * U * U * (M + cols))
    if 4.0 * n * n * 3 <= _BLOCK_MAX_BYTES:
        costs["dense"] = _COST["dense"] * n_resamples * n * n * (M + cols)
    numba = engine() == "numba"
    distinct = np.zeros(K)
    for k in np.unique(np.concatenate([ia, ic])):  # one sort per column
        distinct[k] = len(np.unique(X[:, :, k]))
    levels = np.minimum(distinct[ia], distinct[ic]).max(initial=1)
    per = _COST["sorted_numba" if numba else "sorted_numpy"] * max(1.0, np.log2(levels + 1) / 4)
    from storyeval.correlation.kendall_sorted import numba_load_seconds

    costs["sorted"] = (per * n_resamples * n * M + (
        numba_load_seconds("storyeval.correlation._kendall_numba") if numba else 0.0))
    return min(costs, key=costs.get), costs


# Predicted seconds above which a missing accelerator is pointed out.
_SLOW_SECONDS = 60.0


def _warn_if_slow(kernel: str, costs: dict[str, float]) -> None:
    """A `SlowPathWarning` when the chosen kernel is predicted to be slow and numba would help."""
    import warnings

    from storyeval.correlation.kendall_sorted import engine
    from storyeval.exceptions import SlowPathWarning

    if kernel == "sorted" and engine() == "numpy" and costs[kernel] > _SLOW_SECONDS:
        warnings.warn(f"Kendall's tau of the resamples is predicted to take about "
                      f"{costs[kernel]:,.0f} s with the NumPy engine; the compiled one is about "
                      "50 times faster: pip install 'storyeval[fast]' (numba)",
                      SlowPathWarning, stacklevel=4)
