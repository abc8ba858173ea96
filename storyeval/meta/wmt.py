"""The WMT-style meta-metrics behind ``storyeval meta --coef acc_eq|tau23|spa``, ``--clusters``
and ``--length``: measure selection as in `meta_evaluate`, one tidy table per analysis.

* `wmt_table`: tie-calibrated pairwise accuracy (``acc_eq``) or tau_23 per measure, criterion
  and level (`storyeval.compare.tie_calibration`), with percentile bootstrap intervals over
  prompts on request; or soft pairwise accuracy (``spa``, system level;
  `storyeval.compare.soft_accuracy`).
* `cluster_tables`: significance clusters per criterion and level and the average rank over
  criteria (`storyeval.compare.clusters`).
* `length_tables`: P(prefer longer) of the humans and every measure on the same within-prompt
  pairs, length-balanced accuracy, and correlations partialled for length
  (`storyeval.meta.length`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.data import Dataset, load_hanna
from storyeval.exceptions import InputError
from storyeval.meta.decisions import DECISION_P

__all__ = ["DECISION_P", "WMT_COEFS", "WmtSelection", "cluster_tables", "length_tables", "select", "wmt_table"]

WMT_COEFS = ("acc_eq", "tau23", "spa")
COEF_DESCRIPTIONS = {
    "acc_eq": "pairwise accuracy with ties, tie-calibrated (acc*_eq; Deutsch et al. 2023): "
              "(concordant + tied by both) / pairs at the epsilon that maximises it",
    "tau23": "Kendall tau_23 at the optimal tie epsilon (Deutsch et al. 2023)",
    "spa": "soft pairwise accuracy (Thompson et al. 2024): 1 - mean |p_human - p_metric| over "
           "system pairs, one-sided paired permutation p-values over prompts",
}


@dataclass(frozen=True)
class WmtSelection:
    """The stories, measures and (measure, criterion) pairs of one run."""

    dataset: Dataset
    wide: pd.DataFrame
    pairs: pd.DataFrame  # measure, criterion, rater
    criteria: list[str]
    display: dict[str, str]


def select(dataset: Dataset | None = None, *, measures: str | Sequence[str] = "all",
           criteria: str | Sequence[str] = "all", include_human_stories: bool = False,
           systems: Sequence[str] | None = None, llm_criteria: str = "matched") -> WmtSelection:
    """The selection `meta_evaluate` makes (same arguments, same rules)."""
    from storyeval.data.selection import criterion_pairs, select_criteria, select_measures
    from storyeval.meta.pipeline import _check_dataset, _select_stories

    dataset = load_hanna() if dataset is None else _check_dataset(dataset)
    dataset = _select_stories(dataset, include_human_stories, systems)
    crits = select_criteria(dataset, criteria)
    chosen = select_measures(dataset.catalogue, measures, presets=dataset.presets)
    pairs = criterion_pairs(dataset.catalogue, chosen, crits, llm_criteria=llm_criteria)
    info = dataset.catalogue.set_index("measure")
    display = dict(zip(info.index, info["display_name"]))
    return WmtSelection(dataset, dataset.wide(), pairs, crits, display)


def _check_coef(coef: str) -> str:
    if coef not in WMT_COEFS:
        raise InputError(f"coef must be one of {', '.join(WMT_COEFS)}; got {coef!r}")
    return coef


def wmt_table(sel: WmtSelection, coef: str, *, levels: Sequence[str] = ("overall", "system"),
              ci: bool = False, n_resamples: int = 1000, confidence_level: float = 0.95,
              n_permutations: int = 1000, random_state: int | None = 0,
              tie_rtol: float = 1e-12) -> pd.DataFrame:
    """``acc_eq`` / ``tau23`` per measure, criterion and level, or ``spa`` (system level).

    ``ci``: add ``ci_low, ci_high`` (percentile bootstrap over prompts: epsilon re-optimised in
    every resample, `storyeval.compare.tie_calibration.tie_calibrated_ci`; for ``spa`` the
    permutation p-values recomputed in every resample,
    `storyeval.compare.soft_accuracy.soft_pairwise_accuracy_ci`).
    """
    from storyeval.data.level_names import canonical_level

    coef = _check_coef(coef)
    levels = list(dict.fromkeys(canonical_level(lev) for lev in levels))
    frames = []
    if coef == "spa":
        from storyeval.compare.soft_accuracy import (
            soft_pairwise_accuracy_ci,
            soft_pairwise_accuracy_table,
        )

        for criterion, group in sel.pairs.groupby("criterion", sort=False):
            table = soft_pairwise_accuracy_table(
                sel.wide, list(group["measure"]), [criterion], n_permutations=n_permutations,
                random_state=random_state)
            if ci:
                bounds = [soft_pairwise_accuracy_ci(
                    sel.wide, m, criterion, n_resamples=n_resamples,
                    n_permutations=n_permutations, confidence_level=confidence_level,
                    random_state=random_state) for m in table["measure"]]
                table["ci_low"] = [b[0] for b in bounds]
                table["ci_high"] = [b[1] for b in bounds]
            frames.append(table)
    else:
        from storyeval.compare.tie_calibration import tie_calibrated_ci, tie_calibrated_table

        variant = "acc23" if coef == "acc_eq" else "tau23"
        for criterion, group in sel.pairs.groupby("criterion", sort=False):
            table = tie_calibrated_table(sel.wide, list(group["measure"]), [criterion],
                                         levels=levels, variant=variant, tie_rtol=tie_rtol)
            if ci:
                bounds = [tie_calibrated_ci(sel.wide, m, c, level=lev, variant=variant,
                                            n_resamples=n_resamples,
                                            confidence_level=confidence_level,
                                            random_state=random_state, tie_rtol=tie_rtol)
                          for m, c, lev in zip(table["measure"], table["criterion"],
                                               table["level"])]
                table["ci_low"] = [b[0] for b in bounds]
                table["ci_high"] = [b[1] for b in bounds]
            frames.append(table)
    out = _few_systems(pd.concat(frames, ignore_index=True), sel.wide)
    out.insert(1, "display_name", out["measure"].map(sel.display))
    out.insert(4, "coefficient", coef)
    order = {lev: k for k, lev in enumerate(levels)}
    out = out.sort_values("level", key=lambda s: s.map(order), kind="stable")
    return out.reset_index(drop=True)


def _few_systems(table: pd.DataFrame, wide: pd.DataFrame) -> pd.DataFrame:
    """The 3-system rule of `meta` (`storyeval.compare.procedures.MIN_SYSTEMS`) on the WMT
    coefficients: with fewer systems a system-level pairwise accuracy or SPA compares one pair
    of means at most (0 or 1 whatever the measure), so its value and interval are NaN and the
    row's ``reason`` says why."""
    from storyeval.compare.procedures import MIN_SYSTEMS, MIN_SYSTEMS_REASON

    names = list(wide.index.names)
    level = names.index("system") if "system" in names else 0
    systems = wide.index.get_level_values(level).nunique()
    few = (table["level"] == "system").to_numpy() & (systems < MIN_SYSTEMS)
    table["reason"] = np.where(few, MIN_SYSTEMS_REASON, "").astype(object)
    cols = [c for c in ("value", "value_no_calibration", "epsilon", "p", "ci_low", "ci_high")
            if c in table.columns]
    table.loc[few, cols] = np.nan
    return table




