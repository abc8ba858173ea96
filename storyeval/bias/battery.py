"""The bias battery of one data set, as ``storyeval bias`` and ``storyeval pairwise bias`` run it:
the rater names of a dataset resolved per criterion, then every estimate of `storyeval.bias`
that the data allow, one tidy table each.

* `rating_bias` (pointwise ratings, a `storyeval.data.Dataset`): self-preference against the
  humans or another rater, leniency (offset, MAE), scale use, residual-length correlation;
* `verdict_bias` (a verdict table): position bias, self-preference against reference verdicts
  or another judge, length preference, length-controlled win rates and length-balanced
  accuracy;
* `raters_only_dataset`: the score files of ``storyeval rate`` runs (no human scores) as a
  dataset whose LLM ratings are recognised by their names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["raters_only_dataset", "rating_bias", "resolve_rater_column", "verdict_bias"]


def raters_only_dataset(scores: pd.DataFrame, *, name: str = "ratings"):
    """A dataset of LLM ratings only (a tidy ``story_id, measure, value`` table, e.g. the
    ``scores.csv`` of ``storyeval rate`` runs), with ratings named ``"{model} {criterion}
    {eval_prompt}"`` recognised (HANNA's criterion codes read as their criteria)."""
    import re

    from storyeval.data.catalogue import infer_catalogue
    from storyeval.data.criteria import CODE_TO_CRITERION, CRITERION_CODES
    from storyeval.data.dataset import Dataset
    from storyeval.data.scores import scores_to_dataset

    plain = scores_to_dataset(scores, name=name, source=name)
    tokens = {m.group(2) for m in (re.match(r"^(.+?) (\S+) (\d+)$", c)
                                   for c in plain.measures) if m}
    criteria = sorted({CODE_TO_CRITERION.get(t, t) for t in tokens} - {"AVG"})
    codes = {c: CRITERION_CODES[c] for c in criteria if c in CRITERION_CODES}
    # no column is named after a criterion: every measure stays automatic, and the ratings
    # named "{model} {criterion} {eval_prompt}" become criterion-specific LLM ratings
    catalogue = infer_catalogue(plain.measures, criteria=criteria, codes=codes)
    return Dataset(plain.table, catalogue, name, criterion_codes=codes)


def resolve_rater_column(dataset, rater: str, criterion: str | None) -> str:
    """The measure of ``rater`` (a measure, a rater group ``"Beluga-13B 1"`` or a model with
    one Eval-Prompt) for ``criterion``: its criterion-matched rating, or the measure itself
    when it is criterion-independent."""
    cat = dataset.catalogue
    if rater in set(cat["measure"]):
        return rater
    rows = cat[(cat["rater"] == rater) | (cat["model"] == rater)
               | (cat["display_name"] == rater)]
    rows = rows[rows["kind"].isin(["llm_rater", "metric", "sentinel"])]
    if criterion is not None:
        matched = rows[rows["criterion"] == criterion]
        rows = matched if not matched.empty else rows[~rows["kind"].isin(["llm_rater",
                                                                           "sentinel"])]
    if rows.empty:
        raise InputError(f"no rating of {rater!r}" + (f" for {criterion!r}" if criterion else "")
                         + f" in dataset {dataset.name!r}")
    if len(rows) > 1:
        raise InputError(f"{rater!r} names {len(rows)} measures for {criterion!r} "
                         f"({', '.join(rows['measure'].head(4))}); name a rater group such as "
                         f"'{rows['rater'].iloc[0]}'")
    return str(rows["measure"].iloc[0])


def _criteria(dataset, criteria: str | Sequence[str], raters_only: bool) -> list[str]:
    from storyeval.data.selection import split_spec

    if raters_only:
        have = sorted(set(dataset.catalogue.loc[dataset.catalogue["kind"] == "llm_rater",
                                                "criterion"]) - {"AVG"})
    else:
        have = dataset.criteria
    tokens = split_spec(criteria) if isinstance(criteria, str) else list(criteria)
    if [t.lower() for t in tokens] == ["all"]:
        return list(have)
    out = []
    for token in tokens:
        hit = [c for c in have if token.lower() in (c.lower(), str(
            dataset.criterion_codes.get(c, "")).lower())]
        if not hit:
            raise InputError(f"--criteria: no criterion {token!r}; the data have {have}")
        out.extend(hit)
    return list(dict.fromkeys(out))


