"""Declared rating scales, and values no scale would hold.

A human rating outside its scale (a -3 or a 7 on a 1-5 scale, a 1e23 typed into a long file)
changes every mean it enters, so it must not pass silently:

* with a declared scale (``--scale 1-5``, or per criterion ``--scale Overall=1-5,Fluency=0-10``)
  a rating outside it is an error naming the file's row (long ratings) or the story and column
  (other layouts);
* without one, a value far outside the bulk of its criterion's values gives a warning naming
  its rows. "Far" is scale-free: farther from the median than ``FAR_FACTOR`` (20) times the
  larger of the median absolute deviation and the smallest step between distinct values (on
  a 1-5 scale with MAD 1: beyond median +- 20). A typing slip (1e23, 55 for 5.5) is caught, a
  legitimate extreme rating is not; values merely off a scale nobody declared (a 7 on 1-5)
  need ``--scale``.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError, StoryevalWarning

__all__ = ["FAR_FACTOR", "Scales", "check_values", "out_of_scale_per_rater", "parse_scale",
           "rater_out_of_scale"]

#: How many widths (the larger of the median absolute deviation and the scale's step) a value
#: may lie from its criterion's median before it is reported as far outside the others.
FAR_FACTOR = 20.0

#: ``{criterion or None (every criterion): (low, high)}``
Scales = dict[str | None, tuple[float, float]]

_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_RANGE = re.compile(rf"^\s*({_NUMBER})\s*(?:-|\.\.|:|to)\s*({_NUMBER})\s*$")


def parse_scale(spec: str | Mapping[str, object] | tuple[float, float] | None) -> Scales:
    """A scale declaration: ``"1-5"`` (every criterion), ``"Overall=1-5,Fluency=0-10"``, a
    mapping ``{criterion: "1-5" or (1, 5)}``, a pair ``(1, 5)``, or None (nothing declared).
    ``LO-HI``, ``LO..HI``, ``LO:HI`` and ``LO to HI`` are accepted (negative bounds too:
    ``-2..2``)."""
    if spec is None:
        return {}
    if isinstance(spec, tuple):
        return {None: _bounds(spec, "scale")}
    if isinstance(spec, Mapping):
        return {str(k): _bounds(v, f"scale of {k!r}") for k, v in spec.items()}
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"--scale: give LO-HI or CRITERION=LO-HI,..., got {spec!r}")
    out: Scales = {}
    for part in (p for p in spec.split(",") if p.strip()):
        name, sep, rng = part.rpartition("=")
        key = name.strip() if sep else None
        if sep and not key:
            raise InputError(f"--scale {part!r}: a criterion name is missing before '='")
        if key in out:
            raise InputError(f"--scale declares {'every criterion' if key is None else key!r} "
                             "twice")
        out[key] = _bounds(rng, f"--scale {part.strip()!r}")
    return out


def _bounds(value: object, what: str) -> tuple[float, float]:
    if isinstance(value, str):
        m = _RANGE.match(value)
        if not m:
            raise InputError(f"{what}: not a range LO-HI such as 1-5 or 0..10")
        lo, hi = float(m.group(1)), float(m.group(2))
    else:
        try:
            lo, hi = (float(v) for v in value)  # type: ignore[attr-defined]
        except (TypeError, ValueError):
            raise InputError(f"{what}: give (low, high) or 'LO-HI'") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise InputError(f"{what}: the low end must be below the high end, both finite")
    return lo, hi


def _scale_of(scales: Scales, criterion: str) -> tuple[float, float] | None:
    if criterion in scales:
        return scales[criterion]
    low = {str(k).lower(): v for k, v in scales.items() if k is not None}
    return low.get(criterion.lower(), scales.get(None))


def check_names(scales: Scales, criteria: list[str], source: str) -> None:
    """A per-criterion declaration must name criteria the data have."""
    known = {c.lower() for c in criteria}
    unknown = [k for k in scales if k is not None and k.lower() not in known]
    if unknown:
        raise InputError(f"--scale names {unknown} which {source} has no ratings of; its "
                         f"criteria: {sorted(criteria)}")


def check_values(values: pd.Series, criteria: pd.Series, labels, *, scales: Scales,
                 source: str) -> None:
    """Check ratings against declared scales (error) and against their own bulk (warning).

    ``values`` and ``criteria`` are aligned; ``labels(i)`` says how to find position ``i``
    (a file row, or a story and column)."""
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)
    # integer codes, not one string per rating (millions of ratings)
    codes, names = pd.factorize(criteria.astype(str) if criteria.dtype.kind in "iufb"
                                else criteria)
    names = [str(c) for c in names]
    if scales:
        check_names(scales, sorted(set(names)), source)
    for k, c in enumerate(names):
        at = np.flatnonzero(codes == k)
        x = v[at]
        ok = np.isfinite(x)  # NaN and infinities are reported by the readers
        scale = _scale_of(scales, c)
        if scale is not None:
            lo, hi = scale
            bad = at[ok & ((x < lo) | (x > hi))]
            if len(bad):
                shown = "; ".join(f"{labels(i)}: {v[i]:g}" for i in bad[:5])
                more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
                raise InputError(f"{source}: {len(bad)} rating(s) of {c!r} outside the declared "
                                 f"scale {lo:g}-{hi:g}: {shown}{more}")
            continue
        far = _far(x[ok])
        if far.any():
            idx = at[ok][far]
            shown = "; ".join(f"{labels(i)}: {v[i]:g}" for i in idx[:5])
            more = f" and {len(idx) - 5} more" if len(idx) > 5 else ""
            med = float(np.median(x[ok]))
            warnings.warn(f"{source}: {len(idx)} rating(s) of {c!r} lie far outside the range "
                          f"of the others (median {med:g}): {shown}{more}; "
                          "check them, or declare the scale (--scale LO-HI) to make this an "
                          "error", StoryevalWarning, stacklevel=3)


def _far(x: np.ndarray) -> np.ndarray:
    """Mask of values far from the bulk of ``x`` (see the module docstring): farther from the
    median than `FAR_FACTOR` times the larger of the median absolute deviation and the
    smallest step between distinct values (a rating scale's step). Both ignore a few extreme
    values, so one 1e23 cannot hide itself."""
    if len(x) < 3:
        return np.zeros(len(x), dtype=bool)
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med)))
    distinct = np.unique(x)
    step = float(np.diff(distinct).min()) if len(distinct) > 1 else 0.0
    width = max(mad, step)
    if width == 0:
        return np.zeros(len(x), dtype=bool)
    return np.abs(x - med) > FAR_FACTOR * width


def rater_out_of_scale(table: pd.DataFrame, catalogue: pd.DataFrame,
                       scale: tuple[float, float]) -> pd.DataFrame:
    """Per LLM-rating column, how many values lie outside the raters' ``scale``.

    Returns
    -------
    pandas.DataFrame
        One row per ``llm_rater`` column of ``catalogue`` present in ``table``: ``measure``,
        ``rater`` (model and Eval-Prompt, e.g. ``"Mistral-7B 1"``, the group of its criteria and
        of its ``AVG``; the catalogue's rater otherwise), ``n_values`` (non-missing values),
        ``n_below``, ``n_above`` and ``min``. NaN is neither below nor above.
    """
    lo, hi = scale
    cat = catalogue[(catalogue["kind"] == "llm_rater") & catalogue["measure"].isin(table.columns)]
    rows = []
    for _, row in cat.iterrows():
        x = table[row["measure"]].to_numpy(dtype=np.float64)
        ok = x[np.isfinite(x)]
        grouped = bool(row["model"]) and not pd.isna(row["eval_prompt"])
        rows.append({"measure": row["measure"],
                     "rater": f"{row['model']} {row['eval_prompt']}" if grouped else row["rater"],
                     "n_values": len(ok), "n_below": int((ok < lo).sum()),
                     "n_above": int((ok > hi).sum()),
                     "min": float(ok.min()) if len(ok) else np.nan})
    return pd.DataFrame(rows, columns=["measure", "rater", "n_values", "n_below", "n_above",
                                       "min"])


def out_of_scale_per_rater(counts: pd.DataFrame) -> dict[str, int]:
    """``{rater: values outside the scale}`` from `rater_out_of_scale`, raters with none
    left out, the most affected first."""
    per = (counts["n_below"] + counts["n_above"]).groupby(counts["rater"], sort=False).sum()
    per = per[per > 0].sort_values(ascending=False, kind="stable")
    return {str(k): int(v) for k, v in per.items()}
