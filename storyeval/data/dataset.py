"""The :class:`Dataset`: per-story scores of many measures, plus their catalogue."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd

from storyeval.data.catalogue import infer_catalogue, merge_catalogues
from storyeval.exceptions import InputError

SCORE_COLUMNS = ("story_id", "system", "prompt_id", "measure", "value")


def make_story_id(system: str, prompt_id: int) -> str:
    """The story key used across storyeval: ``"{system}/{prompt_id}"`` (e.g. ``"GPT-2/17"``)."""
    return f"{system}/{int(prompt_id)}"


@dataclass(frozen=True, eq=False)
class Dataset:
    """Scores of many measures on a set of stories, with a measure catalogue.

    The scores are held in wide form: one row per story, indexed by ``(system, prompt_id)``,
    one float column per measure. :attr:`scores` gives the tidy long table (``story_id, system,
    prompt_id, measure, value``), the common currency between storyeval steps.

    Parameters
    ----------
    table : pandas.DataFrame
        Wide scores, index a MultiIndex named ``("system", "prompt_id")``.
    catalogue : pandas.DataFrame, optional
        Measure catalogue (see :mod:`storyeval.data.catalogue`); inferred from the names if omitted.
    name : str
        A short name shown in reports (``"hanna"`` for the embedded data).
    """

    table: pd.DataFrame
    catalogue: pd.DataFrame = field(default=None)  # type: ignore[assignment]
    name: str = "custom"

    def __post_init__(self) -> None:
        if list(self.table.index.names) != ["system", "prompt_id"]:
            raise InputError("Dataset.table must be indexed by (system, prompt_id)")
        if self.catalogue is None:
            object.__setattr__(self, "catalogue", infer_catalogue(self.table.columns))

    # ----- views ---------------------------------------------------------------------------
    @property
    def measures(self) -> list[str]:
        """Measure identifiers, in column order."""
        return list(self.table.columns)

    @property
    def systems(self) -> list[str]:
        """Systems in order of first appearance."""
        return self.table.index.get_level_values("system").unique().tolist()

    @property
    def prompts(self) -> list[int]:
        """Prompt ids in order of first appearance."""
        return list(dict.fromkeys(self.table.index.get_level_values("prompt_id")))

    @property
    def story_ids(self) -> list[str]:
        return [make_story_id(s, p) for s, p in self.table.index]

    def wide(self, measures: Sequence[str] | None = None) -> pd.DataFrame:
        """The wide table (stories x measures), optionally restricted to ``measures``."""
        if measures is None:
            return self.table
        missing = [m for m in measures if m not in self.table.columns]
        if missing:
            raise InputError(f"unknown measure(s) in dataset {self.name!r}: {missing}")
        return self.table.loc[:, list(measures)]

    @cached_property
    def scores(self) -> pd.DataFrame:
        """The tidy long table: ``story_id, system, prompt_id, measure, value``."""
        long = self.table.rename_axis(columns="measure").stack(future_stack=True)
        long = long.rename("value").reset_index()
        long.insert(0, "story_id", [make_story_id(s, p) for s, p in
                                    zip(long["system"], long["prompt_id"])])
        return long.loc[:, list(SCORE_COLUMNS)]

    def describe(self, measure: str) -> pd.Series:
        """The catalogue row of one measure."""
        rows = self.catalogue[self.catalogue["measure"] == measure]
        if rows.empty:
            raise InputError(f"unknown measure {measure!r} in dataset {self.name!r}")
        return rows.iloc[0]

    # ----- subsets -------------------------------------------------------------------------
    def select_systems(self, systems: Iterable[str] | None = None, *,
                       exclude: Iterable[str] = ()) -> Dataset:
        """A dataset with only ``systems`` (all if None), minus ``exclude``."""
        known = self.systems
        keep = list(known if systems is None else systems)
        unknown = [s for s in list(keep) + list(exclude) if s not in known]
        if unknown:
            raise InputError(f"unknown system(s) {unknown}; the dataset has {known}")
        keep = [s for s in keep if s not in set(exclude)]
        if not keep:
            raise InputError("no system left after selection")
        mask = self.table.index.get_level_values("system").isin(keep)
        return Dataset(self.table.loc[mask], self.catalogue, self.name)

    def with_scores(self, scores: pd.DataFrame, *, how: str = "inner",
                    catalogue: pd.DataFrame | None = None) -> Dataset:
        """This dataset joined with new per-story scores (a tidy table) on ``story_id``.

        Parameters
        ----------
        scores : pandas.DataFrame
            Tidy table with at least ``story_id, measure, value`` (see :func:`validate_scores`).
        how : {"inner", "left"}
            ``"inner"`` keeps only the stories that the new scores cover (the usual case: a
            metric computed on a subset of stories); ``"left"`` keeps every story, with NaN where
            the new measures have no score.
        catalogue : pandas.DataFrame, optional
            Catalogue rows for the new measures; inferred from their names otherwise.
        """
        from storyeval.data.io import validate_scores

        if how not in ("inner", "left"):
            raise InputError(f"how must be 'inner' or 'left', got {how!r}")
        scores = validate_scores(scores, source="scores", require=("story_id", "measure", "value"))
        clash = sorted(set(scores["measure"]) & set(self.measures))
        if clash:
            raise InputError(f"new scores repeat measures already in the dataset: {clash[:5]}")
        new = scores.pivot(index="story_id", columns="measure", values="value")
        own_ids = pd.Index(self.story_ids)
        unknown = new.index.difference(own_ids)
        if len(unknown):
            systems = sorted({str(i).rsplit("/", 1)[0] for i in unknown} - set(self.systems))
            hint = (f"; systems {systems[:6]} have no stories (and no human ratings) in it"
                    if systems else "")
            if self.name == "hanna" and systems:
                hint += (" - HANNA's ratings cover its 11 original systems only, so score "
                         "the human stories (storyeval score --dataset hanna --subset human)")
            raise InputError(
                f"{len(unknown)} story_id(s) in the new scores are not in dataset {self.name!r}, "
                f"e.g. {list(unknown[:3])}; story ids look like {own_ids[0]!r}{hint}"
            )
        aligned = new.reindex(own_ids)
        aligned.index = self.table.index
        table = pd.concat([self.table, aligned.astype(float)], axis=1)
        if how == "inner":
            table = table.loc[np.asarray(own_ids.isin(new.index))]
        extra = catalogue if catalogue is not None else infer_catalogue(new.columns)
        return Dataset(table, merge_catalogues(self.catalogue, extra), self.name)

    def __repr__(self) -> str:
        return (f"Dataset(name={self.name!r}, stories={len(self.table)}, "
                f"systems={len(self.systems)}, prompts={len(self.prompts)}, "
                f"measures={len(self.measures)})")
