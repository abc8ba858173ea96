"""Reading and validating user score tables (long format) and HANNA-style wide tables.

Long format (CSV, TSV, JSONL or Parquet), one row per (story, measure):

    story_id,system,prompt_id,measure,value
    GPT-2/0,GPT-2,0,my-metric,0.41

``story_id`` may be omitted when ``system`` and ``prompt_id`` are given (it is then built as
``"{system}/{prompt_id}"``). Every problem is reported with the file, column and row.

Text files (CSV, TSV, JSON Lines) are read as UTF-8, with or without a byte-order mark, or as
UTF-16 when they start with a UTF-16 byte-order mark (as spreadsheet programs write "Unicode
text"); any other encoding (Latin-1, Windows-1252) is an error that names the file and line and
asks to re-encode the file as UTF-8. A header naming a column twice is an error. Text cells
that storyeval neutralised against spreadsheet formulas (``'-ROUGE``) are read back as they were
(``-ROUGE``; the rule is in `storyeval._csv`).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval._csv import restore_frame
from storyeval._optional import import_optional
from storyeval.data.ids import make_story_id
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


def check_input_file(path: str | Path) -> Path:
    """``path`` as a Path; an error naming it when it does not exist or is a folder."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if path.is_dir():
        raise InputError(f"{path}: is a folder, not a file; give the file inside it")
    return path


def _encoding(head: bytes) -> str:
    """UTF-16 when the bytes start with a UTF-16 byte-order mark, else UTF-8 (BOM optional)."""
    return "utf-16" if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE) else "utf-8-sig"


def decode_text(raw: bytes, source: str) -> str:
    """``raw`` decoded as UTF-8 (BOM optional) or BOM-marked UTF-16; an error naming
    ``source`` and the line of the first undecodable byte otherwise."""
    encoding = _encoding(raw)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        fixed = Path(source).with_name(f"{Path(source).stem}-utf8{Path(source).suffix}")
        how = (f"re-encode the file as UTF-8, e.g. iconv -f latin1 -t utf-8 {source} > {fixed}"
               if encoding != "utf-16" else "the file is cut or not UTF-16: save it again as "
               "UTF-8")
        raise InputError(
            f"{source}, line {line}: not {'UTF-16' if encoding == 'utf-16' else 'UTF-8'} text "
            f"(byte 0x{raw[exc.start]:02x}); storyeval reads UTF-8 (with or without BOM) or "
            f"UTF-16 with a BOM: {how}") from None


def check_utf8(raw: bytes, source: str) -> None:
    """`decode_text`'s check of UTF-8 ``raw`` (BOM optional) without holding the decoded text
    (pieces of 16 MB); the same error naming the line of the first undecodable byte."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    view = memoryview(raw)
    step = 2**24
    try:
        for lo in range(0, max(len(raw), 1), step):
            decoder.decode(view[lo:lo + step], final=lo + step >= len(raw))
    except UnicodeDecodeError:
        decode_text(raw, source)  # raises the error that names the line
        raise


def read_text(path: str | Path) -> str:
    """The text of a file, decoded as `decode_text` says."""
    path = check_input_file(path)
    return decode_text(path.read_bytes(), str(path))


def _check_header(names: Sequence[str], source: str) -> None:
    """An error naming the first column that the header gives twice."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names, start=1):
        if name in seen:
            raise InputError(f"{source}, line 1: column {name!r} appears twice in the header "
                             f"(columns {seen[name]} and {i}); give each column once")
        seen[name] = i


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _read_delimited(data: bytes, source: str, fmt: str) -> pd.DataFrame:
    """Parse a CSV/TSV file from its UTF-8 bytes; cells that storyeval neutralised on writing
    (``'=...``, `storyeval._csv`) are restored."""
    frame = _parse_delimited(data, source, fmt)
    if _may_hold_neutralised(data):
        frame = restore_frame(frame)
    return frame


# quotes and a spreadsheet trigger at the start of a cell or header name (storyeval._csv)
_NEUTRALISED = re.compile(rb"'+[=+\-@\t\r]")


