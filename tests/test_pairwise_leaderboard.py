"""Arena-scale leaderboards: point estimates against choix (aggregated counts) and FastChat's
Bradley-Terry objective, the count-matrix bootstrap against a per-prompt refit, rank intervals,
the CI-aware rank rule and BH significance groups against independent computations."""

from __future__ import annotations

import importlib
import math

import choix
import numpy as np
import pandas as pd
import pytest
from scipy.stats import false_discovery_control, rankdata

from storyeval.exceptions import InputError
from storyeval.pairwise import fit_bradley_terry
from storyeval.pairwise.arena import bootstrap_counts, count_battles, fit_counts
from storyeval.pairwise.leaderboard import ELO_SCALE, leaderboard, leaderboard_from_counts


def _battles(n=4000, s=12, seed=0, nu=0.5, n_prompts=None):
    g = np.random.default_rng(seed)
    theta = g.normal(size=s)
    a = g.integers(0, s, n)
    b = (a + g.integers(1, s, n)) % s
    d = theta[a] - theta[b]
    p = np.stack([np.exp(d / 2), np.exp(-d / 2), np.full(n, nu)], axis=1)
    p /= p.sum(axis=1, keepdims=True)
    u = g.random(n)
    out = (u > p[:, 0]).astype(int) + (u > p[:, 0] + p[:, 1])
    prompts = g.integers(0, n_prompts, n) if n_prompts else None
    return a, b, out, prompts


def test_point_estimate_equals_choix_on_aggregated_counts():
    a, b, out, _ = _battles(nu=0.0)
    c = count_battles(a, b, out, 12)
    theta, nu, _, conv, _ = fit_counts(c.wins, c.ties)
    ref = choix.ilsr_pairwise_dense(c.wins, alpha=0.0, tol=1e-14, max_iter=100_000)
    np.testing.assert_allclose(theta, ref - ref.mean(), atol=1e-6)
    assert conv and nu == 0.0


def test_half_ties_equal_choix_on_doubled_counts():
    # ties="half": each tie half a win for each side, i.e. choix on 2 W + T (FastChat's rows)
    a, b, out, _ = _battles(seed=3)
    c = count_battles(a, b, out, 12)
    theta, *_ = fit_counts(c.wins, c.ties, ties_model="half")
    ref = choix.ilsr_pairwise_dense(2 * c.wins + c.ties, alpha=0.0, tol=1e-14,
                                    max_iter=100_000)
    np.testing.assert_allclose(theta, ref - ref.mean(), atol=1e-6)


def test_regularized_equals_choix_opt_pairwise():
    a, b, out, _ = _battles(n=300, nu=0.0, seed=4)
    c = count_battles(a, b, out, 12)
    theta, *_ = fit_counts(c.wins, c.ties, regularization=0.7)
    pairs = [(i, j) for i in range(12) for j in range(12) for _ in range(int(c.wins[i, j]))]
    ref = choix.opt_pairwise(12, pairs, alpha=0.7, method="Newton-CG", tol=1e-12)
    np.testing.assert_allclose(theta, ref - ref.mean(), atol=1e-6)


def test_davidson_matches_fit_bradley_terry_and_its_score_equations():
    a, b, out, _ = _battles(seed=5)
    c = count_battles(a, b, out, 12)
    theta, nu, *_ = fit_counts(c.wins, c.ties)
    res = fit_bradley_terry(c.wins, c.ties)
    np.testing.assert_allclose(theta, res.log_strength, atol=1e-12)
    # Davidson's estimating equations: observed score (win 1, tie 1/2) = expected score
    pi = np.exp(theta)
    d = pi[:, None] + pi[None, :] + nu * np.sqrt(pi[:, None] * pi[None, :])
    n = c.wins + c.wins.T + c.ties
    expected = (n * (pi[:, None] + 0.5 * nu * np.sqrt(pi[:, None] * pi[None, :])) / d).sum(1)
    np.testing.assert_allclose(expected, c.wins.sum(1) + 0.5 * c.ties.sum(1), atol=1e-7)


