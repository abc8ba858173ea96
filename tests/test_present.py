"""The one presentation layer (`storyeval.report.present`, issue 53): one p-value format in the
terminal and on the pages of every command, terminal tables that fit 120 columns unless
``--wide``, unknown options answered with the closest one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_reproducible_outputs import _verdicts

from storyeval.cli import main
from storyeval.report.present import (
    display_names,
    fit_table,
    interval_text,
    is_p_column,
    p_clause,
    p_text,
    wrap_text,
)
from storyeval.report.tables import format_table

EXPONENT = re.compile(r"\d(\.\d+)?e[-+]?\d", re.IGNORECASE)


def test_p_text_is_journal_style():
    # hand-written: "< 0.001" below 0.001, else 3 significant digits; never 0.000 or 5.0e-4
    cases = {0.0: "< 0.001", 5e-4: "< 0.001", 6.04e-9: "< 0.001", 0.001: "0.00100",
             0.00123: "0.00123", 0.0132: "0.0132", 0.0498: "0.0498", 0.075: "0.0750",
             0.5: "0.500", 1.0: "1.00", np.nan: "", None: ""}
    assert {p: p_text(p) for p in cases} == cases
    assert p_text("< 0.001") == "< 0.001"  # a formatted cell stays as it is
    assert (p_clause(0.0132), p_clause(1e-6), p_clause(np.nan)) == \
        ("p = 0.0132", "p < 0.001", "p undefined")
    assert interval_text(0.0001, 0.4) == "(0, 0.400]" and interval_text(np.nan, 1) == ""


@pytest.mark.parametrize("name, expected", [
    ("p", True), ("pvalue", True), ("p_value", True), ("p_adjusted", True), ("pvalue_bh", True),
    ("perm_p", True), ("perm_p_adjusted", True), ("p_vs_next", True), ("change_p", True),
    ("top_p", False), ("prompt_id", False), ("n_pairs", False), ("ppi", False)])
def test_is_p_column(name, expected):
    assert is_p_column(name) is expected


def test_format_table_prints_p_columns_in_the_one_format_and_csv_in_full():
    frame = pd.DataFrame({"measure": ["a", "b"], "estimate": [0.0001, 0.25],
                          "pvalue": [0.0004, 0.0498]})
    text = format_table(frame, "table")
    assert text.splitlines()[2].endswith("0.000  < 0.001")  # an estimate of 0.000; p < 0.001
    assert text.splitlines()[3].endswith("0.0498")
    assert "0.0004" in format_table(frame, "csv")  # full precision


def test_wide_tables_hoist_constant_columns_then_wrap_into_blocks():
    frame = pd.DataFrame({"dimension": ["Overall"] * 3, "item": ["x", "y", "z"],
                          **{f"column_{k:02d}": np.arange(3.0) + k for k in range(14)},
                          "seed": [0, 0, 0], "resample": ["prompt"] * 3})
    full = format_table(frame, "table")
    assert max(map(len, full.splitlines())) > 120  # the library prints the full grid
    text = format_table(frame, "table", width=120)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 120
    assert lines[0] == "dimension: Overall; seed: 0; resample: prompt"  # hoisted constants
    blocks = [line for line in lines if line.startswith("item ")]
    assert len(blocks) >= 2  # wrapped, each block led by the row labels
    assert all(f"column_{k:02d}" in text for k in range(14))
    # a table that fits is left as it is
    small = frame.iloc[:, :4]
    assert format_table(small, "table", width=120) == format_table(small, "table")
    # fit_table on its own
    assert fit_table(["a"], [["1"]], lambda h, c: "x" * 200, width=None) == "x" * 200


def test_display_names_keep_the_identifier_in_measure_id():
    frame = pd.DataFrame({"measure": ["BLEU Ξ§", "Beluga-13B RE 1"], "accuracy": [0.5, 0.6]})
    shown = display_names(frame, {"BLEU Ξ§": "BLEU", "Beluga-13B RE 1": "Beluga-13B RE 1"})
    assert list(shown.columns) == ["measure", "measure_id", "accuracy"]
    assert list(shown["measure"]) == ["BLEU", "Beluga-13B RE 1"]
    assert list(shown["measure_id"]) == ["BLEU Ξ§", "Beluga-13B RE 1"]
    assert wrap_text("word " * 40, 30).count("\n") >= 5


# ------------------------------------------------------------------ the commands, end to end

def _text_tables(text: str):
    """(caption, header, rows) of every terminal table: a line of dashes under its header,
    the cells read by the dashes' column spans."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line or set(line) - {"-", " "} or i == 0:
            continue
        spans = [m.span() for m in re.finditer(r"-+", line)]
        spans[-1] = (spans[-1][0], None)
        def cut(row):
            return [row[a:b].strip() if b is not None else row[a:].strip() for a, b in spans]
        rows = []
        for row in lines[i + 1:]:
            if not row.strip() or row.startswith("#"):
                break
            rows.append(cut(row))
        caption = " ".join(lines[max(0, i - 4):i - 1])
        yield caption, cut(lines[i - 1]), rows