def _may_hold_neutralised(data: bytes) -> bool:
    """Whether a cell of ``data`` may start with quotes and a trigger: a quote right after a
    delimiter, a line break or an opening double quote (found with ``bytes.find``: a few passes
    at memory speed, where a regular expression tried at every byte took 5 s for 166 MB)."""
    if b"'" not in data:
        return False
    if _NEUTRALISED.match(data):
        return True
    for lead in (b",'", b"\t'", b"\n'", b"\"'", b"\r'"):
        i = data.find(lead)
        while i != -1:
            if _NEUTRALISED.match(data, i + 1):
                return True
            i = data.find(lead, i + 1)
    return False


def _parse_delimited(data: bytes, source: str, fmt: str) -> pd.DataFrame:
    """Parse a CSV/TSV file from its UTF-8 bytes (which the parsers read about twice as fast as
    a Python string)."""
    sep = "," if fmt == "csv" else "\t"
    if not data.strip():
        raise InputError(f"{source}: the file is empty")
    # the header: the first record of the first megabyte (a record may hold quoted newlines)
    head = data[:2**20].decode("utf-8", errors="ignore")
    _check_header(next(csv.reader(io.StringIO(head), delimiter=sep)), source)
    if len(data) >= _ARROW_MIN_BYTES:
        frame = _read_delimited_arrow(data, sep)
        if frame is not None:
            return frame
    try:
        return pd.read_csv(io.BytesIO(data), sep=sep, keep_default_na=True, encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise InputError(f"{source}: the file is empty") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise InputError(f"{source}: cannot be read as {fmt}: {_one_line(exc)}") from None


# Files from this size are parsed by pyarrow's multi-threaded CSV reader when pyarrow is
# installed. Smaller files keep pandas' C parser, whose messages name the line of a malformed
# row; a file pyarrow cannot parse also goes to the C parser, for that message.
_ARROW_MIN_BYTES = 8 * 2**20

# pandas' default missing-value markers (read_csv's keep_default_na=True)
_PANDAS_NA = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
              "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")


def _read_delimited_arrow(data: bytes, sep: str) -> pd.DataFrame | None:
    """UTF-8 ``data`` parsed by pyarrow as pandas' C parser would type it (pandas' missing
    markers, no dates or times: such columns stay text), or None without pyarrow or when
    pyarrow cannot parse it."""
    try:
        import pyarrow as pa
        from pyarrow import csv as pa_csv
    except ImportError:
        return None

    def parse(column_types: dict) -> pa.Table:
        return pa_csv.read_csv(io.BytesIO(data), parse_options=pa_csv.ParseOptions(delimiter=sep),
                               convert_options=pa_csv.ConvertOptions(
                                   null_values=list(_PANDAS_NA), strings_can_be_null=True,
                                   column_types=column_types))

    try:
        table = parse({})
        temporal = {f.name: pa.string() for f in table.schema if pa.types.is_temporal(f.type)}
        if temporal:  # pyarrow infers dates and times; pandas reads them as text
            table = parse(temporal)
    except (pa.ArrowException, ValueError):
        return None
    frame = table.to_pandas()
    del table
    release_arrow_memory()
    for name in frame.columns:  # an all-missing column: float NaN, as pandas reads it
        if frame[name].dtype == object and frame[name].isna().all():
            frame[name] = np.nan
    return frame


_JSONL_HINT = ("JSON Lines expected: one JSON object per line, one line per row, e.g. "
               "{\"story_id\": \"A/1\", \"measure\": \"m\", \"value\": 0.5} (pandas: "
               "to_json(orient='records', lines=True))")


