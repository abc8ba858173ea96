"""A fast path for large long score tables (``system, prompt_id, measure, value``) in CSV, TSV
or Parquet: read by pyarrow (multi-threaded CSV reader; Parquet row groups in parallel) with
the text columns dictionary-encoded, validated on their integer codes and distinct values, and
pivoted to the wide table without building a Python string per row. A file in one of the two
regular orders (every measure's rows listing the stories in one order, as ``DataFrame.melt``
writes them, or every story's rows listing the measures in one order) is pivoted by reshaping
its value column once that order is checked on the codes; other orders by per-row codes.

It returns what `storyeval.data.scores.scores_to_dataset` builds from the same file, or None
whenever the file is not a plain valid table of that shape (another layout, a ``story_id``
column, a CSV column besides the four, a value pyarrow cannot read as a number, an empty or
duplicated cell, a byte-order mark, text that is not UTF-8, ...): the caller then reads the
file the general way, whose errors name the file, row and column. So the fast path changes no result and no message; it only skips work on valid input.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["FAST_MIN_BYTES", "LONG_COLUMNS", "read_long_scores", "read_long_scores_counted"]

#: The columns of the tables this path reads (any other column is ignored, as by the pivot).
LONG_COLUMNS = ("system", "prompt_id", "measure", "value")
#: Files from this size take the fast path (smaller ones are read in well under a second).
FAST_MIN_BYTES = 8 * 2**20
#: The largest block pyarrow's CSV reader parses at a time. Its default (1 MiB) makes one
#: dictionary per block for each text column: at 16 million rows (543 blocks) that doubled the
#: reader's CPU time (9 s against 3.4 s with 64 MiB blocks, measured on 2 cores).
CSV_BLOCK_BYTES = 64 * 2**20


def read_long_scores(path: str | Path, fmt: str
                     ) -> tuple[pd.DataFrame, list, list, list[str]] | None:
    """The wide table of a long score file and the file's systems, prompts and measures in
    order of first appearance, or None (then read it with `storyeval.data.io.read_table`).

    Returns
    -------
    table : DataFrame
        One row per (system, prompt_id) (a MultiIndex in order of first appearance of the
        story), one float column per measure in file order, NaN where a story lacks a measure:
        what `storyeval.data.io._pivot_scores` gives for the validated table.
    systems, prompts, measures : lists
        Distinct values in order of first appearance (prompt ids as ``int``).

    Notes
    -----
    Checks done on codes, each sending the file to the general reader when it fails: no
    missing or blank system, prompt or measure (in a CSV, pandas' missing-value markers are
    looked up in each block's dictionary of distinct cells, not cell by cell); prompt ids all
    whole numbers; systems and measures not all numbers (pandas would type them); values
    finite numbers or pandas' missing markers; no (system, prompt_id, measure) twice (in a
    regular order: the stories of one block distinct; else a count per story and measure).
    Validated against the general reader on valid and invalid files, in both regular orders,
    in other orders and over several CSV blocks and Parquet row groups, in
    ``tests/test_fast_read.py``.
    """
    got = read_long_scores_counted(path, fmt)
    return None if got is None else got[:4]


def read_long_scores_counted(path: str | Path, fmt: str
                             ) -> tuple[pd.DataFrame, list, list, list[str], np.ndarray] | None:
    """`read_long_scores` and, per measure (in the order of ``measures``), the number of
    rows the file gives it (a row with an empty value counts: the long table has it), or
    None."""
    path = Path(path)
    try:
        import pyarrow as pa
    except ImportError:
        return None
    if fmt not in ("csv", "tsv", "parquet") or not path.is_file() \
            or path.stat().st_size < FAST_MIN_BYTES:
        return None
    try:
        table = _read_csv(path, fmt) if fmt != "parquet" else _read_parquet(path)
    except (pa.ArrowException, ValueError, OSError):
        return None
    from storyeval.data.io import release_arrow_memory

    release_arrow_memory()  # the reader's freed blocks, before NumPy allocates the pivot's
    if table is None or table.num_rows == 0:
        return None
    try:
        table = _unified(table)  # the original's per-block dictionaries are freed
        result = _pivot(table)
    finally:
        del table
        release_arrow_memory()
    from storyeval._csv import restore_text

    if result is not None and any(isinstance(v, str) and v[:1] == "'" and restore_text(v) != v
                                  for v in [*result[1], *result[2], *result[3]]):
        return None  # names neutralised against spreadsheet formulas: the general reader's
    return result


def _read_csv(path: Path, fmt: str):
    import pyarrow as pa
    from pyarrow import csv as pa_csv

    from storyeval.data.io import _PANDAS_NA

    sep = "," if fmt == "csv" else "\t"
    with path.open("rb") as handle:
        head = handle.read(2**16)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or head[:3] == b"\xef\xbb\xbf":
        return None  # byte-order marks: the general reader's decoding
    try:
        header = next(csv.reader(io.StringIO(head.decode("utf-8", errors="strict")
                                             .split("\n")[0]), delimiter=sep))
    except (UnicodeDecodeError, StopIteration, csv.Error):
        return None
    if not _plain_header(header) or len(header) != len(LONG_COLUMNS):
        return None  # other columns would go unread, their encoding unchecked
    text = pa.dictionary(pa.int32(), pa.string())

    types = {"system": text, "measure": text, "value": pa.float64()}  # prompt ids inferred
    # text cells are not matched against the missing markers one by one (32 million look-ups
    # at 10^6 stories): the few distinct values are, in _has_missing_marker
    table = pa_csv.read_csv(path, read_options=pa_csv.ReadOptions(block_size=_block_size(path)),
                            parse_options=pa_csv.ParseOptions(delimiter=sep),
                            convert_options=pa_csv.ConvertOptions(
                                column_types=types, include_columns=list(LONG_COLUMNS),
                                null_values=list(_PANDAS_NA), strings_can_be_null=False))
    if any(_has_missing_marker(table.column(n)) for n in ("system", "prompt_id", "measure")):
        return None  # pandas reads such a cell as missing: the general reader's error
    return table


def _has_missing_marker(column) -> bool:
    """Whether a text column of a CSV holds one of pandas' missing-value markers (an empty
    cell included), checked on each block's dictionary of distinct values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from storyeval.data.io import _PANDAS_NA

    markers = pa.array(list(_PANDAS_NA))
    if pa.types.is_dictionary(column.type):
        parts = [chunk.dictionary for chunk in column.chunks]
    elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        parts = list(column.chunks)
    else:
        return False  # numbers: the markers were read as nulls
    return any(bool(pc.any(pc.is_in(part, value_set=markers)).as_py()) for part in parts)


