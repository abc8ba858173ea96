"""Paired permutation test for the difference between two measures' correlations with a human
criterion (Deutsch, Dror and Roth 2021), vectorised over the second measure."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval._progress import progress_bar
from storyeval.correlation.kernel import scale_to_unit
from storyeval.correlation.resampled import (
    _chunks,
    _distinct_present,
    _prompt_mean,
    _safe_div,
    direct,
)
from storyeval.correlation.ties import TIE_RTOL, tie_values
from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel
from storyeval.resample._common import ALTERNATIVES, check_method, check_positive_int
from storyeval.resample._data import check_level, make_grid

__all__ = ["UNITS", "paired_permutation_test", "permutation_pvalues"]

UNITS = ("prompt", "system", "story")
_BATCH = 100
_TOL = 1e-12


def _unit_mask(m: np.ndarray, unit: str, S: int, P: int) -> np.ndarray:
    """(B, S, P) boolean: the story takes the *other* measure's score."""
    B = m.shape[0]
    if unit == "prompt":
        return np.broadcast_to(m[:, None, :], (B, S, P))
    if unit == "system":
        return np.broadcast_to(m[:, :, None], (B, S, P))
    return m.reshape(B, S, P)


def _arrange(d: np.ndarray, unit: str) -> np.ndarray:
    """(S, P, S, P) pair tensor -> (U, U, within) with the unit pair first."""
    S, P = d.shape[:2]
    if unit == "prompt":
        return d.transpose(1, 3, 0, 2).reshape(P, P, S * S)
    if unit == "system":
        return d.transpose(0, 2, 1, 3).reshape(S, S, P * P)
    return d.reshape(S * P, S * P, 1)


class _KendallOverall:
    """Kendall C - D and non-tied pair counts of the swapped vectors, as quadratic forms in the
    swap mask (see ``paired_permutation_test`` Notes)."""

    def __init__(self, xa, Xb, z, unit):
        S, P = xa.shape
        sz = np.sign(z[None, None, :, :] - z[:, :, None, None])  # [s,p,u,q]: z_j - z_i
        self.den_z = 0.5 * np.abs(sz).sum()
        Kb = Xb.shape[2]
        U = {"prompt": P, "system": S, "story": S * P}[unit]
        self.U = U
        self.quad_num = np.empty((Kb, U, U))
        self.quad_den = np.empty((Kb, U, U))
        self.lin = {key: np.empty((Kb, U)) for key in ("na", "nb", "da", "db")}
        self.const = {key: np.empty(Kb) for key in ("na", "nb", "da", "db")}
        for k in range(Kb):  # one O(n^2) tensor build per compared measure
            xb = Xb[:, :, k]
            src = {"a": xa, "b": xb}
            T, A = {}, {}
            for q in "ab":  # source at story i
                for p in "ab":  # source at story j
                    d = np.sign(src[p][None, None, :, :] - src[q][:, :, None, None])
                    T[q + p] = _arrange(d * sz, unit).sum(axis=2)
                    A[q + p] = _arrange(np.abs(d), unit).sum(axis=2)
            for key, M, store in (("n", T, self.quad_num), ("d", A, self.quad_den)):
                store[k] = M["aa"] - M["ab"] - M["ba"] + M["bb"]
                one_aa, one_bb = M["aa"].sum(axis=0), M["bb"].sum(axis=0)  # u^T M
                self.lin[key + "a"][k] = (-one_aa - M["aa"].sum(axis=1) + M["ab"].sum(axis=0)
                                          + M["ba"].sum(axis=1))
                self.lin[key + "b"][k] = (M["ab"].sum(axis=1) + M["ba"].sum(axis=0) - one_bb
                                          - M["bb"].sum(axis=1))
                self.const[key + "a"][k] = M["aa"].sum()
                self.const[key + "b"][k] = M["bb"].sum()

    def counts(self, m: np.ndarray):
        """C - D and non-tied-in-x counts for the swapped a' and b': four (B, Kb) arrays."""
        m = m.astype(np.float64)
        U, Kb = self.U, self.quad_num.shape[0]
        out = {}
        for key, Q in (("n", self.quad_num), ("d", self.quad_den)):
            Y = (m @ Q.transpose(1, 0, 2).reshape(U, Kb * U)).reshape(-1, Kb, U)
            quad = np.einsum("bku,bu->bk", Y, m)
            for side in "ab":
                out[key + side] = 0.5 * (self.const[key + side][None, :]
                                         + m @ self.lin[key + side].T + quad)
        return out["na"], out["da"], out["nb"], out["db"]


