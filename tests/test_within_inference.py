"""Inference at the within-system level (issue 50): the bootstrap of prompts, the
delete-one-prompt jackknife test ``prompt-jackknife`` and their use by ``meta``.

References: ``scipy.stats`` coefficients on explicitly resampled or shortened vectors and
``scipy.stats.t`` for the p-value and interval (reference code in the tests only)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.compare.procedures import compare_rows, resolve_tests
from storyeval.compare.within import compare_within_level, within_jackknife
from storyeval.exceptions import InputError

COEF = {"kendall_b": lambda x, y: stats.kendalltau(x, y).statistic,
        "kendall_c": lambda x, y: stats.kendalltau(x, y, variant="c").statistic,
        "pearson": lambda x, y: stats.pearsonr(x, y).statistic,
        "spearman": lambda x, y: stats.spearmanr(x, y).statistic}


def _toy(S: int = 4, P: int = 12, seed: int = 1) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    idx = pd.MultiIndex.from_product([[f"S{s}" for s in range(S)], range(P)],
                                     names=["system", "prompt_id"])
    w = pd.DataFrame({"h": g.integers(1, 6, S * P).astype(float)}, index=idx)
    w["a"] = w["h"] + g.normal(size=S * P)
    w["b"] = g.integers(0, 3, S * P).astype(float) + 0.5 * w["h"]
    return w


def _scipy_within(X: np.ndarray, ia: int, ic: int, method: str, prompts, systems) -> float:
    """Mean over the given systems of the coefficient over the given prompts (scipy)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals = [COEF[method](X[s, prompts, ia], X[s, prompts, ic]) for s in systems]
    vals = [v for v in vals if np.isfinite(v)]
    return float(np.mean(vals))


@pytest.mark.parametrize("method", list(COEF))
@pytest.mark.parametrize("resample_by", ["prompts", "systems", "both"])
@pytest.mark.filterwarnings("ignore")
def test_bootstrap_within_equals_scipy_on_resampled_vectors(method, resample_by):
    from storyeval.resample.bootstrap import bootstrap_correlations, draw_resamples

    w = _toy()
    S, P = 4, 12
    _, theta = bootstrap_correlations(w, [("a", "h"), ("b", "h")], level="within",
                                      method=method, n_resamples=4, resample_by=resample_by,
                                      random_state=3, return_distribution=True)
    cS, cP = draw_resamples(S, P, n_resamples=4, resample_by=resample_by, random_state=3)
    X = w.to_numpy().reshape(S, P, 3)
    for r in range(4):
        prompts = np.repeat(np.arange(P), cP[r].astype(int))
        systems = np.repeat(np.arange(S), cS[r].astype(int))
        for k, col in enumerate([1, 2]):
            expected = _scipy_within(X, col, 0, method, prompts, systems)
            assert theta[r, k] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("method", ["kendall_b", "pearson", "spearman"])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_jackknife_test_equals_a_direct_leave_one_prompt_out(method, alternative):
    w = _toy(S=3, P=9, seed=7)
    S, P = 3, 9
    X = w.to_numpy().reshape(S, P, 3)
    comp = {"criterion": np.array(["h"], dtype=object), "measure_a": np.array(["a"], object),
            "measure_b": np.array(["b"], dtype=object)}
    res = compare_within_level(w, comp, np.ones(1), np.ones(1), method=method,
                               alternative=alternative, confidence_level=0.9)
    everyone = np.arange(S)
    delta = (_scipy_within(X, 1, 0, method, np.arange(P), everyone)
             - _scipy_within(X, 2, 0, method, np.arange(P), everyone))
    loo = np.array([_scipy_within(X, 1, 0, method, np.delete(np.arange(P), p), everyone)
                    - _scipy_within(X, 2, 0, method, np.delete(np.arange(P), p), everyone)
                    for p in range(P)])
    se = np.sqrt((P - 1) / P * ((loo - loo.mean()) ** 2).sum())
    t = delta / se
    dist = stats.t(P - 1)
    p = {"two-sided": 2 * dist.sf(abs(t)), "greater": dist.sf(t),
         "less": dist.cdf(t)}[alternative]
    assert res["delta"][0] == pytest.approx(delta, abs=1e-12)
    assert res["se"][0] == pytest.approx(se, abs=1e-12)
    assert res["p"][0] == pytest.approx(p, rel=1e-9)
    q = dist.ppf(0.95 if alternative == "two-sided" else 0.9)
    low = delta - q * se if alternative != "less" else -2.0
    high = delta + q * se if alternative != "greater" else 2.0
    assert res["ci_low"][0] == pytest.approx(low, abs=1e-9)
    assert res["ci_high"][0] == pytest.approx(high, abs=1e-9)


def test_jackknife_leave_one_out_values():
    w = _toy()
    value, jack = within_jackknife(w, [("a", "h")], method="kendall_b")
    X = w.to_numpy().reshape(4, 12, 3)
    assert value[0] == pytest.approx(_scipy_within(X, 1, 0, "kendall_b", np.arange(12),
                                                   np.arange(4)), abs=1e-12)
    assert jack.shape == (12, 1)
    assert jack[5, 0] == pytest.approx(_scipy_within(X, 1, 0, "kendall_b",
                                                     np.delete(np.arange(12), 5),
                                                     np.arange(4)), abs=1e-12)


def test_identical_measures_give_p_one_and_a_zero_interval():
    w = _toy()
    w["c"] = w["a"]
    comp = {"criterion": np.array(["h"], dtype=object), "measure_a": np.array(["a"], object),
            "measure_b": np.array(["c"], dtype=object)}
    res = compare_within_level(w, comp, np.ones(1), np.ones(1))
    assert res["p"][0] == 1.0 and res["delta"][0] == 0.0
    assert res["ci_low"][0] == 0.0 and res["ci_high"][0] == 0.0


