"""Tie-calibrated pairwise accuracy (acc*_eq) and Kendall's tau_23 (Deutsch et al. 2023).

Pairwise accuracy with ties (``acc23``) counts a pair of stories as correct when the metric
orders it as the humans do, or when both tie it:

    acc_eq = (C + T_hm) / (C + D + T_h + T_m + T_hm),

C concordant, D discordant, T_h pairs tied by the humans only, T_m by the metric only, T_hm by
both. ``tau23`` = (C + T_hm - D - T_h - T_m) / (same total). A metric with continuous scores
never ties, so it loses every pair the humans tie; *tie calibration* lets the metric declare a
tie whenever ``|m_i - m_j| <= epsilon`` and reports the value at the best epsilon. The best
epsilon is found exactly: the value only changes at the absolute metric differences of the pairs,
so every one of them (and 0) is a candidate; the smallest candidate with the largest value wins.

Grouping (the WMT "average_by" choice):

* ``groups=None`` (WMT ``"none"``, storyeval's *overall* / *system* level): one pool of all
  pairs;
* ``groups=labels`` (WMT ``"item"``, storyeval's *prompt* level): pairs within each group only,
  the statistic computed per group and averaged over the groups that have a pair, with one
  epsilon shared by all groups.

Up to `EXACT_CURVE_PAIRS` pairs, they are enumerated once, sorted once by ``|m_i - m_j|``, and
the value at every candidate is a cumulative sum of per-pair changes (O(P log P) for P pairs,
memory O(P), P = n(n-1)/2 for one pool); the result then holds the whole curve. Beyond, the
same best epsilon and value are found without enumerating every pair
(`storyeval.compare.tie_search`: O(n log n) per evaluated epsilon, branch and bound over
epsilon intervals), and the result holds the candidates evaluated. When every group has the
same number of pairs (a single pool, or a complete system x prompt grid) the counts are
integers and candidates are compared exactly; otherwise the values are floats and candidates
within 1e-12 of the best count as equal (the smallest wins). Bootstrap intervals
(`tie_calibrated_ci`) re-optimise epsilon in every resample with the same branch and bound
under the resample's weights (`storyeval.compare.tie_search.resampled_best`: what does not
depend on the weights, the window ends, cuts and small intervals' pairs, is shared by all
resamples; O(n) per resample and evaluated epsilon at the overall level, O(prompts) at the
prompt level); only where its prefix table does not fit (very many human levels at the overall
level) are all pairs enumerated, at most `MAX_PAIRS`.

Checked against google-research/mt-metrics-eval ``stats.KendallWithTiesOpt(variant='acc23' /
'23', sample_rate=1.0)`` on the embedded HANNA data (tests/test_tie_calibration.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = [
    "EXACT_CURVE_PAIRS",
    "VARIANTS",
    "TieCalibration",
    "kendall_23",
    "tie_calibrated",
    "tie_calibrated_table",
]

VARIANTS = ("acc23", "tau23")
_FLOAT_TIE = 1e-12
#: Most pairs a bootstrap interval (`tie_calibrated_ci`) enumerates where the search of
#: `storyeval.compare.tie_search.resampled_best` does not apply (about 40 bytes each: 2 GiB).
MAX_PAIRS = 50_000_000
#: Most pairs `tie_calibrated` enumerates to return the whole curve; larger inputs go through
#: `storyeval.compare.tie_search` (same value and epsilon, no n^2 memory).
EXACT_CURVE_PAIRS = 2**21


@dataclass(frozen=True)
class TieCalibration:
    """Result of `tie_calibrated`.

    Attributes
    ----------
    value : float
        The statistic at the best epsilon.
    epsilon : float
        The best epsilon (metric differences ``<= epsilon`` are ties).
    value_no_calibration : float
        The statistic at epsilon 0 (only exactly equal metric scores tie).
    thresholds, values : ndarray
        Every candidate epsilon (0 and the distinct pair differences, increasing) and the
        statistic there; beyond `EXACT_CURVE_PAIRS` pairs, the candidates the exact search
        evaluated (0, the best epsilon and the others it needed), increasing.
    n_pairs : int
        Pairs counted (within groups when grouped).
    n_groups : int
        Groups that have at least one pair (1 without grouping).
    variant : str
    """

    value: float
    epsilon: float
    value_no_calibration: float
    thresholds: np.ndarray
    values: np.ndarray
    n_pairs: int
    n_groups: int
    variant: str


def _check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise InputError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    return variant


def _as_vector(values, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric: {exc}") from exc
    if arr.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if np.isinf(arr).any():
        raise InputError(f"{name} has an infinite value at position "
                         f"{int(np.flatnonzero(np.isinf(arr))[0])}")
    return arr


def _pairs(group_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices (i, j), i < j, of the observation pairs that share a group (sorted codes)."""
    order = np.argsort(group_codes, kind="stable")
    codes = group_codes[order]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    sizes = np.diff(np.r_[starts, len(codes)])
    firsts, seconds = [], []
    for size in np.unique(sizes):  # one vectorised block per distinct group size
        if size < 2:
            continue
        a, b = np.triu_indices(size, 1)
        base = starts[sizes == size]
        firsts.append((base[:, None] + a[None]).ravel())
        seconds.append((base[:, None] + b[None]).ravel())
    if not firsts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return order[np.concatenate(firsts)], order[np.concatenate(seconds)]


