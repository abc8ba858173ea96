"""How every command and page shows a number to a reader: the one presentation layer.

- **p-values** as a journal prints them (`p_text`): ``"< 0.001"`` below 0.001, else three
  significant digits (``0.0132``, ``0.0498``, ``0.500``, ``1.00``); never ``0.000``, never an
  exponent (``5.0e-4``). Text output only: CSV and JSON keep full precision.
- **numbers** with a fixed count of decimals (`fixed`), a negative zero without its sign.
- **intervals** as ``[low, high]`` (`interval_text`), an end beyond 0 that prints as zero shown
  open: ``(0, 0.412]``.
- **terminal tables** that fit a terminal (`fit_table`): constant columns of a table that is too
  wide are hoisted into a header line (``dimension: Overall; seed: 0``), then the remaining
  columns are wrapped into blocks that repeat the leading label columns; long note lines are
  wrapped (`wrap_lines`). The command line shows tables at `TERMINAL_WIDTH` columns unless
  ``--wide`` (`terminal_width`); library calls get the full grid unless they ask.
- **measure names**: display names in text (`display_names`), the raw identifiers only in a
  column named `MEASURE_ID`.
"""

from __future__ import annotations

import contextlib
import contextvars
import textwrap
from collections.abc import Iterator, Mapping, Sequence

import pandas as pd

from storyeval._format import (  # noqa: F401 (the one formatting of numbers, re-exported)
    _missing,
    fixed,
    interval_text,
    is_p_column,
    p_clause,
    p_text,
)

#: The width the command line fits its terminal tables to (``--wide``: no limit).
TERMINAL_WIDTH = 120

#: The column that keeps a measure's raw identifier where a table shows display names.
MEASURE_ID = "measure_id"

_WIDTH: contextvars.ContextVar[int | None] = contextvars.ContextVar("storyeval_width",
                                                                    default=None)


@contextlib.contextmanager
def terminal_width(width: int | None) -> Iterator[None]:
    """Within the block, `format_table`'s terminal tables fit ``width`` columns (None: no
    limit); the previous width is restored on leaving it."""
    token = _WIDTH.set(width)
    try:
        yield
    finally:
        _WIDTH.reset(token)


def current_width() -> int | None:
    """The width terminal tables are fitted to here (None: no limit, the library default)."""
    return _WIDTH.get()


