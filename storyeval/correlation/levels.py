"""Correlation levels: overall (stories), system (system means) and prompt (within prompts).

The input is a *wide* score frame: index a two-level MultiIndex ``(system, prompt_id)`` (one row
per story), one float column per measure (``Dataset.wide()``). One explicit argument,
``level="overall" | "system" | "prompt"``, chooses what gets correlated:

* ``"overall"``: the per-story scores of all stories (n = number of stories);
* ``"system"``: the mean of each measure over each system's stories (n = number of systems);
* ``"prompt"``: within each prompt, the scores of the systems are correlated, then the
  coefficients are averaged over prompts (n = systems per prompt, ``n_groups`` = prompts
  averaged). All prompts are computed at once from a 3-D (prompt, system, measure) array.
* ``"within"`` (within-system): within each system, the scores of its stories (one per prompt)
  are correlated, then the coefficients are averaged over systems (n = prompts per system,
  ``n_groups`` = systems averaged): whether a measure tells a system's better stories from its
  worse ones (mt-metrics-eval's ``average_by="sys"``; the same cube, transposed).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from storyeval.correlation.kernel import (
    CorrelationMatrix,
    _check_nan_policy,
    pairwise_correlations,
    resolve_method,
    unit_exponent,
)
from storyeval.correlation.ties import TIE_RTOL, snap_ties, tie_values  # noqa: F401 (re-exported)
from storyeval.data.level_names import canonical_level
from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel

__all__ = ["ALL_LEVELS", "LEVELS", "CorrelationGrid", "correlate", "correlation_grid", "correlation_matrix",
           "level_data"]

LEVELS: tuple[str, ...] = ("overall", "system", "prompt")
#: Every level a correlation can be computed at: `LEVELS` and ``"within"`` (within-system:
#: correlate across a system's prompts, then average over systems; mt-metrics-eval's
#: ``average_by="sys"``). Kept apart from `LEVELS`, whose three levels every table reports.
ALL_LEVELS: tuple[str, ...] = (*LEVELS, "within")

# the NaN reason that is not an undefined coefficient (no warning for it)
_PROPAGATED = "missing values (nan_policy='propagate')"

_TIDY_COLUMNS = ["measure_x", "measure_y", "level", "coefficient", "value", "n", "n_groups",
                 "reason"]


def _plain(label: Any) -> Any:
    """A label with numpy scalars turned into Python ones (for readable messages)."""
    if isinstance(label, tuple):
        return tuple(_plain(v) for v in label)
    return label.item() if isinstance(label, np.generic) else label


def _check_level(level: str) -> str:
    level = canonical_level(level)  # WMT / summarization names (storyeval.data.level_names)
    if level not in ALL_LEVELS:
        raise InputError(f"level must be one of {', '.join(ALL_LEVELS)}; got {level!r}")
    return level


def _index_levels(wide: pd.DataFrame) -> tuple[Any, Any]:
    """Names (or positions) of the system and prompt levels of the index."""
    if not isinstance(wide, pd.DataFrame):
        raise InputError(f"wide must be a pandas DataFrame, got {type(wide).__name__}")
    idx = wide.index
    if not isinstance(idx, pd.MultiIndex) or idx.nlevels != 2:
        raise InputError("wide must be indexed by a two-level MultiIndex (system, prompt_id); "
                         f"got index {type(idx).__name__} with {idx.nlevels} level(s)")
    names = list(idx.names)
    if "system" in names and "prompt_id" in names:
        return "system", "prompt_id"
    return 0, 1


def _select(wide: pd.DataFrame, measures: Sequence[str] | str | None, argname: str) -> list[str]:
    if measures is None:
        return [str(c) for c in wide.columns]
    if isinstance(measures, str):
        measures = [measures]
    measures = list(measures)
    if not measures:
        raise InputError(f"{argname} is empty: give at least one measure")
    missing = [m for m in measures if m not in wide.columns]
    if missing:
        raise InputError(f"{argname}: measure(s) not in the score table: {missing}")
    return measures


def _validate(wide: pd.DataFrame, measures: list[str], nan_policy: str) -> pd.DataFrame:
    _index_levels(wide)
    if wide.index.has_duplicates:
        dup = _plain(wide.index[wide.index.duplicated()][0])
        raise InputError(f"wide has duplicated story index {dup!r}; each (system, prompt_id) "
                         "must appear once")
    repeated = sorted(set(measures) & set(wide.columns[wide.columns.duplicated()]))
    if repeated:
        raise InputError(f"wide has duplicated measure column(s) {repeated}; each measure must "
                         "be one column")
    sub = wide.loc[:, measures]
    bad = [m for m, dtype in zip(measures, sub.dtypes) if not pd.api.types.is_numeric_dtype(dtype)]
    if bad:
        raise InputError(f"non-numeric measure column(s): {bad}")
    sub = sub.astype(np.float64)
    infinite = np.isinf(sub.to_numpy())
    if infinite.any():
        row, col = np.argwhere(infinite)[0]
        raise InputError(
            f"infinite value {sub.iat[row, col]} for measure {measures[col]!r} at story "
            f"{_plain(sub.index[row])!r} ({int(infinite.sum())} in total); scores must be "
            "finite numbers (NaN marks a missing value)")
    if nan_policy == "raise":
        isna = sub.isna().to_numpy()
        if isna.any():
            row, col = np.argwhere(isna)[0]
            raise InputError(
                f"missing value (NaN) for measure {measures[col]!r} at story "
                f"{_plain(sub.index[row])!r} ({int(isna.sum())} missing in total); use "
                "nan_policy='omit' (pairwise deletion; system means over available stories) or "
                "'propagate'")
    return sub


def level_data(
    wide: pd.DataFrame,
    measures: Sequence[str] | None = None,
    *,
    level: str = "overall",
    nan_policy: str = "raise",
    tie_rtol: float = TIE_RTOL,
) -> pd.DataFrame | np.ndarray:
    """What gets correlated at a level.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, one float column per measure.
    measures : sequence of str, optional
        Columns to keep (default: all).
    level : {"overall", "system", "prompt", "within"}
    nan_policy : {"raise", "omit", "propagate"}
        ``"raise"``: InputError naming the measure and story. ``"omit"``: a system mean is the
        mean of that system's available stories (NaN if it has none). ``"propagate"``: a system
        mean with a missing story is NaN.
    tie_rtol : float, default 1e-12
        System level only: system means that agree within this relative tolerance are made
        equal (the tie rule, `storyeval.correlation.ties`), so that means equal in exact
        arithmetic are ties whatever the floating-point summation order. ``0`` keeps raw means.
        Overall and prompt levels compare the raw scores exactly.

    Returns
    -------
    DataFrame or ndarray
        ``"overall"``: the story x measure frame; ``"system"``: a system x measure frame of
        means; ``"prompt"``: an array of shape (prompt, system, measure), prompts and systems
        sorted, NaN where a (system, prompt) story is absent; ``"within"``: the same array
        transposed to (system, prompt, measure).

    Raises
    ------
    InputError
        Bad level / nan_policy, unknown or non-numeric measures, an index that is not
        (system, prompt_id) or has duplicates, NaN under ``"raise"`` (naming measure and story),
        a missing (system, prompt) story at the prompt level under ``"raise"``.

    Notes
    -----
    System level: m_bar(s) = (1 / |stories of s with a value|) sum of m over them.

    Validated against ``DataFrame.groupby(level="system").mean()`` (tests/test_correlation.py).

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_product([["A", "B"], [0, 1]], names=["system", "prompt_id"])
    >>> wide = pd.DataFrame({"m": [1.0, 3.0, 2.0, 6.0]}, index=idx)
    >>> level_data(wide, level="system")["m"].tolist()
    [2.0, 4.0]
    """
    level = _check_level(level)
    nan_policy = _check_nan_policy(nan_policy)
    measures = _select(wide, measures, "measures")
    sub = _validate(wide, measures, nan_policy)
    if level == "overall":
        return sub
    if level == "system":
        sys_level, _ = _index_levels(wide)
        values = sub.to_numpy(dtype=np.float64)
        # means of columns scaled to (-1, 1) by a power of two (exact): no overflow near 1e308
        exponent = unit_exponent(values, axis=0, where=~np.isnan(values))
        scaled = pd.DataFrame(np.ldexp(values, -exponent), index=sub.index, columns=sub.columns)
        grouped = scaled.groupby(level=sys_level, sort=True)
        scaled_means = grouped.mean()  # skips NaN (pandas 2 has no skipna here)
        means = pd.DataFrame(np.ldexp(scaled_means.to_numpy(), exponent),
                             index=scaled_means.index, columns=scaled_means.columns)
        if nan_policy == "propagate":
            means = means.where(grouped.count().to_numpy() == grouped.size().to_numpy()[:, None])
        return means.copy(deep=False).pipe(_snap_frame, tie_rtol)
    cube = _prompt_cube(sub, nan_policy)[0]
    return cube.transpose(1, 0, 2) if level == "within" else cube


def _snap_frame(frame: pd.DataFrame, tie_rtol: float) -> pd.DataFrame:
    """System means under the tie rule (`storyeval.correlation.ties.tie_values`)."""
    return pd.DataFrame(tie_values(frame.to_numpy(dtype=np.float64), "system", rtol=tie_rtol),
                        index=frame.index, columns=frame.columns)


def _sorted(values) -> list:
    try:
        return sorted(values)
    except TypeError:  # mixed label types
        return sorted(values, key=str)


def _prompt_cube(sub: pd.DataFrame, nan_policy: str) -> tuple[np.ndarray, list, list]:
    """(prompt, system, measure) array with its prompt and system labels."""
    sys_level, prompt_level = _index_levels(sub)
    systems = _sorted(sub.index.unique(level=sys_level))
    prompts = _sorted(sub.index.unique(level=prompt_level))
    full = pd.MultiIndex.from_product([prompts, systems])
    swapped = sub.copy()
    swapped.index = pd.MultiIndex.from_arrays([sub.index.get_level_values(prompt_level),
                                               sub.index.get_level_values(sys_level)])
    absent = full.difference(swapped.index)
    if len(absent) and nan_policy == "raise":
        prompt, system = _plain(absent[0])
        raise InputError(f"prompt level needs every system to have a story for every prompt: "
                         f"no story for system {system!r} and prompt {prompt!r} "
                         f"({len(absent)} missing); use nan_policy='omit'")
    cube = swapped.reindex(full).to_numpy(dtype=np.float64)
    return cube.reshape(len(prompts), len(systems), sub.shape[1]), prompts, systems


def _correlate_arrays(
    wide: pd.DataFrame,
    x_measures: list[str],
    y_measures: list[str],
    level: str,
    method: str,
    nan_policy: str,
    tie_rtol: float = TIE_RTOL,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(value, n, n_groups, reason) arrays of shape (p, q) at a level."""
    both = list(dict.fromkeys([*x_measures, *y_measures]))
    sub = _validate(wide, both, nan_policy)
    position = {m: i for i, m in enumerate(both)}
    ix = [position[m] for m in x_measures]
    iy = [position[m] for m in y_measures]
    if level in ("overall", "system"):
        data = sub if level == "overall" else level_data(sub, both, level="system",
                                                         nan_policy=nan_policy,
                                                         tie_rtol=tie_rtol)
        arr = data.to_numpy(dtype=np.float64)
        if ix != iy and len(both) ** 2 < len(ix) * len(iy) * 2:
            # x and y mostly overlap (e.g. all pairs of measures plus a few criteria): one
            # symmetric problem over their union is cheaper than two sets of sign matrices.
            res = pairwise_correlations(arr, None, method=method, nan_policy=nan_policy,
                                        warn=False)
            res = res.subset(ix, iy)
        else:
            res = pairwise_correlations(arr[:, ix], None if ix == iy else arr[:, iy],
                                        method=method, nan_policy=nan_policy, warn=False)
        stat, reason = _two_points_undefined(res.statistic, res.n, res.reason)
        res = CorrelationMatrix(stat, res.n, res.method, res.x_names, res.y_names, reason)
        _warn_undefined(res, x_measures, y_measures, level)
        n_groups = np.ones(res.n.shape, dtype=np.int64)
        return res.statistic, res.n, n_groups, res.reason
    cube, prompts, systems = _prompt_cube(sub, nan_policy)
    if level == "within":  # groups are systems, points their prompts (average_by="sys")
        cube, prompts = cube.transpose(1, 0, 2), systems
    group, across = ("system", "prompts") if level == "within" else ("prompt", "systems")
    res = pairwise_correlations(cube[:, :, ix], None if ix == iy else cube[:, :, iy],
                                method=method, nan_policy=nan_policy, warn=False)
    stat, n, reason = res.statistic, res.n, res.reason
    undefined = np.isnan(stat) & (reason != _PROPAGATED)
    defined = ~np.isnan(stat)
    n_groups = defined.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(defined, stat, 0.0).sum(axis=0) / n_groups
    value = np.where(n_groups > 0, value, np.nan)
    n_min = np.where(defined, n, np.iinfo(np.int64).max).min(axis=0)
    n_min = np.where(n_groups > 0, n_min, 0)
    out_reason = np.full(value.shape, "", dtype=object)
    n_undefined = undefined.sum(axis=0)
    out_reason[n_undefined > 0] = f"some {group}s left out (correlation undefined there)"
    out_reason[n_groups == 0] = f"correlation undefined in every {group}"
    if nan_policy == "propagate":
        prop = (np.isnan(stat) & ~undefined).any(axis=0)
        value = np.where(prop, np.nan, value)
        out_reason[prop] = _PROPAGATED
    if n_undefined.any():
        where = np.argwhere(n_undefined > 0)
        examples = ", ".join(f"({x_measures[a]!r}, {y_measures[b]!r}): "
                             f"{int(n_undefined[a, b])}/{len(prompts)}" for a, b in where[:3])
        more = f" and {len(where) - 3} more pairs" if len(where) > 3 else ""
        warnings.warn(
            f"{level} level, {method}: the correlation is undefined (constant across {across} or "
            f"fewer than 2 {across}) in some {group}s, which are left out of the average "
            f"(n_groups reports the {group}s averaged): {examples}{more}",
            UndefinedStatisticWarning, stacklevel=user_stacklevel())
    return value, n_min.astype(np.int64), n_groups.astype(np.int64), out_reason


