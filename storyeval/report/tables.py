"""Format result tables as terminal text, Markdown, CSV, LaTeX or JSON.

No rounding happens in results; rounding is a display choice made here (``digits``), and CSV
and JSON keep full precision.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval._csv import csv_text
from storyeval.exceptions import InputError
from storyeval.report.present import (
    current_width,
    fit_table,
    fixed,
    interval_text,
    is_number_text,
    is_p_column,
    join_intervals,
    p_text,
)

__all__ = ["FORMATS", "FILE_SUFFIX", "format_table", "check_digits", "to_json", "latex_escape",
           "count", "fixed", "interval_text", "journal_p", "p_text"]

FORMATS = ("table", "md", "csv", "latex", "json")

# HANNA's taxonomy symbols in LaTeX (text mode).
_LATEX_SYMBOLS = {
    "Ξ": r"$\Xi$", "¤": r"\textcurrency{}", "§": r"\S{}", "ε": r"$\varepsilon$",
    "Δ": r"$\Delta$", "τ": r"$\tau$",
}
_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def format_table(frame: pd.DataFrame, fmt: str = "table", *, digits: int = 3,
                 caption: str | None = None, label: str | None = None,
                 width: int | None | str = "auto") -> str:
    """Render ``frame`` in one of `FORMATS`.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table; its index is not printed (reset it first if it carries data).
    fmt : {"table", "md", "csv", "latex", "json"}
        Terminal text, GitHub Markdown, CSV (full precision), LaTeX booktabs, JSON records
        (full precision, NaN as null).
    digits : int
        Decimals shown for floats in ``table``, ``md`` and ``latex``; p-value columns
        (`storyeval.report.present.is_p_column`) as `p_text` prints them; in ``table``, the
        columns ``ci_low`` / ``ci_high`` (and ``X_ci_low`` / ``X_ci_high``) as one
        column ``ci`` of intervals ``[low, high]`` (`storyeval.report.present.join_intervals`).
    width : int, None or "auto"
        ``table``: the widest line; a wider table has its constant columns hoisted into a
        header line and is wrapped into blocks of columns
        (`storyeval.report.present.fit_table`). None: no limit; "auto" (default): the width of
        `storyeval.report.present.terminal_width` (the command line: 120 unless ``--wide``;
        no limit in library calls).
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; use one of {list(FORMATS)}")
    check_digits(digits)
    if fmt == "csv":  # text cells a spreadsheet would run are neutralised (storyeval._csv)
        return csv_text(frame)
    if fmt == "json":
        return to_json(frame)
    if fmt == "table":
        frame = join_intervals(frame, digits)  # one interval notation: [low, high]
    cells = _display_cells(frame, digits)
    if fmt == "table":
        if width == "auto":
            width = current_width()
        return fit_table([str(c) for c in frame.columns], cells, _text,
                         width=width if isinstance(width, int) else None)
    if fmt == "md":
        return _markdown(frame, cells)
    return _latex(frame, cells, caption=caption, label=label)


def check_digits(digits: object, option: str = "--digits") -> int:
    """``digits`` if it is a whole number of decimals >= 0, else an InputError."""
    if isinstance(digits, bool) or not isinstance(digits, (int, np.integer)) or digits < 0:
        raise InputError(f"{option} must be a whole number >= 0, got {digits!r}")
    return int(digits)


def to_json(frame: pd.DataFrame) -> str:
    """JSON list of records, full precision, NaN/NA as null."""
    records = []
    for row in frame.itertuples(index=False, name=None):
        records.append({str(col): _json_value(v) for col, v in zip(frame.columns, row)})
    return json.dumps(records, ensure_ascii=False, indent=1)


def _json_value(value: object) -> object:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    return value


def _display_cells(frame: pd.DataFrame, digits: int) -> list[list[str]]:
    columns = []
    # one object array for the whole table: taking columns one by one from a wide table of
    # objects, or iterating an Arrow-backed string column, costs ~1 ms a column
    table = frame.to_numpy(dtype=object)
    for k, dtype in enumerate(frame.dtypes):
        values = table[:, k]
        if is_p_column(frame.columns[k]) and (pd.api.types.is_numeric_dtype(dtype)
                                              or pd.api.types.is_object_dtype(dtype)):
            columns.append([p_text(v) for v in values])
        elif pd.api.types.is_float_dtype(dtype):
            columns.append(["" if pd.isna(v) else fixed(v, digits) for v in values])
        else:
            columns.append(["" if (v is None or v is pd.NA or (isinstance(v, float) and
                                                                 math.isnan(v))) else str(v)
                            for v in values])
    return [list(row) for row in zip(*columns)] if columns else []


def _text(header: Sequence[object], cells: list[list[str]]) -> str:
    head = [str(h) for h in header]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) if _is_number(c) else c.ljust(w)
                        for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines) + "\n"


def _is_number(text: str) -> bool:
    return is_number_text(text)


def _markdown(frame: pd.DataFrame, cells: list[list[str]]) -> str:
    def esc(text: str) -> str:
        return text.replace("|", r"\|")

    head = "| " + " | ".join(esc(str(c)) for c in frame.columns) + " |"
    align = "| " + " | ".join("---:" if pd.api.types.is_numeric_dtype(frame[c]) else "---"
                              for c in frame.columns) + " |"
    body = ["| " + " | ".join(esc(c) for c in row) + " |" for row in cells]
    return "\n".join([head, align, *body]) + "\n"


def latex_escape(text: str) -> str:
    """Escape LaTeX specials and HANNA's taxonomy symbols."""
    out = []
    for ch in text:
        out.append(_LATEX_SPECIAL.get(ch) or _LATEX_SYMBOLS.get(ch) or ch)
    return "".join(out)


def _latex(frame: pd.DataFrame, cells: list[list[str]], *, caption: str | None,
           label: str | None) -> str:
    spec = "".join("r" if pd.api.types.is_numeric_dtype(frame[c]) else "l"
                   for c in frame.columns)
    lines = []
    if caption or label:
        lines += [r"\begin{table}[t]", r"\centering"]
    lines += [rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
              " & ".join(latex_escape(str(c)) for c in frame.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in cells]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    if caption or label:
        lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


FILE_SUFFIX = {"table": "txt", "md": "md", "csv": "csv", "latex": "tex", "json": "json"}


def count(n: object, noun: str, nouns: str | None = None) -> str:
    """``"1 system"``, ``"3 systems"``: a count with its noun in the right number (``nouns``:
    an irregular plural, e.g. "stories"); a count that is not a number keeps the plural."""
    plural = nouns or f"{noun}s"
    return f"{n} {noun if isinstance(n, (int, np.integer)) and n == 1 else plural}"


#: The one p-value format of text output (`storyeval.report.present.p_text`).
journal_p = p_text
