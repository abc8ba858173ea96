"""Agreement of a dataset's human annotators, every coefficient per criterion in one table.

[`annotator_agreement`][] puts side by side, for each human criterion of a
[`Dataset`][], the ICC(2,k), Krippendorff's alpha (interval and ordinal),
Fleiss' kappa and Gwet's AC1 of its annotators, with the stories as items. The coefficients
themselves are in `storyeval.agreement.coefficients` and `storyeval.agreement.icc`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd

from storyeval.agreement.coefficients import (
    annotator_icc,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
)
from storyeval.exceptions import InputError, UndefinedStatisticWarning

if TYPE_CHECKING:
    from storyeval.data.dataset import Dataset

__all__ = ["AGREEMENT_COLUMNS", "annotator_agreement"]

AGREEMENT_COLUMNS = [
    "criterion", "n_items", "k", "ratings_per_item", "icc2k", "icc2k_ci_low", "icc2k_ci_high",
    "n_items_omitted", "alpha_interval", "alpha_ordinal", "fleiss_kappa", "gwet_ac1", "gwet_ac1_ci_low",
    "gwet_ac1_ci_high", "categories", "reason",
]


def annotator_agreement(
    dataset: Dataset,
    *,
    criteria: str | Sequence[str] = "all",
    exclude_systems: Iterable[str] = (),
    confidence_level: float = 0.95,
    nan_policy: Literal["omit", "raise"] = "omit",
) -> pd.DataFrame:
    """Agreement of the human annotators of a dataset, one row per criterion.

    Parameters
    ----------
    dataset : storyeval.data.Dataset
        Human ratings with one column per annotator (``dataset.annotators()``); annotators may
        be ragged (not every story rated by every annotator).
    criteria : "all", str or sequence of str, default "all"
        Criteria by name or code (a comma-separated string or a list); ``"all"``: every
        criterion of the dataset. A criterion without at least 2 annotator columns gets a row
        of NaN with its reason.
    exclude_systems : iterable of str, default ()
        Systems whose stories are left out (e.g. ``dataset.reference_system``).
    confidence_level : float, default 0.95
        Level of the ICC(2,k) and AC1 intervals.
    nan_policy : {"omit", "raise"}, default "omit"
        For ICC(2,k) only, which needs stories rated by every annotator: ``"omit"`` leaves the
        incomplete stories out (counted in ``n_items_omitted``), ``"raise"`` makes them an error
        naming the criterion, the column and a story. The other coefficients use every rating.

    Returns
    -------
    pandas.DataFrame
        Columns `AGREEMENT_COLUMNS`: ``criterion``; ``n_items`` the stories with at least
        one rating of the criterion; ``k`` its annotator columns; ``ratings_per_item`` the
        number of ratings per story (``"3"``, or ``"2-5"`` when ragged); ``icc2k`` with its
        interval ``icc2k_ci_low, icc2k_ci_high`` and ``n_items_omitted`` (incomplete stories
        left out of the ICC); ``alpha_interval``, ``alpha_ordinal``; ``fleiss_kappa``; ``gwet_ac1``
        with its interval ``gwet_ac1_ci_low, gwet_ac1_ci_high``; ``categories`` the categories of kappa
        and AC1; ``reason`` why a value is NaN (``"statistic: reason"``, ``"; "``-separated).
        Undefined values are NaN with their reason, without a warning.

    Notes
    -----
    The items are the stories (of the systems kept) and the raters the annotator columns.

    - ICC(2,k): Shrout and Fleiss (1979) case 2, two-way random effects, absolute agreement,
      reliability of the mean of the k annotators (McGraw and Wong's ICC(A,k)), with the F-based
      interval ([`icc2k_many`][storyeval.agreement.icc.icc2k_many]); complete stories only.
    - Krippendorff's alpha at the interval and ordinal levels, over the observed values; missing
      ratings allowed, stories with fewer than 2 ratings do not count
      ([`krippendorff_alpha`][]).
    - Fleiss' kappa (nominal): the categories are the distinct rating values observed for the
      criterion. It needs the same number of ratings for every story: with ragged ratings it is
      NaN with that reason; no story is dropped to make it defined
      ([`fleiss_kappa`][]).
    - Gwet's AC1 (nominal), same categories, missing ratings allowed, with its t interval on
      n - 1 degrees of freedom, no finite-population correction
      ([`gwet_ac1`][]).

    With ``nan_policy="omit"`` the ICC is computed on fewer stories than the other coefficients
    when the annotators are ragged (``n_items - n_items_omitted``); the coefficients are then not
    on the same items.

    Examples
    --------
    >>> import pandas as pd
    >>> from storyeval.data import ratings_to_dataset
    >>> r = pd.DataFrame({"system": ["A"] * 6 + ["B"] * 6, "prompt_id": [0, 0, 0, 1, 1, 1] * 2,
    ...                   "criterion": "Fun", "annotator": ["x", "y", "z"] * 4,
    ...                   "value": [1, 2, 1, 3, 3, 4, 5, 4, 5, 2, 2, 2]})
    >>> table = annotator_agreement(ratings_to_dataset(r))
    >>> table[["criterion", "n_items", "k", "categories"]].to_dict("records")
    [{'criterion': 'Fun', 'n_items': 4, 'k': 3, 'categories': '1, 2, 3, 4, 5'}]
    >>> table[["icc2k", "alpha_interval"]].round(3).to_dict("records")
    [{'icc2k': 0.962, 'alpha_interval': 0.873}]
    """
    from storyeval.data.dataset import Dataset

    if not isinstance(dataset, Dataset):
        raise InputError("dataset must be a storyeval Dataset (see storyeval.data.read_dataset),"
                         f" got {type(dataset).__name__}; for a wide table use annotator_icc")
    chosen = _select_criteria(dataset, criteria)
    exclude = list(exclude_systems)
    data = dataset.select_systems(exclude=exclude) if exclude else dataset
    columns = data.annotators()
    wide = data.wide()
    rows = [_criterion_row(wide, crit, columns.get(crit, []), confidence_level, nan_policy)
            for crit in chosen]
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def _select_criteria(dataset: Dataset, criteria: str | Sequence[str]) -> list[str]:
    """The chosen criteria in the dataset's order; at least one dataset criterion must have
    annotator columns."""
    if not dataset.annotators():
        raise InputError(
            f"dataset {dataset.name!r} has no criterion rated by at least 2 annotators; "
            "agreement needs one rating per annotator (long ratings with an 'annotator' column, "
            "or --annotators for a wide table)")
    tokens = criteria.split(",") if isinstance(criteria, str) else list(criteria)
    tokens = [str(t).strip() for t in tokens if str(t).strip()]
    if not tokens:
        raise InputError("criteria is empty")
    if [t.lower() for t in tokens] == ["all"]:
        return list(dataset.criteria)
    named = {dataset.resolve_criterion(t) for t in tokens}
    return [c for c in dataset.criteria if c in named]


def _criterion_row(wide: pd.DataFrame, criterion: str, columns: list[str],
                   confidence_level: float, nan_policy: str) -> dict:
    """One row of [`annotator_agreement`][]."""
    if len(columns) < 2:
        return _undefined_row(criterion, int(wide[criterion].notna().sum()), len(columns), "",
                              "fewer than 2 annotator columns (one score per story)")
    block = wide.loc[:, columns]
    y = block.to_numpy(dtype=float)
    rated = ~np.isnan(y).all(axis=1)
    block, y = block.loc[rated], y[rated]
    if len(y) == 0:
        return _undefined_row(criterion, 0, len(columns), "0", "no rated story")
    per_item = (~np.isnan(y)).sum(axis=1)
    categories = tuple(np.unique(y[~np.isnan(y)]).tolist())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        icc = annotator_icc(block, {criterion: columns}, confidence_level=confidence_level,
                            nan_policy=nan_policy).iloc[0]
        reasons = {"icc2k": str(icc["reason"])}
        alphas = {lvl: krippendorff_alpha(y, level=lvl) for lvl in ("interval", "ordinal")}
        kappa, reasons["fleiss_kappa"] = _fleiss(y, per_item, categories)
        ac1, ac1_ci, reasons["gwet_ac1"] = _ac1(y, categories, confidence_level)
    reasons.update({f"alpha_{lvl}": res.reason for lvl, res in alphas.items()})
    return {
        "criterion": criterion, "n_items": len(y), "k": len(columns),
        "ratings_per_item": _span(per_item), "icc2k": icc["icc2k"],
        "icc2k_ci_low": icc["ci_low"], "icc2k_ci_high": icc["ci_high"],
        "n_items_omitted": int(icc["n_items_omitted"]),
        "alpha_interval": alphas["interval"].statistic,
        "alpha_ordinal": alphas["ordinal"].statistic, "fleiss_kappa": kappa, "gwet_ac1": ac1,
        "gwet_ac1_ci_low": ac1_ci[0], "gwet_ac1_ci_high": ac1_ci[1],
        "categories": ", ".join(f"{c:g}" for c in categories), "reason": _join(reasons),
    }


def _fleiss(y: np.ndarray, per_item: np.ndarray, categories: tuple) -> tuple[float, str]:
    """Fleiss' kappa and the reason it is undefined ("" if defined)."""
    lo, hi = int(per_item.min()), int(per_item.max())
    if lo != hi:
        return math.nan, (f"stories have {lo}-{hi} ratings; it needs the same number for every "
                          "story (no story is dropped to force it)")
    if lo < 2:
        return math.nan, "one rating per story"
    res = fleiss_kappa(y, categories=categories)
    return res.statistic, res.reason


def _ac1(y: np.ndarray, categories: tuple, confidence_level: float
         ) -> tuple[float, tuple[float, float], str]:
    """Gwet's AC1, its interval and the reason it is undefined ("" if defined)."""
    if len(categories) < 2:
        return math.nan, (math.nan, math.nan), "a single rating value observed"
    res = gwet_ac1(y, categories=categories, confidence_level=confidence_level)
    return res.statistic, res.confidence_interval(), res.reason


def _span(per_item: np.ndarray) -> str:
    lo, hi = int(per_item.min()), int(per_item.max())
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


def _join(reasons: dict[str, str]) -> str:
    return "; ".join(f"{name}: {why}" for name, why in reasons.items() if why)


def _undefined_row(criterion: str, n_items: int, k: int, per_item: str, reason: str) -> dict:
    row = dict.fromkeys(AGREEMENT_COLUMNS, math.nan)
    row.update(criterion=criterion, n_items=n_items, k=k, ratings_per_item=per_item,
               n_items_omitted=0, categories="", reason=f"all: {reason}")
    return row