def _credits(dh: np.ndarray, dm: np.ndarray, variant: str) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: the credit as scored, and the credit once the metric calls the pair a tie."""
    human_tie = dh == 0
    correct = (np.sign(dh) * np.sign(dm) > 0) | (human_tie & (dm == 0))
    if variant == "acc23":
        return correct.astype(np.int64), human_tie.astype(np.int64)
    return 2 * correct.astype(np.int64) - 1, 2 * human_tie.astype(np.int64) - 1


def _best(values: np.ndarray, exact: bool) -> int:
    """First candidate with the largest value (ties within float noise go to the smaller)."""
    if exact:
        return int(np.argmax(values))
    top = np.nanmax(values)
    return int(np.flatnonzero(values >= top - _FLOAT_TIE * max(1.0, abs(top)))[0])


@dataclass(frozen=True)
class _SortedPairs:
    """The pairs of one data set sorted by metric difference, with their credits."""

    diff: np.ndarray       # |m_i - m_j|, increasing
    change: np.ndarray     # credit once tied minus credit as scored
    normal: np.ndarray     # credit as scored
    group: np.ndarray      # group code of the pair (0..G-1)
    first: np.ndarray      # observation indices of the pair (into the kept observations)
    second: np.ndarray
    per_group: np.ndarray  # pairs per group
    codes: np.ndarray      # group code of every kept observation


def _count_pairs(codes: np.ndarray) -> int:
    sizes = np.bincount(codes) if len(codes) else np.zeros(0, dtype=np.int64)
    return int(np.sum(sizes * (sizes - 1) // 2))


def _check_bootstrap_pairs(codes: np.ndarray) -> None:
    n_pairs = _count_pairs(codes)
    if n_pairs > MAX_PAIRS:
        raise InputError(f"the bootstrap interval of tie-calibrated accuracy weighs every pair "
                         f"in every resample ({n_pairs:,} pairs here, about "
                         f"{n_pairs * 40 / 2**30:.1f} GiB); the limit is {MAX_PAIRS:,}: use the "
                         "prompt level (pairs within prompts), a sample of the stories, or no "
                         "interval (the point estimate has no such limit)")


def _sorted_pairs(h: np.ndarray, m: np.ndarray, codes: np.ndarray, variant: str) -> _SortedPairs:
    i, j = _pairs(codes)
    if len(i) == 0:
        raise InputError("tie-calibrated accuracy needs at least one pair of observations "
                         "(two in one group)")
    uniq, pair_group = np.unique(codes[i], return_inverse=True)
    dm = m[i] - m[j]
    normal, tied = _credits(h[i] - h[j], dm, variant)
    diff = np.abs(dm)
    order = np.argsort(diff, kind="stable")
    remap = np.full(codes.max() + 1, -1)
    remap[uniq] = np.arange(len(uniq))
    return _SortedPairs(diff[order], (tied - normal)[order], normal[order], pair_group[order],
                        i[order], j[order], np.bincount(pair_group), remap[codes])


def _candidates(diff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate thresholds and, per candidate, the index of the last pair it ties."""
    last = np.flatnonzero(np.r_[diff[1:] != diff[:-1], True])
    if diff[0] == 0:  # a zero difference is already a tie: candidate 0 is that run
        return diff[last], last
    return np.r_[0.0, diff[last]], np.r_[-1, last]


