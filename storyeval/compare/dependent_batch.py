"""U-statistic estimates of many comparisons at once, from one matrix product per criterion.

`storyeval.compare.dependent.ustat_diff_from_rows` linearises ``tau_b(h, a) - tau_b(h, b)`` into
one U-statistic whose per-item kernel row means are ``g = L_a - L_b``, where ``L_x`` depends on
the pair (h, x) only:

``L_x = (r_x - N_x (t_h / T_h + t_x / T_x) / 2) / sqrt(T_h T_x)``

(``r_x``: the Kendall row sums of (h, x); ``t``: untied counts; ``N, T``: their means over the
ordered pairs). Sen's variance of the difference is ``c |L_a - L_b|^2`` with
``c = 4 / (n (n - 1)^3)``, so every comparison of a criterion needs only the Gram matrix
``L L^T`` of that criterion's pairs: ``|L_a|^2 + |L_b|^2 - 2 s_a s_b <L_a, L_b>`` (``s``: the
orientation of each measure, +-1). `meta` runs `ustat_integer_estimates`: ``r`` and ``t`` are
integers and ``L`` is centred, so the Gram matrix comes from exact integer products
(`integer_products`) and a comparison's number depends on its own two measures only, whatever
other measures are compared. Memory is the rows of the distinct (criterion, measure) pairs,
(pairs, n), whatever the number of comparisons; each pair's rows are computed once instead of
once per comparison. The jackknife (`jackknife_gram_estimates`: leave-one-out values are not
integers) reduces the squared norm of each comparison's difference directly, in chunks.
"""

from __future__ import annotations

import numpy as np

from storyeval.compare.dependent import DiffEstimate

__all__ = ["centred_integer_gram", "gram_estimates", "integer_products", "jackknife_gram_estimates",
           "linearised_rows", "ustat_gram_estimates", "ustat_integer_estimates"]

_CANCEL = 0.05  # below this share of |L_a|^2 + |L_b|^2 the difference is summed directly
_DIRECT_BYTES = 64 * 2**20
_EXACT = 2.0**53  # float64 adds and multiplies integers exactly below this magnitude


