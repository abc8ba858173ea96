"""Invariants every row of the pairwise, bias and PPI inference must satisfy (issue 47),
as property tests (hypothesis):

* a p-value is a function of the data: unchanged by renaming clusters and reordering rows;
* swapping a and b flips the sign of the difference and of its interval and keeps p;
* a difference of exactly 0 gives p >= 0.5 (two-sided);
* where the interval inverts the test (McNemar score with Tango, cluster t, Wilson with the
  score test, Clopper-Pearson with the exact test, the bias t tests), it excludes the null
  exactly when p < 1 - confidence_level; where two procedures sit side by side (a cluster
  bootstrap interval beside a permutation p), the row's ``agreement`` says whether they agree;
* a clustered design never gets an unclustered interval silently, and duplicated rows are
  refused or counted as declared.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyeval.bias.inference import clustered_correlation, ratio_contrast
from storyeval.exceptions import InputError, StoryevalWarning
from storyeval.pairwise.inference import (
    accuracy_inference,
    binomial_accuracy,
    compare_accuracies,
    compare_judges,
    interval_agreement,
    judge_accuracy_inference,
)
from storyeval.power.ppi import ppi_mean, ppi_mean_difference
from storyeval.resample.clusters import sign_flips

FAST = settings(max_examples=25, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@contextmanager
def _quiet():
    """Few-cluster and undefined-statistic warnings are the point of other tests."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoryevalWarning)
        yield


@st.composite
def paired_scores(draw, min_size=6, max_size=80):
    n = draw(st.integers(min_size, max_size))
    a = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=float)
    b = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=float)
    seed = draw(st.integers(0, 2**31 - 1))
    return a, b, seed


def _excludes(low, high, null=0.0):
    return bool(low > null or high < null)


# ------------------------------------------------------------------ pairwise compare
@FAST
@given(paired_scores(), st.sampled_from([0.9, 0.95, 0.99]))
def test_mcnemar_row_swaps_reorders_and_agrees(data, level):
    a, b, seed = data
    res = compare_accuracies(a, b, confidence_level=level)
    assert res.test == "mcnemar-score" and res.agreement == "inverts the test"
    assert _excludes(res.ci_low, res.ci_high) == (res.pvalue < 1 - level)
    swapped = compare_accuracies(b, a, confidence_level=level)
    assert swapped.difference == pytest.approx(-res.difference, abs=1e-15)
    assert swapped.pvalue == res.pvalue
    assert (swapped.ci_low, swapped.ci_high) == pytest.approx((-res.ci_high, -res.ci_low),
                                                             abs=1e-9)
    order = np.random.default_rng(seed).permutation(len(a))
    again = compare_accuracies(a[order], b[order], confidence_level=level)
    assert (again.pvalue, again.ci_low, again.ci_high) == (res.pvalue, res.ci_low,
                                                           res.ci_high)
    if res.difference == 0:
        assert res.pvalue >= 0.5
    exact = compare_accuracies(a, b, test="mcnemar-exact", confidence_level=level)
    assert exact.agreement in ("agree", "") or exact.agreement.startswith("DISAGREE")
    assert (exact.agreement.startswith("DISAGREE")
            == (_excludes(exact.ci_low, exact.ci_high) != (exact.pvalue < 1 - level)))


@st.composite
def clustered_scores(draw):
    n_clusters = draw(st.integers(3, 9))
    sizes = draw(st.lists(st.integers(1, 6), min_size=n_clusters, max_size=n_clusters))
    clusters = np.repeat(np.arange(n_clusters), sizes)
    n = len(clusters)
    a = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n)))
    b = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n, max_size=n)))
    seed = draw(st.integers(0, 2**31 - 1))
    return a, b, clusters, seed


