"""LitBench's human-study statistics against statsmodels: pooled per-vote accuracy clustered by
pair, explanation features vs correctness (cluster-robust OLS, BH); the best-of-K template
accuracy with the choice accounted for."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sm = pytest.importorskip("statsmodels.api")
from statsmodels.stats.multitest import multipletests  # noqa: E402

from storyeval.exceptions import InputError  # noqa: E402
from storyeval.pairwise.human_study import (  # noqa: E402
    cluster_ols,
    explanation_features,
    keyword_indicators,
    pooled_vote_accuracy,
)
from storyeval.pairwise.selection import selected_accuracy  # noqa: E402


def _votes(n_pairs=40, seed=0):
    """10-13 votes per pair, correctness sharing the pair's difficulty."""
    rng = np.random.default_rng(seed)
    m = rng.integers(10, 14, n_pairs)
    pair = np.repeat(np.arange(n_pairs), m)
    p = np.clip(0.6 + rng.normal(0, 0.2, n_pairs), 0.02, 0.98)[pair]
    return (rng.random(len(pair)) < p).astype(float), pair


def test_pooled_vote_accuracy_equals_statsmodels():
    y, pair = _votes()
    res = pooled_vote_accuracy(y, pair)
    fit = sm.OLS(y, np.ones((len(y), 1))).fit(cov_type="cluster", cov_kwds={"groups": pair},
                                                use_t=True)
    lo, hi = fit.conf_int(0.05)[0]
    assert res.statistic == pytest.approx(fit.params[0], rel=1e-12)
    assert (res.ci_low, res.ci_high) == pytest.approx((lo, hi), rel=1e-9)
    t = (fit.params[0] - 0.5) / fit.bse[0]
    from scipy import stats

    assert res.pvalue == pytest.approx(2 * stats.t.sf(abs(t), 39), rel=1e-9)
    assert res.n_clusters == 40 and res.method == "cluster-t"


def test_clustered_interval_is_wider_than_binomial():
    y, pair = _votes(seed=3)
    res = pooled_vote_accuracy(y, pair)
    a, n = y.mean(), len(y)
    binom_half = 1.96 * np.sqrt(a * (1 - a) / n)
    assert (res.ci_high - res.ci_low) / 2 > binom_half  # votes of one pair share its difficulty


def _explained(seed=0, n_pairs=50):
    y, pair = _votes(n_pairs, seed)
    rng = np.random.default_rng(seed + 1)
    words = np.array(["the plot twist works", "nice style", "the characters feel real",
                      "I liked it", "plot and characters both"])
    texts = words[rng.integers(0, len(words), len(y))]
    return y, pair, texts


@pytest.mark.parametrize("model", ["marginal", "joint"])
def test_explanation_features_equal_statsmodels(model):
    y, pair, texts = _explained()
    feats = keyword_indicators(texts, {"plot": ["plot", "twist"], "character": ["characters"],
                                       "style": ["style", "prose"]})
    res = explanation_features(y, feats, pair, model=model)
    pvals = []
    for j, name in enumerate(feats.columns):
        X = (np.column_stack([np.ones(len(y)), feats.to_numpy(float)]) if model == "joint"
             else np.column_stack([np.ones(len(y)), feats[name].to_numpy(float)]))
        col = j + 1 if model == "joint" else 1
        fit = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": pair}, use_t=True)
        row = res.iloc[j]
        assert row["effect"] == pytest.approx(fit.params[col], rel=1e-10, abs=1e-12)
        assert row["se"] == pytest.approx(fit.bse[col], rel=1e-9)
        assert row["pvalue"] == pytest.approx(fit.pvalues[col], rel=1e-8)
        lo, hi = fit.conf_int(0.05)[col]
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((lo, hi), rel=1e-9)
        pvals.append(fit.pvalues[col])
    np.testing.assert_allclose(res["p_adjusted"], multipletests(pvals, method="fdr_bh")[1],
                               rtol=1e-10)
    if model == "marginal":  # the slope is the difference of accuracies
        row = res.set_index("feature").loc["plot"]
        assert row["effect"] == pytest.approx(row["accuracy_with"] - row["accuracy_without"])


def test_keyword_indicators_whole_words():
    f = keyword_indicators(["The Plot thickens", "plotting", "no"], {"plot": ["plot"]})
    assert f["plot"].tolist() == [1, 0, 0]


