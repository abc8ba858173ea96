"""storyeval.bias.compare_with_system_sentinel: a measure against the system-identity sentinel
at the prompt level (issue 38, item 6), against scipy, ``storyeval meta --sentinels``, the
paired t of `compare_prompt_level` and an explicit recomputation of a resample."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.stats import kendalltau

from storyeval.bias import add_sentinels, compare_with_system_sentinel, sentinel_scores
from storyeval.bias.sentinel_compare import _kendall_b
from storyeval.bias.simulate import simulate_ratings
from storyeval.compare import compare_prompt_level
from storyeval.data import load_hanna
from storyeval.exceptions import InputError
from storyeval.meta.pipeline import meta_evaluate


def test_kendall_b_equals_scipy_with_ties():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, (30, 7)).astype(float)
    y = rng.integers(0, 3, (30, 7)).astype(float)
    got = _kendall_b(x, y)
    want = [kendalltau(a, b).statistic for a, b in zip(x, y)]
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_correlations_equal_meta_prompt_level_on_hanna():
    dataset = load_hanna(include_human_stories=False)
    with_s, added = add_sentinels(dataset, kinds=["system"])
    crits, codes = ["Coherence", "Surprise"], ["CH", "SU"]
    table = compare_with_system_sentinel(with_s.wide(), crits,
                                         [f"Beluga-13B {c} 1" for c in codes], n_boot=50)
    result = meta_evaluate(with_s, measures=["Beluga-13B 1", *added], criteria=crits,
                           levels=["prompt"], reference="none")
    c = result.correlations.set_index(["measure", "criterion"])["value"]
    for row, code in zip(table.itertuples(), codes):
        assert row.measure_corr == pytest.approx(c[(f"Beluga-13B {code} 1", row.criterion)],
                                                 abs=1e-12)
        assert row.sentinel_corr == pytest.approx(
            c[(f"Sentinel: system identity {code}", row.criterion)], abs=1e-12)
        assert row.delta == pytest.approx(row.measure_corr - row.sentinel_corr, abs=1e-12)
        assert row.n_prompts == 96 and row.df == 95
    # the point estimate is compare_prompt_level's on the same sentinel
    wide = with_s.wide()
    paired = compare_prompt_level(wide, crits, [f"Beluga-13B {c} 1" for c in codes],
                                  [f"Sentinel: system identity {c}" for c in codes])
    np.testing.assert_allclose(table["delta"], paired["delta"], rtol=0, atol=1e-12)


def test_standard_error_equals_explicit_recomputation():
    """The resamples by hand: draw the prompts as the function does, rebuild every prompt's
    sentinel from the drawn prompts other than itself, average the differences over all
    prompts; se^2 = var(d) / P + the variance of those averages."""
    wide = simulate_ratings(6, 15, seed=2, raters={"Judge-A": 0})
    got = compare_with_system_sentinel(wide, "human", "Judge-A", n_boot=4, seed=7)
    h = wide["human"].unstack("system").to_numpy()
    m = wide["Judge-A"].unstack("system").to_numpy()
    counts = np.random.default_rng(7).multinomial(15, np.full(15, 1 / 15), size=4)
    reps = []
    for c in counts:
        drawn = np.repeat(np.arange(15), c)
        d = []
        for p in range(15):
            s = h[drawn[drawn != p]].mean(axis=0)
            d.append(kendalltau(h[p], m[p]).statistic - kendalltau(h[p], s).statistic)
        reps.append(np.mean(d))
    # the estimate: the sentinel of sentinel_scores
    s = sentinel_scores(wide, ["human"])[("system", "human")].unstack("system").to_numpy()
    d = [kendalltau(h[p], m[p]).statistic - kendalltau(h[p], s[p]).statistic
         for p in range(15)]
    assert got["delta"].iloc[0] == pytest.approx(np.mean(d), abs=1e-12)
    se = np.sqrt(np.var(d, ddof=1) / 15 + np.var(reps, ddof=1))
    assert got["se"].iloc[0] == pytest.approx(se, rel=1e-9)
    assert got["p"].iloc[0] == pytest.approx(
        2 * stats.t.sf(abs(np.mean(d)) / se, 14), rel=1e-9)


def test_interval_and_test_agree_and_seed_is_reproducible():
    wide = simulate_ratings(5, 20, seed=4, raters={"Judge-A": 0})
    a = compare_with_system_sentinel(wide, "human", "Judge-A")
    b = compare_with_system_sentinel(wide, "human", "Judge-A")
    pd.testing.assert_frame_equal(a, b)
    row = a.iloc[0]
    assert row["seed"] == 0 and row["n_boot"] == 500
    assert (row["p"] < 0.05) == (row["ci_low"] > 0 or row["ci_high"] < 0)
    assert row["ci_low"] < row["delta"] < row["ci_high"]
    other = compare_with_system_sentinel(wide, "human", "Judge-A", seed=1).iloc[0]
    assert other["delta"] == row["delta"] and other["se"] != row["se"]
    assert other["se"] == pytest.approx(row["se"], rel=0.2)  # Monte Carlo error only


def test_bad_input():
    wide = simulate_ratings(4, 6, seed=1, raters={"Judge-A": 0})
    with pytest.raises(InputError, match="no column"):
        compare_with_system_sentinel(wide, "human", "nope")
    holes = wide.copy()
    holes.iloc[3, 0] = np.nan
    with pytest.raises(InputError, match="missing"):
        compare_with_system_sentinel(holes, "human", "Judge-A")
    with pytest.raises(InputError, match="n_boot"):
        compare_with_system_sentinel(wide, "human", "Judge-A", n_boot=1)
