"""Chance baselines: equal scipy on the same random draws; the exact null of Kendall's tau for
small n; HANNA's baselines at the overall and system levels."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.stats as st

from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.resample import chance_baseline, chance_distribution


@pytest.mark.parametrize("method", ["kendall_b", "kendall_c", "pearson", "spearman"])
def test_vector_equals_scipy_on_same_draws(method):
    z = np.array([1, 1, 2, 3, 3, 3, 4.0, 5, 5, 2])  # a criterion with ties
    got = chance_distribution(z, method=method, n_draws=40, random_state=3)
    g = np.random.default_rng(3)  # documented draws: normal for Pearson, uniform otherwise
    R = g.standard_normal((40, z.size)) if method == "pearson" else g.random((40, z.size))
    ref = {"kendall_b": lambda r: st.kendalltau(r, z).statistic,
           "kendall_c": lambda r: st.kendalltau(r, z, variant="c").statistic,
           "pearson": lambda r: st.pearsonr(r, z).statistic,
           "spearman": lambda r: st.spearmanr(r, z).statistic}[method]
    np.testing.assert_allclose(got, [ref(r) for r in R], atol=1e-12)


@pytest.mark.parametrize("method", ["kendall_b", "pearson", "spearman"])
def test_prompt_level_equals_scipy_per_prompt(method):
    g0 = np.random.default_rng(0)
    z = g0.integers(1, 4, (6, 5)).astype(float)  # 6 prompts x 5 systems
    z[2] = 2.0  # constant in one prompt: left out of the average
    got = chance_distribution(z, method=method, n_draws=10, random_state=1)
    g = np.random.default_rng(1)
    R = g.standard_normal((10, 6, 5)) if method == "pearson" else g.random((10, 6, 5))
    f = {"kendall_b": st.kendalltau, "pearson": st.pearsonr, "spearman": st.spearmanr}[method]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = [np.nanmean([f(R[d, p], z[p]).statistic for p in range(6)]) for d in range(10)]
    np.testing.assert_allclose(got, ref, atol=1e-12)


def test_kendall_null_matches_exact_permutation_distribution():
    n = 6
    # exact: tau over all n! orderings of a random measure against an untied criterion
    exact = np.array([st.kendalltau(np.arange(n), perm).statistic
                      for perm in itertools.permutations(range(n))])
    sim = chance_distribution(n, n_draws=20000, random_state=0)
    for value in np.unique(exact):
        assert np.mean(np.isclose(sim, value)) == pytest.approx(np.mean(np.isclose(exact, value)),
                                                                      abs=0.012)
    # variance of tau under independence: 2(2n + 5) / (9 n (n - 1)) (Kendall 1938)
    assert sim.var() == pytest.approx(2 * (2 * n + 5) / (9 * n * (n - 1)), rel=0.05)


def test_hanna_chance_levels(hanna_generation_wide):
    crit = ["Relevance", "Coherence"]
    overall = chance_baseline(hanna_generation_wide, crit, level="overall", n_draws=1000,
                              random_state=0)
    system = chance_baseline(hanna_generation_wide, crit, level="system", n_draws=4000,
                             random_state=0)
    # 960 stories: |tau| above ~0.05 is rarely chance (null sd ~ sqrt(2(2n+5)/(9n(n-1))) ~ 0.022
    # before the criterion's tie correction)
    assert (overall["abs_high"] < 0.06).all() and (overall["abs_high"] > 0.035).all()
    assert (overall["n"] == 960).all()
    # 10 systems: the 95% |tau| under chance is 0.51 (exact null of n = 10 from the Mahonian
    # numbers: P(|tau| >= 0.511) = 0.047, P(|tau| >= 0.467) = 0.073, P(|tau| >= 0.6) = 0.017),
    # so 0.6 is only just beyond chance
    assert (system["abs_high"] > 0.46).all() and (system["abs_high"] < 0.56).all()
    assert (system["n"] == 10).all()
    prompt = chance_baseline(hanna_generation_wide, "Relevance", level="prompt", n_draws=200,
                             random_state=0)
    assert prompt.loc[0, "n"] == 10 and abs(prompt.loc[0, "mean"]) < 0.02


def test_bad_and_degenerate_input():
    with pytest.raises(InputError, match="at least 2"):
        chance_distribution(1)
    with pytest.raises(InputError, match="structure"):
        chance_distribution(np.zeros((2, 2, 2)))
    with pytest.raises(InputError, match="n_draws"):
        chance_distribution(5, n_draws=0)
    with pytest.warns(UndefinedStatisticWarning, match="constant"):
        assert np.isnan(chance_distribution(np.ones(5), n_draws=3)).all()