def _curve(sp: _SortedPairs, weight: np.ndarray | None) -> tuple[np.ndarray, bool]:
    """The statistic's numerator at every candidate (and whether it is an exact integer count
    over a common denominator). ``weight``: (B, pairs) weights summing to 1 per row, or None
    for the point estimate (each group's pairs weigh 1 / (pairs in group * groups))."""
    _, last = _candidates(sp.diff)
    if weight is None and np.all(sp.per_group == sp.per_group[0]):
        steps = np.r_[0, np.cumsum(sp.change)]
        return sp.normal.sum() + steps[last + 1], True
    if weight is None:
        weight = (1.0 / (sp.per_group[sp.group] * len(sp.per_group)))[None]
    steps = np.concatenate([np.zeros((len(weight), 1)), np.cumsum(sp.change * weight, axis=1)],
                           axis=1)
    base = (sp.normal * weight).sum(axis=1, keepdims=True)
    return (base + steps[:, last + 1]), False


def _prepare(human, metric, groups) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    h, m = _as_vector(human, "human"), _as_vector(metric, "metric")
    if len(h) != len(m):
        raise InputError(f"human and metric differ in length ({len(h)} vs {len(m)})")
    codes = np.zeros(len(h), dtype=np.int64)
    if groups is not None:
        labels = np.asarray(groups)
        if labels.shape != h.shape:
            raise InputError(f"groups must have one label per observation ({len(h)}), got "
                             f"shape {labels.shape}")
        codes = pd.factorize(labels)[0]
    keep = ~(np.isnan(h) | np.isnan(m))
    return h[keep], m[keep], codes[keep], keep


def tie_calibrated(
    human: Sequence[float] | np.ndarray,
    metric: Sequence[float] | np.ndarray,
    groups: Sequence | np.ndarray | None = None,
    *,
    variant: str = "acc23",
    calibrate: bool = True,
) -> TieCalibration:
    """Pairwise accuracy with ties (``acc23``) or tau_23 at the optimal tie threshold epsilon.

    Parameters
    ----------
    human, metric : 1-D array-like of float
        Paired scores of the same observations. A NaN in either drops the observation.
    groups : 1-D array-like, optional
        Group label per observation: pairs are formed within groups and the statistic is
        averaged over groups (WMT ``average_by="item"``). None: all pairs (WMT ``"none"``).
    variant : {"acc23", "tau23"}
    calibrate : bool, default True
        False: epsilon = 0 (only equal metric scores tie).

    Returns
    -------
    TieCalibration

    Examples
    --------
    >>> r = tie_calibrated([1, 1, 2, 3], [0.10, 0.11, 0.5, 0.9])
    >>> round(r.value, 4), round(r.epsilon, 2), round(r.value_no_calibration, 4)
    (1.0, 0.01, 0.8333)
    """
    variant = _check_variant(variant)
    h, m, codes, _ = _prepare(human, metric, groups)
    if _count_pairs(codes) > EXACT_CURVE_PAIRS:
        return _searched(h, m, codes, variant, calibrate)
    sp = _sorted_pairs(h, m, codes, variant)
    thresholds, _ = _candidates(sp.diff)
    numerators, exact = _curve(sp, None)
    if exact:
        values = numerators / float(sp.per_group[0] * len(sp.per_group))
    else:
        values = numerators = numerators[0]
    pick = _best(numerators, exact) if calibrate else 0
    return TieCalibration(
        value=float(values[pick]), epsilon=float(thresholds[pick]),
        value_no_calibration=float(values[0]), thresholds=thresholds, values=values,
        n_pairs=len(sp.diff), n_groups=len(sp.per_group), variant=variant)


