"""Bradley-Terry(-Davidson) at arena scale: battles aggregated to counts once, a batched Newton
fit on the S x S count matrices, and a bootstrap that resamples prompts (or battles) through
count matrices.

Counts
------
A *battle* compares system ``a`` with system ``b`` and ends in ``a`` winning, ``b`` winning or a
tie; it may carry a weight (a graded "much better" verdict counts ``w`` battles) and belongs to
a cluster (its prompt). `count_battles` turns the battles into a sparse matrix ``C`` with one row
per cluster and ``2 S^2`` columns: column ``i S + j`` holds the (weighted) wins of ``i`` over
``j`` in that cluster, column ``S^2 + min(i,j) S + max(i,j)`` its ties between ``i`` and ``j``.
Nothing dense of size clusters x S x S is ever built.

Bootstrap
---------
A prompt resample draws ``n_c`` clusters with replacement; cluster ``c`` drawn ``m_c`` times
contributes ``m_c C_c``, so a resample's counts are ``m C`` (a sparse-dense product, chunks of
resamples at a time), taken only over the ``3 P`` columns of the ``P`` pairs that met in the full
sample (a resample holds no other battles) and kept in that pair form for the fit. Resampling battles (``cluster=None``) is the same with every battle its own
cluster; it is drawn exactly and much faster as a multinomial over the distinct (cell, weight)
categories: ``n`` battles drawn with replacement from ``n`` fall into the categories as
``Multinomial(n, counts / n)``.

Fit
---
Newton's method with backtracking on the negative log-likelihood, which is convex in
``(theta, lambda)`` (``log D`` is a log-sum-exp of affine functions), batched over resamples and
warm-started at the full-sample estimate. The Hessian of ``log D_ij`` is the covariance of the
vectors ``(1, 0, 0)``, ``(0, 1, 0)``, ``(1/2, 1/2, 1)`` (coordinates ``theta_i, theta_j,
lambda``) under the outcome probabilities ``(p, r, q)``; the translation direction is removed by
adding ``1 1^T`` to the ``theta`` block, which keeps the steps centred. Bootstrap resamples
are refitted by chord iterations ``x <- x - H0^{-1} g(x)`` with the inverse Hessian ``H0`` of
the full sample (a resample's Hessian differs from it only by sampling noise, so each step is
one matrix product for the whole chunk of resamples); resamples where that does not settle are
finished by Newton. A chord step needs the gradient alone, computed from one (B, P) array of the
first items' expected scores (the second's is one minus it) and one sparse product
(`_gradient`). Whether a resample's MLE exists (its "beat or tied" graph strongly connected) is
checked for all resamples of a chunk at once, by breadth-first reachability from item 0 along
and against the edges. BLAS runs on one thread here: its threads only wait on products and
solves of this size (a 101 x 101 solve took 0.17 s instead of 0.15 ms on a loaded machine).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from storyeval._progress import progress_bar
from storyeval.correlation.resampled import _one_blas_thread
from storyeval.exceptions import InputError

__all__ = [
    "NOT_CONVERGED",
    "NO_MLE",
    "BattleCounts",
    "BootstrapFits",
    "bootstrap_counts",
    "bootstrap_fits",
    "count_battles",
    "fit_counts",
]

_TIES = ("davidson", "half", "drop")
_MAX_CHUNK_FLOATS = 4_000_000  # resamples per chunk x S x S (about 32 MB per array)
#: Status of a bootstrap refit (`BootstrapFits.status`): the resample's maximum likelihood
#: estimate does not exist (its "beat or tied" graph is not strongly connected) ...
NO_MLE = 1
#: ... or Newton's method did not converge within its iterations (0: converged).
NOT_CONVERGED = 2


@dataclass(frozen=True)
class BattleCounts:
    """Battles aggregated to counts.

    Attributes
    ----------
    n_items : int
    wins : ndarray (S, S)
        ``wins[i, j]``: weighted wins of ``i`` over ``j`` (all clusters).
    ties : ndarray (S, S)
        Symmetric weighted ties.
    cluster_counts : csr_matrix (n_clusters, 2 S^2) or None
        Per-cluster contributions (None when battles are the resampling unit).
    categories : tuple (cells, weights, counts) or None
        Distinct (cell, weight) categories and their battle counts, for the battle bootstrap.
    n_battles : int
    """

    n_items: int
    wins: np.ndarray
    ties: np.ndarray
    cluster_counts: sparse.csr_matrix | None
    categories: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    n_battles: int


def _cells(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, s: int) -> np.ndarray:
    """Column of each battle in the ``2 S^2`` layout (outcome 0: a won, 1: b won, 2: tie)."""
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    return np.where(outcome == 0, a * s + b,
                    np.where(outcome == 1, b * s + a, s * s + lo * s + hi)).astype(np.int64)


def _to_matrices(flat: np.ndarray, s: int) -> tuple[np.ndarray, np.ndarray]:
    """(..., 2 S^2) cell totals -> wins (..., S, S), symmetric ties (..., S, S)."""
    lead = flat.shape[:-1]
    wins = flat[..., : s * s].reshape(*lead, s, s)
    upper = flat[..., s * s:].reshape(*lead, s, s)
    ties = upper + np.swapaxes(upper, -1, -2)
    return wins, ties


def count_battles(
    a: np.ndarray,
    b: np.ndarray,
    outcome: np.ndarray,
    n_items: int,
    *,
    weight: np.ndarray | None = None,
    cluster: np.ndarray | None = None,
) -> BattleCounts:
    """Aggregate battles to counts (once).

    Parameters
    ----------
    a, b : int arrays (n,)
        Item codes ``0 .. n_items-1`` of the two sides (``a != b``).
    outcome : int array (n,)
        0: ``a`` won, 1: ``b`` won, 2: tie.
    n_items : int
    weight : float array (n,), optional
        Weight of each battle (default 1).
    cluster : int array (n,), optional
        Cluster code (e.g. the prompt) of each battle, ``0 .. n_clusters-1``; None: the battles
        themselves are the resampling unit.

    Returns
    -------
    BattleCounts
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.int64)
    s = int(n_items)
    if np.any(a == b):
        raise InputError(f"battle {int(np.argmax(a == b))} compares an item with itself")
    cells = _cells(a, b, outcome, s)
    w = np.ones(len(a)) if weight is None else np.asarray(weight, dtype=np.float64)
    totals = np.bincount(cells, weights=w, minlength=2 * s * s)
    wins, ties = _to_matrices(totals, s)
    if cluster is None:
        wvals, widx = np.unique(w, return_inverse=True)
        key = np.bincount(cells * len(wvals) + widx, minlength=2 * s * s * len(wvals))
        nz = np.flatnonzero(key)
        cats = (nz // len(wvals), wvals[nz % len(wvals)], key[nz].astype(np.int64))
        return BattleCounts(s, wins, ties, None, cats, len(a))
    cluster = np.asarray(cluster, dtype=np.int64)
    n_c = int(cluster.max()) + 1 if len(cluster) else 0
    cc = sparse.csr_matrix((w, (cluster, cells)), shape=(n_c, 2 * s * s))
    cc.sum_duplicates()
    return BattleCounts(s, wins, ties, cc, None, len(a))


# ---------------------------------------------------------------- batched Newton


def _prepare(wins, ties, ties_model):
    if ties_model == "half":
        return wins + 0.5 * ties, np.zeros_like(ties)
    if ties_model == "drop":
        return wins, np.zeros_like(ties)
    return wins, ties


class _Pairs:
    """Pair-list form of a batch of S x S count matrices: only pairs i < j that met."""

    def __init__(self, wins: np.ndarray, ties: np.ndarray):
        _, s, _ = wins.shape
        met = ((wins + np.swapaxes(wins, 1, 2) + ties) > 0).any(axis=0)
        i, j = np.nonzero(np.triu(met, 1))
        self._set(s, i, j, wins[:, i, j], wins[:, j, i], ties[:, i, j])

    @classmethod
    def from_pairs(cls, s: int, i, j, wij, wji, t) -> _Pairs:
        """From (B, P) counts of the pairs ``(i, j)``, ``i < j``: wins of ``i`` over ``j``,
        of ``j`` over ``i``, ties."""
        out = object.__new__(cls)
        out._set(s, i, j, wij, wji, t)
        return out

    def _set(self, s, i, j, wij, wji, t) -> None:
        self.s, self.i, self.j = s, i, j
        self.wij, self.wji, self.t = wij, wji, t
        self.n = wij + wji + t
        npair = len(i)
        rows = np.arange(npair)
        self.first = sparse.csr_matrix((np.ones(npair), (i, rows)), shape=(s, npair))
        self.second = sparse.csr_matrix((np.ones(npair), (j, rows)), shape=(s, npair))
        half = 0.5 * t
        self.win_score = self.to_items(wij + half, wji + half)  # W_i + T_i / 2
        self.tie_total = t.sum(axis=1)
        self.scale = np.maximum(self.n.sum(axis=1), 1.0)
        # the gradient in one sparse product: with m_j = 1 - m_i (see `_gradient`),
        # g = (first - second) (n m_i) + second n - (W + T / 2) = diff (n m_i - wij - t / 2)
        self.diff = (self.first - self.second).tocsr()
        self.offset = -np.asarray(self.diff @ (wij + half).T).T

    def take(self, sel: np.ndarray) -> _Pairs:
        out = object.__new__(_Pairs)
        out.__dict__.update(self.__dict__)
        for name in ("wij", "wji", "t", "n", "win_score", "tie_total", "scale", "offset"):
            setattr(out, name, getattr(self, name)[sel])
        return out

    def to_items(self, c1: np.ndarray, c2: np.ndarray) -> np.ndarray:
        """(B, P) contributions of the first / second item of each pair -> (B, S) sums."""
        return np.asarray(self.first @ c1.T + self.second @ c2.T).T


def _evaluate(pr: _Pairs, theta, lam, fit_tie, alpha, derivatives):
    """Objective (and gradient, Hessian) of the negative log-likelihood, batched."""
    d = theta[:, pr.i] - theta[:, pr.j]
    # D_ij / e^theta_i = 1 + x^2 + nu x with x = e^{-d/2}: one exp and one log per pair
    # (|d| is clipped at 600, far beyond any estimable strength difference, against overflow)
    x = np.exp(-np.clip(d, -600.0, 600.0) / 2)
    xx = x * x
    if fit_tie:
        nux = np.exp(lam)[:, None] * x
        den = 1.0 + xx + nux
    else:
        den = 1.0 + xx
    log_den = np.log(den)
    f = (np.einsum("bp,bp->b", pr.wij, log_den) + np.einsum("bp,bp->b", pr.wji, log_den + d)
         + alpha * np.sum(theta**2, axis=1))
    if fit_tie:
        f += np.einsum("bp,bp->b", pr.t, log_den + d / 2 - lam[:, None])
    if not derivatives:
        return f, None, None
    p = 1.0 / den
    r = xx * p
    q = nux * p if fit_tie else np.zeros_like(p)
    mi, mj = p + q / 2, r + q / 2
    bsz, s = theta.shape
    g = pr.to_items(pr.n * mi, pr.n * mj) - pr.win_score + 2 * alpha * theta
    if derivatives == "gradient":
        if fit_tie:
            g_lam = np.einsum("bp,bp->b", pr.n, q) - pr.tie_total
            g = np.concatenate([g, g_lam[:, None]], axis=1)
        return f, g, None
    size = s + 1 if fit_tie else s
    hess = np.zeros((bsz, size, size))
    h_off = pr.n * (q / 4 - mi * mj)
    hess[:, pr.i, pr.j] = h_off
    hess[:, pr.j, pr.i] = h_off
    idx = np.arange(s)
    hess[:, idx, idx] = pr.to_items(pr.n * (p + q / 4 - mi**2),
                                    pr.n * (r + q / 4 - mj**2)) + 2 * alpha
    hess[:, :s, :s] += 1.0  # removes the translation direction (see the module docstring)
    if fit_tie:
        g_lam = np.einsum("bp,bp->b", pr.n, q) - pr.tie_total
        g = np.concatenate([g, g_lam[:, None]], axis=1)
        h_tl = pr.to_items(pr.n * (q / 2 - mi * q), pr.n * (q / 2 - mj * q))
        hess[:, :s, s] = h_tl
        hess[:, s, :s] = h_tl
        hess[:, s, s] = np.einsum("bp,bp->b", pr.n, q - q**2)
    return f, g, hess


def _gradient(pr: _Pairs, theta, lam, fit_tie, alpha):
    """Gradient of the negative log-likelihood alone, batched, with few temporaries.

    Same value as ``_evaluate(..., "gradient")[1]``: the expected score of the first item of a
    pair is ``m_i = p + q / 2 = (1 + nu x / 2) / (1 + x^2 + nu x)`` and that of the second
    ``m_j = 1 - m_i``, so both items' terms come from one (B, P) array and one sparse product.
    """
    x = theta[:, pr.i]
    x -= theta[:, pr.j]
    np.clip(x, -600.0, 600.0, out=x)
    x *= -0.5
    np.exp(x, out=x)  # x = e^{-d/2}
    den = x * x
    den += 1.0
    if fit_tie:
        x *= np.exp(lam)[:, None]  # nu x
        den += x
        x *= 0.5
        x += 1.0  # 1 + nu x / 2
        x /= den  # m_i
        np.reciprocal(den, out=den)  # p
        den *= pr.n
        x *= pr.n
        # sum n q = 2 sum n (m_i - p), since q / 2 = m_i - p
        g_lam = 2.0 * (x.sum(axis=1) - den.sum(axis=1))
    else:
        np.reciprocal(den, out=x)  # m_i = p
        x *= pr.n
    g = np.asarray(pr.diff @ x.T).T + pr.offset
    if alpha:
        g += 2 * alpha * theta
    if fit_tie:
        g = np.concatenate([g, (g_lam - pr.tie_total)[:, None]], axis=1)
    return g


def _newton(pr: _Pairs, fit_tie, alpha, theta0, lam0, *, tol=1e-9, max_iter=100):
    """Batched damped Newton; returns theta (centred), lam, converged flags."""
    theta = theta0 - theta0.mean(axis=1, keepdims=True)
    lam = lam0.astype(np.float64).copy()
    s = theta.shape[1]
    f, g, h = _evaluate(pr, theta, lam, fit_tie, alpha, True)
    done = np.zeros(len(theta), dtype=bool)
    act = np.arange(len(theta))
    for _ in range(max_iter):
        step = -np.linalg.solve(h, g[:, :, None])[:, :, 0]
        sub = pr.take(act)
        t = np.ones(len(act))
        new_th = theta[act] + step[:, :s]
        new_la = lam[act] + step[:, s] if fit_tie else lam[act]
        new_f, new_g, new_h = _evaluate(sub, new_th, new_la, fit_tie, alpha, True)
        f_a = f[act]
        for _ in range(40):  # backtracking where the objective did not decrease
            bad = ~(new_f <= f_a + 1e-12 * np.abs(f_a))
            if not bad.any():
                break
            t[bad] /= 2
            new_th[bad] = theta[act[bad]] + t[bad, None] * step[bad, :s]
            if fit_tie:
                new_la[bad] = lam[act[bad]] + t[bad] * step[bad, s]
            bf, bg, bh = _evaluate(sub.take(bad), new_th[bad], new_la[bad], fit_tie, alpha,
                                   True)
            new_f[bad], new_g[bad], new_h[bad] = bf, bg, bh
        theta[act], lam[act], f[act] = new_th, new_la, new_f
        # converged: the full Newton step is below tol (not the backtracked one, which
        # shrinks to nothing when no step decreases the objective) or the gradient vanishes
        small = (np.max(np.abs(step), axis=1) < tol) | (
            np.max(np.abs(new_g), axis=1) < 1e-12 * sub.scale)
        done[act[small]] = True
        keep = ~small
        act, g, h = act[keep], new_g[keep], new_h[keep]
        if not len(act):
            break
    theta -= theta.mean(axis=1, keepdims=True)
    return theta, lam, done


def _chord(pr: _Pairs, theta, lam, fit_tie, alpha, h_inv, *, tol=1e-9, max_iter=40):
    """Chord (fixed-Hessian) iterations ``x <- x - H0^{-1} g(x)`` for a batch of resamples.

    ``H0`` is the Hessian at the full-sample estimate: a resample's Hessian differs from it by
    sampling noise, so the iteration contracts fast, and each step is one gradient (`_gradient`)
    and one matrix product instead of a Hessian and a solve per resample. Returns (theta, lam,
    converged); a resample whose steps stop shrinking (the iteration does not contract) or that
    has not converged is left to Newton. Its fixed point is the root of the gradient, the MLE
    (the objective is convex).
    """
    s = theta.shape[1]
    g = _gradient(pr, theta, lam, fit_tie, alpha)
    ok = np.ones(len(theta), dtype=bool)
    done = np.zeros(len(theta), dtype=bool)
    last = np.full(len(theta), np.inf)
    for _ in range(max_iter):
        step = -(g @ h_inv)
        theta = theta + step[:, :s]
        if fit_tie:
            lam = lam + step[:, s]
        size = np.max(np.abs(step), axis=1)
        ok &= size <= last
        last = size
        done = ok & (size < tol)
        if done.sum() == ok.sum():
            break
        g = _gradient(pr, theta, lam, fit_tie, alpha)
    return theta - theta.mean(axis=1, keepdims=True), lam, done


def _nll(theta, lam, wins, ties, fit_tie, alpha):
    return _evaluate(_Pairs(wins, ties), theta, lam, fit_tie, alpha, False)[0]


def _connected(wins: np.ndarray, ties: np.ndarray) -> bool:
    if wins.shape[0] < 2:
        return False
    n, _ = connected_components(((wins + ties) > 0).astype(np.int8), directed=True,
                                connection="strong")
    return n == 1


def fit_counts(
    wins: np.ndarray,
    ties: np.ndarray,
    *,
    ties_model: str = "davidson",
    regularization: float = 0.0,
    start: tuple[np.ndarray, float] | None = None,
) -> tuple[np.ndarray, float, float, bool, str]:
    """Maximum likelihood Bradley-Terry(-Davidson) fit of one S x S count matrix by Newton.

    Returns
    -------
    tuple
        ``(theta centred, nu, log-likelihood, converged, reason)``; NaN strengths and a reason
        when the MLE does not exist (``regularization == 0`` and the "beat or tied" graph not
        strongly connected).

    Notes
    -----
    Same objective as `storyeval.pairwise.bradley_terry.fit_bradley_terry` (its Notes give the
    log-likelihood); validated against choix and FastChat in tests/test_pairwise_arena.py.
    """
    if ties_model not in _TIES:
        raise InputError(f"ties_model must be one of {_TIES}, got {ties_model!r}")
    w, t = _prepare(np.asarray(wins, float), np.asarray(ties, float), ties_model)
    k = w.shape[0]
    nmat = w + w.T + t
    if nmat.sum() == 0:
        return np.full(k, np.nan), np.nan, np.nan, False, "no comparisons"
    if regularization == 0 and not _connected(w, t):
        return (np.full(k, np.nan), np.nan, np.nan, False,
                ("maximum likelihood estimate does not exist: some items never beat (or tie "
                 "with) a group of others, so their strengths diverge; use regularization > 0"))
    fit_tie = ties_model == "davidson" and t.sum() > 0
    if start is not None and np.isfinite(start[0]).all():
        th0 = np.asarray(start[0], float)[None, :]
        lam0 = np.array([np.log(start[1]) if start[1] > 0 else 0.0])
    else:
        th0 = np.zeros((1, k))
        lam0 = np.array([np.log(max(t.sum() / max(nmat.sum(), 1.0), 1e-3))])
    with _one_blas_thread():  # small solves: threaded BLAS only waits (1000x under load)
        theta, lam, ok = _newton(_Pairs(w[None], t[None]), fit_tie, float(regularization),
                                 th0, lam0)
    nu = float(np.exp(lam[0])) if fit_tie else 0.0
    ll = -float(_nll(theta, lam, w[None], t[None], fit_tie, float(regularization))[0])
    conv = bool(ok[0])
    return theta[0], nu, ll, conv, "" if conv else "Newton did not converge"


def _resample_weights(rng: np.random.Generator, n_units: int, n_draws: int) -> np.ndarray:
    """(n_draws, n_units) multiplicities of a with-replacement draw of n_units units."""
    idx = rng.integers(0, n_units, size=(n_draws, n_units))
    idx += (np.arange(n_draws) * n_units)[:, None]
    return np.bincount(idx.ravel(), minlength=n_draws * n_units).reshape(n_draws, n_units)


class _PairLayout:
    """The pairs of items that met in the full sample, and where a resample's counts of each
    pair come from: columns ``i S + j`` (wins of i), ``j S + i`` (wins of j) and
    ``S^2 + i S + j`` (ties) of the ``2 S^2`` cell layout, ``i < j``. A resample only holds
    battles of the full sample, so its pairs are among these."""

    def __init__(self, counts: BattleCounts, ties_model: str):
        s = counts.n_items
        met = np.triu((counts.wins + counts.wins.T + counts.ties) > 0, 1)
        self.s, self.ties_model = s, ties_model
        self.i, self.j = np.nonzero(met)
        self.cols = np.concatenate([self.i * s + self.j, self.j * s + self.i,
                                    s * s + self.i * s + self.j])
        self.sub = None
        if counts.cluster_counts is not None:  # the (clusters, 3 P) counts of these pairs
            self.sub = counts.cluster_counts.tocsc()[:, self.cols].tocsr()

    def full(self, counts: BattleCounts) -> np.ndarray:
        """(1, 3 P) counts of the full sample."""
        i, j = self.i, self.j
        return np.concatenate([counts.wins[i, j], counts.wins[j, i], counts.ties[i, j]])[None]

    def split(self, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n, 3 P) pair counts -> wins of i, wins of j, ties, with the ties model applied."""
        npair = len(self.i)
        wij, wji, t = flat[:, :npair], flat[:, npair:2 * npair], flat[:, 2 * npair:]
        if self.ties_model == "half":
            return wij + 0.5 * t, wji + 0.5 * t, np.zeros_like(t)
        if self.ties_model == "drop":
            return wij, wji, np.zeros_like(t)
        return wij, wji, t


def _chunk_totals(counts: BattleCounts, layout: _PairLayout, rng: np.random.Generator,
                  n: int) -> np.ndarray:
    """(n, 3 P) resampled counts of the pairs of ``layout``."""
    if layout.sub is not None:
        mult = _resample_weights(rng, layout.sub.shape[0], n).astype(np.float64)
        return np.asarray((layout.sub.T @ mult.T).T)
    cells, weights, cnt = counts.categories  # type: ignore[misc]
    draws = rng.multinomial(int(cnt.sum()), cnt / cnt.sum(), size=n).astype(np.float64)
    where = np.full(2 * layout.s**2, -1, dtype=np.int64)
    where[layout.cols] = np.arange(len(layout.cols))
    onehot = sparse.csr_matrix((weights, (np.arange(len(cells)), where[cells])),
                               shape=(len(cells), len(layout.cols)))
    return np.asarray((onehot.T @ draws.T).T)


def _strongly_connected(s: int, i, j, forward: np.ndarray, backward: np.ndarray) -> np.ndarray:
    """Per row of (B, P) edge flags (``forward``: i -> j, ``backward``: j -> i), whether the
    directed graph on ``s`` nodes is strongly connected: everything is reachable from node 0
    along the edges and against them (breadth-first, all rows at once)."""
    bsz = len(forward)
    if s < 2:
        return np.zeros(bsz, dtype=bool)
    adj = np.zeros((bsz, s, s), dtype=np.float32)
    adj[:, i, j] = forward
    adj[:, j, i] = backward
    ok = np.ones(bsz, dtype=bool)
    for mat in (adj, np.swapaxes(adj, 1, 2)):
        reach = np.zeros((bsz, 1, s), dtype=np.float32)
        reach[:, 0, 0] = 1.0
        for _ in range(s):
            grown = np.minimum(reach + reach @ mat, 1.0)
            if np.array_equal(grown > 0, reach > 0):
                break
            reach = grown
        ok &= (reach[:, 0] > 0).all(axis=1)
    return ok


def _start_inverse(counts: BattleCounts, ties_model, fit_tie, alpha, theta, lam):
    """Inverse Hessian (with the translation fix) at the full-sample estimate."""
    w, t = _prepare(counts.wins, counts.ties, ties_model)
    if not fit_tie:
        t = np.zeros_like(t)
    _, _, h = _evaluate(_Pairs(w[None], t[None]), theta[None], np.array([lam]), fit_tie,
                        alpha, True)
    return np.linalg.inv(h[0])


def _draw_and_fit(counts, layout, draw, n, alpha, th0, lam_start, full_edges, h_inv):
    """Draw one chunk of battle resamples with its own generator, then refit it."""
    flat = _chunk_totals(counts, layout, draw, n)
    return _fit_chunk(flat, layout, alpha, th0, lam_start, full_edges, h_inv)


def _fit_chunk(flat, layout, alpha, th0, lam_start, full_edges, h_inv):
    """Refit one chunk of resampled pair counts (n, 3 P): (n, S) log-strengths, NaN rows where
    the MLE does not exist or the fit did not converge, and the (n,) status of each row
    (0, `NO_MLE`, `NOT_CONVERGED`)."""
    wij, wji, t = layout.split(flat)
    n, s = len(flat), layout.s
    out = np.full((n, s), np.nan)
    status = np.zeros(n, dtype=np.int8)
    ok = np.ones(n, dtype=bool)
    if alpha == 0:
        # a resample that keeps every "beat or tied" edge of the full sample has its
        # (strongly connected) graph; only the others are checked
        fwd, bwd = (wij + t) > 0, (wji + t) > 0
        same = fwd[:, full_edges[0]].all(axis=1) & bwd[:, full_edges[1]].all(axis=1)
        ok = same.copy()
        rest = np.flatnonzero(~same)
        if len(rest):
            ok[rest] = _strongly_connected(s, layout.i, layout.j, fwd[rest], bwd[rest])
        status[~ok] = NO_MLE
    has_tie = t.sum(axis=1) > 0
    for fit_tie in (False, True):  # a resample without ties has nu = 0 (plain BT)
        sel = np.flatnonzero(ok & (has_tie == fit_tie))
        if not len(sel):
            continue
        th_s = np.repeat(th0[None], len(sel), 0)
        la_s = np.full(len(sel), lam_start)
        pr = _Pairs.from_pairs(s, layout.i, layout.j, wij[sel], wji[sel], t[sel])
        th, _, conv = _chord(pr, th_s, la_s, fit_tie, alpha, h_inv[fit_tie])
        rest = np.flatnonzero(~conv)
        if len(rest):  # Newton where the chord iteration did not settle
            th_n, _, conv_n = _newton(pr.take(rest), fit_tie, alpha, th_s[rest], la_s[rest])
            th[rest] = np.where(conv_n[:, None], th_n, np.nan)
            status[sel[rest[~conv_n]]] = NOT_CONVERGED
        out[sel] = th
    return out, status


@dataclass(frozen=True)
class BootstrapFits:
    """Bootstrap refits (`bootstrap_fits`).

    Attributes
    ----------
    samples : ndarray (n_resamples, S)
        Log-strengths, centred; NaN rows where ``status != 0``.
    status : int8 ndarray (n_resamples,)
        0: converged; `NO_MLE`: the resample's MLE does not exist; `NOT_CONVERGED`: Newton's
        method did not converge.
    """

    samples: np.ndarray
    status: np.ndarray

    @property
    def n_valid(self) -> int:
        return int((self.status == 0).sum())

    def problem(self, unit: str = "") -> str:
        """A sentence naming the resamples left out and why ("" when none)."""
        parts = []
        for code, why in ((NO_MLE, "the MLE does not exist"),
                          (NOT_CONVERGED, "Newton's method did not converge")):
            k = int((self.status == code).sum())
            if k:
                parts.append(f"{why} in {k} of {len(self.status)} {unit}resamples")
        return "; ".join(parts) + " (left out)" if parts else ""


def bootstrap_counts(
    counts: BattleCounts,
    *,
    n_resamples: int,
    ties_model: str = "davidson",
    regularization: float = 0.0,
    start: tuple[np.ndarray, float],
    random_state: int | np.random.Generator | None = 0,
    workers: int | None = None,
    show_progress: bool | None = False,
) -> np.ndarray:
    """Bootstrap log-strengths, (n_resamples, S); rows NaN where the MLE does not exist or the
    refit did not converge (`bootstrap_fits` tells which)."""
    return bootstrap_fits(counts, n_resamples=n_resamples, ties_model=ties_model,
                          regularization=regularization, start=start,
                          random_state=random_state, workers=workers,
                          show_progress=show_progress).samples


def bootstrap_fits(
    counts: BattleCounts,
    *,
    n_resamples: int,
    ties_model: str = "davidson",
    regularization: float = 0.0,
    start: tuple[np.ndarray, float],
    random_state: int | np.random.Generator | None = 0,
    workers: int | None = None,
    show_progress: bool | None = False,
) -> BootstrapFits:
    """Bootstrap log-strengths with the status of every refit.

    Clusters (prompts) are resampled with replacement when ``counts`` has them, else battles;
    each resample is refitted from ``start`` (the full-sample estimate). Prompt resamples are
    drawn in order from ``default_rng(random_state)`` (``integers(0, n_prompts, (n, n_prompts))``
    per chunk of ``n`` resamples); battle resamples chunk by chunk from child generators
    seeded by it. Chunks are refitted by ``workers`` threads (default: up to 2 CPU cores; numpy
    releases the GIL); the chunking does not depend on ``workers``, so neither does the result.
    ``show_progress``: a bar of the resamples refitted on standard error (None: on a terminal
    only; see `storyeval._progress`).

    All resamples of a chunk are refitted together (module docstring): chord steps with the
    full sample's inverse Hessian, then damped Newton for those whose chord iteration did not
    settle; a resample whose Newton iteration does not converge either is marked
    `NOT_CONVERGED` (never silently kept).
    """
    import os
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(random_state)
    s = counts.n_items
    out = np.full((n_resamples, s), np.nan)
    status = np.zeros(n_resamples, dtype=np.int8)
    if n_resamples == 0:
        return BootstrapFits(out, status)
    workers = workers or max(1, min(2, os.cpu_count() or 1))
    max_chunk = max(1, _MAX_CHUNK_FLOATS // max(s * s, 1))
    n_chunks = max(-(-n_resamples // max_chunk), min(4, n_resamples))  # not by workers
    chunk = -(-n_resamples // n_chunks)
    th0 = np.where(np.isfinite(start[0]), start[0], 0.0)
    lam_start = np.log(start[1]) if start[1] > 0 else 0.0
    alpha = float(regularization)
    layout = _PairLayout(counts, ties_model)
    wij, wji, t_full = layout.split(layout.full(counts))
    full_edges = ((wij + t_full) > 0)[0], ((wji + t_full) > 0)[0]
    pending: list = []
    bar = progress_bar(total=n_resamples, desc="bootstrap", unit="resample", show=show_progress)
    # small products and solves: threaded BLAS only waits for its threads (up to 1000x slower
    # on a loaded machine); the chunks run in this function's own threads instead
    with _one_blas_thread(), bar, ThreadPoolExecutor(max_workers=workers) as pool:
        h_inv = {fit_tie: _start_inverse(counts, ties_model, fit_tie, alpha, th0, lam_start)
                 for fit_tie in ((False, True) if counts.ties.sum() > 0
                                 and ties_model == "davidson" else (False,))}
        for lo in range(0, n_resamples, chunk):
            n = min(chunk, n_resamples - lo)
            args = (alpha, th0, lam_start, full_edges, h_inv)
            if counts.cluster_counts is None:  # battles: each chunk draws with its own child
                draw = np.random.default_rng(rng.integers(0, 2**63))  # generator, in parallel
                job = pool.submit(_draw_and_fit, counts, layout, draw, n, *args)
            else:  # prompts: drawn in order from the one generator
                job = pool.submit(_fit_chunk, _chunk_totals(counts, layout, rng, n), layout,
                                  *args)
            pending.append((lo, job))
            while len(pending) >= workers + 1:  # bounded memory: finish the oldest chunk
                first, fut = pending.pop(0)
                res, code = fut.result()
                out[first:first + len(res)], status[first:first + len(res)] = res, code
                bar.update(len(res))
        for first, fut in pending:
            res, code = fut.result()
            out[first:first + len(res)], status[first:first + len(res)] = res, code
            bar.update(len(res))
    return BootstrapFits(out, status)
