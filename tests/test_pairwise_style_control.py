"""Covariate (length) control in the Bradley-Terry fit, against statsmodels' binomial GLM."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from storyeval.exceptions import InputError
from storyeval.pairwise.style_control import controlled_strengths, fit_controlled


def _data(n=3000, s=6, seed=0, beta=0.8):
    g = np.random.default_rng(seed)
    theta = g.normal(size=s)
    length = g.normal(300, 60, size=s)  # longer systems
    a = g.integers(0, s, n)
    b = (a + g.integers(1, s, n)) % s
    la = length[a] + g.normal(0, 40, n)
    lb = length[b] + g.normal(0, 40, n)
    d = (la - lb) / np.std(la - lb)
    p = 1 / (1 + np.exp(-(theta[a] - theta[b] + beta * d)))
    u = g.random(n)
    out = np.where(u < 0.1, 2, np.where(g.random(n) < p, 0, 1))
    return a, b, out, la, lb


def test_controlled_fit_equals_statsmodels_glm():
    a, b, out, la, lb = _data()
    s = 6
    score = np.where(out == 0, 1.0, np.where(out == 1, 0.0, 0.5))
    z = ((la - lb) / np.std(la - lb))[:, None]
    theta, beta, conv = fit_controlled(a, b, score, z, s)
    x = np.zeros((len(a), s))
    x[np.arange(len(a)), a] += 1
    x[np.arange(len(a)), b] -= 1
    c = np.vstack([np.eye(s - 1), -np.ones(s - 1)])  # sum-to-zero (deviation coding)
    fit = sm.GLM(score, np.column_stack([x @ c, z]), family=sm.families.Binomial()).fit(
        tol=1e-12)
    np.testing.assert_allclose(theta, c @ fit.params[: s - 1], atol=1e-6)
    np.testing.assert_allclose(beta, fit.params[s - 1:], atol=1e-6)
    assert conv


def test_controlled_strengths_table_side_by_side():
    a, b, out, la, lb = _data(seed=1)
    names = np.array([f"sys{i}" for i in range(6)])
    v = pd.DataFrame({"prompt_id": np.arange(len(a)) % 50, "story_a": names[a],
                      "story_b": names[b], "system_a": names[a], "system_b": names[b],
                      "dimension": "Overall",
                      "verdict": np.array(["A", "B", "same"])[out], "order": "AB",
                      "judge": [f"j{k}" for k in range(len(a))], "length_a": la,
                      "length_b": lb})
    table, coef = controlled_strengths(v, ["length"])
    assert {"log_strength", "rank", "log_strength_controlled", "rank_controlled"} <= set(table)
    assert coef["beta"].iloc[0] > 0.5  # the simulated length effect (0.8 per SD) is found
    # uncontrolled column = the plain fit with ties as half wins
    from storyeval.pairwise import fit_bradley_terry, win_matrix

    m = win_matrix(v)
    ref = fit_bradley_terry(m.wins, m.ties, ties_model="half")
    got = table.set_index("item").loc[m.items, "log_strength"]
    np.testing.assert_allclose(got, ref.log_strength, atol=1e-7)
    with pytest.raises(InputError, match="style"):
        controlled_strengths(v, ["style"])


def test_cli_control(tmp_path, capsys):
    import json

    from storyeval.cli import main

    a, b, out, la, lb = _data(n=800, seed=2)
    names = np.array([f"sys{i}" for i in range(6)])
    v = pd.DataFrame({"prompt_id": np.arange(len(a)) % 40, "story_a": names[a],
                      "story_b": names[b], "system_a": names[a], "system_b": names[b],
                      "dimension": "Overall", "verdict": np.array(["A", "B", "same"])[out],
                      "order": "AB", "judge": [f"j{k}" for k in range(len(a))],
                      "length_a": la, "length_b": lb})
    path = tmp_path / "v.csv"
    v.to_csv(path, index=False)
    assert main(["pairwise", "strengths", str(path), "--control", "length", "--format",
                 "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert len(rec) == 6 and "rank_controlled" in rec[0]
    assert {"ci_low_controlled", "ci_high_controlled", "se_controlled"} <= set(rec[0])
    assert main(["pairwise", "strengths", str(path), "--control", "length", "--resamples",
                 "50"]) == 0
    text = capsys.readouterr().out
    assert "percentile bootstrap over prompts (50 resamples" in text and "ci_low" in text
    # battles are no unit of the controlled bootstrap: a usage error
    assert main(["pairwise", "strengths", str(path), "--control", "length", "--resample",
                 "battle"]) == 2
    assert "--resample battle" in capsys.readouterr().err


def test_controlled_intervals_equal_glm_refits_of_duplicated_prompts():
    # each resample = the verdicts of the drawn prompts repeated (draws of
    # default_rng(5).integers(0, 30, (B, 30))), the covariate restandardised on it, refitted
    # by statsmodels' binomial GLM: the same percentile intervals and standard errors
    a, b, out, la, lb = _data(n=600, seed=3)
    s, n_res = 6, 25
    prompts = np.arange(len(a)) % 30
    names = np.array([f"sys{i}" for i in range(s)])
    v = pd.DataFrame({"prompt_id": prompts, "story_a": names[a], "story_b": names[b],
                      "system_a": names[a], "system_b": names[b], "dimension": "Overall",
                      "verdict": np.array(["A", "B", "same"])[out], "order": "AB",
                      "judge": [f"j{k}" for k in range(len(a))], "length_a": la,
                      "length_b": lb})
    table, coef = controlled_strengths(v, ["length"], n_resamples=n_res, random_state=5)
    score = np.where(out == 0, 1.0, np.where(out == 1, 0.0, 0.5))
    c = np.vstack([np.eye(s - 1), -np.ones(s - 1)])
    thetas, betas = [], []
    for row in np.random.default_rng(5).integers(0, 30, (n_res, 30)):
        idx = np.concatenate([np.flatnonzero(prompts == p) for p in row])
        d = la[idx] - lb[idx]
        x = np.zeros((len(idx), s))
        x[np.arange(len(idx)), a[idx]] += 1
        x[np.arange(len(idx)), b[idx]] -= 1
        fit = sm.GLM(score[idx], np.column_stack([x @ c, d / d.std()]),
                     family=sm.families.Binomial()).fit(tol=1e-12)
        thetas.append(c @ fit.params[: s - 1])
        betas.append(fit.params[s - 1])
    thetas = np.array(thetas)
    got = table.set_index("item").loc[names]
    np.testing.assert_allclose(got["se_controlled"], thetas.std(axis=0, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(got["ci_low_controlled"], np.quantile(thetas, 0.025, axis=0),
                               atol=1e-6)
    np.testing.assert_allclose(got["ci_high_controlled"], np.quantile(thetas, 0.975, axis=0),
                               atol=1e-6)
    assert coef["se"].iloc[0] == pytest.approx(np.std(betas, ddof=1), rel=1e-5)
    assert coef["ci_low"].iloc[0] == pytest.approx(np.quantile(betas, 0.025), abs=1e-6)
    assert (got["n_resamples_valid"] == n_res).all()
