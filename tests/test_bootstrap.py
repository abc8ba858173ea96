"""Bootstrap CIs: every replicate equals scipy on the explicitly resampled vectors; percentile
and BCa intervals equal scipy.stats.bootstrap with identical draws."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from storyeval.exceptions import FewClustersWarning, InputError, UndefinedStatisticWarning
from storyeval.resample import bootstrap_correlations, draw_resamples
from storyeval.resample.bootstrap import expanded_level

# the small test grid has 12 prompts and 5 systems: the warning is tested once, below
pytestmark = pytest.mark.filterwarnings("ignore::storyeval.exceptions.FewClustersWarning")

S, P = 5, 12
SYSTEMS = [f"sys{i}" for i in range(S)]


def _scipy(x, y, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant-input warnings of scipy
        if method == "kendall_b":
            return st.kendalltau(x, y).statistic
        if method == "kendall_c":
            return st.kendalltau(x, y, variant="c").statistic
        if method == "pearson":
            return st.pearsonr(x, y).statistic
        return st.spearmanr(x, y).statistic


@pytest.fixture(scope="module")
def wide():
    g = np.random.default_rng(0)
    idx = pd.MultiIndex.from_product([SYSTEMS, range(P)], names=["system", "prompt_id"])
    h = g.integers(1, 6, S * P).astype(float)  # Likert-like: many ties
    return pd.DataFrame({
        "h": h,
        "h2": g.integers(1, 4, S * P) / 3.0,
        "m": h + g.normal(size=S * P),
        "k": g.integers(0, 4, S * P).astype(float),
    }, index=idx)


PAIRS = [("m", "h"), ("k", "h"), ("m", "h2"), ("h", "h2")]


def _explicit(wide, cS, cP, level, method):
    """scipy on the explicitly resampled grid: (B, pairs)."""
    X = {c: wide[c].to_numpy().reshape(S, P) for c in wide}
    out = np.empty((cS.shape[0], len(PAIRS)))
    for b in range(cS.shape[0]):
        si = np.repeat(np.arange(S), cS[b].astype(int))
        pi = np.repeat(np.arange(P), cP[b].astype(int))
        for k, (a, c) in enumerate(PAIRS):
            xa, xc = X[a][si][:, pi], X[c][si][:, pi]
            if level == "overall":
                out[b, k] = _scipy(xa.ravel(), xc.ravel(), method)
            elif level == "system":
                # means of equal sums can differ in the last bit depending on the summation
                # order; rounding makes mathematically tied system means tied for scipy too
                ma, mc = xa.mean(axis=1), xc.mean(axis=1)
                if method != "pearson":
                    ma, mc = np.round(ma, 10), np.round(mc, 10)
                out[b, k] = _scipy(ma, mc, method)
            else:
                r = np.array([_scipy(xa[:, j], xc[:, j], method) for j in range(xa.shape[1])])
                out[b, k] = np.nanmean(r)
    return out


@pytest.mark.parametrize("resample_by", ["prompts", "systems", "both"])
@pytest.mark.parametrize("level", ["overall", "system", "prompt"])
@pytest.mark.parametrize("method", ["kendall_b", "kendall_c", "pearson", "spearman"])
def test_replicates_equal_scipy_on_resampled_vectors(wide, method, level, resample_by):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        res, dist = bootstrap_correlations(wide, PAIRS, level=level, method=method,
                                           n_resamples=4, resample_by=resample_by,
                                           random_state=11, return_distribution=True)
    cS, cP = draw_resamples(S, P, n_resamples=4, resample_by=resample_by, random_state=11)
    expected = _explicit(wide, cS, cP, level, method)
    np.testing.assert_allclose(dist, expected, rtol=0, atol=1e-12)
    point = _explicit(wide, np.ones((1, S)), np.ones((1, P)), level, method)[0]
    np.testing.assert_allclose(res["value"], point, rtol=0, atol=1e-12)


@pytest.mark.parametrize("ci_method", ["percentile", "BCa"])
@pytest.mark.parametrize("resample_by", ["prompts", "systems"])
def test_intervals_equal_scipy_bootstrap(wide, ci_method, resample_by):
    X = {c: wide[c].to_numpy().reshape(S, P) for c in wide}
    n_units = P if resample_by == "prompts" else S

    def stat(i):  # i: resampled unit indices (scipy resamples them as one paired sample)
        if resample_by == "prompts":
            return st.kendalltau(X["m"][:, i].ravel(), X["h"][:, i].ravel()).statistic
        return st.kendalltau(X["m"][i].ravel(), X["h"][i].ravel()).statistic

    # scipy draws rng.integers(0, n, (n_resamples, n)) from default_rng(seed): the same
    # multiplicities as draw_resamples with the same seed
    # scipy >= 1.15 takes the seed as rng=; older versions as random_state= (a Generator)
    seed = ({"rng": 7} if "rng" in inspect.signature(st.bootstrap).parameters
            else {"random_state": np.random.default_rng(7)})
    ref = st.bootstrap((np.arange(n_units),), stat, n_resamples=300, paired=True,
                       vectorized=False, method=ci_method, confidence_level=0.9, **seed)
    got = bootstrap_correlations(wide, [("m", "h")], n_resamples=300, resample_by=resample_by,
                                 ci_method=ci_method.lower(), random_state=7,
                                 confidence_level=0.9)
    assert got.loc[0, "ci_low"] == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert got.loc[0, "ci_high"] == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert got.loc[0, "se"] == pytest.approx(ref.standard_error, abs=1e-12)


def test_shared_resamples_are_paired_and_reproducible(wide):
    a = bootstrap_correlations(wide, PAIRS, n_resamples=50, random_state=3,
                               return_distribution=True)
    b = bootstrap_correlations(wide, PAIRS[::-1][:2], n_resamples=50, random_state=3,
                               return_distribution=True)
    # the same seed gives the same resamples whatever the other pairs are
    np.testing.assert_array_equal(a[1][:, 3], b[1][:, 0])
    np.testing.assert_array_equal(a[1][:, 2], b[1][:, 1])
    pd.testing.assert_frame_equal(a[0], bootstrap_correlations(wide, PAIRS, n_resamples=50,
                                                               random_state=3))
    c = bootstrap_correlations(wide, PAIRS, n_resamples=50, random_state=4)
    assert not np.allclose(a[0]["ci_low"], c["ci_low"])
    assert (a[0]["n_resamples_valid"] == 50).all()


def test_draw_resamples_documented_stream():
    cS, cP = draw_resamples(3, 4, n_resamples=5, resample_by="both", random_state=9)
    g = np.random.default_rng(9)
    pr = g.integers(0, 4, (5, 4))
    sy = g.integers(0, 3, (5, 3))
    np.testing.assert_array_equal(cP, [np.bincount(r, minlength=4) for r in pr])
    np.testing.assert_array_equal(cS, [np.bincount(r, minlength=3) for r in sy])
    assert (cP.sum(axis=1) == 4).all() and (cS.sum(axis=1) == 3).all()


def test_undefined_and_bad_input(wide):
    const = wide.assign(c=1.0)
    with pytest.warns(UndefinedStatisticWarning, match="undefined on the original data"):
        res = bootstrap_correlations(const, [("c", "h")], n_resamples=10, random_state=0)
    assert np.isnan(res.loc[0, "value"]) and res.loc[0, "n_resamples_valid"] == 0
    with pytest.raises(InputError, match="bca"):
        bootstrap_correlations(wide, PAIRS, resample_by="both", ci_method="bca")
    with pytest.raises(InputError, match="resample_by"):
        bootstrap_correlations(wide, PAIRS, resample_by="stories")
    with pytest.raises(InputError, match="level"):
        bootstrap_correlations(wide, PAIRS, level="story")
    with pytest.raises(InputError, match="unknown method"):
        bootstrap_correlations(wide, PAIRS, method="kendall_d")
    with pytest.raises(InputError, match="n_resamples"):
        bootstrap_correlations(wide, PAIRS, n_resamples=0)
    with pytest.raises(InputError, match="confidence_level"):
        bootstrap_correlations(wide, PAIRS, confidence_level=95)
    with pytest.raises(InputError, match=r"pairs\[0\] must be"):
        bootstrap_correlations(wide, ["m"])
    frame_pairs = pd.DataFrame(PAIRS[:2], columns=["measure", "criterion"])
    pd.testing.assert_frame_equal(
        bootstrap_correlations(wide, frame_pairs, n_resamples=5, random_state=0),
        bootstrap_correlations(wide, PAIRS[:2], n_resamples=5, random_state=0))
    with pytest.raises(InputError, match="not in the score table"):
        bootstrap_correlations(wide, [("nope", "h")])
    nan = wide.copy()
    nan.iloc[3, 2] = np.nan
    with pytest.raises(InputError, match="missing value.*'m'"):
        bootstrap_correlations(nan, PAIRS)
    with pytest.raises(InputError, match="every system to have a story for every prompt"):
        bootstrap_correlations(wide.iloc[1:], PAIRS)


def test_expanded_level_by_hand():
    # Hesterberg (2015): z replaced by sqrt(n/(n-1)) t_{n-1}; n = 10, 95%:
    # t_9(0.975) = 2.262157, x sqrt(10/9) = 2.384542, level = 1 - 2 Phi(-2.384542) = 0.98290
    assert expanded_level(10) == pytest.approx(0.98290, abs=5e-5)
    assert expanded_level(10, 0.9) == pytest.approx(
        1 - 2 * st.norm.cdf(-st.t.ppf(0.95, 9) * np.sqrt(10 / 9)), abs=1e-12)
    assert 0.95 < expanded_level(1000) < 0.9505
    with pytest.raises(InputError, match="at least 2"):
        expanded_level(1)


@pytest.mark.parametrize("resample_by", ["prompts", "systems", "both"])
def test_expanded_interval_is_the_percentile_interval_at_the_expanded_level(wide, resample_by):
    res, dist = bootstrap_correlations(wide, PAIRS, n_resamples=400, resample_by=resample_by,
                                       ci_method="expanded", random_state=5,
                                       return_distribution=True)
    n = {"prompts": P, "systems": S, "both": min(S, P)}[resample_by]
    alpha = (1 - expanded_level(n)) / 2
    np.testing.assert_allclose(res["ci_low"], np.quantile(dist, alpha, axis=0), atol=1e-12)
    np.testing.assert_allclose(res["ci_high"], np.quantile(dist, 1 - alpha, axis=0), atol=1e-12)
    pct = bootstrap_correlations(wide, PAIRS, n_resamples=400, resample_by=resample_by,
                                 random_state=5)
    assert (res["ci_low"] <= pct["ci_low"]).all() and (res["ci_high"] >= pct["ci_high"]).all()
    assert (res["ci_method"] == "expanded").all()


def test_few_clusters_warning(wide):
    with pytest.warns(FewClustersWarning, match=r"only 12 prompts .*ci_method='expanded'"):
        bootstrap_correlations(wide, PAIRS[:1], n_resamples=5, random_state=0)
    with pytest.warns(FewClustersWarning, match=r"only 5 systems"):
        bootstrap_correlations(wide, PAIRS[:1], n_resamples=5, resample_by="systems",
                               random_state=0)
    g = np.random.default_rng(1)
    idx = pd.MultiIndex.from_product([SYSTEMS, range(20)], names=["system", "prompt_id"])
    many = pd.DataFrame({"h": g.normal(size=5 * 20), "m": g.normal(size=5 * 20)}, index=idx)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewClustersWarning)  # 20 prompts: no warning
        bootstrap_correlations(many, [("m", "h")], n_resamples=5, random_state=0)


def test_hanna_system_level_interval(hanna_generation_wide):
    # Beluga-13B (Eval-Prompt 1) vs Relevance, 10 systems, prompts resampled
    res = bootstrap_correlations(hanna_generation_wide,
                                 [("Beluga-13B RE 1", "Relevance"), ("BLEU Ξ§", "Relevance")],
                                 level="system", n_resamples=200, random_state=0)
    expected = st.kendalltau(
        hanna_generation_wide.groupby(level="system")["Beluga-13B RE 1"].mean(),
        hanna_generation_wide.groupby(level="system")["Relevance"].mean()).statistic
    assert res.loc[0, "value"] == pytest.approx(expected, abs=1e-12)
    assert (res["ci_low"] <= res["value"]).all() and (res["value"] <= res["ci_high"]).all()
    assert (res["ci_high"] - res["ci_low"] > 0).all()


def _direct_kendall_reference(V, w, ia, ic, method):
    """Kendall of small n as first written: float signs of every observation pair, weighted by
    w_i w_j through a matrix product (the exact integer counts of `direct`)."""
    from storyeval.correlation.resampled import _distinct_present, _safe_div

    n = V.shape[-2]
    w = np.asarray(w, dtype=np.float64)
    iu, ju = np.triu_indices(n, k=1)
    with np.errstate(invalid="ignore"):
        s = np.sign(V[..., ju, :] - V[..., iu, :])
    wq = (w[..., iu] * w[..., ju])[..., None, :]
    num = np.matmul(wq, s[..., ia] * s[..., ic])[..., 0, :]
    if method == "kendall_b":
        den = np.matmul(wq, np.abs(s))[..., 0, :]
        return _safe_div(num, np.sqrt(den[..., ia] * den[..., ic]))
    shape = np.broadcast_shapes(w.shape, V.shape[:-1])
    wb = np.broadcast_to(w, shape)
    distinct = _distinct_present(np.broadcast_to(V, (*shape, V.shape[-1])), wb)
    m = np.minimum(distinct[..., ia], distinct[..., ic]).astype(np.float64)
    return _safe_div(2.0 * num, wb.sum(axis=-1)[..., None] ** 2 * (m - 1) / np.maximum(m, 1))


@pytest.mark.parametrize("method", ["kendall_b", "kendall_c"])
def test_direct_kendall_equals_the_pairwise_formulation(method):
    """int8 signs, pairs first, integer counts (all weights 1) or weighted sums: every weight
    shape the callers use, heavy ties, NaN and inf (undefined comparisons), 1-9 observations."""
    from storyeval.correlation.resampled import direct

    g = np.random.default_rng(3)
    for _ in range(300):
        n, K, M = (int(v) for v in g.integers(1, [10, 6, 8]))
        batch = tuple(int(v) for v in g.integers(1, 4, int(g.integers(0, 3))))
        V = g.integers(0, 3, (*batch, n, K)) / 3.0
        for value, share in ((np.nan, 0.05), (np.inf, 0.05), (-0.0, 0.2)):
            V[g.random(V.shape) < share * (g.random() < 0.3)] = value
        ia, ic = g.integers(0, K, M), g.integers(0, K, M)
        kind = int(g.integers(0, 5))
        w = [np.ones(n), np.ones((*batch, n)), g.integers(0, 3, n).astype(float),
             g.integers(0, 4, (*batch, n)).astype(float), None][kind]
        if w is None:  # weights with more batch axes than the values (a resample axis)
            V = V[None]
            w = g.integers(0, 3, (4, *(1,) * len(batch), n)).astype(float)
            w = np.ones_like(w) if g.random() < 0.5 else w
        with np.errstate(invalid="ignore", divide="ignore"):
            want = _direct_kendall_reference(V, w, ia, ic, method)
            got = direct(V, w, ia, ic, method)
        assert got.shape == want.shape
        assert np.array_equal(got, want, equal_nan=True)


def test_a_bootstrap_of_one_prompt_gives_no_interval_and_says_why():
    from storyeval.data.load import read_dataset
    from storyeval.exceptions import UndefinedStatisticWarning
    from storyeval.meta import meta_evaluate
    from storyeval.meta.resampling import add_bootstrap_ci
    from storyeval.report.meta_report import render

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"system": [f"s{k}" for k in range(8)], "prompt_id": 0,
                          "h": rng.normal(size=8), "m": rng.normal(size=8)})
    res = meta_evaluate(read_dataset(frame, id="system=system,prompt_id=prompt_id",
                                     criteria=["h"]), levels="overall", reference="none")
    with pytest.warns(UndefinedStatisticWarning, match="single cluster"):
        boot = add_bootstrap_ci(res, n_resamples=50)
    assert boot.correlations[["ci_low", "ci_high"]].isna().all().all()
    assert boot.correlations["value"].notna().all()
    assert "single cluster" in boot.settings["bootstrap"]["reason"]
    assert "interval(s) undefined: prompts: a single cluster" in render(boot)
