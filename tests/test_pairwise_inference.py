"""Inference on pairwise accuracy: binomial intervals and tests (published counts, statsmodels),
exact McNemar (statsmodels), cluster permutation (brute-force enumeration), cluster bootstrap
kernels, judge comparisons with BH and significance groups, and the CLI."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from storyeval.cli import main
from storyeval.exceptions import FewClustersWarning, InputError
from storyeval.pairwise import judge_accuracy, pointwise_pairwise_accuracy, preference_accuracy
from storyeval.pairwise.from_scores import verdicts_from_scores
from storyeval.pairwise.inference import (
    accuracy_columns,
    accuracy_from_counts,
    accuracy_inference,
    binomial_accuracy,
    chance_level,
    compare_accuracies,
    compare_judges,
    exact_interval,
    judge_accuracy_inference,
    mcnemar_exact,
    mcnemar_score,
    parse_counts,
    scored_verdicts,
    significance_groups,
    tango_interval,
    wilson_interval,
)
from storyeval.resample.clusters import bootstrap_weights, cluster_sums, sign_flips


# ----------------------------------------------------------------------- counts (item 1)
def test_litbench_counts_give_the_published_numbers():
    # LitBench (paper 002) out-of-domain accuracies 201/301 and 1053/1959; p two-sided exact
    # binomial against 0.5, Wilson 95% intervals (values in issue #24).
    res = accuracy_from_counts(["201/301", "1053/1959"])
    assert [f"{p:.1e}" for p in res["pvalue"]] == ["6.0e-09", "9.7e-04"]
    assert [round(v, 3) for v in res["wilson_low"]] == [0.613, 0.515]
    assert [round(v, 3) for v in res["wilson_high"]] == [0.719, 0.560]
    assert (res["alternative"] == "two-sided").all()


@pytest.mark.parametrize("k,n", [(0, 5), (1, 7), (201, 301), (1053, 1959), (30, 30), (4, 10)])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_intervals_equal_statsmodels(k, n, level):
    alpha = 1 - level
    assert wilson_interval(k, n, level) == pytest.approx(
        proportion_confint(k, n, alpha=alpha, method="wilson"), abs=1e-12)
    assert exact_interval(k, n, level) == pytest.approx(
        proportion_confint(k, n, alpha=alpha, method="beta"), abs=1e-12)


def test_binomial_test_hand_case_and_sides():
    # 9 of 10 against 0.5 (exact): P(X >= 9) = 11/1024 one-sided, twice that two-sided
    exact = {"interval": "exact"}
    assert binomial_accuracy(9, 10, alternative="greater", **exact).pvalue == pytest.approx(
        11 / 1024)
    assert binomial_accuracy(9, 10, **exact).pvalue == pytest.approx(22 / 1024)
    assert binomial_accuracy(9, 10, alternative="less", **exact).pvalue == pytest.approx(
        1 - 1 / 1024)
    res = binomial_accuracy(9, 10, interval="exact")
    assert res.method == "exact" and (res.ci_low, res.ci_high) == exact_interval(9, 10)
    assert res.test == "exact binomial"
    stat, p = res
    assert stat == 0.9 and p == res.pvalue
    # beside the Wilson interval, the score test it inverts: z = (9 - 5) / sqrt(10 / 4)
    wil = binomial_accuracy(9, 10)
    assert wil.test == "score test"
    assert wil.pvalue == pytest.approx(2 * stats.norm.sf(4 / math.sqrt(2.5)), rel=1e-12)


@pytest.mark.parametrize("k,n,chance", [(9, 10, 0.5), (30, 80, 0.45), (61, 100, 0.5),
                                        (3, 40, 0.2), (150, 200, 0.62)])
def test_each_binomial_interval_inverts_its_test(k, n, chance):
    from statsmodels.stats.proportion import proportions_ztest

    # the score test as statsmodels computes it (variance at the null proportion)
    ref = proportions_ztest(k, n, value=chance, prop_var=chance)[1]
    assert binomial_accuracy(k, n, chance=chance).pvalue == pytest.approx(ref, rel=1e-10)
    if chance == 0.5:  # twice the smaller tail is scipy's two-sided test at 0.5
        assert binomial_accuracy(k, n, interval="exact").pvalue == pytest.approx(
            stats.binomtest(k, n, 0.5).pvalue, rel=1e-12)
    for method in ("wilson", "exact"):
        for level in (0.9, 0.95, 0.99):
            r = binomial_accuracy(k, n, chance=chance, interval=method, confidence_level=level)
            assert (r.ci_low > chance or r.ci_high < chance) == (r.pvalue < 1 - level)


def test_counts_errors():
    for bad in ("301/201", "a/b", "3/0", "-1/4"):
        with pytest.raises(InputError, match="counts"):
            parse_counts(bad)
    with pytest.raises(InputError, match="chance"):
        binomial_accuracy(3, 4, chance=1.0)
    with pytest.raises(InputError, match="alternative"):
        binomial_accuracy(3, 4, alternative="bigger")


def test_tie_aware_chance_level():
    assert chance_level([0.5, 0.5, 0.0]) == 0.5
    assert chance_level([0.4, 0.4, 0.2]) == pytest.approx(0.4)
    assert chance_level([0.4, 0.4, 0.2], tie_credit=0.5) == pytest.approx(0.5)
    # include: match the humans' three-way distribution
    assert chance_level([0.4, 0.4, 0.2], [0.3, 0.3, 0.4], human_ties="include") == \
        pytest.approx(0.4 * 0.3 * 2 + 0.2 * 0.4)
    with pytest.raises(InputError, match="human_shares"):
        chance_level([0.4, 0.4, 0.2], human_ties="include")
    with pytest.raises(InputError, match="summing to 1"):
        chance_level([0.5, 0.5, 0.5])


def test_cli_counts_prints_the_published_numbers(capsys):
    assert main(["pairwise", "counts", "201/301", "1053/1959"]) == 0
    out = capsys.readouterr().out
    # p = 6.0e-9 and 9.7e-4 print as a journal does (issue 53: one p-value format)
    assert out.count("< 0.001") == 4 and "e-" not in out  # exact and score p, two rows
    for text in ("0.613", "0.719", "0.515", "0.560", "two-sided"):
        assert text in out
    assert main(["pairwise", "counts", "201/301", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)[0]
    assert rec["pvalue"] == pytest.approx(5.9735507e-09, rel=1e-6) and rec["k"] == 201
    assert main(["pairwise", "counts", "2/1"]) == 2
    assert "0 <= K <= N" in capsys.readouterr().err


# ------------------------------------------------------------------ clustered accuracy
def test_cluster_sums_and_bootstrap_weights():
    codes = np.array([0, 1, 0, 2, 2, 2])
    sums = cluster_sums(np.arange(6.0), codes, 3)
    assert sums[:, 0].tolist() == [2.0, 1.0, 12.0]
    w = bootstrap_weights(7, 500, np.random.default_rng(0))
    assert w.shape == (500, 7) and (w.sum(axis=1) == 7).all()
    # each cluster drawn 1 time on average
    assert w.mean() == pytest.approx(1.0, abs=0.05)


def test_sign_flips_enumerate_when_few_clusters():
    signs, exact = sign_flips(3, 100, np.random.default_rng(0))
    assert exact and signs.shape == (8, 3)
    assert {tuple(r) for r in signs} == set(itertools.product([-1.0, 1.0], repeat=3))


def test_permutation_p_equals_brute_force_enumeration():
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(8), 5)
    a = (rng.random(40) < 0.7).astype(float)
    b = (rng.random(40) < 0.5).astype(float)
    with pytest.warns(FewClustersWarning, match="only 8 clusters"):
        res = compare_accuracies(a, b, clusters=clusters, test="permutation",
                                 n_resamples=1000, random_state=0)
    d = np.array([(a - b)[clusters == c].sum() for c in range(8)])
    flips = [abs(np.dot(s, d)) >= abs(d.sum()) - 1e-9
             for s in itertools.product([-1, 1], repeat=8)]
    assert res.test == "cluster-permutation-exact"
    assert res.pvalue == pytest.approx(np.mean(flips), abs=1e-12)


def test_cluster_bootstrap_accuracy_is_order_averaged_and_covers():
    rng = np.random.default_rng(1)
    scores = (rng.random(400) < 0.6).astype(float)
    first = np.tile([True, False], 200)
    clusters = np.repeat(np.arange(40), 10)
    res = accuracy_inference(scores, clusters=clusters, preferred_first=first,
                             random_state=0, n_resamples=500)
    expected = 0.5 * (scores[first].mean() + scores[~first].mean())
    assert res.statistic == pytest.approx(expected, abs=1e-14)
    assert res.method == "cluster-bootstrap" and res.statistic_kind == "order-balanced"
    assert res.ci_low < res.statistic < res.ci_high and res.n_clusters == 40
    # without clusters the auto method is Wilson with the exact binomial test
    ind = accuracy_inference(scores)
    assert ind.method == "wilson" and ind.pvalue == binomial_accuracy(scores.sum(), 400).pvalue


# ------------------------------------------------------------------ McNemar (item 2)
def _table(a, b):
    return np.array([[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))],
                     [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]])


@pytest.mark.parametrize("seed,n,pa,pb", [(0, 30, 0.5, 0.5), (1, 300, 0.7, 0.6),
                                          (2, 2000, 0.8, 0.78), (3, 5, 0.9, 0.1)])
def test_mcnemar_equals_statsmodels_exact(seed, n, pa, pb):
    rng = np.random.default_rng(seed)
    a = (rng.random(n) < pa).astype(int)
    b = (rng.random(n) < pb).astype(int)
    p, n_ab, n_ba = mcnemar_exact(a, b)
    assert p == pytest.approx(mcnemar(_table(a, b), exact=True).pvalue, abs=1e-12)
    assert (n_ab, n_ba) == (_table(a, b)[0, 1], _table(a, b)[1, 0])


def test_mcnemar_no_discordant_pair_and_partial_credit():
    assert mcnemar_exact(np.ones(5), np.ones(5))[0] == 1.0
    with pytest.raises(InputError, match="permutation or bootstrap"):
        mcnemar_exact(np.array([0.5, 1]), np.array([1, 1]))


def test_tango_interval_reproduces_the_published_example_and_inverts_mcnemar():
    # Fagerland, Lydersen and Laake (2014), Statistics in Medicine 33, Table: the Bentur et
    # al. (2009) airway data, n = 21 pairs, 1 and 7 discordant: Tango -0.517 to -0.026
    low, high = tango_interval(1, 7, 21)
    assert (round(low, 3), round(high, 3)) == (-0.517, -0.026)
    # by hand: 30 / 10 of 100, Z(d) = +-1.96 at the ends; Z(0) = McNemar's z = 20 / sqrt(40)
    a = np.array([1] * 30 + [0] * 10 + [1] * 50 + [0] * 10)
    b = np.array([0] * 30 + [1] * 10 + [1] * 50 + [0] * 10)
    res = compare_accuracies(a, b)
    assert res.test == "mcnemar-score" and res.interval == "tango-score"
    assert res.difference == pytest.approx(0.2)
    assert res.pvalue == pytest.approx(
        mcnemar(_table(a, b), exact=False, correction=False).pvalue, rel=1e-12)
    assert res.pvalue == pytest.approx(2 * stats.norm.sf(20 / math.sqrt(40)), rel=1e-12)
    assert res.agreement == "inverts the test"
    assert mcnemar_score(a, b) == (res.pvalue, 30, 10)


def _restricted_z(d, n_ab, n_ba, n):
    """Tango's statistic from the constrained likelihood maximised numerically (scipy)."""
    from scipy.optimize import minimize_scalar

    def nll(q):
        cells = ((n_ab, q + d), (n_ba, q), (n - n_ab - n_ba, 1 - 2 * q - d))
        return -sum(k * math.log(p) for k, p in cells if k)
    q = minimize_scalar(nll, bounds=(max(0.0, -d) + 1e-13, (1 - d) / 2 - 1e-13),
                        method="bounded", options={"xatol": 1e-14}).x
    return (n_ab - n_ba - n * d) / math.sqrt(n * (2 * q + d * (1 - d)))


