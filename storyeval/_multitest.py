"""The one Benjamini-Hochberg path (and BY, Bonferroni, Holm): `adjust_pvalues`, family by
family. Every module of storyeval that adjusts p-values calls it (a private module at the bottom
layer, so that `storyeval.resample` and `storyeval.llm` can; the public name is
`storyeval.compare.multitest.adjust_pvalues`)."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["METHODS", "adjust_pvalues", "bh"]

METHODS: tuple[str, ...] = ("bh", "by", "bonferroni", "holm", "none")

def _check_method(method: str, func: str) -> None:
    if method not in METHODS:
        raise InputError(f"{func}: method={method!r} is not one of {', '.join(map(repr, METHODS))}")


def _validated_pvalues(pvalues: Any, func: str, name: str = "pvalues") -> np.ndarray:
    try:
        p = np.asarray(pvalues, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{func}: {name} must be numeric ({exc})") from None
    if p.ndim != 1:
        raise InputError(f"{func}: {name} must be one-dimensional, got shape {p.shape}")
    bad = ~np.isnan(p) & ((p < 0) | (p > 1))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{func}: {name} must lie in [0, 1] (or be NaN); {int(bad.sum())} value(s) do not, "
            f"the first at position {i}: {p[i]!r}"
        )
    return p


def _family_codes(family: Any, size: int, func: str) -> np.ndarray:
    if family is None:
        return np.zeros(size, dtype=np.intp)
    if isinstance(family, (pd.Series, pd.Index, np.ndarray)):
        if np.ndim(family) != 1:
            raise InputError(
                f"{func}: family must be one-dimensional, got shape {np.shape(family)}"
            )
        labels = pd.Series(np.asarray(family))
    else:
        labels = pd.Series(list(family), dtype=object)
    if len(labels) != size:
        raise InputError(
            f"{func}: family must have one label per p-value ({size}), got {len(labels)}"
        )
    missing = labels.isna().to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise InputError(f"{func}: family has a missing label at position {i}")
    codes, _ = pd.factorize(labels, sort=False)
    return codes.astype(np.intp)


def adjust_pvalues(
    pvalues: Any,
    *,
    method: Literal["bh", "by", "bonferroni", "holm", "none"] = "bh",
    family: Any = None,
) -> np.ndarray:
    """Adjust p-values for multiple comparisons, each family separately.

    Parameters
    ----------
    pvalues : array_like of float, shape (m,)
        p-values in [0, 1]; NaN allowed (see Notes).
    method : {"bh", "by", "bonferroni", "holm", "none"}, default "bh"
        ``"bh"``: Benjamini-Hochberg (false discovery rate, independent or positively dependent
        tests); ``"by"``: Benjamini-Yekutieli (false discovery rate under any dependence);
        ``"bonferroni"`` and ``"holm"``: family-wise error rate; ``"none"``: unchanged copy.
    family : array_like, shape (m,), optional
        One family label per p-value (any hashable values); each family is adjusted on its own.
        None (default): all p-values form one family.

    Returns
    -------
    ndarray of float, shape (m,)
        Adjusted p-values, in the input order, capped at 1.

    Raises
    ------
    InputError
        If ``pvalues`` is not a 1-D numeric array in [0, 1] (NaN allowed), ``family`` has the
        wrong length or a missing label, or ``method`` is unknown.

    Notes
    -----
    Within a family with ``m`` non-missing p-values sorted as ``p_(1) <= ... <= p_(m)``:

    - BH: ``q_(i) = min_{j >= i} min(1, m p_(j) / j)``;
    - BY: as BH with ``m`` replaced by ``m c(m)``, ``c(m) = sum_{k=1}^m 1/k``;
    - Bonferroni: ``min(1, m p_i)``;
    - Holm: ``q_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))``.

    NaN p-values (an undefined test) are excluded from their family: they do not count in
    ``m`` and stay NaN. Ties get equal adjusted values. The computation is vectorised over all
    families at once (a lexicographic sort by family then p-value, and grouped cumulative
    minima/maxima).

    References
    ----------
    1. Benjamini, Y. and Hochberg, Y. (1995). Controlling the false discovery rate.
       Journal of the Royal Statistical Society B, 57(1), 289-300.
    2. Benjamini, Y. and Yekutieli, D. (2001). The control of the false discovery rate in
       multiple testing under dependency. Annals of Statistics, 29(4), 1165-1188.
    3. Holm, S. (1979). A simple sequentially rejective multiple test procedure.
       Scandinavian Journal of Statistics, 6(2), 65-70.

    Examples
    --------
    >>> from storyeval.compare.multitest import adjust_pvalues
    >>> adjust_pvalues([0.01, 0.04, 0.03, 0.20]).round(4).tolist()
    [0.04, 0.0533, 0.0533, 0.2]
    >>> adjust_pvalues([0.01, 0.04, 0.03, 0.20], family=["x", "x", "y", "y"]).round(4).tolist()
    [0.02, 0.04, 0.06, 0.2]

    Validated against ``scipy.stats.false_discovery_control`` (bh, by) and statsmodels
    ``multipletests`` (fdr_bh, fdr_by, bonferroni, holm) to 1e-12, family by family.
    """
    func = "adjust_pvalues"
    _check_method(method, func)
    p = _validated_pvalues(pvalues, func)
    codes = _family_codes(family, p.size, func)
    out = np.full(p.shape, np.nan)
    if p.size == 0:
        return out
    if method == "none":
        return p.copy()

    valid = ~np.isnan(p)
    idx = np.flatnonzero(valid)
    pv = p[idx]
    cv = codes[idx]
    if idx.size == 0:
        return out
    m_per_family = np.bincount(cv, minlength=codes.max() + 1)
    m = m_per_family[cv].astype(float)

    if method == "bonferroni":
        out[idx] = np.minimum(pv * m, 1.0)
        return out

    order = np.lexsort((pv, cv))  # by family, then p ascending
    ps = pv[order]
    cs = cv[order]
    ms = m[order]
    starts = np.r_[0, np.flatnonzero(np.diff(cs)) + 1]
    group_start = np.repeat(starts, np.diff(np.r_[starts, cs.size]))
    rank = np.arange(cs.size) - group_start + 1.0  # 1..m within each family

    if method in ("bh", "by"):
        scale = ms
        if method == "by":
            harmonic = np.cumsum(1.0 / np.arange(1, int(m_per_family.max()) + 1))
            scale = ms * harmonic[ms.astype(np.intp) - 1]
        raw = ps * (scale / rank)  # a factor >= 1 exactly: never below p, as in exact arithmetic
        # Step-up: running minimum from the largest p-value down, restarting at each family.
        rev = pd.Series(raw[::-1]).groupby(cs[::-1], sort=False).cummin().to_numpy()[::-1]
        adj = np.minimum(rev, 1.0)
    else:  # holm
        raw = np.minimum(ps * (ms - rank + 1.0), 1.0)
        adj = pd.Series(raw).groupby(cs, sort=False).cummax().to_numpy()

    res = np.empty_like(adj)
    res[order] = adj
    out[idx] = res
    return out


def bh(pvalues: Any) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values of one family (`adjust_pvalues` with ``method="bh"``;
    NaN stays NaN and does not count)."""
    return adjust_pvalues(pvalues, method="bh")
