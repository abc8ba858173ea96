"""Multiple-comparison adjustment of p-values within explicit families.

The family (which p-values are adjusted together) changes the answer, so it is always an explicit
argument, and [`adjust_frame`][] writes it, in words, next to each adjusted p-value.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from storyeval._multitest import (  # noqa: F401 (re-exported: the public name)
    METHODS,
    _check_method,
    _family_codes,
    _validated_pvalues,
    adjust_pvalues,
)
from storyeval.exceptions import InputError, StoryevalWarning

__all__ = ["METHODS", "NAMED_FAMILIES", "SingleTestFamilyWarning", "adjust_frame",
           "adjust_pvalues", "family_sizes", "warn_single_test_families"]

# Named families for the Williams output (columns level, criterion, measure_a, measure_b,
# optionally rater_a, rater_b): name -> (grouping columns, what varies inside one family).
NAMED_FAMILIES: dict[str, tuple[tuple[str, ...], str]] = {
    # The HANNA paper: for each compared pair of measures, its six criteria, per level. When the
    # frame has rater_a/rater_b (criterion-matched LLM measures such as "ChatGPT RE 1" belong to
    # the rater group "ChatGPT 1"), those replace measure_a/measure_b.
    "paper": (("level", "measure_a", "measure_b"), "criterion"),
    "level": (("level",), "all tests of the level"),
    "criterion": (("level", "criterion"), "measure pairs"),
    "all": ((), "all tests"),
}
_WILLIAMS_COLUMNS = ("level", "criterion", "measure_a", "measure_b", "rater_a", "rater_b")


def _format_value(value: Any) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _frame_families(df: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, list[list[str]]]:
    """Family number of every row (in order of first appearance) and, per key, each family's
    grouping value formatted for the family text."""
    if not keys:
        return np.zeros(len(df), dtype=np.intp), []
    values = [df[k].to_numpy() for k in keys]
    combined = np.zeros(len(df), dtype=np.int64)
    for column in values:  # mixed-radix code of the key tuple, renumbered to stay < rows
        codes, uniques = pd.factorize(column)
        combined = pd.factorize(combined * len(uniques) + codes)[0].astype(np.int64)
    _, first, inverse = np.unique(combined, return_index=True, return_inverse=True)
    # renumber the families in order of first appearance
    appearance = np.argsort(np.argsort(first, kind="stable"), kind="stable")
    codes = appearance[inverse.ravel()].astype(np.intp)
    first = np.sort(first)
    return codes, [[_format_value(v) for v in column[first]] for column in values]


def adjust_frame(
    df: pd.DataFrame,
    *,
    by: str | Sequence[str],
    p_col: str = "p",
    method: Literal["bh", "by", "bonferroni", "holm", "none"] = "bh",
    out_col: str = "p_adjusted",
    family_col: str = "family",
    over: str | None = None,
) -> pd.DataFrame:
    """Adjust a column of p-values within families defined by columns, and say so in the output.

    Parameters
    ----------
    df : DataFrame
        One row per test.
    by : {"paper", "level", "criterion", "all"} or sequence of str
        The family definition. Named families assume the Williams output columns ``level``,
        ``criterion``, ``measure_a``, ``measure_b``:

        - ``"paper"`` (the HANNA figure): for each compared pair of measures, its criteria,
          separately per level (group by ``level, measure_a, measure_b``; by
          ``level, rater_a, rater_b`` instead when the frame has both rater columns, so that
          criterion-matched LLM measures such as ``"ChatGPT RE 1"``, ``"ChatGPT CH 1"`` form one
          family);
        - ``"level"``: all tests of a level (group by ``level``);
        - ``"criterion"``: all measure pairs of a criterion, per level (``level, criterion``);
        - ``"all"``: every row in one family.

        A sequence of column names groups by those columns (an empty sequence means one family).
    p_col : str, default "p"
        Column holding the p-values (in [0, 1], NaN allowed).
    method : {"bh", "by", "bonferroni", "holm", "none"}, default "bh"
        See [`adjust_pvalues`][].
    out_col : str, default "p_adjusted"
        Column written with the adjusted p-values.
    family_col : str, default "family"
        Column written with a human-readable family description, e.g.
        ``"bh over criterion | level=overall, measure_a=Beluga-13B 1, measure_b=BLEU (m=6)"``:
        the method, what varies inside the family, the grouping values, and ``m``, the number of
        non-missing p-values adjusted together.
    over : str, optional
        What varies inside a family, for the family text. Default: named families state it;
        for a list of columns it lists the Williams columns (``level, criterion, measure_a,
        measure_b, rater_a, rater_b``) not grouped on that vary inside some family, else
        ``"rows"``.

    Returns
    -------
    DataFrame
        A copy of ``df`` (same index and row order) with ``out_col`` and ``family_col`` added.

    Raises
    ------
    InputError
        If a column is missing, a grouping column has missing values, ``out_col`` or
        ``family_col`` already exists, ``by`` names an unknown family, or the p-values are invalid.

    Notes
    -----
    Rows with a NaN p-value keep a NaN adjusted p-value, are not counted in ``m``, and still get
    the family text of their group.

    Examples
    --------
    >>> import pandas as pd
    >>> from storyeval.compare.multitest import adjust_frame
    >>> tests = pd.DataFrame({"level": "overall", "criterion": ["Relevance", "Coherence"],
    ...                       "measure_a": "Beluga-13B 1", "measure_b": "BLEU", "p": [0.01, 0.04]})
    >>> out = adjust_frame(tests, by="paper")
    >>> out["p_adjusted"].round(4).tolist()
    [0.02, 0.04]
    >>> out["family"].iloc[0]
    'bh over criterion | level=overall, measure_a=Beluga-13B 1, measure_b=BLEU (m=2)'

    Validated through [`adjust_pvalues`][] against scipy and statsmodels, family by family.
    """
    func = "adjust_frame"
    if not isinstance(df, pd.DataFrame):
        raise InputError(f"{func}: df must be a pandas DataFrame, got {type(df).__name__}")
    _check_method(method, func)

    if isinstance(by, str):
        if by not in NAMED_FAMILIES:
            raise InputError(
                f"{func}: by={by!r} is not a named family ({', '.join(map(repr, NAMED_FAMILIES))}); "
                "pass a list of column names for another grouping"
            )
        named_keys, named_over = NAMED_FAMILIES[by]
        keys = list(named_keys)
        if by == "paper" and {"rater_a", "rater_b"} <= set(df.columns):
            keys = ["level", "rater_a", "rater_b"]
        over = named_over if over is None else over
    else:
        keys = list(by)
        for k in keys:
            if not isinstance(k, str):
                raise InputError(f"{func}: by must hold column names (str), got {k!r}")

    needed = [p_col, *keys]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise InputError(
            f"{func}: column(s) {', '.join(map(repr, missing))} not in the frame "
            f"(columns: {', '.join(map(str, df.columns))})"
        )
    for col in (out_col, family_col):
        if col in df.columns:
            raise InputError(
                f"{func}: column {col!r} already exists; choose another out_col / family_col"
            )
    for k in keys:
        na = df[k].isna().to_numpy()
        if na.any():
            label = df.index[int(np.flatnonzero(na)[0])]
            label = label.item() if isinstance(label, np.generic) else label
            raise InputError(f"{func}: grouping column {k!r} has a missing value at row {label!r}")

    p = _validated_pvalues(df[p_col].to_numpy(), func, name=f"column {p_col!r}")
    codes, uniques = _frame_families(df, keys)
    adjusted = adjust_pvalues(p, method=method, family=codes)

    if over is None:
        if not keys:
            over = "all tests"
        else:
            varying = [
                c
                for c in _WILLIAMS_COLUMNS
                if c in df.columns
                and c not in keys
                and pd.Series(df[c].to_numpy()).groupby(codes).nunique(dropna=False).max() > 1
            ]
            over = ", ".join(varying) if varying else "rows"

    m = np.bincount(codes[~np.isnan(p)], minlength=int(codes.max()) + 1 if codes.size else 0)
    texts = _family_texts(f"{method} over {over}", keys, uniques, m)
    out = df.copy()
    out[out_col] = adjusted
    out[family_col] = texts[codes]
    return out


def _family_texts(head: str, keys: list[str], uniques: list[list[str]],
                  m: np.ndarray) -> np.ndarray:
    """``"<head> | k1=v1, k2=v2 (m=<m>)"`` per family (object array)."""
    pairs = [[f"{key}={value}" for value in values] for key, values in zip(keys, uniques)]
    where = [" | " + ", ".join(parts) for parts in zip(*pairs)] if keys else [""] * len(m)
    return np.array([f"{head}{w} (m={count})" for w, count in zip(where, m)], dtype=object)


class SingleTestFamilyWarning(StoryevalWarning):
    """Every family of a multiple-comparison adjustment holds a single test, so the adjustment
    changes nothing (e.g. the ``"paper"`` family, one per pair of raters over its criteria, with
    only one criterion)."""


def family_sizes(tests: pd.DataFrame, *, family_col: str = "family",
                 p_col: str = "p") -> dict[str, dict[str, int]]:
    """How many families the tests of each level fall in, and how many tests they hold.

    Parameters
    ----------
    tests : DataFrame
        The output of [`adjust_frame`][] with a ``level`` column (the Williams table).
    family_col, p_col : str
        The family text and the unadjusted p-value columns.

    Returns
    -------
    dict
        ``{level: {"n_families": .., "m_min": .., "m_max": ..}}`` in order of appearance.
        ``m`` counts a family's non-missing p-values over *all* its rows, as
        [`adjust_frame`][] does, so a family spanning levels (``"all"``) reports its whole
        size at each level.

    Examples
    --------
    >>> import pandas as pd
    >>> tests = pd.DataFrame({"level": "overall", "criterion": ["Relevance", "Coherence"] * 2,
    ...                       "measure_a": "Beluga-13B 1", "measure_b": ["BLEU"] * 2 + ["chrF"] * 2,
    ...                       "p": [0.01, 0.04, 0.2, float("nan")]})
    >>> family_sizes(adjust_frame(tests, by="paper"))
    {'overall': {'n_families': 2, 'm_min': 1, 'm_max': 2}}
    """
    if tests.empty:
        return {}
    # m is counted per family text over every row: the text names the family uniquely
    m = tests[p_col].notna().groupby(tests[family_col].to_numpy(), sort=False).sum()
    present = tests[["level", family_col]].drop_duplicates()
    sizes = present[family_col].map(m).groupby(present["level"].to_numpy(), sort=False)
    table = sizes.agg(["size", "min", "max"])
    return {str(level): {"n_families": int(row["size"]), "m_min": int(row["min"]),
                         "m_max": int(row["max"])} for level, row in table.iterrows()}


def warn_single_test_families(tests: pd.DataFrame, method: str = "bh", *,
                              sizes: dict[str, dict[str, int]] | None = None) -> bool:
    """Warn ([`SingleTestFamilyWarning`][]) when ``method`` adjusts nothing because every
    family of ``tests`` (the output of [`adjust_frame`][]) holds at most one test; return
    whether it warned. ``sizes``: `family_sizes` of ``tests``, when already computed.

    Examples
    --------
    >>> import pandas as pd, warnings
    >>> tests = pd.DataFrame({"level": "overall", "criterion": "Relevance",
    ...                       "measure_a": "Beluga-13B 1", "measure_b": ["BLEU", "chrF"],
    ...                       "p": [0.01, 0.04]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warned = warn_single_test_families(adjust_frame(tests, by="paper"))
    >>> warned, caught[0].category.__name__
    (True, 'SingleTestFamilyWarning')
    """
    sizes = family_sizes(tests) if sizes is None else sizes
    if method == "none" or not sizes or max(s["m_max"] for s in sizes.values()) > 1:
        return False
    warnings.warn(f"every family of the {method.upper()} adjustment holds a single test "
                  "(m = 1), so the adjustment changes nothing; choose a larger family "
                  "(--family criterion, level or all)", SingleTestFamilyWarning, stacklevel=2)
    return True
