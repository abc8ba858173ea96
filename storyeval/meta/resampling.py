"""Add resampling results to a [`MetaResult`][].

``storyeval meta --ci bootstrap`` adds bootstrap confidence intervals to every correlation,
``--permutations N`` a paired permutation p-value next to every comparison test, and
``--chance N`` the chance baseline of each criterion. The same stories are used as for the
point estimates (``result.dataset``).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd

from storyeval.compare.multitest import adjust_frame
from storyeval.exceptions import FewClustersWarning, InputError, user_stacklevel
from storyeval.meta.pipeline import MetaResult
from storyeval.resample.bootstrap import (
    bootstrap_correlations,
    cluster_counts,
    expanded_level,
    few_clusters_message,
)
from storyeval.resample.chance import chance_baseline
from storyeval.resample.permutation import permutation_pvalues

_KEY = ["measure", "criterion", "level"]


def _wide(result: MetaResult) -> pd.DataFrame:
    if result.dataset is None:
        raise InputError("this MetaResult carries no dataset; run meta_evaluate again")
    return result.dataset.wide()


def add_bootstrap_ci(
    result: MetaResult,
    *,
    n_resamples: int = 1000,
    resample_by: str = "prompts",
    ci_method: str = "percentile",
    confidence_level: float = 0.95,
    random_state: int | None = 0,
    show_progress: bool | None = None,
) -> MetaResult:
    """``result`` with ``ci_low, ci_high, se`` columns on its correlations (paired resamples:
    every measure sees the same resampled systems / prompts). Prompt-level rows included.

    ``settings["bootstrap"]["n_clusters"]`` records how many prompts / systems were resampled;
    with fewer than 20 of them, one [`FewClustersWarning`][storyeval.exceptions.FewClustersWarning]
    per call (percentile intervals are then too short). With a single one, a bootstrap has
    nothing to resample (every resample is the data): the intervals are NaN, an
    `UndefinedStatisticWarning` and ``settings["bootstrap"]["reason"]`` say why (never a
    zero-width interval)."""
    wide = _wide(result)
    frames = []
    # one FewClustersWarning for the call, not one per level and baseline
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewClustersWarning)
        for level, rows in result.correlations.groupby("level", sort=False):
            pairs = list(zip(rows["measure"], rows["criterion"]))
            frames.append(bootstrap_correlations(
                wide, pairs, level=level, method=result.settings["coefficient"],
                n_resamples=n_resamples, resample_by=resample_by, ci_method=ci_method,
                confidence_level=confidence_level, random_state=random_state,
                show_progress=show_progress, tie_rtol=_tie_rtol(result)))
        baseline = _baseline_intervals(result, wide, n_resamples=n_resamples,
                                       resample_by=resample_by, ci_method=ci_method,
                                       confidence_level=confidence_level,
                                       random_state=random_state,
                                       tie_rtol=_tie_rtol(result))
    clusters = _clusters(wide, resample_by)
    few = few_clusters_message(clusters, ci_method)
    if few and min(clusters.values()) >= 2:  # one cluster: undefined, said below
        warnings.warn(few, FewClustersWarning, stacklevel=2)
    boot = pd.concat(frames, ignore_index=True)
    keep = [*_KEY, "ci_low", "ci_high", "se", "ci_method", "confidence_level", "n_resamples",
            "resample_by"]
    correlations = result.correlations.merge(boot[keep], on=_KEY, how="left")
    settings = {**result.settings, "bootstrap": {
        "n_resamples": n_resamples, "resample_by": resample_by, "ci_method": ci_method,
        "confidence_level": confidence_level, "random_state": random_state,
        "n_clusters": clusters, "few_clusters": few is not None}}
    single = [unit for unit, n in clusters.items() if n < 2]
    if single:
        from storyeval.exceptions import UndefinedStatisticWarning
        from storyeval.resample.clusters import ONE_CLUSTER_REASON

        reason = f"{' and '.join(single)}: {ONE_CLUSTER_REASON}"
        warnings.warn(f"bootstrap intervals undefined: {reason}", UndefinedStatisticWarning,
                      stacklevel=user_stacklevel())
        correlations[["ci_low", "ci_high", "se"]] = np.nan
        if "ci_low" in baseline.columns:
            baseline = baseline.assign(ci_low=np.nan, ci_high=np.nan)
        settings["bootstrap"]["reason"] = reason
    return replace(result, correlations=correlations, baseline=baseline, settings=settings)


def _tie_rtol(result: MetaResult) -> float:
    """The tie rule of the result's point estimates, so that every resampled statistic uses
    the same one."""
    from storyeval.correlation.ties import TIE_RTOL

    return float(result.settings.get("tie_rtol", TIE_RTOL))


def _clusters(wide: pd.DataFrame, resample_by: str) -> dict[str, int]:
    """How many prompts / systems the bootstrap resamples (the wide frame's complete grid)."""
    return cluster_counts(wide.index.unique("system").size, wide.index.unique("prompt_id").size,
                          resample_by)


def _baseline_intervals(result: MetaResult, wide: pd.DataFrame, *, n_resamples: int,
                        resample_by: str, ci_method: str, confidence_level: float,
                        random_state: int | None, tie_rtol: float) -> pd.DataFrame:
    """Percentile intervals of the human baseline, from the same resamples as the measures: per
    resample, the mean over annotators of corr(annotator i, target i) (target: the criterion
    mean for the upper bound, the mean of the others for leave-one-out). ``expanded``: at the
    expanded level; ``bca``: percentile (a mean of coefficients has no jackknife here)."""
    from storyeval.meta.pipeline import annotator_columns

    base = result.baseline
    if base.empty:
        return base
    annotators, loo = annotator_columns(result.dataset.catalogue, result.settings["criteria"])
    wide, loo, skipped = _loo_targets(wide, annotators, loo)
    level_used = confidence_level
    if ci_method == "expanded":
        level_used = expanded_level(min(_clusters(wide, resample_by).values()), confidence_level)
    alpha = (1 - level_used) / 2
    rows = []
    for level, part in base.groupby("level", sort=False):
        groups, pairs = [], []
        for crit, variant in zip(part["criterion"], part["variant"]):
            targets = ([crit] * len(annotators[crit]) if variant == "upper_bound"
                       else loo.get(crit))
            if crit in skipped:
                groups.append([])
                continue
            groups.append(list(range(len(pairs), len(pairs) + len(targets))))
            pairs += list(zip(annotators[crit], targets))
        if not pairs:
            rows += [(index, np.nan, np.nan) for index in part.index]
            continue
        _, theta = bootstrap_correlations(
            wide, pairs, level=level, method=result.settings["coefficient"],
            n_resamples=n_resamples, resample_by=resample_by, confidence_level=confidence_level,
            random_state=random_state, return_distribution=True, tie_rtol=tie_rtol)
        for index, cols in zip(part.index, groups):
            if cols:
                means = theta[:, cols].mean(axis=1)
                low, high = np.nanquantile(means, [alpha, 1 - alpha])
            else:
                low = high = np.nan
            rows.append((index, low, high))
    out = base.copy()
    where = [r[0] for r in rows]
    out.loc[where, "ci_low"] = [r[1] for r in rows]
    out.loc[where, "ci_high"] = [r[2] for r in rows]
    out["ci_method"] = "expanded" if ci_method == "expanded" else "percentile"
    no_ci = out["criterion"].isin(list(skipped)).to_numpy()
    if no_ci.any():
        why = ("no bootstrap interval: not every annotator rated every story (ragged "
               "annotators), and the resampled baseline needs complete annotator columns")
        reason = out["reason"].astype(str)
        out["reason"] = np.where(no_ci, np.where(reason == "", why, reason + "; " + why), reason)
    return out


def _loo_targets(wide: pd.DataFrame, annotators: dict[str, list[str]],
                 loo: dict[str, list[str]]) -> tuple[pd.DataFrame, dict[str, list[str]], set]:
    """Leave-one-out target columns for every criterion (the data's own, or computed as the
    mean of the other annotators), and the criteria whose annotator columns have gaps."""
    skipped = {crit for crit, cols in annotators.items()
               if wide[cols].isna().to_numpy().any()}
    extra, targets = {}, dict(loo)
    for crit, cols in annotators.items():
        if crit in loo or crit in skipped:
            continue
        values = wide[cols].to_numpy(dtype=float)
        others = (values.sum(axis=1, keepdims=True) - values) / (len(cols) - 1)
        names = [f"mean of the {crit} annotators but {col}" for col in cols]
        extra.update(zip(names, others.T))
        targets[crit] = names
    if extra:
        wide = pd.concat([wide, pd.DataFrame(extra, index=wide.index)], axis=1)
    return wide, targets, skipped


def add_permutation_pvalues(
    result: MetaResult,
    *,
    n_permutations: int = 1000,
    unit: str | None = None,
    alternative: str = "two-sided",
    random_state: int | None = 0,
) -> MetaResult:
    """``result`` with ``perm_p`` (paired permutation test of the same comparison as each
    comparison row) and ``perm_p_adjusted`` (same adjustment and family as the comparison p)."""
    if result.comparisons.empty:
        return result
    will = result.comparisons
    wide = _wide(result)
    lower = result.settings["comparisons"].get("lower_is_better") or []
    if lower:  # measures declared lower-is-better are compared negated, as in the tests
        from storyeval.compare.procedures import oriented_wide

        wide = oriented_wide(wide, frozenset(lower))
    perm = permutation_pvalues(
        wide, will[["criterion", "measure_a", "measure_b", "level"]],
        method=result.settings["coefficient"], unit=unit, n_permutations=n_permutations,
        alternative=alternative, random_state=random_state, tie_rtol=_tie_rtol(result),
        orient=result.settings["comparisons"].get("sign_convention", "paper") == "paper")
    williams = will.copy()
    for column in ("perm_delta", "perm_p", "perm_unit", "perm_n"):
        williams[column] = perm[column].to_numpy()
    settings = result.settings["comparisons"]
    adjusted = adjust_frame(williams, by=settings["family"], p_col="perm_p",
                            method=settings["adjustment"], out_col="perm_p_adjusted",
                            family_col="perm_family")
    williams["perm_p_adjusted"] = adjusted["perm_p_adjusted"].to_numpy()
    units = williams.groupby("level", sort=False)["perm_unit"].agg(
        lambda u: ", ".join(dict.fromkeys(map(str, u))))
    new_settings = {**result.settings, "permutation": {
        "n_permutations": n_permutations, "unit": units.to_dict(),
        "alternative": alternative, "random_state": random_state,
        "statistic": "difference of |correlation| after standardising both measures"}}
    return replace(result, comparisons=williams, settings=new_settings)


def add_chance(
    result: MetaResult,
    *,
    n_draws: int = 1000,
    confidence_level: float = 0.95,
    random_state: int | None = 0,
) -> MetaResult:
    """``result`` with `MetaResult.chance`: per criterion and level, the spread of the
    coefficient of a random measure (a measured value inside it is indistinguishable from noise)."""
    wide = _wide(result)
    frames = [chance_baseline(wide, result.settings["criteria"], level=level,
                              method=result.settings["coefficient"], n_draws=n_draws,
                              confidence_level=confidence_level, random_state=random_state,
                              tie_rtol=_tie_rtol(result))
              for level in result.settings["levels"]]
    settings = {**result.settings, "chance": {"n_draws": n_draws,
                                              "confidence_level": confidence_level,
                                              "random_state": random_state}}
    chance = pd.concat(frames, ignore_index=True)
    # next to each measured value: how far a random measure reaches for that criterion and level
    band = chance[["criterion", "level", "abs_high"]].rename(columns={"abs_high":
                                                                      "chance_abs_high"})
    correlations = result.correlations.drop(columns=["chance_abs_high"], errors="ignore")
    correlations = correlations.merge(band, on=["criterion", "level"], how="left")
    return replace(result, chance=chance, correlations=correlations, settings=settings)
