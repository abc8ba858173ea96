"""CSV cells that a spreadsheet would execute, neutralised on writing and restored on reading.

A spreadsheet (Excel, LibreOffice, Google Sheets) runs a cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return as a formula (OWASP "CSV injection"). storyeval writes
such a **text** cell with a single quote in front (``=HYPERLINK(...)`` is written
``'=HYPERLINK(...)``), as OWASP recommends; the spreadsheet shows the text. Numbers are never
changed: a number column, and a text cell that is a plain number (``-0.5``, ``+3``, ``-1e-3``),
is written as it is.

The rule is reversible, so storyeval's own files round-trip (a measure named ``-ROUGE`` is
written ``'-ROUGE`` and read back as ``-ROUGE``):

- writing: a text cell made of k >= 0 single quotes followed by one of the trigger characters
  gets one more quote in front;
- reading (`restore_frame`, used by storyeval's CSV/TSV readers): a text cell made of k >= 1
  single quotes followed by a trigger character loses one quote.

Any other text (``'Twas the night``) is left alone both ways. ``--raw-csv`` (or
``STORYEVAL_RAW_CSV=1``) turns the neutralisation off for one run (`raw_csv`).
"""

from __future__ import annotations

import contextvars
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas is imported on use: the command line's start needs none of it
    import pandas as pd

__all__ = ["TRIGGERS", "csv_text", "neutralise_frame", "neutralise_text", "raw_csv",
           "raw_csv_enabled", "restore_frame", "restore_text", "write_csv"]

#: The first characters that make a spreadsheet treat a cell as a formula.
TRIGGERS = "=+-@\t\r"

_NEUTRALISE = re.compile(r"'*[=+\-@\t\r]")
_RESTORE = re.compile(r"'+[=+\-@\t\r]")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RAW: contextvars.ContextVar[bool | None] = contextvars.ContextVar("storyeval_raw_csv",
                                                                    default=None)


def raw_csv_enabled() -> bool:
    """Whether this run writes CSV cells verbatim (``--raw-csv`` or ``STORYEVAL_RAW_CSV=1``)."""
    value = _RAW.get()
    if value is not None:
        return value
    return os.environ.get("STORYEVAL_RAW_CSV") == "1"


@contextmanager
def raw_csv(on: bool = True) -> Iterator[None]:
    """Write CSV cells verbatim (``on``) or neutralised inside the ``with`` block."""
    token = _RAW.set(on)
    try:
        yield
    finally:
        _RAW.reset(token)


def neutralise_text(text: str) -> str:
    """``text`` as storyeval writes it in a CSV cell (see the module docstring)."""
    if _NEUTRALISE.match(text) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def restore_text(text: str) -> str:
    """The inverse of `neutralise_text` (see the module docstring)."""
    return text[1:] if _RESTORE.match(text) else text


def _map_text(col: pd.Series, fn, candidate: str) -> pd.Series | None:
    """``col`` with ``fn`` applied to its text cells that start with a character of
    ``candidate``; None when no cell changes (checked on the distinct values, vectorised)."""
    import numpy as np
    import pandas as pd

    if not (pd.api.types.is_object_dtype(col) or pd.api.types.is_string_dtype(col)):
        return None
    values = col.to_numpy(dtype=object)
    codes, uniques = pd.factorize(values)
    if not len(uniques):
        return None
    first = np.array([v[:1] if isinstance(v, str) else "" for v in uniques], dtype=object)
    hit = np.flatnonzero(np.isin(first, list(candidate)))
    if not len(hit):
        return None
    new = uniques.astype(object).copy()
    changed = False
    for i in hit:
        out = fn(new[i])
        if out != new[i]:
            new[i], changed = out, True
    if not changed:
        return None
    result = np.where(codes >= 0, new[np.maximum(codes, 0)], values)
    return pd.Series(result, index=col.index, name=col.name, dtype=col.dtype)


def _map_frame(frame: pd.DataFrame, fn, candidate: str, header) -> pd.DataFrame:
    out = frame
    for j, name in enumerate(frame.columns):
        col = _map_text(frame.iloc[:, j], fn, candidate)
        if col is not None:
            if out is frame:
                out = frame.copy()
            out.isetitem(j, col)
    names = [header(c) if isinstance(c, str) else c for c in frame.columns]
    if names != list(frame.columns):
        if out is frame:
            out = frame.copy()
        out.columns = names
    return out


def neutralise_frame(frame: pd.DataFrame, *, raw: bool | None = None) -> pd.DataFrame:
    """``frame`` with its text cells (and column names) neutralised for a CSV/TSV file;
    ``frame`` itself when nothing changes or when ``raw`` (default: `raw_csv_enabled`)."""
    if raw if raw is not None else raw_csv_enabled():
        return frame
    return _map_frame(frame, neutralise_text, "'" + TRIGGERS, neutralise_text)


def restore_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` read from a CSV/TSV file with neutralised cells restored (`restore_text`)."""
    return _map_frame(frame, restore_text, "'", restore_text)


def write_csv(frame: pd.DataFrame, target, *, sep: str = ",", raw: bool | None = None,
              **options) -> None:
    """``frame.to_csv(target)`` without the index and with ``\\n`` line ends, its text cells
    neutralised (`neutralise_frame`) unless ``raw``; the one CSV writer of storyeval's
    commands."""
    options.setdefault("lineterminator", "\n")
    neutralise_frame(frame, raw=raw).to_csv(target, index=False, sep=sep, **options)


def csv_text(frame: pd.DataFrame, *, sep: str = ",", raw: bool | None = None,
             **options) -> str:
    """`write_csv` into a string."""
    return str(neutralise_frame(frame, raw=raw).to_csv(index=False, sep=sep, **options))
