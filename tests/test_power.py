"""storyeval.power.planner and `storyeval power`: the sample-size planner."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.power.planner import fisher_z_power, plan_power, simulate_power


def _tol(p: float, reps: int, k: float = 4.0) -> float:
    return k * math.sqrt(max(p * (1 - p), 0.01) / reps)


# ------------------------------------------------------------------------------ closed form
def test_fisher_z_power_formula():
    # Phi(d - q) + Phi(-d - q), d = |z1 - z2| / sqrt(2 / (n - 3))
    d = abs(math.atanh(0.5) - math.atanh(0.3)) / math.sqrt(2 / 97)
    want = st.norm.cdf(d - 1.959964) + st.norm.cdf(-d - 1.959964)
    assert fisher_z_power(0.5, 0.3, 100) == pytest.approx(want, abs=1e-6)
    assert fisher_z_power(0.4, 0.4, 50) == pytest.approx(0.05)
    with pytest.raises(InputError):
        fisher_z_power(0.4, 0.3, 3)


@pytest.mark.parametrize(("r1", "r2"), [(0.5, 0.3), (0.2, 0.45)])
def test_simulated_power_matches_fisher_z_closed_form(r1, r2):
    reps = 3000
    table = simulate_power(r1, r2, 0.0, n=[40, 120, 300], coef="pearson", test="fisher-z",
                           human_scale="continuous", replications=reps, seed=1)
    for row in table.itertuples():
        want = fisher_z_power(r1, r2, row.n)
        assert abs(row.power - want) <= _tol(want, reps), (row.n, row.power, want)
        assert row.mc_se == pytest.approx(math.sqrt(row.power * (1 - row.power) / reps))


# ------------------------------------------------------------------------------ sanity
def test_power_rises_with_n_and_with_delta():
    small = plan_power(0.5, 0.6, delta=0.05, coef="pearson", n=[50, 200, 800],
                       replications=1500, full_grid=True, seed=2)
    large = plan_power(0.5, 0.6, delta=0.15, coef="pearson", n=[50, 200, 800],
                       replications=1500, full_grid=True, seed=2)
    for res in (small, large):
        assert res.settings["test"] == "jackknife"  # meta's default for Pearson
        assert np.all(np.diff(res.table["power"]) > 0)
    assert np.all(large.table["power"].to_numpy() > small.table["power"].to_numpy())
    assert large.required_n == int(large.table.loc[large.table["power"] >= 0.8, "n"].iloc[0])


@pytest.mark.parametrize(("coef", "level", "n", "reps"), [
    ("pearson", "overall", 100, 4000),      # jackknife
    ("kendall_b", "overall", 80, 2000),     # ustat, human = mean of three ratings (ties)
    ("kendall_b", "system", 10, 1000),      # permutation-random, whole prompts swapped
])
def test_level_at_delta_zero(coef, level, n, reps):
    table = simulate_power(0.4, 0.4, 0.6, n=[n], coef=coef, level=level,
                           replications=reps, prompts=20, seed=3)
    assert abs(table["power"].iloc[0] - 0.05) <= _tol(0.05, reps)


def test_discrete_human_calibration_reaches_target():
    from storyeval.power.batch import _coef
    from storyeval.power.model import _calibrate, _Human, _ratings_scale

    human = _Human(_ratings_scale())
    rng = np.random.default_rng(7)
    z, e = rng.normal(size=(2, 150_000))
    for coef in ("kendall_b", "pearson"):
        rho = _calibrate((0.4,), coef, human)[0]
        got = _coef(human(z)[None], (rho * z + math.sqrt(1 - rho**2) * e)[None], coef)[0]
        assert got == pytest.approx(0.4, abs=0.01)


def test_stop_at_target_and_not_reached():
    res = plan_power((0.6, 0.3), 0.5, coef="pearson", n=[20, 200, 400, 800],
                     replications=300)
    assert res.required_n == 200 and list(res.table["n"]) == [20, 200]
    assert any("not simulated" in note for note in res.notes)
    res = plan_power((0.41, 0.40), 0.5, coef="pearson", n=[20, 40], replications=200)
    assert res.required_n is None and "not reached" in res.summary()


# ------------------------------------------------------------------------------ pilot mode
def _pilot_frame(seed: int = 0, systems: int = 6, prompts: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    q = rng.normal(0, 0.3, (systems, 1)) + rng.normal(size=(systems, prompts))
    h = np.clip(np.rint(3 + q[..., None] + rng.normal(0, 0.8, q.shape + (3,))), 1, 5).mean(-1)
    a = q + rng.normal(size=q.shape)
    b = -(q + 2 * rng.normal(size=q.shape))  # lower is better
    index = pd.MultiIndex.from_product([[f"s{i}" for i in range(systems)], range(prompts)],
                                       names=["system", "prompt_id"])
    return pd.DataFrame({"Overall": h.ravel(), "mine": a.ravel(), "bleu": b.ravel()},
                        index=index)


def test_pilot_mode_estimates_the_correlations():
    wide = _pilot_frame()
    res = plan_power(data=wide, measures=("mine", "bleu"), criterion="Overall",
                     n=[50, 100], replications=200, full_grid=True)
    s = res.settings
    r_ha = st.kendalltau(wide["Overall"], wide["mine"]).statistic
    r_hb = st.kendalltau(wide["Overall"], wide["bleu"]).statistic
    r_ab = st.kendalltau(wide["mine"], wide["bleu"]).statistic
    assert s["mode"] == "pilot" and s["n_pilot"] == len(wide)
    assert s["r_h1"] == pytest.approx(r_ha) and s["r_12"] == pytest.approx(-r_ab)
    assert s["delta"] == pytest.approx(r_ha - abs(r_hb))  # observed delta, bleu reversed
    assert any("reversed" in note for note in res.notes)
    assert "values of the pilot criterion" in s["human_scale"]
    assert list(res.table.columns[:4]) == ["n", "stories", "power", "mc_se"]
    res = plan_power(data=wide, measures=("mine", "bleu"), criterion="Overall", delta=0.1,
                     level="system", n=[5], replications=100, n_permutations=50)
    assert res.settings["prompts"] == 30 and res.settings["delta"] == pytest.approx(0.1)
    assert res.table["stories"].iloc[0] == 150


def test_plan_power_errors():
    with pytest.raises(InputError, match="--delta is needed"):
        plan_power(0.4, 0.5)
    with pytest.raises(InputError, match="--r-between"):
        plan_power((0.9, 0.1), -0.9)
    with pytest.raises(InputError, match="not both"):
        plan_power((0.4, 0.3), 0.5, data=_pilot_frame(), measures=("mine", "bleu"),
                   criterion="Overall")
    with pytest.raises(InputError, match="criterion"):
        plan_power(data=_pilot_frame(), measures=("mine", "bleu"), criterion="Nope")
    with pytest.raises(InputError, match="--test"):
        plan_power((0.4, 0.3), 0.5, level="system", test="fisher-z")
    with pytest.raises(InputError, match="--n"):
        plan_power((0.4, 0.3), 0.5, n=[2, 10])
    with pytest.raises(InputError, match="--power"):
        plan_power((0.4, 0.3), 0.5, power=1.5)
    with pytest.raises(InputError, match="--delta too large"):
        plan_power(0.4, 0.5, delta=1.5)


# ------------------------------------------------------------------------------ CLI
def test_cli_writes_csv_and_png(tmp_path, capsys):
    out = tmp_path / "plan"
    code = main(["power", "--r-human", "0.45,0.35", "--r-between", "0.6", "--coef", "pearson",
                 "--n", "50,400", "--replications", "200", "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "jackknife" in text and "power" in text
    table = pd.read_csv(out / "power.csv")
    assert list(table["n"]) == [50, 400] and set(table["test"]) == {"jackknife"}
    assert (out / "power.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    code = main(["power", "--r-human", "0.45", "--delta", "0.1", "--r-between", "0.6",
                 "--n", "30", "--replications", "50", "--format", "json"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["settings"]["test"] == "ustat" and payload["table"][0]["n"] == 30


def test_cli_pilot_mode(tmp_path, capsys):
    path = tmp_path / "pilot.csv"
    _pilot_frame().reset_index().to_csv(path, index=False)
    code = main(["power", "--data", str(path), "--measures", "mine,bleu", "--criterion",
                 "Overall", "--n", "40", "--replications", "50", "--format", "csv"])
    assert code == 0
    table = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert table["n"].tolist() == [40] and table["level"].iloc[0] == "overall"


@pytest.mark.parametrize(("argv", "message"), [
    (["--r-human", "0.4", "--r-between", "0.5"], "--delta"),
    (["--r-human", "0.4,0.3"], "--r-between"),
    (["--r-human", "0.4,0.3", "--r-between", "0.5", "--measures", "a,b"], "not both"),
    (["--r-human", "0.4,x", "--r-between", "0.5"], "--r-human"),
    (["--r-human", "0.4,0.3", "--r-between", "0.5", "--coef", "pearson", "--test", "ustat"],
     "--test"),
    (["--r-human", "0.4,0.3", "--r-between", "0.5", "--alpha", "0"], "--alpha"),
    (["--criterion", "Overall"], "--measures"),
    ([], "--r-human"),
])
def test_cli_errors(argv, message, capsys):
    assert main(["power", *argv]) == 2
    err = capsys.readouterr().err
    assert "storyeval power: error:" in err and message in err


def test_progress_bar_on_request_and_quiet_when_piped(capsys, monkeypatch):
    monkeypatch.delenv("STORYEVAL_NO_PROGRESS", raising=False)  # set by conftest
    plan_power((0.5, 0.4), 0.6, coef="pearson", n=[50], replications=20, show_progress=True)
    assert "simulating n=50" in capsys.readouterr().err
    assert main(["power", "--r-human", "0.5,0.4", "--r-between", "0.6", "--coef", "pearson",
                 "--n", "50", "--replications", "20"]) == 0
    assert capsys.readouterr().err == ""  # standard error is not a terminal here
    assert main(["power", "--r-human", "0.5,0.4", "--r-between", "0.6", "--coef", "pearson",
                 "--n", "50", "--replications", "20", "--no-progress"]) == 0
