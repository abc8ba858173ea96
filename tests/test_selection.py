"""Selecting measures and criteria from --metrics / --criteria specifications."""

from __future__ import annotations

import pytest

from storyeval.data import load_hanna
from storyeval.data.selection import (
    criterion_pairs,
    resolve_rater,
    select_criteria,
    select_measures,
)
from storyeval.exceptions import InputError


@pytest.fixture(scope="module")
def catalogue():
    return load_hanna().catalogue


@pytest.mark.parametrize(("spec", "count"), [
    ("all", 72 + 120),  # 72 metrics + 5 LLMs x 4 Eval-Prompts x 6 criteria
    ("llm", 120),
    ("non-llm", 72),
    ("metrics", 72),
    ("llm-avg", 20),
    ("reference-free", 18),
    ("reference-free&lexical", 10),
    ("embedding", 18),
    ("Beluga-13B 1", 6),
    ("Beluga-13B", 24),
    ("ROUGE-1*", 3),
    ("BLEU,chrF", 2),
    ("BLEU Ξ§, BLEU", 1),
])
def test_select_measures_counts(catalogue, spec, count):
    assert len(select_measures(catalogue, spec)) == count


def test_selection_keeps_catalogue_order(catalogue):
    assert select_measures(catalogue, "chrF,BLEU") == ["BLEU Ξ§", "chrF Ξ§"]


def test_unknown_measure_suggests_close_matches(catalogue):
    with pytest.raises(InputError, match=r"unknown measure 'BLUE'; did you mean 'BLEU'"):
        select_measures(catalogue, "BLUE")
    with pytest.raises(InputError, match="Beluga-13B"):
        select_measures(catalogue, "Belgua-13B 1")
    with pytest.raises(InputError, match="empty"):
        select_measures(catalogue, " , ")


def test_criteria(catalogue):
    hanna = load_hanna()
    assert select_criteria(hanna, "all") == ["Relevance", "Coherence", "Empathy", "Surprise",
                                             "Engagement", "Complexity"]
    assert select_criteria(hanna, "cx, re") == ["Relevance", "Complexity"]
    with pytest.raises(InputError, match="unknown criterion 'fun'"):
        select_criteria(hanna, "fun")


def test_rater_resolution_and_pairs(catalogue):
    assert resolve_rater(catalogue, "Beluga-13B 1", "Surprise") == "Beluga-13B SU 1"
    assert resolve_rater(catalogue, "BLEU", "Surprise") == "BLEU Ξ§"
    with pytest.raises(InputError, match="unknown reference"):
        resolve_rater(catalogue, "GPT-9 1", "Surprise")
    pairs = criterion_pairs(catalogue, ["BLEU Ξ§", "Beluga-13B RE 1"], select_criteria(load_hanna(), "all"))
    assert len(pairs) == 6 + 1  # metric x 6 criteria, LLM rating only with its own criterion
    pairs = criterion_pairs(catalogue, ["Beluga-13B RE 1"], select_criteria(load_hanna(), "all"),
                            llm_criteria="all")
    assert len(pairs) == 6


def test_identifier_wins_over_another_measures_display_name():
    import pandas as pd

    from storyeval.data import infer_catalogue

    cat = infer_catalogue(["Repetition-1 ¤§", "Repetition-1", "Relevance"])
    assert select_measures(cat, "Repetition-1") == ["Repetition-1"]
    assert select_measures(cat, "Repetition-1 ¤§") == ["Repetition-1 ¤§"]
    assert isinstance(cat, pd.DataFrame)