def linearised_rows(rows: np.ndarray, untied_h: np.ndarray,
                    untied_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``tau_b`` of each pair and its linearised rows ``L`` (pairs, n) (see the module doc),
    from the Kendall row sums of (h, x) and the untied counts of h and x, all (pairs, n)."""
    n = rows.shape[-1]
    pairs = n * (n - 1.0)
    N = rows.sum(-1) / pairs
    Th, Tx = untied_h.sum(-1) / pairs, untied_x.sum(-1) / pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sqrt(Th * Tx)
        tau = N / s
        L = (rows - 0.5 * N[:, None] * (untied_h / Th[:, None] + untied_x / Tx[:, None]))
        L /= s[:, None]
    return tau, L


def integer_products(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The inner products ``A B^T`` of rows holding integers (as float64), exactly, as an
    object array of Python integers (ma, mb).

    BLAS multiplies and adds integers exactly in float64 whatever its summation order or
    blocking, as long as every partial sum stays below 2^53; so the items are taken in chunks
    small enough for that (all of them up to about 200,000 items of values up to n), each
    chunk's product is one BLAS call, and the chunks are added in Python integers (values
    beyond 2^26 are first split into base-2^26 digits). Every entry therefore depends on its
    own two rows only, not on which other rows are multiplied with them."""
    ma, n = A.shape
    mb = B.shape[0]
    total = np.zeros((ma, mb), dtype=object)
    if n == 0 or ma == 0 or mb == 0:
        return total
    (da, top_a), (db, top_b) = _digits(A), _digits(B)
    top = max(top_a, top_b)
    chunk = max(1, int(2**52 // max(top * top, 1.0)))
    Da = np.vstack(da) if len(da) > 1 else da[0]
    Db = np.vstack(db) if len(db) > 1 else db[0]
    products = np.zeros(Da.shape[:1] + Db.shape[:1], dtype=object)
    for lo in range(0, n, chunk):  # a loop over chunks of items (one when n is small)
        part = Da[:, lo:lo + chunk] @ Db[:, lo:lo + chunk].T
        products += part.astype(np.int64).astype(object)
    for p in range(len(da)):
        for q in range(len(db)):
            block = products[p * ma:(p + 1) * ma, q * mb:(q + 1) * mb]
            total = total + block * (1 << (_DIGIT * (p + q)))
    return total


_DIGIT = 26  # bits per digit of values beyond 2^26 (a product of two digits is below 2^52)


def _digits(V: np.ndarray) -> tuple[list[np.ndarray], float]:
    """``V`` (integers as float64) as base-2^26 digits ``V = sum_p 2^(26 p) D_p`` (exact), the
    last digit signed (``[V]`` itself when its values are below 2^26), and the largest
    magnitude of a digit."""
    digits = []
    rest = V
    while (top := max(float(rest.max()), -float(rest.min()))) >= 2.0**_DIGIT:
        low = np.mod(rest, 2.0**_DIGIT)  # exact: 0 <= low < 2^26
        digits.append(low)
        rest = (rest - low) / 2.0**_DIGIT  # exact integers again
    digits.append(rest)
    return digits, (2.0**_DIGIT if len(digits) > 1 else top)


def centred_integer_gram(V: np.ndarray) -> np.ndarray:
    """The centred Gram matrix ``sum_i (u_i - mean u) (v_i - mean v)`` of the rows of ``V``
    (m, n), which hold integers (as float64), each entry exact before one final rounding:
    `integer_products` centred in Python integers (``(n G - s s^T) / n``)."""
    sums = integer_sums(V)
    return _centre(integer_products(V, V), sums, sums, V.shape[1])


def integer_sums(V: np.ndarray) -> np.ndarray:
    """The sums of rows holding integers (as float64), exactly (object array of Python
    integers): `integer_products` with a row of ones."""
    return integer_products(V, np.ones((1, V.shape[1])))[:, 0]


def _centre(products: np.ndarray, sums_a: np.ndarray, sums_b: np.ndarray, n: int) -> np.ndarray:
    """Centred inner products from exact ones and the rows' exact integer sums, as float64."""
    centred = products * n - np.outer(sums_a, sums_b)
    flat = np.array([float(v) for v in centred.ravel()])
    return flat.reshape(centred.shape) / max(n, 1)


def ustat_integer_estimates(rows: np.ndarray, untied: np.ndarray, hcol: np.ndarray,
                            xcol: np.ndarray, ka: np.ndarray, kb: np.ndarray, sa: np.ndarray,
                            sb: np.ndarray) -> DiffEstimate:
    """`ustat_gram_estimates` of every comparison from the integer Kendall rows ``rows``
    (pairs, n) of each (criterion, measure) pair (``hcol``, ``xcol``: its two columns in
    ``untied``, the untied counts of every column, (columns, n)).

    ``L_x = alpha r_x + beta t_h + gamma t_x`` (module doc; ``alpha = 1 / s``,
    ``beta = -N / (2 T_h s)``, ``gamma = -N / (2 T_x s)``) is centred, so ``|L_a - L_b|^2`` is
    a quadratic form in five integer vectors whose centred inner products come from one exact
    Gram matrix per criterion (`centred_integer_gram`). A comparison's number therefore depends
    on its own rows only (the same whatever other measures are compared), and the few
    comparisons of nearly equal measures, whose form cancels, are summed directly from their
    linearised rows. Same values as `ustat_gram_estimates` up to the summation order (a
    relative 1e-13 or better)."""
    n = rows.shape[-1]
    pairs_n = n * (n - 1.0)
    N = rows.sum(-1) / pairs_n  # exact integer sums, as in `linearised_rows`
    T = untied.sum(-1) / pairs_n
    Th, Tx = T[hcol], T[xcol]
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.sqrt(Th * Tx)
        tau = N / s
        alpha, beta, gamma = 1.0 / s, -0.5 * N / (Th * s), -0.5 * N / (Tx * s)
    sign = sa * sb
    w = np.stack([alpha[ka], -sign * alpha[kb], beta[ka] - sign * beta[kb], gamma[ka],
                  -sign * gamma[kb]])  # (5, comparisons)
    norm2, total = np.full(len(ka), np.nan), np.full(len(ka), np.nan)
    crit = hcol[ka]
    # the untied counts' products are shared by every criterion: computed once
    used = np.unique(np.concatenate([hcol, xcol]))
    u_sums = integer_sums(untied)
    u_products = integer_products(untied[used], untied[used])
    u_where = np.full(untied.shape[0], -1)
    u_where[used] = np.arange(len(used))
    for code in np.unique(crit):  # a loop over criteria: one Gram matrix each
        members = np.flatnonzero(hcol == code)
        cols = np.unique(np.concatenate([[code], xcol[members]]))
        gram = _criterion_gram(rows[members], untied[cols], u_products[np.ix_(u_where[cols],
                               u_where[cols])], u_sums[cols])
        local = np.full(len(hcol), -1)
        local[members] = np.arange(len(members))
        local_col = np.full(untied.shape[0], -1)
        local_col[cols] = len(members) + np.arange(len(cols))
        c = np.flatnonzero(crit == code)
        idx = [local[ka[c]], local[kb[c]], local_col[hcol[ka[c]]], local_col[xcol[ka[c]]],
               local_col[xcol[kb[c]]]]
        norm2[c], total[c] = _quadratic_form(w[:, c], idx, gram)
    # nearly equal measures (or a cancelling form): those comparisons summed directly
    close = np.flatnonzero(np.isfinite(w).all(0) & ~(norm2 > _CANCEL * total))
    if len(close):
        norm2[close] = _direct_norms(rows, untied, hcol, xcol, ka[close], kb[close],
                                     sign[close])
    with np.errstate(invalid="ignore"):
        var = 4.0 / (n * (n - 1.0) ** 3) * np.maximum(norm2, 0.0)
    return DiffEstimate(sa * tau[ka] - sb * tau[kb], np.sqrt(var))


def _criterion_gram(R: np.ndarray, U: np.ndarray, uu: np.ndarray,
                    u_sums: np.ndarray) -> np.ndarray:
    """The centred Gram matrix of the rows ``[R; U]`` (a criterion's Kendall rows, then the
    untied counts of its columns) given the exact products ``uu`` of U's rows."""
    n = R.shape[1]
    r_sums = integer_sums(R)
    rr, ru = integer_products(R, R), integer_products(R, U)
    top = np.concatenate([rr, ru], axis=1)
    bottom = np.concatenate([ru.T, uu], axis=1)
    sums = np.concatenate([r_sums, u_sums])
    return _centre(np.concatenate([top, bottom], axis=0), sums, sums, n)


def _quadratic_form(w: np.ndarray, idx: list[np.ndarray],
                    gram: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sum_uv w_u w_v G[idx_u, idx_v]`` per comparison and the sum of its terms' absolute
    values, added in a fixed order (a comparison's value depends on its own numbers only)."""
    value = np.zeros(w.shape[1])
    size = np.zeros(w.shape[1])
    # an undefined correlation (NaN weight: a constant measure) makes its comparisons NaN,
    # which their rows report; no raw RuntimeWarning from inside the sum
    with np.errstate(invalid="ignore"):
        for u in range(len(idx)):
            for v in range(u, len(idx)):
                term = w[u] * w[v] * gram[idx[u], idx[v]] * (1.0 if u == v else 2.0)
                value += term
                size += np.abs(term)
    return value, size


def _direct_norms(rows: np.ndarray, untied: np.ndarray, hcol: np.ndarray, xcol: np.ndarray,
                  ka: np.ndarray, kb: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """``|L_a - sign L_b|^2`` summed over the items, from the linearised rows of the pairs
    involved only."""
    used, inverse = np.unique(np.concatenate([ka, kb]), return_inverse=True)
    _, L = linearised_rows(rows[used], untied[hcol[used]], untied[xcol[used]])
    la, lb = inverse[:len(ka)], inverse[len(ka):]
    out = np.empty(len(ka))
    step = max(1, _DIRECT_BYTES // max(8 * rows.shape[-1], 1))
    for lo in range(0, len(ka), step):
        k = slice(lo, lo + step)
        diff = L[la[k]] - sign[k][:, None] * L[lb[k]]
        out[k] = (diff * diff).sum(-1)
    return out


def ustat_gram_estimates(tau: np.ndarray, L: np.ndarray, criterion: np.ndarray,
                         ka: np.ndarray, kb: np.ndarray, sa: np.ndarray,
                         sb: np.ndarray) -> DiffEstimate:
    """``delta = s_a tau[ka] - s_b tau[kb]`` and Sen's standard error of every comparison
    (pairs ``ka``, ``kb`` of the same criterion; ``criterion``: the criterion code of each pair)
    from the Gram matrix of each criterion's rows ``L``."""
    n = L.shape[-1]
    return gram_estimates(tau, L, criterion, ka, kb, sa, sb, 4.0 / (n * (n - 1.0) ** 3))


def jackknife_gram_estimates(full: np.ndarray, loo: np.ndarray, criterion: np.ndarray,
                             ka: np.ndarray, kb: np.ndarray, sa: np.ndarray,
                             sb: np.ndarray) -> DiffEstimate:
    """The delete-one-item jackknife of every comparison (as
    `storyeval.compare.dependent.jackknife_diff`) from each pair's coefficient ``full`` and its
    leave-one-out values ``loo`` (pairs, n): ``se^2 = (n - 1) / n |C_a - s C_b|^2`` with ``C``
    the centred leave-one-out values."""
    n = loo.shape[-1]
    centred = loo - loo.mean(-1, keepdims=True)
    return gram_estimates(full, centred, criterion, ka, kb, sa, sb, (n - 1.0) / n)


def gram_estimates(theta: np.ndarray, rows: np.ndarray, criterion: np.ndarray,
                   ka: np.ndarray, kb: np.ndarray, sa: np.ndarray, sb: np.ndarray,
                   factor: float, *, gram: bool = False) -> DiffEstimate:
    """``s_a theta[ka] - s_b theta[kb]`` and ``sqrt(factor |s_a R_a - s_b R_b|^2)`` for every
    comparison.

    ``gram=False`` (what `meta` runs): the squared norms are reduced per comparison over the
    pairs' rows, in chunks of comparisons (no loop over pairs); each comparison's number then
    depends on its own two rows only, so it is bit-identical whatever other measures are in the
    run. ``gram=True``: from one Gram matrix ``R R^T`` per criterion (``criterion``: each
    pair's criterion code); as fast on HANNA's all-pairs run (benchmarks/bench_scale.py), but
    BLAS's blocking depends on the matrix size, so the last bits of a comparison change when
    measures join."""
    n = rows.shape[-1]
    if gram:
        norm2 = _gram_norms(rows, criterion, ka, kb, sa * sb)
    else:
        norm2 = np.empty(len(ka))
        step = max(1, _DIRECT_BYTES // max(8 * n, 1))
        for lo in range(0, len(ka), step):
            k = slice(lo, lo + step)
            diff = rows[ka[k]] - (sa[k] * sb[k])[:, None] * rows[kb[k]]
            norm2[k] = (diff * diff).sum(-1)
    with np.errstate(invalid="ignore"):
        var = factor * np.maximum(norm2, 0.0)
    return DiffEstimate(sa * theta[ka] - sb * theta[kb], np.sqrt(var))


def _gram_norms(L: np.ndarray, criterion: np.ndarray, ka: np.ndarray, kb: np.ndarray,
                sign: np.ndarray) -> np.ndarray:
    """``|L_a - sign L_b|^2`` from one Gram matrix per criterion (a loop over criteria)."""
    n = L.shape[-1]
    cross = np.empty(len(ka))
    sq = np.einsum("pn,pn->p", L, L)
    crit_a = criterion[ka]
    for code in np.unique(crit_a):
        members = np.flatnonzero(criterion == code)
        where = np.full(len(criterion), -1)
        where[members] = np.arange(len(members))
        gram = L[members] @ L[members].T
        rows_c = np.flatnonzero(crit_a == code)
        cross[rows_c] = gram[where[ka[rows_c]], where[kb[rows_c]]]
    total = sq[ka] + sq[kb]
    norm2 = total - 2.0 * sign * cross
    # nearly equal rows (two nearly identical measures): the expansion cancels, so these few
    # comparisons are summed directly
    close = np.flatnonzero(~(norm2 > _CANCEL * total))
    step = max(1, _DIRECT_BYTES // max(8 * n, 1))
    for lo in range(0, len(close), step):
        k = close[lo:lo + step]
        diff = L[ka[k]] - sign[k][:, None] * L[kb[k]]
        norm2[k] = np.einsum("kn,kn->k", diff, diff)
    return norm2
