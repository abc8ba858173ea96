"""Reading and validating user score tables (long format) and HANNA-style wide tables.

Long format (CSV, TSV, JSONL or Parquet), one row per (story, measure)::

    story_id,system,prompt_id,measure,value
    GPT-2/0,GPT-2,0,my-metric,0.41

``story_id`` may be omitted when ``system`` and ``prompt_id`` are given (it is then built as
``"{system}/{prompt_id}"``). Every problem is reported with the file, column and row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval._optional import import_optional
from storyeval.data.dataset import Dataset, make_story_id
from storyeval.exceptions import InputError

_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl",
            ".parquet": "parquet", ".pq": "parquet"}


def _row_label(source: str, index: int, fmt: str | None) -> str:
    """How a user finds row ``index`` (0-based data row) in the file."""
    if fmt in ("csv", "tsv"):
        return f"{source}, line {index + 2}"  # line 1 is the header
    if fmt == "jsonl":
        return f"{source}, line {index + 1}"
    return f"{source}, row {index}"


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in set(_FORMATS.values()):
            raise InputError(f"unknown format {fmt!r}; use one of {sorted(set(_FORMATS.values()))}")
        return fmt
    try:
        return _FORMATS[path.suffix.lower()]
    except KeyError:
        raise InputError(
            f"{path}: cannot tell the format from the suffix {path.suffix!r}; "
            f"use one of {sorted(_FORMATS)} or pass format="
        ) from None


def read_table(path: str | Path, *, format: str | None = None) -> tuple[pd.DataFrame, str]:
    """Read a CSV / TSV / JSONL / Parquet file into a DataFrame; returns it and its format."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    fmt = _format_of(path, format)
    try:
        if fmt == "csv":
            frame = pd.read_csv(path, keep_default_na=True)
        elif fmt == "tsv":
            frame = pd.read_csv(path, sep="\t")
        elif fmt == "jsonl":
            frame = pd.read_json(path, lines=True, dtype=False)
        else:
            import_optional("pyarrow", extra="parquet", purpose="reading Parquet files")
            frame = pd.read_parquet(path)
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot be read as {fmt}: {exc}") from exc
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: the file is empty") from None
    return frame, fmt


