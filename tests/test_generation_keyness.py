"""Keyness with false-discovery control: the per-word p-values adjusted over every word of a
comparison (Benjamini-Hochberg by default), checked against scipy and on a null corpus."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.exceptions import InputError
from storyeval.generation import log_odds_keyness
from storyeval.generation.pipeline import diversity_statistics


def _texts(rng, vocab, probs, n_texts, n_words):
    return [" ".join(rng.choice(vocab, size=n_words, p=probs)) for _ in range(n_texts)]


@pytest.fixture(scope="module")
def null_corpus():
    """Two groups drawn from one Zipf word distribution: no word is key."""
    rng = np.random.default_rng(7)
    vocab = np.array([f"w{i}" for i in range(600)])
    probs = 1.0 / np.arange(1, 601)
    probs /= probs.sum()
    return _texts(rng, vocab, probs, 40, 150), _texts(rng, vocab, probs, 40, 150)


def test_bh_matches_scipy_and_is_stated(null_corpus):
    a, b = null_corpus
    res = log_odds_keyness(a, b)
    m = len(res)
    assert m > 400  # thousands of tests in real use; hundreds here
    expected = stats.false_discovery_control(res["p_value"].to_numpy(), method="bh")
    np.testing.assert_allclose(res["p_adjusted"], expected, rtol=1e-12, atol=0)
    assert set(res["family"]) == {f"bh over words (m={m})"}
    by = log_odds_keyness(a, b, adjust="by")
    np.testing.assert_allclose(by["p_adjusted"], stats.false_discovery_control(
        by["p_value"].to_numpy(), method="by"), rtol=1e-12, atol=0)
    none = log_odds_keyness(a, b, adjust="none")
    np.testing.assert_array_equal(none["p_adjusted"], none["p_value"])
    with pytest.raises(InputError, match="adjust"):
        log_odds_keyness(a, b, adjust="fdr")


# A weak prior (600 pseudo-counts): the default prior (the background's own counts) shrinks the
# log-odds so much that no null word reaches p < 0.05 even unadjusted.
WEAK = 600.0


def test_null_corpus_has_raw_hits_but_no_discovery(null_corpus):
    res = log_odds_keyness(*null_corpus, prior_scale=WEAK)
    assert (res["p_value"] < 0.05).sum() >= 5  # chance alone, unadjusted (7 here)
    assert (res["p_adjusted"] < 0.05).sum() == 0


def test_planted_words_survive_adjustment(null_corpus):
    a, b = null_corpus
    a = [t + " dragon dragon castle" for t in a]  # 80 and 40 extra uses in group a only
    res = log_odds_keyness(a, b, prior_scale=WEAK).set_index("word")
    assert res.loc["dragon", "p_adjusted"] < 1e-4 and res.loc["castle", "p_adjusted"] < 0.05
    assert (res["p_adjusted"] < 0.05).sum() == 2


def test_pipeline_keyness_table_carries_the_adjustment():
    stories = pd.DataFrame({"system": ["A"] * 3 + ["B"] * 3,
                            "story": ["the cat sat", "a cat ran", "the cat", "a dog sat",
                                      "the dog ran", "a dog"]})
    key = diversity_statistics(stories, orders=(1,))["keyness"]
    assert {"p_adjusted", "family"} <= set(key.columns)
    for g, rows in key.groupby("group"):
        assert rows["family"].iloc[0] == "bh over words (m=6)", g
        assert (rows["p_adjusted"] >= rows["p_value"]).all()