def _fastchat_rating_systems():
    try:
        return importlib.import_module("fastchat.serve.monitor.rating_systems")
    except Exception:  # noqa: BLE001 - any import failure means the reference is absent
        return None


def test_equals_fastchat_bt_objective():
    rs = _fastchat_rating_systems()
    if rs is None:
        pytest.skip("FastChat with rating_systems (compute_bt) is not installed")
    from scipy.optimize import minimize

    a, b, out, _ = _battles(n=20_000, s=20, seed=6)
    names = np.array([f"m{i:02d}" for i in range(20)])
    df = pd.DataFrame({"model_a": names[a], "model_b": names[b],
                       "winner": np.array(["model_a", "model_b", "tie"])[out]})
    matchups, outcomes, models, weights = rs.preprocess_for_bt(df)
    res = minimize(rs.bt_loss_and_grad, np.zeros(len(models)),
                   args=(matchups, outcomes, weights, math.log(10.0)), jac=True,
                   method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10_000})
    ref = pd.Series(400 * (res.x - res.x.mean()) + 1000, index=models).reindex(names)
    c = count_battles(a, b, out, 20)
    theta, *_ = fit_counts(c.wins, c.ties, ties_model="half")
    # equal on the log-strength scale to 1e-6 (Elo = 400 / ln 10 * theta + 1000)
    np.testing.assert_allclose(theta, (ref.to_numpy() - 1000) / ELO_SCALE, atol=1e-6)


def _naive_prompt_bootstrap(a, b, out, prompts, s, n_resamples, seed):
    """Dense per-prompt refit with fit_bradley_terry: the reference for the count path."""
    n_p = prompts.max() + 1
    wins = np.zeros((n_p, s, s))
    ties = np.zeros((n_p, s, s))
    for k in range(len(a)):
        if out[k] == 0:
            wins[prompts[k], a[k], b[k]] += 1
        elif out[k] == 1:
            wins[prompts[k], b[k], a[k]] += 1
        else:
            ties[prompts[k], a[k], b[k]] += 1
            ties[prompts[k], b[k], a[k]] += 1
    g = np.random.default_rng(seed)
    draws = g.integers(0, n_p, size=(n_resamples, n_p))
    rows = []
    for row in draws:
        m = np.bincount(row, minlength=n_p)
        res = fit_bradley_terry(np.einsum("p,pij->ij", m, wins), np.einsum("p,pij->ij", m, ties))
        rows.append(res.log_strength)
    return np.array(rows)


@pytest.mark.parametrize(("n", "seed", "n_prompts", "reps", "rs"),
                         [(600, 7, 40, 30, 11), (50, 2, 30, 40, 2)])
def test_count_bootstrap_equals_per_prompt_refit(n, seed, n_prompts, reps, rs):
    # the second design has few battles per pair: some prompt resamples lose the strong
    # connectivity (no MLE: NaN rows, exactly those of the reference)
    a, b, out, prompts = _battles(n=n, s=6, seed=seed, n_prompts=n_prompts)
    c = count_battles(a, b, out, 6, cluster=prompts)
    theta, nu, *_ = fit_counts(c.wins, c.ties)
    got = bootstrap_counts(c, n_resamples=reps, start=(theta, nu), random_state=rs)
    ref = _naive_prompt_bootstrap(a, b, out, prompts, 6, reps, rs)
    if n < 100:
        assert 0 < np.isnan(got).any(axis=1).sum() < reps
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_allclose(got, ref, atol=1e-7)


