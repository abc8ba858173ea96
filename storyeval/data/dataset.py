"""The [`Dataset`][]: per-story scores of many measures, plus their catalogue."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import pandas as pd

from storyeval.data.catalogue import HUMAN_KINDS, infer_catalogue, merge_catalogues
from storyeval.data.ids import make_story_id
from storyeval.data.io import validate_scores
from storyeval.exceptions import DroppedStoriesWarning, InputError

SCORE_COLUMNS = ("story_id", "system", "prompt_id", "measure", "value")


@dataclass(frozen=True, eq=False)
class Dataset:
    """Human judgments and automatic scores of a set of stories, with the role of each column.

    The data are held in wide form: one row per story, indexed by ``(system, prompt_id)``, one
    float column per measure. The catalogue says what each column is (a human criterion, one
    annotator's ratings, an automatic metric, an LLM rating; see
    `storyeval.data.catalogue`). [`scores`][] gives the tidy long table (``story_id,
    system, prompt_id, measure, value``), the common currency between storyeval steps.

    Build one with a reader ([`storyeval.data.read_dataset`][],
    [`storyeval.data.ratings_to_dataset`][], [`storyeval.data.scores_to_dataset`][])
    rather than by hand.

    Parameters
    ----------
    table : pandas.DataFrame
        Wide scores, index a MultiIndex named ``("system", "prompt_id")``.
    catalogue : pandas.DataFrame, optional
        Measure catalogue; without it every column is an automatic metric.
    name : str
        A short name shown in reports.
    reference_system : str, optional
        A system whose stories are the references of reference-based metrics (HANNA: the
        human-written stories); meta-evaluation leaves it out unless asked. None: no such system.
    default_reference : str, optional
        The rater that Williams tests compare the others with when none is named (HANNA: the
        paper's ``"Beluga-13B 1"``); None: all pairs.
    criterion_codes : mapping, optional
        Short codes accepted for criteria (HANNA: ``{"Relevance": "RE", ...}``).
    presets : mapping, optional
        Named measure selections usable in measure specifications (HANNA: ``paper``).
    default_test : str, optional
        The comparison test that ``test="auto"`` means on this dataset (HANNA: ``"paper"``, the
        convention its published numbers use); None: the calibrated default
        (`storyeval.compare.procedures.calibrated_test`).
    notes : tuple of str
        What the reader understood that changes numbers (shown by ``storyeval describe`` and
        in report headers), e.g. how per-story human scores were computed.
    rater_scale : (low, high), optional
        The scale of the LLM raters' ratings (HANNA: 1-5). ``storyeval describe`` counts the
        values outside it per rater (`storyeval.data.scales.rater_out_of_scale`).
    """

    table: pd.DataFrame
    catalogue: pd.DataFrame = field(default=None)  # type: ignore[assignment]
    name: str = "custom"
    reference_system: str | None = None
    default_reference: str | None = None
    criterion_codes: Mapping[str, str] = field(default_factory=dict)
    presets: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    default_test: str | None = None
    rater_scale: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if list(self.table.index.names) != ["system", "prompt_id"]:
            raise InputError("Dataset.table must be indexed by (system, prompt_id)")
        if self.catalogue is None:
            object.__setattr__(self, "catalogue", infer_catalogue(self.table.columns))

    def _derived(self, table: pd.DataFrame, catalogue: pd.DataFrame | None = None) -> Dataset:
        """A dataset with other rows or columns and the same settings."""
        return replace(self, table=table,
                       catalogue=self.catalogue if catalogue is None else catalogue)

    # ----- roles ---------------------------------------------------------------------------
    @property
    def criteria(self) -> list[str]:
        """The human criteria (columns holding a per-story human score), in catalogue order."""
        cat = self.catalogue
        return cat.loc[cat["kind"] == "human_criterion", "measure"].tolist()

    def annotators(self, kind: str = "annotator") -> dict[str, list[str]]:
        """Per criterion, the columns of its individual annotators (``kind="annotator"``) or of
        their leave-one-out means (``kind="annotator_loo"``), in catalogue order."""
        cat = self.catalogue[self.catalogue["kind"] == kind]
        return {crit: rows.tolist() for crit, rows in
                cat.groupby("criterion", sort=False)["measure"]}

    def resolve_criterion(self, name: str) -> str:
        """A criterion of this dataset from its name or code (case-insensitive)."""
        key = name.strip().lower()
        for crit in self.criteria:
            if key in (crit.lower(), str(self.criterion_codes.get(crit, crit)).lower()):
                return crit
        if not self.criteria:
            raise InputError(
                f"dataset {self.name!r} has no human criteria; declare them when reading the "
                "data (ratings in long form, or --criteria / --annotators for a wide table)")
        valid = ", ".join(f"{c} ({self.criterion_codes[c]})" if c in self.criterion_codes
                          else c for c in self.criteria)
        raise InputError(f"unknown criterion {name!r}; dataset {self.name!r} has: {valid}")

    def with_criteria(self, criteria: Sequence[str]) -> Dataset:
        """This dataset with the columns ``criteria`` declared human criteria (per-story human
        scores), e.g. for a long score table that also holds human scores."""
        missing = [c for c in criteria if c not in self.table.columns]
        if missing:
            raise InputError(f"--criteria: no column {missing[0]!r} in dataset {self.name!r}; "
                             f"columns are {self.measures[:8]}")
        cat = self.catalogue.copy()
        chosen = cat["measure"].isin(list(criteria))
        cat.loc[chosen, "kind"] = "human_criterion"
        cat.loc[chosen, "criterion"] = cat.loc[chosen, "measure"]
        # LLM ratings named after the new criteria become criterion-specific
        automatic = ~cat["kind"].isin(HUMAN_KINDS)
        names = self.criteria + [c for c in criteria if c not in self.criteria]
        fresh = infer_catalogue(cat.loc[automatic, "measure"], criteria=names,
                                codes=self.criterion_codes)
        cat.loc[automatic, list(fresh.columns)] = fresh.to_numpy()
        return self._derived(self.table, cat)

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
        return story_id_array(self.table.index).tolist()

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
        return self._derived(self.table.loc[mask])

    def with_scores(self, scores: pd.DataFrame, *, how: str | None = None,
                    catalogue: pd.DataFrame | None = None,
                    source: str = "new scores") -> Dataset:
        """This dataset joined with new per-story scores (a tidy table) on ``story_id``.

        Parameters
        ----------
        scores : pandas.DataFrame
            Tidy table with at least ``story_id, measure, value`` (see `validate_scores`).
        how : {None, "inner", "left"}
            ``"inner"`` keeps only the stories that the new scores cover (the usual case: a
            metric computed on a subset of stories); ``"left"`` keeps every story, with NaN where
            the new measures have no score. ``None`` (default): ``"inner"``, warning when it
            leaves stories out (an explicit ``"inner"`` asks for the subset: no warning).
        catalogue : pandas.DataFrame, optional
            Catalogue rows for the new measures; inferred from their names otherwise.
        source : str
            What the scores are (e.g. their file), for warnings.

        Warns
        -----
        DroppedStoriesWarning
            ``how=None`` left out stories that the scores do not cover (the message says how
            many, and of which systems: a score file cut short shows here), or a new measure
            covers fewer stories than the scores as a whole.
        """
        if how not in (None, "inner", "left"):
            raise InputError(f"how must be 'inner' or 'left', got {how!r}")
        scores = validate_scores(scores, source=source, require=("story_id", "measure", "value"))
        return self._join_wide(long_to_wide(scores), long_counts(scores), how=how,
                               catalogue=catalogue, source=source)

    def _join_wide(self, new: pd.DataFrame, counts: pd.Series, *, how: str | None,
                   catalogue: pd.DataFrame | None, source: str) -> Dataset:
        """`with_scores` of scores already in wide form: ``new`` as `long_to_wide` gives
        it (one row per distinct story id, one float column per measure in sorted order),
        ``counts`` the rows per measure of the long table (in its order of first appearance),
        so that a reader may build the wide form its own way (`storyeval.data.load`)."""
        if how not in (None, "inner", "left"):
            raise InputError(f"how must be 'inner' or 'left', got {how!r}")
        # the distinct names first: iterating an Arrow-backed column boxes every row (5 s at
        # 3.6 million score rows)
        clash = sorted(set(new.columns) & set(self.measures))
        if clash:
            raise InputError(f"new scores repeat measures already in the dataset: {clash[:5]}")
        # story ids as Python strings: hashed once each (an Arrow-backed index converts them
        # for every look-up; its isin boxes every id: 0.5 s at 10^5 stories)
        own_ids = pd.Index(story_id_array(self.table.index), dtype=object)
        rows = pd.Index(new.index, dtype=object).get_indexer(own_ids)
        covered = rows >= 0
        known = np.zeros(len(new), dtype=bool)
        known[rows[covered]] = True
        unknown = new.index[~known].sort_values()  # what new.index.difference(own_ids) gives
        if len(unknown):
            # ids of the SYSTEM/PROMPT form name their system; other ids name none
            systems = sorted({str(i).rsplit("/", 1)[0] for i in unknown if "/" in str(i)}
                             - set(self.systems))
            hint = (f"; systems {systems[:6]} have no stories (and no human ratings) in it"
                    if systems else "")
            if not any("/" in str(i) for i in unknown[:100]):
                hint += ("; give the scores 'system' and 'prompt_id' columns (a story is its "
                         "system and prompt), or story ids of the form SYSTEM/PROMPT")
            if self.reference_system is not None and systems:
                hint += (f" - score the stories of the rated systems (the references are "
                         f"system {self.reference_system!r})")
            raise InputError(
                f"{len(unknown)} story_id(s) in the new scores are not in dataset {self.name!r}, "
                f"e.g. {list(unknown[:3])}; story ids look like {str(own_ids[0])!r}{hint}"
            )
        values = new.to_numpy(dtype=np.float64).take(np.where(covered, rows, 0), axis=0)
        values[~covered] = np.nan
        aligned = pd.DataFrame(values, index=self.table.index, columns=new.columns, copy=False)
        table = pd.concat([self.table, aligned], axis=1)
        if how is None and not covered.all():
            warnings.warn(f"{source}: {int(covered.sum())} of the {len(covered)} stories of "
                          f"dataset {self.name!r} have scores; {int((~covered).sum())} stories "
                          f"dropped (left out of every result): "
                          f"{_dropped_text(self.table.index, covered)}",
                          DroppedStoriesWarning, stacklevel=3)
        if how != "left":
            table = table.loc[covered]
        _warn_partial_measures(counts, len(new), source)
        extra = catalogue if catalogue is not None else infer_catalogue(
            new.columns, criteria=self.criteria, codes=self.criterion_codes)
        return self._derived(table, merge_catalogues(self.catalogue, extra))

    def __repr__(self) -> str:
        return (f"Dataset(name={self.name!r}, stories={len(self.table)}, "
                f"systems={len(self.systems)}, prompts={len(self.prompts)}, "
                f"measures={len(self.measures)})")


def _dropped_text(index: pd.MultiIndex, covered: np.ndarray, shown: int = 6) -> str:
    """``"systems 'A' (all 24), 'B' (12 of 24)"``: the stories left out, per system."""
    frame = pd.DataFrame({"system": index.get_level_values("system"), "dropped": ~covered})
    per = frame.groupby("system", sort=False)["dropped"].agg(["sum", "size"])
    per = per[per["sum"] > 0]
    parts = [f"{system!r} (all {n})" if d == n else f"{system!r} ({d} of {n})"
             for system, d, n in zip(per.index, per["sum"], per["size"])]
    more = f" and {len(parts) - shown} more" if len(parts) > shown else ""
    return ("system " if len(parts) == 1 else "systems ") + ", ".join(parts[:shown]) + more


def story_id_array(index: pd.Index) -> np.ndarray:
    """`make_story_id` of every (system, prompt_id) of ``index``, as an object array: built
    from the distinct systems and prompts of a MultiIndex (one string per distinct value,
    then one concatenation per story), else story by story."""
    if isinstance(index, pd.MultiIndex) and index.nlevels == 2 and len(index) and all(
            int(c.min()) >= 0 for c in index.codes):
        systems = np.array([make_story_id(s, "")[:-1] for s in index.levels[0]], dtype=object)
        prompts = np.array([make_story_id("", p)[1:] for p in index.levels[1]], dtype=object)
        return systems[index.codes[0]] + "/" + prompts[index.codes[1]]
    return np.array([make_story_id(s, p) for s, p in index], dtype=object)


def long_to_wide(scores: pd.DataFrame) -> pd.DataFrame:
    """``scores.pivot(index="story_id", columns="measure", values="value")`` of a validated
    tidy table (no (story, measure) twice), up to the order of its rows: one row per story id
    (in order of first appearance) and one float column per measure (sorted, as the pivot
    has them), NaN where a story lacks a measure; built from integer codes (pandas' pivot
    hashes and sorts every row several times: 1.1 s at 3.6 million rows)."""
    story_codes, stories = pd.factorize(scores["story_id"])
    measure_codes, measures = pd.factorize(scores["measure"], sort=True)
    values = np.full((len(stories), len(measures)), np.nan)
    width = max(len(measures), 1)
    flat = story_codes.astype(np.int64) * width + measure_codes
    values.reshape(-1)[flat] = scores["value"].to_numpy(dtype=np.float64)
    return pd.DataFrame(values, index=pd.Index(stories, name="story_id"),
                        columns=pd.Index(measures, name="measure"), copy=False)


def long_counts(scores: pd.DataFrame) -> pd.Series:
    """Rows per measure of a tidy table, in order of first appearance."""
    return scores.groupby("measure", sort=False).size()


def _warn_partial_measures(counts: pd.Series, n_stories: int, source: str) -> None:
    """Warn when a new measure has scores (``counts``: rows per measure) for fewer stories
    than the scores cover."""
    short = counts[counts < n_stories]
    if len(short):
        listed = ", ".join(f"{m!r} ({n})" for m, n in short.head(5).items())
        more = f" and {len(short) - 5} more" if len(short) > 5 else ""
        warnings.warn(f"{source}: {len(short)} measure(s) have scores for fewer of the "
                      f"{n_stories} stories than the others (their other stories are missing "
                      f"values): {listed}{more}", DroppedStoriesWarning, stacklevel=4)
