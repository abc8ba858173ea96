"""Declared rating scales, far values, --strict and statistics on tiny data (issue 28)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from storyeval.cli import main
from storyeval.data import read_dataset
from storyeval.data.scales import FAR_FACTOR, _far, parse_scale
from storyeval.exceptions import InputError, StoryevalWarning


def ratings(n_prompts: int = 6, systems=("A", "B", "C")) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = [(s, p, c, a, int(rng.integers(1, 6)))
            for s in systems for p in range(n_prompts) for c in ("Overall", "Fluency")
            for a in ("r1", "r2")]
    frame = pd.DataFrame(rows, columns=["system", "prompt_id", "criterion", "annotator", "value"])
    return frame.astype({"value": float})


def test_parse_scale():
    assert parse_scale("1-5") == {None: (1.0, 5.0)}
    assert parse_scale("Overall=1-5, Fluency=0..10") == {"Overall": (1, 5), "Fluency": (0, 10)}
    assert parse_scale("-2..2") == {None: (-2.0, 2.0)}
    assert parse_scale((1, 7)) == {None: (1.0, 7.0)}
    assert parse_scale(None) == {}
    for bad in ("5-1", "a-b", "1-5,1-7", "=1-5", ""):
        with pytest.raises(InputError):
            parse_scale(bad)


@pytest.mark.parametrize("bad", [-3, 7, 1e23])
def test_out_of_scale_rating_is_an_error_naming_the_line(tmp_path, bad):
    r = ratings()
    r.loc[17, "value"] = bad
    path = tmp_path / "r.csv"
    r.to_csv(path, index=False)
    with pytest.raises(InputError, match=re.escape(f"outside the declared scale 1-5: line 19: {bad:g}")):
        read_dataset(path, scale="1-5")
    crit = r.loc[17, "criterion"]
    other = "Fluency" if crit == "Overall" else "Overall"
    with warnings.catch_warnings():  # another criterion's scale: no error (1e23 warns)
        warnings.simplefilter("ignore", StoryevalWarning)
        read_dataset(path, scale=f"{other}=1-5")
    with pytest.raises(InputError, match="line 19"):
        read_dataset(path, scale=f"{crit}=1-5,{other}=1-5")
    with pytest.raises(InputError, match="has no ratings of"):
        read_dataset(path, scale="Coherence=1-5")


def test_far_values_warn_without_a_scale(tmp_path):
    r = ratings()
    r.loc[5, "value"] = 1e23
    path = tmp_path / "r.csv"
    r.to_csv(path, index=False)
    with pytest.warns(StoryevalWarning, match=r"far outside.*line 7: 1e\+23.*--scale"):
        read_dataset(path)
    r.loc[5, "value"] = 5
    r.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoryevalWarning)
        read_dataset(path)  # an ordinary 1-5 table: silent


def test_far_rule():
    likert = np.array([1, 2, 3, 4, 5, 3, 3, 2, 4], dtype=float)
    assert not _far(likert).any()
    assert _far(np.append(likert, 55.0))[-1]  # a slip for 5.5
    assert not _far(np.append(likert, 3 + FAR_FACTOR - 1))[-1]
    assert _far(np.array([1.0, 2.0, 3.0, 1e23])).tolist() == [False, False, False, True]
    assert not _far(np.array([0.0] * 50 + [1.0])).any()  # rare 1s of a binary scale
    assert not _far(np.array([1.0, 1e23])).any()  # too few values to tell


def test_wide_table_out_of_scale_names_story_and_column(tmp_path):
    wide = pd.DataFrame({"system": ["A", "A", "B", "B"], "prompt_id": [1, 2, 1, 2],
                         "q_1": [1, 2, 3, 4], "q_2": [2, 9, 3, 4], "bleu": [.1, .2, .3, .4]})
    path = tmp_path / "w.csv"
    wide.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"story A/2, column 'q \[q_2\]'|story A/2.*q_2.*9"):
        read_dataset(path, annotators=["q=q_*"], scale="1-5")


def test_cli_scale_and_strict(tmp_path, capsys):
    r = ratings()
    path = tmp_path / "r.csv"
    r.to_csv(path, index=False)
    scores = r[["system", "prompt_id"]].drop_duplicates().assign(measure="m", value=0.5)
    scores["value"] = np.arange(len(scores), dtype=float)
    cut = scores[scores["system"] != "C"]  # a score file cut at a system boundary
    cut.to_csv(tmp_path / "s.csv", index=False)
    assert main(["describe", "--data", str(path), "--scale", "1-5"]) == 0
    assert main(["describe", "--data", str(path), "--scale", "2-5"]) == 2
    assert "outside the declared scale 2-5" in capsys.readouterr().err
    base = ["meta", "--data", str(path), "--scores", str(tmp_path / "s.csv"), "--metrics", "m",
            "--levels", "overall"]
    with warnings.catch_warnings():
        warnings.simplefilter("always", StoryevalWarning)  # printed by the CLI
        assert main(base) == 0
    assert "stories dropped" in capsys.readouterr().err
    assert main([*base, "--strict"]) == 2
    err = capsys.readouterr().err
    assert "--strict" in err and "'C' (all 6)" in err


def test_two_stories_give_no_correlation_but_a_reason(tmp_path, capsys):
    r = pd.DataFrame({"system": ["A"] * 4, "prompt_id": [1, 1, 2, 2],
                      "criterion": "Overall", "annotator": ["r1", "r2"] * 2,
                      "value": [2, 3, 4, 5]})
    r.to_csv(tmp_path / "r.csv", index=False)
    pd.DataFrame({"system": ["A", "A"], "prompt_id": [1, 2], "measure": "m1",
                  "value": [0.1, 0.5]}).to_csv(tmp_path / "s.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("always", StoryevalWarning)  # printed by the CLI
        assert main(["meta", "--data", str(tmp_path / "r.csv"), "--scores",
                     str(tmp_path / "s.csv")]) == 0
    captured = capsys.readouterr()
    assert "only 2 observations" in captured.out and "1.000" not in captured.out
    assert "fewer than 3 observations" in captured.err
