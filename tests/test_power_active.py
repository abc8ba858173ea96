"""Active labelling (storyeval.power.active): the probabilities, the draw, the estimate
(exactly design-unbiased by enumeration of every labelling, a hand computation), its
invariants, the benchmark's claims, and the commands `plan active` and `ppi
--label-probability` with damaged inputs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.power.active import (
    active_mean,
    active_probabilities,
    active_rows,
    active_sample,
    uncertainty_from_probability,
    uncertainty_from_votes,
)

ROOT = Path(__file__).resolve().parents[1]


def test_probabilities_sum_to_the_budget_and_follow_the_uncertainty():
    u = np.array([0.5, 0.1, 0.0, 0.4])
    # by hand: k = 2 / 1.0 caps item 0 at 1; active (1, 0.2, 0, 0.8); 0.8 x that + 0.2 x 0.5
    np.testing.assert_allclose(active_probabilities(u, 2, mix=0.2), [0.9, 0.26, 0.1, 0.74])
    rng = np.random.default_rng(0)
    u = rng.gamma(0.5, 1, 500)
    for budget, mix in ((10, 0.2), (100, 0.0), (400, 0.5), (499.5, 0.1)):
        pi = active_probabilities(u, budget, mix=mix)
        assert pi.sum() == pytest.approx(budget) and pi.max() <= 1 + 1e-12
        assert pi.min() >= mix * budget / u.size - 1e-12
        active = (pi - mix * budget / u.size) / (1 - mix)
        below = active < 1 - 1e-9
        ratio = active[below] / u[below]
        np.testing.assert_allclose(ratio, ratio[0], rtol=1e-9)  # proportional below the cap
        assert (u[~below].min(initial=np.inf) >= u[below].max())  # the cap takes the largest
    # fewer items with any uncertainty than the budget: they get 1, the rest share the rest
    np.testing.assert_allclose(active_probabilities([0, 0, 0, 1], 2, mix=0.5),
                               [5 / 12, 5 / 12, 5 / 12, 0.75])


def test_bad_probability_arguments():
    for args, kw, message in (([[0.1, -1]], {"budget": 1}, "not a finite number"),
                              ([[0.1, 0.2]], {"budget": 3}, "budget must be"),
                              ([[0.0, 0.2]], {"budget": 1, "mix": 0}, "mix = 0"),
                              ([[0.1, 0.2]], {"budget": 1, "mix": 2}, "mix must be")):
        with pytest.raises(InputError, match=message):
            active_probabilities(*args, **kw)
    with pytest.raises(InputError, match="not in \\[0, 1\\]"):
        uncertainty_from_probability([0.5, 1.2])
    with pytest.raises(InputError, match="at least 2"):
        uncertainty_from_votes([[1, np.nan], [1, 0]])
    assert uncertainty_from_votes([[1, 1, 1], [1, 0, np.nan]]).tolist() == [0.0, 0.5]
    with pytest.raises(InputError, match="not in \\(0, 1\\]"):
        active_sample([0.5, 0.0])


def test_the_draw_is_seeded_and_spends_the_budget_on_average():
    pi = active_probabilities(np.linspace(0, 1, 1000), 100)
    a, b = active_sample(pi, seed=3), active_sample(pi, seed=3)
    assert (a == b).all() and not (a == active_sample(pi, seed=4)).all()
    counts = [active_sample(pi, seed=s).sum() for s in range(200)]
    assert abs(np.mean(counts) - 100) < 3 * np.std(counts) / np.sqrt(200)


def test_the_estimate_is_exactly_design_unbiased_for_a_fixed_lambda():
    # every one of the 2^5 labellings, weighted by its probability: E[theta] = mean(y)
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    f = np.array([0.9, 0.2, 0.4, 0.7, 0.6])
    pi = np.array([0.3, 0.5, 0.9, 0.4, 0.7])
    total = 0.0
    for pattern in itertools.product((0, 1), repeat=5):
        xi = np.array(pattern, dtype=bool)
        weight = np.prod(np.where(xi, pi, 1 - pi))
        est, _, _ = active_rows(np.where(xi, y, np.nan)[None], f[None], pi[None], 0.7)
        total += weight * est[0]
    assert total == pytest.approx(y.mean(), abs=1e-12)


def test_hand_computation():
    y = np.array([1.0, np.nan, 0.0, np.nan])
    f = np.array([0.8, 0.6, 0.2, 0.4])
    pi = np.array([0.5, 0.25, 0.5, 0.25])
    r = active_mean(y, f, pi, lam=0.5)
    m = 0.5
    h = m + 0.5 * (f - m)                      # 0.65, 0.55, 0.35, 0.45
    t = h + np.where(np.isnan(y), 0, (np.nan_to_num(y) - h) / pi)
    assert r.estimate == pytest.approx(t.mean())
    assert r.se == pytest.approx(np.std(t, ddof=1) / 2)
    assert r.high - r.estimate == pytest.approx(1.959963984540054 * r.se)
    # the tuned lambda by its formula
    w, extra = np.where(np.isnan(y), 0, 1 / pi), 1 / pi - 1
    lam = np.sum(w * extra * (np.nan_to_num(y) - m) * (f - m)) / np.sum(extra * (f - m) ** 2)
    assert active_mean(y, f, pi).lam == pytest.approx(min(max(lam, 0), 1))
    with pytest.raises(InputError, match="at least 2 human labels"):
        active_mean([1, np.nan, np.nan], [1, 2, 3], [0.5, 0.5, 0.5])
    with pytest.raises(InputError, match="different lengths"):
        active_mean([1, 2], [1, 2, 3], [0.5, 0.5, 0.5])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), shift=st.floats(-10, 10))
def test_invariants(seed, shift):
    rng = np.random.default_rng(seed)
    n = 60
    f = rng.uniform(0, 1, n)
    y = f + rng.normal(0, 0.3, n)
    pi = active_probabilities(rng.uniform(0, 1, n), 20)
    xi = active_sample(pi, seed=seed)
    if xi.sum() < 3:
        return
    h = np.where(xi, y, np.nan)
    base = active_mean(h, f, pi)
    order = rng.permutation(n)
    assert active_mean(h[order], f[order], pi[order]).estimate == pytest.approx(base.estimate)
    moved = active_mean(h + shift, f + shift, pi)  # the same units moved: the same lambda
    assert moved.estimate == pytest.approx(base.estimate + shift, abs=1e-9)
    assert moved.se == pytest.approx(base.se, rel=1e-6, abs=1e-12)
    assert base.low <= base.estimate <= base.high and 0 <= base.lam <= 1
    rows = active_rows(h[None], f[None], pi[None])
    assert rows[0][0] == pytest.approx(base.estimate) and rows[1][0] == pytest.approx(base.se)


def test_benchmark_claims():
    bench = json.loads((ROOT / "benchmarks" / "bench_active.json").read_text())
    rows = pd.DataFrame(bench["results"])
    assert bench["reps"] >= 2000
    active = rows[rows.method == "active"].set_index(["scenario", "budget"])
    # narrower where the judge's uncertainty is informative, not where it is not
    for scenario in ("calibrated, confident", "ratings, disagreement"):
        assert (active.loc[scenario]["width / uniform"] < 0.95).all()
    assert (active.loc["calibrated, uncertain"]["width / uniform"] > 0.98).all()
    assert (active.loc["overconfident"]["width / uniform"] > 1.0).all()
    assert (rows.coverage >= 0.93).all(), rows[["scenario", "method", "coverage"]]


# --- CLI ------------------------------------------------------------------------------------

@pytest.fixture
def items(tmp_path):
    rng = np.random.default_rng(0)
    p = rng.beta(0.6, 0.4, 400)
    path = tmp_path / "items.csv"
    pd.DataFrame({"id": range(400), "judge_p": p.round(4),
                  "truth": (rng.random(400) < p).astype(float)}).to_csv(path, index=False)
    return path


def test_cli_plan_active_then_ppi(items, tmp_path, capsys):
    out = tmp_path / "next.csv"
    argv = ["plan", "active", "--data", str(items), "--probability", "judge_p", "--budget",
            "60", "--seed", "1", "--out", str(out), "--id", "id"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    plan = pd.read_csv(out)
    frame = pd.read_csv(items)
    pi = active_probabilities(uncertainty_from_probability(frame.judge_p), 60)
    np.testing.assert_allclose(plan.label_probability, pi)
    assert (plan.send_to_human == active_sample(pi, seed=1)).all()
    assert f"send {plan.send_to_human.sum()} items to humans" in printed and "seed 1" in printed
    plan["human"] = plan.truth.where(plan.send_to_human == 1)
    plan.to_csv(tmp_path / "labelled.csv", index=False)
    assert main(["ppi", "--data", str(tmp_path / "labelled.csv"), "--human", "human",
                 "--judge", "judge_p", "--label-probability", "label_probability",
                 "--estimand", "win_rate", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = active_mean(plan.human, plan.judge_p, plan.label_probability)
    assert got["estimate"] == pytest.approx(want.estimate) and got["low"] == pytest.approx(want.low)
    # a difference is not an active estimate; a probability of 0 is refused
    assert main(["ppi", "--data", str(tmp_path / "labelled.csv"), "--human", "human", "--judge",
                 "judge_p", "--label-probability", "label_probability", "--estimand",
                 "difference"]) == 2
    plan.loc[3, "label_probability"] = 0
    plan.to_csv(tmp_path / "labelled.csv", index=False)
    assert main(["ppi", "--data", str(tmp_path / "labelled.csv"), "--human", "human", "--judge",
                 "judge_p", "--label-probability", "label_probability"]) == 2
    assert "line 5" in capsys.readouterr().err


@pytest.mark.parametrize("damage, message", [
    ("empty", "empty"), ("header", "no rows"), ("cut", "is empty"),
    ("duplicate", "repeats an earlier row"), ("text", "not a number"),
])
def test_cli_plan_active_damaged_files(items, tmp_path, capsys, damage, message):
    lines = items.read_text().splitlines(keepends=True)
    text = {"empty": "", "header": lines[0],
            "cut": "".join(lines[:-1]) + lines[-1].split(",")[0] + ",",
            "duplicate": "".join(lines + lines[7:8]),
            "text": "".join(lines[:3] + ["2,high,1\n"] + lines[4:])}[damage]
    items.write_text(text)
    assert main(["plan", "active", "--data", str(items), "--probability", "judge_p",
                 "--budget", "10", "--out", str(tmp_path / "o.csv"), "--id", "id"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "items.csv" in err[0]
    assert not (tmp_path / "o.csv").exists()