@pytest.mark.parametrize("n_ab,n_ba,n", [(1, 7, 21), (30, 10, 100), (0, 3, 12), (5, 5, 40),
                                         (12, 0, 12)])
def test_tango_interval_ends_solve_the_restricted_score_equation(n_ab, n_ba, n):
    level = 0.95
    z = stats.norm.ppf(0.975)
    low, high = tango_interval(n_ab, n_ba, n, level)
    for end, target in ((low, z), (high, -z)):
        if abs(end) < 1:
            assert _restricted_z(end, n_ab, n_ba, n) == pytest.approx(target, abs=1e-5)
    # swapping the judges mirrors the interval
    assert tango_interval(n_ba, n_ab, n, level) == pytest.approx((-high, -low), abs=1e-10)


def test_asymptotic_mcnemar_exact_level():
    # the level of the score test summed exactly over the binomial distribution of the
    # discordant pairs (n pairs, discordance pd) and of n_ab given them: at most 0.054
    worst = 0.0
    for n in (20, 48, 100, 300):
        m = np.arange(n + 1)
        reject = np.zeros(n + 1)
        for mm in range(1, n + 1):
            k = np.arange(mm + 1)
            p = 2 * stats.norm.sf(np.abs(2 * k - mm) / math.sqrt(mm))
            reject[mm] = stats.binom.pmf(k, mm, 0.5)[p < 0.05].sum()
        for pd_ in (0.05, 0.2, 0.5):
            worst = max(worst, float(stats.binom.pmf(m, n, pd_) @ reject))
    assert 0.045 < worst <= 0.054


