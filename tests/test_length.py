"""Length diagnostics (storyeval.meta.length) on synthetic pairs where the truth is known."""

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from storyeval.exceptions import InputError
from storyeval.meta.length import (
    balance_length,
    length_controlled_accuracy,
    length_controlled_win_rate,
    length_table,
    partial_correlation,
    pointwise_pairs,
    prefer_longer_rate,
)


def _pairs(seed: int, n: int = 4000, p_longer: float | None = None):
    """Random lengths; human verdicts independent of length (or preferring the longer story
    with probability ``p_longer``)."""
    rng = np.random.default_rng(seed)
    la, lb = rng.integers(100, 1000, n), rng.integers(100, 1000, n)
    longer = np.sign(la - lb)
    if p_longer is None:
        h = np.where(rng.random(n) < 0.5, 1, -1)
    else:
        h = np.where(rng.random(n) < p_longer, longer, -longer)
        h[longer == 0] = 1
    return h, la, lb, longer


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_always_longer_judge_and_copying_judge(seed):
    h, la, lb, longer = _pairs(seed)
    rate, n = prefer_longer_rate(longer, la, lb)
    assert rate == 1.0 and n == int((la != lb).sum())
    always = length_controlled_accuracy(h, longer, la, lb)
    assert always["lc_accuracy"] == pytest.approx(0.50, abs=0.02)
    copy = length_controlled_accuracy(h, h, la, lb)
    assert copy["accuracy"] == 1.0 and copy["lc_accuracy"] == pytest.approx(1.0, abs=1e-12)
    # the humans of this design have no length preference
    assert prefer_longer_rate(h, la, lb)[0] == pytest.approx(0.5, abs=0.03)


def test_length_shortcut_is_removed_when_humans_prefer_longer():
    h, la, lb, longer = _pairs(3, p_longer=0.65)
    res = length_controlled_accuracy(h, longer, la, lb)
    assert res["accuracy"] == pytest.approx(0.65, abs=0.03)  # the shortcut pays raw ...
    assert res["lc_accuracy"] == pytest.approx(0.5, abs=1e-12)  # ... and not once balanced


def test_hand_worked_balanced_accuracy():
    # one bin (n_bins=1); human-preferred longer: pairs 0, 1; shorter: pair 2; equal: pair 3
    h = [1, 1, 1, -1]
    j = [1, -1, 1, -1]
    la, lb = [5, 6, 1, 3], [1, 1, 4, 3]
    res = length_controlled_accuracy(h, j, la, lb, n_bins=1)
    # bin: 0.5 * (1/2 + 1/1) = 0.75 over 3 pairs; equal-length pair agrees: (2.25 + 1) / 4
    assert res["lc_accuracy"] == pytest.approx(3.25 / 4)
    assert res["accuracy"] == 0.75


def test_win_rate_controls_for_length():
    _, la, lb, longer = _pairs(4)
    res = length_controlled_win_rate(longer, la, lb)
    assert res["lc_win_rate"] == pytest.approx(0.5, abs=0.03) and res["length_coef"] > 5
    rng = np.random.default_rng(5)
    biased = np.where(rng.random(len(la)) < 0.7, 1, -1)  # prefers a, ignores length
    res = length_controlled_win_rate(biased, la, lb)
    assert res["lc_win_rate"] == pytest.approx(res["win_rate"], abs=0.01)


def test_balance_length_prunes_symmetrically():
    h, la, lb, _ = _pairs(6, p_longer=0.65)
    sub = balance_length(h, la, lb, n_bins=8, random_state=0)
    assert sub.prefer_longer_before == pytest.approx(0.65, abs=0.03)
    assert sub.prefer_longer_after == 0.5
    assert sub.n_decided == len(h)
    assert sub.n_kept_decided == int(sub.keep.sum())
    assert 0.6 * len(h) < sub.n_kept_decided < 0.8 * len(h)
    d = (la - lb)[sub.keep] * h[sub.keep]
    hist_pos, _ = np.histogram(d[d > 0], bins=sub.bins)
    hist_neg, _ = np.histogram(-d[d < 0], bins=sub.bins)
    assert (hist_pos == hist_neg).all()


