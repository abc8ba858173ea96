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
                 caption: str | None = None, label: str | None = None) -> str:
    """Render ``frame`` in one of `FORMATS`.

    Parameters
    ----------
    frame : pandas.DataFrame
        The table; its index is not printed (reset it first if it carries data).
    fmt : {"table", "md", "csv", "latex", "json"}
        Terminal text, GitHub Markdown, CSV (full precision), LaTeX booktabs, JSON records
        (full precision, NaN as null).
    digits : int
        Decimals shown for floats in ``table``, ``md`` and ``latex``.
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; use one of {list(FORMATS)}")
    check_digits(digits)
    if fmt == "csv":  # text cells a spreadsheet would run are neutralised (storyeval._csv)
        return csv_text(frame)
    if fmt == "json":
        return to_json(frame)
    cells = _display_cells(frame, digits)
    if fmt == "table":
        return _text(frame.columns, cells)
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
        if pd.api.types.is_float_dtype(dtype):
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
    try:
        float(text)
    except ValueError:
        return False
    return True


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


def fixed(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals, a negative zero printed as zero: -0.0002 at three
    decimals is ``0.000``, never ``-0.000`` (a sign without a digit to carry it)."""
    text = f"{value:.{digits}f}"
    if text.startswith("-") and not text.strip("-0."):
        return text[1:]
    return text


def interval_text(low: float, high: float, digits: int = 3) -> str:
    """``"[low, high]"`` with `fixed` ends; an end that lies strictly beyond 0 but prints as
    zero is printed as an open 0: ``"(0, 0.412]"``, ``"[-0.412, 0)"`` (a test-compatible
    interval cut at 0 where its test rejects ends there: `storyeval.compare.procedures.
    compatible_interval`), so that an interval that excludes 0 never reads as touching it."""
    lo, hi = fixed(low, digits), fixed(high, digits)
    zero = fixed(0.0, digits)
    left = "(0" if low > 0 and lo == zero else f"[{lo}"
    right = "0)" if high < 0 and hi == zero else f"{hi}]"
    return f"{left}, {right}"


def journal_p(p: float) -> str:
    """A p-value as a journal prints it: ``"< 0.001"`` below 0.001, else three significant
    digits with their trailing zeros (``0.0498``, ``0.500``, ``1.00``): never ``0.000``, and a
    0.0498 is never rounded to ``0.050``. NaN: empty."""
    if p is None or (isinstance(p, float) and math.isnan(p)) or pd.isna(p):
        return ""
    p = float(p)
    if p < 0.001:
        return "< 0.001"
    return f"{p:#.3g}"
