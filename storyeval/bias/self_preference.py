"""Self-preference (and family preference) of raters and judges: does a rater favour the stories
of its own system (or model family), relative to the other systems, more than a reference does?

The estimate is a difference-in-differences on the same stories (pointwise ratings) or the same
pairs (verdicts), with a declared map from each rater to its own system(s):

* `self_preference` (ratings): ``[mean_own(R - ref) - mean_comparison(R - ref)]``, the rater's
  own-minus-other gap less the reference's on the same stories; the reference is the human
  score where humans rated the stories, otherwise another rater (the HANNA paper's setting:
  its LLM-written stories were rated by LLMs only);
* `pairwise_self_preference` (verdicts): the judge's win rate of its own stories against the
  comparison systems' stories, less the reference's win rate of the same stories on the same
  pairs (ties count half; the reference's verdicts on a pair are averaged).

The *comparison systems* are the systems owned neither by the rater nor by a reference rater
(a reference that favours its own stories would otherwise bias the other's estimate). The
interval and the test are prompt-clustered (`storyeval.bias.inference.ratio_contrast`).

Identifying assumption (stated in every output): without self-preference the rater's and the
reference's own-minus-other gaps are equal in expectation ("parallel trends"), i.e. both score
on one scale with one discrimination. A rater that compresses the scale, or a judge noisier
than the reference, shrinks the gap of a system that really is better or worse, which reads
as (negative or positive) self-preference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from storyeval.bias._verdicts import (
    PAIR,
    keyed,
    own_map,
    reference_means,
    require_systems,
    select,
)
from storyeval.bias.inference import ratio_contrast
from storyeval.exceptions import InputError

__all__ = ["ASSUMPTION", "NO_REFERENCE", "pairwise_self_preference", "self_preference"]

#: The identifying assumption of the difference-in-differences, printed with the results.
ASSUMPTION = ("difference-in-differences: without self-preference the rater's and the "
              "reference's own-minus-comparison gaps are equal in expectation (one scale, one "
              "discrimination); comparison systems: owned neither by the rater nor by a "
              "reference rater")
#: What the estimate is without a reference (``reference=None``, ``--reference none``).
NO_REFERENCE = ("no reference: the estimate is the rater's own-minus-comparison gap itself, "
                "which mixes self-preference with any real difference in quality between its "
                "own stories and the comparison stories (the HANNA paper's reading of its LLMs' "
                "ratings of LLM stories)")


def _reference_for(rater: str, reference: str | Mapping[str, str] | None) -> str | None:
    if reference is None or isinstance(reference, str):
        return reference
    if rater not in reference:
        raise InputError(f"reference: no reference declared for rater {rater!r}")
    return str(reference[rater])


def self_preference(wide: pd.DataFrame, own: Mapping[str, str | Sequence[str]], *,
                    reference: str | Mapping[str, str] | None,
                    reference_own: Mapping[str, str | Sequence[str]] | None = None,
                    confidence_level: float = 0.95,
                    alternative: str = "two-sided") -> pd.DataFrame:
    """Self-preference of pointwise raters: a difference-in-differences against a reference.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, one float column per rater and reference
        (``Dataset.wide()``).
    own : mapping
        Rater column -> its own system, or several (a model family).
    reference : str, mapping or None
        The reference column for every rater (a human criterion, or another rater), or one
        per rater. None: no reference, the estimate is the rater's own-minus-comparison gap
        (`NO_REFERENCE`: it mixes self-preference with real quality differences).
    reference_own : mapping, optional
        Systems owned by reference raters (default: ``own``'s entry when the reference is one
        of its raters); they are left out of the comparison systems.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: the rater favours its own stories.

    Returns
    -------
    DataFrame
        One row per rater: ``rater, reference, own_systems, n_comparison_systems, estimate``
        (the difference-in-differences), ``rater_gap, reference_gap``, ``ci_low, ci_high, se,
        null, t, df, pvalue, n`` (stories), ``n_own, n_clusters`` (prompts), ``test,
        reason``.

    Notes
    -----
    With ``e = R - ref`` on the stories both scored,
    ``delta = mean_{own}(e) - mean_{comparison}(e)``; `ratio_contrast` with numerators
    ``(e 1_own, e 1_comp)``, denominators ``(1_own, 1_comp)``, weights ``(1, -1)``, clustered
    by prompt. It equals the slope of ``e ~ 1 + own`` on those stories.

    Validated against statsmodels OLS with prompt-clustered standard errors and a hand
    computation (tests/test_bias_self_preference.py).

    Examples
    --------
    >>> idx = pd.MultiIndex.from_product([["A", "B", "C"], range(4)],
    ...                                  names=["system", "prompt_id"])
    >>> h = np.tile([3.0, 2.0, 4.0, 1.0], 3) + np.repeat([0.0, 1.0, 2.0], 4)
    >>> noise = [0.1, -0.1, 0, 0, 0, 0.2, 0, 0, 0, 0, 0, -0.2]
    >>> r = h + np.repeat([0.5, 0.0, 0.0], 4) + noise
    >>> wide = pd.DataFrame({"human": h, "judge": r}, index=idx)
    >>> row = self_preference(wide, {"judge": "A"}, reference="human").iloc[0]
    >>> round(float(row["estimate"]), 6), int(row["n_clusters"])
    (0.5, 4)
    """
    owned = own_map(own)
    ref_owned = own_map(reference_own, "reference_own") if reference_own else owned
    systems = wide.index.get_level_values("system").astype(str).to_numpy()
    prompts = wide.index.get_level_values("prompt_id").to_numpy()
    rows = []
    for rater, mine in owned.items():
        ref = _reference_for(rater, reference)
        for col in (rater,) if ref is None else (rater, ref):
            if col not in wide.columns:
                raise InputError(f"no column {col!r} in the scores; columns are "
                                 f"{list(wide.columns)[:10]}")
        if ref == rater:
            raise InputError(f"rater {rater!r} is its own reference")
        unknown = mine - set(systems)
        if unknown:
            raise InputError(f"own: rater {rater!r} owns {sorted(unknown)}, not systems of the "
                             f"data ({sorted(set(systems))[:10]})")
        excluded = mine | (ref_owned.get(ref, set()) if ref is not None else set())
        rv = wide[rater].to_numpy(dtype=np.float64)
        hv = np.zeros_like(rv) if ref is None else wide[ref].to_numpy(dtype=np.float64)
        e = rv - hv
        ok = ~np.isnan(e)
        is_own = np.isin(systems, list(mine)) & ok
        comp = ~np.isin(systems, list(excluded)) & ok
        use = is_own | comp
        ev = np.where(use, e, 0.0)
        result = ratio_contrast(np.column_stack([ev * is_own, ev * comp]),
                                np.column_stack([is_own, comp]).astype(float),
                                weights=[1.0, -1.0], clusters=prompts,
                                confidence_level=confidence_level, alternative=alternative)
        rows.append({"rater": rater, "reference": "none" if ref is None else ref, "own_systems": ", ".join(sorted(mine)),
                     "n_comparison_systems": len(set(systems[comp])),
                     **result.to_dict(),
                     "rater_gap": _gap(rv, is_own, comp), "reference_gap": _gap(hv, is_own, comp),
                     "n_own": int(is_own.sum())})
    return _order(pd.DataFrame(rows))


def _gap(values: np.ndarray, own: np.ndarray, comp: np.ndarray) -> float:
    if not (own.any() and comp.any()):
        return float("nan")
    return float(values[own].mean() - values[comp].mean())


_FIRST = ["rater", "reference", "own_systems", "n_comparison_systems", "estimate", "ci_low",
          "ci_high", "rater_gap", "reference_gap"]


def _order(frame: pd.DataFrame) -> pd.DataFrame:
    first = [c for c in _FIRST if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


def pairwise_self_preference(verdicts: pd.DataFrame, own: Mapping[str, str | Sequence[str]], *,
                             reference: pd.DataFrame | str,
                             reference_own: Mapping[str, str | Sequence[str]] | None = None,
                             dimension: str | None = None, confidence_level: float = 0.95,
                             alternative: str = "two-sided") -> pd.DataFrame:
    """Self-preference of pairwise judges: own-story win rate less the reference's, same pairs.

    Parameters
    ----------
    verdicts : DataFrame
        A verdict table (`storyeval.pairwise.verdicts`) holding the judges of ``own``
        (column ``judge``); systems from ``system_a``/``system_b`` or ``SYSTEM/PROMPT`` ids.
    own : mapping
        Judge -> its own system, or several (a model family).
    reference : DataFrame or str
        A verdict table of the reference (humans; every judge label in it counts as the
        reference), or the name of another judge of ``verdicts`` (the paper's setting).
    reference_own : mapping, optional
        Systems owned by a reference judge (default: ``own``'s entry for it).
    dimension : str, optional
        Keep one dimension (default: one row per judge and dimension).
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}

    Returns
    -------
    DataFrame
        One row per judge and dimension: ``judge, dimension, reference, own_systems,
        estimate`` (difference of win rates), ``judge_win_rate, reference_win_rate``, interval,
        test and counts (``n`` judge verdicts on own-vs-comparison pairs the reference judged,
        ``n_clusters`` prompts).

    Notes
    -----
    For judge verdict i on a pair of an own story o and a comparison story, ``x_i = (w_i -
    m_i)``, ``w_i`` 1 / 0.5 / 0 as the judge prefers o / ties / prefers the other, ``m_i`` the
    reference's mean of the same score over its verdicts on that pair; ``delta = mean x``
    (`ratio_contrast`, clustered by prompt).

    Validated against a hand computation and the pointwise estimate on verdicts derived from
    ratings (tests/test_bias_self_preference.py).
    """
    owned = own_map(own)
    judged = keyed(verdicts)
    require_systems(judged, "verdicts")
    judged = select(judged, dimension=dimension)
    if isinstance(reference, str):
        if reference not in set(judged["judge"]):
            raise InputError(f"reference judge {reference!r} not in the verdicts; judges are "
                             f"{sorted(set(judged['judge']))}")
        ref_table, ref_name = judged[judged["judge"] == reference], reference
        ref_owned = own_map(reference_own, "reference_own") if reference_own else owned
        ref_systems = ref_owned.get(reference, set())
    else:
        ref_table = select(keyed(reference, "reference"), dimension=dimension,
                           source="reference")
        ref_name, ref_systems = "reference verdicts", set()
    means = reference_means(ref_table)
    rows = []
    for judge, mine in owned.items():
        mine_k = select(judged, judge=judge)
        for dim, k in mine_k.groupby("dimension", sort=False):
            lo_own = k["sys_lo"].isin(mine).to_numpy()
            hi_own = k["sys_hi"].isin(mine).to_numpy()
            excluded = mine | ref_systems
            lo_comp = ~k["sys_lo"].isin(excluded).to_numpy()
            hi_comp = ~k["sys_hi"].isin(excluded).to_numpy()
            use = (lo_own & hi_comp) | (hi_own & lo_comp)
            sign = np.where(lo_own, 1.0, -1.0)
            m = k.join(means.rename("ref"), on=PAIR)["ref"].to_numpy(dtype=np.float64)
            use &= ~np.isnan(m)
            w = (sign * k["outcome"].to_numpy() + 1) / 2
            mr = (sign * np.nan_to_num(m) + 1) / 2
            x = np.where(use, w - mr, 0.0)
            result = ratio_contrast(x, use.astype(float), clusters=k["prompt_id"].to_numpy(),
                                    confidence_level=confidence_level, alternative=alternative)
            rows.append({"judge": judge, "dimension": dim, "reference": ref_name,
                         "own_systems": ", ".join(sorted(mine)), **result.to_dict(),
                         "judge_win_rate": float(w[use].mean()) if use.any() else np.nan,
                         "reference_win_rate": float(mr[use].mean()) if use.any() else np.nan})
    if not rows:
        raise InputError("no verdicts of the judges of own")
    frame = pd.DataFrame(rows)
    first = ["judge", "dimension", "reference", "own_systems", "estimate", "ci_low", "ci_high",
             "judge_win_rate", "reference_win_rate"]
    return frame[first + [c for c in frame.columns if c not in first]]
