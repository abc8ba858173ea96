"""Weighted Kendall counts for resampling (storyeval.correlation.kendall_weighted) and the overall-level
resampling kernels that use them: exact against brute force, against the O(n^2) kernels, and
against scipy on explicitly resampled vectors."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.correlation.kendall_sorted import engine
from storyeval.correlation.kendall_weighted import WeightedKendall
from storyeval.correlation.resampled_overall import (
    OverallKernel,
    overall_kendall_plan,
    story_weights,
)
from storyeval.resample import chance, permutation
from storyeval.resample.bootstrap import draw_resamples

ENGINES = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    importlib.util.find_spec("numba") is None, reason="numba (the fast extra) not installed"))]


def _columns(rng: np.random.Generator, n: int) -> np.ndarray:
    """Heavy ties, few levels, continuous, rounded, constant and many-level columns."""
    return np.column_stack([
        rng.integers(0, 5, n),  # a Likert-like criterion
        rng.normal(size=n),
        np.round(rng.normal(size=n), 1),
        rng.integers(0, 2, n),
        np.zeros(n),  # constant
        rng.integers(0, 40, n),  # more levels than the linear-scan limit
    ]).astype(float)


def _brute(X, W, ia, ic):
    """S, untied and distinct counts by enumerating every pair of observations."""
    n = X.shape[0]
    i, j = np.triu_indices(n, 1)
    sign = np.sign(X[j] - X[i])  # (pairs, K)
    ww = W[:, i] * W[:, j]  # (B, pairs)
    s = ww @ (sign[:, ia] * sign[:, ic])
    untied = ww @ np.abs(sign)
    distinct = np.array([[len(np.unique(X[w > 0, k])) for k in range(X.shape[1])] for w in W])
    return s, untied, distinct


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(6))
def test_counts_equal_brute_force(engine, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 70))
    X = _columns(rng, n)
    K = X.shape[1]
    ia, ic = (a.ravel() for a in np.meshgrid(np.arange(K), np.arange(K), indexing="ij"))
    W = rng.integers(0, 4, (9, n)).astype(float)
    W[0] = 1.0  # the original data
    W[1] = 0.0  # nothing drawn
    s, untied, distinct = _brute(X, W, ia, ic)
    counts = WeightedKendall(X, ia, ic, engine_name=engine).counts(W)
    np.testing.assert_array_equal(counts.s, s)
    np.testing.assert_array_equal(counts.untied_x, untied[:, ia])
    np.testing.assert_array_equal(counts.untied_y, untied[:, ic])
    np.testing.assert_array_equal(counts.distinct_x, distinct[:, ia])
    np.testing.assert_array_equal(counts.distinct_y, distinct[:, ic])


@pytest.mark.parametrize("engine", ENGINES)
def test_counts_equal_scipy_on_resampled_vectors(engine):
    """Multiplicities are copies: tau-b from the weighted counts is scipy's on np.repeat."""
    rng = np.random.default_rng(7)
    X = _columns(rng, 300)
    ia, ic = np.array([1, 2, 5, 0]), np.array([0, 0, 3, 2])
    W = rng.integers(0, 3, (5, 300)).astype(float)
    counts = WeightedKendall(X, ia, ic, engine_name=engine).counts(W)
    tau = counts.s / np.sqrt(counts.untied_x * counts.untied_y)
    for b, w in enumerate(W.astype(int)):
        for m, (a, c) in enumerate(zip(ia, ic)):
            ref = stats.kendalltau(np.repeat(X[:, a], w), np.repeat(X[:, c], w)).statistic
            assert tau[b, m] == pytest.approx(ref, abs=1e-12)


def test_counts_reject_bad_input():
    with pytest.raises(ValueError, match="complete"):
        WeightedKendall(np.array([[1.0, np.nan], [2.0, 3.0]]), [0], [1])
    wk = WeightedKendall(np.ones((3, 2)), [0], [1])
    with pytest.raises(ValueError, match=r"\(B, 3\)"):
        wk.counts(np.ones((2, 4)))