def test_partial_correlation_pearson_matches_residual_method():
    rng = np.random.default_rng(7)
    idx = pd.MultiIndex.from_product([["s0", "s1", "s2", "s3"], range(50)],
                                     names=["system", "prompt_id"])
    z = rng.normal(0, 1, len(idx))
    wide = pd.DataFrame({"len": z, "h": z + rng.normal(0, 1, len(idx)),
                         "m": z + rng.normal(0, 1, len(idx))}, index=idx)
    got = partial_correlation(wide, ["m"], ["h"], "len", method="pearson")
    resid = {c: wide[c] - np.polyval(np.polyfit(z, wide[c], 1), z) for c in ("h", "m")}
    expected = scipy.stats.pearsonr(resid["h"], resid["m"])[0]
    assert got["partial"].item() == pytest.approx(expected, abs=1e-10)
    assert got["value"].item() > got["partial"].item() + 0.2  # length explained much of it
    with pytest.raises(InputError, match="length column"):
        partial_correlation(wide, ["m"], ["h"], "words")


def test_pointwise_pairs_and_table():
    idx = pd.MultiIndex.from_product([["A", "B", "C"], [0, 1]], names=["system", "prompt_id"])
    wide = pd.DataFrame({"h": [3, 1, 2, 2, 1, 3.0], "m": [5, 1, 1, 2, 3, 9.0],
                         "len": [300, 100, 200, 200, 100, 300.0]}, index=idx)
    pairs = pointwise_pairs(wide, ["h", "m", "len"])
    assert len(pairs) == 6  # 3 pairs per prompt
    first = pairs[(pairs.prompt_id == 0) & (pairs.system_a == "A") & (pairs.system_b == "B")]
    assert first[["h", "m", "len"]].iloc[0].tolist() == [1.0, 1.0, 1.0]
    table = length_table(pairs, "h", ["m"], "len_a", "len_b")
    assert table["rater"].tolist() == ["h", "m"]
    assert table.loc[0, "prefer_longer"] == pytest.approx(
        prefer_longer_rate(pairs["h"], pairs["len_a"], pairs["len_b"])[0])


def test_errors():
    with pytest.raises(InputError, match="verdicts must be"):
        prefer_longer_rate([2], [1], [0])
    with pytest.raises(InputError, match="one value per pair"):
        prefer_longer_rate([1, -1], [1], [0])
    with pytest.raises(InputError, match="decided by both"):
        length_controlled_accuracy([0, 0], [1, 1], [1, 2], [2, 1])


def test_lc_win_rate_bootstrap_equals_refits_of_duplicated_prompts():
    # the batched weighted refit against the plain fit on the data of every resample, built by
    # repeating the pairs of each drawn prompt (the same draws: default_rng(3).integers)
    from storyeval.meta.length import _fit_logistic, _length_term

    g = np.random.default_rng(0)
    n = 400
    la, lb = g.normal(300, 60, n), g.normal(300, 60, n)
    prompts = np.arange(n) % 40
    p = 1 / (1 + np.exp(-(0.3 + 0.8 * np.tanh((la - lb) / 85))))
    v = np.where(g.random(n) < 0.1, 0, np.where(g.random(n) < p, 1, -1))
    res = length_controlled_win_rate(v, la, lb, clusters=prompts, n_resamples=60,
                                     random_state=3)
    ref = []
    for row in np.random.default_rng(3).integers(0, 40, (60, 40)):
        idx = np.concatenate([np.flatnonzero(prompts == c) for c in row])
        vv, dd = v[idx], (la - lb)[idx]
        dec = vv != 0
        x = np.column_stack([np.ones(dec.sum()), _length_term(dd[dec])])
        b0 = _fit_logistic(x, (vv[dec] > 0).astype(float), np.array([True, True]))[0]
        ref.append(1 / (1 + np.exp(-b0)))
    assert res["lc_standard_error"] == pytest.approx(np.std(ref, ddof=1), rel=1e-8)
    low, high = np.quantile(ref, [0.025, 0.975])
    assert (res["lc_ci_low"], res["lc_ci_high"]) == pytest.approx((low, high), rel=1e-8)
    assert res["lc_ci_low"] < res["lc_win_rate"] < res["lc_ci_high"]
    # without clusters every pair is a unit; no resamples: the point estimate alone, as before
    assert length_controlled_win_rate(v, la, lb, n_resamples=60)["lc_standard_error"] > 0
    assert "lc_ci_low" not in length_controlled_win_rate(v, la, lb)
    with pytest.raises(InputError, match="clusters"):
        length_controlled_win_rate(v, la, lb, clusters=prompts[:5], n_resamples=10)
