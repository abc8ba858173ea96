"""read_dataset refuses values that are not real numbers (issue 37): true/false values, complex
numbers, dates and durations are named with their row, never read as 0/1, a real part or
nanoseconds; messages print plain numbers, not numpy reprs."""

from __future__ import annotations

import datetime

import numpy as np
import pandas as pd
import pytest

from storyeval.data import read_dataset
from storyeval.exceptions import InputError


def ratings(values) -> pd.DataFrame:
    return pd.DataFrame({"story_id": ["A/0", "A/1", "B/0", "B/1"] * 2,
                         "annotator": ["w1"] * 4 + ["w2"] * 4, "criterion": "Quality",
                         "value": values})


@pytest.mark.parametrize("values, what", [
    ([True, False] * 4, "true/false"),
    (np.array([1, 2, 3, 4, 2, 2, 4, 5], dtype=complex), "complex number"),
    (pd.to_datetime([f"2024-01-0{d}" for d in range(1, 9)]), "date"),
    (pd.to_timedelta(range(8), unit="s"), "duration"),
    ([1, 2, 3, 4, 2, 2, True, 5], "true/false"),
    ([1, 2, 3, 4, 2, 2, datetime.date(2024, 1, 1), 5], "date"),
])
def test_non_real_values_are_refused_naming_the_row(values, what):
    with pytest.raises(InputError, match=f"column 'value' holds .*{what}.*not a number"):
        read_dataset(ratings(values))


def test_numbers_still_pass_and_messages_print_plain_numbers():
    assert read_dataset(ratings([1, 2, 3, 4, 2, 2, 4, 5])).systems == ["A", "B"]
    wide = pd.DataFrame({"story_id": ["A/0", "A/1", "B/0", "B/1"],
                         "Quality": [1.0, np.inf, 2.0, 3.0]})
    with pytest.raises(InputError) as err:
        read_dataset(wide, criteria="Quality")
    assert "np.int64" not in str(err.value) and "np.float64" not in str(err.value)
