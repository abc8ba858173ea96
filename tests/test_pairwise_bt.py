"""Bradley-Terry strengths: against choix and a statsmodels logistic regression (no ties), and
against Davidson's estimating equations and an independent likelihood fit (ties)."""

from __future__ import annotations

import warnings

import choix
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import optimize

from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.pairwise import bradley_terry, fit_bradley_terry, win_matrix


def _random_counts(k=5, seed=0, ties=True, n=8):
    g = np.random.default_rng(seed)
    theta = g.normal(size=k)
    wins = np.zeros((k, k))
    tie = np.zeros((k, k))
    for i in range(k):
        for j in range(i + 1, k):
            pi, pj, pt = np.exp(theta[i]), np.exp(theta[j]), 0.8 * np.exp((theta[i] + theta[j]) / 2)
            p = np.array([pi, pj, pt if ties else 0.0])
            c = g.multinomial(n, p / p.sum())
            wins[i, j], wins[j, i] = c[0], c[1]
            tie[i, j] = tie[j, i] = c[2]
    return wins, tie


def _pairs_from_wins(wins):
    return [(i, j) for i in range(len(wins)) for j in range(len(wins))
            for _ in range(int(wins[i, j]))]


def test_no_ties_equals_choix_ilsr():
    wins, _ = _random_counts(k=6, seed=1, ties=False, n=10)
    res = fit_bradley_terry(wins)
    ref = choix.ilsr_pairwise(6, _pairs_from_wins(wins), alpha=0.0, tol=1e-12)  # mean-zero
    np.testing.assert_allclose(res.log_strength, ref - ref.mean(), atol=1e-6)
    assert res.tie_parameter == 0.0 and res.converged


def test_no_ties_equals_statsmodels_logit():
    wins, _ = _random_counts(k=5, seed=2, ties=False, n=12)
    k = len(wins)
    rows, y = [], []
    for i, j in _pairs_from_wins(wins):  # one row per comparison, outcome "first item won"
        x = np.zeros(k)
        x[i], x[j] = 1.0, -1.0
        rows.append(x[:-1])  # last item is the reference (theta = 0)
        y.append(1.0)
        rows.append(-x[:-1])
        y.append(0.0)
    fit = sm.Logit(np.array(y), np.array(rows)).fit(disp=0, method="newton", tol=1e-12)
    theta = np.append(fit.params, 0.0)
    res = fit_bradley_terry(wins)
    np.testing.assert_allclose(res.log_strength, theta - theta.mean(), atol=1e-6)
    # the Logit log-likelihood counts every comparison twice (both codings)
    assert res.log_likelihood == pytest.approx(fit.llf / 2, abs=1e-8)


def test_davidson_estimating_equations_hold():
    wins, ties = _random_counts(k=5, seed=3)
    res = fit_bradley_terry(wins, ties)
    th, nu = res.log_strength, res.tie_parameter
    pi = np.exp(th)
    d = pi[:, None] + pi[None, :] + nu * np.sqrt(pi[:, None] * pi[None, :])
    p = pi[:, None] / d
    q = nu * np.sqrt(pi[:, None] * pi[None, :]) / d
    np.fill_diagonal(p, 0)
    np.fill_diagonal(q, 0)
    n = wins + wins.T + ties
    # Davidson (1970): observed score (win 1, tie 1/2) = expected score, for every item
    np.testing.assert_allclose((wins + ties / 2).sum(axis=1), (n * (p + q / 2)).sum(axis=1),
                               atol=1e-6)
    # and the number of ties equals its expectation
    assert ties.sum() / 2 == pytest.approx((n * q).sum() / 2, abs=1e-6)


def test_davidson_equals_independent_likelihood_fit():
    wins, ties = _random_counts(k=4, seed=4, n=15)

    def negll(x):  # Davidson likelihood written directly from the outcome probabilities
        th = np.append(x[:-1], 0.0)
        nu = np.exp(x[-1])
        total = 0.0
        for i in range(4):
            for j in range(4):
                if i == j:
                    continue
                d = np.exp(th[i]) + np.exp(th[j]) + nu * np.exp((th[i] + th[j]) / 2)
                total += wins[i, j] * np.log(np.exp(th[i]) / d)
                if i < j:
                    total += ties[i, j] * np.log(nu * np.exp((th[i] + th[j]) / 2) / d)
        return -total

    ref = optimize.minimize(negll, np.zeros(4), method="Nelder-Mead",
                            options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 40000})
    th = np.append(ref.x[:-1], 0.0)
    res = fit_bradley_terry(wins, ties)
    np.testing.assert_allclose(res.log_strength, th - th.mean(), atol=1e-4)
    assert res.tie_parameter == pytest.approx(np.exp(ref.x[-1]), rel=1e-4)
    assert res.log_likelihood == pytest.approx(-ref.fun, abs=1e-7)


def test_ties_as_half_wins_equals_choix_on_doubled_data():
    wins, ties = _random_counts(k=5, seed=5)
    doubled = _pairs_from_wins(2 * wins)
    for i in range(5):
        for j in range(5):
            doubled += [(i, j)] * int(ties[i, j])  # a tie = half a win each way, doubled
    ref = choix.ilsr_pairwise(5, doubled, alpha=0.0, tol=1e-12)
    res = fit_bradley_terry(wins, ties, ties_model="half")
    np.testing.assert_allclose(res.log_strength, ref - ref.mean(), atol=1e-6)
    dropped = fit_bradley_terry(wins, ties, ties_model="drop")
    np.testing.assert_allclose(dropped.log_strength, fit_bradley_terry(wins).log_strength)


