"""Best-of-N accuracy of a scorer on sets of one (or more) chosen and several rejected
completions: RewardBench 2's format read as is, and LitBench's pair files (one chosen and one
rejected story, where best-of-2 accuracy is the RM accuracy r_chosen > r_rejected).

A *best-of-N table* (JSON lines, Parquet, CSV or TSV) has one row per set:

==================  =====================================================================
column              meaning
==================  =====================================================================
``prompt``          the prompt of the set
``chosen``          a list of texts (RewardBench 2: one) or one text; ``chosen_story``
                    (LitBench) is the same column
``rejected``        a list of texts (RewardBench 2: three) or one text;
                    ``rejected_story`` is the same column
``id``              optional: the set's identifier (default: its row number)
``subset``          optional: accuracies are also given per subset
==================  =====================================================================

Other columns (``num_correct``, ``models``...) are ignored. The stories of a set get the
story ids ``chosen-K/ID`` and ``rejected-K/ID`` (K counted from 0), which `best_of_n_stories`
writes for ``storyeval score`` and the score files then carry.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval.data.io import read_table, row_label
from storyeval.exceptions import InputError

__all__ = ["best_of_n_accuracy", "best_of_n_stories", "is_best_of_n_table", "read_best_of_n",
           "validate_best_of_n"]

_ALIASES = {"chosen": ("chosen", "chosen_story"), "rejected": ("rejected", "rejected_story")}


def _column(columns: Sequence[str], role: str) -> str | None:
    for name in _ALIASES[role]:
        if name in columns:
            return name
    return None


def is_best_of_n_table(columns: Sequence[str]) -> bool:
    """Whether a table's columns are those of a best-of-N table (chosen and rejected texts)."""
    cols = [str(c) for c in columns]
    return _column(cols, "chosen") is not None and _column(cols, "rejected") is not None


def _texts(cell, what: str, where: str) -> list[str]:
    """A cell as a non-empty list of non-empty texts."""
    if isinstance(cell, str):
        items = [cell]
    elif isinstance(cell, (list, tuple, np.ndarray)):
        items = list(cell)
    else:
        raise InputError(f"{where}: column {what!r} holds {type(cell).__name__} "
                         f"{str(cell)[:40]!r}; expected a text or a list of texts")
    if not items:
        raise InputError(f"{where}: column {what!r} is an empty list")
    for t in items:
        if not isinstance(t, str) or not t.strip():
            raise InputError(f"{where}: column {what!r} holds an empty or non-text item "
                             f"{str(t)[:40]!r}")
    return items


def validate_best_of_n(frame: pd.DataFrame, *, source: str = "best-of-N",
                       fmt: str | None = None) -> pd.DataFrame:
    """A clean best-of-N table: ``set_id, prompt, chosen, rejected`` (lists of texts),
    ``subset`` (empty when absent).

    Raises
    ------
    InputError
        Naming ``source``, the row and the column: no rows, a missing column, an empty
        prompt, an empty or non-text cell, a set id given twice.
    """
    if len(frame) == 0:
        raise InputError(f"{source}: no rows")
    cols = [str(c) for c in frame.columns]
    chosen, rejected = _column(cols, "chosen"), _column(cols, "rejected")
    missing = [n for n, c in (("prompt", "prompt" in cols), ("chosen", chosen),
                              ("rejected", rejected)) if not c]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; a best-of-N table has prompt, "
                         f"chosen, rejected (RewardBench 2) or prompt, chosen_story, "
                         f"rejected_story (LitBench); found {cols}")
    chosen_col, rejected_col = str(chosen), str(rejected)  # both present (checked above)
    ids = (frame["id"].astype(str).str.strip().to_numpy() if "id" in cols
           else np.arange(len(frame)).astype(str))
    out_c, out_r, prompts = [], [], []
    for i in range(len(frame)):
        where = row_label(source, i, fmt)
        p = frame["prompt"].iloc[i]
        if not isinstance(p, str) or not p.strip():
            raise InputError(f"{where}: column 'prompt' is empty or not a text")
        prompts.append(p)
        out_c.append(_texts(frame[chosen_col].iloc[i], chosen_col, where))
        out_r.append(_texts(frame[rejected_col].iloc[i], rejected_col, where))
        if ids[i] in ("", "nan", "None"):
            raise InputError(f"{where}: column 'id' is empty")
    dup = pd.Series(ids).duplicated()
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{row_label(source, i, fmt)}: set id {ids[i]!r} is given twice")
    subset = (frame["subset"].astype(str).fillna("").to_numpy() if "subset" in cols
              else np.full(len(frame), ""))
    return pd.DataFrame({"set_id": ids, "prompt": prompts, "chosen": out_c,
                         "rejected": out_r, "subset": subset})


def read_best_of_n(path: str | Path, *, format: str | None = None) -> pd.DataFrame:
    """Read and validate a best-of-N file (`validate_best_of_n`)."""
    frame, fmt = read_table(path, format=format)
    return validate_best_of_n(frame, source=str(path), fmt=fmt)