def test_rank_deficient_features_are_refused():
    y, pair = _votes(10)
    with pytest.raises(InputError, match="rank-deficient"):
        explanation_features(y, pd.DataFrame({"all": np.ones(len(y))}), pair)
    with pytest.raises(InputError, match="0/1"):
        explanation_features(y, pd.DataFrame({"x": np.full(len(y), 2.0)}), pair)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_cluster_ols_relabelling_and_reordering(seed):
    y, pair = _votes(12, seed)
    X = np.column_stack([np.ones(len(y)), np.random.default_rng(seed).random(len(y)) < 0.5])
    b, V, g = cluster_ols(X, y, pair)
    perm = np.random.default_rng(seed + 7).permutation(len(y))
    b2, V2, _ = cluster_ols(X[perm], y[perm], (pair * 7 + 3)[perm])
    np.testing.assert_allclose(b, b2, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(V, V2, rtol=1e-8, atol=1e-14)


def test_selected_accuracy_methods():
    rng = np.random.default_rng(0)
    clusters = np.repeat(np.arange(40), 5)
    s = (rng.random((200, 5)) < np.array([0.55, 0.6, 0.62, 0.58, 0.7])).astype(float)
    naive = selected_accuracy(s, clusters, method="naive")
    maxt = selected_accuracy(s, clusters, method="max-t")
    split = selected_accuracy(s, clusters, method="split", random_state=1)
    for r in (naive, maxt, split):
        assert r["selected"].sum() == 1
    sel = maxt[maxt["selected"]].iloc[0]
    nsel = naive[naive["selected"]].iloc[0]
    assert sel["template"] == nsel["template"] == "template 5"
    # the max over five templates needs a larger critical value than one t quantile
    assert sel["critical_value"] > nsel["critical_value"]
    assert sel["ci_high"] - sel["ci_low"] > nsel["ci_high"] - nsel["ci_low"]
    again = selected_accuracy(s, clusters, method="split", random_state=1)
    pd.testing.assert_frame_equal(split, again)  # seeded
    # naive equals the cluster-t of the best column
    from storyeval.pairwise.inference import accuracy_inference

    ref = accuracy_inference(s[:, 4], clusters=clusters, method="cluster-t")
    assert (nsel["ci_low"], nsel["ci_high"]) == pytest.approx((ref.ci_low, ref.ci_high))


def test_selected_accuracy_renaming_templates_changes_nothing():
    rng = np.random.default_rng(1)
    clusters = np.repeat(np.arange(30), 4)
    s = (rng.random((120, 4)) < 0.6).astype(float)
    a = selected_accuracy(s, clusters, random_state=3)
    perm = [2, 0, 3, 1]
    b = selected_accuracy(s[:, perm], clusters, names=[f"template {j + 1}" for j in perm],
                          random_state=3)
    ra, rb = a[a["selected"]].iloc[0], b[b["selected"]].iloc[0]
    assert ra["template"] == rb["template"]
    assert ra["ci_low"] == pytest.approx(rb["ci_low"]) and ra["pvalue"] == rb["pvalue"]


def _votes_file(tmp_path, seed=0):
    y, pair, texts = _explained(seed)
    voter = pd.Series(pair).groupby(pair).cumcount().to_numpy()
    df = pd.DataFrame({"pair": pair, "voter": voter, "correct": y.astype(int),
                       "explanation": texts})
    path = tmp_path / "votes.csv"
    df.to_csv(path, index=False)
    return path, df


def test_cli_votes_equals_the_library(tmp_path, capsys):
    import io
    import json

    from storyeval.cli import main

    path, df = _votes_file(tmp_path)
    kw = tmp_path / "kw.json"
    kw.write_text(json.dumps({"plot": ["plot", "twist"], "character": ["characters"]}))
    assert main(["pairwise", "votes", "--votes", str(path), "--keywords", str(kw),
                 "--format", "csv"]) == 0
    pooled_text, feat_text = capsys.readouterr().out.split("\n\n", 1)
    pooled = pd.read_csv(io.StringIO(pooled_text))
    ref = pooled_vote_accuracy(df["correct"].to_numpy(float), df["pair"].to_numpy())
    assert pooled["accuracy"].iloc[0] == pytest.approx(ref.statistic)
    assert pooled["ci_low"].iloc[0] == pytest.approx(ref.ci_low)
    feats = pd.read_csv(io.StringIO(feat_text))
    lib = explanation_features(df["correct"].to_numpy(float), keyword_indicators(
        df["explanation"], {"plot": ["plot", "twist"], "character": ["characters"]}),
        df["pair"].to_numpy())
    np.testing.assert_allclose(feats["p_adjusted"], lib["p_adjusted"], rtol=1e-9)


def test_cli_select_equals_the_library(tmp_path, capsys):
    import io

    from storyeval.cli import main

    rng = np.random.default_rng(0)
    clusters = np.repeat(np.arange(30), 4)
    s = (rng.random((120, 3)) < [0.6, 0.65, 0.55]).astype(int)
    rows = [(f"u{i}", f"c{clusters[i]}", f"T{k}", s[i, k]) for i in range(120) for k in range(3)]
    path = tmp_path / "v.csv"
    pd.DataFrame(rows, columns=["unit", "cluster", "template", "correct"]).to_csv(path,
                                                                                  index=False)
    assert main(["pairwise", "select", "--verdicts", str(path), "--format", "csv"]) == 0
    got = pd.read_csv(io.StringIO(capsys.readouterr().out))
    # the CLI orders units by id; the clusters are the same sets of units
    order = np.argsort([f"u{i}" for i in range(120)])
    lib = selected_accuracy(s[order].astype(float), clusters[order], names=["T0", "T1", "T2"])
    sel, ref = got[got["selected"]].iloc[0], lib[lib["selected"]].iloc[0]
    assert sel["template"] == ref["template"]
    assert sel["ci_low"] == pytest.approx(ref["ci_low"]) and got["seed"].iloc[0] == 0


@pytest.mark.parametrize("damage", ["empty", "header_only", "cut", "duplicate", "bad_value"])
@pytest.mark.parametrize("command", ["votes", "select"])
def test_cli_damaged_files(tmp_path, capsys, damage, command):
    from storyeval.cli import main

    if command == "votes":
        lines = ["pair,voter,correct", "p1,v1,1", "p1,v2,0", "p2,v1,1", "p2,v2,1"]
    else:
        lines = ["unit,cluster,template,correct", "u1,c1,A,1", "u1,c1,B,0", "u2,c2,A,1",
                 "u2,c2,B,1"]
    if damage == "empty":
        lines = []
    elif damage == "header_only":
        lines = lines[:1]
    elif damage == "cut":
        lines = lines[:3] + [lines[3].rsplit(",", 1)[0]]
    elif damage == "duplicate":
        lines = lines + lines[1:2]
    else:
        lines[2] = lines[2].rsplit(",", 1)[0] + ",2"
    path = tmp_path / "f.csv"
    path.write_text("\n".join(lines) + ("\n" if lines else ""))
    flag = "--votes" if command == "votes" else "--verdicts"
    assert main(["pairwise", command, flag, str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0]