@FAST
@given(clustered_scores())
def test_clustered_comparisons_are_functions_of_the_data(data):
    a, b, clusters, seed = data
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(a))
    names = np.array([f"prompt {c}" for c in rng.permutation(clusters.max() + 1)])[clusters]
    with _quiet():
        for test in ("permutation", "cluster-t"):  # 2^9 <= 600: the permutation test is exact
            res = compare_accuracies(a, b, clusters=clusters, test=test, n_resamples=600)
            renamed = compare_accuracies(a[order], b[order], clusters=names[order], test=test,
                                         n_resamples=600, random_state=seed)
            swapped = compare_accuracies(b, a, clusters=clusters, test=test, n_resamples=600)
            if not np.isfinite(res.pvalue):
                continue
            assert renamed.pvalue == pytest.approx(res.pvalue, rel=1e-12)
            assert swapped.pvalue == pytest.approx(res.pvalue, rel=1e-12)
            assert swapped.difference == pytest.approx(-res.difference, abs=1e-12)
            assert (swapped.ci_low, swapped.ci_high) == pytest.approx(
                (-res.ci_high, -res.ci_low), abs=1e-9)
            if res.difference == 0:
                assert res.pvalue >= 0.5
            rejects = res.pvalue < 0.05
            # both intervals invert their test (the sign-flip test's by
            # sign_flip_ratio_interval, on the same sign vectors)
            assert res.agreement == "inverts the test"
            assert _excludes(res.ci_low, res.ci_high) == rejects
            assert res.ci_low <= res.difference <= res.ci_high


@FAST
@given(clustered_scores(), st.sampled_from([0.8, 0.9, 0.95]))
def test_sign_flip_interval_is_the_set_of_accepted_differences(data, level):
    # brute force: the sign-flip test of H0: delta (centred cluster sums D_c - delta n_c, the
    # same sign vectors) on a grid; the interval's ends are the accepted region's hull
    a, b, clusters, _ = data
    codes, n_clusters = np.unique(clusters, return_inverse=True)[1], clusters.max() + 1
    if n_clusters > 9 or n_clusters < 2:
        return
    with _quiet():
        res = compare_accuracies(a, b, clusters=clusters, test="permutation",
                                 n_resamples=2 ** n_clusters, confidence_level=level)
    signs, exact = sign_flips(n_clusters, 2 ** n_clusters, np.random.default_rng(0))
    assert exact
    d = np.bincount(codes, a - b, minlength=n_clusters)
    m = np.bincount(codes, minlength=n_clusters).astype(float)
    grid = np.linspace(-1, 1, 801)
    centred = d[None, :] - grid[:, None] * m[None, :]
    extreme = np.abs(centred @ signs.T) >= np.abs(centred.sum(axis=1))[:, None] - 1e-9
    accepted = grid[~(extreme.mean(axis=1) < 1 - level)]
    assert accepted.min() >= res.ci_low - 1e-12 and accepted.max() <= res.ci_high + 1e-12
    assert res.ci_low > accepted.min() - 2 / 800 - 1e-12
    assert res.ci_high < accepted.max() + 2 / 800 + 1e-12


def test_interval_agreement_names_each_case():
    assert interval_agreement(0.01, 0.2, 0.03, 0.95, True) == "inverts the test"
    assert interval_agreement(-0.1, 0.2, 0.3, 0.95, False) == "agree"
    assert interval_agreement(-0.124, -0.001, 0.0589, 0.95, False).startswith(
        "DISAGREE: the interval excludes 0, p = 0.0589")
    assert interval_agreement(-0.1, 0.2, 0.01, 0.95, False).startswith("DISAGREE: p = 0.01")
    assert interval_agreement(np.nan, 0.2, 0.01, 0.95, False) == ""


# ------------------------------------------------------------------ accuracy against chance
@FAST
@given(st.integers(1, 400), st.data(), st.sampled_from(["wilson", "exact"]),
       st.floats(0.2, 0.8), st.sampled_from([0.9, 0.95, 0.99]))
def test_binomial_interval_excludes_chance_iff_its_test_rejects(n, data, interval, chance,
                                                               level):
    k = data.draw(st.integers(0, n))
    r = binomial_accuracy(k, n, chance=chance, interval=interval, confidence_level=level)
    assert _excludes(r.ci_low, r.ci_high, chance) == (r.pvalue < 1 - level)
    # the accuracy of the complementary verdicts against 1 - chance: the same p
    flipped = binomial_accuracy(n - k, n, chance=1 - chance, interval=interval,
                                confidence_level=level)
    assert flipped.pvalue == pytest.approx(r.pvalue, rel=1e-9, abs=1e-300)
    assert (flipped.ci_low, flipped.ci_high) == pytest.approx((1 - r.ci_high, 1 - r.ci_low),
                                                             abs=1e-9)


