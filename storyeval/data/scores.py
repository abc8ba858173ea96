"""Long score tables (``story_id`` or ``system, prompt_id``, ``measure``, ``value``) to a
[`Dataset`][storyeval.data.dataset.Dataset]: validation and reading come from
`storyeval.data.io`, the data model from `storyeval.data.dataset`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from storyeval.data.dataset import Dataset
from storyeval.data.io import (
    _check_same_prompts,
    _pivot_scores,
    _validate_scores,
    read_table,
    sort_stories,
)

__all__ = ["read_scores", "scores_to_dataset"]


def scores_to_dataset(
    frame: pd.DataFrame,
    *,
    name: str = "custom",
    source: str = "scores",
    fmt: str | None = None,
    require_same_prompts: bool = True,
    catalogue: pd.DataFrame | None = None,
    criteria: Sequence[str] = (),
) -> Dataset:
    """A [`Dataset`][] from a tidy long table (validated, see `validate_scores`).

    ``require_same_prompts`` (default) checks that every system has the same set of prompts:
    system-level correlations compare means over different prompts otherwise. ``criteria``
    names the measures that are per-story human scores (every other measure is automatic).
    Ratings of individual annotators are read with [`storyeval.data.ratings_to_dataset`][].
    """
    frame, codes = _validate_scores(frame, source, fmt, ("system", "prompt_id", "measure", "value"))
    return dataset_from_pivot(_pivot_scores(frame, codes), pd.unique(frame["system"]).tolist(),
                              pd.unique(frame["prompt_id"]).tolist(), name=name, source=source,
                              require_same_prompts=require_same_prompts, catalogue=catalogue,
                              criteria=criteria)


def dataset_from_pivot(table: pd.DataFrame, systems: list, prompts: list, *, name: str,
                       source: str, require_same_prompts: bool = True,
                       catalogue: pd.DataFrame | None = None,
                       criteria: Sequence[str] = ()) -> Dataset:
    """The [`Dataset`][] of a validated wide table (one row per story, as
    `storyeval.data.io._pivot_scores` or `storyeval.data.fast_scores.read_long_scores` give
    it) and the systems and prompts in order of first appearance."""
    table = sort_stories(table, systems, prompts)
    if require_same_prompts:
        _check_same_prompts(table, source)
    dataset = Dataset(table, catalogue, name)
    return dataset.with_criteria(list(criteria)) if criteria else dataset



def read_scores(path: str | Path, *, format: str | None = None, name: str | None = None,
                require_same_prompts: bool = True) -> Dataset:
    """Read a long-format score file (CSV, TSV, JSONL, Parquet) into a [`Dataset`][].

    Examples
    --------
    >>> ds = read_scores("my_scores.csv")  # doctest: +SKIP
    """
    frame, fmt = read_table(path, format=format)
    return scores_to_dataset(frame, name=name or Path(path).stem, source=str(path), fmt=fmt,
                             require_same_prompts=require_same_prompts)
