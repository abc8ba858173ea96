"""Tests of storyeval.reproduction.user_study against the paper's user-study table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.agreement.coefficients import gwet_ac1
from storyeval.exceptions import InputError
from storyeval.reproduction.user_study import (
    USER_STUDY_CATEGORIES,
    user_study_labels,
    user_study_table,
)


@pytest.fixture(scope="module")
def table():
    return user_study_table().set_index("category")


# Chhun et al. (TACL 2024), user-study table: Gwet's AC1 per error category (2 decimals).
PAPER_AC1 = {"guidelines": 0.90, "syntax": 0.97, "superfluous": 0.66, "unsubstantiated": 0.60,
             "incoherence": 0.81}


@pytest.mark.parametrize("category,expected", sorted(PAPER_AC1.items()))
def test_ac1_reproduces_paper(table, category, expected):
    assert round(table.at[category, "gwet_ac1"], 2) == expected
    assert table.at[category, "paper_gwet_ac1"] == expected
    low, high = table.at[category, "ci_low"], table.at[category, "ci_high"]
    assert low < table.at[category, "gwet_ac1"] < high <= 1


def test_error_rates_from_released_data(table):
    # Counted from user_study.csv (300 labels per category; guidelines inverted: 1 = respected).
    # Share of all labels: 18/300, 5/300, 48/300, 0, 67/300, 25/300.
    expected_labels = {"guidelines": 18, "syntax": 5, "superfluous": 48, "incorrectness": 0,
                       "unsubstantiated": 67, "incoherence": 25}
    for cat, count in expected_labels.items():
        assert table.at[cat, "error_rate"] == pytest.approx(count / 300, abs=1e-15)
    # Majority (at least 2 of 3 workers) per explanation: 3, 0, 11, 0, 24, 1 of 100.
    majority = {"guidelines": 3, "syntax": 0, "superfluous": 11, "incorrectness": 0,
                "unsubstantiated": 24, "incoherence": 1}
    for cat, count in majority.items():
        assert table.at[cat, "error_rate_majority"] == pytest.approx(count / 100, abs=1e-15)
    # Only Poor Syntax matches the paper's rate (2%); the paper's 13/20/31/11% for the others
    # are not reproduced by either aggregation of the released labels (reported, not hidden).
    assert round(table.at["syntax", "error_rate"], 2) == table.at["syntax", "paper_error_rate"]
    assert (table["n_explanations"] == 100).all() and (table["n_labels"] == 300).all()


def test_labels_grouped_by_consecutive_rows():
    errors, explanations = user_study_labels()
    assert errors.shape == (100, 3, len(USER_STUDY_CATEGORIES))
    # story_id alone is not unique: 59 ids for 100 explanations.
    assert explanations["story_id"].nunique() < len(explanations) == 100
    # AC1 from the array equals the table's.
    j = [c.key for c in USER_STUDY_CATEGORIES].index("superfluous")
    assert gwet_ac1(errors[:, :, j], categories=[0, 1]).statistic == pytest.approx(
        user_study_table().set_index("category").at["superfluous", "gwet_ac1"], abs=1e-15)


def test_released_csv_layout_gives_same_table():
    from storyeval.data.hanna import hanna_path

    raw = pd.read_csv(hanna_path("user_study.csv"))
    from_raw = user_study_table(raw)
    from_loader = user_study_table()
    pd.testing.assert_frame_equal(from_raw, from_loader)


def test_guidelines_inversion_leaves_ac1_unchanged():
    # AC1 with q = 2 is symmetric in the two labels.
    errors, _ = user_study_labels()
    e = errors[:, :, 0]
    assert gwet_ac1(e, categories=[0, 1]).statistic == pytest.approx(
        gwet_ac1(1 - e, categories=[0, 1]).statistic, abs=1e-15)


def test_bad_tables():
    from storyeval.data import load_user_study

    good = load_user_study()
    with pytest.raises(InputError, match="lacks column"):
        user_study_table(good.drop(columns="syntax"))
    with pytest.raises(InputError, match="has 2 rows, expected"):
        user_study_table(good.iloc[1:])
    bad = good.copy()
    bad.loc[4, "syntax"] = 2
    with pytest.raises(InputError, match="0/1 labels; explanation_id 1"):
        user_study_table(bad)
    mixed = good.copy()
    mixed.loc[5, "story_id"] = -1
    with pytest.raises(InputError, match="explanation_id 1: its 3 rows differ in column 'story_id'"):
        user_study_table(mixed)
    with pytest.raises(InputError, match="raters_per_explanation"):
        user_study_table(good, raters_per_explanation=1)
    raw = pd.DataFrame({"Input.story_id": [1, 1], "Input.explanation": ["a", "a"],
                        **{c.column: [0, 1] for c in USER_STUDY_CATEGORIES}})
    with pytest.raises(InputError, match="not a multiple"):
        user_study_table(raw)
    assert np.isfinite(user_study_table(raw, raters_per_explanation=2)["gwet_ac1"]).all()
