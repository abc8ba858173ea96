"""The standard normal distribution function and its inverse, elementwise on arrays, without
importing `scipy.special` (a tenth of a second of a short command's start; the default `meta`
path needs nothing else from it).

``ndtr(x) = erfc(-x / sqrt(2)) / 2`` with the C library's ``erfc`` (accurate in both tails);
``ndtri(q)``: `statistics.NormalDist.inv_cdf` (Wichura's AS 241, about 1e-16 relative),
``-inf``/``inf`` at 0 and 1, NaN outside [0, 1]. Both agree with `scipy.special.ndtr` and
``ndtri`` to a few units in the last place (tests/test_normal.py).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

__all__ = ["ndtr", "ndtri"]

_SQRT2 = math.sqrt(2.0)
_STANDARD = NormalDist()


def _inverse(q: float) -> float:
    if not 0.0 <= q <= 1.0:  # NaN included
        return math.nan
    if q == 0.0:
        return -math.inf
    if q == 1.0:
        return math.inf
    return _STANDARD.inv_cdf(q)


_erfc = np.frompyfunc(math.erfc, 1, 1)
_inv = np.frompyfunc(_inverse, 1, 1)


def ndtr(x):
    """P(Z <= x) for a standard normal Z, elementwise (a float for a scalar)."""
    values = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # NaN in, NaN out
        out = 0.5 * np.asarray(_erfc(-values / _SQRT2), dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def ndtri(q):
    """The standard normal quantile of ``q``, elementwise (a float for a scalar)."""
    values = np.asarray(q, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # NaN or outside [0, 1] in, NaN out
        out = np.asarray(_inv(values), dtype=np.float64)
    return float(out) if out.ndim == 0 else out
