"""Paired permutation test: p-values equal a per-permutation loop over explicitly swapped
vectors with scipy coefficients; p-value conventions; BH over the family."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.resample import paired_permutation_test

S, P = 4, 7


@pytest.fixture(scope="module")
def wide():
    g = np.random.default_rng(1)
    idx = pd.MultiIndex.from_product([[f"s{i}" for i in range(S)], range(P)],
                                     names=["system", "prompt_id"])
    h = g.integers(1, 6, S * P).astype(float)
    return pd.DataFrame({"h": h, "a": h + g.normal(size=S * P),
                         "b1": -h + 2 * g.normal(size=S * P),   # lower is better
                         "b2": g.normal(size=S * P) + 0.5 * h,
                         "b3": g.normal(size=S * P)}, index=idx)


def _scipy(x, y, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"kendall_b": lambda: st.kendalltau(x, y).statistic,
                "kendall_c": lambda: st.kendalltau(x, y, variant="c").statistic,
                "pearson": lambda: st.pearsonr(x, y).statistic,
                "spearman": lambda: st.spearmanr(x, y).statistic}[method]()


def _level(x, z, level, method):
    if level == "overall":
        return _scipy(x.ravel(), z.ravel(), method)
    if level == "system":
        return _scipy(x.mean(axis=1), z.mean(axis=1), method)
    return np.nanmean([_scipy(x[:, p], z[:, p], method) for p in range(P)])


def _loop_pvalues(wide, level, method, unit, B, seed, alternative):
    """Reference: standardise, orient, swap explicitly for each permutation, scipy each time."""
    X = {c: wide[c].to_numpy().reshape(S, P) for c in wide}
    z = X["h"]

    def prep(name):
        v = (X[name] - X[name].mean()) / X[name].std()
        return v if _level(X[name], z, level, method) >= 0 else -v

    masks = np.random.default_rng(seed).random((B, {"prompt": P, "system": S,
                                                    "story": S * P}[unit])) < 0.5
    a = prep("a")
    out = []
    for name in ("b1", "b2", "b3"):
        b = prep(name)
        d0 = abs(_level(a, z, level, method)) - abs(_level(b, z, level, method))
        count = 0
        for m in masks:
            if unit == "prompt":
                sw = np.broadcast_to(m[None, :], (S, P))
            elif unit == "system":
                sw = np.broadcast_to(m[:, None], (S, P))
            else:
                sw = m.reshape(S, P)
            d = abs(_level(np.where(sw, b, a), z, level, method)) - \
                abs(_level(np.where(sw, a, b), z, level, method))
            count += {"greater": d >= d0 - 1e-12, "less": d <= d0 + 1e-12,
                      "two-sided": abs(d) >= abs(d0) - 1e-12}[alternative]
        out.append((1 + count) / (1 + B))
    return np.array(out)


CASES = [(level, method, unit)
         for level in ("overall", "system", "prompt")
         for method in ("kendall_b", "kendall_c", "pearson", "spearman")
         for unit in ("prompt", "system", "story")]


@pytest.mark.parametrize("level, method, unit", CASES)
def test_pvalues_equal_explicit_loop(wide, level, method, unit):
    res = paired_permutation_test(wide, "h", "a", ["b1", "b2", "b3"], level=level,
                                  method=method, unit=unit, n_permutations=20, random_state=5,
                                  alternative="two-sided")
    expected = _loop_pvalues(wide, level, method, unit, 20, 5, "two-sided")
    np.testing.assert_allclose(res["pvalue"], expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("alternative", ["greater", "less"])
def test_one_sided_conventions(wide, alternative):
    res = paired_permutation_test(wide, "h", "a", ["b1", "b2", "b3"], n_permutations=40,
                                  random_state=2, alternative=alternative)
    expected = _loop_pvalues(wide, "overall", "kendall_b", "prompt", 40, 2, alternative)
    np.testing.assert_allclose(res["pvalue"], expected, atol=1e-12)


def test_output_columns_orientation_and_bh(wide):
    res = paired_permutation_test(wide, "h", "a", ["b1", "b2", "b3"], n_permutations=99,
                                  random_state=0)
    def tau(c):
        return st.kendalltau(wide[c], wide["h"]).statistic

    assert res["value_a"].iloc[0] == pytest.approx(tau("a"), abs=1e-12)
    np.testing.assert_allclose(res["value_b"], [tau("b1"), tau("b2"), tau("b3")], atol=1e-12)
    # oriented: |r_a| - |r_b|, so the lower-is-better b1 is compared by its absolute value
    np.testing.assert_allclose(res["delta"], abs(tau("a")) - np.abs(res["value_b"]), atol=1e-12)
    np.testing.assert_allclose(res["pvalue_bh"],
                               st.false_discovery_control(res["pvalue"], method="bh"))
    assert ((res["pvalue"] >= 1 / 100) & (res["pvalue"] <= 1)).all()
    assert res["family"].nunique() == 1 and "h" in res["family"].iloc[0]


def test_identical_measures_are_never_different(wide):
    res = paired_permutation_test(wide.assign(a_copy=wide["a"]), "h", "a", ["a_copy"],
                                  n_permutations=30, random_state=0)
    assert res.loc[0, "delta"] == 0.0 and res.loc[0, "pvalue"] == 1.0


def test_hanna_beluga_beats_bleu(hanna_generation_wide):
    # overall level, prompts swapped: Beluga-13B's Relevance ratings (Kendall 0.21) correlate
    # better than BLEU's (0.07); p-values are multiples of 1 / (B + 1)
    res = paired_permutation_test(hanna_generation_wide, "Relevance", "Beluga-13B RE 1",
                                  ["BLEU Ξ§", "chrF Ξ§"], n_permutations=99, random_state=0)
    assert res.loc[0, "value_a"] == pytest.approx(
        st.kendalltau(hanna_generation_wide["Beluga-13B RE 1"],
                      hanna_generation_wide["Relevance"]).statistic, abs=1e-12)
    assert (res["delta"] > 0.1).all() and (res["pvalue"] <= 0.05).all()
    np.testing.assert_allclose(res["pvalue"] * 100, np.round(res["pvalue"] * 100))


def test_bad_input(wide):
    with pytest.raises(InputError, match="unit"):
        paired_permutation_test(wide, "h", "a", ["b1"], unit="annotator")
    with pytest.raises(InputError, match="alternative"):
        paired_permutation_test(wide, "h", "a", ["b1"], alternative="bigger")
    with pytest.raises(InputError, match="also in measures_b"):
        paired_permutation_test(wide, "h", "a", ["a"])
    with pytest.raises(InputError, match="duplicates"):
        paired_permutation_test(wide, "h", "a", ["b1", "b1"])
    with pytest.raises(InputError, match="n_permutations"):
        paired_permutation_test(wide, "h", "a", "b1", n_permutations=0)
    with pytest.warns(UndefinedStatisticWarning, match="undefined"):
        res = paired_permutation_test(wide.assign(c=2.0), "h", "a", ["c"], n_permutations=5)
    assert np.isnan(res.loc[0, "pvalue"])


def test_permutation_pvalues_for_a_comparison_table(wide):
    comp = pd.DataFrame({"criterion": "h", "measure_a": ["a", "a", "b2"],
                         "measure_b": ["b1", "b3", "b3"], "level": ["overall", "system",
                                                                     "overall"]})
    out = paired_permutation_test  # the table version must equal per-group calls
    from storyeval.resample import permutation_pvalues

    res = permutation_pvalues(wide, comp, n_permutations=30, random_state=1)
    assert res[["criterion", "measure_a", "measure_b", "level"]].equals(comp)
    for k, row in comp.iterrows():
        single = out(wide, "h", row["measure_a"], [row["measure_b"]], level=row["level"],
                     n_permutations=30, random_state=1)
        assert res.loc[k, "perm_p"] == single.loc[0, "pvalue"]
        assert res.loc[k, "perm_delta"] == single.loc[0, "delta"]
    assert (res["perm_unit"] == "prompt").all()
    with pytest.raises(InputError, match="missing column"):
        permutation_pvalues(wide, comp.drop(columns="level"))