def _searched(h: np.ndarray, m: np.ndarray, codes: np.ndarray, variant: str,
              calibrate: bool) -> TieCalibration:
    """`tie_calibrated` through `storyeval.compare.tie_search` (no enumeration of all pairs)."""
    from storyeval.compare.tie_search import search_best_epsilon

    found = search_best_epsilon(h, m, codes)
    total = float(found.pairs[0] * len(found.pairs))
    if found.exact:  # integer counts of correct pairs over a common denominator
        numerators = found.correct if variant == "acc23" else 2 * found.correct - total
        values = numerators / total
    else:  # weighted means of the groups' accuracies
        values = found.correct if variant == "acc23" else 2 * found.correct - 1
    pick = found.best if calibrate else 0
    return TieCalibration(
        value=float(values[pick]), epsilon=float(found.thresholds[pick]),
        value_no_calibration=float(values[0]), thresholds=found.thresholds, values=values,
        n_pairs=int(found.pairs.sum()), n_groups=len(found.pairs), variant=variant)


def kendall_23(human, metric, groups=None, *, epsilon: float = 0.0) -> float:
    """Kendall's tau_23 at a given tie threshold ``epsilon`` (not optimised)."""
    if epsilon < 0:
        raise InputError(f"epsilon must be >= 0, got {epsilon}")
    h, m, codes, _ = _prepare(human, metric, groups)
    if _count_pairs(codes) > EXACT_CURVE_PAIRS:
        from storyeval.compare.tie_search import counts_at

        correct, pairs = counts_at(h, m, codes, float(epsilon))
        return float(np.mean((2 * correct - pairs) / pairs))
    res = tie_calibrated(human, metric, groups, variant="tau23", calibrate=False)
    k = int(np.searchsorted(res.thresholds, epsilon, side="right")) - 1
    return float(res.values[max(k, 0)])


LEVEL_GROUPING = {"overall": "global (all story pairs; WMT average_by='none')",
                  "prompt": "item-grouped (pairs within a prompt, averaged over prompts; WMT "
                            "average_by='item')",
                  "system": "global over system means (WMT system level)"}


def _level_vectors(wide: pd.DataFrame, columns: list[str], level: str,
                   tie_rtol: float) -> tuple[pd.DataFrame, np.ndarray | None]:
    """Rows of the level (stories or system means) and their groups (prompts) if any."""
    from storyeval.correlation.levels import level_data

    if level == "system":
        means = level_data(wide, columns, level="system", nan_policy="omit", tie_rtol=tie_rtol)
        assert isinstance(means, pd.DataFrame)
        return means, None
    frame = level_data(wide, columns, level="overall", nan_policy="omit")
    assert isinstance(frame, pd.DataFrame)  # the overall and system levels are frames
    if level == "overall":
        return frame, None
    names = list(wide.index.names)
    prompt_level = "prompt_id" if "prompt_id" in names else 1
    return frame, frame.index.get_level_values(prompt_level).to_numpy()


