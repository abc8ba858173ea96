"""Human ratings in long form: one row per (story, criterion, annotator) rating.

Schema (CSV, TSV, JSONL or Parquet; see ``docs/own-data.md``):

    system,prompt_id,criterion,annotator,value
    model-a,17,Overall,r1,4

- the story: ``system`` and ``prompt_id`` columns, or a ``story_id`` of the form
  ``SYSTEM/PROMPT``;
- ``criterion``: any name; the criteria of the dataset are the ones found, in file order;
- ``annotator``: who (or which annotator slot) gave the rating; optional when every story has
  one rating per criterion;
- ``value``: a number (an empty cell is a missing rating: counted and reported, never imputed).

The per-story human score of a criterion is the mean of the story's available ratings. How many
annotators rated each story may vary (ragged data); `ratings_summary` states it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval.data.catalogue import annotator_row, catalogue_frame, criterion_row
from storyeval.data.dataset import Dataset
from storyeval.data.io import (
    first_seen,
    numeric_column,
    prompt_column,
    row_label,
    sort_stories,
    split_story_ids,
    string_column,
)
from storyeval.exceptions import InputError, SuspiciousDataWarning

RATING_COLUMNS = ("system", "prompt_id", "criterion", "annotator", "value")
SLOT_MODES = ("auto", "ids", "slots")


def is_ratings_table(columns: Sequence[str]) -> bool:
    """Whether a table's columns follow the long ratings schema."""
    names = set(columns)
    return "value" in names and bool({"criterion", "annotator"} & names) \
        and "measure" not in names


