"""Tie-calibrated pairwise accuracy and tau_23 (storyeval.compare.tie_calibration).

The reference numbers (tests/data/mteval_reference.json) were computed with
google-research/mt-metrics-eval's ``stats.KendallWithTiesOpt(..., sample_rate=1.0)`` on the
embedded HANNA data; the file records the commit, the calls and the arguments.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from storyeval.compare.tie_calibration import (
    kendall_23,
    tie_calibrated,
    tie_calibrated_ci,
    tie_calibrated_table,
)
from storyeval.exceptions import InputError

REFERENCE = json.loads((Path(__file__).parent / "data" / "mteval_reference.json")
                       .read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def hanna_wide():
    from storyeval.data import load_hanna

    wide = load_hanna().wide()
    return wide[wide.index.get_level_values("system") != "Human"].sort_index()


@pytest.mark.parametrize("row", REFERENCE["tie_calibration"],
                         ids=lambda r: f"{r['criterion']}-{r['measure']}-{r['variant']}-"
                                       f"{r['average_by']}")
def test_equals_mt_metrics_eval_on_hanna(hanna_wide, row):
    # WMT's average_by: "item" = storyeval's prompt level, "sys" = groups of systems,
    # "none" = all pairs pooled (overall)
    by = {"item": "prompt_id", "sys": "system", "none": None}[row["average_by"]]
    groups = None if by is None else hanna_wide.index.get_level_values(by)
    res = tie_calibrated(hanna_wide[row["criterion"]].to_numpy(),
                         hanna_wide[row["measure"]].to_numpy(), groups,
                         variant="acc23" if row["variant"] == "acc23" else "tau23")
    assert res.value == pytest.approx(row["value"], abs=1e-9)
    if row["average_by"] != "sys":
        assert res.epsilon == pytest.approx(row["epsilon"], abs=1e-12)
        return
    # Per-system groups: where several epsilons reach the same maximum exactly (integer
    # counts), mt-metrics-eval's incrementally updated float sum picks one of them by rounding
    # noise (for the same data its acc23 and 23 runs, affine in each other, pick different
    # ones); storyeval takes the smallest. Their epsilon must then be an exact tie.
    if res.epsilon != row["epsilon"]:
        k = int(np.searchsorted(res.thresholds, row["epsilon"]))
        assert res.thresholds[k] == row["epsilon"]
        assert res.values[k] == res.value and res.epsilon < row["epsilon"]


def test_hand_worked_example():
    # pairs: (0,1) tied by humans, metric apart by 0.01; the other 5 concordant
    res = tie_calibrated([1, 1, 2, 3], [0.10, 0.11, 0.5, 0.9])
    assert res.value_no_calibration == pytest.approx(5 / 6)
    assert res.value == 1.0
    assert res.epsilon == pytest.approx(0.01)
    assert res.thresholds[0] == 0.0 and res.n_pairs == 6
    # tau23 at epsilon 0: (5 - 1) / 6
    assert kendall_23([1, 1, 2, 3], [0.10, 0.11, 0.5, 0.9]) == pytest.approx(4 / 6)
    assert kendall_23([1, 1, 2, 3], [0.10, 0.11, 0.5, 0.9], epsilon=0.02) == pytest.approx(1.0)


def _brute_force(h, m, g, variant):
    """Every candidate threshold evaluated from scratch, groups averaged."""
    best, best_eps = -np.inf, None
    cands = sorted({0.0} | {abs(a - b) for k in set(g) for a in m[g == k] for b in m[g == k]})
    for eps in cands:
        vals = []
        for k in sorted(set(g)):
            hh, mm = h[g == k], m[g == k]
            i, j = np.triu_indices(len(hh), 1)
            if len(i) == 0:
                continue
            dh, dm = hh[i] - hh[j], mm[i] - mm[j]
            mt = np.abs(dm) <= eps
            good = ((dh == 0) & mt) | (~mt & (np.sign(dh) == np.sign(dm)) & (dh != 0))
            vals.append(good.mean() if variant == "acc23" else 2 * good.mean() - 1)
        v = np.mean(vals)
        if v > best + 1e-12:
            best, best_eps = v, eps
    return best, best_eps


@pytest.mark.parametrize("variant", ["acc23", "tau23"])
def test_matches_brute_force_with_unequal_groups(variant):
    rng = np.random.default_rng(3)
    g = np.repeat([0, 1, 2, 3], [3, 5, 4, 1])
    h = rng.integers(1, 4, len(g)).astype(float)
    m = np.round(h + rng.normal(0, 0.8, len(g)), 1)
    res = tie_calibrated(h, m, g, variant=variant)
    value, eps = _brute_force(h, m, g, variant)
    assert res.value == pytest.approx(value, abs=1e-12)
    assert res.epsilon == pytest.approx(eps, abs=1e-12)
    assert res.n_groups == 3  # the one-story group has no pair


def test_nan_drops_observation():
    res = tie_calibrated([1, 2, np.nan, 3], [1, 2, 5, 3])
    assert res.n_pairs == 3 and res.value == 1.0


@pytest.mark.parametrize("args, match", [
    (([1, 2], [1, 2, 3]), "length"),
    (([1], [1]), "at least one pair"),
    (([1, 2], [1, np.inf]), "infinite"),
])
def test_errors(args, match):
    with pytest.raises(InputError, match=match):
        tie_calibrated(*args)
    with pytest.raises(InputError, match="variant"):
        tie_calibrated([1, 2], [1, 2], variant="b")


def test_table_and_bootstrap_interval(hanna_wide):
    table = tie_calibrated_table(hanna_wide, ["Beluga-13B RE 1"], ["Relevance"],
                                 levels=("prompt", "system"))
    assert list(table["level"]) == ["prompt", "system"]
    assert list(table["n_pairs"]) == [96 * 45, 45]
    for level, value in zip(table["level"], table["value"]):
        low, high = tie_calibrated_ci(hanna_wide, "Beluga-13B RE 1", "Relevance", level=level,
                                      n_resamples=60, random_state=1)
        assert low <= value <= high
        again = tie_calibrated_ci(hanna_wide, "Beluga-13B RE 1", "Relevance", level=level,
                                  n_resamples=60, random_state=1)
        assert again == (low, high)


def test_overall_bootstrap_weights_match_explicit_copies():
    """Prompt multiplicities of the overall level equal building the resampled data set."""
    rng = np.random.default_rng(0)
    import pandas as pd

    idx = pd.MultiIndex.from_product([["A", "B", "C"], [0, 1, 2, 3]],
                                     names=["system", "prompt_id"])
    wide = pd.DataFrame({"h": rng.integers(1, 4, 12).astype(float),
                         "m": rng.integers(1, 6, 12).astype(float)}, index=idx)
    from storyeval.compare.tie_calibration import _prepare, _sorted_pairs, _story_resamples

    h, m, codes, _ = _prepare(wide["h"].to_numpy(), wide["m"].to_numpy(), None)
    sp = _sorted_pairs(h, m, codes, "acc23")
    prompt_codes = wide.index.get_level_values("prompt_id").to_numpy()
    cP = np.array([[2.0, 0.0, 1.0, 1.0]])
    got = _story_resamples(sp, prompt_codes, False, cP)[0]
    # explicit copies: prompt 0 twice, copies of one story never paired with each other
    rows = np.concatenate([np.flatnonzero(prompt_codes == p) for p in (0, 0, 2, 3)])
    copy = np.repeat(np.arange(4), [3, 3, 3, 3])
    hh, mm = wide["h"].to_numpy()[rows], wide["m"].to_numpy()[rows]
    i, j = np.triu_indices(len(rows), 1)
    keep = ~((rows[i] == rows[j]) & (copy[i] != copy[j]))
    best = max(
        np.mean(((hh[i] - hh[j] == 0) & (np.abs(mm[i] - mm[j]) <= eps)
                 | ((np.abs(mm[i] - mm[j]) > eps)
                    & (np.sign(hh[i] - hh[j]) * np.sign(mm[i] - mm[j]) > 0)))[keep])
        for eps in [0.0, 1.0, 2.0, 3.0, 4.0])
    assert got == pytest.approx(best, abs=1e-12)


def test_too_many_pairs_is_an_error_for_the_interval_only(monkeypatch, hanna_wide):
    import storyeval.compare.tie_calibration as tc
    import storyeval.compare.tie_search as ts

    monkeypatch.setattr(tc, "MAX_PAIRS", 5)
    # the interval enumerates every pair only where the search's prefix table does not fit
    tc.tie_calibrated_ci(hanna_wide, "Beluga-13B RE 1", "Relevance", level="overall",
                         n_resamples=5)
    monkeypatch.setattr(ts, "RESAMPLE_TABLE_CELLS", 10)
    with pytest.raises(InputError, match="point estimate has no such limit"):
        tc.tie_calibrated_ci(hanna_wide, "Beluga-13B RE 1", "Relevance", level="overall",
                             n_resamples=5)
    assert tc.tie_calibrated([1, 2, 3, 4], [1, 2, 3, 4]).n_pairs == 6  # 6 pairs > 5: no limit


@pytest.mark.parametrize("enumerate_pairs", [2**19, 16])
def test_bootstrap_search_equals_the_curve_over_every_pair(monkeypatch, enumerate_pairs):
    # every resample's calibrated value by the shared branch and bound (tie_search) against
    # the curve recomputed over every pair under the resample's weights (the former interval
    # code): Likert means, integer ratings with rounded metrics (many ties), missing values;
    # a small enumeration limit sends the search through its interval cuts too
    import storyeval.compare.tie_search as ts
    from storyeval.compare.tie_calibration import (
        _prepare,
        _searched_resamples,
        _sorted_pairs,
        _story_resamples,
    )
    from storyeval.resample.bootstrap import draw_resamples

    monkeypatch.setattr(ts, "RESAMPLE_ENUMERATE_PAIRS", enumerate_pairs)
    for seed in range(6):
        g = np.random.default_rng(seed)
        n_sys, n_p = 4 + seed % 3, 9 + 3 * seed
        n = n_sys * n_p
        prompts = np.tile(np.arange(n_p), n_sys)
        if seed % 2:
            h = g.integers(1, 6, n).astype(float)
            m = np.round(h + g.normal(size=n), 1)
        else:
            lat = g.normal(size=n)
            h = np.clip(np.round(lat[:, None] + g.normal(size=(n, 3)) + 3), 1, 5).mean(1)
            m = 0.5 * lat + g.normal(size=n)
        h[g.integers(0, n, 2)] = np.nan
        _, draws = draw_resamples(n_sys, n_p, n_resamples=40, resample_by="prompts",
                                  random_state=seed)
        for level in ("overall", "prompt"):
            hh, mm, codes, keep = _prepare(h, m, prompts if level == "prompt" else None)
            for variant in ("acc23", "tau23"):
                old = _story_resamples(_sorted_pairs(hh, mm, codes, variant), prompts[keep],
                                       level == "prompt", draws)
                new = _searched_resamples(hh, mm, codes, prompts[keep], draws, level, variant)
                np.testing.assert_allclose(new, old, rtol=0, atol=1e-12)
