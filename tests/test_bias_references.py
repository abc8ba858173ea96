"""The pairwise bias estimates, their intervals and tests against statsmodels' cluster-robust
OLS on per-verdict (or per-pair) values computed here from the verdict tables with pandas:
first-position rate, net position flips, pairwise self-preference and the judge - human
difference of P(prefer longer)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from storyeval.bias import length_preference, pairwise_self_preference, position_bias
from storyeval.bias.simulate import simulate_verdicts


@pytest.fixture(scope="module")
def verdicts():
    return simulate_verdicts(6, 25, self_preference=0.4, length_bias=0.4, position_bias=0.6,
                             seed=11)


def _ols(y, groups, x=None):
    X = np.ones((len(y), 1)) if x is None else sm.add_constant(np.asarray(x, dtype=float))
    return sm.OLS(np.asarray(y, dtype=float), X).fit(
        cov_type="cluster", cov_kwds={"groups": np.asarray(groups)}, use_t=True)


def _check(row, fit, null=0.0, index=0, scale=1.0):
    assert row["estimate"] == pytest.approx(fit.params[index], abs=1e-12)
    assert row["se"] * scale == pytest.approx(fit.bse[index], rel=1e-9)
    test = fit.t_test((np.eye(len(fit.params))[index:index + 1], np.array([null])))
    assert row["df"] == row["n_clusters"] - 1
    assert row["t"] / scale == pytest.approx(float(np.squeeze(test.tvalue)), rel=1e-9)
    if scale == 1.0:
        assert row["pvalue"] == pytest.approx(float(test.pvalue), rel=1e-8)
        low, high = fit.conf_int()[index]
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-9)


def test_first_position_rate_and_net_flips(verdicts):
    jv, _, _ = verdicts
    t = position_bias(jv).set_index("estimand")
    decided = jv[jv["verdict"] != "same"]
    first_won = (decided["verdict"] == "A") == (decided["order"] == "AB")
    _check(t.loc["first-position rate"], _ols(first_won, decided["prompt_id"]), null=0.5)
    a_side = jv.assign(o=jv["verdict"].map({"A": 1, "B": -1, "same": 0}))
    wide = a_side.pivot_table(index=["prompt_id", "story_a", "story_b"], columns="order",
                              values="o").reset_index()
    net = (((wide["AB"] == 1) & (wide["BA"] == -1)).astype(float)
           - ((wide["AB"] == -1) & (wide["BA"] == 1)).astype(float))
    _check(t.loc["net position flips"], _ols(net, wide["prompt_id"]))


def test_pairwise_self_preference(verdicts):
    jv, hv, _ = verdicts
    row = pairwise_self_preference(jv, {"Judge-A": "sys-3"}, reference=hv).iloc[0]
    score = {"A": 1.0, "B": 0.0, "same": 0.5}   # 1: story a won

    def own_score(frame):
        s = frame["verdict"].map(score)
        return np.where(frame["system_a"] == "sys-3", s, 1 - s)

    mine = jv[(jv["system_a"] == "sys-3") | (jv["system_b"] == "sys-3")].copy()
    mine["w"] = own_score(mine)
    human = hv[(hv["system_a"] == "sys-3") | (hv["system_b"] == "sys-3")].copy()
    human["m"] = own_score(human)
    joined = mine.merge(human[["prompt_id", "story_a", "story_b", "m"]],
                        on=["prompt_id", "story_a", "story_b"])
    assert len(joined) == len(mine) == row["n"]
    _check(row, _ols(joined["w"] - joined["m"], joined["prompt_id"]))


def test_prefer_longer_difference_is_a_dummy_regression(verdicts):
    jv, hv, lengths = verdicts
    t = length_preference(jv, lengths, reference=hv).set_index("estimand")

    def units(frame, is_judge):
        la = frame["story_a"].map(lengths).to_numpy()
        lb = frame["story_b"].map(lengths).to_numpy()
        decided = (frame["verdict"] != "same").to_numpy() & (la != lb)
        a_won = (frame["verdict"] == "A").to_numpy()
        longer_won = np.where(la > lb, a_won, ~a_won)
        return pd.DataFrame({"y": longer_won[decided].astype(float), "judge": float(is_judge),
                             "prompt": frame["prompt_id"].to_numpy()[decided]})

    stacked = pd.concat([units(jv, True), units(hv, False)], ignore_index=True)
    fit = _ols(stacked["y"], stacked["prompt"], stacked["judge"])
    # statsmodels also multiplies the variance by (N - 1) / (N - K), K = 2
    n = len(stacked)
    _check(t.loc["difference"], fit, index=1, scale=np.sqrt((n - 1) / (n - 2)))
    judge_only = stacked[stacked["judge"] == 1]
    _check(t.loc["P(prefer longer)"], _ols(judge_only["y"], judge_only["prompt"]), null=0.5)
