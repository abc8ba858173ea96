"""Tests of the human baseline (upper bound and leave-one-out), against scipy and the paper."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.data.criteria import CRITERIA
from storyeval.data.hanna import hanna_annotator_columns
from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.meta.baseline import human_baseline


def test_paper_human_baseline(hanna_generation_wide):
    wide = hanna_generation_wide
    ann, loo, means = hanna_annotator_columns()
    out = human_baseline(wide, ann, loo_columns=loo, mean_columns=means,
                         levels=["overall", "system"])
    assert len(out) == 6 * 2 * 2
    ub = out[out["variant"] == "upper_bound"].groupby("level")["value"].mean()
    # Chhun et al. (2024), Section 5.1: human annotators "averaging correlations of 0.73" at the
    # system level (Kendall, 10 generation systems); scipy on the same data gives 0.7291.
    assert round(ub["system"], 2) == 0.73
    assert ub["system"] == pytest.approx(0.7291, abs=5e-5)
    # overall-level upper bound, scipy.stats.kendalltau on the 960 stories: 0.4772
    assert round(ub["overall"], 3) == 0.477
    assert set(out["n_annotators"]) == {3}
    assert set(out.loc[out["level"] == "system", "n"]) == {10}
    assert set(out.loc[out["level"] == "overall", "n"]) == {960}


def test_matches_scipy_per_annotator(hanna_generation_wide):
    wide = hanna_generation_wide
    ann, loo, means = hanna_annotator_columns(["Empathy"])
    out = human_baseline(wide, ann, loo_columns=loo, mean_columns=means, levels="system")
    sys_means = wide.groupby(level="system").mean()
    cols = ann["Empathy"]
    ub = np.mean([stats.kendalltau(sys_means[c], sys_means["Empathy"]).statistic for c in cols])
    lo = np.mean([stats.kendalltau(sys_means[c], sys_means[other]).statistic
                  for c, other in zip(cols, loo["Empathy"])])
    got = out.set_index("variant")["value"]
    assert got["upper_bound"] == pytest.approx(ub, abs=1e-12)
    assert got["leave_one_out"] == pytest.approx(lo, abs=1e-12)


def test_computed_means_equal_hanna_columns(hanna_generation_wide):
    # HANNA's criterion columns are the annotators' mean and "Human Avg i" the mean of the two
    # others (SOURCE.md); computing them must give the same baseline.
    wide = hanna_generation_wide
    ann, loo, means = hanna_annotator_columns(["Coherence", "SU"])
    given = human_baseline(wide, ann, loo_columns=loo, mean_columns=means, method="spearman")
    computed = human_baseline(wide, ann, method="spearman")
    np.testing.assert_allclose(given["value"], computed["value"], rtol=0, atol=1e-12)
    assert list(given["criterion"].unique()) == ["Coherence", "Surprise"]
    assert list(given.columns) == ["criterion", "level", "coefficient", "variant", "value", "n",
                                   "n_groups", "n_annotators", "reason"]
    prompt = given[given["level"] == "prompt"]
    assert (prompt["n"] == 10).all() and (prompt["n_groups"] <= 96).all()


def _toy(rng, n_systems=5, n_prompts=6):
    idx = pd.MultiIndex.from_product([[f"s{i}" for i in range(n_systems)], range(n_prompts)],
                                     names=["system", "prompt_id"])
    return pd.DataFrame({f"a{i}": rng.integers(1, 6, len(idx)).astype(float) for i in range(4)},
                        index=idx)


@pytest.mark.parametrize("method", ["kendall_b", "pearson"])
def test_four_annotators_by_hand(method):
    rng = np.random.default_rng(3)
    wide = _toy(rng)
    cols = ["a0", "a1", "a2", "a3"]
    out = human_baseline(wide, {"Q": cols}, levels="overall", method=method)
    ref = {"kendall_b": lambda a, b: stats.kendalltau(a, b).statistic,
           "pearson": lambda a, b: stats.pearsonr(a, b).statistic}[method]
    mean = wide[cols].mean(axis=1)
    ub = np.mean([ref(wide[c], mean) for c in cols])
    lo = np.mean([ref(wide[c], wide[[o for o in cols if o != c]].mean(axis=1)) for c in cols])
    got = out.set_index("variant")["value"]
    assert got["upper_bound"] == pytest.approx(ub, abs=1e-12)
    assert got["leave_one_out"] == pytest.approx(lo, abs=1e-12)
    assert (out["n_annotators"] == 4).all() and (out["n"] == 30).all()


def test_missing_ratings_omit():
    rng = np.random.default_rng(5)
    wide = _toy(rng)
    wide.iloc[2, 0] = np.nan
    with pytest.raises(InputError, match=r"column 'a0' at story \('s0', 2\)"):
        human_baseline(wide, {"Q": ["a0", "a1", "a2"]})
    out = human_baseline(wide, {"Q": ["a0", "a1", "a2"]}, nan_policy="omit", levels="overall",
                         variants="upper_bound")
    mean = wide[["a0", "a1", "a2"]].mean(axis=1)  # mean of the available annotators
    keep = wide["a0"].notna()
    ref = np.mean([stats.kendalltau(wide["a0"][keep], mean[keep]).statistic,
                   stats.kendalltau(wide["a1"], mean).statistic,
                   stats.kendalltau(wide["a2"], mean).statistic])
    assert out["value"].iloc[0] == pytest.approx(ref, abs=1e-12)
    assert out["n"].iloc[0] == 29


def test_bad_input():
    rng = np.random.default_rng(0)
    wide = _toy(rng)
    with pytest.raises(InputError, match="at least two annotator columns"):
        human_baseline(wide, {"Q": ["a0"]})
    with pytest.raises(InputError, match=r"annotators\['Q'\]: column\(s\) not in the score table"):
        human_baseline(wide, {"Q": ["a0", "zz"]})
    with pytest.raises(InputError, match=r"loo_columns\['Q'\] has 1 column"):
        human_baseline(wide, {"Q": ["a0", "a1"]}, loo_columns={"Q": ["a2"]})
    with pytest.raises(InputError, match="unknown variant"):
        human_baseline(wide, {"Q": ["a0", "a1"]}, variants="lower_bound")
    with pytest.raises(InputError, match="level must be one of"):
        human_baseline(wide, {"Q": ["a0", "a1"]}, levels="story")
    with pytest.raises(InputError, match="non-empty mapping"):
        human_baseline(wide, {})
    with pytest.raises(InputError, match="unknown criterion"):
        hanna_annotator_columns(["Beauty"])
    assert len(hanna_annotator_columns()[0]) == len(CRITERIA)


def test_annotators_with_one_rating_are_left_out_with_a_stated_count():
    """A crowd worker who rated one story has no coefficient: the baseline averages the other
    annotators (checked against scipy) and says how many it left out, instead of NaN."""
    import warnings

    from scipy.stats import kendalltau

    from storyeval.exceptions import UndefinedStatisticWarning

    rng = np.random.default_rng(3)
    idx = pd.MultiIndex.from_product([list("ABCD"), range(6)], names=["system", "prompt_id"])
    wide = pd.DataFrame({f"h{i}": rng.integers(1, 6, 24).astype(float) for i in range(3)}, idx)
    wide["once"] = np.nan
    wide.iloc[0, 3] = 4.0
    cols = ["h0", "h1", "h2", "once"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = human_baseline(wide, {"Q": cols}, nan_policy="omit", levels="overall",
                             variants="upper_bound")
    mean = wide[cols].mean(axis=1)
    expected = np.mean([kendalltau(wide[c], mean).statistic for c in cols[:3]])
    row = res.iloc[0]
    assert row["value"] == pytest.approx(expected, abs=1e-12)
    assert row["n_annotators"] == 3
    assert row["reason"].startswith("left out 1 of 4 annotators with fewer than 2 rated stories")
    assert any(issubclass(w.category, UndefinedStatisticWarning)
               and "human baseline: Q, overall" in str(w.message) for w in caught)


def test_a_constant_annotator_is_left_out_not_blanking_the_baseline():
    """Three annotators, one of whom rates every story 3: the baseline averages the other two
    (their own coefficients, by scipy), and the reason names the constant one."""
    from scipy import stats

    rng = np.random.default_rng(12)
    idx = pd.MultiIndex.from_product([[f"s{k}" for k in range(6)], range(8)],
                                     names=["system", "prompt_id"])
    q = np.repeat(rng.normal(size=6), 8) + rng.normal(size=48)
    wide = pd.DataFrame({"a1": np.round(q + rng.normal(size=48)),
                         "a2": np.round(q + rng.normal(size=48)), "flat": 3.0}, index=idx)
    with pytest.warns(UndefinedStatisticWarning, match="flat"):
        res = human_baseline(wide, {"Q": ["a1", "a2", "flat"]}, levels="overall")
    row = res[res["variant"] == "upper_bound"].iloc[0]
    mean = wide[["a1", "a2", "flat"]].mean(axis=1)
    expected = np.mean([stats.kendalltau(wide[c], mean).statistic for c in ("a1", "a2")])
    assert row["value"] == pytest.approx(expected, abs=1e-12)
    assert row["n_annotators"] == 2
    assert "whose coefficient is undefined" in row["reason"] and "flat" in row["reason"]