def test_missing_story_is_a_row_reason_not_a_crash():
    w = _toy().drop(index=("S1", 3))
    comp = {"criterion": np.array(["h"], dtype=object), "measure_a": np.array(["a"], object),
            "measure_b": np.array(["b"], dtype=object)}
    res = compare_within_level(w, comp, np.ones(1), np.ones(1))
    assert np.isnan(res["p"][0])
    assert "no within-system jackknife" in res["test_reason"][0]


def test_resolve_tests_at_the_within_level():
    assert resolve_tests("auto", ["within"], "kendall_b", "paper") == {
        "within": "prompt-jackknife"}
    assert resolve_tests({"within": "bootstrap"}, ["within"], "pearson") == {
        "within": "bootstrap"}
    with pytest.raises(InputError, match="within-system level"):
        resolve_tests("ustat", ["within"], "kendall_b")
    with pytest.raises(InputError, match="within-system level only"):
        resolve_tests({"overall": "prompt-jackknife"}, ["overall"], "kendall_b")


def test_bootstrap_test_runs_at_the_within_level():
    w = _toy()
    comp = {"criterion": np.array(["h"], dtype=object), "measure_a": np.array(["a"], object),
            "measure_b": np.array(["b"], dtype=object), "r_a": np.array([np.nan]),
            "r_b": np.array([np.nan]), "r_ab": np.array([np.nan]), "n": np.array([12])}
    from storyeval.correlation.levels import correlate

    comp["r_a"] = correlate(w, "a", "h", level="within")["value"].to_numpy()
    comp["r_b"] = correlate(w, "b", "h", level="within")["value"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare_rows(w, comp, level="within", method="kendall_b", test="bootstrap",
                           sign_convention="raw", n_resamples=100)
    assert 0 <= res["p"][0] <= 1
    assert res["ci_low"][0] <= res["delta"][0] <= res["ci_high"][0]


@pytest.mark.filterwarnings("ignore")
def test_meta_tests_the_within_level_on_hanna():
    from storyeval.meta import meta_evaluate

    res = meta_evaluate(measures="Beluga-13B 1,BLEU", criteria="Relevance",
                        levels="overall,within", reference="Beluga-13B 1")
    row = res.comparisons.set_index("level").loc["within"]
    assert row["test"] == "prompt-jackknife"
    assert row["statistic_kind"] == "t(prompts-1)"
    assert res.settings["comparisons"]["test"]["within"] == "prompt-jackknife"
    wide = res.dataset.wide()
    comp = {"criterion": np.array(["Relevance"], dtype=object),
            "measure_a": np.array([row["measure_a"]], dtype=object),
            "measure_b": np.array([row["measure_b"]], dtype=object)}
    ref = compare_within_level(wide, comp, np.ones(1), np.ones(1))
    assert row["p"] == pytest.approx(ref["p"][0], rel=1e-12)
    assert row["delta"] == pytest.approx(row["r_a"] - row["r_b"], abs=1e-12)
    assert (row["ci_low"] > 0) == (row["p"] < 0.05)


@pytest.mark.filterwarnings("ignore")  # one comparison: the single-test family warning
def test_cli_meta_within_with_bootstrap(tmp_path, capsys):
    from storyeval.cli import main

    code = main(["meta", "--metrics", "Beluga-13B 1,BLEU", "--criteria", "Relevance",
                 "--levels", "within", "--ci", "bootstrap", "--resamples", "50",
                 "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0
    assert "jackknife t over prompts" in out and "within level" in out
    table = pd.read_csv(tmp_path / "out" / "comparisons.csv")
    assert set(table["test"]) == {"prompt-jackknife"}
    code = main(["meta", "--metrics", "Beluga-13B 1,BLEU", "--criteria", "Relevance",
                 "--levels", "within", "--test", "ustat"])
    err = capsys.readouterr().err
    assert code == 2 and "within-system level" in err and err.count("\n") == 1


def test_prompt_mean_sentinel_is_the_other_systems_mean():
    """``prompt-mean``: the mean human score of the same prompt's stories of the other systems
    (hand computation on the toy grid); not among the default sentinels."""
    from storyeval.bias.sentinels import SENTINEL_KINDS, sentinel_scores

    w = _toy()
    got = sentinel_scores(w, ["h"], kinds=["prompt-mean"])[("prompt-mean", "h")]
    H = w["h"].to_numpy().reshape(4, 12)
    expected = (H.sum(axis=0, keepdims=True) - H) / 3
    np.testing.assert_allclose(got.to_numpy().reshape(4, 12), expected, rtol=1e-10)
    assert "prompt-mean" not in SENTINEL_KINDS
    with pytest.raises(InputError, match="unknown sentinel"):
        sentinel_scores(w, ["h"], kinds=["prompt-means"])


def test_few_prompts_note():
    from storyeval.compare.within import FEW_PROMPTS

    comp = {"criterion": np.array(["h"], dtype=object), "measure_a": np.array(["a"], object),
            "measure_b": np.array(["b"], dtype=object)}
    few = compare_within_level(_toy(P=12), comp, np.ones(1), np.ones(1))
    assert few["note"][0].startswith(f"fewer than {FEW_PROMPTS} prompts")
    many = compare_within_level(_toy(S=3, P=FEW_PROMPTS), comp, np.ones(1), np.ones(1))
    assert many["note"][0] == ""