def test_exact_mcnemar_on_request_marks_a_disagreeing_row():
    # 9 of 29 discordant pairs favour b: exact p = 0.0614, the score test 0.0411 (< 0.05)
    a = np.array([1] * 20 + [0] * 9 + [1] * 40 + [0] * 31)
    b = np.array([0] * 20 + [1] * 9 + [1] * 40 + [0] * 31)
    exact = compare_accuracies(a, b, test="mcnemar-exact")
    score = compare_accuracies(a, b)
    assert exact.pvalue == pytest.approx(
        mcnemar(_table(a, b), exact=True).pvalue, rel=1e-12)
    assert exact.pvalue > 0.05 > score.pvalue
    assert (exact.ci_low, exact.ci_high) == (score.ci_low, score.ci_high)
    assert score.ci_low > 0 and score.agreement == "inverts the test"
    assert exact.agreement.startswith("DISAGREE: the interval excludes 0")


@pytest.fixture(scope="module")
def hanna_judges():
    """A stored pair of judges and their humans: HANNA's Beluga-13B and Mistral-7B ratings
    (Eval-Prompt 1) on Relevance turned into verdicts on every pair of the 10 generation
    systems within each prompt; humans: the three annotators' verdicts (majority)."""
    from storyeval.data import load_hanna

    wide = load_hanna().select_systems(exclude=["Human"]).wide()
    humans = pd.concat([verdicts_from_scores(wide, f"Human {i} RE", judge=f"annotator {i}",
                                             dimension="Relevance") for i in (1, 2, 3)])
    judges = pd.concat([verdicts_from_scores(wide, f"{m} RE 1", judge=m,
                                             dimension="Relevance")
                        for m in ("Beluga-13B", "Mistral-7B")])
    return judges, humans