def _two_points_undefined(stat: np.ndarray, n: np.ndarray, reason: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """A meta-evaluation correlation over 2 stories or systems is -1 or 1 whatever the data:
    NaN, with that reason (the correlation functions themselves return it, as scipy does)."""
    two = (n == 2) & ~np.isnan(stat)
    if not two.any():
        return stat, reason
    reason = reason.copy()
    reason[two] = "only 2 observations: a correlation of 2 points is always -1 or 1"
    return np.where(two, np.nan, stat), reason


def _warn_undefined(res: CorrelationMatrix, xm: list[str], ym: list[str], level: str) -> None:
    undefined = np.isnan(res.statistic) & (res.reason != _PROPAGATED)
    if undefined.any():
        where = np.argwhere(undefined)
        examples = ", ".join(f"({xm[a]!r}, {ym[b]!r})" for a, b in where[:3])
        more = f" and {len(where) - 3} more" if len(where) > 3 else ""
        warnings.warn(f"{level} level, {res.method}: {len(where)} correlation(s) undefined "
                      f"(constant input or fewer than 3 observations), returned as NaN: "
                      f"{examples}{more}", UndefinedStatisticWarning, stacklevel=user_stacklevel())


def correlate(
    wide: pd.DataFrame | Any,
    x_measures: Sequence[str] | str | None = None,
    y_measures: Sequence[str] | str | None = None,
    *,
    level: str = "overall",
    method: str = "kendall_b",
    nan_policy: str = "raise",
    tie_rtol: float = TIE_RTOL,
) -> pd.DataFrame:
    """Correlate measures with measures at one level, as a tidy table.

    Parameters
    ----------
    wide : DataFrame or Dataset
        Index ``(system, prompt_id)``, one float column per measure (``Dataset.wide()``), or a
        `Dataset` (its wide table). Filter systems beforehand (HANNA: the paper leaves out
        ``Human``; ``dataset.select_systems(...)``).
    x_measures, y_measures : str or sequence of str
        Every x measure is correlated with every y measure; ``y_measures=None`` uses
        ``x_measures``. With a `Dataset` and no ``x_measures``: its automatic measures (x)
        with its human criteria (y).
    level : {"overall", "system", "prompt", "within"}, default "overall"
    method : {"kendall_b", "kendall_c", "pearson", "spearman"}, default "kendall_b"
    nan_policy : {"raise", "omit", "propagate"}, default "raise"
        See [`level_data`][] (system means) and
        [`storyeval.correlation.kernel.pairwise_correlations`][] (pairwise deletion).
    tie_rtol : float, default 1e-12
        Tie tolerance for system means (see [`level_data`][]).

    Returns
    -------
    DataFrame
        One row per (x, y) pair, x-major: ``measure_x, measure_y, level, coefficient, value, n,
        n_groups, reason``. ``n`` is the number of stories (overall), systems (system) or the
        smallest number of systems in any averaged prompt (prompt) or of prompts in any averaged
        system (within); ``n_groups`` is the number of prompts (prompt level) or systems
        (within level) averaged, 1 otherwise. ``reason`` explains a NaN or a shortened average.

    Warns
    -----
    UndefinedStatisticWarning
        For undefined (NaN) coefficients and for prompts left out of a prompt-level average
        because the coefficient is undefined there (e.g. a measure constant across systems).

    Notes
    -----
    prompt level: value = (1/G) sum_g corr(x[g, :], y[g, :]) over the G prompts g where the
    coefficient is defined, x[g, s] the score of system s on prompt g. within level: value =
    (1/S) sum_s corr(x[:, s], y[:, s]) over the S systems where it is defined.

    References
    ----------
    1. Chhun, C., Suchanek, F. M., Clavel, C. (2024). Do Language Models Enjoy Their Own
       Stories? Prompting Large Language Models for Automatic Story Evaluation. TACL 12.

    Validated against per-pair ``scipy.stats`` coefficients computed on pandas group means and
    on per-prompt slices (tests/test_correlation.py), against the paper's figures on HANNA, and
    (within level) against mt-metrics-eval's ``AverageCorrelation(average_by="sys")``
    (tests/test_within_level.py).

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_product([["A", "B", "C"], [0, 1]], names=["system", "prompt_id"])
    >>> wide = pd.DataFrame({"h": [1., 2., 2., 3., 4., 5.], "m": [1., 1., 3., 2., 5., 4.]}, idx)
    >>> correlate(wide, "m", "h", level="system")[["level", "value", "n"]].values.tolist()
    [['system', 1.0, 3]]
    """
    wide, x_measures, y_measures = _correlate_inputs(wide, x_measures, y_measures)
    return correlation_grid(wide, x_measures, y_measures, level=level, method=method,
                            nan_policy=nan_policy, tie_rtol=tie_rtol).to_frame()


def _correlate_inputs(data: Any, x: Sequence[str] | str | None,
                      y: Sequence[str] | str | None
                      ) -> tuple[pd.DataFrame, Sequence[str] | str, Sequence[str] | str | None]:
    """The wide table and measures of a `correlate` call on a table or a Dataset."""
    from storyeval.data.dataset import Dataset

    if isinstance(data, Dataset):
        if x is None:
            from storyeval.data.selection import SCORED_KINDS

            cat = data.catalogue
            x = cat.loc[cat["kind"].isin(SCORED_KINDS), "measure"].tolist()
            y = data.criteria if y is None else y
            if not x:
                raise InputError("correlate: the dataset has no automatic measures to "
                                 "correlate with its criteria; name them: correlate(dataset, "
                                 "['m1'], ['Quality'])")
        return data.table, x, y
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"correlate: expected a Dataset or a wide DataFrame indexed by "
                         f"(system, prompt_id), got {type(data).__name__}; "
                         "read one with storyeval.data.read_dataset(...)")
    if x is None:
        raise InputError("correlate(wide, x_measures, ...): name the measures to correlate "
                         f"(columns of the table, e.g. {list(map(str, data.columns[:3]))})")
    return data, x, y


