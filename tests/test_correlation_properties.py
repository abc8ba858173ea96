"""Property tests run over every correlation method of the kernel (hypothesis).

Symmetry, invariance to the order of observations, invariance of the rank coefficients to
strictly increasing transforms, range [-1, 1], agreement with scipy, pairwise deletion.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from storyeval.correlation.kernel import METHODS, pairwise_correlations
from storyeval.exceptions import UndefinedStatisticWarning

RANK_METHODS = ("kendall_b", "kendall_c", "spearman")
SETTINGS = settings(max_examples=40, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def paired_data(draw, with_nan: bool = False):
    """Integer-valued (tie-heavy) or float data: x (n, p), y (n, q), same n."""
    n = draw(st.integers(2, 25))
    p = draw(st.integers(1, 3))
    q = draw(st.integers(1, 3))
    if draw(st.booleans()):
        elems = st.integers(-4, 4).map(float)
    else:
        elems = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, width=32).map(float)
    x = draw(hnp.arrays(np.float64, (n, p), elements=elems))
    y = draw(hnp.arrays(np.float64, (n, q), elements=elems))
    if with_nan:
        mx = draw(hnp.arrays(np.bool_, (n, p)))
        my = draw(hnp.arrays(np.bool_, (n, q)))
        x[mx] = np.nan
        y[my] = np.nan
    return x, y


def corr(x, y=None, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        return pairwise_correlations(x, y, **kwargs).statistic


@pytest.mark.parametrize("method", METHODS)
@SETTINGS
@given(data=paired_data())
def test_symmetry(method, data):
    x, y = data
    np.testing.assert_allclose(corr(x, y, method=method), corr(y, x, method=method).T,
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@SETTINGS
@given(data=paired_data(), seed=st.integers(0, 2**32 - 1))
def test_invariant_to_order_of_observations(method, data, seed):
    x, y = data
    perm = np.random.default_rng(seed).permutation(x.shape[0])
    np.testing.assert_allclose(corr(x, y, method=method), corr(x[perm], y[perm], method=method),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", RANK_METHODS)
@SETTINGS
@given(data=paired_data())
def test_rank_methods_invariant_to_increasing_transforms(method, data):
    x, y = data
    # strictly increasing, order- and tie-preserving in floating point
    tx = np.exp(x / 1e3) + 2.0 * x
    ty = np.arctan(y / 1e3) + y * 3.0 - 1.0
    # the transform may merge two floats (rounding): compare only when it preserves ties
    same_ties = all(
        np.array_equal(np.sign(a[:, None] - a[None, :]), np.sign(b[:, None] - b[None, :]))
        for a, b in [(x, tx), (y, ty)])
    if same_ties:
        np.testing.assert_allclose(corr(x, y, method=method), corr(tx, ty, method=method),
                                   rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@SETTINGS
@given(data=paired_data(with_nan=True))
def test_range_and_reason(method, data):
    x, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        res = pairwise_correlations(x, y, method=method, nan_policy="omit")
    stat = res.statistic
    finite = ~np.isnan(stat)
    assert (np.abs(stat[finite]) <= 1.0).all()
    assert all(bool(r) for r in res.reason[~finite])  # every NaN says why
    assert all(r == "" for r in res.reason[finite])


@pytest.mark.parametrize("method", METHODS)
@SETTINGS
@given(data=paired_data(with_nan=True))
def test_pairwise_deletion_equals_complete_case_on_each_pair(method, data):
    x, y = data
    full = corr(x, y, method=method, nan_policy="omit")
    for a in range(x.shape[1]):
        for b in range(y.shape[1]):
            keep = ~(np.isnan(x[:, a]) | np.isnan(y[:, b]))
            single = corr(x[keep, a], y[keep, b], method=method)[0, 0]
            np.testing.assert_allclose(full[a, b], single, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@SETTINGS
@given(data=paired_data())
def test_agrees_with_scipy(method, data):
    from scipy import stats

    x, y = data
    got = corr(x, y, method=method)
    for a in range(x.shape[1]):
        for b in range(y.shape[1]):
            u, v = x[:, a], y[:, b]
            if np.all(u == u[0]) or np.all(v == v[0]):
                assert np.isnan(got[a, b])
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if method.startswith("kendall"):
                    ref = stats.kendalltau(u, v, variant=method[-1]).statistic
                elif method == "pearson":
                    ref = stats.pearsonr(u, v).statistic
                else:
                    ref = stats.spearmanr(u, v).statistic
            np.testing.assert_allclose(got[a, b], ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
@SETTINGS
@given(data=paired_data())
def test_self_correlation_is_one(method, data):
    x, _ = data
    stat = corr(x, method=method)
    diag = np.diag(stat)
    const = np.array([np.all(c == c[0]) for c in x.T])
    assert np.isnan(diag[const]).all()
    if method != "kendall_c":  # tau-c of x with itself is below 1 unless n distinct values
        np.testing.assert_allclose(diag[~const], 1.0, rtol=0, atol=1e-12)