class _KendallOverallSorted:
    """The counts of ``_KendallOverall`` by weighted O(n log n) counting
    (`storyeval.correlation.kendall_weighted`): every story has an a-copy and a b-copy; a swap mask
    gives the a-copy weight 1 - m and the b-copy weight m for a' (the reverse for b'), so
    Kendall's counts of a' with z are the weighted counts of the 2n copies (the two copies of
    one story never both have weight)."""

    def __init__(self, xa, Xb, z, unit):
        from storyeval.correlation.kendall_weighted import WeightedKendall

        S, P = xa.shape
        Kb = Xb.shape[2]
        self.S, self.P, self.unit, self.Kb = S, P, unit, Kb
        copies = np.concatenate([np.broadcast_to(xa.reshape(-1, 1), (S * P, Kb)),
                                 Xb.reshape(-1, Kb)])  # (2n, Kb): [a; b_k] per column
        zz = np.concatenate([z.ravel(), z.ravel()])[:, None]
        self.weighted = WeightedKendall(np.hstack([copies, zz]), np.arange(Kb),
                                        np.full(Kb, Kb))
        _, tie_sizes = np.unique(z, return_counts=True)
        self.den_z = float(S * P * (S * P - 1) - (tie_sizes * (tie_sizes - 1)).sum()) / 2
        self._last = None

    def counts(self, m: np.ndarray):
        """C - D and non-tied-in-x counts for the swapped a' and b': four (B, Kb) arrays."""
        swap = _unit_mask(m, self.unit, self.S, self.P).reshape(m.shape[0], -1)
        swap = swap.astype(np.float64)
        W = np.concatenate([np.hstack([1.0 - swap, swap]), np.hstack([swap, 1.0 - swap])])
        c = self.weighted.counts(W)
        B = m.shape[0]
        self._last = (m, c.distinct_x[:B], c.distinct_x[B:])
        return c.s[:B], c.untied_x[:B], c.s[B:], c.untied_x[B:]

    def distinct(self, m: np.ndarray):
        """Distinct values of a' and of b' (two (B, Kb) arrays) for the masks ``m`` (counted
        with them by `counts`)."""
        if self._last is None or self._last[0] is not m:
            self.counts(m)
        return self._last[1], self._last[2]


def _tau_c(num: np.ndarray, distinct: np.ndarray, distinct_z: int, n: int) -> np.ndarray:
    """Stuart's tau-c from C - D, the distinct values of the measure and of z, n stories."""
    m = np.minimum(distinct, distinct_z).astype(np.float64)
    return _safe_div(2.0 * num, n**2 * (m - 1) / np.maximum(m, 1))


def _kendall_overall(xa, Xb, z, unit: str, n_permutations: int):
    """The cheaper of the quadratic forms (O(n^2) per measure once, O(U^2) per permutation) and
    weighted O(n log n) counting per permutation, by the costs of `overall_kendall_plan`."""
    from storyeval.correlation.kendall_sorted import engine
    from storyeval.correlation.resampled_overall import _BLOCK_MAX_BYTES, _COST

    S, P = xa.shape
    n, Kb = S * P, Xb.shape[2]
    U = {"prompt": P, "system": S, "story": n}[unit]
    quad = (_COST["block_setup"] * n * n * 8 * Kb
            + _COST["block_quad"] * n_permutations * U * U * Kb * 4)
    per = _COST["sorted_numba" if engine() == "numba" else "sorted_numpy"]
    levels = len(np.unique(z))
    weighted = per * max(1.0, np.log2(levels + 1) / 4) * 2 * n_permutations * 2 * n * Kb
    if 8.0 * n * n * 4 <= _BLOCK_MAX_BYTES and quad <= weighted:
        return _KendallOverall(xa, Xb, z, unit)
    return _KendallOverallSorted(xa, Xb, z, unit)