@dataclass(frozen=True)
class CorrelationGrid:
    """Coefficients of every x measure with every y measure at one level, as arrays.

    The array form of [`correlate`][] for code that looks up many entries (the Williams
    tests): [`take`][] picks entries by measure names without building the tidy table.

    Attributes
    ----------
    x, y : tuple of str
        Measure names of the rows and columns.
    level, method : str
    value, n, n_groups, reason : ndarray, shape (len(x), len(y))
        As the columns of the same names in [`correlate`][].
    """

    x: tuple[str, ...]
    y: tuple[str, ...]
    level: str
    method: str
    value: np.ndarray
    n: np.ndarray
    n_groups: np.ndarray
    reason: np.ndarray = field(repr=False)

    def positions(self, x_names: Sequence[str], y_names: Sequence[str],
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Row and column positions of the entries (x_names[i], y_names[i]); InputError
        naming the first measure that is not in the grid."""
        rows = positions(self.x, x_names, "the grid's x")
        cols = positions(self.y, y_names, "the grid's y")
        return rows, cols

    def take(self, x_names: Sequence[str], y_names: Sequence[str]) -> dict[str, np.ndarray]:
        """``value, n, n_groups, reason`` of the entries (x_names[i], y_names[i])."""
        rows, cols = self.positions(x_names, y_names)
        return {"value": self.value[rows, cols], "n": self.n[rows, cols],
                "n_groups": self.n_groups[rows, cols], "reason": self.reason[rows, cols]}

    def to_frame(self) -> pd.DataFrame:
        """The tidy table of [`correlate`][] (x-major)."""
        p, q = self.value.shape
        return pd.DataFrame({
            "measure_x": np.repeat(np.asarray(self.x, dtype=object), q),
            "measure_y": np.tile(np.asarray(self.y, dtype=object), p),
            "level": self.level,
            "coefficient": self.method,
            "value": self.value.ravel(),
            "n": self.n.ravel(),
            "n_groups": self.n_groups.ravel(),
            "reason": self.reason.ravel(),
        }, columns=_TIDY_COLUMNS)


def positions(names: Sequence[str], wanted: Sequence[str], where: str) -> np.ndarray:
    """Position in ``names`` of every measure of ``wanted``; InputError naming the first
    measure not found (``where`` says where it was looked for).

    For many lookups of few distinct names (Williams tests): only the distinct names are
    looked up, which beats ``pd.Index.get_indexer`` on pandas' Arrow strings by far.
    """
    # use_na_sentinel=False: a missing name (None, NaN) is a distinct name, reported below
    codes, distinct = pd.factorize(np.asarray(wanted, dtype=object), use_na_sentinel=False)
    lookup = {name: i for i, name in enumerate(names)}
    missing = [name for name in distinct if name not in lookup]
    if missing:
        raise InputError(f"measure {missing[0]!r} is not among {where} measures")
    return np.array([lookup[name] for name in distinct], dtype=np.intp)[codes]


def correlation_grid(
    wide: pd.DataFrame,
    x_measures: Sequence[str] | str,
    y_measures: Sequence[str] | str | None = None,
    *,
    level: str = "overall",
    method: str = "kendall_b",
    nan_policy: str = "raise",
    tie_rtol: float = TIE_RTOL,
) -> CorrelationGrid:
    """[`correlate`][] as a [`CorrelationGrid`][] of arrays (same arguments, same numbers).

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_product([["A", "B", "C"], [0, 1]], names=["system", "prompt_id"])
    >>> wide = pd.DataFrame({"h": [1., 2., 2., 3., 4., 5.], "m": [1., 1., 3., 2., 5., 4.]}, idx)
    >>> grid = correlation_grid(wide, ["m", "h"], "h", level="overall")
    >>> grid.take(["m"], ["h"])["value"].round(3).tolist()
    [0.643]
    """
    level = _check_level(level)
    method = resolve_method(method)
    nan_policy = _check_nan_policy(nan_policy)
    xm = _select(wide, x_measures, "x_measures")
    ym = xm if y_measures is None else _select(wide, y_measures, "y_measures")
    value, n, n_groups, reason = _correlate_arrays(wide, xm, ym, level, method, nan_policy,
                                                   tie_rtol)
    return CorrelationGrid(tuple(xm), tuple(ym), level, method, value, n, n_groups, reason)


def correlation_matrix(
    wide: pd.DataFrame,
    measures: Sequence[str] | None = None,
    *,
    level: str = "overall",
    method: str = "kendall_b",
    nan_policy: str = "raise",
    tie_rtol: float = TIE_RTOL,
    return_n: bool = False,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Square correlation matrix among measures at one level (e.g. r23 for Williams tests).

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, one float column per measure.
    measures : sequence of str, optional
        Measures to correlate (default: every column).
    level, method, nan_policy, tie_rtol
        As in [`correlate`][].
    return_n : bool, default False
        Also return the matrix of ``n`` (observations per pair; systems per prompt at the prompt
        level, as in [`correlate`][]).

    Returns
    -------
    DataFrame or (DataFrame, DataFrame)
        Measures x measures coefficients (and ``n``), symmetric.

    Validated against ``pandas.DataFrame.corr`` / scipy per pair (tests/test_correlation.py).

    Examples
    --------
    >>> import pandas as pd
    >>> idx = pd.MultiIndex.from_product([["A", "B", "C"], [0]], names=["system", "prompt_id"])
    >>> wide = pd.DataFrame({"a": [1., 2., 3.], "b": [3., 1., 2.]}, idx)
    >>> correlation_matrix(wide, level="overall", method="pearson").round(2).values.tolist()
    [[1.0, -0.5], [-0.5, 1.0]]
    """
    level = _check_level(level)
    method = resolve_method(method)
    nan_policy = _check_nan_policy(nan_policy)
    ms = _select(wide, measures, "measures")
    value, n, _, _ = _correlate_arrays(wide, ms, ms, level, method, nan_policy, tie_rtol)
    frame = pd.DataFrame(value, index=pd.Index(ms, name="measure_x"),
                         columns=pd.Index(ms, name="measure_y"))
    if return_n:
        return frame, pd.DataFrame(n, index=frame.index, columns=frame.columns)
    return frame