def test_battle_bootstrap_resamples_battles_with_weights():
    # strong verdicts weigh 3: the battle multinomial keeps each battle's weight
    a, b, out, _ = _battles(n=3000, s=5, seed=8)
    w = np.where(np.arange(3000) % 4 == 0, 3.0, 1.0)
    c = count_battles(a, b, out, 5, weight=w)
    cells, weights, cnt = c.categories
    assert cnt.sum() == 3000 and set(np.unique(weights)) == {1.0, 3.0}
    total = np.zeros(2 * 25)
    np.add.at(total, cells, weights * cnt)
    np.testing.assert_allclose(total[:25].reshape(5, 5), c.wins)
    theta, nu, *_ = fit_counts(c.wins, c.ties)
    boot = bootstrap_counts(c, n_resamples=400, start=(theta, nu), random_state=0)
    assert np.isfinite(boot).all()
    # the bootstrap is centred near the estimate (resampling n battles from n)
    np.testing.assert_allclose(boot.mean(0), theta, atol=0.03)


def _verdicts(n=3000, s=8, n_prompts=60, seed=9):
    a, b, out, prompts = _battles(n=n, s=s, seed=seed, n_prompts=n_prompts)
    names = np.array([f"sys{i}" for i in range(s)])
    return pd.DataFrame({"prompt_id": prompts, "story_a": [f"{x}/{p}" for x, p in
                                                          zip(names[a], prompts, strict=True)],
                         "story_b": [f"{x}/{p}" for x, p in zip(names[b], prompts, strict=True)],
                         "dimension": "Overall",
                         "verdict": np.array(["A", "B", "same"])[out],
                         "order": "AB", "judge": [f"j{k}" for k in range(n)]})


def test_leaderboard_table_rank_intervals_and_ci_aware_rank():
    board = leaderboard(_verdicts(), n_resamples=300, random_state=1)
    tab = board.table
    assert list(tab["log_strength"]) == sorted(tab["log_strength"], reverse=True)
    assert tab["seed"].iloc[0] == 1 and tab["resample"].iloc[0] == "prompt"
    samples = board.samples
    pos = [board.items.index(it) for it in tab["item"]]
    # percentile interval of the bootstrap ranks, computed independently
    ranks = rankdata(-samples, method="min", axis=1)[:, pos]
    lo = np.quantile(ranks, 0.025, axis=0, method="inverted_cdf")
    hi = np.quantile(ranks, 0.975, axis=0, method="inverted_cdf")
    np.testing.assert_array_equal(tab["rank_ci_low"].to_numpy(int), lo)
    np.testing.assert_array_equal(tab["rank_ci_high"].to_numpy(int), hi)
    # FastChat's rule: 1 + number of systems whose lower bound exceeds this one's upper bound
    low, high = tab["ci_low"].to_numpy(), tab["ci_high"].to_numpy()
    expect = [1 + sum(low[j] > high[i] for j in range(len(tab))) for i in range(len(tab))]
    assert tab["rank_ci_aware"].tolist() == expect
    # the strength interval covers the point estimate, and Elo is 400/ln10 theta + 1000
    assert ((tab["ci_low"] <= tab["log_strength"]) & (tab["log_strength"] <= tab["ci_high"])).all()
    np.testing.assert_allclose(tab["elo"], 400 / math.log(10) * tab["log_strength"] + 1000)


def test_pairwise_tests_bh_and_groups():
    board = leaderboard(_verdicts(seed=10), n_resamples=200, random_state=2)
    pairs = board.pairs
    np.testing.assert_allclose(pairs["pvalue_bh"], false_discovery_control(pairs["pvalue"]))
    tab = board.table
    groups = tab["group"].to_numpy(int)
    assert groups[0] == 1 and (np.diff(groups) >= 0).all()
    # every item in a group is not significantly different from the group's leader
    for g in np.unique(groups):
        members = tab["item"][groups == g].tolist()
        lead = members[0]
        for m in members[1:]:
            hit = pairs[((pairs.item_a == lead) & (pairs.item_b == m))
                        | ((pairs.item_a == m) & (pairs.item_b == lead))]
            assert hit["pvalue_bh"].iloc[0] >= 0.05


def test_seed_reproducible_and_battle_resampling():
    v = _verdicts(seed=11)
    t1 = leaderboard(v, n_resamples=50).table
    t2 = leaderboard(v, n_resamples=50).table
    pd.testing.assert_frame_equal(t1, t2)
    t3 = leaderboard(v, n_resamples=50, resample="battle").table
    assert t3["resample"].iloc[0] == "battle"
    np.testing.assert_allclose(t3["log_strength"], t1["log_strength"])


