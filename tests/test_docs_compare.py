"""The token-by-token comparison of the docs stale checks (tests/_docs_compare.py)."""

from __future__ import annotations

import pytest
from _docs_compare import markdown_differences, stale_files

COMMITTED = ("*After 50 training steps: 48 members, 1000 resamples, seed 0, target FPR 0.05.*\n\n"
             "| score | AUC | shuffled |\n| --- | --- | --- |\n"
             "| Min-K%++ | 0.792 [0.700, 0.875] | \u22120.058 (sd 0.005) |\n")
STATS = {"last_digit_units": 2, "min_decimals": 3}


def differs(fresh: str, **rule) -> bool:
    return bool(markdown_differences(fresh, COMMITTED, **rule)[0])


def test_identical_texts_match_under_any_rule():
    assert markdown_differences(COMMITTED, COMMITTED) == ([], [])
    assert markdown_differences(COMMITTED, COMMITTED, **STATS) == ([], [])


@pytest.mark.parametrize("new", ["0.791 [0.700, 0.874]", "0.794 [0.698, 0.875]"])
def test_statistics_within_two_units_of_the_last_digit_are_tolerated(new):
    fresh = COMMITTED.replace("0.792 [0.700, 0.875]", new)
    differences, tolerated = markdown_differences(fresh, COMMITTED, **STATS)
    assert differences == [] and tolerated and all("line 5" in t for t in tolerated)
    assert differs(fresh)  # without a tolerance (the default) the comparison is exact


@pytest.mark.parametrize("old, new", [
    ("0.792 [", "0.795 ["),            # 3 units: a real change
    ("0.792 [", "0.79 ["),             # another number of decimals
    ("0.792 [", "0.7920 ["),
    ("48 members", "47 members"),      # integers are exact
    ("seed 0", "seed 1"),
    ("FPR 0.05", "FPR 0.06"),          # fewer than 3 decimals: a setting, exact
    ("\u22120.058", "-0.058"),         # typography
    ("Min-K%++", "Min-K%+"),           # text
    ("| --- | --- | --- |", "| --- | ---: | --- |"),
    ("(sd 0.005)", "(sd  0.005)"),     # spacing
])
def test_everything_else_must_match_exactly(old, new):
    assert old in COMMITTED
    assert differs(COMMITTED.replace(old, new), **STATS)


def test_sign_flip_near_zero_is_a_small_difference():
    committed = "| Surprise | 0.000 |\n"
    assert not markdown_differences("| Surprise | \u22120.001 |\n", committed, **STATS)[0]
    assert markdown_differences("| Surprise | \u22120.003 |\n", committed, **STATS)[0]


def test_numbers_inside_words_and_versions_are_text():
    committed = "tiny-gpt2, torch==2.13.0, Novelty-1 0.500.\n"
    assert markdown_differences("tiny-gpt3, torch==2.13.0, Novelty-1 0.500.\n",
                                committed, **STATS)[0]
    assert markdown_differences("tiny-gpt2, torch==2.13.1, Novelty-1 0.500.\n",
                                committed, **STATS)[0]
    assert not markdown_differences("tiny-gpt2, torch==2.13.0, Novelty-1 0.501.\n",
                                    committed, **STATS)[0]


def test_stale_files_reports_missing_extra_and_changed():
    report = stale_files({"a.md": "x 0.100", "b.md": "y"}, {"a.md": "x 0.200", "c.md": "z"},
                         **STATS)
    assert report["missing"] == ["b.md"] and report["extra"] == ["c.md"]
    assert list(report["changed"]) == ["a.md"] and "0.200 -> 0.100" in report["changed"]["a.md"][0]
