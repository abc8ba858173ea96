"""Judge panels (storyeval.pairwise.panel): hand-worked pools and weights, a panel of
independent noisy judges beating its best member, leave-one-judge-out rankings, invariants,
and `storyeval pairwise panel` with its two files damaged."""

from __future__ import annotations

import io
import re
from contextlib import redirect_stdout

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.pairwise.panel import judge_panel, pool_scores, ppi_weights


def _panel(seed: int, n_prompts: int = 60, agree=(0.75, 0.7, 0.65), share: float = 0.5):
    """Four systems, every pair on every prompt; judges copy the human verdict with their
    own probability and answer at random otherwise (independent errors)."""
    rng = np.random.default_rng(seed)
    systems = ["Ann", "Bob", "Cy", "Dee"]
    strength = np.array([0.6, 0.2, -0.2, -0.6])
    rows, human = [], []
    for p in range(n_prompts):
        for i in range(4):
            for j in range(i + 1, 4):
                won = rng.random() < 1 / (1 + np.exp(-(strength[i] - strength[j])))
                truth = "A" if won else "B"
                unit = (p, f"{systems[i]}/{p}", f"{systems[j]}/{p}")
                if rng.random() < share:
                    human.append((*unit, truth))
                for k, q in enumerate(agree):
                    v = truth if rng.random() < q else rng.choice(["A", "B"])
                    rows.append((*unit, v, f"judge{k}"))
    judges = pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b", "verdict", "judge"])
    humans = pd.DataFrame(human, columns=["prompt_id", "story_a", "story_b", "verdict"])
    return (judges.assign(dimension="Overall", order="AB"),
            humans.assign(dimension="Overall", order="AB"))


def test_pools_by_hand():
    s = np.array([[1.0, 1.0, 0.0], [0.0, 0.5, 1.0], [0.0, 0.0, 0.5]])
    assert pool_scores(s, "majority").tolist() == [1.0, 0.5, 0.0]
    np.testing.assert_allclose(pool_scores(s, "mean"), [2 / 3, 0.5, 1 / 6])
    np.testing.assert_allclose(pool_scores(s, "ppi", np.array([0.5, 0.5, 0.0])),
                               [1.0, 0.25, 0.0])
    with pytest.raises(InputError):
        pool_scores(s, "median")


def test_ppi_weights_pick_the_informative_judge():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400).astype(float)
    f = np.stack([y, rng.integers(0, 2, 400), 1 - y], axis=1).astype(float)
    w = ppi_weights(y, f)
    np.testing.assert_allclose(w, [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(ppi_weights(y, 1 - f[:, :1]), [1.0])  # none positive: equal


def test_panel_of_independent_judges_beats_its_best_member():
    judges, human = _panel(1, n_prompts=150)
    res = judge_panel(judges, human, n_resamples=500)
    pools = res.pools.set_index("pool")
    assert pools.loc["majority", "difference"] > 0
    assert pools.loc["majority", "pvalue"] < 0.05
    assert pools.loc["majority", "ci_low"] > 0
    assert pools.loc["mean", "best_member"] == "judge0"
    w = res.judges.set_index("judge")["weight_ppi"]
    assert w.sum() == pytest.approx(1.0) and w["judge0"] > w["judge2"]
    assert set(res.rankings["pool"]) == {"mean", "majority", "ppi"}
    assert (res.judges["loo_tau"].between(-1, 1)).all()


def test_a_copy_of_the_best_judge_does_not_beat_it():
    judges, human = _panel(2, n_prompts=60, agree=(0.8, 0.5))
    copy = judges[judges.judge == "judge0"].assign(judge="judge0 copy")
    res = judge_panel(pd.concat([judges[judges.judge == "judge0"], copy]), human,
                      n_resamples=200)
    assert (res.pools["difference"].abs() < 1e-12).all()
    assert (res.judges["loo_rank_changes"] == 0).all()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 500))