def cluster_tables(result, *, alpha: float = 0.05, p_column: str = DECISION_P,
                   weights: dict[str, float] | None = None,
                   ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(clusters, average ranks) of a `MetaResult`'s measures at its tested levels, from the
    p-values of its own comparison table (one run, one set of p-values: by default its
    adjusted ``p_adjusted``, the column the printed matrices and the answer of index.html read;
    `storyeval.compare.clusters.clusters_from_comparisons`), oriented as its tests were
    (sign convention, ``lower_is_better``). ``weights``: criterion weights of the average
    (`average_ranks`).

    The result must compare all pairs (``reference="all"``, the default on data without a
    default reference). Every criterion ranks the measures paired with it; the average rank
    (per rater: a criterion-specific LLM rating such as ``Beluga-13B RE 1`` counts as its
    rater group ``Beluga-13B 1``) covers the raters ranked under every criterion."""
    from storyeval.compare.clusters import (
        CLUSTER_LEVELS,
        average_ranks,
        clusters_from_comparisons,
    )

    chosen = result.settings["comparisons"]
    if chosen.get("reference") is not None:
        raise InputError(f"clusters rank every pair of measures, but this run compared "
                         f"{chosen['reference']!r} with the others only; compare all pairs "
                         "(--reference all)")
    levels = [lev for lev in chosen["levels"] if lev in CLUSTER_LEVELS]
    if not levels or result.comparisons.empty:
        raise InputError("--clusters needs the comparison tests of the overall or the system "
                         "level (--levels overall and/or system, not --reference none)")
    clusters = clusters_from_comparisons(
        result.correlations, result.comparisons, alpha=alpha,
        sign_convention=chosen["sign_convention"],
        lower_is_better=chosen.get("lower_is_better", ()), p_column=p_column,
        tie_rtol=result.settings.get("tie_rtol", 1e-12), levels=levels)
    clusters["pairs_near_alpha"] = _near_alpha(clusters, result, alpha, p_column)
    info = result.correlations.drop_duplicates("measure").set_index("measure")
    clusters.insert(1, "display_name", clusters["measure"].map(info["display_name"]))
    # a criterion-specific LLM rating (Beluga-13B RE 1) is averaged as its rater group
    by_rater = clusters.drop(columns="display_name").assign(
        measure=clusters["measure"].map(info["rater"]))
    return clusters, average_ranks(by_rater, weights).rename(columns={"measure": "rater"})


#: Tests whose p-value is a Monte Carlo estimate (it moves with the seed).
_RESAMPLED = ("permutation", "permutation-random", "permutation-midp", "bootstrap")


def _near_alpha(clusters: pd.DataFrame, result, alpha: float, p_column: str) -> np.ndarray:
    """Per cluster row, how many comparisons of its criterion and level have a Monte Carlo
    p-value within 3 standard errors of ``alpha`` (sqrt(alpha (1 - alpha) / B), B the
    permutations or resamples): only their decisions, and so the clusters, may change with
    the seed."""
    chosen = result.settings["comparisons"]
    tests = chosen.get("test", {})
    tests = tests if isinstance(tests, dict) else dict.fromkeys(chosen["levels"], tests)
    count: dict[tuple[str, str], int] = {}
    for (level, criterion), rows in result.comparisons.groupby(["level", "criterion"],
                                                              sort=False):
        test = tests.get(level, "")
        if test not in _RESAMPLED:
            continue
        b = chosen.get("n_permutations", 1000) if test.startswith("permutation") else \
            chosen.get("effect_size", {}).get("n_resamples", 1000)
        se = np.sqrt(alpha * (1 - alpha) / max(int(b), 1))
        near = (rows[p_column] - alpha).abs() < 3 * se
        count[(level, criterion)] = int(near.sum())
    keys = zip(clusters["level"], clusters["criterion"])
    return np.array([count.get(k, 0) for k in keys], dtype=np.int64)


def length_tables(sel: WmtSelection, length: str, *, levels: Sequence[str] = ("overall",),
                  method: str = "kendall_b", n_bins: int = 10,
                  tie_rtol: float = 1e-12) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pairs table, partial correlations) for the length measure ``length``.

    Pairs: every within-prompt pair of stories; per criterion, the humans' P(prefer longer)
    and every paired measure's, with its raw and length-balanced accuracy against the humans
    (`storyeval.meta.length.length_table`). Partial: the correlation of every (measure,
    criterion) pair at each level, raw and controlling for ``length``.
    """
    from storyeval.data.level_names import canonical_level
    from storyeval.meta.length import (
        length_controlled_accuracy,
        partial_correlation,
        pointwise_pairs,
        prefer_longer_rate,
    )

    length = _length_column(sel, length)
    columns = list(dict.fromkeys([*sel.criteria, *sel.pairs["measure"], length]))
    pairs = pointwise_pairs(sel.wide, columns)
    la, lb = pairs[f"{length}_a"].to_numpy(), pairs[f"{length}_b"].to_numpy()
    rows = []
    for criterion, group in sel.pairs.groupby("criterion", sort=False):
        human = pairs[criterion].to_numpy()
        rate, n = prefer_longer_rate(np.nan_to_num(human), la, lb)
        rows.append({"criterion": criterion, "rater": "humans", "prefer_longer": rate,
                     "n_unequal_length": n})
        for measure in group["measure"]:
            if measure == length:
                continue
            verdict = pairs[measure].to_numpy()
            ok = ~(np.isnan(human) | np.isnan(verdict))
            rate, n = prefer_longer_rate(verdict[ok], la[ok], lb[ok])
            acc = length_controlled_accuracy(human[ok], verdict[ok], la[ok], lb[ok],
                                             n_bins=n_bins)
            rows.append({"criterion": criterion, "rater": measure, "prefer_longer": rate,
                         "n_unequal_length": n, "accuracy": acc["accuracy"],
                         "lc_accuracy": acc["lc_accuracy"], "n_decided": acc["n"]})
    table = pd.DataFrame(rows)
    if "n_decided" in table.columns:
        table["n_decided"] = table["n_decided"].astype("Int64")
    table.insert(2, "display_name", table["rater"].map(sel.display).fillna(table["rater"]))
    partial = []
    for level in dict.fromkeys(canonical_level(lev) for lev in levels):
        for criterion, group in sel.pairs.groupby("criterion", sort=False):
            ms = [m for m in group["measure"] if m != length]
            if ms:
                partial.append(partial_correlation(sel.wide, ms, [criterion], length,
                                                   level=level, method=method,
                                                   tie_rtol=tie_rtol))
    partial_table = pd.concat(partial, ignore_index=True) if partial else pd.DataFrame()
    if len(partial_table):
        partial_table.insert(1, "display_name", partial_table["measure"].map(sel.display))
    return table, partial_table


def _length_column(sel: WmtSelection, length: str) -> str:
    """The score column of ``length`` (a measure name or display name)."""
    if length in sel.wide.columns:
        return length
    by_display = [m for m, d in sel.display.items() if d == length and m in sel.wide.columns]
    if by_display:
        return by_display[0]
    raise InputError(f"--length: no measure {length!r} in the data (give a measure name or a "
                     "display name, e.g. the story length in words)")
