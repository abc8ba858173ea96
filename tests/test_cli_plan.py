"""``storyeval plan`` and ``storyeval ppi``: the real entry point, exit codes and outputs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from storyeval.cli import main
from storyeval.pairwise.plan import check_plan
from storyeval.power.pairwise import minimum_detectable_effect, pairwise_sample_size
from storyeval.power.ppi import ppi_mean, ppi_mean_difference


def _json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_power_json_equals_library(capsys):
    out = _json(capsys, ["plan", "power", "--design", "paired_accuracy", "--effect", "0.78",
                         "--baseline", "0.73", "--discordance", "0.2", "--units-per-prompt",
                         "5", "--icc", "0.1", "--json"])
    plan = pairwise_sample_size("paired_accuracy", 0.78, baseline=0.73, discordance=0.2,
                                units_per_prompt=5, icc=0.1)
    assert out["n_units"] == plan.n_units and out["n_prompts"] == plan.n_prompts
    assert out["power"] == pytest.approx(plan.power, abs=1e-12)


def test_plan_power_mde(capsys):
    out = _json(capsys, ["plan", "power", "--design", "two_proportions", "--baseline", "0.73",
                         "--n", "2480", "--json"])
    expected = minimum_detectable_effect("two_proportions", 2480, baseline=0.73)
    assert out["minimum_detectable_effect"] == pytest.approx(expected, abs=1e-12)


def test_plan_power_usage_errors(capsys):
    assert main(["plan", "power", "--design", "win_rate"]) == 2
    assert "--effect" in capsys.readouterr().err
    assert main(["plan", "power", "--design", "win_rate", "--effect", "0.6",
                 "--icc", "2"]) == 2
    assert "--icc" in capsys.readouterr().err


def test_plan_assign_and_check(tmp_path, capsys):
    plan_path, returned = tmp_path / "plan.csv", tmp_path / "returned.csv"
    assert main(["plan", "assign", "--systems", "A,B,C", "--prompts", "6", "--annotators",
                 "6", "--judgments-per-pair", "2", "--out", str(plan_path)]) == 0
    assert capsys.readouterr().out.startswith("seed 0: 36 judgments of 18 pairs")
    plan = pd.read_csv(plan_path)
    plan.assign(verdict="A").to_csv(returned, index=False)
    assert main(["plan", "check", "--plan", str(plan_path), "--returned", str(returned)]) == 0
    plan.assign(verdict="A").iloc[1:].to_csv(returned, index=False)
    assert main(["plan", "check", "--plan", str(plan_path), "--returned", str(returned)]) == 1
    out = capsys.readouterr().out
    assert "1 missing, 0 extra, 0 altered" in out
    assert check_plan(pd.read_csv(returned), plan).missing.shape[0] == 1


def test_plan_assign_too_few_annotators(tmp_path, capsys):
    code = main(["plan", "assign", "--systems", "A,B,C", "--prompts", "2", "--annotators",
                 "2", "--out", str(tmp_path / "p.csv")])
    assert code == 2
    assert "needs 3 judgments" in capsys.readouterr().err
    assert not (tmp_path / "p.csv").exists()


@pytest.fixture
def items(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    h = rng.normal(3, 1, n)
    frame = pd.DataFrame({"system": np.repeat(["A", "B"], n // 2),
                          "prompt_id": np.tile(np.arange(n // 2), 2),
                          "human": np.where(rng.random(n) < 0.2, h, np.nan),
                          "judge": h + rng.normal(0.3, 0.7, n)})
    path = tmp_path / "items.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_ppi_cli_mean_equals_library(items, capsys):
    path, frame = items
    out = _json(capsys, ["ppi", "--data", str(path), "--human", "human", "--judge", "judge",
                         "--json"])
    expected = ppi_mean(frame.human.to_numpy(), frame.judge.to_numpy())
    assert out["estimate"] == pytest.approx(expected.estimate, abs=1e-12)
    assert out["n_eff"] == pytest.approx(expected.n_eff, rel=1e-12)


def test_ppi_cli_folds_seed_and_interval_reach_the_library(items, capsys):
    path, frame = items
    h, f = frame.human.to_numpy(), frame.judge.to_numpy()
    for extra, options in ((["--folds", "1", "--interval", "z"], {"folds": 1, "interval": "z"}),
                           (["--seed", "3"], {"seed": 3})):
        out = _json(capsys, ["ppi", "--data", str(path), "--human", "human", "--judge",
                             "judge", "--json", *extra])
        expected = ppi_mean(h, f, **options)
        assert (out["low"], out["high"]) == pytest.approx((expected.low, expected.high),
                                                          abs=1e-12)
        assert (out["folds"], out["seed"], out["interval"]) == (
            expected.folds, expected.seed, expected.interval)
    assert main(["ppi", "--data", str(path), "--human", "human", "--judge", "judge",
                 "--seed", "3"]) == 0
    assert "cross-fitted over 5 folds, seed 3" in capsys.readouterr().out


def test_ppi_cli_independent_difference(items, capsys):
    path, frame = items
    out = _json(capsys, ["ppi", "--data", str(path), "--human", "human", "--judge", "judge",
                         "--system", "system", "--systems", "A,B", "--json"])
    a, b = frame[frame.system == "A"], frame[frame.system == "B"]
    expected = ppi_mean_difference(a.human, a.judge, b.human, b.judge)
    assert out["estimate"] == pytest.approx(expected.estimate, abs=1e-12)
    assert out["estimand"] == "difference"


def test_ppi_cli_errors(items, capsys):
    path, _ = items
    assert main(["ppi", "--data", str(path), "--human", "nope", "--judge", "judge"]) == 2
    assert "no column 'nope'" in capsys.readouterr().err
    assert main(["ppi", "--data", str(path), "--human", "human", "--judge", "judge",
                 "--system", "system", "--systems", "A,B", "--paired-by", "prompt_id"]) == 2
    assert "same NaN pattern" in capsys.readouterr().err
