"""`storyeval pairwise strengths --human H.csv --judge J.csv`: the library's numbers, the
options, and the two files damaged (one line naming the file, exit code 2)."""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from storyeval.cli import main
from storyeval.exceptions import UndefinedStatisticWarning
from storyeval.pairwise import read_verdicts
from storyeval.pairwise.ppi_strengths import ppi_bradley_terry
from storyeval.pairwise.ppr import prediction_powered_ranking

DATA = Path(__file__).parent / "data"
HUMAN, JUDGE = DATA / "ppr_reference_human.csv", DATA / "ppr_reference_judge.csv"


def _run(argv: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(argv)
    return code, buf.getvalue()


def _csv(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def test_bradley_terry_equals_the_library():
    code, out = _run(["pairwise", "strengths", "--human", str(HUMAN), "--judge", str(JUDGE),
                      "--format", "csv", "--resamples", "100", "--seed", "3"])
    assert code == 0
    with warnings.catch_warnings():  # resamples without a finite minimiser: left out
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        table, _ = ppi_bradley_terry(read_verdicts(HUMAN), read_verdicts(JUDGE),
                                     n_resamples=100, random_state=3)
    got = _csv(out)
    np.testing.assert_allclose(got["log_strength"], table["log_strength"], rtol=1e-12)
    np.testing.assert_allclose(got["ci_high"], table["ci_high"], rtol=1e-12)
    assert got["item"].tolist() == table["item"].tolist()


def test_win_rates_with_the_published_choices_equal_the_library():
    argv = ["pairwise", "strengths", str(JUDGE), "--human", str(HUMAN), "--estimand",
            "win-rate", "--variance", "comparison", "--scaling", "total", "--tie-credit", "0",
            "--confidence-level", "0.9", "--format", "csv"]
    code, out = _run(argv)
    assert code == 0
    res = prediction_powered_ranking(read_verdicts(HUMAN), read_verdicts(JUDGE), tie_credit=0,
                                     scaling="total", cluster="comparison",
                                     confidence_level=0.9)
    got = _csv(out)
    np.testing.assert_allclose(got["win_rate"], res.table["win_rate"], rtol=1e-12)
    assert got["rank_set_low"].tolist() == res.table["rank_set_low"].tolist()


def test_text_output_states_the_estimand_and_coverage():
    code, out = _run(["pairwise", "strengths", "--human", str(HUMAN), "--judge", str(JUDGE)])
    assert code == 0  # the default: the prompt-clustered sandwich, as the library's
    text = " ".join(out.replace("\n  ", " ").split())
    assert "estimand: Bradley-Terry log-strengths" in text
    assert "intervals: normal 0.95, prompt-clustered sandwich" in text
    table, _ = ppi_bradley_terry(read_verdicts(HUMAN), read_verdicts(JUDGE))
    assert f"{table['ci_low'].iloc[0]:.3f}" in text
    assert "rank-sets cover the ranking of all items together with probability >= 0.95" in text
    assert max(len(line) for line in out.splitlines()) <= 120


def test_out_writes_the_table_and_page(tmp_path, capsys):
    out = tmp_path / "ppr"
    assert main(["pairwise", "strengths", "--human", str(HUMAN), "--judge", str(JUDGE),
                 "--resamples", "50", "--out", str(out)]) == 0
    assert (out / "strengths.csv").exists() and (out / "index.html").exists()
    capsys.readouterr()


@pytest.mark.parametrize("extra, message", [
    (["--matrix", str(JUDGE)], "--matrix"),
    (["--control", "length"], "--control"),
    (["--estimand", "win-rate", "--reference", "gpt-4"], "--reference"),
    (["--method", "judge"], "--method judge"),
    (["--method", "ppi", "--lam", "0.3"], "--lam"),
    (["--reference", "gpt-5"], "'gpt-5'"),
])
def test_usage_errors(extra, message, capsys):
    code = main(["pairwise", "strengths", "--human", str(HUMAN), "--judge", str(JUDGE),
                 "--resamples", "0", *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err


def test_judge_name_only_with_human(capsys):
    assert main(["pairwise", "strengths", str(JUDGE), "--judge-name", "x"]) == 2
    assert "--judge-name needs --human" in capsys.readouterr().err


# ---------------------------------------------------------------------------- damage
def _empty(text: str) -> str:
    return ""


def _header_only(text: str) -> str:
    return text.splitlines()[0] + "\n"


def _cut(text: str) -> str:
    """Cut inside the last line, just after its first comma."""
    head, last = text.rstrip("\n").rsplit("\n", 1)
    return head + "\n" + last[:last.index(",") + 1]


def _duplicate(text: str) -> str:
    lines = text.splitlines()
    return "\n".join([*lines, lines[1]]) + "\n"


def _append(row: str) -> Callable[[str], str]:
    return lambda text: text + row + "\n"


def _cell(line: int, column: int, value: str) -> Callable[[str], str]:
    def damage(text: str) -> str:
        lines = text.splitlines()
        cells = lines[line - 1].split(",")
        cells[column] = value
        lines[line - 1] = ",".join(cells)
        return "\n".join(lines) + "\n"
    return damage


CASES = [
    ("human.csv", _empty, None),
    ("human.csv", _header_only, "empty"),
    ("human.csv", _cut, "row 89"),
    ("human.csv", _duplicate, "row 90"),
    ("human.csv", _cell(3, 4, "maybe"), "row 1"),
    ("human.csv", _append("9999,gpt-4/9999,koala-13b/9999,Overall,A,AB"), "row 90"),
    ("judge.csv", _empty, None),
    ("judge.csv", _header_only, "empty"),
    ("judge.csv", _cut, "row 899"),
    ("judge.csv", _duplicate, "row 900"),
    ("judge.csv", _cell(5, 5, "CD"), "row 3"),
    ("judge.csv", _append("0,gpt-4/0,gpt-4/0,Overall,A,AB"), "itself"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1].__name__}" if c[1].__name__ !=
                                             "damage" else f"{c[0]}-cell" for c in CASES])
def test_damaged_file_is_one_line_naming_it(case, tmp_path, capsys):
    name, damage, what = case
    files = {"human.csv": tmp_path / "human.csv", "judge.csv": tmp_path / "judge.csv"}
    files["human.csv"].write_text(HUMAN.read_text())
    files["judge.csv"].write_text(JUDGE.read_text())
    files[name].write_text(damage(files[name].read_text()))
    code = main(["pairwise", "strengths", "--human", str(files["human.csv"]), "--judge",
                 str(files["judge.csv"]), "--resamples", "0"])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (out[-300:], err)
    assert "Traceback" not in err and len(lines) == 1, err
    assert re.match(r"storyeval [a-z ]+: error: ", lines[0]), lines[0]
    assert name in lines[0], lines[0]
    if what is not None:
        assert what in lines[0], lines[0]
