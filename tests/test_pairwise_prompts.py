"""Pairwise rows whose prompt_id contradicts their story ids are refused (issue 37)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.exceptions import InputError
from storyeval.pairwise.verdicts import validate_verdicts


def verdicts(prompts, a, b) -> pd.DataFrame:
    n = len(prompts)
    return pd.DataFrame({"prompt_id": prompts, "story_a": a, "story_b": b,
                         "dimension": ["Plot"] * n, "verdict": ["A"] * n, "order": ["AB"] * n})


def test_consistent_prompts_pass_whatever_their_type():
    for prompts in ([0, 1], ["0", "1"], [0.0, 1.0], np.array([0, 1], dtype=np.int64)):
        out = validate_verdicts(verdicts(prompts, ["X/0", "X/1"], ["Y/0", "Y/1"]))
        assert out["system_a"].tolist() == ["X", "X"]


@pytest.mark.parametrize("a, b", [(["X/0", "X/2"], ["Y/0", "Y/1"]),
                                  (["X/0", "X/1"], ["Y/0", "Y/2"])])
def test_a_contradicting_prompt_is_refused_naming_the_row(a, b):
    with pytest.raises(InputError, match=r"row 1 has prompt_id '1' but compares stories") as e:
        validate_verdicts(verdicts(np.array([0, 1], dtype=np.int64), a, b))
    assert "np.int64" not in str(e.value)


def test_ids_without_a_prompt_part_are_not_checked():
    out = validate_verdicts(verdicts([0], ["s1"], ["s2"]))
    assert len(out) == 1


def test_a_repeated_judgment_names_the_prompt_as_a_plain_number():
    v = verdicts(np.array([0, 0], dtype=np.int64), ["X/0", "X/0"], ["Y/0", "Y/0"])
    with pytest.raises(InputError, match=r"prompt 0, stories") as e:
        validate_verdicts(v)
    assert "np.int64" not in str(e.value)
