"""One tie rule (storyeval.correlation.ties) everywhere: every bootstrap / permutation statistic on the
unresampled data equals `correlate`'s value, on HANNA and on tables with near-ties."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from storyeval.correlation.levels import correlate
from storyeval.correlation.resampled import level_statistic
from storyeval.correlation.resampled_overall import OverallKernel
from storyeval.correlation.ties import TIE_RULE, snap_ties, tie_values
from storyeval.resample import bootstrap_correlations, paired_permutation_test
from storyeval.resample._data import make_grid
from storyeval.resample.permutation import _KendallOverall, _safe_div, _swapped_coefficients

LEVELS = ("overall", "system", "prompt")
METHODS = ("kendall_b", "spearman", "kendall_c", "pearson")
MODES = {"prompts": "prompts", "systems": "systems", "both": "stories"}


def _correlate(wide: pd.DataFrame, pairs, level: str, method: str) -> np.ndarray:
    ms = list(dict.fromkeys(p[0] for p in pairs))
    cs = list(dict.fromkeys(p[1] for p in pairs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = correlate(wide, ms, cs, level=level, method=method)
    return res.set_index(["measure_x", "measure_y"])["value"].loc[pairs].to_numpy()


def _kernel(wide: pd.DataFrame, pairs, level: str, method: str, cS=None, cP=None,
            resample_by: str = "prompts") -> np.ndarray:
    """The bootstrap engine's statistic for multiplicities (default: the identity resample)."""
    grid = make_grid(wide, [c for p in pairs for c in p])
    col = {c: k for k, c in enumerate(grid.columns)}
    ia = np.array([col[p[0]] for p in pairs])
    ic = np.array([col[p[1]] for p in pairs])
    cS = np.ones((1, grid.n_systems)) if cS is None else cS
    cP = np.ones((1, grid.n_prompts)) if cP is None else cP
    kernel = (OverallKernel(grid.X, ia, ic, method, MODES[resample_by])
              if level == "overall" else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return level_statistic(grid.X, ia, ic, method, level, cS, cP, kernel=kernel)


def _permutation_identity(wide: pd.DataFrame, crit: str, a: str, bs: list[str], level: str,
                          method: str, unit: str = "prompt") -> np.ndarray:
    """The permutation engine's coefficients of a and every b with the criterion when nothing
    is swapped (raw scores: no standardising, no orientation)."""
    grid = make_grid(wide, [crit, a, *bs])
    z, xa, Xb = grid.X[..., 0], grid.X[..., 1], grid.X[..., 2:]
    n_units = {"prompt": grid.n_prompts, "system": grid.n_systems,
               "story": grid.n_systems * grid.n_prompts}[unit]
    m = np.zeros((1, n_units), dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if level == "overall" and method == "kendall_b":
            kendall = _KendallOverall(xa, Xb, z, unit)
            na, da, nb, db = kendall.counts(m)
            ra = _safe_div(na, np.sqrt(da * kendall.den_z))
            rb = _safe_div(nb, np.sqrt(db * kendall.den_z))
        else:
            ra, rb = _swapped_coefficients(xa, Xb, z, m, unit, level, method)
    return np.concatenate([ra[0, :1], rb[0]])


def _assert_same(got: np.ndarray, want: np.ndarray, conditioned=None) -> None:
    """Same NaN pattern (one constancy rule) and equal values; ``conditioned`` (bool mask)
    limits the value check to well-conditioned entries."""
    assert np.array_equal(np.isnan(got), np.isnan(want))
    keep = slice(None) if conditioned is None else conditioned
    np.testing.assert_allclose(got[keep], want[keep], rtol=0, atol=1e-12, equal_nan=True)


# --------------------------------------------------------------------------------------------
# HANNA


@pytest.fixture(scope="module")
def hanna():
    from storyeval.data import load_hanna

    return load_hanna(include_human_stories=False).wide()


def _hanna_pairs(wide: pd.DataFrame) -> list[tuple[str, str]]:
    crits = ["Relevance", "Coherence", "Empathy", "Surprise", "Engagement", "Complexity"]
    return [(m, c) for m in wide.columns if m not in crits for c in crits]


def test_hanna_has_the_columns_that_disagreed(hanna):
    names = " ".join(hanna.columns)
    assert "CIDEr" in names and "BaryScore" in names and "AVG" in names


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("method", METHODS)
def test_hanna_identity_resample_equals_correlate(hanna, level, method):
    pairs = _hanna_pairs(hanna)
    _assert_same(_kernel(hanna, pairs, level, method)[0], _correlate(hanna, pairs, level, method))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("method", ["kendall_b", "spearman"])
def test_hanna_bootstrap_point_estimate_equals_correlate(hanna, level, method):
    pairs = [p for p in _hanna_pairs(hanna)
             if any(k in p[0] for k in ("CIDEr", "BaryScore", "AVG"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap_correlations(hanna, pairs, level=level, method=method, n_resamples=2,
                                     random_state=0)
    _assert_same(res["value"].to_numpy(), _correlate(hanna, pairs, level, method))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("method", ["kendall_b", "spearman"])
def test_hanna_permutation_statistics_equal_correlate(hanna, level, method):
    crit = "Coherence"
    measures = [m for m in hanna.columns
                if any(k in m for k in ("CIDEr", "BaryScore", "AVG"))][:12]
    a, bs = measures[0], measures[1:]
    want = _correlate(hanna, [(m, crit) for m in measures], level, method)
    _assert_same(_permutation_identity(hanna, crit, a, bs, level, method), want)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = paired_permutation_test(hanna, crit, a, bs, level=level, method=method,
                                      n_permutations=3, random_state=0)
    _assert_same(np.r_[res["value_a"].to_numpy()[:1], res["value_b"].to_numpy()], want)


def _materialise(wide: pd.DataFrame, cS: np.ndarray, cP: np.ndarray) -> pd.DataFrame:
    """The resampled table itself: each drawn copy of a system / prompt gets a new label."""
    systems = sorted(wide.index.unique("system"))
    prompts = sorted(wide.index.unique("prompt_id"))
    si = np.repeat(np.arange(len(systems)), cS.astype(int))
    pi = np.repeat(np.arange(len(prompts)), cP.astype(int))
    rows = pd.MultiIndex.from_product([[systems[s] for s in si], [prompts[p] for p in pi]])
    out = wide.loc[rows]
    out.index = pd.MultiIndex.from_product([range(len(si)), range(len(pi))],
                                           names=["system", "prompt_id"])
    return out


@pytest.mark.parametrize("method", ["kendall_b", "spearman"])
def test_hanna_resampled_system_means_follow_the_rule(hanna, method):
    """A prompt resample's system-level statistic is `correlate` on the resampled table (whose
    system means are snapped alike), BaryScore included."""
    pairs = [p for p in _hanna_pairs(hanna) if "BaryScore" in p[0] or "AVG" in p[0]]
    g = np.random.default_rng(3)
    for _ in range(3):
        cP = np.bincount(g.integers(0, 96, 96), minlength=96).astype(float)
        got = _kernel(hanna, pairs, "system", method, cP=cP[None])[0]
        _assert_same(got, _correlate(_materialise(hanna, np.ones(10), cP), pairs, "system",
                                     method))


# --------------------------------------------------------------------------------------------
# randomized tables with near-ties


def _near_tie_table(seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    S, P = int(g.integers(3, 7)), int(g.integers(2, 7))
    idx = pd.MultiIndex.from_product([[f"s{i}" for i in range(S)], range(P)],
                                     names=["system", "prompt_id"])
    # means of three 1-5 ratings (thirds): system means equal in exact arithmetic differ in
    # the last bits when summed in different orders ...
    h = g.integers(3, 16, S * P) / 3.0
    # ... as here, where every system rates a shuffled copy of the same prompt scores
    base = g.integers(3, 16, P) / 3.0
    shuffled = np.concatenate([g.permutation(base) for _ in range(S)])
    # continuous scores with near-ties: copies perturbed by 1e-14 (relative), and values that
    # are tiny relative to the column maximum but not to each other
    m = g.normal(size=S * P)
    copies = g.random(S * P) < 0.4
    m[copies] = m[0] * (1 + 1e-14 * g.integers(0, 3, copies.sum()))
    tiny = g.random(S * P) < 0.3
    m[tiny] = 1e-13 * g.integers(1, 4, tiny.sum())
    m2 = g.choice([0.1, 0.1 * (1 + 1e-14), 0.7, 0.7 * (1 - 1e-14), 2.0], S * P)
    return pd.DataFrame({"h": h, "hs": shuffled, "m": m, "m2": m2, "hm": shuffled + 1e-14 * m},
                        index=idx)


NEAR_PAIRS = [(x, y) for x in ("m", "m2", "hm", "hs", "h") for y in ("h", "hs") if x != y]
# Pearson of columns whose groups differ only in the last bits (m2, hm) is ill-conditioned:
# two correct summation orders give r 1% apart. The tie rule decides only constancy for Pearson
# (the NaN pattern, checked everywhere); values are compared on the other columns.
PEARSON_CONDITIONED = np.array([p[0] not in ("m2", "hm") for p in NEAR_PAIRS])


@settings(max_examples=30, deadline=None)
@given(hst.integers(0, 2**32 - 1))
def test_near_ties_identity_statistics_equal_correlate(seed):
    wide = _near_tie_table(seed)
    for level in LEVELS:
        for method in METHODS:
            want = _correlate(wide, NEAR_PAIRS, level, method)
            ok = PEARSON_CONDITIONED if method == "pearson" else None
            for by in ("prompts", "systems", "both"):
                _assert_same(_kernel(wide, NEAR_PAIRS, level, method, resample_by=by)[0], want,
                             ok)
            if method in ("kendall_b", "spearman"):
                got = _permutation_identity(wide, "h", "m", ["m2", "hm", "hs"], level, method)
                _assert_same(got, _correlate(wide, [(x, "h") for x in ("m", "m2", "hm", "hs")],
                                             level, method))


@settings(max_examples=15, deadline=None)
@given(hst.integers(0, 2**32 - 1))
def test_near_ties_resampled_system_means_equal_correlate(seed):
    wide = _near_tie_table(seed)
    S, P = len(wide.index.unique("system")), len(wide.index.unique("prompt_id"))
    g = np.random.default_rng(seed)
    cS = np.bincount(g.integers(0, S, S), minlength=S).astype(float)
    cP = np.bincount(g.integers(0, P, P), minlength=P).astype(float)
    for method in ("kendall_b", "spearman"):
        got = _kernel(wide, NEAR_PAIRS, "system", method, cS=cS[None], cP=cP[None],
                      resample_by="both")[0]
        # copies of a system are ties at the system level, as in the weighted kernel
        want = _correlate(_materialise(wide, cS, cP), NEAR_PAIRS, "system", method)
        _assert_same(got, want)


# --------------------------------------------------------------------------------------------
# the 8-row table and the rule itself


def _eight_rows() -> pd.DataFrame:
    """4 systems x 2 prompts; the measure's values (and system means) are tiny next to the
    column maximum but clearly ordered: a column-maximum tolerance would tie them."""
    idx = pd.MultiIndex.from_product([["A", "B", "C", "D"], [0, 1]],
                                     names=["system", "prompt_id"])
    m = [1e-13, 2e-13, 2e-13, 3e-13, 3e-13, 4e-13, 1.0, 1.0]
    h = [1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 5.0, 5.0]
    return pd.DataFrame({"m": m, "h": h}, index=idx)


@pytest.mark.parametrize("level", LEVELS)
def test_eight_row_table(level):
    wide = _eight_rows()
    tau = correlate(wide, "m", "h", level=level)["value"].iloc[0]
    assert tau == pytest.approx(1.0, abs=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap_correlations(wide, [("m", "h")], level=level, n_resamples=50,
                                     resample_by="prompts", random_state=0)
    assert res["value"].iloc[0] == pytest.approx(tau, abs=1e-12)
    if level != "overall":  # every resample orders the systems alike
        assert res["ci_low"].iloc[0] == pytest.approx(1.0, abs=1e-12)


def test_tie_values_is_the_one_rule():
    means = np.array([[2 / 3 + 1e-16, 1e-13], [2 / 3, 2e-13], [0.5, 1.0]])
    assert np.array_equal(tie_values(means, "overall"), means)
    assert np.array_equal(tie_values(means, "prompt"), means)
    snapped = tie_values(means, "system")
    assert snapped[0, 0] == snapped[1, 0] and len(np.unique(snapped[:, 1])) == 3
    # along another axis (resampled means: (resample, system, measure))
    batch = np.stack([means, means[::-1]])
    out = snap_ties(batch, axis=1)
    assert np.array_equal(out[0], snapped) and np.array_equal(out[1], snapped[::-1])
    assert "system" in TIE_RULE and "exactly" in TIE_RULE


def test_settings_state_the_tie_rule():
    from storyeval.meta.pipeline import meta_evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = meta_evaluate(measures="paper", levels="system", reference="none")
    assert res.settings["tie_rule"] == TIE_RULE


# ------------------------------------------------------------------------------------------------
# the fast implementations against the plain formulations (bit for bit, heavy and near ties)


def _snap_reference(values: np.ndarray, rtol: float) -> np.ndarray:
    """`snap_ties` along axis 0 of a 2-D array as first written: stable argsort of every column,
    chain consecutive sorted values, each value replaced by the first (smallest) of its group."""
    order = np.argsort(values, axis=0, kind="stable")
    ordered = np.take_along_axis(values, order, axis=0)
    gap = np.abs(np.diff(ordered, axis=0))
    scale = np.maximum(np.abs(ordered[1:]), np.abs(ordered[:-1]))
    starts = np.vstack([np.ones((1, values.shape[1]), bool), ~(gap <= rtol * scale)])
    first = np.maximum.accumulate(np.where(starts, np.arange(len(values))[:, None], 0), axis=0)
    snapped = np.empty_like(values)
    np.put_along_axis(snapped, order, np.take_along_axis(ordered, first, axis=0), axis=0)
    return snapped


def _tied_means(g: np.random.Generator, n: int, m: int) -> np.ndarray:
    """Means with exact ties, ties broken in the last bits, near-misses, +-0, NaN and inf."""
    v = g.integers(-3, 4, (n, m)) / 3.0
    v = v + g.choice([0, 0, 1e-16, -1e-16, 5e-13, 1e-13, 1e-11], (n, m)) * np.abs(v)
    for value, share in ((0.0, 0.2), (-0.0, 0.2), (np.nan, 0.05), (np.inf, 0.03),
                         (-np.inf, 0.03)):
        v[g.random((n, m)) < share] = value
    return v


@pytest.mark.parametrize("block", [2**15, 7])  # one block, and many small ones
def test_snap_ties_equals_the_sorted_column_formulation(monkeypatch, block):
    from storyeval.correlation import ties

    monkeypatch.setattr(ties, "_SNAP_BLOCK", block)
    g = np.random.default_rng(7)
    with np.errstate(invalid="ignore"):
        for _ in range(300):
            v = _tied_means(g, int(g.integers(2, 12)), int(g.integers(1, 60)))
            for rtol in (1e-12, 1e-14, 0.3):
                want = _snap_reference(v, rtol)
                got = snap_ties(v, rtol)
                assert got.dtype == want.dtype
                assert np.array_equal(got.view(np.int64), want.view(np.int64))  # same bits
        batch = _tied_means(g, 40 * 10, 7).reshape(40, 10, 7)  # (resample, system, measure)
        want = _snap_reference(batch.transpose(1, 0, 2).reshape(10, -1), 1e-12)
        got = snap_ties(batch, axis=1).transpose(1, 0, 2).reshape(10, -1)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