def _cube(rng, S=4, P=7, K=5):
    X = np.empty((S, P, K))
    X[..., 0] = rng.integers(1, 6, (S, P))  # criterion
    X[..., 1] = rng.normal(size=(S, P))
    X[..., 2] = np.round(rng.normal(size=(S, P)), 1)
    X[..., 3] = rng.integers(0, 3, (S, P))
    X[..., 4] = rng.normal(size=(S, P)) + X[..., 0]
    return X


@pytest.mark.parametrize("method", ["kendall_b", "kendall_c"])
@pytest.mark.parametrize("mode", ["prompts", "systems", "stories"])
def test_overall_kernels_agree(method, mode):
    """blocks, dense and sorted give the same coefficients for every resample."""
    rng = np.random.default_rng(3)
    X = _cube(rng)
    ia, ic = np.array([1, 2, 3, 4, 0]), np.array([0, 0, 0, 0, 4])
    resample_by = {"prompts": "prompts", "systems": "systems", "stories": "both"}[mode]
    cS, cP = draw_resamples(4, 7, n_resamples=60, resample_by=resample_by, random_state=1)
    kernels = ["dense", "sorted"] + (["blocks"] if mode != "stories" else [])
    results = {k: OverallKernel(X, ia, ic, method, mode, kendall_kernel=k).statistic(cS, cP)
               for k in kernels}
    for k in kernels[1:]:
        np.testing.assert_allclose(results[k], results["dense"], rtol=0, atol=1e-12,
                                   equal_nan=True)
    # and equal to scipy on the explicitly resampled vectors
    w = story_weights(cS, cP).astype(int)
    flat = X.reshape(-1, X.shape[2])
    variant = "b" if method == "kendall_b" else "c"
    for b in range(0, 60, 7):
        for m in range(len(ia)):
            ref = stats.kendalltau(np.repeat(flat[:, ia[m]], w[b]),
                                   np.repeat(flat[:, ic[m]], w[b]), variant=variant).statistic
            np.testing.assert_allclose(results["sorted"][b, m], ref, atol=1e-12, equal_nan=True)


def test_overall_plan_by_size():
    """HANNA-sized prompt resampling may use the block sums; tens of thousands of stories
    (whose block sums would need gigabytes) and story resampling use the sorted counts."""
    rng = np.random.default_rng(0)
    ia, ic = np.array([1]), np.array([0])
    big = rng.normal(size=(10, 3000, 2))
    kernel, costs = overall_kendall_plan(big, ia, ic, "prompts", 1000)
    assert kernel == "sorted" and "blocks" not in costs and "dense" not in costs
    small = rng.normal(size=(10, 96, 2))
    if engine() == "numba":  # the compiled counts beat O(B n^2) products at any size
        assert overall_kendall_plan(small, ia, ic, "stories", 1000)[0] == "sorted"
    assert set(overall_kendall_plan(small, ia, ic, "prompts", 1000)[1]) == {
        "blocks", "dense", "sorted"}
    with pytest.raises(ValueError, match="blocks"):
        OverallKernel(small, ia, ic, "kendall_b", "stories", kendall_kernel="blocks")


@pytest.mark.parametrize("unit", ["prompt", "system", "story"])
def test_permutation_counts_sorted_equal_quadratic(unit):
    rng = np.random.default_rng(5)
    X = _cube(rng, S=5, P=6)
    z, xa, Xb = X[..., 0], X[..., 1], X[..., 2:]
    U = {"prompt": 6, "system": 5, "story": 30}[unit]
    m = rng.random((40, U)) < 0.5
    quad = permutation._KendallOverall(xa, Xb, z, unit)
    srt = permutation._KendallOverallSorted(xa, Xb, z, unit)
    for got, ref in zip(srt.counts(m), quad.counts(m)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9)
    assert srt.den_z == pytest.approx(quad.den_z)