@FAST
@given(st.integers(2, 12), st.integers(2, 5), st.sampled_from(["wilson", "exact"]),
       st.integers(0, 2**31 - 1))
def test_clustered_accuracy_never_gets_an_independent_interval(n_clusters, per, method, seed):
    scores = (np.random.default_rng(seed).random(n_clusters * per) < 0.6).astype(float)
    clusters = np.repeat(np.arange(n_clusters), per)
    with pytest.raises(InputError, match="clusters .*cluster-t"):
        accuracy_inference(scores, clusters=clusters, method=method)
    # one verdict per cluster: independent, allowed
    single = accuracy_inference(scores[::per], clusters=np.arange(n_clusters), method=method)
    assert single.method == method


# ------------------------------------------------------------------ verdict tables
def _verdict_tables(rng, n_prompts=12, judges=("j1", "j2")):
    rows = []
    for p in range(n_prompts):
        for i, j in ((0, 1), (0, 2), (1, 2)):
            rows.append((p, f"s{i}/{p}", f"s{j}/{p}", "Overall", "AB"))
    base = pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b", "dimension", "order"])
    human = base.assign(verdict=rng.choice(["A", "B"], len(base)), judge="human")
    frames = []
    for name in judges:
        wrong = rng.random(len(base)) < 0.35
        flip = human["verdict"].map({"A": "B", "B": "A"})
        frames.append(base.assign(verdict=human["verdict"].where(~wrong, flip), judge=name))
    return pd.concat(frames, ignore_index=True), human


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_judge_tables_reordered_renamed_duplicated(seed):
    rng = np.random.default_rng(seed)
    judges, human = _verdict_tables(rng)
    with _quiet():
        # all-pairs verdicts share prompts: Wilson is refused, naming the clustering
        with pytest.raises(InputError, match="clustered by prompt.*cluster-t"):
            judge_accuracy_inference(judges, human, method="wilson")
        # declared independent: counted as declared (one verdict, one unit)
        declared = judge_accuracy_inference(judges, human, method="wilson", cluster="none")
        assert (declared["n_clusters"] == declared["n_verdicts"]).all()
        assert (declared["agreement"] == "inverts the test").all()
        boot = judge_accuracy_inference(judges, human, method="cluster-bootstrap",
                                        n_resamples=200, random_state=seed)
        for row in boot.itertuples():  # two procedures: the row says whether they agree
            agree = _excludes(row.ci_low, row.ci_high, row.chance) == (row.pvalue < 0.05)
            assert row.agreement == "agree" if agree else row.agreement.startswith("DISAGREE")
        base = compare_judges(judges, human, test="cluster-t")
        shuffled = judges.sample(frac=1.0, random_state=seed % 1000).reset_index(drop=True)
        again = compare_judges(shuffled, human, test="cluster-t")
        assert again["pvalue"].to_numpy() == pytest.approx(base["pvalue"].to_numpy(),
                                                             rel=1e-12)
        # renaming the judges so that their order swaps: the row is mirrored
        renamed = compare_judges(judges.replace({"judge": {"j1": "z1"}}), human,
                                 test="cluster-t")
        assert renamed.loc[0, "judge_a"] == "j2"
        assert renamed.loc[0, "difference"] == pytest.approx(-base.loc[0, "difference"])
        assert renamed.loc[0, "pvalue"] == pytest.approx(base.loc[0, "pvalue"], rel=1e-12)
        # a duplicated verdict row is refused, not counted twice
        with pytest.raises(InputError, match="repeats a judgment|two verdicts"):
            compare_judges(pd.concat([judges, judges.iloc[:1]]), human)


# ------------------------------------------------------------------ bias tests
@FAST
@given(st.integers(4, 15), st.integers(1, 4), st.integers(0, 2**31 - 1),
       st.sampled_from([0.9, 0.95]))
