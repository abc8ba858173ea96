"""The within-system level (correlate within each system's stories, average over systems)
equals mt-metrics-eval's ``AverageCorrelation(average_by="sys")``; meta accepts it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.correlation.levels import correlate
from storyeval.exceptions import UndefinedStatisticWarning

# Source: google-research/mt-metrics-eval, mt_metrics_eval/stats.py (GitHub, main),
# ``stats.AverageCorrelation(fn, 10, "sys", **kw)(gold, metric)`` with fn scipy.stats.kendalltau
# (variant="b"), pearsonr or spearmanr, run outside this project on vectors exported from the
# embedded HANNA data (960 stories, systems sorted, each system's 96 stories in prompt order).
# (criterion, measure, coefficient) -> (average, number of systems averaged).
WITHIN = {
    ('Relevance', 'Beluga-13B RE 1', 'kendall_b'): (0.189623817960606, 10),
    ('Relevance', 'Beluga-13B RE 1', 'pearson'): (0.22378938993195754, 10),
    ('Relevance', 'Beluga-13B RE 1', 'spearman'): (0.24884965510350257, 10),
    ('Engagement', 'Beluga-13B EG 1', 'kendall_b'): (0.15839191223810406, 10),
    ('Engagement', 'Beluga-13B EG 1', 'pearson'): (0.205742368589, 10),
    ('Engagement', 'Beluga-13B EG 1', 'spearman'): (0.2064482023353368, 10),
    ('Surprise', 'ChatGPT SU 1', 'kendall_b'): (0.025725224946943383, 10),
    ('Surprise', 'ChatGPT SU 1', 'pearson'): (0.015591631802467126, 10),
    ('Surprise', 'ChatGPT SU 1', 'spearman'): (0.03050172535774946, 10),
    ('Coherence', 'BLEU Ξ§', 'kendall_b'): (0.012324972302177653, 10),
    ('Coherence', 'BLEU Ξ§', 'pearson'): (0.006216161942261747, 10),
    ('Coherence', 'BLEU Ξ§', 'spearman'): (0.019300563745934272, 10),
    ('Complexity', 'Llama-13B CX 1', 'kendall_b'): (0.08840210619883083, 10),
    ('Complexity', 'Llama-13B CX 1', 'pearson'): (0.10648093072250671, 10),
    ('Complexity', 'Llama-13B CX 1', 'spearman'): (0.107690312793841, 10),
}
# Same source on `_toy()` below (system B constant: its NaN correlation is left out).
TOY = {
    'kendall_b': (0.5163789274967008, 3),
    'pearson': (0.6462617295030643, 3),
    'spearman': (0.6321005217688352, 3),
}


def _toy() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    idx = pd.MultiIndex.from_product([["A", "B", "C", "D"], range(12)],
                                     names=["system", "prompt_id"])
    h = rng.integers(1, 6, len(idx)).astype(float)
    m = h + rng.normal(0, 1.5, len(idx))
    m[12:24] = 2.0
    return pd.DataFrame({"h": h, "m": np.round(m, 1)}, index=idx)


@pytest.mark.parametrize("method", ["kendall_b", "pearson", "spearman"])
def test_within_equals_mt_metrics_eval_on_hanna(hanna_generation_wide, method):
    keys = [k for k in WITHIN if k[2] == method]
    for criterion, measure, _ in keys:
        row = correlate(hanna_generation_wide, measure, criterion, level="within",
                        method=method).iloc[0]
        value, n_sys = WITHIN[(criterion, measure, method)]
        assert row["value"] == pytest.approx(value, abs=1e-12)
        assert row["n_groups"] == n_sys and row["n"] == 96 and row["level"] == "within"


@pytest.mark.parametrize("method", list(TOY))
def test_within_leaves_out_undefined_systems_as_mt_metrics_eval(method):
    with pytest.warns(UndefinedStatisticWarning, match="within level.*systems"):
        row = correlate(_toy(), "m", "h", level="within", method=method).iloc[0]
    assert row["value"] == pytest.approx(TOY[method][0], abs=1e-12)
    assert row["n_groups"] == TOY[method][1] and "systems left out" in row["reason"]


def test_within_is_the_prompt_level_of_the_transposed_design():
    w = _toy().drop(columns="m").assign(m=lambda d: d["h"] + np.arange(len(d)) % 5)
    swapped = w.copy()
    swapped.index = w.index.swaplevel().set_names(["system", "prompt_id"])
    a = correlate(w, "m", "h", level="within").iloc[0]
    b = correlate(swapped.sort_index(), "m", "h", level="prompt").iloc[0]
    assert a["value"] == pytest.approx(b["value"], abs=1e-15) and a["n_groups"] == 4


def test_meta_accepts_the_within_level():
    from storyeval.meta import meta_evaluate

    res = meta_evaluate(measures="Beluga-13B 1", criteria="Relevance", levels="within",
                        reference="none")
    corr = res.correlations
    assert set(corr["level"]) == {"within"}
    value = corr.loc[corr["measure"] == "Beluga-13B RE 1", "value"].item()
    assert value == pytest.approx(WITHIN[("Relevance", "Beluga-13B RE 1", "kendall_b")][0],
                                  abs=1e-12)


def test_bootstrap_at_the_within_level_repeats_the_engine():
    """``meta --ci bootstrap`` at the within level: the intervals of
    `bootstrap_correlations(level="within")` on the same stories and seed (issue 50)."""
    from storyeval.meta import meta_evaluate
    from storyeval.meta.resampling import add_bootstrap_ci
    from storyeval.resample.bootstrap import bootstrap_correlations

    res = meta_evaluate(measures="BLEU", criteria="Relevance", levels="within",
                        reference="none")
    out = add_bootstrap_ci(res, n_resamples=30, random_state=4)
    row = out.correlations.iloc[0]
    ref = bootstrap_correlations(res.dataset.wide(), [(row["measure"], "Relevance")],
                                 level="within", n_resamples=30, random_state=4)
    assert row["ci_low"] == pytest.approx(ref["ci_low"].item(), abs=1e-12)
    assert row["ci_high"] == pytest.approx(ref["ci_high"].item(), abs=1e-12)
    assert row["ci_low"] <= row["value"] <= row["ci_high"]
    base = out.baseline[out.baseline["level"] == "within"]
    assert base["ci_low"].notna().all()


def test_level_data_within_is_the_transposed_prompt_cube():
    from storyeval.correlation.levels import level_data

    w = _toy()
    prompt = level_data(w, level="prompt")
    within = level_data(w, level="within")
    assert within.shape == (4, 12, 2)
    np.testing.assert_array_equal(within, prompt.transpose(1, 0, 2))
    np.testing.assert_array_equal(within[1, :, 1], w.loc["B", "m"].to_numpy())
