"""Surface and diversity measures on hand-worked texts, and agreement with HANNA's release."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.exceptions import InputError
from storyeval.metrics import score
from storyeval.metrics.surface import (
    DEPRECATED_MEASURES,
    SurfaceMetric,
    data_statistics,
    distinct_n,
    extractive_fragments,
    fragment_statistics,
    inter_story_repetition,
    story_measures,
    system_diversity,
)
from storyeval.metrics.text import ngrams, paragraphs, sentences, spacy_tokens, word_tokens

pytest.importorskip("spacy")


def test_tokeniser_splits_like_spacy():
    assert word_tokens("I don't know, Ian... It's 3.5 km!", lowercase=False) == [
        "I", "do", "n't", "know", ",", "Ian", "...", "It", "'s", "3.5", "km", "!"]
    assert word_tokens("A fourteen-year-old __ kid") == [
        "a", "fourteen", "-", "year", "-", "old", "_", "_", "kid"]


def test_spacy_tokens_and_the_end_of_line_token():
    # spaCy's English rules (spacy.blank("en")): clitics and punctuation split, case kept
    assert spacy_tokens("I don't know, Ian... It's 3.5 km!") == [
        "I", "do", "n't", "know", ",", "Ian", "...", "It", "'s", "3.5", "km", "!"]
    # HANNA's texts were lines of a file: the final line break is a whitespace token, and
    # trailing white space collapses into it
    assert spacy_tokens("The end.", end_of_line=True) == ["The", "end", ".", "\n"]
    assert spacy_tokens("The end.  \n", end_of_line=True) == ["The", "end", ".", "\n"]
    assert spacy_tokens("") == []


def test_sentences_and_paragraphs():
    assert sentences('He ran. "Stop!" she said. Then... silence') == [
        "He ran.", '"Stop!"', "she said.", "Then...", "silence"]
    assert paragraphs("One.\n\nTwo.\nThree.") == ["One.", "Two.", "Three."]
    assert paragraphs("One. <newline> <newline> Two.") == ["One.", "Two."]
    assert paragraphs("no break") == ["no break"]


def test_fragments_hand_worked():
    # S = a b c x b c, A = b c a b. Greedy: at 'a' the run "a b" (A[2:4]); at 'c' the run "c"
    # (A[1]); 'x' has none; at 'b' the run "b c" (A[0:2]).
    s, a = ["a", "b", "c", "x", "b", "c"], ["b", "c", "a", "b"]
    assert extractive_fragments(s, a) == [(0, 2), (2, 1), (4, 2)]
    st = fragment_statistics(s, a)
    assert st["coverage"] == pytest.approx(5 / 6)          # (2 + 1 + 2) / 6
    assert st["density"] == pytest.approx(9 / 6)           # (4 + 1 + 4) / 6
    assert st["compression"] == pytest.approx(4 / 6)       # |A| / |S|
    # the longest of several runs wins; text positions inside a run are skipped (Grusky et al.)
    assert extractive_fragments(["a", "a", "b"], ["a", "a", "a", "b"]) == [(0, 2), (2, 1)]
    assert math.isnan(fragment_statistics([], a)["coverage"])


def test_story_measures_hand_worked():
    story = "The cat sat. The cat ran. He sat."
    prompt = "A cat sat."
    m = story_measures(story, prompt, tokenizer="regex")  # no end-of-line token
    # tokens: The cat sat . The cat ran . He sat .  -> 11
    assert m["length"] == 11
    assert m["paragraphs"] == 1
    assert m["article_start"] == pytest.approx(2 / 3)
    assert m["pronoun_start"] == pytest.approx(1 / 3)
    # words: the cat sat the cat ran he sat -> 8 words, 5 distinct
    assert m["distinct_1"] == pytest.approx(5 / 8)
    assert "unique_words" not in m and "intra_rep3" not in m  # duplicates of distinct-1 / -3
    # word bigrams: the-cat x2, cat-sat, sat-the, cat-ran, ran-he, he-sat -> 7 bigrams, 6 distinct
    assert m["distinct_2"] == pytest.approx(6 / 7)
    # word trigrams: the cat sat | cat sat the | sat the cat | the cat ran | cat ran he |
    # ran he sat -> 6, all distinct
    assert m["distinct_3"] == 1.0
    # unigrams (cased, with '.'): The x2, cat x2, sat x2, . x3, ran, He -> 6 types, 4 repeated
    assert m["repetition_1"] == pytest.approx(4 / 6)
    # prompt tokens A cat sat . ; story unigram types not in prompt: The, ran, He -> 3 / 6
    assert m["novelty_1"] == pytest.approx(3 / 6)
    # story bigrams (cased): The-cat, cat-sat, sat-., .-The, cat-ran, ran-., .-He, He-sat -> 8;
    # in prompt (cat-sat, sat-.): 2 -> novelty 6 / 8
    assert m["novelty_2"] == pytest.approx(6 / 8)
    # prompt word trigram {a cat sat}: no story trigram occurrence -> 0
    assert m["prompt_overlap3"] == 0.0
    # fragments (lower-cased) of "the cat sat . the cat ran . he sat ." in "a cat sat .":
    # "cat sat ." (3, positions 1-3), "cat" (1, pos 5), "." (1, pos 7), "sat ." (2, pos 9-10)
    # -> coverage (3+1+1+2)/11, density (9+1+1+4)/11
    assert m["coverage"] == pytest.approx(7 / 11)
    assert m["density"] == pytest.approx(15 / 11)
    assert m["compression"] == pytest.approx(4 / 11)


def test_story_measures_spacy_variant_counts_the_end_of_line_token():
    # spaCy tokens with the end-of-line token (HANNA's recipe):
    # S = The cat sat . The cat ran . He sat . \n (12), P = A cat sat . \n (5)
    m = story_measures("The cat sat. The cat ran. He sat.", "A cat sat.")
    assert m["length"] == 12
    # unigram types: The cat sat . ran He \n -> 7; repeated: The cat sat . -> 4
    assert m["repetition_1"] == pytest.approx(4 / 7)
    # types absent from P: The ran He -> 3 / 7 (the shared \n is not novel)
    assert m["novelty_1"] == pytest.approx(3 / 7)
    # fragments (lower-cased): "cat sat ." (3), "cat" (1), "." (1), "sat . \n" (3)
    assert m["coverage"] == pytest.approx(8 / 12)
    assert m["density"] == pytest.approx((9 + 1 + 1 + 9) / 12)
    assert m["compression"] == pytest.approx(5 / 12)
    assert m["distinct_1"] == pytest.approx(5 / 8)  # words exclude the white space token


def test_data_statistics_follow_summeval_case_rules():
    # n-grams keep the case; extractive fragments are matched lower-cased
    d = data_statistics(["The", "cat", "the", "cat"], ["the", "cat"])
    assert d["repetition_1"] == pytest.approx(1 / 3)  # The, cat, the -> cat repeated
    assert d["novelty_1"] == pytest.approx(1 / 3)     # The is novel (case kept)
    assert d["coverage"] == 1.0 and d["density"] == pytest.approx(2.0)  # "the cat" twice
    assert math.isnan(data_statistics(["a"], ["a"])["novelty_2"])


def test_story_measures_without_prompt_and_too_short():
    m = story_measures("Hi there")
    assert math.isnan(m["novelty_1"]) and math.isnan(m["coverage"])
    assert math.isnan(m["distinct_3"])
    assert m["length"] == 3  # Hi there \n
    assert story_measures("Hi there", tokenizer="regex")["length"] == 2
    with pytest.raises(InputError, match="tokenizer"):
        story_measures("Hi", tokenizer="nltk")


def test_set_level_measures():
    # words a b a b | a b c -> unigrams 7, distinct {a, b, c} = 3
    assert distinct_n(["a b a b", "a b c"], n=1) == pytest.approx(3 / 7)
    # bigrams ab ba ab | ab bc -> 5, distinct {ab, ba, bc} = 3
    assert distinct_n(["a b a b", "a b c"], n=2) == pytest.approx(3 / 5)
    # per-story distinct trigrams {abc, bca, cab} + {abc, bcd} = 5, distinct over set 4
    assert inter_story_repetition(["a b c a b c", "a b c d"]) == pytest.approx(1 / 5)
    assert math.isnan(distinct_n(["a"], n=2))
    with pytest.raises(InputError, match="n: must be >= 1"):
        distinct_n(["a"], n=0)


def test_inter_story_repetition_per_story_groups_by_system():
    df = pd.DataFrame({
        "story_id": ["x1", "x2", "y1"],
        "system": ["X", "X", "Y"],
        "story": ["the cat sat on it", "so the cat sat down", "the cat sat on it"],
    })
    out = score(df, "surface", show_progress=False)
    inter = out[out["measure"] == "Inter-story trigram repetition"].set_index("story_id")["value"]
    # x1 trigrams: the-cat-sat (also in x2), cat-sat-on, sat-on-it -> 1/3; x2: 1 of 3 -> 1/3;
    # y1 is alone in system Y -> 0 (identical to x1, but another system)
    assert inter["x1"] == pytest.approx(1 / 3)
    assert inter["x2"] == pytest.approx(1 / 3)
    assert inter["y1"] == 0.0
    assert "Novelty-1 (vs prompt)" not in set(out["measure"])  # no prompt column


def test_regex_variant_is_named_differently_and_duplicates_are_gone():
    spacy_names = [m.name for m in SurfaceMetric().measures()]
    regex_names = [m.name for m in SurfaceMetric(tokenizer="regex").measures()]
    assert all(n.endswith(" [regex tokens]") for n in regex_names)
    assert not set(spacy_names) & set(regex_names)
    assert not set(DEPRECATED_MEASURES) & set(spacy_names)
    assert len(set(spacy_names)) == len(spacy_names)
    m = SurfaceMetric().measures()[spacy_names.index("Coverage (vs prompt)")]
    assert "Newsroom" in m.implementation and "spaCy" in m.variant
    assert SurfaceMetric().config_key() != SurfaceMetric(tokenizer="regex").config_key()
    with pytest.raises(InputError, match="surface tokenizer"):
        SurfaceMetric(tokenizer="whitespace")
    df = pd.DataFrame({"story_id": ["a"], "story": ["The cat sat. The cat ran."],
                       "prompt": ["A cat."]})
    out, cat = score(df, [SurfaceMetric(), SurfaceMetric(tokenizer="regex")],
                     show_progress=False, return_catalogue=True)
    assert cat["variant"].str.startswith("HANNA-compatible").sum() == len(spacy_names) + 1
    assert (cat["implementation"] != "").all()


def test_no_two_surface_measures_are_the_same_statistic():
    # over real stories with their prompts, no measure is a monotone function of another
    # (a duplicate would add a redundant test to every multiple-testing family)
    from storyeval.metrics import hanna_stories

    stories = hanna_stories(include="human").head(24)
    wide = score(stories, "surface", show_progress=False).pivot(
        index="story_id", columns="measure", values="value")
    wide = wide.loc[:, wide.nunique() > 1]  # Paragraphs: HANNA's stories have no line break
    assert wide.shape[1] >= 15
    rho = wide.corr(method="spearman").abs().to_numpy().copy()
    np.fill_diagonal(rho, 0)
    assert rho.max() < 0.99, wide.columns[np.unravel_index(rho.argmax(), rho.shape)[0]]


def test_surface_metric_matches_story_measures():
    stories = ["The dog barked. It ran away!\nThen it came back.", "She smiled."]
    prompts = ["A dog runs away.", None]
    m = SurfaceMetric()
    ms = m.measures()
    vals = m.score_batch(stories, [None, None], prompts, ms)
    direct = story_measures(stories[0], prompts[0])
    assert vals[0, 0] == direct["length"]
    assert vals[0, 1] == 2  # two paragraphs
    names = [x.name for x in ms]
    assert vals[0, names.index("Coverage (vs prompt)")] == pytest.approx(direct["coverage"])
    assert np.isnan(vals[1, names.index("Coverage (vs prompt)")])


def test_ngrams_helper():
    assert ngrams(["a", "b", "c"], 2) == [("a", "b"), ("b", "c")]
    assert ngrams(["a"], 2) == []


@pytest.fixture(scope="module")
def agreement():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "gen_metrics_agreement.py"
    spec = importlib.util.spec_from_file_location("gen_metrics_agreement", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_agreement_with_hanna_released_values(agreement):
    table = agreement.agreement_table().set_index("HANNA column")
    # released HANNA values of the 96 human stories (hanna_metric_scores_llm.csv, row Human):
    # the default variant reproduces them (exactness per story: test_docs_metric_fidelity.py)
    assert (table["Spearman"] >= 0.999).all(), table["Spearman"]
    np.testing.assert_allclose(table["mean (storyeval)"], table["mean (HANNA)"], rtol=1e-9)
    assert (table["n"] == 96).all()
    # the table's Kendall column is scipy's tau-b
    released = agreement.released_human_values()["Text length ¤§"]
    assert stats.kendalltau(released, released).statistic == 1.0


def test_agreement_markdown_is_deterministic(agreement):
    table = agreement.agreement_table()
    a, b = agreement.to_markdown(table), agreement.to_markdown(table.copy())
    assert a == b and a.startswith("| HANNA column | storyeval measure | Spearman |")


def test_system_diversity_table():
    df = pd.DataFrame({"system": ["A", "A", "B"], "story": ["a b a b", "a b c", "x y z"]})
    t = system_diversity(df).set_index(["system", "measure"])["value"]
    assert t[("A", "Distinct-1 (set)")] == pytest.approx(3 / 7)
    assert t[("A", "Distinct-2 (set)")] == pytest.approx(3 / 5)
    # A: per-story distinct trigrams {aba, bab} + {abc} = 3, all distinct -> 0
    assert t[("A", "Inter-story trigram repetition (set)")] == 0.0
    assert t[("B", "Distinct-1 (set)")] == 1.0
    assert t[("B", "Inter-story trigram repetition (set)")] == 0.0  # one story: no repeats
    with pytest.raises(InputError, match="story"):
        system_diversity(pd.DataFrame({"system": ["A"]}))


def test_empty_story_in_a_set():
    df = pd.DataFrame({"story_id": ["a", "b"], "system": ["X", "X"],
                       "story": ["The cat sat on the mat.", "  "]})
    out = score(df, "surface", show_progress=False).set_index(["story_id", "measure"])
    assert out.loc[("b", "Length (tokens)"), "reason"] == "empty story"
    assert np.isnan(out.loc[("b", "Inter-story trigram repetition"), "value"])
    assert out.loc[("a", "Inter-story trigram repetition"), "value"] == 0.0