def best_of_n_stories(sets: pd.DataFrame) -> pd.DataFrame:
    """The stories of validated sets as a stories table for ``storyeval score``: ``story_id``
    (``chosen-K/ID``, ``rejected-K/ID``), ``system`` (``chosen-K``/``rejected-K``),
    ``prompt_id`` (the set id), ``prompt``, ``story``."""
    rows = []
    for role in ("chosen", "rejected"):
        long = sets[["set_id", "prompt", role]].explode(role)
        k = long.groupby(level=0).cumcount().astype(str).to_numpy()
        system = np.char.add(f"{role}-", k.astype(str))
        rows.append(pd.DataFrame({"story_id": np.char.add(np.char.add(system, "/"),
                                                          long["set_id"].to_numpy().astype(str)),
                                  "system": system, "prompt_id": long["set_id"].to_numpy(),
                                  "prompt": long["prompt"].to_numpy(),
                                  "story": long[role].to_numpy()}))
    return pd.concat(rows, ignore_index=True)


def _set_extremes(sets: pd.DataFrame, wide: pd.DataFrame, measures: list[str]):
    """Per set and measure: the lowest chosen and the highest rejected score, and whether a
    story of the set has no score (NaN)."""
    stories = best_of_n_stories(sets)
    pos = pd.Index(sets["set_id"]).get_indexer(stories["prompt_id"])
    chosen = stories["system"].str.startswith("chosen-").to_numpy()
    rows = wide.index.get_indexer(stories["story_id"])
    values = np.full((len(stories), len(measures)), np.nan)
    have = rows >= 0
    values[have] = wide[measures].to_numpy(dtype=np.float64)[rows[have]]
    n, k = len(sets), len(measures)
    low, high = np.full((n, k), np.inf), np.full((n, k), -np.inf)
    np.minimum.at(low, pos[chosen], values[chosen])  # NaN propagates: the set is missing
    np.maximum.at(high, pos[~chosen], values[~chosen])
    missing = np.isnan(low) | np.isnan(high)
    return low, high, missing


def best_of_n_accuracy(
    sets: pd.DataFrame,
    wide: pd.DataFrame,
    measures: Sequence[str] | None = None,
    *,
    interval: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Best-of-N accuracy: the share of sets in which every chosen story scores strictly above
    every rejected one.

    Parameters
    ----------
    sets : DataFrame
        A best-of-N table (`validate_best_of_n` is applied).
    wide : DataFrame
        One row per story id (index), one float column per measure
        (`storyeval.pairwise.preference_scores` of score files).
    measures : sequence of str, optional
        Columns of ``wide`` to evaluate (default: all).
    interval : {"auto", "none", "cluster-t", "cluster-bootstrap", "wilson", "exact"}
        Clusters are the sets' prompts (sets sharing a prompt text are one cluster);
        ``"auto"``: Wilson with the exact binomial test when every prompt holds one set, else
        the cluster-robust t below 30 prompts and the cluster bootstrap from 30 on
        (`storyeval.pairwise.inference.accuracy_columns`).
    confidence_level, n_resamples, random_state
        Of the interval and the bootstrap.

    Returns
    -------
    DataFrame
        One row per measure and subset (``"all"`` first, then each subset of the table):
        ``measure, subset, accuracy, n_sets, n_missing, chance`` and the interval columns.
        ``n_missing`` counts sets left out because a story has no score.

    Notes
    -----
    Set s with chosen scores c and rejected scores r is correct when min(c) > max(r) (a tie
    counts as wrong, as LitBench's r_chosen > r_rejected). With one chosen and one rejected
    story this is RM accuracy. The chance level of a set is 1 / C(n_c + n_r, n_c) (1/4 for
    RewardBench 2's one-of-four, 1/2 for a pair), the probability that scores without ties in
    a random order put the chosen stories on top; a subset's chance is the mean over its sets.
    "all" pools the sets (RewardBench 2's leaderboard averages its subsets instead).

    Validated against a per-set Python loop (tests/test_pairwise_best_of_n.py).
    """
    from storyeval.pairwise.inference import accuracy_columns

    sets = validate_best_of_n(sets) if "set_id" not in sets.columns else sets
    measures = list(wide.columns) if measures is None else list(measures)
    unknown = [m for m in measures if m not in wide.columns]
    if unknown:
        raise InputError(f"measures {unknown} are not in the scores; they have "
                         f"{list(wide.columns)[:20]}")
    low, high, missing = _set_extremes(sets, wide, measures)
    correct = (low > high).astype(np.float64)
    n_c = sets["chosen"].map(len).to_numpy()
    n_r = sets["rejected"].map(len).to_numpy()
    chance = 1.0 / np.array([math.comb(int(a + b), int(a)) for a, b in zip(n_c, n_r)])
    clusters = pd.factorize(sets["prompt"])[0]
    frames = []
    groups = [("all", np.ones(len(sets), dtype=bool))]
    if (sets["subset"] != "").any():
        groups += [(s, (sets["subset"] == s).to_numpy()) for s in pd.unique(sets["subset"])]
    for name, rows in groups:
        ok = ~missing[rows]
        acc = np.where(ok, correct[rows], 0.0).sum(axis=0) / np.maximum(ok.sum(axis=0), 1)
        null = np.array([chance[rows][ok[:, j]].mean() if ok[:, j].any() else math.nan
                         for j in range(len(measures))])
        frame = pd.DataFrame({"measure": measures, "subset": name,
                              "accuracy": np.where(ok.any(axis=0), acc, np.nan),
                              "n_sets": ok.sum(axis=0), "n_missing": (~ok).sum(axis=0),
                              "chance": null})
        if interval != "none":
            inf = accuracy_columns(correct[rows], ok, clusters=clusters[rows], method=interval,
                                   chance=np.nan_to_num(null, nan=0.5),
                                   confidence_level=confidence_level, n_resamples=n_resamples,
                                   random_state=random_state)
            frame = pd.concat([frame, inf.drop(columns=["chance"])], axis=1)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)
