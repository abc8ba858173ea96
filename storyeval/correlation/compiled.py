"""Loading the compiled (numba) Kendall kernels ahead of their first use.

Its own module because it touches every compiled engine: the sorted counts (`kendall_sorted`),
the weighted counts (`kendall_weighted`, which builds on `kendall_sorted`) and the per-item row
sums of the U-statistic comparison test (`_kendall_rows_numba`).
"""

from __future__ import annotations

import threading

import numpy as np

from storyeval.correlation.kendall_sorted import engine, sorted_counts
from storyeval.correlation.kendall_weighted import WeightedKendall

__all__ = ["warm_up"]


def warm_up(background: bool = False) -> threading.Thread | None:
    """Load the compiled kernels now (numba's import and the cached machine code of each kernel:
    about 0.5-0.9 s once per process) rather than at the first count.

    ``background=True`` does it on a daemon thread and returns it, so that the load overlaps
    other work, e.g. reading a large score table (``storyeval meta`` does this for inputs of
    8 MB and more). A no-op (None) without numba or with the NumPy engine forced.
    """
    if engine() != "numba":
        return None
    if background:
        thread = threading.Thread(target=warm_up, name="storyeval-numba-warm-up", daemon=True)
        thread.start()
        return thread
    x = np.arange(40, dtype=np.float64).reshape(1, 40, 1)
    sorted_counts(x, x[:, ::-1].copy())  # the rank-based kernels
    sorted_counts(x[:, :5], x[:, :5])  # the direct kernel of a few observations
    WeightedKendall(x[0], [0], [0]).counts(np.ones((1, 40)))
    from storyeval.correlation._kendall_rows_numba import shared_rows

    # the row sums of the default comparison test (`storyeval.compare.dependent`): both the
    # prefix-array (few x levels) and the Fenwick-tree path
    v = np.arange(300, dtype=np.float64)  # 300 levels: beyond the prefix array's
    shared_rows(np.column_stack([v % 3, v]), np.array([0, 1]), np.array([1, 1]))
    return None
