"""CSV cells a spreadsheet would run (storyeval._csv): neutralised on writing, restored on
reading, numbers untouched, ``--raw-csv`` to write them verbatim (issue 48)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from storyeval._csv import (
    csv_text,
    neutralise_frame,
    neutralise_text,
    raw_csv,
    restore_frame,
    restore_text,
)
from storyeval.cli import main
from storyeval.data.io import read_table
from storyeval.llm.stories import load_stories

TEXTS = ["-ROUGE", "=1+1", "+SUM(A1)", "@cmd", "\tx", "\rx", "'=x", "''-x", "'Twas", "'", "''",
         "plain", "", "a=b", "-", "=", "'@'", "- dialogue"]


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip_and_no_leading_trigger(text):
    written = neutralise_text(text)
    assert restore_text(written) == text
    assert written[:1] not in ("=", "+", "-", "@", "\t", "\r")


def test_numbers_are_written_as_numbers():
    # a negative number stays a number: in a numeric column and as a plain-number text cell
    frame = pd.DataFrame({"measure": ["-ROUGE", "-0.5", "+3", "-1e-3", "-x1"],
                          "value": [-1.5, -2.0, 3.0, 0.0, np.nan]})
    text = csv_text(frame)
    assert text.splitlines()[1:] == ["'-ROUGE,-1.5", "-0.5,-2.0", "+3,3.0", "-1e-3,0.0",
                                     "'-x1,"]
    back = pd.read_csv(io.StringIO(text), dtype={"measure": str})
    pd.testing.assert_frame_equal(restore_frame(back), frame)


def test_header_names_and_raw_option():
    frame = pd.DataFrame({"=bad": ["=x"], "ok": [1]})
    assert list(neutralise_frame(frame).columns) == ["'=bad", "ok"]
    with raw_csv(True):
        assert csv_text(frame).splitlines() == ["=bad,ok", "=x,1"]
    assert csv_text(frame).splitlines() == ["'=bad,ok", "'=x,1"]
    assert neutralise_frame(pd.DataFrame({"a": ["x"]})) is not None


def test_read_table_and_load_stories_restore(tmp_path):
    frame = pd.DataFrame({"story_id": ["=A/0", "B/0"], "system": ["-A", "B"], "prompt_id": [0, 0],
                          "prompt": ["p", "p"], "story": ["=1+1 is two.", "- Hello, she said."]})
    path = tmp_path / "stories.csv"
    path.write_text(csv_text(frame), encoding="utf-8")
    assert "'=1+1" in path.read_text(encoding="utf-8")
    got, _ = read_table(path)
    assert got["story"].tolist() == frame["story"].tolist()
    assert got["system"].tolist() == ["-A", "B"]
    assert load_stories(path)["story"].tolist() == frame["story"].tolist()


def _robustness(tmp_path, *extra: str) -> str:
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("story_id,original_id,kind\n" + "".join(
        f"s{i}~x,s{i},shuffle\n" for i in range(4)), encoding="utf-8")
    scores = tmp_path / "scores.csv"
    rows = [f"{sid},{i},{m},{v}" for i in range(4) for m in ("-ROUGE", "=HYPERLINK(1)")
            for sid, v in ((f"s{i}", 1.0 + i), (f"s{i}~x", 0.5 - i))]
    scores.write_text("story_id,prompt_id,measure,value\n" + "\n".join(rows) + "\n",
                      encoding="utf-8")
    out = tmp_path / ("rob" + "".join(extra).replace("-", ""))
    argv = ["robustness", "--scores", str(scores), "--manifest", str(manifest), "--out", str(out)]
    head = [a for a in extra if a == "TOP"]
    tail = [a for a in extra if a != "TOP"]
    assert main([*(["--raw-csv"] if head else []), *argv, *tail]) == 0
    return (out / "outcomes.csv").read_text(encoding="utf-8")


def test_robustness_outputs_neutralised_and_round_trip(tmp_path, capsys):
    text = _robustness(tmp_path)
    lines = text.splitlines()
    assert all(not line.startswith(("=", "-", "+", "@")) for line in lines)
    assert any(line.startswith("'-ROUGE,") for line in lines)
    assert any(line.startswith("'=HYPERLINK(1),") for line in lines)
    assert ",-0.5," in text or ",-1.5," in text  # negative numbers stay numbers
    back, _ = read_table(tmp_path / "rob" / "outcomes.csv")
    assert set(back["measure"]) == {"-ROUGE", "=HYPERLINK(1)"}
    capsys.readouterr()


@pytest.mark.parametrize("where", ["--raw-csv", "TOP"])
def test_raw_csv_writes_verbatim(tmp_path, capsys, where):
    text = _robustness(tmp_path, where)
    assert any(line.startswith("-ROUGE,") for line in text.splitlines())
    assert any(line.startswith("=HYPERLINK(1),") for line in text.splitlines())
    capsys.readouterr()
