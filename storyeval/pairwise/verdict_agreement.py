"""Agreement on label tables with any categories: pairwise verdicts (A / B / same), Yes / No
labels, error categories. Items are (pair or story, dimension), raters are judges or
annotators.

Coefficients: Cohen's kappa (two raters; Fleiss, Cohen and Everitt 1969 standard error),
Fleiss' kappa, Gwet's AC1 and Krippendorff's alpha (nominal). The last three are computed by
`storyeval.agreement.coefficients` (one kernel each); this module reshapes verdict and label tables
into items x raters and adds item-bootstrap intervals for every coefficient, computed from the
per-item category counts as matrix products (no loop over items or resamples).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval.agreement.coefficients import cohen_kappa
from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.resample.clusters import (
    bootstrap_weights,
    check_confidence,
    check_resamples,
    percentile_interval,
    rng_from,
)

__all__ = ["LABEL_COLUMNS", "cohen_kappa", "label_agreement", "label_file_agreement",
           "label_table", "verdict_agreement", "verdict_labels"]

#: Required columns of a long label table.
LABEL_COLUMNS: tuple[str, ...] = ("item", "rater", "label")
_ITEMS = ("pair", "pair-order")


# ------------------------------------------------------------------------ tables
def label_table(
    frame: pd.DataFrame,
    *,
    item: str | Sequence[str] = "item",
    rater: str = "rater",
    label: str = "label",
    source: str = "labels",
) -> pd.DataFrame:
    """Items x raters table of labels (NaN where a rater did not label an item) from a long
    table with one row per (item, rater).

    Raises
    ------
    InputError
        A missing column, an empty label, or a rater labelling one item twice (naming the rows).
    """
    items = [item] if isinstance(item, str) else list(item)
    missing = [c for c in [*items, rater, label] if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; a label table has one row per "
                         f"(item, rater) with columns {[*items, rater, label]}; found "
                         f"{[str(c) for c in frame.columns]}")
    if len(frame) == 0:
        raise InputError(f"{source}: no rows")
    for col in [*items, rater, label]:
        na = frame[col].isna().to_numpy()
        if na.any():
            raise InputError(f"{source}: row {int(np.argmax(na))}: empty value in column "
                             f"{col!r}")
    keys = frame[[*items, rater]].astype(str)
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        first = keys.iloc[rows[0]]
        again = rows[1:][keys.iloc[rows[1:]].eq(first).all(axis=1).to_numpy()]
        raise InputError(f"{source}: rows {int(rows[0])} and {int(again[0])}: rater "
                         f"{first[rater]!r} labelled item {tuple(first[items])} twice")
    wide = frame.assign(_label=frame[label].astype(str)).pivot(
        index=items, columns=rater, values="_label")
    wide.columns = wide.columns.astype(str)
    return wide


def verdict_labels(
    verdicts: pd.DataFrame,
    *,
    item: str = "pair",
    dimension: str | None = None,
    source: str = "verdicts",
) -> pd.DataFrame:
    """A verdict table as items x judges: the label of a verdict is ``"A"`` (the story whose id
    sorts first won), ``"B"`` (the other) or ``"same"``, whoever was called story_a.

    Parameters
    ----------
    item : {"pair", "pair-order"}, default "pair"
        An item is a pair of stories on one dimension, or with ``"pair-order"`` one
        presentation order of it (for judges that saw both orders).
    dimension : str, optional
        Keep one dimension (default: all; the dimension is part of the item).
    """
    from storyeval.pairwise.consistency import _pair_keys
    from storyeval.pairwise.verdicts import validate_verdicts

    if item not in _ITEMS:
        raise InputError(f"item must be one of {_ITEMS}, got {item!r}")
    v = validate_verdicts(verdicts, source=source)
    if dimension is not None:
        if dimension not in set(v["dimension"]):
            raise InputError(f"{source}: dimension {dimension!r} not found; dimensions are "
                             f"{sorted(set(v['dimension']))}")
        v = v[v["dimension"] == dimension].reset_index(drop=True)
    keys = _pair_keys(v)
    long = pd.DataFrame({
        "dimension": keys["dimension"], "prompt_id": keys["prompt_id"].astype(str),
        "lo": keys["lo"], "hi": keys["hi"],
        "order": np.where(keys["first_is_lo"], "lo first", "hi first"),
        "judge": keys["judge"],
        "label": np.select([keys["outcome"] == 1, keys["outcome"] == -1], ["A", "B"], "same")})
    items = ["dimension", "prompt_id", "lo", "hi"] + (["order"] if item == "pair-order" else [])
    try:
        return label_table(long, item=items, rater="judge", label="label", source=source)
    except InputError as exc:
        if item == "pair" and "twice" in str(exc):
            raise InputError(f"{exc}: a judge saw this pair in both orders; use "
                             "item='pair-order' (CLI --item pair-order) or keep one order"
                             ) from None
        raise


# ------------------------------------------------------------------ bootstrap kernels
def _coefficient_draws(counts: np.ndarray, weights: np.ndarray, q: int) -> dict[str, np.ndarray]:
    """Fleiss' kappa, Gwet's AC1 and nominal Krippendorff's alpha of item-bootstrap resamples.

    ``counts`` (n, q) category counts of the items with >= 2 ratings; ``weights`` (B, n)
    item multiplicities. Each coefficient is a ratio of sums of per-item terms, so a resample
    is a matrix product. At ``weights = 1`` they equal the point estimates of
    `storyeval.agreement.coefficients` (checked in tests).
    """
    c = counts.astype(np.float64)
    m = c.sum(axis=1)
    pa_i = (c * (c - 1)).sum(axis=1) / (m * (m - 1))
    shares = c / m[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        n_w = weights.sum(axis=1)
        pa = weights @ pa_i / n_w
        # AC1: pi_c = mean item share; pe = sum pi (1 - pi) / (q - 1)
        pi = weights @ shares / n_w[:, None]
        pe_ac1 = (pi * (1 - pi)).sum(axis=1) / (q - 1)
        ac1 = (pa - pe_ac1) / (1 - pe_ac1)
        # Fleiss: p_j pooled over ratings (equal m per item)
        pj = weights @ c / (weights @ m)[:, None]
        pe_f = (pj ** 2).sum(axis=1)
        fleiss = (pa - pe_f) / (1 - pe_f)
        # Krippendorff nominal: D_o from coincidences within items, D_e from category totals
        o_i = (c * (m[:, None] - c)).sum(axis=1) / (m - 1)
        tot = weights @ c
        n_dot = tot.sum(axis=1)
        d_o = (weights @ o_i) / n_dot
        d_e = (n_dot ** 2 - (tot ** 2).sum(axis=1)) / (n_dot * (n_dot - 1))
        alpha = 1 - d_o / d_e
    return {"fleiss_kappa": fleiss, "gwet_ac1": ac1, "krippendorff_alpha_nominal": alpha}


def label_agreement(
    labels: pd.DataFrame,
    *,
    categories: Sequence | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Agreement coefficients of an items x raters label table (NaN: not labelled).

    Parameters
    ----------
    labels : DataFrame
        Items x raters (`label_table`, `verdict_labels`).
    categories : sequence, optional
        The declared categories (default: the labels observed). q enters Gwet's AC1.
    n_resamples : int, default 2000
        Item-bootstrap resamples for the percentile intervals (0: none).

    Returns
    -------
    DataFrame
        One row per coefficient: ``cohen_kappa`` (only with exactly two raters; items both
        labelled), ``fleiss_kappa`` (needs the same number of ratings per item, else NaN with
        a reason), ``gwet_ac1``, ``krippendorff_alpha_nominal``. Columns ``statistic,
        standard_error, se_method, ci_low, ci_high, ci_method, percent_agreement,
        chance_agreement, n_items, n_raters, n_categories, reason``.

    Notes
    -----
    Items with fewer than two ratings carry no agreement information and are left out of the
    bootstrap (and of Fleiss' kappa); ``n_items`` counts those used. Standard errors:
    Cohen: Fleiss-Cohen-Everitt; Fleiss: under the null (Fleiss, Nee and Landis 1979);
    AC1: Gwet (2008); alpha: the bootstrap standard deviation.
    Intervals: item-bootstrap percentile for every coefficient.
    """
    from storyeval.agreement.coefficients import category_counts, fleiss_kappa, gwet_ac1
    from storyeval.agreement.coefficients import krippendorff_alpha as kripp

    level = check_confidence(confidence_level)
    if not isinstance(labels, pd.DataFrame) or labels.shape[1] < 2:
        raise InputError("labels must be an items x raters table with at least 2 raters")
    counts, cats = category_counts(labels, categories=categories)
    q = len(cats)
    if q < 2:
        raise InputError(f"agreement needs at least 2 categories, got {list(cats)}; pass "
                         "categories to declare the unobserved ones")
    usable = counts.sum(axis=1) >= 2
    c2 = counts[usable]
    if not len(c2):
        raise InputError("no item has two or more labels")
    draws: dict[str, np.ndarray] = {}
    if n_resamples:
        b = check_resamples(n_resamples)
        rng = rng_from(random_state)
        draws = _coefficient_draws(c2, bootstrap_weights(len(c2), b, rng), q)
    rows = []
    common = {"n_raters": labels.shape[1], "n_categories": q}
    if labels.shape[1] == 2:
        rows.append(_cohen_row(labels, cats, level, n_resamples, random_state, common))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        try:
            fk = fleiss_kappa(c2, data_format="counts", categories=cats)
            fleiss = (fk.statistic, fk.standard_error, "null (Fleiss, Nee, Landis 1979)", "",
                      fk.percent_agreement, fk.chance_agreement)
        except InputError as exc:
            fleiss = (math.nan, math.nan, "", str(exc), math.nan, math.nan)
        ac = gwet_ac1(c2, data_format="counts", categories=cats)
        al = kripp(c2, data_format="counts", categories=cats, level="nominal")
    specs = [("fleiss_kappa", *fleiss),
             ("gwet_ac1", ac.statistic, ac.standard_error, "Gwet (2008)", ac.reason,
              ac.percent_agreement, ac.chance_agreement),
             ("krippendorff_alpha_nominal", al.statistic, math.nan, "bootstrap SD", al.reason,
              math.nan, math.nan)]
    for name, stat, se, se_method, reason, pa, pe in specs:
        low = high = math.nan
        if draws and math.isfinite(stat):
            d = draws[name]
            low, high = (float(x[0]) for x in percentile_interval(d[:, None], level))
            if name == "krippendorff_alpha_nominal":
                se = float(np.nanstd(d, ddof=1))
        rows.append({"coefficient": name, "statistic": stat, "standard_error": se,
                     "se_method": se_method if math.isfinite(se) else "",
                     "ci_low": low, "ci_high": high,
                     "ci_method": f"item bootstrap percentile ({n_resamples})"
                     if math.isfinite(low) else "",
                     "percent_agreement": pa, "chance_agreement": pe,
                     "n_items": len(c2), **common, "reason": reason})
    return pd.DataFrame(rows)