def validate_ratings(frame: pd.DataFrame, *, source: str = "ratings",
                     fmt: str | None = None) -> pd.DataFrame:
    """A clean copy of a long ratings table (columns `RATING_COLUMNS`).

    Errors name ``source``, the column and the row: no rows; a missing column; an empty story,
    criterion or annotator; a value that is not a number; one rating given twice.
    """
    if len(frame) == 0:
        raise InputError(f"{source}: no rows")
    frame = frame.copy()
    if not {"system", "prompt_id"} <= set(frame.columns):
        if "story_id" not in frame.columns:
            raise InputError(f"{source}: the story of each rating is unknown: give 'system' and "
                             f"'prompt_id' columns (or 'story_id'); found {list(frame.columns)}")
        split_story_ids(frame, source, fmt)
    missing = [c for c in ("criterion", "value") if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; found {list(frame.columns)}")
    if "annotator" not in frame.columns:
        frame["annotator"] = "1"
    frame["system"] = string_column(frame["system"], "system", source, fmt)
    frame["prompt_id"] = prompt_column(frame["prompt_id"], source, fmt)
    frame["criterion"] = string_column(frame["criterion"], "criterion", source, fmt).str.strip()
    frame["annotator"] = string_column(frame["annotator"], "annotator", source, fmt)
    frame["value"] = numeric_column(frame["value"], "value", source, fmt,
                                    frame[["system", "prompt_id", "criterion", "annotator"]])
    frame = frame.loc[:, list(RATING_COLUMNS)].reset_index(drop=True)
    dup = frame.duplicated(["system", "prompt_id", "criterion", "annotator"], keep=False)
    if dup.any():
        rows = np.flatnonzero(dup.to_numpy())[:2]
        first = frame.iloc[rows[0]]
        raise InputError(
            f"{source}: annotator {first['annotator']!r} rated story "
            f"{first['system']}/{first['prompt_id']} on {first['criterion']!r} twice, at "
            f"{row_label(source, int(rows[0]), fmt)} and "
            f"{row_label(source, int(rows[1]), fmt).split(', ')[-1]}"
            + ("" if "annotator" in frame.columns else "; add an 'annotator' column"))
    return frame


def to_slots(ratings: pd.DataFrame) -> pd.DataFrame:
    """Ratings with ``annotator`` replaced by the rating's rank within its (story, criterion)
    in file order (``"1"``, ``"2"``, ...): annotator slots, as HANNA's "annotator 1..3"."""
    keys = [ratings["system"], ratings["prompt_id"], ratings["criterion"]]
    slot = ratings.groupby(keys, sort=False).cumcount() + 1
    return ratings.assign(annotator=slot.astype(str).to_numpy())


def _use_slots(ratings: pd.DataFrame, annotators: str) -> bool:
    if annotators not in SLOT_MODES:
        raise InputError(f"annotators must be one of {SLOT_MODES}, got {annotators!r}")
    if annotators != "auto":
        return annotators == "slots"
    # More distinct annotators than ratings of any one story: ids are people who each rated a
    # few stories, and one column per person would be nearly empty.
    per_story = ratings.groupby(["system", "prompt_id", "criterion"], sort=False).size().max()
    return ratings.groupby("criterion")["annotator"].nunique().max() > per_story


def ratings_to_dataset(ratings: pd.DataFrame, *, name: str = "custom",
                       source: str = "ratings", fmt: str | None = None,
                       annotators: str = "auto", reference_system: str | None = None,
                       require_same_prompts: bool = True) -> Dataset:
    """A [`Dataset`][] of human judgments from a long ratings table.

    Parameters
    ----------
    ratings : DataFrame
        Long ratings (see the module docstring); validated with `validate_ratings`.
    name, source, fmt
        Dataset name; file name and format used in error messages.
    annotators : {"auto", "ids", "slots"}, default "auto"
        ``"ids"``: one column per annotator id (the same person across stories). ``"slots"``:
        the k-th rating of each story (in file order) goes to slot k, whoever gave it (crowd
        work where different people rate different stories). ``"auto"``: slots when there are
        more distinct annotators than ratings of any story, ids otherwise. The choice is
        written into `Dataset.notes`.
    reference_system : str, optional
        A system whose stories are references (left out by meta-evaluation unless asked).
    require_same_prompts : bool, default True
        Every system must have the same prompts.

    Returns
    -------
    Dataset
        One column per criterion (the mean of the story's available ratings) and one per
        (criterion, annotator): ``"{criterion} [{annotator}]"``.

    Examples
    --------
    >>> import pandas as pd
    >>> r = pd.DataFrame({"system": ["A", "A", "B", "B"], "prompt_id": [0, 0, 0, 0],
    ...                   "criterion": "Fun", "annotator": ["x", "y", "x", "y"],
    ...                   "value": [1, 2, 4, 5]})
    >>> ds = ratings_to_dataset(r)
    >>> ds.criteria, ds.annotators()["Fun"], ds.wide()["Fun"].tolist()
    (['Fun'], ['Fun [x]', 'Fun [y]'], [1.5, 4.5])
    """
    ratings = validate_ratings(ratings, source=source, fmt=fmt)
    slots = _use_slots(ratings, annotators)
    if slots:
        ratings = to_slots(ratings)
    crits = first_seen(ratings["criterion"])
    ann_order = first_seen(ratings["annotator"])
    if slots:
        ann_order = sorted(ann_order, key=int)
    cells = ratings.pivot(index=["system", "prompt_id"], columns=["criterion", "annotator"],
                          values="value")
    table, rows = _human_columns(cells, crits, ann_order)
    table = sort_stories(table, first_seen(ratings["system"]),
                         first_seen(ratings["prompt_id"]))
    if require_same_prompts:
        from storyeval.data.io import _check_same_prompts

        _check_same_prompts(table, source)
    _warn_sorted(table, rows, source)
    notes = ratings_notes(ratings, table, crits, slots)
    return Dataset(table, catalogue_frame(rows), name, reference_system=reference_system,
                   notes=tuple(notes))


def _human_columns(cells: pd.DataFrame, crits: list[str], ann_order: list[str]
                   ) -> tuple[pd.DataFrame, list[dict]]:
    """Criterion means then annotator columns, as one float table, and their catalogue rows."""
    columns, rows = {}, []
    for crit in crits:
        block = cells[crit].reindex(columns=[a for a in ann_order if a in cells[crit].columns])
        block = block.loc[:, block.notna().any().to_numpy()]
        columns[crit] = block.mean(axis=1, skipna=True)
        rows.append(criterion_row(crit))
    for crit in crits:
        block = cells[crit].reindex(columns=[a for a in ann_order if a in cells[crit].columns])
        if block.shape[1] < 2:
            continue  # one annotator: the criterion column holds its ratings already
        for ann in block.columns:
            if block[ann].notna().any():
                name = f"{crit} [{ann}]"
                columns[name] = block[ann]
                rows.append(annotator_row(name, crit, ann))
    table = pd.DataFrame(columns, index=cells.index).astype(float)
    return table, rows


def _warn_sorted(table: pd.DataFrame, rows: list[dict], source: str) -> None:
    """Warn when, for a criterion, every story's ratings increase with the annotator order:
    the annotators' identity was probably lost (ratings sorted per story), which changes every
    per-annotator statistic (human baseline, ICC), though not the per-story means."""
    by_crit: dict[str, list[str]] = {}
    for row in rows:
        if row["kind"] == "annotator":
            by_crit.setdefault(str(row["criterion"]), []).append(str(row["measure"]))
    for crit, cols in by_crit.items():
        values = table[cols].to_numpy()
        complete = values[~np.isnan(values).any(axis=1)]
        if len(complete) < 10:
            continue
        steps = np.diff(complete, axis=1)
        if (steps >= 0).all() and (steps > 0).any():
            warnings.warn(
                f"{source}: criterion {crit!r}: in all {len(complete)} fully rated stories the "
                f"ratings never decrease from annotator {cols[0]!r} to {cols[-1]!r}; they look "
                "sorted per story, which loses who gave which rating and biases the human "
                "baseline and ICC (the per-story means are unaffected)",
                SuspiciousDataWarning, stacklevel=3)


def ratings_notes(ratings: pd.DataFrame, table: pd.DataFrame, crits: list[str],
                  slots: bool) -> list[str]:
    """What was understood from the ratings, one sentence per criterion."""
    notes = []
    for crit in crits:
        own = ratings[ratings["criterion"] == crit]
        given = own.dropna(subset=["value"])
        counts = given.groupby(["system", "prompt_id"]).size().reindex(table.index, fill_value=0)
        lo, hi = int(counts.min()), int(counts.max())
        count = f"{lo}" if lo == hi else f"{lo}-{hi} (ragged)"
        missing = int(own["value"].isna().sum())
        notes.append(
            f"{crit}: human score = mean of the story's available ratings; {count} ratings per "
            f"story from {own['annotator'].nunique()} "
            f"{'annotator slots' if slots else 'annotators'}; values "
            f"{given['value'].min():g} to {given['value'].max():g}"
            + (f"; {missing} empty rating(s)" if missing else "")
            + (f"; {int((counts == 0).sum())} stories unrated" if lo == 0 else ""))
    if slots:
        notes.append("annotators: slots (the k-th rating of a story, in file order, is "
                     "annotator k), not people")
    return notes
