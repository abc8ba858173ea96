"""Verdict tables keyed by pair, for the pairwise bias estimates (internal)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

#: Columns identifying a pair of stories judged on a dimension.
PAIR = ["dimension", "prompt_id", "lo", "hi"]


def keyed(verdicts: pd.DataFrame, source: str = "verdicts") -> pd.DataFrame:
    """One row per verdict: ``judge, dimension, prompt_id, lo, hi, sys_lo, sys_hi,
    first_is_lo, outcome`` (+1 the story ``lo`` won, -1 ``hi`` won, 0 a tie), ``lo <= hi``
    as text. Systems come from ``system_a``/``system_b`` (or ``"system/prompt"`` ids)."""
    from storyeval.pairwise.verdicts import validate_verdicts

    v = validate_verdicts(verdicts, source=source)
    a, b = v["story_a"].to_numpy(dtype=object), v["story_b"].to_numpy(dtype=object)
    swap = a > b
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    if "system_a" in v.columns:
        sa, sb = v["system_a"].astype(str).to_numpy(), v["system_b"].astype(str).to_numpy()
        sys_lo, sys_hi = np.where(swap, sb, sa), np.where(swap, sa, sb)
    else:
        sys_lo = sys_hi = np.full(len(v), None, dtype=object)
    first = np.where(v["order"].to_numpy() == "AB", a, b)
    winner = v["winner"].to_numpy(dtype=object)
    tie = v["winner"].isna().to_numpy()
    outcome = np.where(tie, 0, np.where(winner == lo, 1, -1)).astype(np.int64)
    return pd.DataFrame({"judge": v["judge"].astype(str).to_numpy(),
                         "dimension": v["dimension"].astype(str).to_numpy(),
                         "prompt_id": v["prompt_id"].astype(str).to_numpy(),
                         "lo": lo.astype(str), "hi": hi.astype(str),
                         "sys_lo": sys_lo, "sys_hi": sys_hi,
                         "first_is_lo": first == lo, "outcome": outcome})


def select(k: pd.DataFrame, *, judge: str | None = None,
           dimension: str | None = None, source: str = "verdicts") -> pd.DataFrame:
    """Rows of one judge and/or dimension (an error names a missing one)."""
    for col, value in (("judge", judge), ("dimension", dimension)):
        if value is not None:
            if value not in set(k[col]):
                raise InputError(f"{source}: no {col} {value!r}; available: "
                                 f"{sorted(set(k[col]))}")
            k = k[k[col] == value]
    return k


def require_systems(k: pd.DataFrame, source: str) -> None:
    if k["sys_lo"].isna().any():
        raise InputError(f"{source}: the systems of the stories are unknown; give system_a and "
                         "system_b columns or story ids SYSTEM/PROMPT_ID")


def reference_means(ref: pd.DataFrame) -> pd.Series:
    """The reference's mean outcome (from ``lo``'s side) on each pair, over its verdicts."""
    return ref.groupby(PAIR, sort=False)["outcome"].mean()


def own_map(own: Mapping[str, str | Sequence[str]], name: str = "own") -> dict[str, set[str]]:
    """``{rater: {systems}}`` from a mapping of rater to one system or several."""
    if not own:
        raise InputError(f"{name}: declare at least one rater and its own system(s)")
    out: dict[str, set[str]] = {}
    for rater, systems in own.items():
        values = [systems] if isinstance(systems, str) else list(systems)
        if not values:
            raise InputError(f"{name}: rater {rater!r} has no system")
        out[str(rater)] = {str(s) for s in values}
    return out


def lengths_of(lengths: Mapping[str, float] | pd.Series, stories: np.ndarray,
               source: str = "lengths") -> np.ndarray:
    """The length of every story id of ``stories`` (an error names a missing one)."""
    series = lengths if isinstance(lengths, pd.Series) else pd.Series(dict(lengths))
    series = pd.Series(pd.to_numeric(series.to_numpy(), errors="coerce"),
                       index=series.index.astype(str))
    if series.index.duplicated().any():
        raise InputError(f"{source}: story {series.index[series.index.duplicated()][0]!r} has "
                         "two lengths")
    got = series.reindex(pd.Index(stories.astype(str)))
    missing = got.isna().to_numpy()
    if missing.any():
        raise InputError(f"{source}: no length for story {stories[np.argmax(missing)]!r} "
                         f"({int(missing.sum())} verdict stories without a length)")
    return got.to_numpy(dtype=np.float64)
