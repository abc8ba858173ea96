"""Rating extraction (storyeval.llm.extract), measured on HANNA's 100 real LLM explanations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from storyeval.exceptions import InputError
from storyeval.llm.extract import (
    PARSER_VERSION,
    STATUSES,
    parse_many,
    parse_rating,
    parser_accuracy,
)

# Ratings of the 100 explanations of storyeval/data/hanna/user_study.csv (one per 3 rows, in file
# order), read by a person: the number each explanation opens with, or for the 6 that open with
# a sentence ("I would rate this story a 2 ..."), the rating stated in that sentence. Every
# later number in each explanation was also read: none states a different rating as its own.
USER_STUDY_TRUTH = (
    2, 3, 2, 4, 3, 2, 2, 3, 4, 4, 3, 3, 3, 3, 3, 2, 4, 1, 3, 4,
    3, 2, 3, 4, 3, 3, 3, 4, 3, 1, 1, 3, 2, 3, 3, 3, 3, 3, 4, 4,
    4, 2, 4, 4, 2, 3, 3, 2, 3, 4, 4, 3, 3, 3, 2, 1, 4, 3, 4, 3,
    4, 4, 4, 3, 2, 3, 4, 2, 4, 3, 4, 2, 2, 2, 4, 1, 3, 1, 3, 3,
    4, 5, 4, 4, 2, 2, 2, 3, 4, 1, 4, 3, 4, 2, 1, 4, 4, 4, 3, 4,
)


@pytest.fixture(scope="module")
def explanations() -> list[str]:
    from importlib import resources

    with resources.files("storyeval.data").joinpath("hanna", "user_study.csv").open(
            encoding="utf-8") as fh:
        df = pd.read_csv(fh)
    col = df["Input.explanation"]
    # rows of one explanation are consecutive (3 workers each)
    assert (col.iloc[0::3].to_numpy() == col.iloc[2::3].to_numpy()).all()
    return col.iloc[0::3].tolist()


def test_user_study_accuracy(explanations):
    assert len(explanations) == len(USER_STUDY_TRUTH) == 100
    acc = parser_accuracy(explanations, USER_STUDY_TRUTH)
    # every explanation parsed and every rating right (the figure quoted in docs/llm.md)
    assert acc == {"n": 100, "coverage": 1.0, "accuracy": 1.0, "accuracy_parsed": 1.0,
                   "n_wrong": 0}
    # the paper's first-number rule also gets these right (they start with the rating)
    assert parser_accuracy(explanations, USER_STUDY_TRUTH, method="first_number")["accuracy"] == 1.0


def test_user_study_explanations_drop_the_rating(explanations):
    p = parse_rating(explanations[0])
    assert p.explanation.startswith("The story only has a weak relationship with the prompt.")
    p = parse_rating(explanations[31])  # " 3 Coherence\n\nThe story is mostly coherent..."
    assert p.rating == 3 and p.explanation.startswith("Coherence")


@pytest.mark.parametrize("text, rating", [
    (" 4 \u2014 The ending surprised you.", 4),
    ("2 - The ending was easily predictable.", 2),
    ("5", 5),
    ("3.", 3),
    ("1, because it is boring", 1),
    ("Rating: 4", 4),
    ("**Rating:** 3/5\n\nBecause...", 3),
    ("Score = 2", 2),
    ('"4"', 4),
    ("4 out of 5. Good story.", 4),
    ("I would rate this story a 3 on Complexity.", 3),
    ("The story has 2 characters. I would give it a 4.", 4),
    ("I rated the story a 2 on Surprise because the ending was obvious.", 2),
    ("After careful thought: 4/5.", 4),
    ("4\n\nThe story lacks a stronger connection with the audience to rate a 5.", 4),
    ("4\n\nI would rate the story a 4 on the Surprise scale.", 4),
])
def test_ok(text, rating):
    p = parse_rating(text)
    assert (p.status, p.rating) == ("ok", float(rating))


@pytest.mark.parametrize("text, status", [
    ("", "no_number"),
    (None, "no_number"),
    ("The story is good but I cannot decide.", "no_number"),
    ("4-D stars collide in this story.", "no_number"),  # "4-D" is not a rating
    ("2nd best story I read", "no_number"),
    ("It is not as elaborate as a 4 or 5 on the scale.", "no_number"),  # no rating statement
    ("7", "out_of_range"),
    ("0 - nothing happens", "out_of_range"),
    ("Rating: 8/10", "out_of_range"),
    ("I would rate it a 9.", "out_of_range"),
    ("3-4", "ambiguous"),
    ("3 or 4, depending on taste", "ambiguous"),
    ("3.5", "ambiguous"),
    ("I would rate it 3. On reflection I give it a 4.", "ambiguous"),
    ("4\n\nActually, I would rate it a 2.", "ambiguous"),
])
def test_failures(text, status):
    p = parse_rating(text)
    assert p.status == status
    assert math.isnan(p.rating)


def test_out_of_range_keeps_candidate_and_scale_is_an_argument():
    p = parse_rating("Rating: 7 - great")
    assert p.status == "out_of_range" and p.candidate == 7
    q = parse_rating("Rating: 7 - great", scale=(1, 10))
    assert (q.status, q.rating) == ("ok", 7.0)
    assert parse_rating("8/10", scale=(1, 10)).rating == 8.0


def test_first_number_method_is_the_papers_rule():
    # the paper took the first number, right or wrong
    assert parse_rating("The story has 2 characters. I would give it a 4.",
                        method="first_number").rating == 2.0
    assert parse_rating("3-4", method="first_number").rating == 3.0
    assert parse_rating("none", method="first_number").status == "no_number"
    assert parse_rating("9", method="first_number").status == "out_of_range"


def test_parse_many_and_unpacking():
    df = parse_many([" 2 \u2014 weak.", "???", "6"])
    assert df["status"].tolist() == ["ok", "no_number", "out_of_range"]
    np.testing.assert_array_equal(df["rating"].to_numpy(), [2.0, np.nan, np.nan])
    rating, status, expl = parse_rating("3 \u2014 fine")
    assert (rating, status, expl) == (3.0, "ok", "fine")
    assert set(df["status"]) <= set(STATUSES)
    assert isinstance(PARSER_VERSION, str) and PARSER_VERSION


def test_bad_arguments():
    with pytest.raises(InputError, match="method"):
        parse_rating("3", method="last")
    with pytest.raises(InputError, match="scale"):
        parse_rating("3", scale=(5, 1))
    with pytest.raises(InputError, match="text"):
        parse_rating(3)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="length"):
        parser_accuracy(["1"], [1, 2])