def _p_cells(text: str) -> list[str]:
    """The p-value cells of the terminal tables: p columns, or every cell of a table whose
    caption says it holds p-values (meta's grids: "BH-adjusted Williams p ...")."""
    cells = []
    for caption, header, rows in _text_tables(text):
        p_grid = re.search(r"(adjusted|Williams|permutation) p\b|p-values", caption) is not None
        for k, name in enumerate(header):
            if k and (p_grid or is_p_column(name)):
                cells += [row[k] for row in rows if k < len(row)]
    return cells


def _html_p_cells(page: str) -> list[str]:
    import io

    cells = []
    for m in re.finditer(r"(?:<p class='caption'>([^<]*)</p>)?<div class='scroll'>(<table.*?"
                         r"</table>)", page, flags=re.S):
        caption = m.group(1) or ""
        table = pd.read_html(io.StringIO(m.group(2)), keep_default_na=False)[0].astype(str)
        p_grid = re.search(r"(adjusted|Williams|permutation) p\b", caption) is not None
        for k, name in enumerate(table.columns):
            if k and (p_grid or is_p_column(name if isinstance(name, str) else name[-1])):
                cells += list(table.iloc[:, k])
    return cells


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """humans.csv and judges.csv: two judges agreeing with the humans on 85% and 60% of pairs."""
    folder = tmp_path_factory.mktemp("present")
    human = _verdicts("human", 1.0, None, 1)
    judges = [_verdicts(name, share, human, seed)
              for name, share, seed in (("good", 0.85, 2), ("fair", 0.6, 3))]
    for name, frame in (("humans", human), ("judges", pd.concat(judges))):
        frame.to_csv(folder / f"{name}.csv", index=False)
    return folder


def _runs(folder: Path) -> dict[str, list[str]]:
    j, h = str(folder / "judges.csv"), str(folder / "humans.csv")
    return {
        "meta": ["meta", "--metrics", "all", "--criteria", "RE,CH"],
        "bias": ["bias", "--metrics", "Beluga-13B 1,BLEU", "--criteria", "RE,CH"],
        "pointwise": ["pairwise", "pointwise", "--metrics", "BLEU,Beluga-13B 1", "--criteria",
                      "RE", "--interval", "auto", "--resamples", "100"],
        "accuracy": ["pairwise", "accuracy", j, "--reference", h, "--resamples", "100"],
        "compare": ["pairwise", "compare", j, "--reference", h, "--resamples", "100"],
        "strengths": ["pairwise", "strengths", h, "--resamples", "50"],
        "agreement": ["agreement", "--what", "annotators", "--criteria", "RE,CH"],
    }


def test_every_command_prints_one_p_format_within_120_columns(verdicts, capsys):
    for name, argv in _runs(verdicts).items():
        capsys.readouterr()
        assert main(argv) == 0, name
        out = capsys.readouterr().out
        lines = out.splitlines()
        assert max(map(len, lines)) <= 120, (name, max(lines, key=len))
        cells = _p_cells(out)
        if name in ("meta", "bias", "pointwise", "accuracy", "compare"):
            assert cells, name  # the check saw the p-values
        assert "0.000" not in cells and not any(EXPONENT.search(c) for c in cells), \
            (name, sorted(set(cells)))
    # --wide: the full grid, as wide as it is
    assert main(["pairwise", "strengths", str(verdicts / "humans.csv"), "--resamples", "50",
                 "--wide"]) == 0
    assert max(map(len, capsys.readouterr().out.splitlines())) > 120


def test_every_page_prints_one_p_format(verdicts, tmp_path, capsys):
    runs = _runs(verdicts)
    runs["meta"] = ["meta", "--metrics", "BLEU,chrF,Beluga-13B 1", "--criteria", "RE,CH",
                    "--no-figures"]
    for name in ("meta", "bias", "pointwise", "accuracy"):
        out = tmp_path / name
        assert main([*runs[name], "--out", str(out)]) == 0, name
        page = (out / "index.html").read_text(encoding="utf-8")
        cells = _html_p_cells(page)
        assert cells, name
        assert "0.000" not in cells and not any(EXPONENT.search(c) for c in cells), \
            (name, sorted(set(cells)))
    capsys.readouterr()


def test_an_unknown_option_gets_the_closest_one(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["meta", "--metrcs", "all"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "storyeval meta: error: unrecognized arguments: --metrcs all" in err
    assert "did you mean --metrics?" in err and "see storyeval meta --help" in err
    with pytest.raises(SystemExit):
        main(["pairwise", "strengths", "x.csv", "--resampls", "3"])
    assert "did you mean --resamples?" in capsys.readouterr().err
