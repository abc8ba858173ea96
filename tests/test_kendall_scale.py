"""The O(n log n) Kendall path (issue 13): exact counts equal to the O(n^2) kernels, results
equal to scipy.stats.kendalltau on either side of the switch point, the cost model's choices,
and the fast reader of large long tables."""

from __future__ import annotations

import importlib.util

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.correlation import kendall as kendall_mod
from storyeval.correlation.kendall import kendall_counts, kendall_plan
from storyeval.correlation.kendall_sorted import sorted_counts
from storyeval.correlation.kernel import pairwise_correlations

HAS_NUMBA = importlib.util.find_spec("numba") is not None
ENGINES = ["numpy", pytest.param("numba", marks=pytest.mark.skipif(
    not HAS_NUMBA, reason="numba (the 'fast' extra) is not installed"))]
TOL = 1e-12


def _data(rng, shape, kind):
    """Continuous values, heavy ties (3 levels) or means of three 1-5 ratings (13 levels)."""
    if kind == "continuous":
        return rng.normal(size=shape)
    if kind == "ties":
        return rng.integers(0, 3, size=shape).astype(float)
    return rng.integers(1, 6, size=(*shape, 3)).mean(axis=-1)


CASES = [  # g, n, p, q, same, masked, kind
    (1, 2, 2, 2, False, False, "continuous"),
    (1, 31, 3, 2, False, True, "ties"),       # the enumerating kernel (n <= 32)
    (1, 33, 3, 2, False, True, "ties"),       # just above it
    (1, 150, 4, 3, False, False, "continuous"),
    (1, 150, 4, 3, False, False, "ratings"),
    (1, 200, 5, 5, True, False, "ties"),
    (1, 200, 5, 5, True, True, "continuous"),
    (1, 257, 3, 4, False, True, "ratings"),
    (40, 10, 4, 3, False, False, "ties"),     # prompt level: many tiny groups
    (40, 10, 4, 4, True, True, "ratings"),
    (3, 60, 3, 2, False, True, "continuous"),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("g, n, p, q, same, masked, kind", CASES)
def test_sorted_counts_equal_the_blocked_kernels_exactly(engine, g, n, p, q, same, masked, kind):
    rng = np.random.default_rng(n * 31 + p * 7 + q + g)
    x = _data(rng, (g, n, p), kind)
    y = x if same else _data(rng, (g, n, q), kind)
    if masked:
        x = np.where(rng.random(x.shape) < 0.2, np.nan, x)
        y = x if same else np.where(rng.random(y.shape) < 0.2, np.nan, y)
    expected = kendall_counts(x, y, masked=masked, same=same, kernel="blocks")
    s, tx, ty, n_obs = sorted_counts(x, y, same=same, engine_name=engine)
    for got, want in zip((s, tx, ty), expected):
        np.testing.assert_array_equal(got, want)  # exact integer counts
    present = (~np.isnan(x)).astype(float)
    want_n = np.matmul(present.transpose(0, 2, 1), (~np.isnan(y)).astype(float))
    np.testing.assert_array_equal(n_obs, want_n)


def test_the_counts_can_differ():
    """The equality test above is not vacuous: a wrong S is caught."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 50, 2))
    s, _, _, _ = sorted_counts(x, x[:, ::-1], engine_name="numpy")
    blocks = kendall_counts(x, x, masked=False, kernel="blocks")[0]
    assert not np.array_equal(s, blocks)


@pytest.mark.parametrize("kernel", ["blocks", "sorted"])
@pytest.mark.parametrize("variant", ["b", "c"])
@pytest.mark.parametrize("n", [30, 400])
def test_both_kernels_match_scipy_with_ties_and_nans(monkeypatch, kernel, variant, n):
    """tau-b and tau-c, heavy ties and missing values, with the kernel forced either way."""
    real_plan = kendall_plan
    monkeypatch.setattr(kendall_mod, "kendall_plan",
                        lambda *a, **k: (kernel, real_plan(*a, **k)[1]))
    rng = np.random.default_rng(n)
    x = np.column_stack([rng.integers(0, 4, n), rng.normal(size=n), _data(rng, (n,), "ratings")])
    y = np.column_stack([rng.integers(0, 2, n), np.round(rng.normal(size=n), 1)]).astype(float)
    for missing in (False, True):
        if missing:
            x = np.where(rng.random(x.shape) < 0.15, np.nan, x)
            y = np.where(rng.random(y.shape) < 0.15, np.nan, y)
        res = pairwise_correlations(x, y, method=f"kendall_{variant}",
                                    nan_policy="omit" if missing else "raise")
        ref = np.array([[stats.kendalltau(x[:, i], y[:, j], variant=variant,
                                          nan_policy="omit").statistic
                         for j in range(y.shape[1])] for i in range(x.shape[1])])
        np.testing.assert_allclose(res.statistic, ref, rtol=0, atol=TOL)


@pytest.mark.parametrize("engine", ENGINES)
def test_many_levels_against_scipy(engine):
    """More distinct values than the Fenwick tree takes (2**17): numba counts by merge sort."""
    rng = np.random.default_rng(5)
    n = 2**17 + 300
    x = rng.normal(size=(1, n, 1))
    y = x + rng.normal(size=(1, n, 1))
    s, tx, ty, _ = sorted_counts(x, y, engine_name=engine)
    ref = stats.kendalltau(x[0, :, 0], y[0, :, 0]).statistic
    assert s[0, 0, 0] / np.sqrt(tx[0, 0, 0] * ty[0, 0, 0]) == pytest.approx(ref, abs=TOL)
    assert tx[0, 0, 0] == ty[0, 0, 0] == n * (n - 1) // 2


def test_cost_model_switches_between_kernels(monkeypatch):
    # HANNA (960 stories, 198 columns, all pairs): the sign-matrix products
    assert kendall_plan(1, 960, 198, 198, masked=False, same=True)[0] == "blocks"
    # system level (10 systems): the products, no compiled kernel to load
    assert kendall_plan(1, 10, 198, 198, masked=False, same=True)[0] == "blocks"
    # 100,000 stories: O(n log n), whichever engine
    for engine in ("numba", "numpy"):
        monkeypatch.setenv("STORYEVAL_KENDALL_ENGINE", engine)
        if engine == "numba" and not HAS_NUMBA:
            continue
        kernel, costs = kendall_plan(1, 100_000, 36, 36, masked=False, same=True)
        assert kernel == "sorted" and costs["sorted"] < costs["blocks"] / 5
    # missing values: the masked products are slow already at a few thousand stories
    assert kendall_plan(1, 3000, 36, 36, masked=True, same=True)[0] == "sorted"
    # a few low-cardinality y columns: counting by levels is applicable
    assert "levels" in kendall_plan(1, 960, 72, 6, masked=False, same=False, y_levels=78)[1]


def test_kernel_argument_is_checked():
    x = np.zeros((1, 5, 2))
    with pytest.raises(ValueError, match="unknown Kendall kernel"):
        kendall_counts(x, x, masked=False, kernel="fast")
    with pytest.raises(ValueError, match="levels"):
        kendall_counts(x, x, masked=False, same=True, kernel="levels")


# --------------------------------------------------------------------------------------------
# reading large long tables


def test_arrow_reader_types_like_the_c_parser(tmp_path, monkeypatch):
    pytest.importorskip("pyarrow")
    from storyeval.data import io as data_io

    text = ("system,prompt_id,day,flag,empty,measure,value\n"
            "A,1,2024-01-01,True,,m,1.5\n"
            "B,02,2024-01-02,False,,m,NA\n"
            "C,3,2024-01-03,True,,m,\n")
    path = tmp_path / "t.csv"
    path.write_text(text, encoding="utf-8")
    c_frame, _ = data_io.read_table(path)
    monkeypatch.setattr(data_io, "_ARROW_MIN_BYTES", 0)
    arrow_frame, _ = data_io.read_table(path)
    pd.testing.assert_frame_equal(arrow_frame, c_frame)
    # a malformed row still gets the C parser's message
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3,4,5\n", encoding="utf-8")
    with pytest.raises(Exception, match="cannot be read as csv"):
        data_io.read_table(tmp_path / "bad.csv")


def test_vectorised_validation_keeps_its_messages():
    from storyeval.data.io import validate_scores
    from storyeval.data.scores import scores_to_dataset
    from storyeval.exceptions import InputError

    frame = pd.DataFrame({"system": ["A", "A", "B", "B"], "prompt_id": [1, 2, 1, 2],
                          "measure": "m", "value": [1.0, 2.0, 3.0, 4.0]})
    ds = scores_to_dataset(frame)
    assert ds.wide()["m"].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert validate_scores(frame)["story_id"].tolist() == ["A/1", "A/2", "B/1", "B/2"]
    dup = pd.concat([frame, frame.iloc[[2]]], ignore_index=True)
    with pytest.raises(InputError, match=r"duplicate score for story 'B/1' and measure 'm' at "
                                         r"scores, row 2 and row 4 \(2 duplicated"):
        validate_scores(dup)
    clash = frame.assign(story_id=["s1", "s2", "s1", "s3"], measure=["m", "m", "m2", "m"])
    with pytest.raises(InputError, match="story_id 's1' has several"):
        validate_scores(clash)
    blank = frame.assign(system=["A", " ", "B", "B"])
    with pytest.raises(InputError, match="row 1: column 'system' is empty"):
        validate_scores(blank)
    text = frame.assign(value=["1", "x", "", "NA"])
    with pytest.raises(InputError, match="row 1: column 'value' is not a number: 'x'"):
        validate_scores(text)


def test_warm_up_loads_the_compiled_kernels_or_does_nothing(monkeypatch):
    import sys

    from storyeval.correlation.compiled import warm_up
    from storyeval.correlation.kendall_sorted import engine

    thread = warm_up(background=True)
    if engine() != "numba":
        assert thread is None
        return
    thread.join(timeout=120)
    assert not thread.is_alive()
    assert "storyeval.correlation._kendall_numba" in sys.modules
    assert "storyeval.correlation._kendall_rows_numba" in sys.modules
    monkeypatch.setenv("STORYEVAL_KENDALL_ENGINE", "numpy")
    assert warm_up(background=True) is None


def test_meta_command_warms_up_for_large_inputs(tmp_path, monkeypatch):
    import argparse

    from storyeval.cli import meta as meta_cli

    calls = []
    monkeypatch.setattr("storyeval.correlation.compiled.warm_up",
                        lambda background=False: calls.append(background))
    small, large = tmp_path / "small.csv", tmp_path / "large.csv"
    small.write_text("a\n1\n")
    with open(large, "wb") as f:
        f.truncate(meta_cli._WARM_UP_MIN_BYTES)
    meta_cli._warm_up_for_large_input(argparse.Namespace(data=small, scores=[]))
    meta_cli._warm_up_for_large_input(argparse.Namespace(data=None, scores=[]))
    assert calls == []
    meta_cli._warm_up_for_large_input(argparse.Namespace(data=small, scores=[large]))
    assert calls == [True]
