"""storyeval.bias.position: first-position rate, flip rate and net position flips."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.bias import position_bias
from storyeval.bias.simulate import simulate_verdicts
from storyeval.exceptions import UndefinedStatisticWarning
from storyeval.pairwise import position_consistency


def test_agrees_with_position_consistency():
    jv, _, _ = simulate_verdicts(6, 30, position_bias=0.8, seed=2)
    t = position_bias(jv).set_index("estimand")
    ref = position_consistency(jv).iloc[0]
    assert t.loc["first-position rate", "estimate"] == pytest.approx(
        ref["first_position_win_rate_decisive"], abs=1e-12)
    assert t.loc["flip rate", "estimate"] == pytest.approx(1 - ref["consistency"], abs=1e-12)
    assert t.loc["flip rate", "n"] == ref["n_pairs_both_orders"]
    assert t.loc["first-position rate", "pvalue"] < 1e-3
    assert np.isnan(t.loc["flip rate", "pvalue"]) and "no test" in t.loc["flip rate", "reason"]


def test_hand_counted_net_flips():
    v = pd.DataFrame({"prompt_id": [0, 0, 1, 1, 2, 2],
                      "story_a": ["X/0", "X/0", "X/1", "X/1", "X/2", "X/2"],
                      "story_b": ["Y/0", "Y/0", "Y/1", "Y/1", "Y/2", "Y/2"], "dimension": "d",
                      "verdict": ["A", "B", "B", "A", "A", "A"],
                      "order": ["AB", "BA", "AB", "BA", "AB", "BA"]})
    t = position_bias(v).set_index("estimand")
    # prompt 0: first won twice (+1); prompt 1: second won twice (-1); prompt 2: consistent
    assert t.loc["net position flips", "estimate"] == 0.0
    assert t.loc["flip rate", "estimate"] == pytest.approx(2 / 3)
    assert t.loc["first-position rate", "estimate"] == pytest.approx(3 / 6)


def test_one_order_only():
    v = pd.DataFrame({"prompt_id": [0, 1, 2], "story_a": ["X/0", "X/1", "X/2"],
                      "story_b": ["Y/0", "Y/1", "Y/2"], "dimension": "d",
                      "verdict": ["A", "A", "B"], "order": "AB"})
    with pytest.warns(UndefinedStatisticWarning, match="both orders"):
        t = position_bias(v).set_index("estimand")
    assert "confounded" in t.loc["first-position rate", "reason"]
    assert np.isnan(t.loc["net position flips", "estimate"])