def join_intervals(frame: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """For reading: each pair of numeric columns ``X_low`` / ``X_high`` whose ``X`` is ``ci`` or
    ends in ``_ci`` (``ci_low``/``ci_high``, ``rank_ci_low``/``rank_ci_high``) as one column
    ``X`` of `interval_text` cells, where ``X_low`` was (whole numbers, such as the interval of
    a rank, without decimals). Other columns unchanged."""
    out = frame
    for low in [c for c in frame.columns if isinstance(c, str) and c.endswith("ci_low")]:
        stem = low[: -len("_low")]
        high = f"{stem}_high"
        if (stem != "ci" and not stem.endswith("_ci")) or high not in frame.columns \
                or stem in frame.columns:
            continue
        if not (pd.api.types.is_numeric_dtype(frame[low])
                and pd.api.types.is_numeric_dtype(frame[high])):
            continue
        if out is frame:
            out = frame.copy()
        ends = pd.concat([out[low], out[high]]).dropna().astype(float)
        places = 0 if stem != "ci" and len(ends) and (ends % 1 == 0).all() else digits  # ranks
        text = [interval_text(lo, hi, places) for lo, hi in zip(out[low], out[high])]
        position = out.columns.get_loc(low)
        out = out.drop(columns=[low, high])
        out.insert(position, stem, text)
    return out


def display_names(frame: pd.DataFrame, names: Mapping[str, str], *,
                  column: str = "measure") -> pd.DataFrame:
    """``frame`` with ``column``'s raw measure identifiers replaced by their display names
    (``names``: identifier -> display name, e.g. ``Dataset.catalogue``'s ``display_name``), the
    identifiers kept in a `MEASURE_ID` column after it (for joining and scripts). Unchanged
    when the column is absent or every name already is its display name."""
    if column not in frame.columns:
        return frame
    raw = frame[column].astype(object)
    shown = raw.map(lambda m: names.get(m, m) if isinstance(m, str) else m)
    if shown.equals(raw):
        return frame
    out = frame.copy()
    out[column] = shown
    if MEASURE_ID not in out.columns:
        out.insert(out.columns.get_loc(column) + 1, MEASURE_ID, raw)
    return out


# ------------------------------------------------------------------------- terminal width

def hoist_constants(header: Sequence[str], cells: list[list[str]], *, keep: int = 1
                    ) -> tuple[list[int], list[str]]:
    """The columns to keep and the texts ``name: value`` of those hoisted out of the table:
    the columns whose cell is the same on every row (of at least three rows: two that agree
    may agree by chance); a column empty on
    every row is left out without a text (it has nothing to say). At least ``keep`` columns
    stay (else nothing is hoisted)."""
    every = list(range(len(header)))
    if len(cells) < 3:
        return every, []
    constant = [len({row[i] for row in cells}) == 1 for i in every]
    if sum(not c for c in constant) < keep or not any(constant):
        return every, []
    hoisted = [f"{header[i]}: {cells[0][i]}" for i in every
               if constant[i] and cells[0][i].strip()]
    return [i for i in every if not constant[i]], hoisted


def column_blocks(widths: Sequence[int], width: int, *, labels: int, gap: int = 2
                  ) -> list[list[int]]:
    """Columns grouped into blocks whose lines fit ``width``: each block repeats the first
    ``labels`` columns (fewer when they alone do not fit) and adds the others in order; a
    column wider than what is left stands alone beside the labels."""
    n = len(widths)
    labels = min(labels, n)
    while labels > 0 and sum(widths[:labels]) + gap * (labels - 1) > width // 2:
        labels -= 1
    head = list(range(labels))
    base = sum(widths[:labels]) + gap * labels
    blocks: list[list[int]] = []
    current: list[int] = []
    used = base
    for i in range(labels, n):
        need = widths[i] + gap
        if current and used + need - gap > width:
            blocks.append(head + current)
            current, used = [], base
        current.append(i)
        used += need
    if current or not blocks:
        blocks.append(head + current)
    return blocks


def fit_table(header: Sequence[str], cells: list[list[str]], render, *,
              width: int | None) -> str:
    """A terminal table (``render(header, cells) -> text``) that fits ``width`` columns: as it
    is when it fits, else with its constant columns hoisted into a first line, then wrapped
    into blocks of columns that repeat its leading text columns (up to two: the row labels;
    `column_blocks`)."""
    text = render(header, cells)
    if width is None or _widest(text) <= width:
        return text
    kept, hoisted = hoist_constants(header, cells, keep=1)
    is_text = [not any(is_number_text(r[i]) for r in cells) for i in kept]
    header, cells = [header[i] for i in kept], [[row[i] for i in kept] for row in cells]
    lead = "".join(line + "\n" for line in wrap_lines(["; ".join(hoisted)], width)) \
        if hoisted else ""
    text = render(header, cells)
    if _widest(text) <= width:
        return lead + text
    labels = 0
    while labels < min(2, len(header)) and is_text[labels]:
        labels += 1
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
    parts = []
    for block in column_blocks(widths, width, labels=max(labels, 1)):
        parts.append(render([header[i] for i in block], [[r[i] for i in block] for r in cells]))
    return lead + "\n".join(parts)


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def wrap_lines(lines: Sequence[str], width: int | None, *, prefix: str = "",
               indent: str = "  ") -> list[str]:
    """Each line wrapped at ``width`` columns (None: unchanged), ``prefix`` (e.g. ``"# "``)
    before every line and ``indent`` after it on continuation lines."""
    if width is None:
        return [prefix + line for line in lines]
    out = []
    for line in lines:
        if len(prefix) + len(line) <= width or not line.strip():
            out.append(prefix + line)
            continue
        out += textwrap.wrap(line, width=width, initial_indent=prefix,
                             subsequent_indent=prefix + indent, break_long_words=False,
                             break_on_hyphens=False) or [prefix]
    return out


def wrap_text(text: str, width: int | None = None, *, prefix: str = "") -> str:
    """Every line of ``text`` wrapped as `wrap_lines` does, at ``width`` or, when None, at the
    width of this command's terminal tables (`terminal_width`; no limit by default)."""
    if width is None:
        width = current_width()
    if width is None or not text:
        return text
    end = "\n" if text.endswith("\n") else ""
    return "\n".join(wrap_lines(text.rstrip("\n").split("\n"), width, prefix=prefix)) + end


def is_number_text(text: str) -> bool:
    """A cell that reads as a number (right-aligned): ``0.5``, ``-3``, ``< 0.001``."""
    try:
        float(text)
    except ValueError:
        return text.startswith("< ") and is_number_text(text[2:])
    return True