def paired_permutation_test(
    wide: pd.DataFrame,
    criterion: str,
    measure_a: str,
    measures_b: Sequence[str] | str,
    *,
    level: str = "overall",
    method: str = "kendall_b",
    unit: str = "prompt",
    n_permutations: int = 1000,
    alternative: str = "greater",
    orient: bool = True,
    standardize: bool = True,
    random_state: int | np.random.Generator | None = 0,
    show_progress: bool | None = None,
    tie_rtol: float = TIE_RTOL,
) -> pd.DataFrame:
    """Paired permutation test: does ``measure_a`` correlate better with ``criterion`` than each
    measure b?

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, complete grid, no missing values.
    criterion : str
        The human criterion column.
    measure_a : str
        The measure tested against every measure b.
    measures_b : str or sequence of str
        The measures compared with ``measure_a`` (vectorised: one call for all of them).
    level : {"overall", "system", "prompt"}, default "overall"
    method : {"kendall_b", "kendall_c", "pearson", "spearman"}, default "kendall_b"
    unit : {"prompt", "system", "story"}, default "prompt"
        What is swapped: with probability 1/2 independently per unit, all stories of a prompt
        (a system; a single story) take b's score in place of a's and vice versa (Deutsch et
        al.'s PERM-INPUTS, PERM-SYSTEMS, PERM-BOTH). ``unit="prompt"`` at the prompt level swaps
        whole per-prompt coefficients.
    n_permutations : int, default 1000
    alternative : {"greater", "less", "two-sided"}, default "greater"
        ``"greater"``: H1 is that a's (oriented) correlation exceeds b's.
    orient : bool, default True
        Multiply each measure by the sign of its correlation with the criterion (at this level)
        before swapping, so that a measure where lower is better is compared by ``|r|``, as the
        Williams tests of the paper do. ``delta = |r_a| - |r_b|`` then.
    standardize : bool, default True
        z-score each measure over all stories (mean 0, standard deviation 1) before swapping,
        so that swapped scores are on one scale.
    random_state : int or Generator, default 0
        Seeded by default (as `storyeval meta`); ``None`` draws fresh entropy.
        ``numpy.random.default_rng(random_state).random((n_permutations, n_units)) < 0.5`` are
        the swap masks, shared by every measure b.
    show_progress : bool, optional
    tie_rtol : float, default 1e-12
        The tie rule of the system means (`storyeval.correlation.ties`), in the observed and in every
        permuted data set.

    Returns
    -------
    DataFrame
        One row per measure b: ``criterion, measure_a, measure_b, level, coefficient, value_a,
        value_b, delta, pvalue, pvalue_bh, family, unit, alternative, n_permutations``.
        ``value_*`` are the signed correlations on the original data; ``delta`` the oriented
        difference; ``pvalue_bh`` the Benjamini-Hochberg adjustment over the rows of this call
        (the family named in ``family``).

    Notes
    -----
    With ``delta*`` the statistic on a permuted data set, the p-value counts the permutations at
    least as extreme as the observed ``delta`` (the observed one included, Phipson and Smyth
    2010): ``p = (1 + #{delta* >= delta}) / (1 + n_permutations)`` for ``"greater"``
    (``<=`` for ``"less"``, ``|delta*| >= |delta|`` for ``"two-sided"``); a tolerance of
    1e-12 absorbs rounding. At the overall level, Kendall's ``C - D`` of the swapped vector
    ``x' = (1 - m) a + m b`` is a quadratic form in the unit mask ``m``,
    ``1/2 [u^T T_aa u + m^T l + m^T (T_aa - T_ab - T_ba + T_bb) m]`` with
    ``T_qp[g, h] = sum_{i in g, j in h} sign(p_j - q_i) sign(z_j - z_i)`` (likewise for the
    non-tied counts), so all permutations cost matrix products; other cases build the swapped
    vectors in chunks. ``unit="story"`` at the overall level costs O(B n^2) per measure b.

    References
    ----------
    1. Deutsch, D., Dror, R., Roth, D. (2021). A Statistical Analysis of Summarization
       Evaluation Metrics Using Resampling Methods. TACL 9.
    2. Phipson, B., Smyth, G. K. (2010). Permutation p-values should never be zero.
       Statistical Applications in Genetics and Molecular Biology 9(1).

    Validated against a per-permutation loop over explicitly swapped vectors with
    ``scipy.stats`` coefficients (every method, level and unit) in tests/test_permutation.py.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> idx = pd.MultiIndex.from_product([list("ABCDE"), range(8)], names=["system", "prompt_id"])
    >>> g = np.random.default_rng(0)
    >>> wide = pd.DataFrame({"h": g.normal(size=40)}, index=idx)
    >>> wide["good"] = wide["h"] + 0.3 * g.normal(size=40)
    >>> wide["noise"] = g.normal(size=40)
    >>> res = paired_permutation_test(wide, "h", "good", ["noise"], n_permutations=199,
    ...                               random_state=0)
    >>> bool(res.loc[0, "pvalue"] < 0.05)
    True
    """
    from storyeval._multitest import bh

    level = check_level(level)
    method = check_method(method)
    if unit not in UNITS:
        raise InputError(f"unit must be one of {UNITS}, got {unit!r}")
    if alternative not in ALTERNATIVES:
        raise InputError(f"alternative must be one of {ALTERNATIVES}, got {alternative!r}")
    n_permutations = check_positive_int(n_permutations, "n_permutations")
    if isinstance(measures_b, str):
        measures_b = [measures_b]
    measures_b = [str(b) for b in measures_b]
    if not measures_b:
        raise InputError("measures_b is empty")
    for name, m in (("criterion", criterion), ("measure_a", measure_a)):
        if m in measures_b:
            raise InputError(f"{name} {m!r} is also in measures_b")
    if len(set(measures_b)) != len(measures_b):
        raise InputError("measures_b has duplicates")
    grid = make_grid(wide, [criterion, measure_a, *measures_b])
    X = grid.X.copy()  # (S, P, 2 + Kb): criterion, a, b...
    S, P, K = X.shape
    Kb = K - 2

    # observed signed coefficients of every measure with the criterion
    obs = _coefficients(X[..., 1:], X[..., 0], level, method, tie_rtol)  # (K-1,)
    if standardize:
        flat = X[..., 1:].reshape(-1, K - 1)
        sd = flat.std(axis=0)
        X[..., 1:] = (X[..., 1:] - flat.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    if orient:
        X[..., 1:] *= np.where(obs < 0, -1.0, 1.0)
    z, xa, Xb = X[..., 0], X[..., 1], X[..., 2:]
    oriented = np.abs(obs) if orient else obs
    delta = oriented[0] - oriented[1:]
    undefined = ~np.isfinite(delta)

    rng = np.random.default_rng(random_state)
    n_units = {"prompt": P, "system": S, "story": S * P}[unit]
    masks = rng.random((n_permutations, n_units)) < 0.5

    kendall = None
    if level == "overall" and method in ("kendall_b", "kendall_c"):
        kendall = _kendall_overall(xa, Xb, z, unit, n_permutations)
        if method == "kendall_c":
            dist_z = len(np.unique(z))
    deltas = np.empty((n_permutations, Kb))
    with progress_bar(total=n_permutations, desc="permutations", unit="perm",
                      show=show_progress) as bar:
        for start in range(0, n_permutations, _BATCH):
            sl = slice(start, min(start + _BATCH, n_permutations))
            m = masks[sl]
            if kendall is not None:
                na, da, nb, db = kendall.counts(m)
                if method == "kendall_b":
                    ra = _safe_div(na, np.sqrt(da * kendall.den_z))
                    rb = _safe_div(nb, np.sqrt(db * kendall.den_z))
                elif isinstance(kendall, _KendallOverallSorted):
                    dist_a, dist_b = kendall.distinct(m)
                    ra = _tau_c(na, dist_a, dist_z, S * P)
                    rb = _tau_c(nb, dist_b, dist_z, S * P)
                else:
                    n = S * P
                    ra, rb = np.empty_like(na), np.empty_like(nb)
                    for sub in _chunks(m.shape[0], n * Kb * 8 * 4):
                        swap = _unit_mask(m[sub], unit, S, P)[..., None]
                        for r, num, first, second in ((ra, na, xa, Xb), (rb, nb, Xb, xa)):
                            Xs = np.where(swap, second if second.ndim == 3 else second[..., None],
                                          first if first.ndim == 3 else first[..., None])
                            Xs = np.broadcast_to(Xs, (Xs.shape[0], S, P, Kb)).reshape(-1, n, Kb)
                            dx = _distinct_present(Xs, np.ones(Xs.shape[:2]))
                            r[sub] = _tau_c(num[sub], dx, dist_z, n)
            else:
                ra, rb = _swapped_coefficients(xa, Xb, z, m, unit, level, method,
                                                tie_rtol)
            if orient:
                ra, rb = np.abs(ra), np.abs(rb)
            deltas[sl] = ra - rb
            bar.update(sl.stop - sl.start)

    if alternative == "greater":
        extreme = deltas >= delta[None, :] - _TOL
    elif alternative == "less":
        extreme = deltas <= delta[None, :] + _TOL
    else:
        extreme = np.abs(deltas) >= np.abs(delta)[None, :] - _TOL
    pvalue = (1.0 + extreme.sum(axis=0)) / (1.0 + n_permutations)
    pvalue = np.where(undefined, np.nan, pvalue)
    if undefined.any():
        warnings.warn(f"permutation test: correlation undefined (constant measure) for "
                      f"{[measures_b[k] for k in np.flatnonzero(undefined)][:3]}; p-value NaN",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
    adjusted = bh(np.where(np.isfinite(pvalue), pvalue, np.nan))  # NaN: left out of the family
    return pd.DataFrame({
        "criterion": criterion,
        "measure_a": measure_a,
        "measure_b": measures_b,
        "level": level,
        "coefficient": method,
        "value_a": obs[0],
        "value_b": obs[1:],
        "delta": delta,
        "pvalue": pvalue,
        "pvalue_bh": adjusted,
        "family": f"{criterion} | {measure_a} vs {Kb} measure(s) | {level}",
        "unit": unit,
        "alternative": alternative,
        "n_permutations": n_permutations,
    })


def _coefficients(Xm: np.ndarray, z: np.ndarray, level: str, method: str,
                  tie_rtol: float = TIE_RTOL) -> np.ndarray:
    """Signed coefficient of every column of Xm (S, P, K) with z (S, P) at a level."""
    S, P, K = Xm.shape
    if level == "overall" and method in ("kendall_b", "kendall_c"):
        from storyeval.correlation.kernel import pairwise_correlations

        res = pairwise_correlations(Xm.reshape(S * P, K), z.reshape(S * P, 1), method=method,
                                    warn=False)
        return res.statistic[:, 0]
    V = np.concatenate([z[..., None], Xm], axis=2)
    ia = np.arange(1, K + 1)
    ic = np.zeros(K, dtype=np.int64)
    return _level_coefficients(V[None], ia, ic, level, method, tie_rtol)[0]


def _level_coefficients(V: np.ndarray, ia, ic, level: str, method: str,
                        tie_rtol: float = TIE_RTOL) -> np.ndarray:
    """Coefficients for a batch of explicit data sets V (B, S, P, K) at a level -> (B, M)
    (overall Kendall is handled by the quadratic forms of ``_KendallOverall``)."""
    from storyeval.correlation.resampled import _weighted_pearson_cols

    B, S, P, K = V.shape
    if level == "overall":
        flat = V.reshape(B, S * P, K)
        if method == "spearman":
            from scipy.stats import rankdata  # lazy: scipy.stats costs 1 s to import

            flat = rankdata(flat, axis=1)
        return _weighted_pearson_cols(flat, np.ones(S * P), ia, ic)
    if level == "system":
        means = tie_values(V.mean(axis=2), "system", axis=1, rtol=tie_rtol)  # the tie rule
        return direct(means, np.ones(S), ia, ic, method)
    per_prompt = scale_to_unit(V.transpose(0, 2, 1, 3), axis=2)  # exact; avoids underflow
    r = direct(per_prompt, np.ones(S), ia, ic, method)  # (B, P, M)
    return _prompt_mean(r, np.ones((B, P)))


def _swapped_coefficients(xa, Xb, z, m, unit, level, method, tie_rtol=TIE_RTOL):
    """Coefficients of the swapped a' and b' with z for masks m (B, U) -> two (B, Kb)."""
    S, P = xa.shape
    Kb = Xb.shape[2]
    B = m.shape[0]
    ra = np.empty((B, Kb))
    rb = np.empty((B, Kb))
    ia = np.arange(1, 2 * Kb + 1)
    ic = np.zeros(2 * Kb, dtype=np.int64)
    if level == "prompt" and unit == "prompt":
        per = direct(np.concatenate([z[..., None], xa[..., None], Xb], axis=2).transpose(1, 0, 2),
                     np.ones(S), np.arange(1, Kb + 2), np.zeros(Kb + 1, dtype=np.int64), method)
        r_a, r_b = per[:, :1], per[:, 1:]  # (P, 1), (P, Kb)
        mm = m[:, :, None]
        ra = _prompt_mean(np.where(mm, r_b[None], r_a[None]), np.ones((B, P)))
        rb = _prompt_mean(np.where(mm, r_a[None], r_b[None]), np.ones((B, P)))
        return ra, rb
    for sl in _chunks(B, S * P * (2 * Kb + 1) * 8 * 6):
        swap = _unit_mask(m[sl], unit, S, P)[..., None]
        a_sw = np.where(swap, Xb, xa[..., None])  # (b, S, P, Kb)
        b_sw = np.where(swap, xa[..., None], Xb)
        zz = np.broadcast_to(z[None, :, :, None], (a_sw.shape[0], S, P, 1))
        V = np.concatenate([zz, a_sw, b_sw], axis=3)
        r = _level_coefficients(V, ia, ic, level, method, tie_rtol)
        ra[sl], rb[sl] = r[:, :Kb], r[:, Kb:]
    return ra, rb


def permutation_pvalues(
    wide: pd.DataFrame,
    comparisons: pd.DataFrame,
    *,
    method: str = "kendall_b",
    unit: str | dict[str, str] | None = None,
    n_permutations: int = 1000,
    alternative: str = "greater",
    orient: bool = True,
    standardize: bool = True,
    random_state: int | None = 0,
    tie_rtol: float = TIE_RTOL,
) -> pd.DataFrame:
    """Permutation p-values for a table of comparisons (e.g. the rows of the Williams tests).

    Parameters
    ----------
    wide : DataFrame
        As in [`paired_permutation_test`][].
    comparisons : DataFrame
        Columns ``criterion, measure_a, measure_b, level``; one test per row.
    method, n_permutations, alternative, orient, standardize
        As in [`paired_permutation_test`][].
    unit : str or dict, optional
        The swapping unit, or one per level. Default: ``"prompt"`` at the overall and prompt
        levels, ``"prompt"`` at the system level too (swapping whole systems with 10 systems
        gives only 2^10 distinct permutations).
    random_state : int, default 0
        Seeded by default (as `storyeval meta`). Every (criterion, measure_a, level) group uses this seed, so the swap masks are shared
        across groups of the same level.
    tie_rtol : float, default 1e-12
        The tie rule of the system means (`storyeval.correlation.ties`).

    Returns
    -------
    DataFrame
        ``comparisons`` with columns ``perm_delta, perm_p, perm_unit, perm_n`` added (same row
        order). The p-values are not adjusted: adjust them with the family of the Williams
        tests (``storyeval.compare.multitest.adjust_frame``).

    Validated as [`paired_permutation_test`][].
    """
    need = ["criterion", "measure_a", "measure_b", "level"]
    missing = [c for c in need if c not in comparisons.columns]
    if missing:
        raise InputError(f"comparisons is missing column(s) {missing}")
    units = unit if isinstance(unit, dict) else {lv: unit or "prompt"
                                                 for lv in ("overall", "system", "prompt")}
    out = comparisons.copy()
    out["perm_delta"] = np.nan
    out["perm_p"] = np.nan
    out["perm_unit"] = out["level"].map(units)
    out["perm_n"] = n_permutations
    for (crit, a, level), group in comparisons.groupby(["criterion", "measure_a", "level"],
                                                       sort=False):
        bs = list(dict.fromkeys(group["measure_b"]))
        res = paired_permutation_test(wide, crit, a, bs, level=level, method=method,
                                      unit=units[level], n_permutations=n_permutations,
                                      alternative=alternative, orient=orient,
                                      standardize=standardize, random_state=random_state,
                                      tie_rtol=tie_rtol)
        res = res.set_index("measure_b")
        out.loc[group.index, "perm_delta"] = res.loc[group["measure_b"], "delta"].to_numpy()
        out.loc[group.index, "perm_p"] = res.loc[group["measure_b"], "pvalue"].to_numpy()
    return out
