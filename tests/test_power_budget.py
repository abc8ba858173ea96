"""The label-budget planner (storyeval.power.budget): equal to ppi-python's power analysis
(``ppi_py.ppi_mean_power``, ppi-python 0.2.3) where it applies, its predicted width checked by
simulation, its invariants, and ``storyeval plan budget`` with damaged inputs."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.power.budget import plan_label_budget, simulate_label_budget

ppi_py = pytest.importorskip("ppi_py")


def pilot(seed=0, n=150, noise=0.7, slope=1.0, shift=0.0):
    rng = np.random.default_rng(seed)
    y = rng.normal(3, 1, n)
    return y, slope * y + rng.normal(shift, noise, n)


CASES = [  # (seed, noise, slope, cost_human, cost_judge, effective_n, budget)
    (1, 0.6, 0.8, 1.0, 0.05, 200, None),
    (2, 0.5, 0.8, 2.0, 0.01, None, 300.0),
    (3, 0.8, 0.8, 1.0, 0.10, None, 500.0),
    (4, 0.4, 1.2, 1.0, 0.02, 400, None),
    (5, 1.0, 0.8, 1.0, 0.20, 150, None),  # a weak, dear judge: human labels only
]


@pytest.mark.parametrize("seed, noise, slope, c_h, c_j, n_eff, budget", CASES)
def test_equals_ppi_python_power_analysis(seed, noise, slope, c_h, c_j, n_eff, budget):
    y, f = pilot(seed, 120, noise, slope, 0.3)
    ref = ppi_py.ppi_mean_power(y, f, c_h, c_j, effective_n=n_eff, budget=budget)
    target = {"budget": budget} if budget else {"se": float(np.std(y)) / math.sqrt(n_eff)}
    got = plan_label_budget(y, f, cost_human=c_h, cost_judge=c_j, rounding="nearest",
                            interval="z", **target)
    assert (got.n_human, got.n_unlabelled) == (ref["n"], ref["N"])
    assert got.cost == pytest.approx(ref["cost"], rel=1e-12)
    assert got.ppi_corr == pytest.approx(ref["ppi_corr"], abs=1e-12)
    assert abs(got.effective_n - ref["effective_n"]) <= 0.5 + 1e-9  # theirs is rounded
    assert got.method == ("classical" if ref["N"] == 0 else "ppi++")


def test_conservative_rounding_meets_the_target_and_keeps_the_budget():
    y, f = pilot(7)
    for width in (0.1, 0.2, 0.4):
        p = plan_label_budget(y, f, cost_human=1, cost_judge=0.01, width=width)
        assert p.predicted_width <= width + 1e-12
        smaller = plan_label_budget(y, f, cost_human=1, cost_judge=0.01, width=width * 1.05)
        assert smaller.cost <= p.cost
        assert p.human_only_cost > p.cost  # a good, cheap judge pays for itself
    b = plan_label_budget(y, f, cost_human=1, cost_judge=0.01, budget=250)
    assert b.cost <= 250 and b.n_human >= 2
    # power: se = effect / (z_0.975 + z_0.8)
    p = plan_label_budget(y, f, cost_human=1, cost_judge=0.01, power=0.8, effect=0.1)
    assert p.predicted_se <= 0.1 / (1.959963984540054 + 0.8416212335729143) + 1e-12


@pytest.mark.parametrize("kind, cost_judge, width", [("mean", 0.01, 0.2),
                                                     ("mean", 0.05, 0.3),
                                                     ("win rate", 0.02, 0.12)])
def test_predicted_width_is_within_ten_percent_of_the_simulated(kind, cost_judge, width):
    if kind == "mean":
        y, f = pilot(11, 300)
    else:  # preferences 1 / 0 / 0.5 and a judge's probability that A wins
        rng = np.random.default_rng(12)
        p = rng.beta(2, 2, 400)
        y = np.where(rng.random(400) < 0.1, 0.5, (rng.random(400) < p).astype(float))
        f = np.clip(p + rng.normal(0, 0.1, 400), 0, 1)
    plan = plan_label_budget(y, f, cost_human=1.0, cost_judge=cost_judge, width=width)
    assert plan.method == "ppi++"
    check = simulate_label_budget(plan, y, f, reps=300, seed=0)
    assert 0.9 <= check["width_ratio"] <= 1.1, check
    assert check["coverage"] >= 0.9


def test_a_classical_plan_simulates_the_human_only_interval():
    y, f = pilot(13, noise=3.0)
    plan = plan_label_budget(y, f, cost_human=1, cost_judge=0.5, width=0.4)
    assert plan.method == "classical" and plan.n_judge == 0 and plan.cost == plan.n_human
    check = simulate_label_budget(plan, y, f, reps=400, seed=1)
    assert 0.95 <= check["width_ratio"] <= 1.05


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), scale=st.floats(0.1, 10), shift=st.floats(-5, 5),
       width=st.floats(0.05, 0.5), ratio=st.floats(0.001, 0.3))
def test_invariants(seed, scale, shift, width, ratio):
    y, f = pilot(seed, 60)
    kw = {"cost_human": 1.0, "cost_judge": ratio, "width": width}
    base = plan_label_budget(y, f, **kw)
    # reordering the pilot, moving the judge's scale by a constant: the same plan
    order = np.random.default_rng(seed).permutation(y.size)
    assert plan_label_budget(y[order], f[order], **kw) == base
    moved = plan_label_budget(y, f + shift, **kw)
    assert (moved.n_human, moved.n_unlabelled) == (base.n_human, base.n_unlabelled)
    # every score and the width in other units: the same numbers of labels
    scaled = plan_label_budget(y * scale, f * scale, **{**kw, "width": width * scale})
    assert abs(scaled.n_human - base.n_human) <= 1
    assert abs(scaled.n_unlabelled - base.n_unlabelled) <= max(2, 1e-6 * base.n_unlabelled)
    # the plan is never dearer than human labels alone
    assert base.cost <= base.human_only_cost + kw["cost_human"] * 2
    assert 0 <= base.lam <= 1


def test_bad_arguments():
    y, f = pilot()
    for kw, message in (({}, "exactly one target"),
                        ({"width": 0.1, "budget": 10}, "exactly one target"),
                        ({"power": 0.8}, "needs both power and effect"),
                        ({"width": -1}, "width must be"),
                        ({"width": 0.1, "rounding": "up"}, "rounding must be"),
                        ({"width": 0.1, "interval": "x"}, "interval must be")):
        with pytest.raises(InputError, match=message):
            plan_label_budget(y, f, cost_human=1, cost_judge=0.1, **kw)
    with pytest.raises(InputError, match="cost_human must be"):
        plan_label_budget(y, f, cost_human=0, cost_judge=0.1, width=0.1)
    with pytest.raises(InputError, match="at least 3 items"):
        plan_label_budget([1, np.nan, 2], [1, 2, 3], cost_human=1, cost_judge=0.1, width=0.1)
    with pytest.raises(InputError, match="do not vary"):
        plan_label_budget([1, 1, 1], [1, 2, 3], cost_human=1, cost_judge=0.1, width=0.1)


# --- CLI ------------------------------------------------------------------------------------

@pytest.fixture
def pilot_file(tmp_path):
    y, f = pilot(0)
    path = tmp_path / "pilot.csv"
    human = np.where(np.arange(y.size) < 120, y.round(3), np.nan)  # 30 items judged only
    pd.DataFrame({"id": range(y.size), "human": human, "llm": f.round(3)}).to_csv(path,
                                                                                  index=False)
    return path


def _cli(path, *extra):
    return ["plan", "budget", "--pilot", str(path), "--human", "human", "--judge", "llm",
            "--cost-human", "0.5", *extra]


def test_cli_plan_budget(pilot_file, tmp_path, capsys):
    assert main(_cli(pilot_file, "--cost-judge", "0.002", "--width", "0.2", "--simulate",
                     "200", "--json")) == 0
    out = json.loads(capsys.readouterr().out)
    frame = pd.read_csv(pilot_file).dropna()
    lib = plan_label_budget(frame.human, frame.llm, cost_human=0.5, cost_judge=0.002, width=0.2)
    assert out["n_human"] == lib.n_human and out["n_judge"] == lib.n_judge
    assert out["n_pilot"] == 120 and 0.9 <= out["simulation"]["width_ratio"] <= 1.1
    assert main(_cli(pilot_file, "--cost-judge", "0.002", "--width", "0.2")) == 0
    text = capsys.readouterr().out
    assert f"plan: {lib.n_human:,} human labels and {lib.n_judge:,} judge calls" in text
    # the judge's cost from a run's cost file
    cost = tmp_path / "cost.csv"
    pd.DataFrame({"judge": ["m"], "cost_per_item": [0.002], "cost": [1.0]}).to_csv(cost,
                                                                                   index=False)
    assert main(_cli(pilot_file, "--judge-cost-from", str(cost), "--width", "0.2",
                     "--json")) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["n_judge"] == lib.n_judge and "cost_per_item of m" in again["cost_judge_source"]


@pytest.mark.parametrize("damage, message", [
    ("empty", "empty"),
    ("header", "no rows"),
    ("cut", "is empty"),
    ("duplicate", "repeats an earlier row"),
    ("text", "not a number"),
])
def test_cli_damaged_pilot_files(pilot_file, capsys, damage, message):
    lines = pilot_file.read_text().splitlines(keepends=True)
    if damage == "empty":
        pilot_file.write_text("")
    elif damage == "header":
        pilot_file.write_text(lines[0])
    elif damage == "cut":  # cut inside the last line, before the judge's value
        pilot_file.write_text("".join(lines[:-1]) + lines[-1].rsplit(",", 1)[0] + ",")
    elif damage == "duplicate":
        pilot_file.write_text("".join(lines + lines[5:6]))
    else:
        pilot_file.write_text("".join(lines[:3] + ["2,abc,2.0\n"] + lines[4:]))
    assert main(_cli(pilot_file, "--cost-judge", "0.01", "--width", "0.2", "--id", "id")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "pilot.csv" in err[0]


def test_cli_damaged_cost_files(pilot_file, tmp_path, capsys):
    cost = tmp_path / "cost.csv"
    for text, message in (("judge,cost\nm,1\n", "no column 'cost_per_item'"),
                          ("judge,cost_per_item\n", "no rows"),
                          ("judge,cost_per_item\nm,0.1\nm,0.1\n", "appears twice"),
                          ("judge,cost_per_item\na,0.1\nb,0.2\n", "--judge-label"),
                          ("judge,cost_per_item\nm,\n", "no cost_per_item")):
        cost.write_text(text)
        assert main(_cli(pilot_file, "--judge-cost-from", str(cost), "--width", "0.2")) == 2
        assert message in capsys.readouterr().err
    cost.write_text("judge,cost_per_item\na,0.1\nb,0.2\n")
    assert main(_cli(pilot_file, "--judge-cost-from", str(cost), "--judge-label", "b",
                     "--width", "0.2", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["cost_judge"] == 0.2
    assert main(_cli(pilot_file, "--cost-judge", "0.1", "--power", "0.8")) == 2
    assert "--effect goes with --power" in capsys.readouterr().err
