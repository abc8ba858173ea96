"""Prediction-powered Bradley-Terry strengths (storyeval.pairwise.ppi_strengths) against
ppi-python 0.2.3's ``ppi_logistic_pointestimate`` and ``ppi_logistic_ci`` on the same design
(rows e_a - e_b without the reference item's column), and their invariants."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.pairwise.ppi_strengths import ppi_bradley_terry, ppi_logistic_bt

ppi_py = pytest.importorskip("ppi_py")
FAST = settings(max_examples=15, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])
TOL = 1e-9


def _design(seed: int, k: int = 4, m: int = 700, n_lab: int = 70, soft: bool = True):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, k, m)
    b = (a + rng.integers(1, k, m)) % k
    s = rng.normal(0, 0.6, k)
    p = 1 / (1 + np.exp(-(s[a] - s[b])))
    y = (rng.random(m) < p).astype(float)
    f = np.clip(p + rng.normal(0.05, 0.2, m), 0, 1) if soft else \
        np.where(rng.random(m) < 0.75, y, 1 - y)
    lab = np.zeros(m, bool)
    lab[rng.choice(m, n_lab, replace=False)] = True
    x = np.zeros((m, k))
    x[np.arange(m), a] = 1.0
    x[np.arange(m), b] = -1.0
    return a, b, y, f, lab, x[:, 1:]


@pytest.fixture
def exact_ppi_py(monkeypatch):
    """ppi-python with its L-BFGS-B result polished by a root finder on its own gradient:
    L-BFGS-B stops on the loss value (ftol 1e-15 relative to a loss near 0.6), which leaves a
    gradient of about 1e-10 and estimates about 3e-9 from the minimiser; the polish solves
    ppi-python's estimating equation to machine precision, so the comparison is of the
    estimators, not of the optimisers (`test_plain_ppi_py` compares the untouched one)."""
    import ppi_py.ppi as module
    from scipy.optimize import minimize, root

    def polished(fun, x0, jac=None, **kwargs):
        first = minimize(fun, x0, jac=jac, **kwargs)
        first.x = root(jac, first.x, method="hybr", tol=1e-15).x
        return first

    monkeypatch.setattr(module, "minimize", polished)
    return ppi_py


# ppi-python starts from sklearn's LogisticRegression(penalty=None), deprecated in sklearn 1.8
SKLEARN_PENALTY = pytest.mark.filterwarnings("ignore:'penalty' was deprecated:FutureWarning")


@SKLEARN_PENALTY
@pytest.mark.parametrize("lam", [None, 0.0, 0.4, 1.0])
@pytest.mark.parametrize("seed, soft", [(0, True), (1, False)])
def test_equals_ppi_py(exact_ppi_py, seed, lam, soft):
    a, b, y, f, lab, x = _design(seed, soft=soft)
    h = np.where(lab, y, np.nan)
    args = (x[lab], y[lab], f[lab], x[~lab], f[~lab])
    point = exact_ppi_py.ppi_logistic_pointestimate(*args, lam=lam)
    low, high = exact_ppi_py.ppi_logistic_ci(*args, alpha=0.1, lam=lam)
    one = ppi_logistic_bt(a, b, h, f, 4, lam=lam, lam_steps=1, reference=0)
    two = ppi_logistic_bt(a, b, h, f, 4, lam=lam, lam_steps=2, reference=0,
                          confidence_level=0.9)
    np.testing.assert_allclose(one.estimate[1:], point, rtol=0, atol=TOL)
    np.testing.assert_allclose(two.low[1:], low, rtol=0, atol=TOL)
    np.testing.assert_allclose(two.high[1:], high, rtol=0, atol=TOL)
    assert one.estimate[0] == 0.0 and two.se[0] == 0.0


@SKLEARN_PENALTY
def test_plain_ppi_py():
    # the untouched reference: its optimiser's tolerance (see exact_ppi_py)
    a, b, y, f, lab, x = _design(3)
    args = (x[lab], y[lab], f[lab], x[~lab], f[~lab])
    point = ppi_py.ppi_logistic_pointestimate(*args)
    low, high = ppi_py.ppi_logistic_ci(*args, alpha=0.05)
    one = ppi_logistic_bt(a, b, np.where(lab, y, np.nan), f, 4, lam_steps=1, reference=0)
    two = ppi_logistic_bt(a, b, np.where(lab, y, np.nan), f, 4, reference=0)
    np.testing.assert_allclose(one.estimate[1:], point, atol=1e-7)
    np.testing.assert_allclose(two.low[1:], low, atol=1e-7)
    np.testing.assert_allclose(two.high[1:], high, atol=1e-7)


def test_centred_is_the_reference_coding_shifted():
    a, b, y, f, lab, _ = _design(4)
    h = np.where(lab, y, np.nan)
    ref = ppi_logistic_bt(a, b, h, f, 4, lam=0.5, reference=2)
    cen = ppi_logistic_bt(a, b, h, f, 4, lam=0.5)
    np.testing.assert_allclose(cen.estimate, ref.estimate - ref.estimate.mean(), atol=1e-12)
    c = np.eye(4) - 0.25
    np.testing.assert_allclose(cen.covariance, c @ ref.covariance @ c.T, atol=1e-12)


def test_singleton_prompts_give_the_independent_variance():
    # one comparison per prompt: the cluster-robust variance is the independent one up to the
    # divisors (P/(P-1) and (m-1)/m of each set)
    a, b, y, f, lab, _ = _design(5, m=2000, n_lab=400)
    h = np.where(lab, y, np.nan)
    iid = ppi_logistic_bt(a, b, h, f, 4, lam=0.6)
    clu = ppi_logistic_bt(a, b, h, f, 4, lam=0.6, cluster=np.arange(len(a)))
    np.testing.assert_allclose(clu.se, iid.se, rtol=3e-3)


def test_clustered_prompts_widen_the_interval():
    rng = np.random.default_rng(6)
    k, prompts = 5, 400
    ia, ib = np.triu_indices(k, 1)
    a, b = np.tile(ia, prompts), np.tile(ib, prompts)
    prompt = np.repeat(np.arange(prompts), len(ia))
    u = rng.normal(0, 1.5, (prompts, k))  # strong prompt effects: correlated comparisons
    y = (rng.random(len(a)) < 1 / (1 + np.exp(-(u[prompt, a] - u[prompt, b])))).astype(float)
    f = np.where(rng.random(len(a)) < 0.8, y, 1 - y)
    lab = np.isin(prompt, rng.choice(prompts, 60, replace=False))
    h = np.where(lab, y, np.nan)
    iid = ppi_logistic_bt(a, b, h, f, k)
    clu = ppi_logistic_bt(a, b, h, f, k, cluster=prompt)
    assert np.all(clu.se[1:] > iid.se[1:])


def _tables(seed: int):
    rng = np.random.default_rng(seed)
    names = ["Ann", "Bob", "Cy", "Dee"]
    rows = []
    for p in range(40):
        for i in range(4):
            for j in range(i + 1, 4):
                won = rng.random() < 1 / (1 + np.exp(-(0.4 * (j - i))))
                rows.append((p, f"{names[i]}/{p}", f"{names[j]}/{p}", "A" if won else "B"))
    judge = pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b", "verdict"])
    judge = judge.assign(dimension="Overall", order="AB")
    human = judge.sample(frac=0.25, random_state=seed).copy()
    human["verdict"] = np.where(rng.random(len(human)) < 0.25, "same", human["verdict"])
    return human, judge


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 1000), perm=st.integers(0, 1000))
def test_invariants(seed, perm):
    human, judge = _tables(seed)
    base = ppi_bradley_terry(human, judge, n_resamples=0)[0].set_index("item")
    shuffled = ppi_bradley_terry(human.sample(frac=1, random_state=perm),
                                 judge.sample(frac=1, random_state=perm + 1), n_resamples=0)[0]
    pd.testing.assert_frame_equal(shuffled.set_index("item"), base, rtol=1e-9,
                                  check_like=True)
    # renamed systems (reversed name order) with story_a / story_b swapped on half the rows
    names = {"Ann": "zz", "Bob": "yy", "Cy": "xx", "Dee": "ww"}

    def rename(v):
        v = v.copy()
        for col in ("story_a", "story_b"):
            v[col] = [f"{names[s.split('/')[0]]}/{s.split('/')[1]}" for s in v[col]]
        swap = np.arange(len(v)) % 2 == 1
        v.loc[swap, ["story_a", "story_b"]] = v.loc[swap, ["story_b", "story_a"]].to_numpy()
        v.loc[swap, "verdict"] = v.loc[swap, "verdict"].map({"A": "B", "B": "A", "same": "same"})
        return v

    renamed = ppi_bradley_terry(rename(human), rename(judge), n_resamples=0)[0]
    back = {v: k for k, v in names.items()}
    renamed = renamed.assign(item=renamed["item"].map(back)).set_index("item")
    pd.testing.assert_frame_equal(renamed, base, rtol=1e-7, check_like=True)


def test_table_and_human_reference():
    human, judge = _tables(11)
    table, res = ppi_bradley_terry(human, judge, confidence_level=0.9, n_resamples=200)
    assert list(table.columns[:8]) == ["item", "rank", "log_strength", "se", "ci_low",
                                       "ci_high", "rank_set_low", "rank_set_high"]
    assert table["log_strength"].is_monotonic_decreasing
    assert abs(table["log_strength"].sum()) < 1e-12
    assert (table["rank_set_low"] <= table["rank"]).all()
    assert (table["rank"] <= table["rank_set_high"]).all()
    assert res.variance == "prompt bootstrap (200 of 200)" and 0 <= res.lam <= 1
    # the bootstrap's percentile interval against the sandwich's normal one: same scale
    _, sandwich = ppi_bradley_terry(human, judge, confidence_level=0.9, n_resamples=0)
    assert sandwich.variance == "prompt"
    np.testing.assert_allclose(res.se, sandwich.se, rtol=0.35)
    h0, _ = ppi_bradley_terry(human, judge, lam=0.0, n_resamples=0)
    np.testing.assert_allclose(h0["log_strength"], h0["human_log_strength"], atol=1e-12)


def test_bootstrap_is_seeded_and_invariant_to_row_order():
    human, judge = _tables(13)
    one = ppi_bradley_terry(human, judge, n_resamples=60, random_state=5)[0]
    two = ppi_bradley_terry(human.sample(frac=1, random_state=1),
                            judge.sample(frac=1, random_state=2), n_resamples=60,
                            random_state=5)[0]
    pd.testing.assert_frame_equal(one, two, rtol=1e-9)
    other = ppi_bradley_terry(human, judge, n_resamples=60, random_state=6)[0]
    assert not np.allclose(one["ci_low"], other["ci_low"])
    with pytest.raises(InputError, match="n_resamples"):
        ppi_bradley_terry(human, judge, n_resamples=1)


def test_errors():
    human, judge = _tables(12)
    with pytest.raises(InputError, match="variance"):
        ppi_bradley_terry(human, judge, variance="x")
    with pytest.raises(InputError, match="reference 'Zed'"):
        ppi_bradley_terry(human, judge, reference="Zed")
    with pytest.raises(InputError, match="lam_steps"):
        ppi_logistic_bt([0, 1], [1, 0], [1, np.nan], [1, 0], 2, lam_steps=0)
    with pytest.raises(InputError, match="predicted"):
        ppi_logistic_bt([0, 1], [1, 0], [1, np.nan], [1, 2], 2)
    few = human[human.story_a.str.startswith("Ann") & human.story_b.str.startswith("Bob")]
    with pytest.raises(InputError, match="do not link"):
        ppi_bradley_terry(few, judge)


def test_no_finite_minimiser_warns():
    # one item wins every comparison: no finite maximum likelihood strength
    a = np.array([0, 0, 0, 0, 1, 1, 0, 0])
    b = np.array([1, 2, 1, 2, 2, 2, 1, 2])
    y = np.array([1, 1, 1, 1, 0, 1, np.nan, np.nan])
    f = np.array([1, 1, 1, 1, 0, 1, 1, 1.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = ppi_logistic_bt(a, b, y, f, 3, lam=0.5)
    assert not r.converged and np.isnan(r.estimate).all() and r.reason
    assert any(issubclass(w.category, UndefinedStatisticWarning) for w in caught)
