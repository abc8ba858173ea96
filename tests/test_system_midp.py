"""The default system-level test, ``permutation-midp`` (issue 35): its p-value is a function of
the data (not of the measures' names or the column order), its decision is stable over seeds,
its interval inverts it, and its level on a tiny null configuration is near nominal."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.compare.procedures import CALIBRATED, compare_rows
from storyeval.correlation.kernel import pairwise_correlations
from storyeval.correlation.levels import level_data


def _wide(h, a, b, names=("Overall", "METEOR", "my-metric")):
    S, P = h.shape
    index = pd.MultiIndex.from_product([[f"sys{s}" for s in range(S)],
                                        [f"p{p:02d}" for p in range(P)]],
                                       names=["system", "prompt_id"])
    return pd.DataFrame(np.column_stack([h.ravel(), a.ravel(), b.ravel()]), index=index,
                        columns=list(names))


def _run(wide, crit, ma, mb, method="kendall_b", seed=0, n=1000, test="permutation-midp"):
    cols = [crit, ma, mb]
    X = np.asarray(level_data(wide, cols, level="system"), dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        R = pairwise_correlations(X[None], method=method, warn=False).statistic[0]
    comp = {"level": np.array(["system"], dtype=object),
            "criterion": np.array([crit], dtype=object),
            "measure_a": np.array([ma], dtype=object), "measure_b": np.array([mb], dtype=object),
            "r_a": R[0, 1:2], "r_b": R[0, 2:3], "r_ab": R[1, 2:3], "n": np.array([X.shape[0]])}
    return compare_rows(wide, comp, level="system", method=method, test=test,
                        sign_convention="raw", random_state=seed, n_permutations=n)


def _null(rng, S=5, P=30):
    q = rng.normal(0, 0.3, (S, 1)) + rng.normal(size=(S, P))
    h = np.clip(np.rint(3 + q + rng.normal(0, 0.8, (S, P))), 1, 5)
    base = q + 0.5 * rng.normal(size=(S, P))
    return h, base + rng.normal(size=(S, P)), base + rng.normal(size=(S, P))


def test_default_system_test_is_midp():
    assert set(CALIBRATED["system"].values()) == {"permutation-midp"}


@pytest.mark.parametrize("method", ["kendall_b", "pearson"])
def test_p_value_does_not_depend_on_names_or_column_order(method):
    rng = np.random.default_rng(3)
    for _ in range(5):
        h, a, b = _null(rng)
        ref = _run(_wide(h, a, b), "Overall", "METEOR", "my-metric", method)
        renamed = _run(_wide(h, a, b, ("quality", "BLEU", "length")), "quality", "BLEU",
                       "length", method)
        wide = _wide(h, a, b)[["my-metric", "Overall", "METEOR"]]  # another column order
        reordered = _run(wide, "Overall", "METEOR", "my-metric", method)
        for other in (renamed, reordered):
            for key in ("p", "ci_low", "ci_high"):
                np.testing.assert_allclose(other[key], ref[key], rtol=1e-9, atol=1e-12)
        swapped = _run(_wide(h, a, b), "Overall", "my-metric", "METEOR", method)
        np.testing.assert_allclose(swapped["p"], ref["p"], rtol=1e-9)


def test_decision_stable_over_seeds_and_interval_inverts_the_test():
    rng = np.random.default_rng(11)
    flips = disagree = 0
    for _ in range(40):
        h, a, b = _null(rng)
        wide = _wide(h, a, b)
        r0, r1 = (_run(wide, "Overall", "METEOR", "my-metric", seed=s) for s in (0, 1))
        flips += int((r0["p"][0] < 0.05) != (r1["p"][0] < 0.05))
        for r in (r0, r1):
            excludes = r["ci_low"][0] > 0 or r["ci_high"][0] < 0
            disagree += int(excludes != (r["p"][0] < 0.05))
    assert disagree == 0
    assert flips <= 1


@pytest.mark.parametrize("method", ["kendall_b", "pearson"])
def test_midp_matches_full_enumeration_of_swaps(method):
    # 5 prompts: all 32 swap patterns enumerated with scipy (independent reference); Kendall's
    # ties are ordered by the Pearson difference of the same means, then split (mid-p)
    rng = np.random.default_rng(5)
    h, a, b = _null(rng, S=6, P=5)
    za, zb = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    H = h.mean(1)
    tau, pear = [], []
    for m in itertools.product([0, 1], repeat=5):
        m = np.array(m, dtype=bool)
        A, B = np.where(m, zb, za).mean(1), np.where(m, za, zb).mean(1)
        tau.append(stats.kendalltau(H, A).statistic - stats.kendalltau(H, B).statistic)
        pear.append(stats.pearsonr(H, A).statistic - stats.pearsonr(H, B).statistic)
    first = np.abs(np.array(tau if method == "kendall_b" else pear))
    second = np.abs(np.array(pear))
    tie = np.abs(first - first[0]) <= 1e-12
    more = (first > first[0] + 1e-12) | (tie & (second > second[0] + 1e-12))
    same = tie & (np.abs(second - second[0]) <= 1e-12)
    exact = (more.sum() + 0.5 * same.sum()) / 32
    res = _run(_wide(h, a, b), "Overall", "METEOR", "my-metric", method, n=20000)
    assert res["p"][0] == pytest.approx(exact, abs=0.01)


def test_level_near_nominal_on_a_tiny_null_configuration():
    rng = np.random.default_rng(2024)
    p = np.array([_run(_wide(*_null(rng, S=5, P=12)), "Overall", "METEOR", "my-metric",
                       n=199)["p"][0] for _ in range(150)])
    # mean of a mid-p value under exchangeability is 1/2; the level is near 0.05
    assert abs(p.mean() - 0.5) < 0.07
    assert 0.0 < np.mean(p < 0.1) < 0.2


def _dataset(systems):
    from storyeval.data import scores_to_dataset

    g = np.random.default_rng(2)
    rows = [{"system": f"S{s}", "prompt_id": p, "quality": g.normal(), "m1": g.normal(),
             "m2": g.normal()} for s in range(systems) for p in range(20)]
    long = pd.DataFrame(rows).melt(id_vars=["system", "prompt_id"], var_name="measure",
                                   value_name="value")
    return scores_to_dataset(long, criteria=["quality"], name="few")


@pytest.mark.parametrize("coef", ["acc_eq", "spa"])
def test_wmt_coefficients_follow_the_three_system_rule(coef):
    from storyeval.meta.wmt import select, wmt_table

    levels = ("system",) if coef == "spa" else ("overall", "system")
    two = wmt_table(select(_dataset(2)), coef, levels=levels)
    system = two[two["level"] == "system"]
    assert system["value"].isna().all() and (system["reason"].str.contains("3 systems")).all()
    if coef == "acc_eq":  # the overall level does not depend on the systems' count
        assert two.loc[two["level"] == "overall", "value"].notna().all()
    four = wmt_table(select(_dataset(4)), coef, levels=levels)
    assert four["value"].notna().all() and (four["reason"] == "").all()


def test_system_interval_of_a_difference_is_clipped_to_its_range():
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = np.arange(3.0)[:, None] + 0.3 * rng.normal(size=(3, 8))
        h, a, b = q, q + 0.3 * rng.normal(size=(3, 8)), -q + 0.3 * rng.normal(size=(3, 8))
        for test in ("permutation-midp", "permutation-random", "bootstrap"):
            for method in ("kendall_b", "pearson"):
                res = _run(_wide(h, a, b), "Overall", "METEOR", "my-metric", method=method,
                           test=test, n=200)
                assert -2.0 <= res["ci_low"][0] <= res["ci_high"][0] <= 2.0


def test_rows_with_fewer_than_five_systems_say_the_level_is_not_held():
    rng = np.random.default_rng(9)
    four = _run(_wide(*_null(rng, S=4, P=10)), "Overall", "METEOR", "my-metric", n=99)
    five = _run(_wide(*_null(rng, S=5, P=10)), "Overall", "METEOR", "my-metric", n=99)
    assert "fewer than 5 systems" in four["note"][0] and np.isfinite(four["p"][0])
    assert five["note"][0] == ""


def test_compatible_interval_by_hand():
    from storyeval.compare.procedures import compatible_interval

    tiny = np.nextafter(0.0, 1.0)
    d = np.array([0.1, 0.5, -0.5, 0.5, 0.5, np.nan])
    low, high = d - np.array([0.2, 0.3, 0.3, 0.3, 0.3, 0.3]), d + 0.3
    low[0], high[0] = -0.1, 0.3  # the test does not reject
    se = np.array([0.2, 0.4, 0.4, 0.1, np.nan, 0.4])
    lo, hi = compatible_interval(d, low, high, se, 0.95)
    z = stats.norm.ppf(0.975)
    # not rejected: d +- max(c, z se), around 0
    assert lo[0] == pytest.approx(0.1 - z * 0.2) and hi[0] == pytest.approx(0.1 + z * 0.2)
    # rejected, d > 0: the far side widened, the near side cut at 0 (open: the smallest float)
    assert lo[1] == tiny and hi[1] == pytest.approx(0.5 + z * 0.4)
    assert hi[2] == -tiny and lo[2] == pytest.approx(-0.5 - z * 0.4)
    # a bootstrap narrower than the test's interval, or undefined: the test's interval
    assert (lo[3], hi[3]) == pytest.approx((0.2, 0.8))
    assert (lo[4], hi[4]) == pytest.approx((0.2, 0.8))
    assert np.isnan(lo[5]) and np.isnan(hi[5])
    assert compatible_interval(d, low, high, None) == (low, high)
    # the decision given: a rejection is cut at 0, a non-rejection stretched to 0
    d2 = np.array([0.3, 0.3])
    lo2, hi2 = compatible_interval(d2, d2 - 0.35, d2 + 0.35, np.array([0.1, 0.1]), 0.95,
                                   reject=np.array([True, False]))
    assert lo2[0] == tiny and hi2[0] == pytest.approx(0.65)
    assert lo2[1] == pytest.approx(-0.05) and hi2[1] == pytest.approx(0.65)
    lo3, hi3 = compatible_interval(d2, d2 - 0.1, d2 + 0.1, np.array([0.05, 0.05]), 0.95,
                                   reject=np.array([False, True]))
    assert lo3[0] == 0.0 and hi3[0] == pytest.approx(0.4)
    assert lo3[1] == pytest.approx(0.2) and hi3[1] == pytest.approx(0.4)


def _alternative(rng, S=5, P=30):
    q = rng.normal(0, 0.3, (S, 1)) + rng.normal(size=(S, P))
    h = np.clip(np.rint(3 + q + rng.normal(0, 0.8, (S, P))), 1, 5)
    shared = 0.5 * rng.normal(size=(S, P))
    return h, q + shared + rng.normal(size=(S, P)), 0.6 * q + shared + rng.normal(size=(S, P))


@pytest.mark.parametrize("method", ["kendall_b", "pearson"])
@pytest.mark.parametrize("seed", [17, 18])
def test_interval_carries_the_bootstrap_spread_of_delta(method, seed, monkeypatch):
    # independent reference: a bootstrap of prompts with scipy's coefficients (other draws)
    import storyeval.compare.procedures as procedures

    rng = np.random.default_rng(seed)
    h, a, b = _alternative(rng)
    coef = {"kendall_b": lambda x, y: stats.kendalltau(x, y).statistic,
            "pearson": lambda x, y: stats.pearsonr(x, y).statistic}[method]
    g = np.random.default_rng(99)
    boot = []
    for _ in range(2000):
        idx = g.integers(0, h.shape[1], h.shape[1])
        H, A, B = h[:, idx].mean(1), a[:, idx].mean(1), b[:, idx].mean(1)
        boot.append(coef(H, A) - coef(H, B))
    seen = {}
    original = procedures.compatible_interval

    def spy(observed, low, high, se, confidence_level=0.95, reject=None,
            alternative="two-sided"):
        seen.update(low=low.copy(), high=high.copy(), se=se.copy())
        return original(observed, low, high, se, confidence_level, reject=reject,
                        alternative=alternative)

    monkeypatch.setattr(procedures, "compatible_interval", spy)
    res = _run(_wide(h, a, b), "Overall", "METEOR", "my-metric", method)
    assert seen["se"][0] == pytest.approx(np.nanstd(boot, ddof=1), rel=0.1)
    d = res["delta"][0]
    c = max(seen["high"][0] - d, d - seen["low"][0])
    assert res["p"][0] >= 0.05  # not rejected: symmetric, max of the two half-widths
    assert res["ci_high"][0] - d == pytest.approx(max(c, 1.959964 * seen["se"][0]))
    assert d - res["ci_low"][0] == pytest.approx(res["ci_high"][0] - d)


def test_default_permutations_agree_across_entry_points():
    import inspect

    from storyeval.compare.clusters import significance_clusters
    from storyeval.compare.procedures import TEST_PERMUTATIONS, compare_rows, system_permutation
    from storyeval.meta.pipeline import meta_evaluate

    for fn in (compare_rows, system_permutation, meta_evaluate, significance_clusters):
        assert inspect.signature(fn).parameters["n_permutations"].default == TEST_PERMUTATIONS