def _cohen_row(labels: pd.DataFrame, cats: tuple, level: float, n_resamples: int,
               random_state, common: dict) -> dict:
    a, b = labels.iloc[:, 0].to_numpy(object), labels.iloc[:, 1].to_numpy(object)
    both = ~(pd.isna(a) | pd.isna(b))
    res = cohen_kappa(a[both], b[both], categories=cats, confidence_level=level)
    low = high = math.nan
    if n_resamples and math.isfinite(res["statistic"]) and both.sum() >= 2:
        low, high = _cohen_bootstrap(a[both], b[both], cats, level, n_resamples, random_state)
    return {"coefficient": "cohen_kappa", "statistic": res["statistic"],
            "standard_error": res["standard_error"],
            "se_method": "Fleiss, Cohen, Everitt (1969)", "ci_low": low, "ci_high": high,
            "ci_method": f"item bootstrap percentile ({n_resamples})" if math.isfinite(low)
            else "", "percent_agreement": res["percent_agreement"],
            "chance_agreement": res["chance_agreement"], "n_items": res["n_items"],
            **common, "reason": ""}


def _cohen_bootstrap(a: np.ndarray, b: np.ndarray, cats: tuple, level: float, reps: int,
                     random_state) -> tuple[float, float]:
    """Percentile interval of Cohen's kappa over item resamples: each item is one cell of the
    q x q table, so a resample is (B, n) weights times the (n, q*q) one-hot cells."""
    index = pd.Index(list(cats), dtype=object)
    q = len(cats)
    cell = index.get_indexer(list(a)) * q + index.get_indexer(list(b))
    onehot = np.zeros((len(a), q * q))
    onehot[np.arange(len(a)), cell] = 1.0
    w = bootstrap_weights(len(a), check_resamples(reps), rng_from(random_state))
    tables = (w @ onehot).reshape(-1, q, q) / len(a)
    row, col = tables.sum(axis=2), tables.sum(axis=1)
    p_o = np.trace(tables, axis1=1, axis2=2)
    p_e = (row * col).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        kappa = (p_o - p_e) / (1 - p_e)
    low, high = percentile_interval(kappa[:, None], level)
    return float(low[0]), float(high[0])


