"""The cluster-robust t interval and test of a clustered accuracy (`method="cluster-t"`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from storyeval.exceptions import InputError
from storyeval.pairwise.inference import accuracy_inference


def _data(seed: int, prompts: int = 10, per: int = 15):
    rng = np.random.default_rng(seed)
    cluster = np.repeat(np.arange(prompts), per)
    p = 1 / (1 + np.exp(-(0.8 + rng.normal(0, 0.7, prompts)[cluster])))
    scores = (rng.random(prompts * per) < p).astype(float)
    scores[::7] = 0.5  # ties earning half credit
    return scores, cluster


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_matches_statsmodels_cluster_ols(seed, alternative):
    scores, cluster = _data(seed)
    res = accuracy_inference(scores, clusters=cluster, method="cluster-t",
                             alternative=alternative, chance=0.6)
    fit = sm.OLS(scores - 0.6, np.ones((len(scores), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": cluster}, use_t=True)
    G = len(np.unique(cluster))
    se = float(fit.bse[0])
    assert res.statistic == pytest.approx(scores.mean(), abs=1e-12)
    t = float(fit.tvalues[0])
    expected = {"two-sided": 2 * stats.t.sf(abs(t), G - 1), "greater": stats.t.sf(t, G - 1),
                "less": stats.t.cdf(t, G - 1)}[alternative]
    assert res.pvalue == pytest.approx(expected, rel=1e-9)
    low, high = fit.conf_int(alpha=0.05)[0] + 0.6
    assert (res.ci_low, res.ci_high) == pytest.approx((low, high), rel=1e-9)
    assert res.ci_high - res.ci_low == pytest.approx(2 * stats.t.ppf(0.975, G - 1) * se,
                                                     rel=1e-9)
    assert res.method == "cluster-t" and res.n_clusters == G == 10


def test_hand_case():
    # clusters: [1, 1], [0, 1], [0, 0]: a = 1/2, residuals 1, 0, -1
    res = accuracy_inference(np.array([1, 1, 0, 1, 0, 0.0]), clusters=np.array([0, 0, 1, 1, 2, 2]),
                             method="cluster-t")
    se = math.sqrt(3 / 2 * 2) / 6
    assert res.statistic == 0.5
    assert res.pvalue == pytest.approx(1.0)
    q = stats.t.ppf(0.975, 2)
    assert (res.ci_low, res.ci_high) == pytest.approx((0.5 - q * se, 0.5 + q * se))


def test_degenerate_and_refused():
    from storyeval.exceptions import UndefinedStatisticWarning

    with pytest.warns(UndefinedStatisticWarning, match="single cluster"):
        one = accuracy_inference(np.array([1, 0, 1.0]), clusters=np.zeros(3),
                                 method="cluster-t")
    assert math.isnan(one.pvalue) and one.reason
    flat = accuracy_inference(np.array([1, 0, 1, 0.0]), clusters=np.array([0, 0, 1, 1]),
                              method="cluster-t")
    assert math.isnan(flat.pvalue) and "standard error is 0" in flat.reason
    with pytest.raises(InputError, match="cluster-bootstrap"):
        accuracy_inference(np.array([1, 0, 1, 0.0]), clusters=np.array([0, 0, 1, 1]),
                           preferred_first=np.array([True, False, True, False]),
                           method="cluster-t")


def test_level_and_coverage_with_ten_prompts():
    """A small Monte Carlo (400 data sets, 10 prompts x 15 pairs): the test of accuracy =
    chance on data with accuracy 0.5 rejects in [0.02, 0.09] (Monte Carlo se 0.011), the
    interval covers the true accuracy in >= 0.9 of data sets at accuracy about 0.69."""
    rng = np.random.default_rng(11)
    G, per, reps = 10, 15, 400
    cluster = np.repeat(np.arange(G), per)
    reject = cover = 0
    for _ in range(reps):
        base = rng.normal(0, 0.5, G)[cluster] + rng.normal(0, 1, G * per)
        null = (rng.random(G * per) < 1 / (1 + np.exp(-base))).astype(float)
        reject += accuracy_inference(null, clusters=cluster, method="cluster-t").pvalue < 0.05
        mu = math.log(0.7 / 0.3)
        alt = (rng.random(G * per) < 1 / (1 + np.exp(-(mu + base)))).astype(float)
        res = accuracy_inference(alt, clusters=cluster, method="cluster-t")
        z, w = np.polynomial.hermite_e.hermegauss(80)
        truth = float(np.sum(w / (1 + np.exp(-(mu + math.sqrt(1.25) * z)))) / w.sum())
        cover += res.ci_low <= truth <= res.ci_high
    assert 0.02 <= reject / reps <= 0.09
    assert cover / reps >= 0.9


@pytest.mark.parametrize("seed", [0, 3])
def test_difference_matches_statsmodels(seed):
    from storyeval.pairwise.inference import compare_accuracies

    a, cluster = _data(seed)
    b, _ = _data(seed + 100)
    res = compare_accuracies(a, b, clusters=cluster, test="cluster-t")
    fit = sm.OLS(a - b, np.ones((len(a), 1))).fit(
        cov_type="cluster", cov_kwds={"groups": cluster}, use_t=True)
    assert res.difference == pytest.approx(float(fit.params[0]), abs=1e-12)
    assert res.pvalue == pytest.approx(float(fit.pvalues[0]), rel=1e-9)
    low, high = fit.conf_int(alpha=0.05)[0]
    assert (res.ci_low, res.ci_high) == pytest.approx((max(-1, low), min(1, high)), rel=1e-9)
    assert res.test == "cluster-t" and res.interval == "cluster-t"


def test_difference_level_with_ten_prompts():
    """400 null data sets (equal accuracies, judge-specific prompt effects), 10 prompts x 15
    pairs: the cluster-t comparison rejects in [0.02, 0.09]."""
    from storyeval.pairwise.inference import compare_accuracies

    rng = np.random.default_rng(21)
    G, per, reps = 10, 15, 400
    cluster = np.repeat(np.arange(G), per)
    reject = 0
    for _ in range(reps):
        base = 0.85 + rng.normal(0, 0.5, G)[cluster] + rng.normal(0, 1, G * per)
        a, b = ((rng.random(G * per) < 1 / (1 + np.exp(-(base + rng.normal(0, 0.5, G)[cluster]))))
                .astype(float) for _ in range(2))
        reject += compare_accuracies(a, b, clusters=cluster, test="cluster-t").pvalue < 0.05
    assert 0.02 <= reject / reps <= 0.09


def test_cli_cluster_t_on_stored_judges(tmp_path, capsys):
    """`pairwise accuracy --interval cluster-t` and `pairwise compare --test cluster-t` on
    HANNA's Beluga-13B / Mistral-7B Relevance verdicts (clustered by prompt, 96 prompts) equal
    the library calls."""
    import json

    import pandas as pd

    from storyeval.cli import main
    from storyeval.data import load_hanna
    from storyeval.pairwise.from_scores import verdicts_from_scores
    from storyeval.pairwise.inference import compare_judges, judge_accuracy_inference

    wide = load_hanna().select_systems(exclude=["Human"]).wide()
    humans = pd.concat([verdicts_from_scores(wide, f"Human {i} RE", judge=f"annotator {i}",
                                             dimension="Relevance") for i in (1, 2, 3)])
    judges = pd.concat([verdicts_from_scores(wide, f"{m} RE 1", judge=m, dimension="Relevance")
                        for m in ("Beluga-13B", "Mistral-7B")])
    jp, hp = tmp_path / "judges.csv", tmp_path / "humans.csv"
    judges.to_csv(jp, index=False)
    humans.to_csv(hp, index=False)
    assert main(["pairwise", "accuracy", str(jp), "--reference", str(hp), "--interval",
                 "cluster-t", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    lib = judge_accuracy_inference(judges, humans, method="cluster-t")
    assert {r["method"] for r in rec} == {"cluster-t"}
    assert [r["ci_low"] for r in rec] == pytest.approx(lib["ci_low"].tolist(), rel=1e-12)
    assert (lib["n_clusters"] == 96).all()
    assert main(["pairwise", "compare", str(jp), "--reference", str(hp), "--test", "cluster-t",
                 "--format", "json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    cmp = compare_judges(judges, humans, test="cluster-t")
    assert payload["comparisons"][0]["test"] == "cluster-t"
    assert payload["comparisons"][0]["pvalue"] == pytest.approx(cmp.loc[0, "pvalue"], rel=1e-12)


def test_columns_match_statsmodels_per_column_with_unscored_units():
    """`accuracy_columns(method="cluster-t")` (pairwise accuracy of several measures) runs the
    cluster t on each column's scored units: equal to statsmodels' cluster OLS on that subset,
    not a bootstrap under the name cluster-t."""
    from storyeval.pairwise.inference import accuracy_columns

    rng = np.random.default_rng(5)
    cluster = np.repeat(np.arange(12), 10)
    scores = (rng.random((120, 3)) < 0.65).astype(float)
    scored = rng.random((120, 3)) < 0.9
    scored[cluster == 3, 2] = False  # column 2 has 11 clusters
    got = accuracy_columns(scores, scored, clusters=cluster, method="cluster-t")
    assert (got["method"] == "cluster-t").all() and (got["n_resamples"] == 0).all()
    for j in range(3):
        m = scored[:, j]
        fit = sm.OLS(scores[m, j], np.ones((m.sum(), 1))).fit(
            cov_type="cluster", cov_kwds={"groups": cluster[m]}, use_t=True)
        low, high = fit.conf_int(alpha=0.05)[0]
        assert got.loc[j, "n_clusters"] == len(np.unique(cluster[m]))
        assert got.loc[j, ["ci_low", "ci_high"]].tolist() == pytest.approx([low, high], rel=1e-9)
        t = (scores[m, j].mean() - 0.5) / float(fit.bse[0])
        p = 2 * stats.t.sf(abs(t), len(np.unique(cluster[m])) - 1)
        assert got.loc[j, "pvalue"] == pytest.approx(p, rel=1e-9)


@pytest.mark.parametrize("prompts, expected", [(10, "cluster-t"), (29, "cluster-t"),
                                               (30, "cluster-bootstrap")])
def test_auto_takes_the_cluster_t_below_30_prompts(prompts, expected):
    from storyeval.pairwise.inference import CLUSTER_T_BELOW, accuracy_columns

    assert CLUSTER_T_BELOW == 30
    scores, cluster = _data(0, prompts=prompts, per=4)
    assert accuracy_inference(scores, clusters=cluster).method == expected
    cols = accuracy_columns(scores[:, None], np.ones((len(scores), 1), bool), clusters=cluster)
    assert cols.loc[0, "method"] == expected
    # independent verdicts stay binomial
    assert accuracy_inference(scores).method == "wilson"
