"""Input handling shared by the resampling functions: a complete (system x prompt) grid."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.correlation.kernel import scale_to_unit
from storyeval.exceptions import InputError

LEVELS = ("overall", "system", "prompt")


@dataclass(frozen=True)
class Grid:
    """Scores as a dense cube ``X[s, p, k]`` (systems x prompts x columns), both axes sorted."""

    X: np.ndarray
    systems: list
    prompts: list
    columns: list

    @property
    def n_systems(self) -> int:
        return self.X.shape[0]

    @property
    def n_prompts(self) -> int:
        return self.X.shape[1]


def _sorted(values) -> list:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)


def check_level(level: str, allowed: Sequence[str] = LEVELS) -> str:
    if level not in allowed:
        raise InputError(f"level must be one of {', '.join(allowed)}; got {level!r}")
    return level


def resolve_pairs(pairs, argname: str = "pairs") -> list[tuple[str, str]]:
    """List of (measure, criterion) string tuples from a sequence of pairs or a DataFrame with
    ``measure`` and ``criterion`` columns (``storyeval.data.selection.criterion_pairs``)."""
    if isinstance(pairs, pd.DataFrame):
        if not {"measure", "criterion"} <= set(pairs.columns):
            raise InputError(f"{argname}: a DataFrame of pairs needs columns 'measure' and "
                             "'criterion'")
        pairs = list(zip(pairs["measure"], pairs["criterion"]))
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise InputError(f"{argname} must be a list of (measure, criterion) pairs")
    out = []
    for k, p in enumerate(pairs):
        if isinstance(p, str) or not hasattr(p, "__len__") or len(p) != 2:
            raise InputError(f"{argname}[{k}] must be a (measure, criterion) pair, got {p!r}")
        out.append((str(p[0]), str(p[1])))
    if not out:
        raise InputError(f"{argname} is empty")
    return out


def make_grid(wide: pd.DataFrame, columns: Sequence[str]) -> Grid:
    """Validate ``wide`` (index (system, prompt_id), complete grid, no NaN) and build the cube."""
    if not isinstance(wide, pd.DataFrame):
        raise InputError(f"wide must be a pandas DataFrame, got {type(wide).__name__}")
    idx = wide.index
    if not isinstance(idx, pd.MultiIndex) or idx.nlevels != 2:
        raise InputError("wide must be indexed by a two-level MultiIndex (system, prompt_id)")
    names = list(idx.names)
    sl, pl = (("system", "prompt_id") if "system" in names and "prompt_id" in names else (0, 1))
    if idx.has_duplicates:
        raise InputError(f"wide has duplicated story index {idx[idx.duplicated()][0]!r}")
    columns = list(dict.fromkeys(columns))
    missing = [c for c in columns if c not in wide.columns]
    if missing:
        raise InputError(f"measure(s) not in the score table: {missing}")
    sub = wide.loc[:, columns]
    bad = [c for c in columns if not pd.api.types.is_numeric_dtype(sub[c])]
    if bad:
        raise InputError(f"non-numeric measure column(s): {bad}")
    values = sub.to_numpy(dtype=np.float64)
    nan = np.isnan(values)
    if nan.any():
        row, col = np.argwhere(nan)[0]
        raise InputError(f"missing value (NaN) for measure {columns[col]!r} at story "
                         f"{sub.index[row]!r} ({int(nan.sum())} missing in total); resampling "
                         "needs complete data: drop or impute explicitly beforehand")
    systems = _sorted(idx.unique(level=sl))
    prompts = _sorted(idx.unique(level=pl))
    if len(systems) * len(prompts) != len(sub):
        full = pd.MultiIndex.from_product([systems, prompts])
        have = pd.MultiIndex.from_arrays([idx.get_level_values(sl), idx.get_level_values(pl)])
        absent = full.difference(have)
        raise InputError(f"resampling needs every system to have a story for every prompt: no "
                         f"story for (system, prompt) {absent[0]!r} ({len(absent)} missing)")
    si = pd.Index(systems).get_indexer(idx.get_level_values(sl))
    pi = pd.Index(prompts).get_indexer(idx.get_level_values(pl))
    X = np.empty((len(systems), len(prompts), len(columns)))
    # each column scaled to (-1, 1) by a power of two: exact, and it changes no correlation,
    # but no sum of squares overflows (values near 1e308) or underflows (near 1e-300)
    X[si, pi, :] = scale_to_unit(values, axis=0)
    return Grid(X, systems, prompts, columns)
