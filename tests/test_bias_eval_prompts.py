"""The paired Eval-Prompt comparison (`storyeval.bias.eval_prompts`) against direct computations:
the cluster-robust mean difference by hand, the jackknife over prompts with a loop of
``scipy.stats.kendalltau``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from storyeval.bias.eval_prompts import compare_eval_prompts
from storyeval.cli import main
from storyeval.data import load_hanna
from storyeval.exceptions import InputError


@pytest.fixture(scope="module")
def hanna():
    return load_hanna(include_human_stories=False)


@pytest.fixture(scope="module")
def result(hanna):
    return compare_eval_prompts(hanna, "Beluga-13B", eval_prompts=(3, 4),
                                criteria=["Relevance", "SU"])


def _columns(hanna, crit, code):
    wide = hanna.wide([crit, f"Beluga-13B {code} 3", f"Beluga-13B {code} 4"])
    prompts = wide.index.get_level_values("prompt_id").to_numpy()
    return prompts, *(wide.iloc[:, k].to_numpy() for k in range(3))


@pytest.mark.parametrize(("crit", "code"), [("Relevance", "RE"), ("Surprise", "SU")])
def test_mean_rating_difference_by_hand(hanna, result, crit, code):
    prompts, _, a, b = _columns(hanna, crit, code)
    d = b - a
    n, groups = len(d), np.unique(prompts)
    g = len(groups)
    # CR1: G / (G - 1) times the sum over prompts of the squared within-prompt residual sums
    sums = np.array([(d[prompts == p] - d.mean()).sum() for p in groups])
    se = np.sqrt(g / (g - 1) * (sums ** 2).sum()) / n
    q = stats.t.ppf(0.975, g - 1)
    row = result[(result["criterion"] == crit) & (result["quantity"] == "mean rating")].iloc[0]
    assert row["estimate"] == pytest.approx(d.mean(), abs=1e-12)
    assert row["se"] == pytest.approx(se, rel=1e-10)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((d.mean() - q * se,
                                                             d.mean() + q * se), rel=1e-10)
    assert row["pvalue"] == pytest.approx(2 * stats.t.sf(abs(d.mean() / se), g - 1), rel=1e-8)
    assert (row["value_a"], row["value_b"]) == pytest.approx((a.mean(), b.mean()), abs=1e-12)
    assert (row["n_stories"], row["n_prompts"], row["df"]) == (960, 96, 95)


@pytest.mark.parametrize(("crit", "code"), [("Relevance", "RE"), ("Surprise", "SU")])
def test_correlation_difference_jackknife_by_loop(hanna, result, crit, code):
    prompts, h, a, b = _columns(hanna, crit, code)

    def delta(keep):
        return (stats.kendalltau(h[keep], b[keep]).statistic
                - stats.kendalltau(h[keep], a[keep]).statistic)

    groups = np.unique(prompts)
    g = len(groups)
    full = delta(np.ones(len(h), bool))
    loo = np.array([delta(prompts != p) for p in groups])
    se = np.sqrt((g - 1) / g * ((loo - loo.mean()) ** 2).sum())
    row = result[(result["criterion"] == crit)
                 & (result["quantity"] == "correlation with human")].iloc[0]
    assert row["estimate"] == pytest.approx(full, abs=1e-12)
    assert row["se"] == pytest.approx(se, rel=1e-9)
    assert row["pvalue"] == pytest.approx(2 * stats.t.sf(abs(full / se), g - 1), rel=1e-8)
    assert row["value_a"] == pytest.approx(stats.kendalltau(h, a).statistic, abs=1e-12)


def test_adjustment_and_validation(hanna, result):
    for quantity, rows in result.groupby("quantity"):
        expected = stats.false_discovery_control(rows["pvalue"].to_numpy(), method="bh")
        np.testing.assert_allclose(rows["p_adjusted"], expected, rtol=1e-12)
        assert rows["family"].iloc[0] == f"bh over criteria | quantity={quantity} (m=2)"
    with pytest.raises(InputError, match="two different"):
        compare_eval_prompts(hanna, "Beluga-13B", eval_prompts=(3, 3))
    with pytest.raises(InputError, match="no LLM ratings"):
        compare_eval_prompts(hanna, "GPT-9", eval_prompts=(3, 4))
    with pytest.raises(InputError, match="under Eval-Prompt 7"):
        compare_eval_prompts(hanna, "Beluga-13B", eval_prompts=(3, 7), criteria=["RE"])


def test_cli(capsys):
    assert main(["bias", "--eval-prompts", "Beluga-13B=3,4", "--criteria", "CH",
                 "--format", "json"]) == 0
    table = json.loads(capsys.readouterr().out)["eval_prompts"]
    assert [r["quantity"] for r in table] == ["mean rating", "correlation with human"]
    assert {r["n_stories"] for r in table} == {960}  # the Human stories left out
    assert main(["bias", "--eval-prompts", "Beluga-13B=3"]) == 2
    assert "MODEL=A,B" in capsys.readouterr().err
    assert main(["bias", "--eval-prompts", "Beluga-13B=3,4", "--own", "x=GPT-2"]) == 2
