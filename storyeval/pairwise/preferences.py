"""Human preference files: which of two stories people preferred, for any dataset.

A *preference table* (CSV, TSV, JSON lines or Parquet) has one row per preference:

=============  ==========================================================================
column         meaning
=============  ==========================================================================
``story_a``    a story id of the dataset (``"{system}/{prompt_id}"``)
``story_b``    the other story (any story: the two may answer different prompts)
``winner``     ``a``, ``b`` or ``tie`` (case-insensitive; ``same`` is a tie too), or the
               story id of the preferred story
``criterion``  optional: what was judged; without it every row is an overall preference,
               reported under the criterion `OVERALL_PREFERENCE` (``"preference"``)
``annotator``  optional: who judged; one annotator judges a pair once per criterion
``prompt_id``  optional: the prompt of the pair (kept; it is the cluster of the accuracy
               intervals)
=============  ==========================================================================

``dimension`` is accepted as another name of ``criterion``. A preference file is a dataset on
its own: with `preference_scores` (score files ``story_id, measure, value``) it needs no
ratings table (``storyeval pairwise pointwise --preferences FILE --scores FILE``).

A pair may have several rows (several annotators, or repeated rows without an ``annotator``
column): its human preference is the majority (wins minus losses, whichever story was listed
first); a draw, or a majority of ties, makes the pair a human tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval.data.io import read_table, row_label, string_column
from storyeval.exceptions import InputError

__all__ = ["OVERALL_PREFERENCE", "PREFERENCE_COLUMNS", "preference_scores", "read_preferences",
           "validate_preferences"]

#: Required columns of a preference table.
PREFERENCE_COLUMNS: tuple[str, ...] = ("story_a", "story_b", "winner")
#: The criterion of preferences given without a ``criterion`` column.
OVERALL_PREFERENCE = "preference"
_WINNER_WORDS = {"a": "a", "b": "b", "tie": "tie", "same": "tie", "about the same": "tie"}


def validate_preferences(
    frame: pd.DataFrame,
    *,
    source: str = "preferences",
    fmt: str | None = None,
    story_ids: Sequence[str] | pd.Index | None = None,
    missing_hint: str = "",
) -> pd.DataFrame:
    """A clean copy of a preference table (see the module docstring).

    Parameters
    ----------
    frame : DataFrame
        The raw table.
    source, fmt : str
        File name and format (``"csv"``, ``"tsv"``, ``"jsonl"``, ``"parquet"``), for messages
        that name the line or row.
    story_ids : sequence of str, optional
        The stories of the dataset; every ``story_a`` / ``story_b`` must be one of them.
    missing_hint : str
        Appended to the message about a story that is not in ``story_ids``.

    Returns
    -------
    DataFrame
        ``story_a, story_b, winner`` (``"a"``, ``"b"`` or ``"tie"``), ``criterion`` (filled
        with `OVERALL_PREFERENCE` when absent) and ``annotator`` when present. A valid
        table is returned unchanged by a second validation.

    Raises
    ------
    InputError
        Naming ``source``, the column and the line: no rows, a missing column, an empty cell,
        an unknown winner, a pair listed with itself, a story not in ``story_ids``, an
        annotator judging one pair twice on one criterion.
    """
    if len(frame) == 0:
        raise InputError(f"{source}: no rows")
    missing = [c for c in PREFERENCE_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; a preference table has "
                         f"columns story_a, story_b, winner (optional: criterion, annotator); "
                         f"found {[str(c) for c in frame.columns]}")
    if "criterion" not in frame.columns and "dimension" in frame.columns:
        frame = frame.rename(columns={"dimension": "criterion"})
    out = pd.DataFrame({c: string_column(frame[c], c, source, fmt).str.strip().to_numpy()
                        for c in PREFERENCE_COLUMNS})
    for col in ("criterion", "annotator", "prompt_id"):
        if col in frame.columns:
            out[col] = string_column(frame[col], col, source, fmt).str.strip().to_numpy()
    if "criterion" not in out.columns:
        out["criterion"] = OVERALL_PREFERENCE
    _check_self_pairs(out, source, fmt)
    out["winner"] = _canonical_winners(out, source, fmt)
    if story_ids is not None:
        _check_stories(out, pd.Index(story_ids), source, fmt, missing_hint)
    _check_repeats(out, source, fmt)
    columns = ["story_a", "story_b", "winner", "criterion"]
    return out.loc[:, columns + [c for c in ("annotator", "prompt_id") if c in out.columns]]


def _check_self_pairs(prefs: pd.DataFrame, source: str, fmt: str | None) -> None:
    same = np.flatnonzero((prefs["story_a"] == prefs["story_b"]).to_numpy())
    if len(same):
        i = int(same[0])
        raise InputError(f"{row_label(source, i, fmt)}: story_a and story_b are the same story "
                         f"{prefs['story_a'].iloc[i]!r}: a pair listed with itself "
                         f"({len(same)} row(s) in all)")


def _canonical_winners(prefs: pd.DataFrame, source: str, fmt: str | None) -> np.ndarray:
    """``winner`` as ``"a"``, ``"b"`` or ``"tie"``: a word, or the id of story_a / story_b."""
    raw = prefs["winner"]
    word = raw.str.lower().map(_WINNER_WORDS)
    named = np.where(raw == prefs["story_a"], "a", np.where(raw == prefs["story_b"], "b", None))
    winner = word.where(word.notna(), pd.Series(named, index=raw.index))
    bad = np.flatnonzero(winner.isna().to_numpy())
    if len(bad):
        i = int(bad[0])
        raise InputError(
            f"{row_label(source, i, fmt)}: column 'winner' has {raw.iloc[i]!r}: use a, b, tie "
            f"or the id of the preferred story ({prefs['story_a'].iloc[i]!r} or "
            f"{prefs['story_b'].iloc[i]!r}) ({len(bad)} row(s) in all)")
    return winner.to_numpy(dtype=object)


def _check_stories(prefs: pd.DataFrame, known: pd.Index, source: str, fmt: str | None,
                   hint: str) -> None:
    for col in ("story_a", "story_b"):
        bad = np.flatnonzero(~prefs[col].isin(known).to_numpy())
        if len(bad):
            i = int(bad[0])
            example = f"; story ids look like {known[0]!r}" if len(known) else ""
            raise InputError(
                f"{row_label(source, i, fmt)}: column {col!r}: story {prefs[col].iloc[i]!r} is "
                f"not in the data ({len(bad)} row(s) in all){example}{hint}")


def _check_repeats(prefs: pd.DataFrame, source: str, fmt: str | None) -> None:
    """One annotator judges one pair (in either order) once per criterion."""
    if "annotator" not in prefs.columns:
        return
    a, b = prefs["story_a"].to_numpy(), prefs["story_b"].to_numpy()
    keys = pd.DataFrame({"criterion": prefs["criterion"].to_numpy(),
                         "annotator": prefs["annotator"].to_numpy(),
                         "lo": np.where(a <= b, a, b), "hi": np.where(a <= b, b, a)})
    dup = np.flatnonzero(keys.duplicated(keep=False).to_numpy())
    if len(dup):
        first = keys.iloc[dup[0]]
        again = keys.iloc[dup[1:]].eq(first).all(axis=1).to_numpy()
        second = int(dup[1:][again][0])
        raise InputError(
            f"{row_label(source, int(dup[0]), fmt)} and "
            f"{row_label(source, second, fmt).split(', ')[-1]}: annotator "
            f"{first['annotator']!r} judged the pair {first['lo']!r} / {first['hi']!r} twice "
            f"on {first['criterion']!r}")


def read_preferences(
    path: str | Path,
    *,
    format: str | None = None,
    story_ids: Sequence[str] | pd.Index | None = None,
    missing_hint: str = "",
) -> pd.DataFrame:
    """Read and validate a preference file (CSV, TSV, JSON lines, Parquet); see
    `validate_preferences` (errors name the file, column and line)."""
    frame, fmt = read_table(path, format=format)
    return validate_preferences(frame, source=str(path), fmt=fmt, story_ids=story_ids,
                                missing_hint=missing_hint)


def preference_scores(paths: Sequence[str | Path]) -> pd.DataFrame:
    """The measures of score files (``story_id, measure, value``, as written by ``storyeval
    score``) as a table with one row per story id and one float column per measure: the data
    of a preference-only dataset, for `storyeval.pairwise.preference_accuracy`.

    Raises
    ------
    InputError
        From the score-file checks (naming the file, column and row), or no file given.
    """
    from storyeval.data.load import read_score_files

    if not paths:
        raise InputError("a preference-only dataset needs score files (story_id, measure, "
                         "value): pass --scores FILE")
    long = read_score_files(list(paths))
    stories = pd.Index(pd.unique(long["story_id"].astype(str)), name="story_id")
    measures = pd.Index(pd.unique(long["measure"].astype(str)))
    values = np.full((len(stories), len(measures)), np.nan)
    values[stories.get_indexer(long["story_id"].astype(str)),
           measures.get_indexer(long["measure"].astype(str))] = long["value"].to_numpy(float)
    return pd.DataFrame(values, index=stories, columns=measures)