def _block_size(path: Path) -> int:
    """Two blocks per thread of pyarrow's pool (blocks are parsed in parallel), at least
    1 MiB and at most `CSV_BLOCK_BYTES`."""
    import pyarrow as pa

    share = path.stat().st_size // (2 * max(pa.cpu_count(), 1))
    return int(max(min(max(share, 2**20), CSV_BLOCK_BYTES), 1))


def _read_parquet(path: Path):
    import pyarrow as pa
    from pyarrow import parquet as pq

    schema = pq.read_schema(path)
    if not _plain_header([str(n) for n in schema.names]):
        return None

    def is_text(t) -> bool:
        if pa.types.is_dictionary(t):
            t = t.value_type
        return pa.types.is_string(t) or pa.types.is_large_string(t)

    types = {n: schema.field(n).type for n in LONG_COLUMNS}
    if not (is_text(types["system"]) and is_text(types["measure"])
            and (is_text(types["prompt_id"]) or pa.types.is_integer(types["prompt_id"]))
            and (pa.types.is_floating(types["value"]) or pa.types.is_integer(types["value"]))):
        return None
    text = [n for n in ("system", "measure", "prompt_id") if is_text(types[n])]
    return pq.read_table(path, columns=list(LONG_COLUMNS), read_dictionary=text)


def _plain_header(names: list[str]) -> bool:
    """Columns of a plain long score table: the four, no story_id (own ids are checked the
    general way), no column named twice, not a ratings table."""
    return (len(set(names)) == len(names) and set(LONG_COLUMNS) <= set(names)
            and "story_id" not in names and not {"criterion", "annotator"} & set(names))


def _codes(column) -> tuple[np.ndarray, np.ndarray] | None:
    """Integer codes (order of first appearance) and distinct values of a dictionary column;
    None when a cell is missing."""
    if column.null_count:
        return None
    column = column.unify_dictionaries()
    if column.num_chunks == 0:
        return None
    dictionary = column.chunk(0).dictionary.to_numpy(zero_copy_only=False)
    chunks = [c.indices.to_numpy(zero_copy_only=False) for c in column.chunks]
    seen = _first_seen(chunks, len(dictionary))
    indices = np.concatenate(chunks)
    del chunks
    if len(seen) < len(dictionary) or (seen != np.arange(len(seen))).any():
        rank = np.full(len(dictionary), -1, dtype=np.int64)
        rank[seen] = np.arange(len(seen))
        indices = rank[indices]  # codes in order of first appearance
    return indices, dictionary[seen]