def _jsonl_record(line: str, where: str) -> dict:
    """One JSON Lines row; an error saying what the line is instead."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        text = line.strip()
        what = ("the start of a JSON array" if text.startswith("[") else "the start of a "
                "JSON document spread over several lines" if text == "{" else
                f"not valid JSON ({exc.msg}, column {exc.colno})")
        raise InputError(f"{where}: {what}; {_JSONL_HINT}") from None
    if isinstance(record, list):
        raise InputError(f"{where}: a JSON array, not an object; {_JSONL_HINT}")
    if not isinstance(record, dict):
        raise InputError(f"{where}: {type(record).__name__} {line.strip()[:30]!r}, not an "
                         f"object; {_JSONL_HINT}")
    if record and all(isinstance(v, (dict, list)) for v in record.values()):
        raise InputError(f"{where}: an object of columns (column-oriented JSON, one value "
                         f"per row inside each column), not one row; {_JSONL_HINT}")
    return record


def first_seen(values) -> list:
    """The distinct values of a column in order of first appearance, as Python objects (what
    ``list(dict.fromkeys(values))`` gives, without iterating millions of values one by one)."""
    return pd.unique(pd.Series(values)).tolist()


def release_arrow_memory() -> None:
    """Give the pages pyarrow's allocator keeps for reuse back to the system: after reading a
    table of millions of rows it holds over a gigabyte that the statistics never use (pandas'
    string columns and pyarrow's CSV reader allocate there). A no-op when pyarrow is not
    loaded."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()


def _read_jsonl(text: str, source: str) -> pd.DataFrame:
    if not text.strip():
        raise InputError(f"{source}: the file is empty")
    records = [_jsonl_record(line, f"{source}, line {i}")
               for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
    return pd.DataFrame.from_records(records)


def read_table(path: str | Path, *, format: str | None = None) -> tuple[pd.DataFrame, str]:
    """Read a CSV / TSV / JSONL / Parquet file into a DataFrame; returns it and its format.

    Text files are UTF-8 (BOM optional) or UTF-16 with a BOM (see the module docstring);
    errors name the file and, where it helps, the line: a folder, another encoding, a column
    named twice in the header, a JSON array or column-oriented JSON given as JSON Lines.
    """
    path = check_input_file(path)
    fmt = _format_of(path, format)
    if fmt == "parquet":
        import_optional("pyarrow", extra="parquet", purpose="reading Parquet files")
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: cannot be read as parquet: {_one_line(exc)}") from None
        _check_header([str(c) for c in frame.columns], str(path))
        return frame, fmt
    raw = path.read_bytes()
    if fmt == "jsonl" or _encoding(raw) == "utf-16":
        text = decode_text(raw, str(path))
        if fmt == "jsonl":
            return _read_jsonl(text, str(path)), fmt
        return _read_delimited(text.encode("utf-8"), str(path), fmt), fmt
    # UTF-8 files are checked in pieces and parsed from their own bytes (without the
    # byte-order mark): a decoded copy of a large file would double its memory
    check_utf8(raw, str(path))
    return _read_delimited(raw.removeprefix(codecs.BOM_UTF8), str(path), fmt), fmt


def row_label(source: str, index: int, fmt: str | None) -> str:
    """How a user finds data row ``index`` (0-based) of ``source``: a line or a row number."""
    return _row_label(source, index, fmt)


def validate_scores(
    frame: pd.DataFrame,
    *,
    source: str = "scores",
    fmt: str | None = None,
    require: Sequence[str] = ("system", "prompt_id", "measure", "value"),
) -> pd.DataFrame:
    """Check and normalise a tidy score table; returns a clean copy.

    Checks, each with an error naming ``source``, the column and the row: no rows; missing
    columns; an empty ``prompt_id`` (integer ids stay integers, others are strings); ``value`` not numeric (empty cells are missing values,
    kept as NaN); one ``story_id`` with several (system, prompt_id); duplicate (story, measure).

    Every check is vectorised (string checks run on the distinct values), so a table of
    millions of rows is validated in seconds.
    """
    return _validate_scores(frame, source, fmt, require)[0]


def _validate_scores(frame: pd.DataFrame, source: str, fmt: str | None,
                     require: Sequence[str]) -> tuple[pd.DataFrame, dict]:
    """`validate_scores` and the integer codes it computed on the way (``"story"``: codes of
    the distinct (system, prompt_id) with their values; ``"measure"``), for reuse."""
    codes: dict = {}
    if len(frame) == 0:
        raise InputError(f"{source}: no rows")
    frame = frame.copy()
    if "story_id" not in frame.columns and {"system", "prompt_id"} <= set(frame.columns):
        frame.insert(0, "story_id", None)  # filled after prompt_id is checked
    _drop_blank_story_columns(frame)
    if "system" in require and "story_id" in frame.columns and not (
            {"system", "prompt_id"} & set(frame.columns)):
        split_story_ids(frame, source, fmt)
    missing = [c for c in require if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; found {list(frame.columns)}")
    if "prompt_id" in frame.columns:
        frame["prompt_id"] = prompt_column(frame["prompt_id"], source, fmt)
    if "system" in frame.columns:
        frame["system"] = _string_column(frame["system"], "system", source, fmt)
    if "story_id" in frame.columns:
        if {"system", "prompt_id"} <= set(frame.columns):
            codes["story"] = _pair_codes(frame["system"], frame["prompt_id"])
        if frame["story_id"].isna().all() and "story" in codes:
            # ids "{system}/{prompt_id}" of checked, non-empty systems: never empty
            story, systems, prompts = codes["story"]
            ids = np.array([make_story_id(a, b) for a, b in zip(systems, prompts)], dtype=object)
            frame["story_id"] = pd.Series(ids[story], index=frame.index).astype(str)
            codes["story_id"] = (story, ids)  # one story per (system, prompt_id) pair
        else:
            frame["story_id"] = _string_column(frame["story_id"], "story_id", source, fmt)
    frame["measure"] = _string_column(frame["measure"], "measure", source, fmt)
    codes["measure"] = pd.factorize(frame["measure"])
    about = frame[[c for c in ("story_id", "measure") if c in frame.columns]]
    frame["value"] = _numeric_column(frame["value"], "value", source, fmt, about)
    _check_unique(frame, source, fmt, codes)
    if "story" in codes and "story_id" not in codes:
        _canonical_story_ids(frame, source, fmt, codes)
    return frame.reset_index(drop=True), codes


def _drop_blank_story_columns(frame: pd.DataFrame) -> None:
    """The rule for story columns left blank: with a ``story_id`` column, ``system`` and
    ``prompt_id`` columns that are empty in every row (as `storyeval score` 0.1.0 wrote them for
    stories given by ``story_id`` alone) are treated as absent, in place, so the story ids
    say the story; a column empty in only some rows stays an error naming the row."""
    if "story_id" not in frame.columns or frame["story_id"].isna().all():
        return
    for name in ("system", "prompt_id"):
        if name in frame.columns and (frame[name].isna()
                                      | (frame[name].astype(str).str.strip() == "")).all():
            del frame[name]


def _canonical_story_ids(frame: pd.DataFrame, source: str, fmt: str | None,
                         codes: dict) -> None:
    """A file with ``system`` and ``prompt_id`` and its own ``story_id`` (e.g. ``gen0-item3``):
    the story is its (system, prompt_id), so the ids become storyeval's ``SYSTEM/PROMPT`` and
    the file joins any dataset on its stories, whatever its own id scheme. Checked again for
    duplicates: two own ids of one (system, prompt_id) would score one story twice."""
    story, systems, prompts = codes["story"]
    ids = np.array([make_story_id(a, b) for a, b in zip(systems, prompts)], dtype=object)
    frame["story_id"] = pd.Series(ids[story], index=frame.index).astype(str)
    codes["story_id"] = (story, ids)
    _check_unique(frame, source, fmt, codes)


def _pair_codes(first: pd.Series, second: pd.Series) -> tuple[np.ndarray, list, list]:
    """Integer codes of the distinct (first, second) pairs of the rows (in order of
    appearance) and the two values of every distinct pair, via integer codes (factorizing
    pairs of strings as tuples is about 20x slower)."""
    codes_a, values_a = pd.factorize(first)
    codes_b, values_b = pd.factorize(second)
    width = max(len(values_b), 1)
    codes, pairs = pd.factorize(codes_a.astype(np.int64) * width + codes_b)
    values_a, values_b = values_a.tolist(), values_b.tolist()
    return (codes, [values_a[k // width] for k in pairs.tolist()],
            [values_b[k % width] for k in pairs.tolist()])


def string_column(col: pd.Series, name: str, source: str, fmt: str | None) -> pd.Series:
    """``col`` as strings; an empty cell is an error naming the first such row."""
    return _string_column(col, name, source, fmt)


def numeric_column(col: pd.Series, name: str, source: str, fmt: str | None,
                   what: pd.DataFrame | None = None) -> pd.Series:
    """``col`` as floats; empty cells are NaN, any other non-number or an infinite value an
    error naming the row (and its cells of ``what``, e.g. the story)."""
    return _numeric_column(col, name, source, fmt, what)


def split_story_ids(frame: pd.DataFrame, source: str, fmt: str | None) -> None:
    """Add ``system`` and ``prompt_id`` columns from story ids ``"{system}/{prompt_id}"``
    (split at the last ``/``), in place; a story id without ``/`` is an error."""
    ids = _string_column(frame["story_id"], "story_id", source, fmt)
    bad = np.flatnonzero(~ids.str.contains("/", regex=False).to_numpy())
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"{_row_label(source, i, fmt)}: story_id {ids.iloc[i]!r} does not say its system; "
            "give 'system' and 'prompt_id' columns (system-level correlations need them) or "
            "story ids of the form SYSTEM/PROMPT")
    parts = ids.str.rsplit("/", n=1, expand=True)
    frame["system"] = parts[0].to_numpy()
    frame["prompt_id"] = prompt_column(parts[1], source, fmt)


def _string_column(col: pd.Series, name: str, source: str, fmt: str | None) -> pd.Series:
    # checked on the distinct values: a long table repeats its systems and measures
    codes, uniques = pd.factorize(col)
    blank = (pd.Series(uniques, dtype=object).astype(str).str.strip() == "").to_numpy()
    bad = np.flatnonzero((codes < 0) | (blank[codes] if len(blank) else False))
    if len(bad):
        raise InputError(f"{_row_label(source, int(bad[0]), fmt)}: column {name!r} is empty "
                         f"({len(bad)} row(s) in all)")
    return col.astype(str)


def prompt_column(col: pd.Series, source: str, fmt: str | None, name: str = "prompt_id"
                  ) -> pd.Series:
    """Prompt ids: integers when every id is a whole number (``7``, ``"7"``, ``7.0``), else
    strings (``"item-7"``); an empty id is an error naming the row."""
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        numeric = pd.to_numeric(col, errors="coerce")
    else:  # text: converted on the distinct ids (a long table repeats each many times)
        codes, uniques = pd.factorize(col)  # a missing id has code -1: the NaN appended
        distinct = np.append(pd.to_numeric(pd.Series(uniques, dtype=object), errors="coerce")
                             .to_numpy(dtype=np.float64), np.nan)
        numeric = pd.Series(distinct[codes], index=col.index, name=col.name)
    if (numeric.notna() & (numeric == np.round(numeric))).all():
        return numeric.astype(np.int64)
    return _string_column(col, name, source, fmt).str.strip()


def _numeric_column(col: pd.Series, name: str, source: str, fmt: str | None,
                    what: pd.DataFrame | None = None) -> pd.Series:
    """``col`` as floats; a non-number or an infinite value is an error naming the row (and
    the row's cells of ``what``, e.g. its story and measure)."""
    refuse_non_real(col, name, source, fmt)
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        numeric = col.astype(float)  # parsed as numbers already: only infinities to check
    else:
        numeric = pd.to_numeric(col, errors="coerce")
        # blank markers, checked on the distinct values
        codes, uniques = pd.factorize(col)
        text = pd.Series(uniques, dtype=object).astype(str).str.strip()
        blank_unique = text.isin(["", "nan", "NaN", "NA"]).to_numpy()
        blank = (codes < 0) | (blank_unique[codes] if len(uniques) else False)
        bad = np.flatnonzero(numeric.isna().to_numpy() & ~blank)
        if len(bad):
            i = int(bad[0])
            raise InputError(f"{_row_label(source, i, fmt)}: column {name!r} is not a number: "
                             f"{col.iloc[i]!r} ({len(bad)} row(s) in all)")
        numeric = numeric.astype(float)
    infinite = np.flatnonzero(np.isinf(numeric.to_numpy()))
    if len(infinite):
        i = int(infinite[0])
        cells = {} if what is None else what.iloc[i].to_dict()
        about = "".join(f"{c} {_plain(v)!r}; " for c, v in cells.items())
        raise InputError(f"{_row_label(source, i, fmt)}: column {name!r} is infinite: "
                         f"{col.iloc[i]} ({about}{len(infinite)} row(s) in all); values must "
                         "be finite numbers (an empty cell is a missing value)")
    return numeric


_NOT_REAL = {"boolean": "a true/false value", "complex": "a complex number",
             "datetime": "a date or time", "datetime64": "a date or time", "date": "a date",
             "time": "a time of day", "timedelta": "a duration", "timedelta64": "a duration",
             "period": "a period"}


def _non_real_kind(value: object) -> str | None:
    import datetime

    if isinstance(value, (bool, np.bool_)):
        return "a true/false value"
    if isinstance(value, (complex, np.complexfloating)):
        return "a complex number"
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta, np.datetime64,
                          np.timedelta64)):
        return "a date, time or duration"
    return None


def refuse_non_real(col: pd.Series, name: str, source: str, fmt: str | None) -> None:
    """An error naming the row when a column of ratings or scores holds true/false values,
    complex numbers, dates, times or durations (from a DataFrame or a Parquet/JSONL file): they
    are never read as numbers (no silent 0/1, real part or nanoseconds). Text columns (CSV)
    are left to the number check. The column's type is inferred once (``infer_dtype``, in C);
    only a column of mixed Python objects is scanned value by value."""
    inferred = pd.api.types.infer_dtype(col, skipna=True)
    what = _NOT_REAL.get(inferred)
    if what is None and inferred.startswith("mixed"):
        # every value (not the distinct ones: True == 1 would hide behind a 1)
        what = next((k for k in map(_non_real_kind, col.to_numpy(dtype=object)) if k), None)
    if what is None:
        return
    values = col.to_numpy(dtype=object)
    i = next((j for j, v in enumerate(values) if _non_real_kind(v) or inferred in _NOT_REAL
              and not pd.isna(v)), 0)
    raise InputError(f"{_row_label(source, i, fmt)}: column {name!r} holds {what} "
                     f"({_plain(values[i])!r}), not a number; give numbers (an empty cell is a "
                     "missing value)")


def _plain(value: object) -> object:
    """A numpy scalar as the Python value (``7``, not ``np.int64(7)``, in messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _check_unique(frame: pd.DataFrame, source: str, fmt: str | None,
                  codes: dict | None = None) -> None:
    if "story_id" not in frame.columns:
        return
    codes = codes or {}
    # duplicates among integer codes of (story, measure): no hashing of string pairs
    story_codes, stories = codes.get("story_id") or pd.factorize(frame["story_id"])
    measure_codes, measures = codes.get("measure") or pd.factorize(frame["measure"])
    key = story_codes.astype(np.int64) * max(len(measures), 1) + measure_codes
    dup = _duplicated(key)
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
        # one (system, prompt_id) per story: every row's pair is its story's first pair
        pair_codes = (codes.get("story") or _pair_codes(frame["system"], frame["prompt_id"]))[0]
        first_pair = np.full(len(stories), -1, dtype=np.int64)
        first_pair[story_codes[::-1]] = pair_codes[::-1]
        clash = np.unique(story_codes[pair_codes != first_pair[story_codes]])
        if len(clash):
            raise InputError(f"{source}: story_id {min(stories[clash])!r} has several "
                             f"(system, prompt_id) values")


def _duplicated(key: np.ndarray) -> np.ndarray:
    """Rows whose non-negative integer key occurs more than once (counting when the key range
    is small, hashing otherwise)."""
    top = int(key.max(initial=-1)) + 1
    if top <= 8 * key.size + 2**20:
        return np.bincount(key, minlength=top)[key] > 1
    return pd.Series(key).duplicated(keep=False).to_numpy()


def _pivot_scores(frame: pd.DataFrame, codes: dict) -> pd.DataFrame:
    """The validated long table as a wide float table: one row per (system, prompt_id), one
    column per measure in file order, NaN where a story lacks a measure. Filled through integer
    codes (a pandas pivot of millions of rows hashes every row several times)."""
    story_codes, systems, prompts = codes["story"]
    measure_codes, measures = codes["measure"]
    values = np.full((len(systems), len(measures)), np.nan)
    values[story_codes, measure_codes] = frame["value"].to_numpy(dtype=np.float64)
    index = pd.MultiIndex.from_arrays(
        [pd.Index(systems, dtype=frame["system"].dtype),
         pd.Index(prompts, dtype=frame["prompt_id"].dtype)], names=["system", "prompt_id"])
    return pd.DataFrame(values, index=index, columns=pd.Index(measures))


def sort_stories(table: pd.DataFrame, systems: list, prompts: list) -> pd.DataFrame:
    """Rows ordered by system (in the given order), then by prompt: integer ids numerically,
    other ids in the given (file) order. A table already in that order is returned as a
    shallow copy (no rows moved)."""
    if all(isinstance(p, (int, np.integer)) for p in prompts):
        prompts = sorted(prompts)
    sys_codes = _level_positions(table.index, "system", systems)
    prompt_codes = _level_positions(table.index, "prompt_id", prompts)
    key = (sys_codes.astype(np.int64) + 1) * (len(prompts) + 1) + (prompt_codes + 1)
    if bool((key[1:] >= key[:-1]).all()):
        return table.copy(deep=False)  # what the stable sort below would give
    return table.iloc[np.lexsort((prompt_codes, sys_codes))]


def _level_positions(index: pd.Index, name: str, values: list) -> np.ndarray:
    """``pd.Categorical(index.get_level_values(name), categories=values).codes``: each row's
    position in ``values`` (-1 when absent), through a MultiIndex's codes when it has them
    (one look-up per distinct value, not per row)."""
    if isinstance(index, pd.MultiIndex):
        level = index.names.index(name)
        codes = index.codes[level]
        if len(values) == len(set(values)):
            rank = pd.Categorical(index.levels[level], categories=values).codes
            return np.append(rank, -1)[codes]  # a missing value's code -1 stays -1
    return pd.Categorical(index.get_level_values(name), categories=values).codes


def _check_same_prompts(table: pd.DataFrame, source: str) -> None:
    """Every system of the table has the same set of prompts (else an error naming the first
    system that differs, the prompts it lacks and the extra ones)."""
    if _same_prompt_sets(table.index):
        return
    level = table.index.get_level_values
    prompts = pd.Series(level("prompt_id")).groupby(level("system"), sort=False).agg(frozenset)
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


def _same_prompt_sets(index: pd.Index) -> bool:
    """True when every system has the same prompts, decided on a MultiIndex's integer codes
    (a systems x prompts presence table); False when not, or when undecided here (no codes,
    a missing value, too large a table): the caller then checks on the values."""
    if not isinstance(index, pd.MultiIndex) or list(index.names) != ["system", "prompt_id"]:
        return False
    sys_codes, prompt_codes = index.codes
    shape = (len(index.levels[0]), len(index.levels[1]))
    if len(sys_codes) == 0 or shape[0] * shape[1] > 8 * len(sys_codes) + 2**20 \
            or sys_codes.min() < 0 or prompt_codes.min() < 0:
        return False
    present = np.zeros(shape, dtype=bool)
    present[sys_codes, prompt_codes] = True
    present = present[np.bincount(sys_codes, minlength=shape[0]) > 0]
    return bool((present == present[:1]).all())


def read_score_table(path: str | Path, *, format: str | None = None) -> pd.DataFrame:
    """Read and validate a tidy score table that needs only ``story_id, measure, value``
    (e.g. the output of ``storyeval score``, to be joined with a dataset)."""
    frame, fmt = read_table(path, format=format)
    return validate_scores(frame, source=str(path), fmt=fmt,
                           require=("story_id", "measure", "value"))


def __getattr__(name: str):
    # scores_to_dataset and read_scores build Datasets: they live in storyeval.data.scores, so
    # that this module (which storyeval.data.dataset uses to validate) does not import Dataset.
    if name in ("scores_to_dataset", "read_scores"):
        import importlib
        import warnings

        warnings.warn(f"storyeval.data.io.{name} moved to storyeval.data.scores.{name}",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module("storyeval.data.scores"), name)
    raise AttributeError(f"module 'storyeval.data.io' has no attribute {name!r}")
