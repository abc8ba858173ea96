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
