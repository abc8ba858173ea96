"""`compare_prompt_level`: paired t-test over prompts of within-prompt correlation differences,
checked against scipy (independent per-prompt correlations and ttest_1samp)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.compare import compare_prompt_level
from storyeval.exceptions import InputError


def _wide(rng, S=6, P=12, shift=0.0):
    q = rng.normal(size=(S, P))
    h = np.clip(np.rint(3 + q + rng.normal(0, 0.8, (S, P))), 1, 5)
    a = q + rng.normal(size=(S, P))
    b = (1 - shift) * q + rng.normal(size=(S, P))
    idx = pd.MultiIndex.from_product([[f"s{s}" for s in range(S)], range(P)],
                                     names=["system", "prompt_id"])
    return pd.DataFrame({"Overall": h.ravel(), "METEOR": a.ravel(), "my-metric": b.ravel()},
                        index=idx), h, a, b


@pytest.mark.parametrize("method", ["kendall_b", "pearson"])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_matches_scipy_paired_t(method, alternative):
    rng = np.random.default_rng(1)
    wide, h, a, b = _wide(rng, shift=0.5)
    coef = stats.kendalltau if method == "kendall_b" else stats.pearsonr
    d = np.array([coef(h[:, p], a[:, p]).statistic - coef(h[:, p], b[:, p]).statistic
                  for p in range(h.shape[1])])
    d = d[np.isfinite(d)]
    ref = stats.ttest_1samp(d, 0.0, alternative=alternative)
    ci = ref.confidence_interval(0.9)
    res = compare_prompt_level(wide, "Overall", "METEOR", "my-metric", method=method,
                               alternative=alternative, confidence_level=0.9).iloc[0]
    assert res["n_prompts"] == len(d)
    assert res["delta"] == pytest.approx(d.mean(), abs=1e-12)
    assert res["t"] == pytest.approx(ref.statistic, rel=1e-9)
    assert res["p"] == pytest.approx(ref.pvalue, rel=1e-9)
    lo, hi = max(ci.low, -2.0), min(ci.high, 2.0)
    assert res["ci_low"] == pytest.approx(lo, rel=1e-9)
    assert res["ci_high"] == pytest.approx(hi, rel=1e-9)


def test_invariant_to_names_and_order_and_vectorised():
    rng = np.random.default_rng(2)
    wide = _wide(rng)[0]
    one = compare_prompt_level(wide, "Overall", "METEOR", "my-metric")
    renamed = wide.rename(columns={"METEOR": "BLEU", "my-metric": "length"})
    two = compare_prompt_level(renamed[["length", "BLEU", "Overall"]], "Overall", "BLEU",
                               "length")
    np.testing.assert_allclose(two[["p", "ci_low", "ci_high"]].to_numpy(float),
                               one[["p", "ci_low", "ci_high"]].to_numpy(float), rtol=1e-12)
    both = compare_prompt_level(wide, "Overall", ["METEOR", "my-metric"],
                                ["my-metric", "METEOR"])
    assert both["p"].iloc[0] == pytest.approx(both["p"].iloc[1])
    assert both["delta"].iloc[0] == pytest.approx(-both["delta"].iloc[1])


def test_test_and_interval_agree_and_level_near_nominal():
    rng = np.random.default_rng(3)
    rows = [compare_prompt_level(_wide(rng, S=5, P=10)[0], "Overall", "METEOR",
                                 "my-metric").iloc[0] for _ in range(200)]
    p = np.array([r["p"] for r in rows])
    excl = np.array([r["ci_low"] > 0 or r["ci_high"] < 0 for r in rows])
    assert np.array_equal(p < 0.05, excl)
    assert 0.01 <= np.mean(p < 0.05) <= 0.11  # 200 null data sets: se 0.015


def test_bad_input():
    wide = _wide(np.random.default_rng(4))[0]
    with pytest.raises(InputError):
        compare_prompt_level(wide, "Overall", "METEOR", "my-metric", alternative="bigger")
    with pytest.raises(InputError):
        compare_prompt_level(wide, "Overall", ["METEOR", "my-metric"], ["a", "b", "c"])


# ------------------------------------------- meta_evaluate runs it at the prompt level
def _meta_data(seed: int = 4, systems: int = 6, prompts: int = 20, names=None):
    from storyeval.data import scores_to_dataset

    g = np.random.default_rng(seed)
    q = g.normal(size=(systems, prompts))
    cols = {"quality": np.clip(np.rint(3 + q + g.normal(0, 0.8, q.shape)), 1, 5),
            "good": q + g.normal(size=q.shape), "weak": q + 3 * g.normal(size=q.shape),
            "inverse": -q + g.normal(size=q.shape)}
    sys_, prm = np.meshgrid(range(systems), range(prompts), indexing="ij")
    long = pd.concat([pd.DataFrame({"system": [f"S{s}" for s in sys_.ravel()],
                                    "prompt_id": prm.ravel(),
                                    "measure": (names or {}).get(name, name),
                                    "value": v.ravel()}) for name, v in cols.items()])
    return scores_to_dataset(long, criteria=["quality"], name="mine"), cols


def test_meta_prompt_level_rows_are_the_paired_t_of_scipy_with_declared_orientation():
    from storyeval import meta_evaluate

    data, cols = _meta_data()
    res = meta_evaluate(data, levels="prompt", reference="all", lower_is_better="inverse",
                        adjust="none")
    comp = res.comparisons
    assert set(comp["test"]) == {"prompt-t"} and set(comp["level"]) == {"prompt"}
    h = cols["quality"]
    for _, row in comp.iterrows():
        sign = {m: (-1.0 if m == "inverse" else 1.0) for m in ("good", "weak", "inverse")}
        d = np.array([sign[row["measure_a"]] * stats.kendalltau(h[:, p], cols[row["measure_a"]][:, p]).statistic
                      - sign[row["measure_b"]] * stats.kendalltau(h[:, p], cols[row["measure_b"]][:, p]).statistic
                      for p in range(h.shape[1])])
        ref = stats.ttest_1samp(d, 0.0)
        assert row["delta"] == pytest.approx(d.mean(), abs=1e-12)
        assert row["p"] == pytest.approx(ref.pvalue, rel=1e-9)
        ci = ref.confidence_interval(0.95)
        assert [row["ci_low"], row["ci_high"]] == pytest.approx([ci.low, ci.high], rel=1e-9)
    # a function of the data: renaming the measures changes no p-value
    other, _ = _meta_data(names={"good": "zz-good", "weak": "aa-weak"})
    renamed = meta_evaluate(other, levels="prompt", reference="all",
                            lower_is_better="inverse", adjust="none").comparisons
    back = {"zz-good": "good", "aa-weak": "weak", "inverse": "inverse"}
    key = lambda f: {frozenset((back.get(a, a), back.get(b, b))): p  # noqa: E731
                     for a, b, p in zip(f["measure_a"], f["measure_b"], f["p"])}
    mine, theirs = key(comp), key(renamed)
    assert mine.keys() == theirs.keys() and len(mine) == 3
    for pair in mine:
        assert theirs[pair] == pytest.approx(mine[pair], rel=1e-12)


def test_meta_prompt_level_refuses_tests_that_do_not_run_there():
    from storyeval import meta_evaluate

    data, _ = _meta_data()
    with pytest.raises(InputError, match="prompt level"):
        meta_evaluate(data, levels="prompt", reference="all", test={"prompt": "ustat"})
    with pytest.raises(InputError, match="prompt level only"):
        meta_evaluate(data, levels="overall", reference="all", test="prompt-t")