def _by_dimension(table: pd.DataFrame, categories, confidence_level: float,
                  n_resamples: int, random_state) -> pd.DataFrame:
    """`label_agreement` per value of the index level ``dimension``, then pooled (``"all"``)
    when there are several."""
    rng = rng_from(random_state)
    dims = list(dict.fromkeys(table.index.get_level_values("dimension")))
    blocks = [(d, table.xs(d, level="dimension", drop_level=False)) for d in dims]
    if len(dims) > 1:
        blocks.append(("all", table))
    frames = []
    for name, block in blocks:
        block = block.dropna(axis=1, how="all")
        res = label_agreement(block, categories=categories, confidence_level=confidence_level,
                              n_resamples=n_resamples, random_state=rng)
        frames.append(res.assign(dimension=name))
    out = pd.concat(frames, ignore_index=True)
    return out[["dimension", *[c for c in out.columns if c != "dimension"]]]


def label_file_agreement(
    frame: pd.DataFrame,
    *,
    categories: Sequence | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
    source: str = "labels",
) -> pd.DataFrame:
    """Agreement of a long label table ``item, rater, label`` (optional ``dimension``: items
    are (item, dimension), one block per dimension and a pooled one), any categories
    (Yes/No, error types, A/B/same). See `label_agreement` for the columns."""
    if "dimension" not in frame.columns:
        frame = frame.assign(dimension="labels")
    table = label_table(frame, item=["dimension", "item"], source=source)
    return _by_dimension(table, categories, confidence_level, n_resamples, random_state)


def verdict_agreement(
    verdicts: pd.DataFrame,
    *,
    item: str = "pair",
    judges: Sequence[str] | None = None,
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Agreement of the judges (annotators, LLMs) of a verdict table, per dimension.

    Labels are ``A`` / ``B`` / ``same`` relative to the pair (see `verdict_labels`), so two
    judges who named the same story agree whichever story each saw first. Categories are the
    three verdicts (q = 3 for AC1).

    Returns
    -------
    DataFrame
        `label_agreement` per dimension (column ``dimension`` first), then one pooled
        ``"all"`` block when there are several dimensions (items are (pair, dimension)).
    """
    table = verdict_labels(verdicts, item=item)
    if judges is not None:
        missing = [j for j in judges if j not in table.columns]
        if missing:
            raise InputError(f"judge(s) {missing} not in the verdicts; judges are "
                             f"{list(table.columns)}")
        table = table[list(judges)]
    return _by_dimension(table, ("A", "B", "same"), confidence_level, n_resamples,
                         random_state)