def validate_scores(
    frame: pd.DataFrame,
    *,
    source: str = "scores",
    fmt: str | None = None,
    require: Sequence[str] = ("system", "prompt_id", "measure", "value"),
) -> pd.DataFrame:
    """Check and normalise a tidy score table; returns a clean copy.

    Checks, each with an error naming ``source``, the column and the row: no rows; missing
    columns; ``prompt_id`` not an integer; ``value`` not numeric (empty cells are missing values,
    kept as NaN); one ``story_id`` with several (system, prompt_id); duplicate (story, measure).
    """
    if len(frame) == 0:
        raise InputError(f"{source}: no rows")
    frame = frame.copy()
    if "story_id" not in frame.columns and {"system", "prompt_id"} <= set(frame.columns):
        frame.insert(0, "story_id", None)  # filled after prompt_id is checked
    missing = [c for c in require if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; found {list(frame.columns)}")
    if "prompt_id" in frame.columns:
        frame["prompt_id"] = _integer_column(frame["prompt_id"], "prompt_id", source, fmt)
    if "system" in frame.columns:
        frame["system"] = _string_column(frame["system"], "system", source, fmt)
    if "story_id" in frame.columns:
        if frame["story_id"].isna().all() and {"system", "prompt_id"} <= set(frame.columns):
            frame["story_id"] = [make_story_id(s, p) for s, p in
                                 zip(frame["system"], frame["prompt_id"])]
        frame["story_id"] = _string_column(frame["story_id"], "story_id", source, fmt)
    frame["measure"] = _string_column(frame["measure"], "measure", source, fmt)
    frame["value"] = _numeric_column(frame["value"], "value", source, fmt)
    _check_unique(frame, source, fmt)
    return frame.reset_index(drop=True)


def _string_column(col: pd.Series, name: str, source: str, fmt: str | None) -> pd.Series:
    bad = np.flatnonzero(col.isna().to_numpy() | (col.astype(str).str.strip() == "").to_numpy())
    if len(bad):
        raise InputError(f"{_row_label(source, int(bad[0]), fmt)}: column {name!r} is empty "
                         f"({len(bad)} row(s) in all)")
    return col.astype(str)


def _integer_column(col: pd.Series, name: str, source: str, fmt: str | None) -> pd.Series:
    numeric = pd.to_numeric(col, errors="coerce")
    ok = numeric.notna() & (numeric == np.round(numeric))
    bad = np.flatnonzero(~ok.to_numpy())
    if len(bad):
        i = int(bad[0])
        raise InputError(f"{_row_label(source, i, fmt)}: column {name!r} must be an integer, "
                         f"got {col.iloc[i]!r} ({len(bad)} row(s) in all)")
    return numeric.astype(np.int64)


def _numeric_column(col: pd.Series, name: str, source: str, fmt: str | None) -> pd.Series:
    numeric = pd.to_numeric(col, errors="coerce")
    blank = col.isna() | col.astype(str).str.strip().isin(["", "nan", "NaN", "NA"])
    bad = np.flatnonzero((numeric.isna() & ~blank).to_numpy())
    if len(bad):
        i = int(bad[0])
        raise InputError(f"{_row_label(source, i, fmt)}: column {name!r} is not a number: "
                         f"{col.iloc[i]!r} ({len(bad)} row(s) in all)")
    return numeric.astype(float)


def _check_unique(frame: pd.DataFrame, source: str, fmt: str | None) -> None:
    if "story_id" not in frame.columns:
        return
    dup = frame.duplicated(["story_id", "measure"], keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)[:2]
        first = frame.iloc[rows[0]]
        raise InputError(
            f"{source}: duplicate score for story {first['story_id']!r} and measure "
            f"{first['measure']!r} at {_row_label(source, int(rows[0]), fmt)} and "
            f"{_row_label(source, int(rows[1]), fmt).split(', ')[-1]} "
            f"({int(dup.sum())} duplicated row(s) in all)"
        )
    if {"system", "prompt_id"} <= set(frame.columns):
        keys = frame.groupby("story_id")[["system", "prompt_id"]].nunique()
        clash = keys[(keys > 1).any(axis=1)]
        if len(clash):
            raise InputError(f"{source}: story_id {clash.index[0]!r} has several "
                             f"(system, prompt_id) values")


def scores_to_dataset(
    frame: pd.DataFrame,
    *,
    name: str = "custom",
    source: str = "scores",
    fmt: str | None = None,
    require_same_prompts: bool = True,
    catalogue: pd.DataFrame | None = None,
) -> Dataset:
    """A :class:`Dataset` from a tidy long table (validated, see :func:`validate_scores`).

    ``require_same_prompts`` (default) checks that every system has the same set of prompts:
    system-level correlations compare means over different prompts otherwise.
    """
    frame = validate_scores(frame, source=source, fmt=fmt)
    order = list(dict.fromkeys(frame["system"]))
    table = frame.pivot(index=["system", "prompt_id"], columns="measure", values="value")
    table = table.reindex(columns=list(dict.fromkeys(frame["measure"])))
    systems = pd.CategoricalIndex(table.index.get_level_values("system"), categories=order)
    table = table.iloc[np.lexsort((table.index.get_level_values("prompt_id"), systems.codes))]
    if require_same_prompts:
        _check_same_prompts(table, source)
    table.columns.name = None
    return Dataset(table.astype(float), catalogue, name)


def _check_same_prompts(table: pd.DataFrame, source: str) -> None:
    prompts = table.reset_index().groupby("system", sort=False)["prompt_id"].apply(frozenset)
    reference = prompts.iloc[0]
    for system, have in prompts.items():
        if have != reference:
            lacking = sorted(reference - have)[:5]
            extra = sorted(have - reference)[:5]
            raise InputError(
                f"{source}: systems have different prompt sets: {system!r} lacks prompts "
                f"{lacking} and has extra prompts {extra} compared with {prompts.index[0]!r} "
                "(pass require_same_prompts=False / --allow-unbalanced to accept)"
            )


def read_scores(path: str | Path, *, format: str | None = None, name: str | None = None,
                require_same_prompts: bool = True) -> Dataset:
    """Read a long-format score file (CSV, TSV, JSONL, Parquet) into a :class:`Dataset`.

    Examples
    --------
    >>> ds = read_scores("my_scores.csv")  # doctest: +SKIP
    """
    frame, fmt = read_table(path, format=format)
    return scores_to_dataset(frame, name=name or Path(path).stem, source=str(path), fmt=fmt,
                             require_same_prompts=require_same_prompts)


def read_score_table(path: str | Path, *, format: str | None = None) -> pd.DataFrame:
    """Read and validate a tidy score table that needs only ``story_id, measure, value``
    (e.g. the output of ``storyeval score``, to be joined with a dataset)."""
    frame, fmt = read_table(path, format=format)
    return validate_scores(frame, source=str(path), fmt=fmt,
                           require=("story_id", "measure", "value"))


def read_hanna_wide(path: str | Path, *, name: str | None = None,
                    system_column: str = "Model") -> Dataset:
    """Read a table in HANNA's released wide format into a :class:`Dataset`.

    One row per system (column ``system_column``); every other cell is a JSON list with one value
    per story-prompt, in the same prompt order for every row. Prompt ids are 0..N-1 in that order.
    """
    import csv

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    csv.field_size_limit(2**31 - 1)
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    if len(rows) < 2:
        raise InputError(f"{path}: no data rows")
    header, body = rows[0], rows[1:]
    if system_column not in header:
        raise InputError(f"{path}: missing column {system_column!r}; found {header[:5]}...")
    sys_idx = header.index(system_column)
    measures = [h for i, h in enumerate(header) if i != sys_idx]
    blocks, systems, n_prompts = [], [], None
    for line, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise InputError(f"{path}, line {line}: {len(row)} cells, header has {len(header)}")
        system = row[sys_idx]
        values = _parse_row(path, line, header, row, sys_idx)
        lengths = {len(v) for v in values}
        if len(lengths) != 1 or (n_prompts is not None and lengths != {n_prompts}):
            raise InputError(f"{path}, line {line} (system {system!r}): lists of different "
                             f"lengths {sorted(lengths)}; every cell needs one value per prompt")
        n_prompts = lengths.pop()
        blocks.append(np.array(values, dtype=float).T)
        systems.append(system)
    if len(set(systems)) != len(systems):
        raise InputError(f"{path}: duplicate system names in column {system_column!r}")
    index = pd.MultiIndex.from_product([systems, range(n_prompts)], names=["system", "prompt_id"])
    table = pd.DataFrame(np.vstack(blocks), index=index, columns=measures)
    return Dataset(table, None, name or path.stem)


def _parse_row(path: Path, line: int, header: list[str], row: list[str],
               sys_idx: int) -> list[list[float]]:
    """All the JSON lists of one row; one parse of the whole row when it is well formed (fast),
    cell by cell otherwise, to name the faulty column."""
    cells = [cell for i, cell in enumerate(row) if i != sys_idx]
    try:
        values = json.loads("[" + ",".join(cells) + "]")
    except json.JSONDecodeError:
        values = None
    if values is not None and len(values) == len(cells) and all(
            isinstance(v, list) and all(isinstance(x, (int, float)) for x in v)
            for v in values):
        return values
    return [_parse_cell(path, line, header[i], cell)
            for i, cell in enumerate(row) if i != sys_idx]


def _parse_cell(path: Path, line: int, column: str, cell: str) -> list[float]:
    try:
        values = json.loads(cell)
    except json.JSONDecodeError:
        raise InputError(f"{path}, line {line}, column {column!r}: not a JSON list: "
                         f"{cell[:40]!r}") from None
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) or v is None for v in values):
        raise InputError(f"{path}, line {line}, column {column!r}: expected a JSON list of numbers")
    return [np.nan if v is None else v for v in values]