def test_bias_ratio_contrast_rows(n_clusters, per, seed, level):
    rng = np.random.default_rng(seed)
    n = n_clusters * per
    num = rng.normal(0.1, 1, n)
    den = np.ones(n)
    clusters = np.repeat(np.arange(n_clusters), per)
    with _quiet():
        res = ratio_contrast(num, den, clusters=clusters, confidence_level=level)
        if not np.isfinite(res.pvalue):
            return
        assert _excludes(res.ci_low, res.ci_high) == (res.pvalue < 1 - level)
        neg = ratio_contrast(-num, den, clusters=clusters, confidence_level=level)
        assert neg.pvalue == pytest.approx(res.pvalue, rel=1e-10)
        assert (neg.ci_low, neg.ci_high) == pytest.approx((-res.ci_high, -res.ci_low))
        order = rng.permutation(n)
        names = np.array([f"p{c}" for c in rng.permutation(n_clusters)])[clusters]
        moved = ratio_contrast(num[order], den[order], clusters=names[order],
                               confidence_level=level)
        assert moved.pvalue == pytest.approx(res.pvalue, rel=1e-9)
        centred = ratio_contrast(num - num.mean(), den, clusters=clusters)
        if np.isfinite(centred.pvalue):
            assert centred.pvalue >= 0.5  # an estimate of exactly the null (to rounding)


@FAST
@given(st.integers(5, 12), st.integers(2, 4), st.integers(0, 2**31 - 1))
def test_bias_clustered_correlation_rows(n_clusters, per, seed):
    rng = np.random.default_rng(seed)
    n = n_clusters * per
    x = rng.normal(size=n)
    y = 0.3 * x + rng.normal(size=n)
    clusters = np.repeat(np.arange(n_clusters), per)
    with _quiet():
        res = clustered_correlation(x, y, clusters=clusters)
        if not np.isfinite(res.pvalue):
            return
        assert _excludes(res.ci_low, res.ci_high) == (res.pvalue < 0.05)
        swapped = clustered_correlation(y, x, clusters=clusters)
        assert swapped.pvalue == pytest.approx(res.pvalue, rel=1e-9)
        neg = clustered_correlation(x, -y, clusters=clusters)
        assert neg.pvalue == pytest.approx(res.pvalue, rel=1e-9)
        assert (neg.ci_low, neg.ci_high) == pytest.approx((-res.ci_high, -res.ci_low))


# ------------------------------------------------------------------ PPI
@settings(max_examples=15, deadline=None)
@given(st.integers(12, 60), st.integers(0, 2**31 - 1), st.booleans())
def test_ppi_rows_are_functions_of_the_data(n_labelled, seed, binary):
    rng = np.random.default_rng(seed)
    size = 300
    h = (rng.random(size) < 0.3).astype(float) if binary else rng.normal(3, 1, size)
    f = h + rng.normal(0, 0.7, size)
    h[n_labelled:] = np.nan
    with _quiet():  # a rare binary draw warns that it undercovers (tests/test_ppi.py)
        res = ppi_mean(h, f)
    order = rng.permutation(size)
    with _quiet():
        moved = ppi_mean(h[order], f[order])
    assert (moved.estimate, moved.low, moved.high) == pytest.approx(
        (res.estimate, res.low, res.high), rel=1e-12, abs=1e-12)
    # B - A against A - B: mirrored, with one fold (ppi-python's PPI++) and with the
    # cross-fitted default (fitted in both directions, so negating the differences, which
    # reverses their sorted order and hence the folds, changes nothing but the sign)
    h2 = h + rng.normal(0, 0.5, size)
    f2 = f + rng.normal(0, 0.5, size)
    for folds in (1, 5):
        with _quiet():
            ab = ppi_mean_difference(h, f, h2, f2, paired=True, folds=folds)
            ba = ppi_mean_difference(h2, f2, h, f, paired=True, folds=folds)
        assert ba.estimate == pytest.approx(-ab.estimate, abs=1e-12)
        assert (ba.low, ba.high) == pytest.approx((-ab.high, -ab.low), abs=1e-9)
        assert ba.se == pytest.approx(ab.se, rel=1e-12)
    with _quiet():
        ind = ppi_mean_difference(h, f, h2, f2)
        ind_ba = ppi_mean_difference(h2, f2, h, f)
    assert (ind_ba.low, ind_ba.high) == pytest.approx((-ind.high, -ind.low), abs=1e-9)
