"""Tests of storyeval.agreement.icc: ICC(2,k) against pingouin, vectorised groups, bad input."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from storyeval.agreement.icc import ICCResult, icc2k, icc2k_many
from storyeval.exceptions import InputError, UndefinedStatisticWarning

pg = pytest.importorskip("pingouin")


def pingouin_icc(y: np.ndarray) -> dict[str, tuple[float, np.ndarray, float]]:
    """pingouin's ICC(A,k) and ICC(A,1) rows, whatever the version names them.

    pingouin 0.7.0 names the rows ``ICC(A,k)`` / ``ICC(A,1)`` and the interval ``CI95``; older
    versions ``ICC2k`` / ``ICC2`` and ``CI95%``. pingouin rounds the interval to 2 decimals by
    default (option ``round.column.CI95``); it is switched off here and restored after.
    """
    long = pd.DataFrame(y).rename_axis("item").reset_index().melt(
        id_vars="item", var_name="rater", value_name="score"
    )
    saved = dict(pg.options)
    try:
        for key in ("round.column.CI95", "round.column.CI95%"):
            pg.options.pop(key, None)
        pg.options["round"] = None
        table = pg.intraclass_corr(long, targets="item", raters="rater", ratings="score")
    finally:
        pg.options.clear()
        pg.options.update(saved)
    table = table.set_index("Type")
    ci_col = "CI95" if "CI95" in table.columns else "CI95%"
    out = {}
    for ours, names in {"k": ("ICC(A,k)", "ICC2k"), "1": ("ICC(A,1)", "ICC2")}.items():
        row = next(n for n in names if n in table.index)
        out[ours] = (
            float(table.at[row, "ICC"]),
            np.asarray(table.at[row, ci_col], dtype=float),
            float(table.at[row, "pval"]),
        )
    return out


def random_ratings(rng, n, k, *, rater_bias=0.3, noise=0.7):
    return rng.normal(size=(n, 1)) + noise * rng.normal(size=(n, k)) + rater_bias * rng.normal(
        size=k
    )


@pytest.mark.parametrize("n,k,seed", [(4, 3, 0), (30, 3, 1), (10, 5, 2), (96, 2, 3), (25, 4, 4)])
def test_icc2k_equals_pingouin(n, k, seed):
    y = random_ratings(np.random.default_rng(seed), n, k)
    ref = pingouin_icc(y)
    res = icc2k(y)
    assert res.statistic == pytest.approx(ref["k"][0], abs=1e-10)
    low, high = res.confidence_interval()
    if ref["1"][1][0] <= -1 / (k - 1):
        # pingouin carries an ICC(2,1) bound below -1/(k-1) through Spearman-Brown, whose sign
        # flips there: an inverted interval (n=4, k=3: [6.91, 0.93]); the bound is -inf
        assert ref["k"][1][0] > ref["k"][1][1] and low == -np.inf
    else:
        assert low == pytest.approx(ref["k"][1][0], abs=1e-10)
    assert high == pytest.approx(ref["k"][1][1], abs=1e-10)
    assert res.icc_single == pytest.approx(ref["1"][0], abs=1e-10)
    assert res.confidence_interval_single() == pytest.approx(tuple(ref["1"][1]), abs=1e-10)
    assert res.pvalue == pytest.approx(ref["k"][2], rel=1e-8, abs=1e-300)
    assert (res.n_items, res.k, res.df1, res.df2) == (n, k, n - 1, (n - 1) * (k - 1))


def test_icc2k_likert_integers_equal_pingouin():
    # Integer 1-5 ratings like HANNA's, with ties.
    rng = np.random.default_rng(7)
    y = np.clip(np.round(3 + random_ratings(rng, 50, 3)), 1, 5)
    ref = pingouin_icc(y)
    res = icc2k(y)
    assert res.statistic == pytest.approx(ref["k"][0], abs=1e-10)
    assert res.confidence_interval() == pytest.approx(tuple(ref["k"][1]), abs=1e-10)


def test_pingouin_wine_example_table():
    # pingouin's documented example (4 judges x 8 wines): ICC(A,k) 0.914, CI [0.75, 0.98].
    wine = pg.read_dataset("icc")
    res = icc2k(wine, item="Wine", rater="Judge", rating="Scores")
    assert round(res.statistic, 3) == 0.914
    assert [round(x, 2) for x in res.confidence_interval()] == [0.75, 0.98]
    assert round(res.icc_single, 3) == 0.728


def test_hand_worked_anova():
    # y = [[1,2,1],[3,3,4],[5,4,5],[2,2,2]], by hand: grand mean 17/6; row means 4/3, 10/3,
    # 14/3, 2 -> SSR = 3 * (9/4 + 1/4 + 121/36 + 25/36) = 59/3, MSR = 59/9; col means 11/4,
    # 11/4, 3 -> SSC = 4 * (1/144 + 1/144 + 4/144) = 1/6, MSC = 1/12; SST = 118 - 34^2/12 = 65/3
    # -> SSE = 11/6, MSE = 11/36. ICC(2,k) = (59/9 - 11/36) / (59/9 + (1/12 - 11/36)/4)
    # = 225/234; ICC(2,1) = (225/36) / (236/36 + 2 * 11/36 + 3 * (-8/36)/4) = 225/252.
    res = icc2k([[1, 2, 1], [3, 3, 4], [5, 4, 5], [2, 2, 2]])
    assert res.ms_rows == pytest.approx(59 / 9, abs=1e-12)
    assert res.ms_cols == pytest.approx(1 / 12, abs=1e-12)
    assert res.ms_error == pytest.approx(11 / 36, abs=1e-12)
    assert res.statistic == pytest.approx(225 / 234, abs=1e-12)
    assert res.icc_single == pytest.approx(225 / 252, abs=1e-12)
    assert res.F == pytest.approx(236 / 11, abs=1e-10)


def test_long_dataframe_equals_wide_and_is_order_invariant():
    rng = np.random.default_rng(11)
    y = random_ratings(rng, 12, 3)
    long = pd.DataFrame(
        [(f"s{i}", f"r{j}", y[i, j]) for i in range(12) for j in range(3)],
        columns=["story", "annotator", "value"],
    ).sample(frac=1.0, random_state=0)
    wide = icc2k(y)
    from_long = icc2k(long, item="story", rater="annotator", rating="value")
    assert from_long.statistic == pytest.approx(wide.statistic, abs=1e-12)
    assert from_long.confidence_interval() == pytest.approx(wide.confidence_interval(), abs=1e-12)
    # Permuting items or raters leaves ICC unchanged.
    perm = icc2k(y[rng.permutation(12)][:, [2, 0, 1]])
    assert perm.statistic == pytest.approx(wide.statistic, abs=1e-12)


def test_result_unpacks_and_frame():
    res = icc2k(random_ratings(np.random.default_rng(3), 20, 3))
    stat, p = res
    assert (stat, p) == (res.statistic, res.pvalue)
    assert isinstance(res, ICCResult)
    frame = res.to_frame()
    assert list(frame.columns[:3]) == ["icc2k", "ci_low", "ci_high"]
    assert frame["ci_low"].iloc[0] == res.confidence_interval()[0]


def test_confidence_level_widens_interval():
    res = icc2k(random_ratings(np.random.default_rng(5), 20, 3), confidence_level=0.99)
    low99, high99 = res.confidence_interval()
    low95, high95 = res.confidence_interval(0.95)
    assert low99 < low95 < res.statistic < high95 < high99
    # pingouin's interval is the 95% one.
    ref = pingouin_icc(random_ratings(np.random.default_rng(5), 20, 3))
    assert (low95, high95) == pytest.approx(tuple(ref["k"][1]), abs=1e-10)


def test_icc2k_many_equals_one_by_one():
    rng = np.random.default_rng(21)
    y = np.stack([random_ratings(rng, 40, 3, noise=s) for s in (0.1, 0.5, 1.0, 3.0)])
    many = icc2k_many(y, groups=["a", "b", "c", "d"])
    assert list(many.index) == ["a", "b", "c", "d"]
    for g, label in enumerate(many.index):
        one = icc2k(y[g])
        assert many.at[label, "icc2k"] == pytest.approx(one.statistic, abs=1e-12)
        assert many.at[label, "ci_low"] == pytest.approx(one.confidence_interval()[0], abs=1e-12)
        assert many.at[label, "icc21"] == pytest.approx(one.icc_single, abs=1e-12)
    # More noise, lower reliability.
    assert many["icc2k"].is_monotonic_decreasing


def test_nan_policy_omit_matches_pingouin_listwise_deletion():
    rng = np.random.default_rng(8)
    y = random_ratings(rng, 30, 3)
    y[[2, 7], [0, 2]] = np.nan
    with pytest.raises(InputError, match="missing value at group 0, item 2"):
        icc2k(y)
    res = icc2k(y, nan_policy="omit")
    complete = y[~np.isnan(y).any(axis=1)]
    ref = pingouin_icc(complete)
    assert res.n_items == 28 and res.n_items_omitted == 2
    assert res.statistic == pytest.approx(ref["k"][0], abs=1e-10)
    assert res.confidence_interval() == pytest.approx(tuple(ref["k"][1]), abs=1e-10)
    # Per-group omission in the vectorised call.
    z = np.stack([y, random_ratings(rng, 30, 3)])
    many = icc2k_many(z, nan_policy="omit")
    assert many["n_items"].tolist() == [28, 30]
    assert many["icc2k"].iloc[0] == pytest.approx(res.statistic, abs=1e-12)


def test_constant_ratings_are_undefined_with_warning():
    with pytest.warns(UndefinedStatisticWarning, match="all ratings equal"):
        res = icc2k(np.full((5, 3), 4.0))
    assert np.isnan(res.statistic) and res.reason
    with pytest.warns(UndefinedStatisticWarning, match="first: 'flat'"):
        many = icc2k_many(np.stack([np.full((5, 3), 2.0), np.arange(15.0).reshape(5, 3)]),
                          groups=["flat", "ok"])
    assert np.isnan(many.at["flat", "icc2k"]) and np.isfinite(many.at["ok", "icc2k"])


def test_perfect_agreement_is_one():
    # Three identical tries per story (an LLM that always repeats itself): ICC(2,k) = 1.
    y = np.repeat(np.array([[1.0], [3.0], [5.0], [2.0]]), 3, axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedStatisticWarning)
        res = icc2k(y)
    assert res.statistic == 1.0 and res.icc_single == 1.0


def test_too_few_items_undefined():
    with pytest.warns(UndefinedStatisticWarning, match="fewer than 2"):
        res = icc2k(np.array([[1.0, 2.0, 3.0], [np.nan, 1, 1]]), nan_policy="omit")
    assert np.isnan(res.statistic)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"ratings": [[1, 2, 3]] * 3, "confidence_level": 1.5}, "confidence_level"),
        ({"ratings": [[1], [2], [3]]}, "at least 2 raters"),
        ({"ratings": [1, 2, 3]}, "2-D"),
        ({"ratings": [[1, "a"], [2, 3]]}, "numeric"),
        ({"ratings": [[1, 2], [2, 3]], "nan_policy": "propagate"}, "nan_policy"),
        ({"ratings": [[1, np.inf], [2, 3]]}, "infinite rating at group 0, item 0, rater 1"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        icc2k(**kwargs)


def test_bad_long_input():
    long = pd.DataFrame({"s": [1, 1, 2, 2], "r": ["a", "b", "a", "a"], "v": [1, 2, 3, 4]})
    with pytest.raises(InputError, match="more than one rating"):
        icc2k(long, item="s", rater="r", rating="v")
    with pytest.raises(InputError, match=r"column\(s\) \['x'\]"):
        icc2k(long, item="s", rater="r", rating="x")
    with pytest.raises(InputError, match="item= is required"):
        icc2k(long, rater="r", rating="v")
    bad = long.assign(v=["1", "2", "x", "4"], r=["a", "b", "a", "b"])
    with pytest.raises(InputError, match="not numeric at row 2"):
        icc2k(bad, item="s", rater="r", rating="v")
    with pytest.raises(InputError, match="groups has 1 labels"):
        icc2k_many(np.ones((2, 3, 3)), groups=["a"])
    with pytest.raises(InputError, match="3-D"):
        icc2k_many(np.ones((3, 3)))
