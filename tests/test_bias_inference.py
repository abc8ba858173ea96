"""storyeval.bias.inference: the cluster-robust t of ratio contrasts and of Pearson's r, against
statsmodels' cluster-robust OLS, scipy's one-sample t-test and a cluster bootstrap."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from storyeval.bias.inference import clustered_correlation, ratio_contrast
from storyeval.exceptions import InputError, UndefinedStatisticWarning


def _clustered_data(seed=0, clusters=25, per=6):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(clusters), per)
    y = rng.normal(0, 1, clusters)[g] + rng.normal(0.3, 1, len(g))
    return y, g


def test_mean_equals_statsmodels_cluster_robust_ols():
    y, g = _clustered_data()
    res = ratio_contrast(y, np.ones_like(y), clusters=g)
    # statsmodels: OLS on a constant, cluster-robust covariance by g (CR1 with G/(G-1); the
    # (N-1)/(N-K) factor is 1 for K = 1), t on G - 1 degrees of freedom
    fit = sm.OLS(y, np.ones((len(y), 1))).fit(cov_type="cluster", cov_kwds={"groups": g},
                                             use_t=True)
    assert res.estimate == pytest.approx(fit.params[0], abs=1e-12)
    assert res.se == pytest.approx(fit.bse[0], rel=1e-10)
    assert res.pvalue == pytest.approx(fit.pvalues[0], rel=1e-9)
    low, high = fit.conf_int()[0]
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), rel=1e-10)
    assert res.df == 24 and res.n_clusters == 25 and res.n == len(y)


def test_difference_of_means_equals_dummy_regression_slope():
    y, g = _clustered_data(seed=3)
    own = (np.arange(len(y)) % 6 == 0)
    res = ratio_contrast(np.column_stack([y * own, y * ~own]),
                         np.column_stack([own, ~own]).astype(float), weights=[1, -1],
                         clusters=g)
    X = sm.add_constant(own.astype(float))
    fit = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True)
    n, k = len(y), 2
    assert res.estimate == pytest.approx(fit.params[1], abs=1e-12)
    # statsmodels also multiplies the variance by (N - 1) / (N - K)
    assert res.se * np.sqrt((n - 1) / (n - k)) == pytest.approx(fit.bse[1], rel=1e-10)


def test_balanced_contrast_is_one_sample_t_of_cluster_differences():
    # one unit per (cluster, group): the CR1 t equals scipy's t-test of per-cluster differences
    rng = np.random.default_rng(7)
    a, b = rng.normal(0.2, 1, 30), rng.normal(0, 1, 30)
    y = np.concatenate([a, b])
    grp = np.repeat([1.0, 0.0], 30)
    g = np.tile(np.arange(30), 2)
    res = ratio_contrast(np.column_stack([y * grp, y * (1 - grp)]),
                         np.column_stack([grp, 1 - grp]), weights=[1, -1], clusters=g)
    ref = stats.ttest_1samp(a - b, 0.0)
    assert res.estimate == pytest.approx(np.mean(a - b), abs=1e-12)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-10)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-9)
    ci = ref.confidence_interval(0.95)
    assert (res.ci_low, res.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)


def test_share_with_zero_denominators_and_one_sided():
    # hand case: 3 clusters; units with b = 0 do not enter
    a = np.array([1, 0, 1, 1, 0, 0], float)
    b = np.array([1, 1, 1, 1, 0, 1], float)
    g = np.array([0, 0, 1, 1, 2, 2])
    res = ratio_contrast(a, b, clusters=g, null=0.5, alternative="greater")
    assert res.estimate == pytest.approx(3 / 5)
    u = np.array([1 - 0.6 * 2, 2 - 0.6 * 2, 0 - 0.6 * 1]) / 5
    se = np.sqrt(3 / 2 * np.sum(u**2))
    assert res.se == pytest.approx(se)
    assert res.pvalue == pytest.approx(stats.t.sf((0.6 - 0.5) / se, 2))
    assert res.ci_high == np.inf and res.n == 5


def test_undefined_cases_are_nan_with_reason():
    with pytest.warns(UndefinedStatisticWarning):
        res = ratio_contrast([1.0, 2.0], [1.0, 1.0], clusters=[0, 0])
    assert np.isnan(res.pvalue) and "clusters" in res.reason and res.estimate == 1.5
    with pytest.warns(UndefinedStatisticWarning):
        res = ratio_contrast([0.0, 0.0], [0.0, 0.0], clusters=[0, 1])
    assert np.isnan(res.estimate) and "denominator" in res.reason
    with pytest.warns(UndefinedStatisticWarning):
        res = ratio_contrast([1.0, 1.0], [1.0, 1.0], clusters=[0, 1])
    assert "standard error 0" in res.reason
    with pytest.raises(InputError, match="finite"):
        ratio_contrast([np.nan], [1.0])
    with pytest.raises(InputError, match="alternative"):
        ratio_contrast([1.0, 2.0], [1.0, 1.0], alternative="bigger")


def test_correlation_jackknife_equals_explicit_leave_one_cluster_out_loop():
    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(15), 7)
    x = rng.normal(size=15)[g] + rng.normal(size=len(g))
    y = 0.4 * x + rng.normal(size=len(g))
    res = clustered_correlation(x, y, clusters=g)
    r = np.corrcoef(x, y)[0, 1]
    z = np.array([np.arctanh(np.corrcoef(x[g != c], y[g != c])[0, 1]) for c in range(15)])
    se_z = np.sqrt(14 / 15 * np.sum((z - z.mean())**2))
    assert res.estimate == pytest.approx(r, abs=1e-12)
    assert res.se == pytest.approx(se_z * (1 - r**2), rel=1e-9)
    assert res.pvalue == pytest.approx(2 * stats.t.sf(abs(np.arctanh(r)) / se_z, 14), rel=1e-8)
    q = stats.t.ppf(0.975, 14)
    assert res.ci_low == pytest.approx(np.tanh(np.arctanh(r) - q * se_z), rel=1e-9)


def test_correlation_se_close_to_cluster_bootstrap():
    rng = np.random.default_rng(5)
    g = np.repeat(np.arange(60), 8)
    x = rng.normal(size=60)[g] + rng.normal(size=len(g))
    y = 0.3 * x + rng.normal(size=60)[g] + rng.normal(size=len(g))
    res = clustered_correlation(x, y, clusters=g)
    draws = []
    for _ in range(2000):
        pick = rng.integers(0, 60, 60)
        idx = np.concatenate([np.flatnonzero(g == c) for c in pick])
        draws.append(np.corrcoef(x[idx], y[idx])[0, 1])
    assert res.se == pytest.approx(np.std(draws), rel=0.15)
    assert res.ci_low < res.estimate < res.ci_high


def test_correlation_constant_input():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedStatisticWarning)
        with pytest.raises(UndefinedStatisticWarning):
            clustered_correlation(np.ones(5), np.arange(5.0))


def test_ratio_with_varying_denominators_equals_statsmodels_wls():
    # sum(a) / sum(b) is the WLS mean of a / b with weights b; its CR1 variance by cluster
    # (statsmodels: G / (G - 1), and (N - 1) / (N - K) = 1 for K = 1) is ratio_contrast's
    rng = np.random.default_rng(11)
    g = np.repeat(np.arange(18), 5)
    b = rng.integers(1, 4, len(g)).astype(float)
    a = b * (0.4 + rng.normal(0, 0.3, 18)[g] + rng.normal(0, 0.5, len(g)))
    res = ratio_contrast(a, b, clusters=g, null=0.5)
    fit = sm.WLS(a / b, np.ones((len(g), 1)), weights=b).fit(
        cov_type="cluster", cov_kwds={"groups": g}, use_t=True)
    assert res.estimate == pytest.approx(fit.params[0], abs=1e-12)
    assert res.se == pytest.approx(fit.bse[0], rel=1e-10)
    assert res.statistic == pytest.approx((fit.params[0] - 0.5) / fit.bse[0], rel=1e-10)
    assert res.df == 17


def test_vectorised_functions_equal_the_scalar_ones_on_each_data_set():
    from storyeval.bias.inference import clustered_correlations, ratio_contrasts

    rng = np.random.default_rng(2)
    g = np.repeat(np.arange(12), 4)
    a = rng.normal(0.2, 1, (6, len(g), 2)) + rng.normal(0, 1, (6, 12, 1))[:, g]
    b = (rng.random((6, len(g), 2)) < 0.8).astype(float)
    a *= b
    a[5, g == 3] = 0.0
    b[5] = 0.0
    b[5, g == 3, :] = 1.0  # one cluster only: NaN with a reason
    many = ratio_contrasts(a, b, weights=[1.0, -1.0], clusters=g, null=0.1,
                           alternative="greater")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        for r in range(6):
            one = ratio_contrast(a[r], b[r], weights=[1.0, -1.0], clusters=g, null=0.1,
                                 alternative="greater").to_dict()
            got = many.iloc[r]
            for key in ("estimate", "ci_low", "ci_high", "se", "t", "pvalue"):
                np.testing.assert_allclose(got[key], one[key], rtol=1e-10, atol=1e-14)
            assert (got["n"], got["n_clusters"], got["reason"]) == (one["n"], one["n_clusters"],
                                                                    one["reason"])
    assert "fewer than two clusters" in many["reason"].iloc[5]
    x = rng.normal(size=(4, len(g)))
    y = 0.3 * x + rng.normal(size=(4, len(g)))
    many = clustered_correlations(x, y, clusters=g)
    for r in range(4):
        one = clustered_correlation(x[r], y[r], clusters=g).to_dict()
        for key in ("estimate", "ci_low", "ci_high", "se", "t", "pvalue"):
            np.testing.assert_allclose(many.iloc[r][key], one[key], rtol=1e-10)
        assert many.iloc[r]["test"] == one["test"]
