"""Small shared helpers: argument checks, multiplicity draws, quantiles per column."""

from __future__ import annotations

import numpy as np

from storyeval.correlation.kernel import resolve_method
from storyeval.exceptions import InputError

RESAMPLE_BY = ("prompts", "systems", "both")
ALTERNATIVES = ("greater", "less", "two-sided")


def check_method(method: str) -> str:
    return resolve_method(method)


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_confidence(confidence_level) -> float:
    try:
        cl = float(confidence_level)
    except (TypeError, ValueError):
        cl = np.nan
    if not 0 < cl < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    return cl


def counts_from_draws(draws: np.ndarray, n_units: int) -> np.ndarray:
    """(B, n_units) multiplicities from (B, k) drawn unit indices."""
    B = draws.shape[0]
    flat = (np.arange(B)[:, None] * n_units + draws).ravel()
    return np.bincount(flat, minlength=B * n_units).reshape(B, n_units).astype(np.float64)


def quantile_columns(values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Per-column linear-interpolation quantiles (numpy's default method) of the finite values.

    values : (B, M); q : (M,) probabilities in [0, 1], or (k, M) for k quantiles per column
    from one sort (NaN gives NaN). Returns an array shaped like ``q``.
    """
    M = values.shape[1]
    finite = np.isfinite(values)
    # columns sorted as contiguous rows: several times faster than sorting along axis 0
    srt = np.sort(np.where(finite, values, np.inf).T, axis=1)  # (M, B)
    n = finite.sum(axis=0)
    q = np.asarray(q, dtype=np.float64)
    pos = q * (n - 1)
    ok = np.isfinite(pos) & (n > 0)
    pos = np.where(ok, pos, 0.0)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, np.maximum(n - 1, 0))
    frac = pos - lo
    cols = np.broadcast_to(np.arange(M), lo.shape)
    vlo = srt[cols, lo]
    vhi = srt[cols, hi]
    with np.errstate(invalid="ignore"):
        out = vlo + frac * (vhi - vlo)
    out = np.where(frac == 0, vlo, out)
    return np.where(ok, out, np.nan)
