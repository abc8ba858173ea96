"""Invariants of the comparison tests and intervals (issue 47), property-based: on any data,

* the p-value does not change when the measures are renamed, the columns reordered, the stories
  reordered, or other measures join the run;
* swapping a and b flips the sign of delta and of the interval and keeps p;
* a difference of exactly 0 never gives p < 0.5 (two-sided);
* the interval excludes 0 exactly when p < 1 - confidence level (two- and one-sided), for the
  tests whose interval is documented to invert them (system level ``permutation-midp``,
  overall level ``ustat`` and ``jackknife``, prompt level ``prompt-t``, within-system level
  ``prompt-jackknife``);
* the system-level test of a rank coefficient is a test of that coefficient only: two data sets
  with the same rank-coefficient differences over every swap get the same p-value, whatever
  their Pearson differences (no tie order borrowed from another statistic).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from storyeval.compare.procedures import _midp_interval, compare_rows
from storyeval.correlation.kernel import pairwise_correlations
from storyeval.correlation.levels import level_data

# no shrinking: a failing example is printed as drawn (shrinking a permutation test's input
# can take minutes)
PHASES = (Phase.explicit, Phase.reuse, Phase.generate)
SETTINGS = settings(max_examples=10, deadline=None, phases=PHASES,
                    suppress_health_check=[HealthCheck.too_slow])


def _wide(h, ms, names, systems=None):
    S, P = h.shape
    systems = systems or [f"sys{s}" for s in range(S)]
    index = pd.MultiIndex.from_product([systems, [f"p{p:02d}" for p in range(P)]],
                                       names=["system", "prompt_id"])
    return pd.DataFrame(np.column_stack([h.ravel()] + [m.ravel() for m in ms]), index=index,
                        columns=list(names))


def _comp(wide, level, crit, pairs, method):
    cols = [crit] + list(dict.fromkeys(c for p in pairs for c in p))
    # the prompt level's test computes its own within-prompt coefficients: r_a and r_b are
    # those of the pooled stories there (as a placeholder the test does not read)
    X = np.asarray(level_data(wide, cols, level="overall" if level in ("prompt", "within")
                              else level),
                   dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        R = pairwise_correlations(X[None], method=method, warn=False).statistic[0]
    pos = {c: k for k, c in enumerate(cols)}
    ia = np.array([pos[a] for a, _ in pairs])
    ib = np.array([pos[b] for _, b in pairs])
    size = len(pairs)
    return {"level": np.full(size, level, dtype=object),
            "criterion": np.full(size, crit, dtype=object),
            "measure_a": np.array([a for a, _ in pairs], dtype=object),
            "measure_b": np.array([b for _, b in pairs], dtype=object),
            "r_a": R[0, ia], "r_b": R[0, ib], "r_ab": R[ia, ib],
            "n": np.full(size, X.shape[0])}


def _run(wide, level, crit, pairs, method, test, alternative="two-sided", seed=0):
    comp = _comp(wide, level, crit, pairs, method)
    return compare_rows(wide, comp, level=level, method=method, test=test,
                        sign_convention="raw", random_state=seed, n_permutations=400,
                        n_resamples=200, alternative=alternative)


@st.composite
def studies(draw, systems=st.integers(3, 7), prompts=st.integers(6, 14)):
    """Human scores on a 1-5 Likert mean and three measures, some of them tied or equal."""
    S, P = draw(systems), draw(prompts)
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    q = rng.normal(0, draw(st.sampled_from([0.0, 0.3, 1.0])), (S, 1)) + rng.normal(size=(S, P))
    h = np.clip(np.rint(3 + q + rng.normal(0, 0.8, (S, P))), 1, 5)
    kind = draw(st.sampled_from(["continuous", "likert", "copy", "noisier"]))
    a = q + rng.normal(size=(S, P))
    b = q + rng.normal(size=(S, P)) * (2.0 if kind == "noisier" else 1.0)
    if kind == "likert":
        a, b = np.clip(np.rint(3 + a), 1, 5), np.clip(np.rint(3 + b), 1, 5)
    if kind == "copy":
        b = a.copy()
    c = rng.normal(size=(S, P))
    return h, a, b, c


LEVEL_TESTS = [("system", "kendall_b", "permutation-midp"),
               ("system", "pearson", "permutation-midp"),
               ("overall", "kendall_b", "ustat"),
               ("overall", "pearson", "jackknife"),
               ("prompt", "kendall_b", "prompt-t"),
               ("within", "kendall_b", "prompt-jackknife"),
               ("within", "pearson", "prompt-jackknife")]


@pytest.mark.parametrize("level,method,test", LEVEL_TESTS)
@SETTINGS
@given(data=studies())
def test_p_is_a_function_of_the_data(level, method, test, data):
    h, a, b, c = data
    ref = _run(_wide(h, [a, b, c], ["H", "A", "B", "C"]), level, "H", [("A", "B")], method,
               test)
    # other names, another column order, another measure in the run, stories reordered
    wide = _wide(h, [c, b, a], ["quality", "zeta", "length", "alpha"])
    wide = wide.iloc[np.random.default_rng(0).permutation(len(wide))]
    other = _run(wide, level, "quality", [("zeta", "alpha"), ("alpha", "length")], method, test)
    assert other["p"][1] == pytest.approx(ref["p"][0], abs=1e-12, nan_ok=True)
    assert other["delta"][1] == pytest.approx(ref["delta"][0], abs=1e-12, nan_ok=True)
    assert other["ci_low"][1] == pytest.approx(ref["ci_low"][0], abs=1e-9, nan_ok=True)
    assert other["ci_high"][1] == pytest.approx(ref["ci_high"][0], abs=1e-9, nan_ok=True)


@pytest.mark.parametrize("level,method,test", LEVEL_TESTS)
@SETTINGS
@given(data=studies())
def test_swapping_a_and_b(level, method, test, data):
    h, a, b, c = data
    wide = _wide(h, [a, b], ["H", "A", "B"])
    ab = _run(wide, level, "H", [("A", "B")], method, test)
    ba = _run(wide, level, "H", [("B", "A")], method, test)
    assert ba["p"][0] == pytest.approx(ab["p"][0], abs=1e-9, nan_ok=True)
    assert ba["delta"][0] == pytest.approx(-ab["delta"][0], abs=1e-12, nan_ok=True)
    if np.isfinite(ab["p"][0]):
        assert ba["ci_low"][0] == pytest.approx(-ab["ci_high"][0], abs=1e-9)
        assert ba["ci_high"][0] == pytest.approx(-ab["ci_low"][0], abs=1e-9)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("level,method,test", LEVEL_TESTS)
@SETTINGS
@given(data=studies())
def test_interval_excludes_zero_iff_p_below_alpha(level, method, test, alternative, data):
    h, a, b, _ = data
    res = _run(_wide(h, [a, b], ["H", "A", "B"]), level, "H", [("A", "B")], method, test,
               alternative)
    p, low, high, delta = res["p"][0], res["ci_low"][0], res["ci_high"][0], res["delta"][0]
    if not np.isfinite(p):
        return
    assert (low > 0 or high < 0) == (p < 0.05), (p, low, high)
    if alternative == "two-sided" and abs(delta) <= 1e-12:
        assert p >= 0.5
    if alternative == "greater":
        assert high == pytest.approx(2.0)
    if alternative == "less":
        assert low == pytest.approx(-2.0)


@pytest.mark.parametrize("method", ["kendall_b", "spearman", "pearson"])
@settings(max_examples=12, deadline=None, phases=PHASES,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=studies(systems=st.integers(3, 6), prompts=st.integers(4, 9)))
@pytest.mark.filterwarnings("ignore")
def test_system_test_is_the_midp_test_of_its_own_coefficient(method, data):
    """An independent computation: the same swaps (the generator's masks), each swap's
    coefficient difference from scipy, and the plain mid-p of |delta| (ties split, nothing
    ordered by another statistic)."""
    from scipy import stats

    h, a, b, _ = data
    a, b = a + 1e-3 * np.arange(a.size).reshape(a.shape) % 7, b  # no exact ties in a or b
    n = 300
    res = compare_rows(_wide(h, [a, b], ["H", "A", "B"]), _comp(
        _wide(h, [a, b], ["H", "A", "B"]), "system", "H", [("A", "B")], method),
        level="system", method=method, test="permutation-midp", sign_convention="raw",
        random_state=5, n_permutations=n, n_resamples=50)
    S, P = h.shape
    masks = np.random.default_rng(5).random((n, P)) < 0.5
    za, zb = (a - a.mean()) / a.std(), (b - b.mean()) / b.std()
    coef = {"kendall_b": lambda x, y: stats.kendalltau(x, y).statistic,
            "spearman": lambda x, y: stats.spearmanr(x, y).statistic,
            "pearson": lambda x, y: stats.pearsonr(x, y).statistic}[method]
    # the tie rule of rank coefficients: means equal up to rounding (the library: within a
    # relative 1e-12) are tied; Pearson is continuous in them
    def snap(x):
        return x if method == "pearson" else np.round(x, 9)

    H = snap(h.mean(1))
    observed = coef(H, snap(a.mean(1))) - coef(H, snap(b.mean(1)))
    deltas = []
    for m in masks:
        sa = np.where(m[None, :], zb, za).mean(1) * a.std() + a.mean()
        sb = np.where(m[None, :], za, zb).mean(1) * b.std() + b.mean()
        deltas.append(coef(H, snap(sa)) - coef(H, snap(sb)))
    deltas = np.nan_to_num(np.abs(np.array(deltas)), nan=np.inf)
    if not np.isfinite(observed):
        return
    more = np.sum(deltas > abs(observed) + 1e-9)
    tied = np.sum(np.abs(deltas - abs(observed)) <= 1e-9)
    assert res["p"][0] == pytest.approx((more + 0.5 * (1 + tied)) / (n + 1), abs=1e-12)


def _brute_spread(observed, perm, alpha, alternative):
    """The largest accepted shift of the mid-p test, by a grid over the permuted values."""
    d = {"two-sided": np.abs(perm), "greater": perm, "less": -perm}[alternative]
    n = len(d)
    grid = np.unique(np.concatenate([d, d + 1e-7, d - 1e-7, [-1e9, 1e9]]))
    mid = np.array([(np.sum(d > x + 1e-12) + 0.5 * (1 + np.sum(np.abs(d - x) <= 1e-12)))
                    / (n + 1) for x in grid])
    accepted = grid[mid >= alpha]
    return np.inf if accepted.max() == 1e9 else accepted.max()


@settings(max_examples=60, deadline=None, phases=PHASES)
@given(n=st.integers(3, 60), alpha=st.sampled_from([0.01, 0.05, 0.1, 0.3]),
       alternative=st.sampled_from(["two-sided", "greater", "less"]),
       seed=st.integers(0, 2**31 - 1), step=st.sampled_from([0.2, 0.05, 1e-3]))
def test_midp_interval_inverts_the_midp_test(n, alpha, alternative, seed, step):
    rng = np.random.default_rng(seed)
    perm = np.round(rng.normal(size=(n, 3)) / step) * step
    observed = np.round(rng.normal(size=3) / step) * step
    low, high = _midp_interval(observed, perm, alpha, alternative)
    for j in range(3):
        c = _brute_spread(observed[j], perm[:, j], alpha, alternative)
        spread = high[j] - observed[j] if alternative == "less" else observed[j] - low[j]
        if np.isinf(c):
            assert np.isinf(spread)
        else:
            assert spread == pytest.approx(c, abs=1e-6)