def _first_seen(chunks: list[np.ndarray], top: int) -> np.ndarray:
    """The distinct keys of ``chunks`` (integers below ``top``) in order of first appearance,
    chunk by chunk, stopping once all ``top`` have appeared."""
    order: list[int] = []
    have: set[int] = set()
    for chunk in chunks:
        for key in pd.unique(chunk).tolist():
            if key not in have:
                have.add(key)
                order.append(key)
        if len(order) == top:
            break
    return np.asarray(order, dtype=np.int64)


def first_seen_codes(keys: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize`` of non-negative integer keys below ``top``: codes numbered in order of
    first appearance and the key of each code, without hashing: the keys themselves when each
    new key is the next number (as pyarrow's dictionaries and sorted files give them), else by
    one scatter and one gather."""
    n = len(keys)
    if n == 0:
        return keys.astype(np.int64), np.zeros(0, dtype=np.int64)
    if keys[0] == 0 and _in_record_order(keys):
        return keys, np.arange(int(keys.max()) + 1, dtype=np.int64)
    first = np.full(top, n, dtype=np.int64)
    first[keys[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)  # the last write wins
    seen = np.flatnonzero(first < n)
    seen = seen[np.argsort(first[seen], kind="stable")]
    rank = np.empty(top, dtype=keys.dtype)
    rank[seen] = np.arange(len(seen))
    return rank[keys], seen


def _in_record_order(keys: np.ndarray) -> bool:
    """Whether every key is at most one more than the largest key before it (so each new key
    is the next number), with one running maximum and no other large temporary."""
    record = np.maximum.accumulate(keys)
    record += 1
    ok = bool(np.less_equal(keys[1:], record[:-1]).all())
    del record
    return ok


def _factorize(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`first_seen_codes` when the keys span a small range, else ``pd.factorize``."""
    low, high = (int(keys.min()), int(keys.max())) if len(keys) else (0, -1)
    if low >= 0 and high < 8 * len(keys) + 2**20:
        if high < 2**31 - 1 and keys.dtype != np.int32:
            keys = keys.astype(np.int32)  # half the memory traffic
        return first_seen_codes(keys, high + 1)
    codes, seen = pd.factorize(keys)
    return codes, np.asarray(seen)


def _text_values(values: np.ndarray) -> list[str] | None:
    """Distinct system or measure names, or None when one is blank or all are numbers (pandas
    would read such a column as numbers and write them back differently)."""
    names = pd.Series(values, dtype=object)
    if (names.str.strip() == "").any():
        return None
    if pd.to_numeric(names, errors="coerce").notna().all():
        return None
    return names.tolist()


def _prompt_values(column) -> tuple[np.ndarray, list, object] | None:
    """Codes (order of first appearance), values and pandas dtype of the prompt ids as the
    general reader types them (whole numbers as int64, else stripped text), or None."""
    import pyarrow as pa

    if column.null_count:
        return None
    if pa.types.is_integer(column.type):
        values = column.to_numpy().astype(np.int64, copy=False)
        low = int(values.min()) if len(values) else 0
        if low:
            values = values - low
        codes, seen = _factorize(values)
        del values
        return codes, (np.asarray(seen, dtype=np.int64) + low).tolist(), np.dtype(np.int64)
    if pa.types.is_floating(column.type):
        return None  # decimal ids: the general reader's rule
    if not pa.types.is_dictionary(column.type):
        column = column.dictionary_encode()
    got = _codes(column)
    if got is None:
        return None
    codes, distinct = got
    names = pd.Series(distinct, dtype=object)
    numeric = pd.to_numeric(names, errors="coerce").to_numpy(dtype=np.float64)
    if not np.isnan(numeric).any():  # numbers: whole ones are integers, as pandas reads them
        if (numeric != np.round(numeric)).any() or np.abs(numeric).max(initial=0) >= 2**53:
            return None
        ids, dtype = numeric.astype(np.int64), np.dtype(np.int64)
    else:  # text ids, stripped
        ids = names.astype(str).str.strip()
        if (ids == "").any():
            return None
        dtype = ids.dtype
        ids = ids.to_numpy(dtype=object)
    same, distinct_ids = pd.factorize(ids)  # "7" and "07", "a" and " a" are one prompt
    if len(distinct_ids) == len(ids):
        return codes, list(ids), dtype
    codes, seen = first_seen_codes(same[codes], len(distinct_ids))
    return codes, list(np.asarray(distinct_ids, dtype=object)[seen]), dtype


def _pivot(table) -> tuple[pd.DataFrame, list, list, list[str], np.ndarray] | None:
    """The wide table, systems, prompts and measures of a read table (text key columns
    dictionary-encoded over one dictionary each, see `_unified`), or None (general reader). Files whose rows repeat one order of stories for each measure (measure-major, as
    ``DataFrame.melt`` writes them) or one order of measures for each story (story-major) are
    pivoted by a reshape of the value column after checking that layout on the raw dictionary
    codes; any other order goes through per-row story codes (`_pivot_rows`)."""
    columns = [table.column(n) for n in ("system", "prompt_id", "measure")]
    if any(c.null_count for c in columns) or table.num_rows == 0:
        return None
    value = table.column("value").to_numpy()
    if value.dtype.kind not in "fiu":
        return None
    if value.dtype != np.float64 or not value.flags.writeable:
        value = value.astype(np.float64)  # pyarrow's own buffer is read-only
    if np.isinf(value).any():
        return None
    raw = [_raw_keys(c) for c in columns]
    if any(r is None for r in raw):
        return None
    layout = _regular_layout(*raw)  # type: ignore[arg-type]
    del raw
    if layout is None:
        return _pivot_rows(table, value)
    return _pivot_blocks(table, value, *layout)


def _unified(table):
    """``table`` with its text key columns dictionary-encoded over one dictionary per column
    (pyarrow gives one per CSV block or Parquet row group): encoded and remapped once here,
    not again by each later step."""
    import pyarrow as pa

    for name in ("system", "prompt_id", "measure"):
        column = table.column(name)
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            column = column.dictionary_encode()
        if pa.types.is_dictionary(column.type):
            table = table.set_column(table.schema.get_field_index(name), name,
                                     column.unify_dictionaries())
    return table


def _raw_keys(column) -> np.ndarray | None:
    """One integer per row, equal for equal cells (dictionary indices over one unified
    dictionary, or the integers themselves): enough to compare rows, not yet codes."""
    import pyarrow as pa

    if pa.types.is_integer(column.type):
        return column.to_numpy()
    if not pa.types.is_dictionary(column.type):
        if pa.types.is_floating(column.type):
            return None  # decimal prompt ids: the general reader's rule
        column = column.dictionary_encode()
    column = column.unify_dictionaries()
    chunks = [c.indices.to_numpy(zero_copy_only=False) for c in column.chunks]
    return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def _regular_layout(system: np.ndarray, prompt: np.ndarray, measure: np.ndarray
                    ) -> tuple[str, int] | None:
    """``("measure", n)`` when the rows are blocks of ``n`` rows, one measure per block, every
    block listing the same (system, prompt_id) cells in the same order; ``("story", k)`` when
    they are blocks of ``k`` rows, one story per block, every block listing the same measures
    in the same order; else None. Cells are compared as written (raw keys), so two spellings
    of one prompt id (``7`` and ``07``) make a file irregular, never wrong."""
    n = len(measure)
    kinds = int(measure.max()) + 1  # at least the number of distinct measures
    first = measure[0]
    other = measure != first
    block = int(np.argmax(other)) if other.any() else n  # rows of the first measure
    del other
    if n % block == 0 and n // block <= kinds:
        blocks = measure.reshape(n // block, block)
        if bool((blocks == blocks[:, :1]).all()) and _distinct(blocks[:, 0]) and all(
                bool((k.reshape(n // block, block)[1:] == k[:block]).all())
                for k in (system, prompt)):
            return "measure", block
    again = measure[1:] == first
    width = int(np.argmax(again)) + 1 if again.any() else n  # measures of the first story
    del again
    if n % width == 0 and 1 < width <= kinds:
        blocks = measure.reshape(n // width, width)
        if bool((blocks == measure[:width]).all()) and _distinct(measure[:width]) and all(
                bool((k.reshape(n // width, width) == k[::width, None]).all())
                for k in (system, prompt)):
            return "story", width
    return None


def _distinct(keys: np.ndarray) -> bool:
    return len(np.unique(keys)) == len(keys)


def _pivot_blocks(table, value: np.ndarray, layout: str, size: int
                  ) -> tuple[pd.DataFrame, list, list, list[str], np.ndarray] | None:
    """`_pivot` of a measure-major or story-major file (see `_regular_layout`): the stories
    are those of the first block (measure-major) or the first row of each block (story-major),
    which must be distinct stories; the values are the value column reshaped."""
    n = table.num_rows
    if layout == "measure":
        stories = table.slice(0, size)
        measure_rows = table.column("measure").take(np.arange(0, n, size))
        wide = value.reshape(n // size, size).T  # pandas keeps a (measures, stories) block
    else:
        stories = table.select(["system", "prompt_id"]).take(np.arange(0, n, size))
        measure_rows = table.column("measure").slice(0, size)
        wide = value.reshape(n // size, size)
    index = _story_index(stories.column("system"), stories.column("prompt_id"))
    got_m = _codes(measure_rows)
    if index is None or got_m is None:
        return None
    story_codes, index, systems, prompts = index
    measures = _text_values(got_m[1])
    if measures is None or len(index) != len(story_codes):
        return None  # a (story, measure) twice
    counts = np.full(len(measures), len(index), dtype=np.int64)  # every cell has its row
    return (pd.DataFrame(wide, index=index, columns=pd.Index(measures), copy=False),
            systems, prompts, measures, counts)


def _story_index(system, prompt) -> tuple[np.ndarray, pd.MultiIndex, list, list] | None:
    """Per row, the code of its story (order of first appearance); the stories as the
    general reader's MultiIndex (system, prompt_id); the distinct systems and prompts in order
    of first appearance. None when a system or prompt id is not one the general reader
    would read the same way."""
    got_s, got_p = _codes(system), _prompt_values(prompt)
    if got_s is None or got_p is None:
        return None
    sys_codes, sys_values = got_s
    prompt_codes, prompts, prompt_dtype = got_p
    systems = _text_values(sys_values)
    if systems is None:
        return None
    width = max(len(prompts), 1)
    kind = np.int64 if len(systems) * width >= 2**31 else np.int32
    pair_key = sys_codes.astype(kind)  # in place below: no 16M-row temporaries
    np.multiply(pair_key, width, out=pair_key, casting="same_kind")
    np.add(pair_key, prompt_codes, out=pair_key, casting="same_kind")
    story_codes, pairs = _factorize(pair_key)
    del pair_key
    string = pd.Series([], dtype=object).astype(str).dtype  # what the general reader gives
    index = _multi_index([pd.Index(np.asarray(systems, dtype=object), dtype=string),
                          pd.Index(np.asarray(prompts, dtype=prompt_dtype if prompt_dtype
                                              == np.int64 else object), dtype=prompt_dtype)],
                         [pairs // width, pairs % width])
    return story_codes, index, systems, prompts


def _multi_index(levels: list[pd.Index], codes: list[np.ndarray]) -> pd.MultiIndex:
    """``pd.MultiIndex.from_arrays([level[code] ...])`` (sorted levels) from distinct level
    values and codes into them, without building and hashing one value per row."""
    sorted_levels, sorted_codes = [], []
    for level, code in zip(levels, codes):
        order = level.argsort(kind="stable")
        rank = np.empty(len(level), dtype=np.int64)
        rank[order] = np.arange(len(level))
        sorted_levels.append(level[order])
        sorted_codes.append(rank[code])
    return pd.MultiIndex(levels=sorted_levels, codes=sorted_codes,
                         names=["system", "prompt_id"], verify_integrity=False)


def _pivot_rows(table, value: np.ndarray
                ) -> tuple[pd.DataFrame, list, list, list[str], np.ndarray] | None:
    """`_pivot` of rows in any order: story and measure codes per row, a duplicate check
    by counting, and one scatter into the wide array."""
    index = _story_index(table.column("system"), table.column("prompt_id"))
    got_m = _codes(table.column("measure"))
    if index is None or got_m is None:
        return None
    story_codes, index, systems, prompts = index
    measure_codes, measure_values = got_m
    measures = _text_values(measure_values)
    if measures is None:
        return None
    kind = np.int64 if len(measures) * len(index) >= 2**31 else np.int32
    key = story_codes.astype(kind)
    np.multiply(key, len(measures), out=key, casting="same_kind")
    np.add(key, measure_codes, out=key, casting="same_kind")
    if np.bincount(key, minlength=len(index) * len(measures)).max(initial=0) > 1:
        return None  # a (story, measure) twice
    counts = np.bincount(measure_codes, minlength=len(measures)).astype(np.int64)
    del story_codes, measure_codes
    wide = np.full((len(index), len(measures)), np.nan)
    wide.reshape(-1)[key] = value  # one flat scatter (a 2-D fancy index costs twice as much)
    del key
    return (pd.DataFrame(wide, index=index, columns=pd.Index(measures)), systems, prompts,
            measures, counts)
