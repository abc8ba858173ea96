"""storyeval.bias.length: P(prefer longer) with prompt-clustered tests, equal to `meta --length`
on HANNA ratings turned into verdicts; residual-length correlation; length-controlled tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.bias import (
    balanced_accuracy,
    length_controlled_win_rates,
    length_preference,
    residual_length_correlation,
)
from storyeval.bias.simulate import simulate_ratings, simulate_verdicts
from storyeval.cli import main
from storyeval.data import load_hanna
from storyeval.exceptions import InputError
from storyeval.meta.length import balance_length, length_controlled_win_rate
from storyeval.pairwise import verdicts_from_scores

LENGTH = "Text length ¤§"


@pytest.fixture(scope="module")
def hanna():
    wide = load_hanna(include_human_stories=False).wide()
    ids = [f"{s}/{p}" for s, p in wide.index]
    lengths = pd.Series(wide[LENGTH].to_numpy(), index=ids)
    return wide, lengths


@pytest.mark.filterwarnings("default::storyeval.exceptions.UndefinedStatisticWarning")
def test_prefer_longer_equals_meta_length_on_hanna(hanna, tmp_path, capsys):
    wide, lengths = hanna
    judge = verdicts_from_scores(wide, "Beluga-13B RE 1", judge="Beluga-13B RE 1",
                                 dimension="Relevance")
    human = verdicts_from_scores(wide, "Relevance", judge="humans")
    table = length_preference(judge, lengths, reference=human).set_index("estimand")
    out = tmp_path / "meta"
    assert main(["meta", "--metrics", "Beluga-13B 1", "--criteria", "Relevance", "--levels",
                 "overall", "--reference", "none", "--length", "Text length", "--out", str(out),
                 "--no-figures"]) == 0
    meta = pd.read_csv(out / "length_pairs.csv").set_index("rater")
    assert table.loc["P(prefer longer)", "estimate"] == pytest.approx(
        meta.loc["Beluga-13B RE 1", "prefer_longer"], abs=1e-12, rel=0)
    assert table.loc["reference P(prefer longer)", "estimate"] == pytest.approx(
        meta.loc["humans", "prefer_longer"], abs=1e-12, rel=0)
    assert table.loc["P(prefer longer)", "n"] == meta.loc["Beluga-13B RE 1", "n_unequal_length"]
    # the CLI on the same verdict files prints the same numbers
    judge.to_csv(tmp_path / "judge.csv", index=False)
    human.to_csv(tmp_path / "human.csv", index=False)
    lengths.rename("length").rename_axis("story_id").reset_index().to_csv(
        tmp_path / "lengths.csv", index=False)
    capsys.readouterr()
    assert main(["pairwise", "bias", str(tmp_path / "judge.csv"), "--reference",
                 str(tmp_path / "human.csv"), "--lengths", str(tmp_path / "lengths.csv"),
                 "--format", "json"]) == 0
    import json

    captured = capsys.readouterr()
    assert "no pair judged in both orders" in captured.err  # one order: a warning line
    printed = json.loads(captured.out)
    rows = {r["estimand"]: r for r in printed["length"]}
    assert rows["P(prefer longer)"]["estimate"] == pytest.approx(
        meta.loc["Beluga-13B RE 1", "prefer_longer"], abs=1e-12, rel=0)
    assert rows["difference"]["estimate"] == pytest.approx(
        meta.loc["Beluga-13B RE 1", "prefer_longer"] - meta.loc["humans", "prefer_longer"],
        abs=1e-12, rel=0)


def test_interval_is_cluster_robust_share():
    # hand case: two prompts, lengths 1 < 2 < 3; a judge that prefers the longer 3 of 4 times
    v = pd.DataFrame({"prompt_id": [0, 0, 1, 1, 2], "story_a": ["X/0", "X/0", "X/1", "Y/1", "X/2"],
                      "story_b": ["Y/0", "Z/0", "Y/1", "Z/1", "Y/2"], "dimension": "d",
                      "verdict": ["B", "B", "A", "B", "same"], "order": "AB"})
    lengths = {f"{s}/{p}": {"X": 1, "Y": 2, "Z": 3}[s] for s in "XYZ" for p in range(3)}
    row = length_preference(v, lengths).iloc[0]
    assert row["estimate"] == 0.75 and row["n"] == 4 and row["n_clusters"] == 2
    u = np.array([2 - 0.75 * 2, 1 - 0.75 * 2]) / 4
    se = np.sqrt(2 * np.sum(u**2))
    assert row["se"] == pytest.approx(se)
    assert row["pvalue"] == pytest.approx(2 * stats.t.sf(0.25 / se, 1))


def test_planted_length_bias_detected_and_null_not():
    jv, hv, lengths = simulate_verdicts(8, 60, length_bias=1.0, seed=3)
    t = length_preference(jv, lengths, reference=hv).set_index("estimand")
    assert t.loc["P(prefer longer)", "pvalue"] < 1e-6
    assert t.loc["difference", "ci_low"] > 0
    assert t.loc["reference P(prefer longer)", "ci_low"] < 0.5 < t.loc[
        "reference P(prefer longer)", "ci_high"]


def test_residual_length_correlation_matches_pearson():
    wide = simulate_ratings(6, 30, length_effect=0.5, seed=2)
    res = residual_length_correlation(wide, "Judge-A", "human", "length")
    r = stats.pearsonr(wide["Judge-A"] - wide["human"], wide["length"]).statistic
    assert res["estimate"] == pytest.approx(r, abs=1e-12)
    assert res["pvalue"] < 1e-6 and res["n_clusters"] == 30
    with pytest.raises(InputError, match="no column"):
        residual_length_correlation(wide, "nope", "human", "length")


def test_length_controlled_win_rates_reuse_meta_function():
    jv, _, lengths = simulate_verdicts(4, 30, length_bias=1.0, seed=4)
    table = length_controlled_win_rates(jv, lengths).set_index("system")
    # sys-0 oriented by hand, through the existing function
    lo = jv[jv["system_a"] == "sys-0"]
    v = np.where(lo["verdict"] == "A", 1, np.where(lo["verdict"] == "B", -1, 0))
    expected = length_controlled_win_rate(v, lengths[lo["story_a"]].to_numpy(),
                                          lengths[lo["story_b"]].to_numpy())
    assert table.loc["sys-0", "lc_win_rate"] == pytest.approx(expected["lc_win_rate"],
                                                              rel=1e-9)
    assert table.loc["sys-0", "win_rate"] == pytest.approx(expected["win_rate"], rel=1e-12)
    # the interval resamples sys-0's prompts (the same call with its prompts as clusters)
    boot = length_controlled_win_rate(v, lengths[lo["story_a"]].to_numpy(),
                                      lengths[lo["story_b"]].to_numpy(),
                                      clusters=lo["prompt_id"].astype(str).to_numpy(),
                                      n_resamples=1000, random_state=0)
    for col in ("lc_standard_error", "lc_ci_low", "lc_ci_high"):
        assert table.loc["sys-0", col] == pytest.approx(boot[col], rel=1e-9)
    assert (table["lc_ci_low"] < table["lc_win_rate"]).all()
    assert (table["lc_win_rate"] < table["lc_ci_high"]).all()


def test_balanced_accuracy_uses_balance_length():
    jv, hv, lengths = simulate_verdicts(5, 40, length_bias=1.0, seed=5)
    row = balanced_accuracy(jv, hv, lengths, random_state=0).iloc[0]
    assert row["reference_prefer_longer_balanced"] == pytest.approx(0.5)
    assert row["n_kept"] < row["n_pairs"] and row["seed"] == 0
    # the same subset as balance_length on the humans' decided pairs (sorted by pair key)
    from storyeval.bias._verdicts import PAIR, keyed

    k = keyed(hv)
    k["la"] = lengths[k["lo"]].to_numpy()
    k["lb"] = lengths[k["hi"]].to_numpy()
    pref = k.groupby(PAIR, sort=True).agg(o=("outcome", "sum"), la=("la", "first"),
                                          lb=("lb", "first"))
    pref = pref[np.sign(pref["o"]) != 0]
    bal = balance_length(np.sign(pref["o"]).to_numpy(), pref["la"], pref["lb"], random_state=0)
    assert row["n_kept"] == int(bal.keep.sum())


def test_missing_length_is_an_error():
    jv, _, lengths = simulate_verdicts(3, 5, seed=1)
    with pytest.raises(InputError, match="no length for story"):
        length_preference(jv, lengths.iloc[1:])
