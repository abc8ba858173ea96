"""Ratings -> scores, failure rates, self-consistency and the judge-of-systems table."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.llm.outputs import (
    failure_rates,
    judge_systems,
    llm_catalogue,
    self_consistency,
    to_scores,
)


def _ratings(values, statuses=None, *, model="M", ep=1, criterion="Relevance", systems=None):
    """values[story][try] -> tidy ratings rows."""
    rows = []
    for i, tries in enumerate(values):
        system = systems[i] if systems else "A"
        for t, v in enumerate(tries):
            st = statuses[i][t] if statuses else ("ok" if not np.isnan(v) else "no_number")
            rows.append({"story_id": f"{system}/{i}", "system": system, "prompt_id": i,
                         "model": model, "eval_prompt": ep, "criterion": criterion, "try": t,
                         "rating": v if st == "ok" else np.nan, "status": st})
    return pd.DataFrame(rows)


def test_to_scores_hand_worked():
    nan = np.nan
    r = _ratings([[4, 5, 3], [2, nan, nan], [nan, nan, nan]],
                 [["ok"] * 3, ["ok", "no_number", "error"], ["ambiguous", "out_of_range", "error"]])
    s = to_scores(r)
    assert s["measure"].unique().tolist() == ["M RE 1"]
    # (4+5+3)/3 = 4; 2 (failed tries left out); no usable try -> NaN with a reason
    np.testing.assert_array_equal(s["value"], [4.0, 2.0, nan])
    assert s["n_ok"].tolist() == [3, 1, 0] and s["n_tries"].tolist() == [3, 3, 3]
    why = "no usable rating in any try (ambiguous, error, out_of_range)"
    assert s["reason"].tolist() == ["", "", why]
    m = to_scores(r, on_unparsed="midpoint")
    # paper: parse failures count as 3; request errors are not imputed
    # story 1: (2 + 3) / 2 = 2.5 ; story 2: (3 + 3) / 2 = 3
    np.testing.assert_array_equal(m["value"], [4.0, 2.5, 3.0])
    assert m["n_imputed"].tolist() == [0, 1, 2]


def test_to_scores_avg_and_names():
    a = _ratings([[4, 4], [2, 3]], criterion="Relevance")
    b = _ratings([[2, 2], [np.nan, np.nan]], criterion="Surprise")
    s = to_scores(pd.concat([a, b], ignore_index=True))
    wide = s.pivot(index="story_id", columns="measure", values="value")
    assert list(wide.columns) == ["M AVG 1", "M RE 1", "M SU 1"]
    np.testing.assert_array_equal(wide["M AVG 1"], [3.0, np.nan])  # (4+2)/2 ; SU missing
    assert not s.duplicated(["story_id", "measure"]).any()
    assert to_scores(a)["measure"].unique().tolist() == ["M RE 1"]  # one criterion: no AVG


def test_failure_rates():
    r = _ratings([[4, np.nan], [2, np.nan]], [["ok", "no_number"], ["ok", "error"]])
    f = failure_rates(r)
    row = f.iloc[0]
    assert (row["n"], row["n_ok"], row["n_no_number"], row["n_error"]) == (4, 2, 1, 1)
    assert row["failure_rate"] == pytest.approx(0.5)


def test_judge_systems_matches_scipy_t_interval():
    rng = np.random.default_rng(3)
    vals = rng.integers(1, 6, size=(12, 3)).astype(float)
    systems = ["A"] * 6 + ["B"] * 6
    r = _ratings(vals.tolist(), systems=systems)
    j = judge_systems(r, confidence_level=0.9)
    for system, rows in (("A", slice(0, 6)), ("B", slice(6, 12))):
        story_means = vals[rows].mean(axis=1)
        ref = stats.t.interval(0.9, len(story_means) - 1, loc=story_means.mean(),
                               scale=stats.sem(story_means))
        got = j[j["system"] == system].iloc[0]
        assert got["mean"] == pytest.approx(story_means.mean(), abs=1e-12)
        assert (got["ci_low"], got["ci_high"]) == pytest.approx(ref, abs=1e-12)
        assert got["n"] == 6
    assert j["mean"].is_monotonic_decreasing  # ranked


def test_judge_systems_undefined_interval_warns():
    r = _ratings([[3, 4]], systems=["A"])
    with pytest.warns(UndefinedStatisticWarning):
        j = judge_systems(r)
    assert np.isnan(j["ci_low"].iloc[0]) and j["mean"].iloc[0] == 3.5


def test_self_consistency_matches_pingouin():
    pg = pytest.importorskip("pingouin")
    rng = np.random.default_rng(0)
    base = rng.integers(1, 6, size=20)
    vals = np.clip(base[:, None] + rng.integers(-1, 2, size=(20, 3)), 1, 5).astype(float)
    vals[4, 1] = np.nan  # a failed try: that story is left out of its group
    r = _ratings(vals.tolist())
    res = self_consistency(r)
    assert res.loc[0, "n_items_omitted"] == 1
    keep = ~np.isnan(vals).any(axis=1)
    long = pd.DataFrame([(i, t, vals[i, t]) for i in np.flatnonzero(keep) for t in range(3)],
                        columns=["s", "t", "y"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = pg.intraclass_corr(long, targets="s", raters="t", ratings="y").set_index("Type")
    row = "ICC(A,k)" if "ICC(A,k)" in ref.index else "ICC2k"
    assert res.loc[0, "icc2k"] == pytest.approx(ref.loc[row, "ICC"], abs=1e-10)
    assert (res.loc[0, "model"], res.loc[0, "eval_prompt"], res.loc[0, "criterion"]) == \
        ("M", 1, "Relevance")


def test_catalogue_rows():
    a = _ratings([[4, 4]], criterion="Relevance")
    b = _ratings([[2, 2]], criterion="Surprise", ep=2)
    r = pd.concat([a, b], ignore_index=True)
    cat = llm_catalogue(to_scores(r), r)
    assert set(cat["measure"]) == {"M RE 1", "M SU 2"}
    assert set(cat["rater"]) == {"M 1", "M 2"} and set(cat["kind"]) == {"llm_rater"}


def test_bad_tables():
    r = _ratings([[4, 4]])
    with pytest.raises(InputError, match="column"):
        to_scores(r.drop(columns="status"))
    with pytest.raises(InputError, match="on_unparsed"):
        to_scores(r, on_unparsed="zero")
    bad = r.copy()
    bad.loc[0, "status"] = "no_number"
    with pytest.raises(InputError, match="has a rating"):
        to_scores(bad)
    with pytest.raises(InputError, match="repeats"):
        to_scores(pd.concat([r, r]))
    with pytest.raises(InputError, match="2 tries"):
        self_consistency(_ratings([[4], [3]]))
