"""storyeval.bias.leniency: offset and MAE with prompt-clustered intervals; scale use."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from storyeval.bias import leniency, scale_use
from storyeval.bias.simulate import simulate_ratings
from storyeval.exceptions import InputError


def test_offset_and_mae_equal_cluster_robust_means():
    wide = simulate_ratings(5, 30, offset=0.4, seed=4)
    t = leniency(wide, [("Judge-A", "human")]).set_index("estimand")
    d = (wide["Judge-A"] - wide["human"]).to_numpy()
    g = np.asarray(wide.index.get_level_values("prompt_id"))
    for name, y in (("offset", d), ("MAE", np.abs(d))):
        fit = sm.OLS(y, np.ones((len(y), 1))).fit(cov_type="cluster", cov_kwds={"groups": g},
                                                 use_t=True)
        assert t.loc[name, "estimate"] == pytest.approx(fit.params[0], abs=1e-12)
        assert t.loc[name, "se"] == pytest.approx(fit.bse[0], rel=1e-10)
        if name == "offset":
            assert t.loc[name, "pvalue"] == pytest.approx(fit.pvalues[0], rel=1e-8)
    assert np.isnan(t.loc["MAE", "pvalue"]) and t.loc["offset", "ci_low"] > 0


def test_scale_use_hand_counts():
    idx = pd.MultiIndex.from_product([["A"], range(4)], names=["system", "prompt_id"])
    wide = pd.DataFrame({"r": [1.0, 2.0, 2.0, 4.6], "h1": [1.0, 1.0, 5.0, np.nan]}, index=idx)
    t = scale_use(wide, {"rater": ["r"], "humans": ["h1"]})
    r = t[t["label"] == "rater"].set_index("point")
    assert r.loc[2.0, "count"] == 2 and r.loc[5.0, "count"] == 1 and r.loc[3.0, "share"] == 0
    assert r["rounded"].iloc[0] == 1 and r["n"].iloc[0] == 4
    h = t[t["label"] == "humans"].set_index("point")
    assert h.loc[1.0, "share"] == pytest.approx(2 / 3) and h["n"].iloc[0] == 3
    with pytest.raises(InputError, match="no column"):
        scale_use(wide, {"x": ["nope"]})