def test_nonexistent_mle_warns_and_regularization_equals_choix():
    wins = np.array([[0, 2, 1], [0, 0, 1], [0, 1, 0]], dtype=float)  # item 0 never loses
    with pytest.warns(UndefinedStatisticWarning, match="does not exist"):
        res = fit_bradley_terry(wins)
    assert np.isnan(res.log_strength).all() and "regularization" in res.reason
    for alpha in (0.05, 0.5, 2.0):  # choix minimises -loglik + alpha * sum(theta^2)
        ref = choix.opt_pairwise(3, _pairs_from_wins(wins), alpha=alpha, method="Newton-CG",
                                 tol=1e-12)
        reg = fit_bradley_terry(wins, regularization=alpha)  # documented: the same number
        np.testing.assert_allclose(reg.log_strength, ref - ref.mean(), atol=1e-6)
        assert abs(ref.mean()) < 1e-6  # the penalised optimum is centred already


def test_regularization_equals_choix_alpha_on_connected_data():
    rng = np.random.default_rng(7)
    wins = rng.integers(0, 6, size=(5, 5)).astype(float)
    np.fill_diagonal(wins, 0)
    pairs = _pairs_from_wins(wins)
    for alpha in (0.01, 0.3, 1.0):
        ref = choix.opt_pairwise(5, pairs, alpha=alpha, method="Newton-CG", tol=1e-12)
        res = fit_bradley_terry(wins, regularization=alpha)
        np.testing.assert_allclose(res.log_strength, ref - ref.mean(), atol=1e-6)
        # the old convention (penalty regularization / 2) is choix's alpha / 2, not alpha
        half = choix.opt_pairwise(5, pairs, alpha=alpha / 2, method="Newton-CG", tol=1e-12)
        assert np.max(np.abs(res.log_strength - (half - half.mean()))) > 1e-4


def test_bad_matrices():
    with pytest.raises(InputError, match="square"):
        fit_bradley_terry(np.zeros((2, 3)))
    with pytest.raises(InputError, match="diagonal"):
        fit_bradley_terry(np.eye(2))
    with pytest.raises(InputError, match="symmetric"):
        fit_bradley_terry(np.ones((2, 2)) - np.eye(2), np.array([[0, 1], [0, 0]]))
    with pytest.raises(InputError, match="ties_model"):
        fit_bradley_terry(np.ones((2, 2)) - np.eye(2), ties_model="rao")


def _simulated_verdicts(seed=0, n_prompts=30, systems="ABCD"):
    g = np.random.default_rng(seed)
    theta = dict(zip(systems, [1.0, 0.3, 0.0, -1.3]))
    rows = []
    for p in range(n_prompts):
        for a in range(len(systems)):
            for b in range(a + 1, len(systems)):
                sa, sb = systems[a], systems[b]
                for order in ("AB", "BA"):
                    w = np.array([np.exp(theta[sa]), np.exp(theta[sb]),
                                  0.5 * np.exp((theta[sa] + theta[sb]) / 2)])
                    verdict = g.choice(["A", "B", "same"], p=w / w.sum())
                    rows.append((p, f"{sa}/{p}", f"{sb}/{p}", "Plot", verdict, order))
    return pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b", "dimension",
                                       "verdict", "order"])


def test_bradley_terry_from_verdicts_with_bootstrap():
    v = _simulated_verdicts()
    res = bradley_terry(v, n_resamples=200, random_state=3)
    m = win_matrix(v)
    direct = fit_bradley_terry(m.wins, m.ties)
    np.testing.assert_allclose(res["log_strength"], direct.log_strength)
    assert res["item"].tolist() == list("ABCD")
    assert (res["log_strength_ci_low"] <= res["log_strength"]).all()
    assert (res["log_strength"] <= res["log_strength_ci_high"]).all()
    assert res["rank"].tolist() == [1, 2, 3, 4]
    assert (res["n_resamples_valid"] == 200).all()
    again = bradley_terry(v, n_resamples=200, random_state=3)
    pd.testing.assert_frame_equal(res, again)
    # the wins/losses/ties columns are the win-matrix margins
    np.testing.assert_array_equal(res["wins"], m.wins.sum(axis=1))
    np.testing.assert_array_equal(res["ties"], m.ties.sum(axis=1))
    # counts and ranks are integers; the strength interval is exp of the log-strength one
    for col in ("wins", "losses", "ties", "n_comparisons", "rank"):
        assert pd.api.types.is_integer_dtype(res[col]), col
    np.testing.assert_allclose(res["strength"], np.exp(res["log_strength"]))
    np.testing.assert_allclose(res["strength_ci_low"], np.exp(res["log_strength_ci_low"]))
    np.testing.assert_allclose(res["strength_ci_high"], np.exp(res["log_strength_ci_high"]))
    assert (res["strength_ci_low"] <= res["strength"]).all()
    assert (res["strength"] <= res["strength_ci_high"]).all()
    assert "ci_low" not in res.columns  # no unlabelled interval next to an exp-scale strength


def test_bootstrap_leaves_out_resamples_without_mle():
    v = _simulated_verdicts(n_prompts=3, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        res = bradley_terry(v, n_resamples=100, random_state=0)
    assert (res["n_resamples_valid"] <= 100).all()