@pytest.mark.parametrize("method", ["kendall_b", "kendall_c"])
def test_permutation_test_same_with_sorted_counts(monkeypatch, method):
    rng = np.random.default_rng(2)
    idx = pd.MultiIndex.from_product([list("ABCDE"), range(12)], names=["system", "prompt_id"])
    wide = pd.DataFrame({"h": rng.integers(1, 6, 60).astype(float)}, index=idx)
    wide["a"] = wide["h"] + rng.normal(size=60)
    wide["b"] = np.round(rng.normal(size=60), 1)
    wide["c"] = wide["h"] * 0.5 + rng.normal(size=60)
    args = {"method": method, "n_permutations": 150, "random_state": 4}
    ref = permutation.paired_permutation_test(wide, "h", "a", ["b", "c"], **args)
    monkeypatch.setattr(permutation, "_kendall_overall",
                        lambda xa, Xb, z, unit, n: permutation._KendallOverallSorted(
                            xa, Xb, z, unit))
    got = permutation.paired_permutation_test(wide, "h", "a", ["b", "c"], **args)
    np.testing.assert_allclose(got["pvalue"], ref["pvalue"], rtol=0, atol=0)
    np.testing.assert_allclose(got["delta"], ref["delta"], atol=1e-12)


@pytest.mark.parametrize("levels", [3, 64, 65, 500])
def test_chance_counts_across_the_switch(levels):
    """C - D of a criterion with a random order: by level up to 64 values, by sorting above;
    both equal the pair enumeration."""
    rng = np.random.default_rng(levels)
    n = 400
    z = rng.integers(0, levels, n).astype(float)
    perm = np.argsort(rng.random((6, n)), axis=1)
    position = np.argsort(perm, axis=1)
    i, j = np.triu_indices(n, 1)
    ref = (np.sign(position[:, j] - position[:, i]) * np.sign(z[j] - z[i])).sum(axis=1)
    np.testing.assert_array_equal(chance._kendall_s(z, perm), ref)
    np.testing.assert_array_equal(chance._kendall_s_sorted(z, perm), ref)


def test_slow_numpy_engine_is_pointed_out(monkeypatch):
    from storyeval.correlation import resampled_overall as _overall
    from storyeval.exceptions import SlowPathWarning

    monkeypatch.setenv("STORYEVAL_KENDALL_ENGINE", "numpy")
    monkeypatch.setattr(_overall, "_SLOW_SECONDS", 1e-9)
    X = np.random.default_rng(0).normal(size=(10, 3000, 2))  # too large for O(n^2) kernels
    with pytest.warns(SlowPathWarning, match=r"storyeval\[fast\]"):
        OverallKernel(X, [0], [1], "kendall_b", "stories")


@pytest.mark.parametrize("engine", ENGINES)
def test_story_major_weights_give_the_same_counts(engine):
    # the layout the overall bootstrap hands the compiled counts (no transposed copy) holds
    # the same values as the default one, and both give the same counts bit for bit
    rng = np.random.default_rng(5)
    S, P, B = 3, 7, 6
    cS = rng.integers(0, 3, (B, S)).astype(float)
    cP = rng.integers(0, 3, (B, P)).astype(float)
    default = story_weights(cS, cP)
    major = story_weights(cS, cP, story_major=True)
    assert major.shape == default.shape and major.T.flags.c_contiguous
    assert np.array_equal(major, default)
    X = _columns(rng, S * P)
    ia, ic = np.array([0, 0, 1, 5]), np.array([1, 2, 3, 0])
    wk = WeightedKendall(X, ia, ic, engine_name=engine)
    a, b = wk.counts(default), wk.counts(major)
    for field in ("s", "untied_x", "untied_y", "distinct_x", "distinct_y"):
        assert np.array_equal(getattr(a, field), getattr(b, field))
