"""Bradley-Terry from a bare win matrix: standard errors against statsmodels (deviation-coded
binomial GLM) on seed 001's published Overall matrix, and Davidson's standard errors against a
finite-difference Hessian of an independently written log-likelihood."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from storyeval.exceptions import InputError
from storyeval.pairwise.bt_matrix import bradley_terry_matrix, read_win_matrix

# Paper 001 (character simulation), Appendix A, "Overall" win matrix (row beat column)
OVERALL = np.array([[0, 41, 47], [15, 0, 33], [9, 23, 0]], dtype=float)


def _statsmodels_sum_to_zero(w):
    k = len(w)
    x, y = [], []
    for i in range(k):
        for j in range(i + 1, k):
            row = np.zeros(k)
            row[i], row[j] = 1.0, -1.0
            x.append(row)
            y.append([w[i, j], w[j, i]])
    c = np.vstack([np.eye(k - 1), -np.ones(k - 1)])  # deviation coding: theta = C beta
    fit = sm.GLM(np.array(y), np.array(x) @ c, family=sm.families.Binomial()).fit(tol=1e-12)
    return c @ fit.params, np.sqrt(np.diag(c @ fit.cov_params() @ c.T))


def test_seed_001_overall_matrix_equals_statsmodels():
    res = bradley_terry_matrix(OVERALL).sort_values("item")
    theta, se = _statsmodels_sum_to_zero(OVERALL)
    np.testing.assert_allclose(res["log_strength"], theta, atol=1e-4)
    np.testing.assert_allclose(res["se"], se, atol=1e-4)
    # the published-precision values quoted in issue 39
    np.testing.assert_allclose(res["log_strength"], [0.8751, -0.2209, -0.6542], atol=5e-5)
    np.testing.assert_allclose(res["se"], [0.154, 0.137, 0.145], atol=5e-4)
    z = 1.959963984540054
    np.testing.assert_allclose(res["ci_high"] - res["log_strength"], z * res["se"])
    assert res["parametrisation"].iloc[0] == "sum-to-zero"


def _davidson_nll(x, w, t):
    k = len(w)
    theta = np.append(x[: k - 1], -x[: k - 1].sum())
    lam = x[-1]
    nll = 0.0
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            d = np.exp(theta[i]) + np.exp(theta[j]) + np.exp(lam + (theta[i] + theta[j]) / 2)
            nll -= w[i, j] * (theta[i] - np.log(d))
            nll -= 0.5 * t[i, j] * (lam + (theta[i] + theta[j]) / 2 - np.log(d))
    return nll


def test_davidson_standard_errors_equal_finite_difference_hessian():
    w = np.array([[0, 12, 9, 7], [5, 0, 8, 6], [4, 6, 0, 9], [3, 5, 4, 0]], dtype=float)
    t = np.array([[0, 3, 2, 1], [3, 0, 4, 2], [2, 4, 0, 3], [1, 2, 3, 0]], dtype=float)
    res = bradley_terry_matrix(w, t).sort_values("item")
    theta = res["log_strength"].to_numpy()
    x0 = np.append(theta[:3], np.log(res["tie_parameter"].iloc[0]))
    h = np.zeros((4, 4))
    eps = 1e-4
    for a in range(4):
        for b in range(4):
            e_a, e_b = np.eye(4)[a] * eps, np.eye(4)[b] * eps
            h[a, b] = (_davidson_nll(x0 + e_a + e_b, w, t) - _davidson_nll(x0 + e_a - e_b, w, t)
                       - _davidson_nll(x0 - e_a + e_b, w, t)
                       + _davidson_nll(x0 - e_a - e_b, w, t)) / (4 * eps**2)
    cov = np.linalg.inv(h)
    c = np.vstack([np.eye(3), -np.ones(3)])
    se = np.sqrt(np.diag(c @ cov[:3, :3] @ c.T))
    np.testing.assert_allclose(res["se"], se, rtol=1e-4)


def test_read_win_matrix_labelled_and_bare(tmp_path):
    bare = tmp_path / "w.csv"
    bare.write_text("0,41,47\n15,0,33\n9,23,0\n")
    m = read_win_matrix(bare)
    assert list(m.index) == ["1", "2", "3"] and m.loc["1", "2"] == 41
    lab = tmp_path / "l.csv"
    lab.write_text("item,Ours,AgentsRoom,Dramatron\nOurs,,41,47\nAgentsRoom,15,,33\n"
                   "Dramatron,9,23,\n")
    m = read_win_matrix(lab)
    assert list(m.columns) == ["Ours", "AgentsRoom", "Dramatron"] and m.loc["Ours", "Ours"] == 0
    bad = tmp_path / "b.csv"
    bad.write_text("item,A,B\nA,0,x\nB,1,0\n")
    with pytest.raises(InputError, match="row 'A', column 'B'"):
        read_win_matrix(bad)
