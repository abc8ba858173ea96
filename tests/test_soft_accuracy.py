"""Soft pairwise accuracy (storyeval.compare.soft_accuracy).

mt-metrics-eval's numbers (tests/data/mteval_reference.json: its p-value matrices and
``pce.compute_one_minus_pce`` of them, on the embedded HANNA data) are the reference.
"""

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from storyeval.compare.soft_accuracy import (
    soft_pairwise_accuracy,
    soft_pairwise_accuracy_ci,
    soft_pairwise_accuracy_table,
    system_pvalues,
)
from storyeval.exceptions import InputError

REFERENCE = json.loads((Path(__file__).parent / "data" / "mteval_reference.json")
                       .read_text(encoding="utf-8"))


def _matrix(rows):
    return np.array([[np.nan if v is None else v for v in row] for row in rows])


@pytest.mark.parametrize("row", REFERENCE["spa"],
                         ids=lambda r: f"{r['criterion']}-{r['measure']}")
def test_equals_mt_metrics_eval_given_the_same_pvalues(row):
    got = soft_pairwise_accuracy(_matrix(row["human_p"]), _matrix(row["metric_p"]))
    assert got == pytest.approx(row["spa"], abs=1e-9)


def _wide(values: np.ndarray, name="m") -> pd.DataFrame:
    S, P = values.shape
    idx = pd.MultiIndex.from_product([[f"s{k}" for k in range(S)], range(P)],
                                     names=["system", "prompt_id"])
    return pd.DataFrame({name: values.ravel()}, index=idx)


def test_pvalues_agree_with_exact_enumeration():
    rng = np.random.default_rng(5)
    values = rng.normal(0, 1, (3, 8)) + np.array([[0.6], [0.0], [-0.2]])
    p, systems = system_pvalues(_wide(values), ["m"], n_permutations=20000, random_state=2)
    assert systems == ["s0", "s1", "s2"]
    for i, j in itertools.combinations(range(3), 2):
        d = values[i] - values[j]
        flips = np.array(list(itertools.product([1, -1], repeat=8)))
        exact = np.mean(flips @ d >= d.sum() - 1e-12)
        assert p[0, i, j] == pytest.approx(exact, abs=0.02)
    assert np.isnan(p[0][np.tril_indices(3)]).all()


def test_metric_equal_to_humans_scores_one_and_reversed_scores_less():
    rng = np.random.default_rng(1)
    h = rng.normal(0, 1, (5, 30)) + np.arange(5)[:, None] * 0.3
    wide = _wide(h, "h")
    wide["same"] = wide["h"]
    wide["reversed"] = -wide["h"]
    table = soft_pairwise_accuracy_table(wide, ["same", "reversed"], ["h"], n_permutations=200)
    assert table.loc[table.measure == "same", "value"].item() == 1.0
    assert table.loc[table.measure == "reversed", "value"].item() < 0.5
    assert set(table["n_pairs"]) == {10}


def test_bootstrap_interval_recomputes_the_pvalues():
    rng = np.random.default_rng(3)
    h = rng.normal(0, 1, (5, 40)) + np.arange(5)[:, None] * 0.4
    wide = _wide(h, "h")
    wide["m"] = wide["h"] + rng.normal(0, 1, len(wide))
    wide["same"] = wide["h"]
    low, high = soft_pairwise_accuracy_ci(wide, "m", "h", n_resamples=60, n_permutations=200)
    value = soft_pairwise_accuracy_table(wide, ["m"], ["h"], n_permutations=200)["value"].item()
    assert 0 <= low <= high <= 1 and high - low > 0.01
    assert low - 0.05 <= value <= high + 0.05
    # a measure equal to the humans has SPA 1 in every resample (same swaps for both)
    assert soft_pairwise_accuracy_ci(wide, "same", "h", n_resamples=20,
                                     n_permutations=50) == (1.0, 1.0)
    again = soft_pairwise_accuracy_ci(wide, "m", "h", n_resamples=60, n_permutations=200)
    assert again == (low, high)


def test_errors():
    with pytest.raises(InputError, match="square"):
        soft_pairwise_accuracy(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(InputError, match="different numbers"):
        soft_pairwise_accuracy([0.1, 0.2], [0.1])
    with pytest.raises(InputError, match="outside"):
        soft_pairwise_accuracy([1.5], [0.1])
    wide = _wide(np.ones((2, 3)))
    wide = wide.drop(("s1", 2))
    with pytest.raises(InputError, match="system 's1', prompt 2"):
        system_pvalues(wide, ["m"])
