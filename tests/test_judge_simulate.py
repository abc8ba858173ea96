"""storyeval.judge.simulate: the calibrated judge has the requested gap, and the simulated
pass rate counts what `alt_test` decides on the same data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.compare.alt_test import alt_test
from storyeval.exceptions import InputError
from storyeval.judge.simulate import (
    calibrate_judge_noise,
    expected_gap,
    simulate_pass_rate,
    simulated_ratings,
)


def test_calibrated_noise_has_the_gap():
    noise = calibrate_judge_noise(0.2, n_items=20_000, tol=1e-3)
    assert expected_gap(noise, n_items=20_000) == pytest.approx(0.2, abs=0.005)
    # a noisier judge is worse: the gap grows with the noise
    assert expected_gap(noise + 1, n_items=20_000) > 0.3
    with pytest.raises(InputError, match="no judge"):
        calibrate_judge_noise(0.999, n_items=2_000, tol=0.5)


def test_pass_rate_counts_alt_test_decisions():
    noise = 1.1
    judge, humans = simulated_ratings(30, 60, 3, noise, rng=np.random.default_rng(5))
    passed = [alt_test(judge[s], pd.DataFrame(humans[s]), epsilon=0.2).passed
              for s in range(30)]
    res = simulate_pass_rate(60, gap=0.2, n_datasets=30, seed=5, judge_noise=noise)
    assert 0 < sum(passed) < 30  # both outcomes occur: the comparison is informative
    assert res["pass_rate"] == sum(passed) / 30 and res["judge_noise"] == noise
    assert res["mc_se"] == pytest.approx(np.sqrt(res["pass_rate"] * (1 - res["pass_rate"]) / 30))