def test_mcnemar_on_stored_judges_equals_statsmodels(hanna_judges):
    judges, humans = hanna_judges
    res = compare_judges(judges, humans, cluster="none", test="mcnemar-exact")
    scored = scored_verdicts(judges, humans)
    wide = scored.pivot(index=["prompt_id", "lo", "hi"], columns="judge",
                        values="score").dropna()
    a, b = wide["Beluga-13B"].to_numpy(), wide["Mistral-7B"].to_numpy()
    ref = mcnemar(_table(a, b), exact=True).pvalue
    assert res.loc[0, "pvalue"] == pytest.approx(ref, abs=1e-12)
    assert res.loc[0, "n"] == len(wide) and res.loc[0, "test"] == "mcnemar-exact"
    # with 96 prompts of 45 pairs each the default clusters by prompt
    auto = compare_judges(judges, humans, random_state=0, n_resamples=300)
    assert auto.loc[0, "cluster"] == "prompt" and auto.loc[0, "n_clusters"] == 96
    assert auto.loc[0, "test"] == "cluster-permutation"


def test_scored_verdicts_reproduce_judge_accuracy(hanna_judges):
    judges, humans = hanna_judges
    acc = judge_accuracy(judges, humans)
    inf = judge_accuracy_inference(judges, humans, random_state=0, n_resamples=200)
    assert inf["accuracy"].to_numpy() == pytest.approx(acc["accuracy"].to_numpy(), abs=1e-14)
    assert (inf["method"] == "cluster-bootstrap").all() and (inf["cluster"] == "prompt").all()
    assert ((inf["ci_low"] < inf["accuracy"]) & (inf["accuracy"] < inf["ci_high"])).all()
    # the chance level is tie-aware: these judges often say "same" (equal Likert ratings)
    assert (inf["chance"] < 0.5).all()


