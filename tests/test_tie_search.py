"""The exact tie-epsilon search without all pairs (storyeval.compare.tie_search).

References: the pairwise algorithm of storyeval.compare.tie_calibration (every candidate
enumerated; itself checked against mt-metrics-eval in tests/test_tie_calibration.py), a
from-scratch count at one epsilon, and google-research/mt-metrics-eval's
``stats.KendallWithTiesOpt(..., sample_rate=1.0)`` on 3,000 observations
(tests/data/mteval_tie_search.json records the commit, the calls and the data recipe).
"""

import json
from pathlib import Path

import numpy as np
import pytest

import storyeval.compare.tie_calibration as tc
import storyeval.compare.tie_search as ts

REFERENCE = json.loads((Path(__file__).parent / "data" / "mteval_tie_search.json")
                       .read_text(encoding="utf-8"))
HANNA = json.loads((Path(__file__).parent / "data" / "mteval_reference.json")
                   .read_text(encoding="utf-8"))


def _quadratic(h, m, g, variant="acc23"):
    """tie_calibrated's enumerating path (the whole curve; small inputs)."""
    return tc.tie_calibrated(h, m, g, variant=variant)


@pytest.fixture
def searched(monkeypatch):
    """tie_calibrated forced through the search, with tiny intervals so that it branches."""
    def run(h, m, g, variant="acc23", enumerate_pairs=7, splits=3, matrix=True):
        monkeypatch.setattr(tc, "EXACT_CURVE_PAIRS", 0)
        monkeypatch.setattr(ts, "ENUMERATE_PAIRS", enumerate_pairs)
        monkeypatch.setattr(ts, "_SPLITS", splits)
        if not matrix:
            monkeypatch.setattr(ts, "_MATRIX_CELLS", 0)  # the merge-sort tree
        try:
            return tc.tie_calibrated(h, m, g, variant=variant)
        finally:
            monkeypatch.undo()
    return run


def _random_case(rng):
    n = int(rng.integers(2, 70))
    g = rng.integers(0, int(rng.integers(1, 5)), n) if rng.random() < 0.5 else None
    h = rng.integers(1, int(rng.integers(2, 7)), n).astype(float)
    m = h + rng.normal(0, 1, n)
    kind = rng.integers(3)
    if kind == 1:
        m = np.round(m, 1)  # decimal scores: differences that round
    elif kind == 2:
        m = np.round(m * 3) / 7  # many exact ties
    return h, m, g


@pytest.mark.parametrize("matrix", [True, False], ids=["prefix-matrix", "merge-sort-tree"])
@pytest.mark.parametrize("variant", ["acc23", "tau23"])
def test_equals_the_pairwise_algorithm_on_random_data(searched, matrix, variant):
    rng = np.random.default_rng(11 if matrix else 12)
    checked = 0
    for _ in range(60):
        h, m, g = _random_case(rng)
        codes = np.zeros(len(h), int) if g is None else g
        if tc._count_pairs(codes) == 0:
            continue
        want = _quadratic(h, m, g, variant)
        got = searched(h, m, g, variant, enumerate_pairs=int(rng.integers(1, 12)),
                       splits=int(rng.integers(2, 5)), matrix=matrix)
        assert got.epsilon == want.epsilon
        assert got.value == pytest.approx(want.value, abs=1e-12)
        assert got.value_no_calibration == pytest.approx(want.value_no_calibration, abs=1e-12)
        assert (got.n_pairs, got.n_groups) == (want.n_pairs, want.n_groups)
        # every candidate the search reports is a candidate of the full curve, same value
        k = np.searchsorted(want.thresholds, got.thresholds)
        assert np.array_equal(want.thresholds[k], got.thresholds)
        np.testing.assert_allclose(got.values, want.values[k], rtol=0, atol=1e-12)
        checked += 1
    assert checked > 40


@pytest.mark.parametrize("row", HANNA["tie_calibration"],
                         ids=lambda r: f"{r['criterion']}-{r['measure']}-{r['variant']}-"
                                       f"{r['average_by']}")
def test_search_equals_mt_metrics_eval_on_hanna(searched, row):
    from storyeval.data import load_hanna

    wide = load_hanna().wide()
    wide = wide[wide.index.get_level_values("system") != "Human"].sort_index()
    by = {"item": "prompt_id", "sys": "system", "none": None}[row["average_by"]]
    groups = None if by is None else wide.index.get_level_values(by)
    variant = "acc23" if row["variant"] == "acc23" else "tau23"
    got = searched(wide[row["criterion"]].to_numpy(), wide[row["measure"]].to_numpy(), groups,
                   variant, enumerate_pairs=5000, splits=8)
    assert got.value == pytest.approx(row["value"], abs=1e-12)
    if row["average_by"] != "sys":  # per system: see test_tie_calibration (exact ties)
        assert got.epsilon == row["epsilon"]


