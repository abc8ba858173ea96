"""`storyeval._normal` against scipy.special (the reference; never imported by storyeval for
these two functions)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from scipy import special

from storyeval._normal import ndtr, ndtri


def test_ndtr_equals_scipy_across_the_range():
    x = np.concatenate([np.linspace(-40, 40, 4001), [-np.inf, np.inf, 0.0, -0.0, 1e-300]])
    # erfc(-x / sqrt 2): the rounded argument costs up to 1e-14 relative in the tails (and
    # 1e-13 deep in the lower one); subnormals: scipy flushes to 0
    np.testing.assert_allclose(ndtr(x), special.ndtr(x), rtol=1e-12, atol=1e-300)
    central = np.abs(x) < 8
    np.testing.assert_allclose(ndtr(x[central]), special.ndtr(x[central]), rtol=1e-13)
    assert np.isnan(ndtr(np.array([np.nan]))).all()
    assert isinstance(ndtr(1.5), float) and abs(ndtr(1.5) - special.ndtr(1.5)) < 1e-15


def test_ndtri_equals_scipy_across_the_range():
    q = np.concatenate([np.logspace(-300, -1, 600), np.linspace(0.01, 0.99, 99),
                        1 - np.logspace(-16, -1, 100)])
    np.testing.assert_allclose(ndtri(q), special.ndtri(q), rtol=1e-12, atol=1e-13)
    ends = ndtri(np.array([0.0, 1.0, -0.1, 1.1, np.nan]))
    assert ends[0] == -np.inf and ends[1] == np.inf and np.isnan(ends[2:]).all()
    assert isinstance(ndtri(0.975), float)


@given(st.floats(-30, 30))
def test_ndtri_inverts_ndtr(x):
    p = ndtr(x)
    if 1e-300 < p < 1 - 1e-6:  # above, p keeps too few bits of x
        assert abs(ndtri(p) - x) <= 1e-8 * max(1.0, abs(x))
