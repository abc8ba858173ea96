"""storyeval.bias.self_preference: the difference-in-differences of ratings (against humans or
another rater) and of verdicts, against statsmodels and hand computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from storyeval.bias import pairwise_self_preference, self_preference
from storyeval.bias.simulate import simulate_ratings, simulate_verdicts
from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.pairwise import verdicts_from_scores


def test_equals_dummy_regression_with_prompt_clusters():
    wide = simulate_ratings(6, 30, self_preference=0.4, seed=11)
    row = self_preference(wide, {"Judge-A": "sys-3"}, reference="human").iloc[0]
    e = wide["Judge-A"] - wide["human"]
    own = (wide.index.get_level_values("system") == "sys-3").astype(float)
    g = wide.index.get_level_values("prompt_id")
    fit = sm.OLS(e.to_numpy(), sm.add_constant(own)).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(g)}, use_t=True)
    n = len(e)
    assert row["estimate"] == pytest.approx(fit.params[1], abs=1e-12)
    # statsmodels' variance carries (N - 1) / (N - K) besides G / (G - 1)
    assert row["se"] * np.sqrt((n - 1) / (n - 2)) == pytest.approx(fit.bse[1], rel=1e-10)
    assert row["df"] == 29 and row["n_own"] == 30 and row["n_comparison_systems"] == 5
    # the gaps it reports are the two raw differences of means
    assert row["rater_gap"] - row["reference_gap"] == pytest.approx(row["estimate"])


def test_no_reference_is_the_raw_gap_with_prompt_clusters():
    # reference=None (``--reference none``): the regression of the rating itself on "own"
    wide = simulate_ratings(6, 30, self_preference=0.4, seed=13)
    row = self_preference(wide, {"Judge-A": "sys-2"}, reference=None).iloc[0]
    r = wide["Judge-A"]
    own = (wide.index.get_level_values("system") == "sys-2").astype(float)
    g = wide.index.get_level_values("prompt_id")
    fit = sm.OLS(r.to_numpy(), sm.add_constant(own)).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(g)}, use_t=True)
    n = len(r)
    assert row["estimate"] == pytest.approx(fit.params[1], abs=1e-12)
    assert row["se"] * np.sqrt((n - 1) / (n - 2)) == pytest.approx(fit.bse[1], rel=1e-10)
    assert row["reference"] == "none" and row["reference_gap"] == 0.0
    assert row["rater_gap"] == pytest.approx(row["estimate"])
    # renaming the systems or reordering the rows changes nothing
    shuffled = wide.sample(frac=1.0, random_state=1)
    again = self_preference(shuffled, {"Judge-A": "sys-2"}, reference=None).iloc[0]
    assert again["estimate"] == pytest.approx(row["estimate"], abs=1e-12)
    assert again["pvalue"] == pytest.approx(row["pvalue"], rel=1e-9)


def test_other_rater_reference_leaves_out_both_own_systems():
    wide = simulate_ratings(6, 25, self_preference=0.5, seed=12)
    table = self_preference(wide, {"Judge-A": "sys-3", "Judge-B": "sys-4"},
                            reference={"Judge-A": "Judge-B", "Judge-B": "Judge-A"})
    a = table.set_index("rater").loc["Judge-A"]
    systems = wide.index.get_level_values("system")
    e = wide["Judge-A"] - wide["Judge-B"]
    comp = ~systems.isin(["sys-3", "sys-4"])
    hand = e[systems == "sys-3"].mean() - e[comp].mean()
    assert a["estimate"] == pytest.approx(hand, abs=1e-12)
    assert a["n_comparison_systems"] == 4 and a["reference"] == "Judge-B"


def test_family_and_doc_example():
    idx = pd.MultiIndex.from_product([["A", "B", "C"], range(4)], names=["system", "prompt_id"])
    h = np.tile([3.0, 2.0, 4.0, 1.0], 3) + np.repeat([0.0, 1.0, 2.0], 4)
    r = h + np.repeat([0.5, 0.5, 0.0], 4) + [0.1, -0.1, 0, 0, 0, 0.2, 0, 0, 0, 0, 0, -0.2]
    wide = pd.DataFrame({"human": h, "judge": r}, index=idx)
    row = self_preference(wide, {"judge": ["A", "B"]}, reference="human").iloc[0]
    # own A, B: mean e = 0.5 + 0.2 / 8; comparison C: mean e = -0.2 / 4
    assert row["estimate"] == pytest.approx(0.525 + 0.05) and row["own_systems"] == "A, B"
    assert row["n_comparison_systems"] == 1


def test_input_errors():
    wide = simulate_ratings(4, 5, seed=1)
    with pytest.raises(InputError, match="not systems of the data"):
        self_preference(wide, {"Judge-A": "nope"}, reference="human")
    with pytest.raises(InputError, match="no column"):
        self_preference(wide, {"Judge-A": "sys-1"}, reference="humans")
    with pytest.raises(InputError, match="no reference declared"):
        self_preference(wide, {"Judge-A": "sys-1"}, reference={"Judge-B": "human"})


def test_pairwise_hand_case():
    # one own system X against Y (comparison); two prompts; the judge prefers X 3 times of 4,
    # the humans once of 2 (a tie counts half)
    v = pd.DataFrame({"prompt_id": [0, 0, 1, 1], "story_a": ["X/0", "X/0", "X/1", "X/1"],
                      "story_b": ["Y/0", "Y/0", "Y/1", "Y/1"], "dimension": "d",
                      "verdict": ["A", "A", "A", "B"], "order": ["AB", "BA", "AB", "BA"],
                      "judge": "J"})
    h = pd.DataFrame({"prompt_id": [0, 1], "story_a": ["Y/0", "X/1"], "story_b": ["X/0", "Y/1"],
                      "dimension": "d", "verdict": ["A", "same"], "order": "AB",
                      "judge": "human"})
    row = pairwise_self_preference(v, {"J": "X"}, reference=h).iloc[0]
    assert row["judge_win_rate"] == 0.75 and row["reference_win_rate"] == pytest.approx(0.25)
    assert row["estimate"] == pytest.approx(0.5)
    # per prompt: x = (1 - 0, 1 - 0) and (1 - 0.5, 0 - 0.5): cluster influences
    u = np.array([2 * (1 - 0.5), (0.5 - 0.5) + (-0.5 - 0.5)]) / 4
    assert row["se"] == pytest.approx(np.sqrt(2 * np.sum(u**2)))


def test_pairwise_matches_pointwise_difference_on_derived_verdicts():
    # verdicts derived from ratings: the pairwise estimate is the DiD of win rates
    wide = simulate_ratings(5, 20, self_preference=0.8, seed=3)
    judge = verdicts_from_scores(wide, "Judge-A", judge="Judge-A", dimension="q")
    human = verdicts_from_scores(wide, "human", judge="human", dimension="q")
    row = pairwise_self_preference(judge, {"Judge-A": "sys-2"}, reference=human).iloc[0]
    grid_r = wide["Judge-A"].unstack("system")
    grid_h = wide["human"].unstack("system")
    others = [c for c in grid_r.columns if c != "sys-2"]
    win_r = (grid_r[others].lt(grid_r["sys-2"], axis=0)).to_numpy().mean()
    win_h = (grid_h[others].lt(grid_h["sys-2"], axis=0)).to_numpy().mean()
    assert row["estimate"] == pytest.approx(win_r - win_h, abs=1e-12)
    assert row["n"] == 20 * 4 and row["estimate"] > 0


def test_pairwise_against_another_judge_and_planted_effect():
    jv, hv, _ = simulate_verdicts(6, 60, self_preference=1.0, seed=7)
    row = pairwise_self_preference(jv, {"Judge-A": "sys-3"}, reference=hv).iloc[0]
    assert row["ci_low"] > 0 and row["pvalue"] < 1e-4
    other = jv.assign(judge="Judge-B")
    both = pd.concat([jv, other], ignore_index=True)
    with pytest.warns(UndefinedStatisticWarning, match="standard error 0"):
        row = pairwise_self_preference(both, {"Judge-A": "sys-3"},
                                       reference="Judge-B").iloc[0]
    assert abs(row["estimate"]) < 1e-15 and np.isnan(row["pvalue"]) and row["reference"] == "Judge-B"
    with pytest.raises(InputError, match="reference judge"):
        pairwise_self_preference(jv, {"Judge-A": "sys-3"}, reference="Judge-Z")