def tie_calibrated_table(
    wide: pd.DataFrame,
    measures: Sequence[str],
    criteria: Sequence[str],
    *,
    levels: Sequence[str] = ("overall", "system"),
    variant: str = "acc23",
    tie_rtol: float = 1e-12,
) -> pd.DataFrame:
    """`tie_calibrated` of every measure against every criterion at every level.

    Columns: ``measure, criterion, level, grouping, variant, value, epsilon,
    value_no_calibration, n_pairs, n_groups``. The overall level pools all story pairs, the
    prompt level groups them by prompt, the system level pools the system means (ties snapped
    with ``tie_rtol`` as for every system-level coefficient).
    """
    variant = _check_variant(variant)
    rows = []
    for level in levels:
        if level not in LEVEL_GROUPING:
            raise InputError(f"level must be one of {', '.join(LEVEL_GROUPING)}; got {level!r}")
        frame, groups = _level_vectors(wide, list(dict.fromkeys([*criteria, *measures])),
                                       level, tie_rtol)
        for criterion in criteria:
            for measure in measures:
                res = tie_calibrated(frame[criterion].to_numpy(), frame[measure].to_numpy(),
                                     groups, variant=variant)
                rows.append({"measure": measure, "criterion": criterion, "level": level,
                             "grouping": LEVEL_GROUPING[level], "variant": variant,
                             "value": res.value, "epsilon": res.epsilon,
                             "value_no_calibration": res.value_no_calibration,
                             "n_pairs": res.n_pairs, "n_groups": res.n_groups})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# bootstrap intervals (prompts resampled with storyeval.resample's draws)


def _best_rows(numerators: np.ndarray) -> np.ndarray:
    """Per row, the value at the first candidate within float noise of the row's maximum."""
    top = np.max(numerators, axis=1, keepdims=True)
    first = np.argmax(numerators >= top - _FLOAT_TIE * np.maximum(1.0, np.abs(top)), axis=1)
    return numerators[np.arange(len(numerators)), first]