def _reference_data(n):
    i = np.arange(n)
    h = ((i * 37) % 13 + (i * 11) % 5) / 3.0
    return h, {"continuous": ((i * 7919) % 10007) / 10007.0 + h * 0.25,
               "tied": ((i * 7919) % 97) / 10.0 + h}


@pytest.mark.parametrize("row", REFERENCE["rows"],
                         ids=lambda r: f"{r['metric']}-{r['variant']}-{r['average_by']}")
def test_equals_mt_metrics_eval_at_3000_observations(row):
    # 4.5 million pairs in one pool (2.2 million in two groups): beyond EXACT_CURVE_PAIRS, so
    # tie_calibrated searches without enumerating them
    n = REFERENCE["n"]
    h, metrics = _reference_data(n)
    groups = None if row["average_by"] == "none" else np.arange(n) // (n // row["num_sys"])
    assert tc._count_pairs(np.zeros(n, int) if groups is None else groups) \
        > tc.EXACT_CURVE_PAIRS
    got = tc.tie_calibrated(h, metrics[row["metric"]], groups,
                            variant="acc23" if row["variant"] == "acc23" else "tau23")
    assert got.value == pytest.approx(row["value"], abs=1e-12)
    assert got.epsilon == row["epsilon"]
    assert len(got.thresholds) < got.n_pairs // 10  # a search, not the whole curve


def test_kendall_23_at_a_given_epsilon_without_all_pairs(monkeypatch):
    rng = np.random.default_rng(5)
    h = rng.integers(1, 5, 200).astype(float)
    m = np.round(h + rng.normal(0, 1, 200), 1)
    eps = [0.0, 0.1, 0.25, 1.0, 7.0]
    want = [tc.kendall_23(h, m, epsilon=e) for e in eps]
    # from scratch: tau_23 = (correct - wrong) / pairs
    i, j = np.triu_indices(200, 1)
    dh, dm = h[i] - h[j], m[i] - m[j]
    for e, w in zip(eps, want):
        tie = np.abs(dm) <= e
        good = ((dh == 0) & tie) | (~tie & (np.sign(dh) * np.sign(dm) > 0))
        assert w == pytest.approx(2 * good.mean() - 1, abs=1e-12)
    monkeypatch.setattr(tc, "EXACT_CURVE_PAIRS", 0)
    assert [tc.kendall_23(h, m, epsilon=e) for e in eps] == pytest.approx(want, abs=1e-12)
    g = np.repeat([0, 1, 2], [50, 70, 80])
    monkeypatch.undo()
    grouped = tc.kendall_23(h, m, g, epsilon=0.2)
    monkeypatch.setattr(tc, "EXACT_CURVE_PAIRS", 0)
    assert tc.kendall_23(h, m, g, epsilon=0.2) == pytest.approx(grouped, abs=1e-12)


def test_window_ends_follow_the_float_difference():
    # decimal scores with repeats: m_k + eps and m_j - m_k <= eps disagree for some k
    m = np.sort(np.round(np.random.default_rng(0).uniform(0, 3, 40), 1))
    pool = ts._pool(np.zeros(len(m)), m, np.zeros(len(m), int))
    disagree = 0
    for eps in np.unique(np.abs(m[:, None] - m[None])):
        naive = np.searchsorted(m, m + eps, side="right")
        for strict in (False, True):
            hi = ts._window_end(pool, float(eps), strict=strict)
            for k in range(len(m)):
                d = pool.m[k + 1:] - pool.m[k]
                inside = d < eps if strict else d <= eps
                assert hi[k] == k + 1 + int(inside.sum())
                if not strict:
                    disagree += int(naive[k] != hi[k])
    assert disagree > 0  # the check against the float difference was needed


def test_large_pool_is_fast_and_small(monkeypatch):
    """6,000 observations (1.8 x 10^7 pairs, 0.7 GB for the pairwise algorithm) in seconds."""
    import time

    rng = np.random.default_rng(0)
    n = 6_000
    h = rng.integers(1, 6, (n, 3)).mean(axis=1)
    m = h + rng.normal(0, 1, n)
    start = time.perf_counter()
    res = tc.tie_calibrated(h, m)
    assert time.perf_counter() - start < 60  # about 1-3 s on the shared 2-core machine
    assert res.n_pairs == n * (n - 1) // 2 and 0.5 < res.value < 1
    # the value at the best epsilon, counted from scratch in blocks
    correct = 0
    for s in range(0, n, 1000):
        dh = h[s:s + 1000, None] - h[None]
        dm = m[s:s + 1000, None] - m[None]
        tie = np.abs(dm) <= res.epsilon
        good = ((dh == 0) & tie) | (~tie & (np.sign(dh) * np.sign(dm) > 0))
        upper = np.arange(s, min(s + 1000, n))[:, None] < np.arange(n)[None]
        correct += int((good & upper).sum())
    assert res.value == correct / res.n_pairs