def _verdicts(n_prompts, systems, rng, *, both_orders=False, judge="judge", winner=None):
    rows = []
    for p in range(n_prompts):
        for i, j in itertools.combinations(range(len(systems)), 2):
            orders = ("AB", "BA") if both_orders else ("AB",)
            for order in orders:
                rows.append((p, f"{systems[i]}/{p}", f"{systems[j]}/{p}", "Overall", order))
    frame = pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b", "dimension",
                                        "order"])
    frame["verdict"] = winner(frame, rng) if winner else rng.choice(["A", "B"], len(frame))
    return frame.assign(judge=judge)


def test_significance_groups_on_constructed_judges():
    rng = np.random.default_rng(5)
    human = _verdicts(200, ["s0", "s1", "s2", "s3"], rng, judge="human")
    flip = {"A": "B", "B": "A"}

    def judge(name, err):
        wrong = rng.random(len(human)) < err
        v = human["verdict"].where(~wrong, human["verdict"].map(flip))
        return human.assign(verdict=v, judge=name)

    judges = pd.concat([judge("good", 0.1), judge("good-too", 0.11), judge("coin", 0.5)])
    cmp = compare_judges(judges, human, random_state=0, n_resamples=500)
    assert len(cmp) == 3 and (cmp["pvalue_bh"] >= cmp["pvalue"]).all()
    acc = judge_accuracy_inference(judges, human, random_state=0, n_resamples=300)
    groups = significance_groups(acc, cmp)
    top = set(groups.loc[groups["group"] == "top", "judge"])
    assert top == {"good", "good-too"}
    assert groups.loc[groups["judge"] == "coin", "group"].item() == "below"