def test_bad_options():
    v = _verdicts(seed=12)
    with pytest.raises(InputError, match="resample"):
        leaderboard(v, resample="judge")
    with pytest.raises(InputError, match="confidence_level"):
        leaderboard(v, confidence_level=1.5)


def test_large_counts_fast_path_matches_small():
    # 100 systems through the count path: finite, centred, and the leaderboard keeps S rows
    a, b, out, _ = _battles(n=50_000, s=100, seed=13)
    c = count_battles(a, b, out, 100)
    board = leaderboard_from_counts(c, [f"m{i}" for i in range(100)], n_resamples=20,
                                    random_state=0, tests=False)
    assert len(board.table) == 100 and abs(board.table["log_strength"].mean()) < 1e-12
    assert board.table["n_resamples_valid"].iloc[0] == 20


# --------------------------------------------------------------------------- CLI


def test_cli_strengths_leaderboard_and_report(tmp_path, capsys):
    import json

    from storyeval.cli import main

    path = tmp_path / "v.csv"
    _verdicts(seed=14).to_csv(path, index=False)
    out = tmp_path / "report"
    assert main(["pairwise", "strengths", str(path), "--resamples", "100", "--format", "json",
                 "--out", str(out)]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert {"rank_ci_low", "rank_ci_high", "rank_ci_aware", "group", "elo"} <= set(rec[0])
    assert rec[0]["seed"] == 0
    assert {p.name for p in out.iterdir()} >= {"index.html", "leaderboard.csv", "pairs.csv",
                                              "forest.svg"}
    page = (out / "index.html").read_text()
    assert "forest.svg" in page and "Benjamini-Hochberg" in page
    assert (out / "forest.svg").read_text().count("<circle") == 8
    # the same library call gives the same table
    lib = leaderboard(_verdicts(seed=14), n_resamples=100).table
    got = pd.read_csv(out / "leaderboard.csv")
    np.testing.assert_allclose(got["ci_low"], lib["ci_low"])


def test_cli_strengths_matrix(tmp_path, capsys):
    import json

    from storyeval.cli import main

    w = tmp_path / "w.csv"
    w.write_text("0,41,47\n15,0,33\n9,23,0\n")
    assert main(["pairwise", "strengths", "--matrix", str(w), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert [r["item"] for r in rec] == ["1", "2", "3"]
    np.testing.assert_allclose([r["se"] for r in rec], [0.1544, 0.1368, 0.1450], atol=1e-4)
    assert main(["pairwise", "strengths"]) == 2
    assert "one of them" in capsys.readouterr().err


def test_graded_verdicts_weight_strong_verdicts():
    from storyeval.pairwise.verdicts import validate_verdicts

    v = _verdicts(n=1500, seed=15)
    g = np.random.default_rng(15)
    strong = g.random(len(v)) < 0.3
    labels = {"A": "A>B", "B": "B>A", "same": "A=B"}
    graded = v.assign(verdict=[("A>>B" if x == "A" else "B>>A" if x == "B" else "A=B")
                               if s else labels[x] for x, s in zip(v["verdict"], strong,
                                                                   strict=True)])
    canon = validate_verdicts(graded)
    assert canon["strong"].sum() == int((strong & (v["verdict"] != "same")).sum())
    assert (canon["verdict"] == v["verdict"]).all()
    board = leaderboard(graded, n_resamples=0, strong_weight=3)
    # Arena-Hard's reading: a strong verdict counts as three verdicts
    rep = pd.concat([v] + [v[canon["strong"].to_numpy()].assign(judge=lambda d, k=k: d["judge"]
                                                                 + f"-copy{k}")
                           for k in range(2)], ignore_index=True)
    ref = leaderboard(rep, n_resamples=0).table
    np.testing.assert_allclose(board.table["log_strength"], ref["log_strength"], atol=1e-9)
    assert board.table["item"].tolist() == ref["item"].tolist()
    with pytest.raises(InputError, match="graded verdict"):
        validate_verdicts(v.assign(verdict="A>>>B"))


def test_bootstrap_threads_change_nothing():
    a, b, out, prompts = _battles(n=2000, s=8, seed=16, n_prompts=50)
    c = count_battles(a, b, out, 8, cluster=prompts)
    theta, nu, *_ = fit_counts(c.wins, c.ties)
    one = bootstrap_counts(c, n_resamples=37, start=(theta, nu), random_state=3, workers=1)
    two = bootstrap_counts(c, n_resamples=37, start=(theta, nu), random_state=3, workers=2)
    np.testing.assert_array_equal(one, two)
    c = count_battles(a, b, out, 8)  # battles: child generators per chunk
    one = bootstrap_counts(c, n_resamples=37, start=(theta, nu), random_state=3, workers=1)
    two = bootstrap_counts(c, n_resamples=37, start=(theta, nu), random_state=3, workers=2)
    np.testing.assert_array_equal(one, two)


def test_batched_connectivity_equals_scipy_strong_components():
    # the bootstrap's all-resamples-at-once check against scipy's strongly connected components
    from scipy.sparse.csgraph import connected_components

    from storyeval.pairwise.arena import _strongly_connected

    g = np.random.default_rng(21)
    s = 7
    i, j = np.nonzero(np.triu(np.ones((s, s)), 1))
    fwd, bwd = g.random((400, len(i))) < 0.22, g.random((400, len(i))) < 0.22
    got = _strongly_connected(s, i, j, fwd, bwd)
    ref = []
    for f, b in zip(fwd, bwd, strict=True):
        adj = np.zeros((s, s), dtype=np.int8)
        adj[i, j], adj[j, i] = f, b
        ref.append(connected_components(adj, directed=True, connection="strong")[0] == 1)
    assert 0 < sum(ref) < 400  # both kinds of graph occur
    np.testing.assert_array_equal(got, ref)


def test_fast_gradient_equals_full_evaluation():
    from storyeval.pairwise.arena import _evaluate, _gradient, _Pairs

    g = np.random.default_rng(4)
    wins = g.poisson(3.0, (5, 7, 7)).astype(float)
    ties = g.poisson(1.0, (5, 7, 7)).astype(float)
    ties += np.swapaxes(ties, 1, 2)
    wins[:, np.arange(7), np.arange(7)] = ties[:, np.arange(7), np.arange(7)] = 0
    pr = _Pairs(wins, ties)
    theta, lam = g.normal(size=(5, 7)), g.normal(size=5)
    for fit_tie in (False, True):
        np.testing.assert_allclose(_gradient(pr, theta, lam, fit_tie, 0.3),
                                   _evaluate(pr, theta, lam, fit_tie, 0.3, "gradient")[1],
                                   rtol=1e-12, atol=1e-12)


def test_progress_bar_on_request_and_quiet_when_piped(tmp_path, capsys, monkeypatch):
    from storyeval.cli import main

    monkeypatch.delenv("STORYEVAL_NO_PROGRESS", raising=False)  # set by conftest
    v = _verdicts(seed=14)
    leaderboard(v, n_resamples=20, show_progress=True)
    assert "bootstrap" in capsys.readouterr().err
    # the command: stderr is not a terminal here, so no stage line and no bar; the flag and the
    # environment variable switch them off on a terminal too
    path = tmp_path / "v.csv"
    v.to_csv(path, index=False)
    assert main(["pairwise", "strengths", str(path), "--resamples", "20"]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    assert main(["pairwise", "strengths", str(path), "--resamples", "20"]) == 0
    assert "reading v.csv" in capsys.readouterr().err
    assert main(["pairwise", "strengths", str(path), "--resamples", "20", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("STORYEVAL_NO_PROGRESS", "1")
    assert main(["pairwise", "strengths", str(path), "--resamples", "20"]) == 0
    assert capsys.readouterr().err == ""
