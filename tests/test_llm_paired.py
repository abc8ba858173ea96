"""By-prompt paired system differences against scipy's paired t-test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.exceptions import InputError
from storyeval.llm.paired import judge_systems_paired


def _scores(seed=0):
    g = np.random.default_rng(seed)
    prompt = g.normal(0, 1, 30)  # prompt difficulty shared by all systems
    rows = []
    for k, sys_ in enumerate(["A", "B", "C"]):
        for p in range(30):
            if sys_ == "C" and p == 5:
                continue  # one missing story: that prompt drops out of C's pairs
            rows.append({"system": sys_, "prompt_id": p, "measure": "M1",
                         "value": 3 + 0.3 * k + prompt[p] + g.normal(0, 0.3)})
    return pd.DataFrame(rows)


def test_equals_scipy_ttest_rel():
    s = _scores()
    res = judge_systems_paired(s, confidence_level=0.9)
    assert len(res) == 3
    for row in res.itertuples():
        a = s[s.system == row.system_a].set_index("prompt_id")["value"]
        b = s[s.system == row.system_b].set_index("prompt_id")["value"]
        both = a.index.intersection(b.index)
        ref = stats.ttest_rel(a[both], b[both])
        assert row.pvalue == pytest.approx(ref.pvalue, rel=1e-10)
        assert row.statistic == pytest.approx(ref.statistic, rel=1e-10)
        ci = ref.confidence_interval(0.9)
        assert (row.ci_low, row.ci_high) == pytest.approx((ci.low, ci.high), rel=1e-10)
        assert row.n_prompts == len(both)
    np.testing.assert_allclose(res["pvalue_bh"], stats.false_discovery_control(res["pvalue"]))
    assert (res["mean_difference"] > 0).all()  # system_a is the one with the higher mean


def test_duplicate_story_is_refused():
    s = _scores()
    with pytest.raises(InputError, match="repeats"):
        judge_systems_paired(pd.concat([s, s.iloc[[0]]]))


def test_judge_systems_paired_from_ratings():
    from storyeval.llm.outputs import judge_systems

    g = np.random.default_rng(4)
    rows = []
    for sys_, shift in (("A", 0.0), ("B", 0.5)):
        for p in range(8):
            for t in range(2):
                rows.append({"story_id": f"{sys_}/{p}", "system": sys_, "prompt_id": p,
                             "model": "M", "eval_prompt": 1, "criterion": "Relevance",
                             "try": t, "rating": float(g.integers(1, 6)) + shift,
                             "status": "ok"})
    r = pd.DataFrame(rows)
    res = judge_systems(r, paired=True)
    means = r.groupby(["system", "prompt_id"])["rating"].mean().unstack(0)
    ref = stats.ttest_rel(means["B"], means["A"]) if means["B"].mean() > means["A"].mean() \
        else stats.ttest_rel(means["A"], means["B"])
    assert res["measure"].tolist() == ["M RE 1"]
    assert res["pvalue"].iloc[0] == pytest.approx(ref.pvalue, rel=1e-10)