def test_invariant_to_row_order_and_judge_names(seed):
    judges, human = _panel(seed, n_prompts=25)
    base = judge_panel(judges, human, n_resamples=200)
    renamed = judges.assign(judge=judges["judge"].map(
        {"judge0": "zz", "judge1": "yy", "judge2": "aa"}))
    other = judge_panel(renamed.sample(frac=1, random_state=seed),
                        human.sample(frac=1, random_state=seed + 1), n_resamples=200)
    cols = ["agreement", "difference", "lam", "rank_set_size"]
    pd.testing.assert_frame_equal(other.pools[cols], base.pools[cols], rtol=1e-9)
    back = {"zz": "judge0", "yy": "judge1", "aa": "judge2"}
    got = other.judges.assign(judge=other.judges["judge"].map(back)).set_index("judge")
    pd.testing.assert_frame_equal(got.sort_index(), base.judges.set_index("judge").sort_index(),
                                  rtol=1e-9)


def test_errors():
    judges, human = _panel(3, n_prompts=20)
    with pytest.raises(InputError, match="at least 2 judges"):
        judge_panel(judges[judges.judge == "judge0"], human)
    gap = judges.drop(index=judges.index[judges.judge == "judge1"][0])
    with pytest.raises(InputError, match="judge 'judge1' has no verdict on prompt '0'"):
        judge_panel(gap, human)
    extra = human.iloc[:1].assign(prompt_id=99, story_a="Ann/99", story_b="Bob/99")
    with pytest.raises(InputError, match="has no verdict in"):
        judge_panel(judges, pd.concat([human, extra]))
    with pytest.raises(InputError, match="loo_pool"):
        judge_panel(judges, human, loo_pool="median")


# ---------------------------------------------------------------------------- the command
@pytest.fixture
def files(tmp_path):
    judges, human = _panel(4, n_prompts=30)
    paths = {"judges.csv": tmp_path / "judges.csv", "human.csv": tmp_path / "human.csv"}
    judges.to_csv(paths["judges.csv"], index=False)
    human.to_csv(paths["human.csv"], index=False)
    return paths


def _argv(files):
    return ["pairwise", "panel", str(files["judges.csv"]), "--human", str(files["human.csv"]),
            "--resamples", "200"]


def test_command_equals_the_library(files):
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main([*_argv(files), "--format", "csv"]) == 0
    got = pd.read_csv(io.StringIO(buf.getvalue()))
    res = judge_panel(pd.read_csv(files["judges.csv"]), pd.read_csv(files["human.csv"]),
                      n_resamples=200)
    np.testing.assert_allclose(got["difference"], res.pools["difference"], rtol=1e-12)
    np.testing.assert_allclose(got["pvalue"], res.pools["pvalue"], rtol=1e-12)
    assert (got["seed"] == 0).all()


def test_command_text_and_out(files, tmp_path, capsys):
    assert main([*_argv(files), "--out", str(tmp_path / "rep")]) == 0
    out = capsys.readouterr().out
    assert "pools against the best single judge" in out and "random seed: 0" in out
    assert max(len(line) for line in out.splitlines()) <= 120
    for name in ("pools.csv", "judges.csv", "rankings.csv", "index.html"):
        assert (tmp_path / "rep" / name).exists()


def _cut(text):
    head, last = text.rstrip("\n").rsplit("\n", 1)
    return head + "\n" + last[:last.index(",") + 1]


DAMAGE = {"empty": lambda t: "", "header": lambda t: t.splitlines()[0] + "\n", "cut": _cut,
          "duplicate": lambda t: t + t.splitlines()[1] + "\n"}


@pytest.mark.parametrize("name", ["judges.csv", "human.csv"])
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_file_is_one_line_naming_it(files, name, damage, capsys):
    files[name].write_text(DAMAGE[damage](files[name].read_text()))
    code = main(_argv(files))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert re.match(r"storyeval [a-z ]+: error: ", lines[0]) and name in lines[0], lines[0]
