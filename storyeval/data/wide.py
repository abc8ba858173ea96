"""One wide table per dataset (one row per story), read with a column mapping.

A wide table holds, per story, its identifiers, human judgments (per-story scores or one column
per annotator) and automatic scores. The mapping says which column is which:

    read_dataset("mine.csv", id="system=model,prompt_id=item", criteria=["Overall"],
                 annotators=["rater_*"])

- ``id``: ``system=COLUMN,prompt_id=COLUMN`` (or ``story_id=COLUMN`` with ids
  ``SYSTEM/PROMPT``); columns already named ``system`` and ``prompt_id`` need no mapping;
- ``criteria``: criterion names; a criterion without annotator columns is a column holding the
  per-story human score;
- ``annotators``: glob patterns ``[CRITERION=]PATTERN`` of the columns holding one annotator's
  ratings each (the criterion may be left out when there is one criterion);
- ``measures``: glob patterns of the automatic scores (default: every other numeric column;
  text columns such as the story itself are listed as ignored in `Dataset.notes`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from storyeval.data.catalogue import infer_catalogue
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
from storyeval.exceptions import InputError

ID_ROLES = ("system", "prompt_id", "story_id")
LONG_ROLES = ("criterion", "annotator", "value", "measure")
"""Column roles of long tables that ``--id`` may also map (``value=score``)."""


def parse_id_mapping(spec: str | Mapping[str, str] | None) -> dict[str, str]:
    """``"system=model,prompt_id=item"`` -> ``{"system": "model", "prompt_id": "item"}``."""
    if spec is None:
        return {}
    if isinstance(spec, Mapping):
        pairs = list(spec.items())
    else:
        pairs = []
        for part in (p.strip() for p in spec.split(",") if p.strip()):
            role, sep, column = part.partition("=")
            if not sep or not column.strip():
                raise InputError(f"--id: {part!r} is not ROLE=COLUMN (e.g. system=model)")
            pairs.append((role.strip(), column.strip()))
    roles = (*ID_ROLES, *LONG_ROLES)
    bad = [role for role, _ in pairs if role not in roles]
    if bad:
        raise InputError(f"--id: unknown role {bad[0]!r}; roles are {', '.join(roles)}")
    return dict(pairs)


def rename_roles(frame: pd.DataFrame, ids: Mapping[str, str], source: str) -> pd.DataFrame:
    """``frame`` with the mapped columns renamed to their roles (``model`` -> ``system``)."""
    for role, column in ids.items():
        if column not in frame.columns:
            raise InputError(f"{source}: --id {role}={column}: no column {column!r}; columns "
                             f"are {[str(c) for c in frame.columns][:12]}")
        if role in frame.columns and role != column:
            raise InputError(f"{source}: --id {role}={column}, but the table also has a column "
                             f"named {role!r}; map it or rename one of them")
    return frame.rename(columns={column: role for role, column in ids.items()})


def parse_annotator_specs(specs: Sequence[str] | str, criteria: Sequence[str]
                          ) -> list[tuple[str, str]]:
    """``["Overall=r_*", "f_*"]`` -> ``[("Overall", "r_*"), (criterion, "f_*")]``; a pattern
    without a criterion belongs to the only criterion."""
    specs = [specs] if isinstance(specs, str) else list(specs)
    out = []
    for spec in specs:
        crit, sep, pattern = spec.rpartition("=")
        if not sep:
            if len(criteria) != 1:
                raise InputError(
                    f"--annotators {spec!r}: say which criterion these columns rate, as "
                    f"CRITERION={spec} ({'criteria: ' + ', '.join(criteria) if criteria else 'no --criteria given'})")
            crit = criteria[0]
        out.append((crit.strip(), pattern.strip()))
    return out


def _identifiers(frame: pd.DataFrame, ids: dict[str, str], source: str, fmt: str | None
                 ) -> tuple[pd.MultiIndex, list[str]]:
    """The (system, prompt_id) index of every row and the columns used for it."""
    for role, column in ids.items():
        if column not in frame.columns:
            raise InputError(f"{source}: --id {role}={column}: no column {column!r}; columns "
                             f"are {list(frame.columns)[:12]}")
    roles = {role: ids.get(role, role) for role in ID_ROLES if ids.get(role, role) in frame}
    keys = pd.DataFrame(index=frame.index)
    if "system" in roles and "prompt_id" in roles:
        keys["system"] = string_column(frame[roles["system"]], roles["system"], source, fmt)
        keys["prompt_id"] = prompt_column(frame[roles["prompt_id"]], source, fmt,
                                          name=roles["prompt_id"])
        used = [roles["system"], roles["prompt_id"]]
    elif "story_id" in roles:
        keys["story_id"] = frame[roles["story_id"]]
        split_story_ids(keys, source, fmt)
        used = [roles["story_id"]]
    else:
        raise InputError(f"{source}: which columns identify a story? Name them with --id "
                         "system=COLUMN,prompt_id=COLUMN (or story_id=COLUMN); a long table "
                         "of ratings or scores also maps criterion=, annotator=, value= or "
                         f"measure=; columns are {list(frame.columns)[:12]}")
    index = pd.MultiIndex.from_arrays([keys["system"].to_numpy(), keys["prompt_id"].to_numpy()],
                                      names=["system", "prompt_id"])
    dup = index.duplicated(keep=False)
    if dup.any():
        rows = np.flatnonzero(dup)[:2]
        system, prompt = index[rows[0]]
        raise InputError(f"{row_label(source, int(rows[0]), fmt)} and "
                         f"{row_label(source, int(rows[1]), fmt).split(', ')[-1]} are the same "
                         f"story (system {str(system)!r}, prompt_id {prompt!s}); a wide table "
                         "has one row per story (a long table, one row per rating, needs its "
                         "criterion or measure and value columns: --id criterion=...,value=...)")
    return index, used


def _match(columns: list[str], pattern: str, what: str, source: str) -> list[str]:
    found = [c for c in columns if fnmatch.fnmatchcase(c, pattern)]
    if not found:
        raise InputError(f"{source}: {what} {pattern!r} matches no column; columns are "
                         f"{columns[:12]}")
    return found


def wide_to_dataset(
    frame: pd.DataFrame,
    *,
    id: str | Mapping[str, str] | None = None,
    criteria: Sequence[str] = (),
    annotators: Sequence[str] | str = (),
    measures: Sequence[str] | None = None,
    name: str = "custom",
    source: str = "data",
    fmt: str | None = None,
    reference_system: str | None = None,
    require_same_prompts: bool = True,
) -> Dataset:
    """A [`Dataset`][] from a wide table and a column mapping (see the module docstring).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": [1, 2, 1, 2],
    ...                   "r1": [1, 2, 4, 5], "r2": [2, 2, 5, 4], "len": [10, 20, 30, 45]})
    >>> ds = wide_to_dataset(t, id="system=model,prompt_id=item", criteria=["Overall"],
    ...                      annotators=["r*"])
    >>> ds.criteria, ds.annotators()["Overall"], ds.wide()["Overall"].tolist()
    (['Overall'], ['Overall [r1]', 'Overall [r2]'], [1.5, 2.0, 4.5, 4.5])
    >>> ds.catalogue.set_index("measure").loc["len", "kind"]
    'metric'
    """
    from storyeval.data.ratings import ratings_to_dataset

    ids = parse_id_mapping(id)
    index, used = _identifiers(frame, ids, source, fmt)
    criteria = list(dict.fromkeys(criteria))
    specs = parse_annotator_specs(annotators, criteria)
    criteria += [c for c, _ in specs if c not in criteria]
    if not criteria:
        raise InputError(f"{source}: no human criteria: name the columns holding human "
                         "judgments with --criteria NAME (per-story scores) or --annotators "
                         "[CRITERION=]PATTERN (one column per annotator)")
    free = [c for c in map(str, frame.columns) if c not in used]
    ann_cols = {crit: [] for crit in criteria}
    for crit, pattern in specs:
        ann_cols[crit] += [c for c in _match(free, pattern, "--annotators pattern", source)
                           if c not in ann_cols[crit]]
    taken = {c for cols in ann_cols.values() for c in cols}
    for crit in criteria:
        if ann_cols[crit] and crit in free:
            raise InputError(f"{source}: criterion {crit!r} is both a column and a set of "
                             f"annotator columns {ann_cols[crit][:3]}; storyeval computes the "
                             "per-story score from the annotators: rename or leave out one")
        if not ann_cols[crit] and crit not in free:
            raise InputError(f"{source}: --criteria {crit!r}: no such column and no "
                             f"--annotators for it; columns are {free[:12]}")
    direct = [c for c in criteria if not ann_cols[c]]
    frame = frame.set_axis(range(len(frame)))
    story = index.to_frame(index=False)  # named by an error about a cell
    parts, catalogues, notes = [], [], []
    if taken:
        checked = {c: numeric_column(frame[c], c, source, fmt, story) for c in taken}
        long = _annotator_long(pd.DataFrame(checked), index, ann_cols)
        human = ratings_to_dataset(long, name=name, source=source, annotators="ids",
                                   require_same_prompts=False)
        parts.append(human.table)
        catalogues.append(human.catalogue)
        notes += list(human.notes)
    values = {c: numeric_column(frame[c], c, source, fmt, story).to_numpy() for c in direct}
    chosen, ignored = _measure_columns(frame, [c for c in free if c not in taken
                                               and c not in direct], measures, source)
    values.update({c: numeric_column(frame[c], c, source, fmt, story).to_numpy()
                   for c in chosen})
    parts.append(pd.DataFrame(values, index=index, dtype=float))
    catalogues.append(infer_catalogue(direct, criteria=criteria))
    catalogues.append(infer_catalogue(chosen, criteria=criteria))
    notes += [f"{c}: human score = the column {c!r} as given" for c in direct]
    if ignored:
        notes.append(f"ignored non-numeric column(s): {', '.join(ignored)}")
    table = pd.concat([p.reindex(index) for p in parts], axis=1)
    table = sort_stories(table, first_seen(index.get_level_values("system")),
                         first_seen(index.get_level_values("prompt_id")))
    if require_same_prompts:
        from storyeval.data.io import _check_same_prompts

        _check_same_prompts(table, source)
    catalogue = _ordered_catalogue(pd.concat(catalogues, ignore_index=True), criteria)
    return Dataset(table.loc[:, catalogue["measure"].tolist()], catalogue, name,
                   reference_system=reference_system, notes=tuple(notes))


def _annotator_long(frame: pd.DataFrame, index: pd.MultiIndex,
                    ann_cols: dict[str, list[str]]) -> pd.DataFrame:
    """The annotator columns as a long ratings table. In a wide table an empty annotator cell
    means "not rated by this annotator" (ragged data), so it is not a rating; counts per story
    are reported by `storyeval.data.ratings.ratings_notes`."""
    blocks = []
    for crit, cols in ann_cols.items():
        for col in cols:
            blocks.append(pd.DataFrame({
                "system": index.get_level_values("system"),
                "prompt_id": index.get_level_values("prompt_id"),
                "criterion": crit, "annotator": col, "value": frame[col].to_numpy()}))
    long = pd.concat(blocks, ignore_index=True)
    return long[long["value"].notna().to_numpy()]


def _measure_columns(frame: pd.DataFrame, free: list[str], measures: Sequence[str] | None,
                     source: str) -> tuple[list[str], list[str]]:
    """The automatic score columns, and the non-numeric columns left out."""
    if measures is not None:
        patterns = [measures] if isinstance(measures, str) else list(measures)
        chosen = list(dict.fromkeys(c for p in patterns
                                    for c in _match(free, p, "--measures pattern", source)))
        return chosen, []
    numeric = [c for c in free if pd.api.types.is_numeric_dtype(frame[c])
               or pd.api.types.is_bool_dtype(frame[c])]
    return numeric, [c for c in free if c not in numeric]


def _ordered_catalogue(catalogue: pd.DataFrame, criteria: list[str]) -> pd.DataFrame:
    """Criteria first (in the given order), then annotators, then automatic scores."""
    rank = {"human_criterion": 0, "annotator": 1, "annotator_loo": 1}
    key = catalogue["kind"].map(rank).fillna(2).to_numpy()
    crit_rank = catalogue["measure"].map({c: i for i, c in enumerate(criteria)}).fillna(0)
    order = np.lexsort((np.arange(len(catalogue)), crit_rank.to_numpy(), key))
    return catalogue.iloc[order].reset_index(drop=True)