def rating_bias(dataset, *, own: Mapping[str, Sequence[str]] | None = None,
                reference: str = "humans", raters: str | Sequence[str] | None = None,
                criteria: str | Sequence[str] = "all", length: str | None = None,
                raters_only: bool = False, confidence_level: float = 0.95,
                alternative: str = "two-sided") -> dict[str, pd.DataFrame]:
    """Every pointwise bias estimate the data allow, per criterion.

    Parameters
    ----------
    dataset : storyeval.data.Dataset
        Human criteria and ratings (or ratings only, ``raters_only=True``).
    own : mapping, optional
        Rater (measure, rater group or model) -> its own system(s): self-preference.
    reference : str, default "humans"
        ``"humans"`` (the criterion's human score), ``"other"`` (the other rater of ``own``,
        which must name two), ``"none"`` (no reference: the rater's own-minus-comparison
        gap, `storyeval.bias.self_preference.NO_REFERENCE`), or a rater.
    raters : str or sequence, optional
        Measure specification of the raters for leniency, scale use and length (default: the
        raters of ``own``, else every LLM rating).
    criteria : str or sequence, default "all"
    length : str, optional
        The measure holding story lengths: residual-length correlations.
    raters_only : bool
        The data hold no human scores (leniency, scale use against humans and residual
        length are skipped; the reference must be a rater).

    Returns
    -------
    dict of DataFrame
        ``self_preference``, ``leniency``, ``scale_use``, ``residual_length`` (those computed).
    """
    from storyeval.bias.length import residual_length_correlation
    from storyeval.bias.leniency import leniency, scale_use
    from storyeval.bias.self_preference import self_preference
    from storyeval.data.selection import criterion_pairs, select_measures

    if raters_only and reference == "humans":
        raise InputError("ratings without human scores: the reference must be another rater "
                         "(--reference other or a rater name) or none")
    crits = _criteria(dataset, criteria, raters_only)
    wide = dataset.wide()
    kw: dict[str, Any] = {"confidence_level": confidence_level, "alternative": alternative}
    tables: dict[str, pd.DataFrame] = {}
    if own:
        frames = []
        names = list(own)
        if reference == "other" and len(names) != 2:
            raise InputError("--reference other needs exactly two raters in --own")
        for crit in crits:
            cols = {r: resolve_rater_column(dataset, r, crit) for r in names}
            if reference == "humans":
                ref: str | dict[str, str] | None = crit
            elif reference == "none":
                ref = None
            elif reference == "other":
                ref = {cols[names[0]]: cols[names[1]], cols[names[1]]: cols[names[0]]}
            else:
                ref = resolve_rater_column(dataset, reference, crit)
            owned = {cols[r]: own[r] for r in names}
            frame = self_preference(wide, owned, reference=ref, **kw)
            frame.insert(0, "criterion", crit)
            frames.append(frame)
        tables["self_preference"] = pd.concat(frames, ignore_index=True)
    if raters_only:
        return tables
    if raters is None:
        picked = ([resolve_rater_column(dataset, r, c) for c in crits for r in own] if own
                  else select_measures(dataset.catalogue, "llm", presets=dataset.presets))
    else:
        picked = select_measures(dataset.catalogue, raters, presets=dataset.presets)
    pairs = criterion_pairs(dataset.catalogue, list(dict.fromkeys(picked)), crits)
    pairs = list(zip(pairs["measure"], pairs["criterion"]))
    if not pairs:
        return tables
    tables["leniency"] = leniency(wide, pairs, **kw)
    annotators = dataset.annotators()
    groups: dict[str, list[str]] = {}
    for crit in crits:
        if annotators.get(crit):
            groups[f"humans (annotators) / {crit}"] = annotators[crit]
        for m, c in pairs:
            if c == crit:
                groups[f"{m} / {crit}"] = [m]
    tables["scale_use"] = scale_use(wide, groups)
    if length is not None:
        from storyeval.data.selection import resolve_measure

        col = length if length in wide.columns else resolve_measure(dataset.catalogue, length,
                                                                    "--length")
        tables["residual_length"] = pd.DataFrame([
            residual_length_correlation(wide, m, c, col, **kw) for m, c in pairs if m != col])
    return tables


def verdict_bias(verdicts: pd.DataFrame, *, reference: pd.DataFrame | None = None,
                 own: Mapping[str, Sequence[str]] | None = None,
                 reference_judge: str | None = None,
                 lengths: Mapping[str, float] | pd.Series | None = None,
                 length_controlled: bool = False, dimension: str | None = None,
                 n_bins: int = 10, random_state: int | None = 0,
                 confidence_level: float = 0.95,
                 alternative: str = "two-sided") -> dict[str, pd.DataFrame]:
    """Every pairwise bias estimate the data allow.

    Returns
    -------
    dict of DataFrame
        ``position`` always; ``self_preference`` with ``own`` (against ``reference``
        verdicts, or the judge ``reference_judge`` of ``verdicts``); ``length`` with
        ``lengths`` (and the reference's P(prefer longer) and the difference when
        ``reference`` is given); with ``length_controlled``: ``lc_win_rate`` (with prompt-
        bootstrap intervals) and, with a reference, ``length_balanced`` (both seeded by
        ``random_state``).
    """
    from storyeval.bias.length import (
        balanced_accuracy,
        length_controlled_win_rates,
        length_preference,
    )
    from storyeval.bias.position import position_bias
    from storyeval.bias.self_preference import pairwise_self_preference

    kw: dict[str, Any] = {"confidence_level": confidence_level, "alternative": alternative}
    tables = {"position": position_bias(verdicts, dimension=dimension, **kw)}
    if own:
        ref = reference_judge if reference_judge is not None else reference
        if ref is None:
            raise InputError("self-preference needs a reference: reference verdicts "
                             "(--reference) or another judge (--reference-judge)")
        tables["self_preference"] = pairwise_self_preference(verdicts, own, reference=ref,
                                                             dimension=dimension, **kw)
    if lengths is not None:
        tables["length"] = length_preference(verdicts, lengths, reference=reference,
                                             dimension=dimension, **kw)
        if length_controlled:
            tables["lc_win_rate"] = length_controlled_win_rates(
                verdicts, lengths, dimension=dimension, confidence_level=confidence_level,
                random_state=random_state)
            if reference is not None:
                tables["length_balanced"] = balanced_accuracy(
                    verdicts, reference, lengths, dimension=dimension, n_bins=n_bins,
                    random_state=random_state)
    elif length_controlled:
        raise InputError("length control needs the story lengths (--lengths)")
    return tables
