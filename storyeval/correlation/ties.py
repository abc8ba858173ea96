"""The tie rule: which values a rank coefficient sees as tied, at every level.

One rule serves every coefficient and every level, for point estimates
(`storyeval.correlation.levels.correlate`), bootstrap resamples, permutations and chance baselines
(`storyeval.resample`):

* **overall and prompt levels**: the raw scores are compared exactly (two stories are tied when
  their scores are the same float);
* **system level**: the system means (and the means of every resample or permuted data set) are
  first passed through `snap_ties`, which makes means that agree within a relative tolerance
  ``tie_rtol`` (default `TIE_RTOL` = 1e-12) exactly equal; the snapped means are then compared
  exactly. Means equal in exact arithmetic (e.g. two systems whose ratings have the same total)
  can differ in the last bits once summed in floating point, and the summation order would
  otherwise decide whether a rank coefficient sees a tie.

`tie_values` applies the rule; every comparison of values after it is exact.
"""

from __future__ import annotations

import numpy as np

from storyeval.exceptions import InputError

__all__ = ["TIE_RTOL", "TIE_RULE", "snap_ties", "tie_values"]

TIE_RTOL = 1e-12
"""Default relative tolerance under which two system means count as tied.

Means of Likert ratings that are equal in exact arithmetic (e.g. two systems whose ratings sum
to the same total) can differ in the last bits once summed in floating point, and the order of
summation decides whether a rank coefficient sees a tie. Snapping means that agree to 1e-12
(relative) restores the exact ties. ``tie_rtol=0`` keeps the raw float means."""

TIE_RULE = ("overall and prompt levels: raw scores compared exactly (equal floats are tied); "
            "system level: system means, in point estimates and in every resample or "
            "permutation alike, that agree within the relative tolerance tie_rtol "
            "(|a - b| <= tie_rtol * max(|a|, |b|), chained over sorted values) are made equal, "
            "then compared exactly (storyeval.correlation.ties)")
"""The tie rule in words (written to settings.json as ``tie_rule``)."""


def _check_rtol(rtol: float) -> float:
    if rtol < 0 or not np.isfinite(rtol):
        raise InputError(f"tie_rtol must be a finite number >= 0, got {rtol!r}")
    return rtol


_SNAP_BLOCK = 2**15  # values per block: its temporaries stay in cache (no fresh pages)


def _snap_columns(values: np.ndarray, rtol: float) -> np.ndarray:
    """`snap_ties` of a 2-D array along axis 0."""
    n, m = values.shape
    snapped = np.empty((m, n))
    step = max(1, _SNAP_BLOCK // n)
    for start in range(0, m, step):  # blocks of columns, not single columns
        snapped[start:start + step] = _snap_rows(values[:, start:start + step].T, rtol)
    return snapped.T


def _snap_rows(rows: np.ndarray, rtol: float) -> np.ndarray:
    """`snap_ties` along the last axis of a 2-D block.

    Most rows have no group joining different values: sorting their values (no indices) shows
    it, and they are returned as they are; the others go through `_snap_changed_rows`."""
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    r, n = rows.shape
    ordered = np.sort(rows, axis=-1).ravel()  # NaN sorted last
    # consecutive values on the flattened block (whole-array operations, not per short row);
    # the comparison of a row's last value with the next row's first is dropped
    gap = np.abs(ordered[1:] - ordered[:-1])
    size = np.abs(ordered)
    joined = (gap <= rtol * np.maximum(size[1:], size[:-1])) & (gap != 0)
    joined[n - 1::n] = False
    change = np.zeros(r, dtype=bool)
    change[np.flatnonzero(joined) // n] = True
    zero = rows == 0
    if zero.any():  # 0.0 and -0.0 are equal, not the same bits: both would become the first
        negative = zero & np.signbit(rows)  # (np.sort may not keep the sign of zero)
        change |= negative.any(axis=-1) & (zero & ~negative).any(axis=-1)
    if not change.any():
        return rows
    out = rows.copy()
    out[change] = _snap_changed_rows(rows[change], rtol)
    return out


def _snap_changed_rows(rows: np.ndarray, rtol: float) -> np.ndarray:
    """`snap_ties` along the last axis of a contiguous 2-D block, rows flattened.

    Sorting and gathering along a short contiguous axis is much faster than along a strided
    axis 0. Every row starts a group, so the chaining and the first index of each group are
    computed on the flattened block at once. Same rule, same result: stable order, each value
    replaced by the smallest (first) of its group."""
    r, n = rows.shape
    flat = np.argsort(rows, axis=-1, kind="stable")  # NaN sorted last
    flat += np.arange(0, r * n, n)[:, None]
    flat = flat.ravel()
    ordered = rows.ravel()[flat]
    gap = np.abs(np.diff(ordered))
    scale = np.maximum(np.abs(ordered[1:]), np.abs(ordered[:-1]))
    starts = np.empty(r * n, dtype=bool)
    starts[1:] = ~(gap <= rtol * scale)
    starts[::n] = True
    first = np.maximum.accumulate(np.where(starts, np.arange(r * n), 0))
    out = np.empty(r * n)
    out[flat] = ordered[first]
    return out.reshape(r, n)


def snap_ties(values: np.ndarray, rtol: float = TIE_RTOL, axis: int = 0) -> np.ndarray:
    """Make the values along ``axis`` that agree within ``rtol`` (relative) exactly equal.

    Along ``axis`` (independently for every other index), sorted values are chained into groups
    while consecutive values satisfy ``|a - b| <= rtol * max(|a|, |b|)``; each value is replaced
    by the smallest of its group. NaN stays NaN. ``rtol == 0`` returns the input unchanged.

    Examples
    --------
    >>> snap_ties(np.array([[2/3 + 1e-16], [2/3], [0.5]]))[:, 0].tolist() == [2/3, 2/3, 0.5]
    True
    """
    rtol = _check_rtol(rtol)
    values = np.asarray(values)
    if rtol == 0 or values.ndim == 0 or values.shape[axis] < 2:
        return values
    moved = np.moveaxis(values.astype(np.float64, copy=False), axis, 0)
    flat = _snap_columns(moved.reshape(moved.shape[0], -1), rtol)
    return np.moveaxis(flat.reshape(moved.shape), 0, axis)


def tie_values(values: np.ndarray, level: str, *, axis: int = 0,
               rtol: float = TIE_RTOL) -> np.ndarray:
    """The values a coefficient compares at ``level``, under the tie rule (see module doc).

    ``values`` holds the observations along ``axis`` (stories, systems or the systems of one
    prompt). Overall and prompt levels: unchanged (compared exactly). System level: system
    means snapped with `snap_ties` (``rtol``). Ties are then exactly equal values.
    """
    if level == "system":
        return snap_ties(values, rtol, axis=axis)
    _check_rtol(rtol)
    return values