def _story_resamples(sp: _SortedPairs, prompt_codes: np.ndarray, grouped: bool,
                     cP: np.ndarray) -> np.ndarray:
    """Calibrated statistic of every resample at the overall (pooled) or prompt level."""
    pair_prompt = prompt_codes[sp.first]
    out = np.empty(len(cP))
    step = max(1, 2**24 // len(sp.diff))
    for start in range(0, len(cP), step):  # blocks of resamples bound the memory
        c = cP[start:start + step]
        if grouped:  # a drawn prompt counts once per draw; its pairs share its weight
            weight = c[:, pair_prompt] / sp.per_group[sp.group][None]
        else:  # a pair of stories from prompts p and q enters c_p * c_q times
            weight = c[:, pair_prompt] * c[:, prompt_codes[sp.second]]
        total = weight.sum(axis=1, keepdims=True)
        numerators, _ = _curve(sp, np.divide(weight, total, out=np.full_like(weight, np.nan),
                                             where=total > 0))
        out[start:start + step] = _best_rows(numerators)
    return out


def _searched_resamples(h: np.ndarray, m: np.ndarray, codes: np.ndarray, prompts: np.ndarray,
                        cP: np.ndarray, level: str, variant: str) -> np.ndarray | None:
    """Calibrated statistic of every resample by the shared branch and bound of
    `storyeval.compare.tie_search.resampled_best` (no pair enumerated beyond small intervals);
    None where its overall-level table does not fit (the caller enumerates every pair)."""
    from storyeval.compare.tie_search import resampled_best

    if _count_pairs(codes) == 0:
        raise InputError("tie-calibrated accuracy needs at least one pair of observations "
                         "(two in one group)")
    acc = resampled_best(h, m, codes, prompts, cP, grouped=level == "prompt")
    if acc is None:
        return None
    return acc if variant == "acc23" else 2 * acc - 1  # weights sum to 1 in every resample


def _system_resamples(grid: np.ndarray, present: np.ndarray, h_col: int, m_col: int,
                      cP: np.ndarray, variant: str, tie_rtol: float) -> np.ndarray:
    """Calibrated statistic of system means recomputed from every resample of prompts."""
    from storyeval.correlation.ties import tie_values

    # grid: (prompts, systems, 2) with zeros where absent; means weighted by prompt draws
    sums = np.einsum("bp,psk->bsk", cP, grid)
    counts = cP @ present  # (B, systems)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts[..., None]
    out = np.empty(len(cP))
    for b in range(len(cP)):  # few systems: one small sorted pass per resample
        snapped = tie_values(means[b], "system", axis=0, rtol=tie_rtol)
        out[b] = tie_calibrated(snapped[:, h_col], snapped[:, m_col], variant=variant).value
    return out


def tie_calibrated_ci(
    wide: pd.DataFrame,
    measure: str,
    criterion: str,
    *,
    level: str = "overall",
    variant: str = "acc23",
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
    tie_rtol: float = 1e-12,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the tie-calibrated statistic, prompts resampled.

    The draws are those of `storyeval.resample.bootstrap.draw_resamples` (``resample_by=
    "prompts"``, all systems kept); epsilon is re-optimised in every resample (the interval
    covers the calibrated statistic, not the value at a fixed epsilon). Overall level: a pair
    of stories from prompts p and q counts ``c_p * c_q`` times (copies of one story are not
    paired with each other); prompt level: a prompt counts once per draw; system level: the
    system means are recomputed from the drawn prompts.

    The overall and prompt levels find every resample's best epsilon by the branch and bound
    of `storyeval.compare.tie_search.resampled_best` (the same values as recomputing the curve
    over every pair, tests/test_tie_calibration.py), without enumerating all pairs; where its
    overall-level prefix table ((human levels + 1) x (n + 1) floats) exceeds
    `storyeval.compare.tie_search.RESAMPLE_TABLE_CELLS`, the pairs are enumerated and more than
    `MAX_PAIRS` is an `InputError`; `tie_calibrated` itself has no such limit.
    """
    from storyeval.resample._common import check_confidence
    from storyeval.resample.bootstrap import draw_resamples

    variant = _check_variant(variant)
    alpha = 1.0 - check_confidence(confidence_level)
    if level not in LEVEL_GROUPING:
        raise InputError(f"level must be one of {', '.join(LEVEL_GROUPING)}; got {level!r}")
    names = list(wide.index.names)
    sys_name = "system" if "system" in names else 0
    prompt_name = "prompt_id" if "prompt_id" in names else 1
    frame = wide[[criterion, measure]]
    prompt_codes, prompts = pd.factorize(frame.index.get_level_values(prompt_name), sort=True)
    system_codes, systems = pd.factorize(frame.index.get_level_values(sys_name), sort=True)
    cS, cP = draw_resamples(len(systems), len(prompts), n_resamples=n_resamples,
                            resample_by="prompts", random_state=random_state)
    del cS
    values = frame.to_numpy(dtype=np.float64)
    if level == "system":
        present = ~np.isnan(values).any(axis=1)
        grid = np.zeros((len(prompts), len(systems), 2))
        grid[prompt_codes[present], system_codes[present]] = values[present]
        mask = np.zeros((len(prompts), len(systems)))
        mask[prompt_codes[present], system_codes[present]] = 1.0
        draws = _system_resamples(grid, mask, 0, 1, cP, variant, tie_rtol)
    else:
        h, m, codes, keep = _prepare(values[:, 0], values[:, 1],
                                     prompt_codes if level == "prompt" else None)
        searched = _searched_resamples(h, m, codes, prompt_codes[keep], cP, level, variant)
        if searched is None:  # many human levels, overall level: every pair, every resample
            _check_bootstrap_pairs(codes)
            sp = _sorted_pairs(h, m, codes, variant)
            searched = _story_resamples(sp, prompt_codes[keep], level == "prompt", cP)
        draws = searched
    finite = draws[np.isfinite(draws)]
    if finite.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(finite, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)