def test_cli_accuracy_and_compare(tmp_path, capsys, hanna_judges):
    judges, humans = hanna_judges
    jp, hp = tmp_path / "judges.csv", tmp_path / "humans.csv"
    judges.to_csv(jp, index=False)
    humans.to_csv(hp, index=False)
    assert main(["pairwise", "accuracy", str(jp), "--reference", str(hp), "--seed", "0",
                 "--resamples", "200", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert {r["method"] for r in rec} == {"cluster-bootstrap"}
    assert all(r["ci_low"] < r["accuracy"] < r["ci_high"] for r in rec)
    assert main(["pairwise", "accuracy", str(jp), "--reference", str(hp),
                 "--interval", "none", "--format", "json"]) == 0
    assert "ci_low" not in json.loads(capsys.readouterr().out)[0]
    assert main(["pairwise", "compare", str(jp), "--reference", str(hp), "--seed", "0",
                 "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "significance groups" in out and "cluster-permutation" in out
    assert main(["pairwise", "compare", str(jp), "--reference", str(hp), "--cluster", "none",
                 "--test", "mcnemar", "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["comparisons"][0]["test"] == "mcnemar-score"
    assert payload["comparisons"][0]["agreement"] == "inverts the test"
    assert {g["group"] for g in payload["groups"]} <= {"top", "below"}
    # McNemar on clustered verdicts is refused with a reason
    assert main(["pairwise", "compare", str(jp), "--reference", str(hp), "--test",
                 "mcnemar"]) == 2
    assert "independent pairs" in capsys.readouterr().err
    # so is an independent-pairs interval on verdicts that share prompts (issue 47: Wilson
    # was 7.6x too narrow there); declared independent, it is counted as declared
    assert main(["pairwise", "accuracy", str(jp), "--reference", str(hp), "--interval",
                 "wilson"]) == 2
    err = capsys.readouterr().err
    assert "clustered by prompt" in err and "cluster-t" in err and "cluster 'none'" in err
    assert main(["pairwise", "accuracy", str(jp), "--reference", str(hp), "--interval",
                 "wilson", "--cluster", "none", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["agreement"] for r in rows} == {"inverts the test"}
    assert main(["pairwise", "compare", str(jp), "--reference", str(hp), "--cluster", "none",
                 "--test", "mcnemar-exact", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)["comparisons"][0]
    assert row["test"] == "mcnemar-exact" and row["interval"] == "tango-score"


# ------------------------------------------------- pointwise measures and reward models
def test_accuracy_columns_match_the_single_accuracy_functions():
    rng = np.random.default_rng(8)
    scores = (rng.random((600, 3)) < [0.5, 0.6, 0.7]).astype(float)
    scored = rng.random((600, 3)) < 0.9
    clusters = np.repeat(np.arange(60), 10)
    cols = accuracy_columns(scores, scored, clusters=clusters, random_state=1, n_resamples=400)
    for j in range(3):
        one = accuracy_inference(scores[scored[:, j], j], clusters=clusters[scored[:, j]],
                                 random_state=1, n_resamples=400)
        # same cluster draws: the rows dropped from column j leave the clusters in place
        assert cols.loc[j, "method"] == "cluster-bootstrap"
        assert (cols.loc[j, "ci_low"], cols.loc[j, "ci_high"]) == pytest.approx(
            (one.ci_low, one.ci_high), abs=1e-12)
    wil = accuracy_columns(scores, scored, method="wilson", chance=[0.5, 0.5, 0.6])
    for j in range(3):
        ref = binomial_accuracy(scores[scored[:, j], j].sum(), int(scored[:, j].sum()),
                                chance=[0.5, 0.5, 0.6][j])
        assert (wil.loc[j, "ci_low"], wil.loc[j, "ci_high"], wil.loc[j, "pvalue"]) == \
            pytest.approx((ref.ci_low, ref.ci_high, ref.pvalue), abs=1e-12)


def test_pointwise_accuracy_intervals_cluster_by_prompt():
    from storyeval.data import load_hanna

    wide = load_hanna().select_systems(exclude=["Human"]).wide()
    pairs = [("Beluga-13B RE 1", "Relevance"), ("BLEU Ξ§", "Relevance")]
    plain = pointwise_pairwise_accuracy(wide, pairs)
    res = pointwise_pairwise_accuracy(wide, pairs, interval="auto", random_state=0,
                                      n_resamples=300)
    assert res["accuracy"].tolist() == plain["accuracy"].tolist()
    assert (res["method"] == "cluster-bootstrap").all() and (res["n_clusters"] == 96).all()
    assert ((res["ci_low"] < res["accuracy"]) & (res["accuracy"] < res["ci_high"])).all()
    # tie credit 0.5: a measure answering at random is right half of the time whatever ties
    assert res["chance"].tolist() == pytest.approx([0.5, 0.5])


def test_preference_accuracy_intervals_independent_or_by_prompt():
    idx = pd.Index([f"s{k}" for k in range(200)])
    rng = np.random.default_rng(9)
    wide = pd.DataFrame({"rm": rng.normal(size=200)}, index=idx)
    prefs = pd.DataFrame({"story_a": idx[::2], "story_b": idx[1::2],
                          "winner": rng.choice(["a", "b"], 100),
                          "prompt_id": np.repeat(np.arange(25), 4)})
    ind = preference_accuracy(wide, prefs.drop(columns="prompt_id"), ["rm"], interval="auto")
    assert ind.loc[0, "method"] == "wilson"
    k = round(ind.loc[0, "accuracy"] * 100)
    assert ind.loc[0, "pvalue"] == pytest.approx(binomial_accuracy(k, 100).pvalue, abs=1e-12)
    clu = preference_accuracy(wide, prefs, ["rm"], interval="auto", random_state=0,
                              n_resamples=300)
    # 25 prompts: below CLUSTER_T_BELOW, auto takes the cluster-robust t
    assert clu.loc[0, "method"] == "cluster-t" and clu.loc[0, "n_clusters"] == 25


# ------------------------------------------------ one cluster: nothing to resample
def test_cluster_bootstrap_of_one_cluster_gives_nan_with_a_reason():
    from storyeval.exceptions import UndefinedStatisticWarning
    from storyeval.pairwise import pointwise_pairwise_accuracy

    scores = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 0.0])   # 2/6: below chance
    with pytest.warns(UndefinedStatisticWarning, match="single cluster"):
        res = accuracy_inference(scores, clusters=np.zeros(6), random_state=0)
    assert res.statistic == pytest.approx(2 / 6)
    assert np.isnan(res.ci_low) and np.isnan(res.ci_high) and np.isnan(res.pvalue)
    assert "single cluster" in res.reason
    # pairwise pointwise on single-prompt data: one prompt, 6 systems
    rng = np.random.default_rng(0)
    idx = pd.MultiIndex.from_product([[f"s{k}" for k in range(6)], [0]],
                                     names=["system", "prompt_id"])
    wide = pd.DataFrame({"h": rng.normal(size=6), "m": rng.normal(size=6)}, index=idx)
    with pytest.warns(UndefinedStatisticWarning, match="single cluster"):
        table = pointwise_pairwise_accuracy(wide, [("m", "h")], interval="cluster-bootstrap",
                                            random_state=0)
    row = table.iloc[0]
    assert np.isnan(row["ci_low"]) and np.isnan(row["pvalue"])
    assert "single cluster" in row["reason"]
    # two judges on one prompt: no interval, no p-value
    with pytest.warns(UndefinedStatisticWarning, match="single cluster"):
        cmp = compare_accuracies(np.ones(8), np.zeros(8), clusters=np.zeros(8),
                                 test="bootstrap", random_state=0)
    assert np.isnan(cmp.pvalue) and np.isnan(cmp.ci_low) and "single cluster" in cmp.reason
