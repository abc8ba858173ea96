"""``tie_rtol`` reaches every resampling kernel: the statistic a kernel computes on the
unresampled (unpermuted) data equals the point estimate at the same ``tie_rtol``, for several
values, on data whose system means are near-ties (equal within 1e-9 relative)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from storyeval.correlation.levels import correlate, level_data
from storyeval.data import scores_to_dataset
from storyeval.exceptions import FewClustersWarning
from storyeval.meta.pipeline import meta_evaluate
from storyeval.resample import bootstrap_correlations
from storyeval.resample.chance import chance_baseline, chance_distribution
from storyeval.resample.permutation import paired_permutation_test

RTOLS = (0.0, 1e-12, 1e-6, 1e-3)
SYSTEMS = 6
PROMPTS = 8


def _near_ties() -> pd.DataFrame:
    """System means of every column: distinct values, two of them split by 1e-9 relative (a tie
    at tie_rtol 1e-6 and 1e-3, not at 0 or 1e-12) and two split by 1e-4 (a tie at 1e-3 only)."""
    g = np.random.default_rng(11)
    offsets = g.normal(size=PROMPTS)
    offsets -= offsets.mean()
    bases = {
        "h": np.array([1.0, 2.0, 2.0 * (1 + 1e-9), 3.0, 4.0, 4.0 * (1 + 1e-4)]),
        "a": np.array([1.5, 1.5 * (1 + 1e-9), 2.5, 2.0, 3.0 * (1 + 1e-4), 3.0]),
        "b": np.array([2.0, 1.0, 3.0, 3.0 * (1 + 1e-9), 5.0, 4.0]),
        "c": np.array([1.0, 3.0, 2.0, 4.0, 4.0 * (1 - 1e-9), 6.0]),
    }
    idx = pd.MultiIndex.from_product([[f"S{s}" for s in range(SYSTEMS)], range(PROMPTS)],
                                     names=["system", "prompt_id"])
    # the same prompt offsets in every system and column: system means are base + 0 (up to
    # rounding, which the tie rule at 1e-12 absorbs)
    cols = {k: np.repeat(v, PROMPTS) + np.tile(offsets, SYSTEMS) * 0.1 for k, v in bases.items()}
    return pd.DataFrame(cols, index=idx)


def _point(wide: pd.DataFrame, pairs, method: str, rtol: float) -> np.ndarray:
    tidy = correlate(wide, sorted({p[0] for p in pairs}), sorted({p[1] for p in pairs}),
                     level="system", method=method, tie_rtol=rtol)
    value = tidy.set_index(["measure_x", "measure_y"])["value"]
    return np.array([value[p] for p in pairs])


@pytest.mark.parametrize("method", ["kendall_b", "spearman"])
def test_bootstrap_statistic_on_the_data_is_the_point_estimate(method):
    wide = _near_ties()
    pairs = [("a", "h"), ("b", "h"), ("c", "h")]
    values = []
    for rtol in RTOLS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FewClustersWarning)  # 8 prompts, on purpose
            res = bootstrap_correlations(wide, pairs, level="system", method=method,
                                         n_resamples=20, random_state=0, tie_rtol=rtol)
        point = _point(wide, pairs, method, rtol)
        np.testing.assert_allclose(res["value"].to_numpy(), point, rtol=0, atol=1e-12)
        values.append(point)
    # the data are built so that the tolerance changes the coefficients
    assert not np.allclose(values[0], values[2])


@pytest.mark.parametrize("method", ["kendall_b", "pearson"])
def test_permutation_observed_difference_is_the_point_estimate(method):
    wide = _near_ties()
    for rtol in RTOLS:
        res = paired_permutation_test(wide, "h", "a", ["b", "c"], level="system",
                                      method=method, n_permutations=20, orient=False,
                                      standardize=False, random_state=0, tie_rtol=rtol)
        point = _point(wide, [("a", "h"), ("b", "h"), ("c", "h")], method, rtol)
        np.testing.assert_allclose(res["value_a"].to_numpy(), point[0], atol=1e-12)
        np.testing.assert_allclose(res["delta"].to_numpy(), point[0] - point[1:], atol=1e-12)


def test_chance_baseline_uses_the_tie_rule_of_the_criterion():
    wide = _near_ties()
    for rtol in RTOLS:
        res = chance_baseline(wide, "h", level="system", n_draws=200, random_state=3,
                              tie_rtol=rtol)
        z = level_data(wide, ["h"], level="system", tie_rtol=rtol)["h"].to_numpy()
        d = chance_distribution(z, n_draws=200, random_state=np.random.default_rng(3))
        assert res.loc[0, "mean"] == pytest.approx(np.nanmean(d), abs=1e-12)


def _dataset(wide: pd.DataFrame):
    long = wide.reset_index().melt(id_vars=["system", "prompt_id"], var_name="measure",
                                   value_name="value")
    return scores_to_dataset(long, criteria=["h"], name="ties")


@pytest.mark.parametrize("test", ["bootstrap", "permutation", "permutation-random"])
def test_meta_comparisons_use_the_run_tie_rtol(test):
    """Through meta_evaluate: the difference each system-level test and interval starts from
    is the difference of the reported correlations, at every tie_rtol."""
    data = _dataset(_near_ties())
    for rtol in RTOLS:
        res = meta_evaluate(data, reference="all", levels="system", test=test, tie_rtol=rtol,
                            n_resamples=50, n_permutations=50)
        will = res.comparisons
        np.testing.assert_allclose(will["delta"], will["r_a"] - will["r_b"], atol=1e-12)
        if test != "bootstrap":
            np.testing.assert_allclose(will["t"], will["delta"], atol=1e-12)
