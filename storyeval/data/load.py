"""One entry point for any dataset: [`read_dataset`][] reads what a user brings.

Human judgments come from ``data`` (or ``ratings``), in any of these layouts, told apart by
their columns:

- long ratings (``criterion``, ``annotator``, ``value`` and the story), see
  `storyeval.data.ratings`;
- a long score table (``measure``, ``value`` and the story), whose human criteria are named
  with ``criteria``, see `storyeval.data.io`;
- a wide table with a column mapping, see `storyeval.data.wide`;
- HANNA's released wide CSV (a ``Model`` column of JSON lists).

Automatic scores come from any number of ``scores`` files (``story_id`` or ``system`` +
``prompt_id``, ``measure``, ``value``); they are merged, and a (story, measure) given twice is an
error naming both files. Without ``data`` and ``ratings`` the embedded HANNA data is used.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from storyeval.data.dataset import Dataset
from storyeval.data.io import read_table, release_arrow_memory, validate_scores
from storyeval.exceptions import InputError

__all__ = ["merge_score_tables", "read_dataset", "read_human_table", "read_score_files"]


def read_human_table(
    path: str | Path | pd.DataFrame,
    *,
    id: str | Mapping[str, str] | None = None,
    criteria: Sequence[str] = (),
    annotators: Sequence[str] = (),
    measures: Sequence[str] | None = None,
    annotator_mode: str = "auto",
    reference_system: str | None = None,
    require_same_prompts: bool = True,
    format: str | None = None,
    scale: str | Mapping[str, object] | tuple[float, float] | None = None,
    hanna_out_of_scale: str = "keep",
) -> Dataset:
    """A dataset from one file (or DataFrame) of human judgments (and possibly scores), in any
    layout.

    ``scale`` declares the rating scale(s) (`storyeval.data.scales.parse_scale`): a rating
    outside is an error naming its row; without it, values far from the others warn.
    ``hanna_out_of_scale`` applies to a file in HANNA's wide format
    ([`load_hanna`][storyeval.data.hanna.load_hanna]'s ``out_of_scale``)."""
    from storyeval.data.scales import parse_scale

    scales = parse_scale(scale)
    dataset = _read_human_table(path, id=id, criteria=criteria, annotators=annotators,
                                measures=measures, annotator_mode=annotator_mode,
                                reference_system=reference_system,
                                require_same_prompts=require_same_prompts, format=format,
                                scales=scales, hanna_out_of_scale=hanna_out_of_scale)
    return dataset


def _check_long_value(frame: pd.DataFrame, columns: list[str], source: str) -> None:
    """A long table (a ``criterion``, ``annotator`` or ``measure`` column: one row per rating
    or score) without a ``value`` column is an error naming the missing column and the
    ``--id`` mapping that declares it, never read as a wide table of repeated stories."""
    long_roles = [c for c in ("criterion", "annotator", "measure") if c in columns]
    identified = {"system", "prompt_id"} <= set(columns) or "story_id" in columns
    if not long_roles or "value" in columns or not identified:
        return  # (unidentified stories: the wide reader's message names every --id role)
    known = {"system", "prompt_id", "story_id", *long_roles}
    numeric = [c for c in columns if c not in known
               and pd.api.types.is_numeric_dtype(frame[c])]
    example = numeric[0] if numeric else "COLUMN"
    candidates = f" (a numeric column: {', '.join(numeric[:5])})" if numeric else ""
    raise InputError(f"{source}: a long table (column {', '.join(long_roles)}) needs a 'value' "
                     f"column holding the ratings or scores; none is named 'value'"
                     f"{candidates}; name it with --id value={example} (Python: "
                     f"id='value={example}')")


def _read_human_table(path, *, id, criteria, annotators, measures, annotator_mode,
                      reference_system, require_same_prompts, format, scales,
                      hanna_out_of_scale="keep") -> Dataset:
    from storyeval.data.hanna import is_hanna_wide, read_hanna_wide
    from storyeval.data.ratings import is_ratings_table, ratings_to_dataset
    from storyeval.data.wide import parse_id_mapping, rename_roles, wide_to_dataset

    if isinstance(path, pd.DataFrame):
        frame, fmt, name, source = _frame_input(path), None, "data", "data (DataFrame)"
    else:
        _check_path(path, "data")
        path = Path(path)
        if is_hanna_wide(path):
            hanna = read_hanna_wide(path, out_of_scale=hanna_out_of_scale)
            return check_dataset_scales(hanna, scales, str(path)) if scales else hanna
        if id is None and not annotators:  # a large plain long score table: pyarrow's path
            dataset = _read_long_scores_fast(path, format, criteria=criteria,
                                             reference_system=reference_system,
                                             require_same_prompts=require_same_prompts)
            if dataset is not None:
                return check_dataset_scales(dataset, scales, str(path))
        frame, fmt = read_table(path, format=format)
        name, source = path.stem, str(path)
    # --id maps the user's column names to storyeval's roles, in any layout
    frame = rename_roles(frame, parse_id_mapping(id), source)
    columns = [str(c) for c in frame.columns]
    common: dict[str, Any] = {"name": name, "source": source, "fmt": fmt}
    if is_ratings_table(columns) and not annotators:
        if "criterion" in columns:  # checked on the file's rows, so errors name them
            from storyeval.data.io import row_label
            from storyeval.data.scales import check_values

            check_values(frame["value"], frame["criterion"],
                         lambda i: row_label(source, int(i), fmt)[len(source) + 2:],
                         scales=scales, source=source)
        return ratings_to_dataset(frame, annotators=annotator_mode,
                                  reference_system=reference_system,
                                  require_same_prompts=require_same_prompts, **common)
    if not annotators and measures is None:
        _check_long_value(frame, columns, source)
    if "measure" in columns and "value" in columns and not annotators:
        from storyeval.data.scores import scores_to_dataset

        dataset = scores_to_dataset(frame, require_same_prompts=require_same_prompts,
                                    criteria=_declared(criteria, frame["measure"]), **common)
        del frame  # the long table (millions of rows) is not needed by the checks below
        release_arrow_memory()
        return check_dataset_scales(_with_reference(dataset, reference_system), scales,
                                    source)
    dataset = wide_to_dataset(frame, criteria=_declared(criteria, None),
                              annotators=annotators, measures=measures,
                              reference_system=reference_system,
                              require_same_prompts=require_same_prompts, **common)
    return check_dataset_scales(dataset, scales, source)


def _read_long_scores_fast(path: Path, format: str | None, *, criteria, reference_system,
                           require_same_prompts: bool) -> Dataset | None:
    """`storyeval.data.fast_scores.read_long_scores` of a file as a Dataset, or None when the
    file needs the general reader (which then names the file, row and column of a problem)."""
    from storyeval.data.fast_scores import read_long_scores
    from storyeval.data.io import _format_of
    from storyeval.data.scores import dataset_from_pivot

    if not path.is_file():  # the general reader names what it is (a folder, missing, ...)
        return None
    try:
        fmt = _format_of(path, format)
    except InputError:  # an unknown suffix: the general reader gives the message
        return None
    got = read_long_scores(path, fmt)
    if got is None:
        return None
    table, systems, prompts, _ = got
    dataset = dataset_from_pivot(table, systems, prompts, name=path.stem, source=str(path),
                                 require_same_prompts=require_same_prompts,
                                 criteria=_declared(criteria, None))
    return _with_reference(dataset, reference_system)


def check_dataset_scales(dataset: Dataset, scales, source: str) -> Dataset:
    """`storyeval.data.scales.check_values` on a dataset's human ratings: each criterion's
    annotator columns, else its per-story score column; errors name the story and column."""
    from storyeval.data.scales import check_values

    cat = dataset.catalogue
    values, names, columns = [], [], []
    for crit in dataset.criteria:
        cols = cat.loc[(cat["kind"] == "annotator") & (cat["criterion"] == crit), "measure"]
        for col in (cols.tolist() or [crit]):
            values.append(dataset.table[col].to_numpy())
            names.append(crit)
            columns.append(col)
    if not values:
        return dataset
    stories = dataset.table.index
    size = len(stories)

    # a story's label is written only for the few lines an error or warning shows (one
    # string per story and column would cost gigabytes at 10^6 stories)
    def label(i: int) -> str:
        system, prompt = stories[i % size]
        return f"story {system}/{prompt}, column {columns[i // size]!r}"

    kinds = list(dict.fromkeys(names))
    criteria = pd.Categorical.from_codes(np.repeat([kinds.index(c) for c in names], size),
                                         categories=kinds)
    check_values(pd.Series(np.concatenate(values)), pd.Series(criteria), label, scales=scales,
                 source=source)
    return dataset


def _frame_input(frame: pd.DataFrame) -> pd.DataFrame:
    """A DataFrame given as data: its columns as a file would have them (a MultiIndex such as
    ``(system, prompt_id)`` becomes columns)."""
    named = [n for n in frame.index.names if n is not None]
    return frame.reset_index() if named else frame.copy()


def _check_path(path: object, argument: str) -> None:
    if not isinstance(path, (str, Path)):
        raise InputError(f"{argument}: expected a file path or a pandas DataFrame, got "
                         f"{type(path).__name__}")


def _declared(criteria: Sequence[str] | str, available: pd.Series | None) -> list[str]:
    """The criteria a user declared (``"all"`` declares none; a long score table's criteria
    must be among its measures)."""
    names = [c.strip() for c in (criteria.split(",") if isinstance(criteria, str)
                                 else criteria) if c.strip()]
    if [n.lower() for n in names] == ["all"]:
        return []
    return names


def _with_reference(dataset: Dataset, reference_system: str | None) -> Dataset:
    if reference_system is None:
        return dataset
    if reference_system not in dataset.systems:
        raise InputError(f"--reference-system {reference_system!r} is not a system of the "
                         f"data; systems are {dataset.systems[:10]}")
    from dataclasses import replace

    return replace(dataset, reference_system=reference_system)


def read_score_files(paths: Sequence[str | Path | pd.DataFrame]) -> pd.DataFrame:
    """Read and merge score files or DataFrames (``story_id`` or ``system`` + ``prompt_id``,
    ``measure``, ``value``); a (story, measure) present in two of them is an error naming
    both."""
    tables = []
    for i, path in enumerate(paths):
        source = f"scores[{i}] (DataFrame)" if isinstance(path, pd.DataFrame) else str(path)
        tables.append((_read_valid_scores(path, i), source))
    return merge_score_tables(tables)


def merge_score_tables(tables: Sequence[tuple[pd.DataFrame, str]]) -> pd.DataFrame:
    """Concatenate validated score tables; a (story, measure) in two of them is an error."""
    if not tables:
        raise InputError("no score tables to merge")
    keep = ["story_id", "measure", "value"]
    frames = [t.loc[:, keep].assign(_source=src) for t, src in tables]
    merged = pd.concat(frames, ignore_index=True)
    if len(tables) == 1:
        return merged.loc[:, keep]  # validated: no (story, measure) twice within a table
    dup = _duplicated_pairs(merged["story_id"], merged["measure"])
    if dup.any():
        clash = merged[dup].drop_duplicates(["story_id", "measure", "_source"])
        first = clash.iloc[0]
        files = clash[(clash["story_id"] == first["story_id"])
                      & (clash["measure"] == first["measure"])]["_source"].tolist()
        raise InputError(f"measure {first['measure']!r} of story {first['story_id']!r} is in "
                         f"both {files[0]} and {files[-1]} ({int(dup.sum())} duplicated "
                         "row(s) in all); give each (story, measure) once")
    return merged.loc[:, keep]


def _duplicated_pairs(first: pd.Series, second: pd.Series) -> pd.Series:
    """``DataFrame.duplicated([first, second], keep=False)`` through one integer code per
    column (pandas hashes the string pairs: 0.8 s at 3.6 million rows)."""
    from storyeval.data.io import _duplicated

    codes_a, _ = pd.factorize(first)
    codes_b, values_b = pd.factorize(second)
    key = codes_a.astype(np.int64) * max(len(values_b), 1) + codes_b
    return pd.Series(_duplicated(key), index=first.index)


def read_dataset(
    data: str | Path | pd.DataFrame | None = None,
    *,
    ratings: str | Path | pd.DataFrame | None = None,
    scores: Sequence[str | Path | pd.DataFrame] | str | Path | pd.DataFrame = (),
    id: str | Mapping[str, str] | None = None,
    criteria: Sequence[str] | str = (),
    annotators: Sequence[str] | str = (),
    measures: Sequence[str] | None = None,
    annotator_mode: str = "auto",
    reference_system: str | None = None,
    require_same_prompts: bool = True,
    scale: str | Mapping[str, object] | tuple[float, float] | None = None,
    hanna_out_of_scale: str = "keep",
) -> Dataset:
    """Read a dataset from a user's files or DataFrames (see the module docstring).

    Parameters
    ----------
    data : path or DataFrame, optional
        One file (or a DataFrame with the same columns) with the human judgments (and possibly
        the automatic scores), in any layout; a DataFrame's named index levels count as
        columns.
    ratings : path or DataFrame, optional
        An alias of ``data`` for a file of human ratings; give one of the two.
    scores : path, DataFrame or a sequence of them
        Automatic scores joined on the stories; only the stories they cover are kept.
    id, criteria, annotators, measures
        The column mapping (`storyeval.data.wide`). ``id`` maps roles to the file's
        column names in any layout (``"system=model,prompt_id=item,value=score"``; roles
        ``system, prompt_id, story_id, criterion, annotator, value, measure``); ``criteria``
        also names the human criteria of a long score table.
    annotator_mode : {"auto", "ids", "slots"}, default "auto"
        How long ratings' ``annotator`` column is read ([`ratings_to_dataset`][]).
    reference_system : str, optional
        A system whose stories are references of reference-based metrics, left out of
        meta-evaluation unless asked (HANNA: ``Human``, set by its loader).
    require_same_prompts : bool, default True
        Every system must have the same prompts.
    scale : str, mapping or (low, high), optional
        The declared rating scale, for every criterion (``"1-5"``) or per criterion
        (``"Overall=1-5,Fluency=0-10"``; `storyeval.data.scales.parse_scale`): a human rating
        outside it is an [`InputError`][] naming the file's row (long ratings) or the story and
        column. Without it, ratings far outside the others give a warning
        (`storyeval.data.scales`).
    hanna_out_of_scale : {"keep", "missing"}, default "keep"
        HANNA's data (embedded, or a file in its wide format): keep its LLM ratings below the
        1-5 scale (failed-extraction codes) as released, or treat them as missing
        ([`load_hanna`][storyeval.data.hanna.load_hanna]). No effect on other data.

    Examples
    --------
    >>> ds = read_dataset("ratings.csv", scores=["bleu.csv", "mine.csv"])  # doctest: +SKIP
    >>> import pandas as pd
    >>> ratings = pd.DataFrame({"story_id": ["A/0", "A/1", "B/0", "B/1"] * 2,
    ...                         "annotator": ["w1"] * 4 + ["w2"] * 4, "criterion": "Quality",
    ...                         "value": [1, 2, 3, 4, 2, 2, 4, 5]})
    >>> read_dataset(ratings).systems
    ['A', 'B']
    """
    from storyeval.data.scales import parse_scale

    if data is not None and ratings is not None:
        raise InputError("give the human judgments once: --data or --ratings, not both")
    source = data if data is not None else ratings
    if source is None:
        if id is not None or annotators or measures is not None:
            raise InputError("--id, --annotators and --measures describe a file given with "
                             "--data; without --data the embedded HANNA data is used")
        from storyeval.data.hanna import load_hanna

        dataset = load_hanna(out_of_scale=hanna_out_of_scale)
        if scale is not None:
            check_dataset_scales(dataset, parse_scale(scale), "HANNA")
    else:
        dataset = read_human_table(source, id=id, criteria=criteria, annotators=annotators,
                                   measures=measures, annotator_mode=annotator_mode,
                                   reference_system=reference_system,
                                   require_same_prompts=require_same_prompts, scale=scale,
                                   hanna_out_of_scale=hanna_out_of_scale)
    paths = [scores] if isinstance(scores, (str, Path, pd.DataFrame)) else list(scores)
    if paths:
        dataset = join_score_files(dataset, paths)
    release_arrow_memory()
    return dataset


def join_score_files(dataset: Dataset, paths: Sequence[str | Path | pd.DataFrame]) -> Dataset:
    """``dataset.with_scores(read_score_files(paths), source=...)``, the same Dataset, errors
    and warnings, without the long table of all files: each file is validated and made wide on
    its own (a large plain ``system, prompt_id, measure, value`` file by
    `storyeval.data.fast_scores`, straight from its integer codes), and the wide tables are
    joined. Files that share a measure (where a (story, measure) may be in two of them) are
    merged as long tables, whose check names both files."""
    from storyeval.data.dataset import long_counts, long_to_wide

    source = ", ".join("DataFrame" if isinstance(p, pd.DataFrame) else str(p) for p in paths)
    pieces = []
    for i, path in enumerate(paths):
        got = _fast_wide_scores(path)
        if got is None:
            frame = _read_valid_scores(path, i)
            got = long_to_wide(frame), long_counts(frame)
            del frame
        pieces.append(got)
        release_arrow_memory()
    measures = [m for _, counts in pieces for m in counts.index]
    if len(set(measures)) < len(measures):  # a shared measure: the long merge's check
        del pieces
        return dataset.with_scores(read_score_files(paths), source=source)
    new, counts = _joined_wide(pieces)
    del pieces
    return dataset._join_wide(new, counts, how=None, catalogue=None, source=source)


def _read_valid_scores(path: str | Path | pd.DataFrame, i: int) -> pd.DataFrame:
    """One score file (or DataFrame) read and validated (`validate_scores`)."""
    if isinstance(path, pd.DataFrame):
        frame, fmt, source = _frame_input(path), None, f"scores[{i}] (DataFrame)"
    else:
        _check_path(path, "scores")
        frame, fmt = read_table(path)
        source = str(path)
    return validate_scores(frame, source=source, fmt=fmt,
                           require=("story_id", "measure", "value"))


def _fast_wide_scores(path: object) -> tuple[pd.DataFrame, pd.Series] | None:
    """A large plain long score file (`storyeval.data.fast_scores.read_long_scores_counted`)
    as `storyeval.data.dataset.long_to_wide` and `long_counts` give it after
    `validate_scores`, or None (then the general reader names any problem). The story ids are
    written once per story, not per row."""
    from storyeval.data.dataset import story_id_array
    from storyeval.data.fast_scores import read_long_scores_counted
    from storyeval.data.io import _format_of

    if not isinstance(path, (str, Path)) or not Path(path).is_file():
        return None
    try:
        fmt = _format_of(Path(path), None)
    except InputError:
        return None
    got = read_long_scores_counted(path, fmt)
    if got is None:
        return None
    table, _, _, measures, counts = got
    ids = pd.Index(story_id_array(table.index), name="story_id", dtype=object)
    if not ids.is_unique:  # ("a/b", 1) and ("a", "b/1"): the general reader's error
        return None
    # the measures sorted, as the pivot of the long table sorts them (the stories' order
    # does not matter: they are looked up by id)
    string = pd.Series([], dtype=object).astype(str).dtype
    columns = pd.Index(measures, dtype=string, name="measure")
    order = columns.argsort(kind="stable")
    values = table.to_numpy(dtype=np.float64, copy=False)
    del table
    if (order != np.arange(len(order))).any():
        values = values[:, order]
    wide = pd.DataFrame(values, index=ids, columns=columns[order], copy=False)
    return wide, pd.Series(counts, index=pd.Index(measures, name="measure"))


def _joined_wide(pieces: list[tuple[pd.DataFrame, pd.Series]]
                 ) -> tuple[pd.DataFrame, pd.Series]:
    """Wide score tables with distinct measures joined on their story ids (the union),
    columns sorted, and their per-measure row counts one after the other: what
    `storyeval.data.dataset.long_to_wide` and `long_counts` give for the concatenated long
    tables."""
    if len(pieces) == 1:
        return pieces[0]
    counts = pd.concat([c for _, c in pieces])
    ids = pd.Index(pd.concat([w.index.to_series() for w, _ in pieces], ignore_index=True)
                   ).unique().sort_values()
    columns = pd.Index(np.concatenate([w.columns.to_numpy(dtype=object) for w, _ in pieces]),
                       dtype=pieces[0][0].columns.dtype, name="measure")
    values = np.full((len(ids), len(columns)), np.nan)
    start = 0
    for wide, _ in pieces:
        rows = ids.get_indexer(wide.index)
        values[rows, start:start + wide.shape[1]] = wide.to_numpy(dtype=np.float64)
        start += wide.shape[1]
    order = columns.argsort(kind="stable")
    return (pd.DataFrame(values[:, order], index=ids.rename("story_id"),
                         columns=columns[order], copy=False), counts)
