"""Length preference with prompt-clustered intervals and tests.

* `length_preference` (verdicts): P(prefer the longer story) of each judge, tested against 0.5,
  and, with reference verdicts (humans) on the same pairs, the reference's P(prefer longer)
  and the paired difference judge - reference, tested against 0. The point estimates are
  `storyeval.meta.length.prefer_longer_rate` (the numbers of ``storyeval meta --length``).
* `residual_length_correlation` (ratings): Pearson's r of a rater's residual (rater - human)
  with the story length: a rater that rewards length beyond what the humans do has r > 0.
* `length_controlled_win_rates`: AlpacaEval's length-controlled win rate of each system against
  the others (`storyeval.meta.length.length_controlled_win_rate`), with prompt-bootstrap
  intervals and standard errors.
* `balanced_accuracy`: a judge's accuracy on the reference's length-balanced subset of pairs
  (`storyeval.meta.length.balance_length`) beside its raw and length-controlled accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from storyeval.bias._verdicts import PAIR, keyed, lengths_of, select
from storyeval.bias.inference import clustered_correlation, ratio_contrast
from storyeval.exceptions import InputError

__all__ = [
    "balanced_accuracy",
    "length_controlled_win_rates",
    "length_preference",
    "residual_length_correlation",
]


def _keyed_lengths(verdicts: pd.DataFrame, lengths, source: str) -> pd.DataFrame:
    k = keyed(verdicts, source)
    k["len_lo"] = lengths_of(lengths, k["lo"].to_numpy(), source="lengths")
    k["len_hi"] = lengths_of(lengths, k["hi"].to_numpy(), source="lengths")
    return k


def _longer_parts(k: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(longer story won, unit used) per verdict: decided verdicts of unequal lengths."""
    d = k["len_lo"].to_numpy() - k["len_hi"].to_numpy()
    v = k["outcome"].to_numpy()
    used = (v != 0) & (d != 0)
    return ((np.sign(d) == v) & used).astype(float), used.astype(float)


def length_preference(verdicts: pd.DataFrame, lengths: Mapping[str, float] | pd.Series, *,
                      reference: pd.DataFrame | None = None, dimension: str | None = None,
                      confidence_level: float = 0.95,
                      alternative: str = "two-sided") -> pd.DataFrame:
    """P(prefer longer) of judges (and of the reference on the same pairs) with tests.

    Parameters
    ----------
    verdicts : DataFrame
        A verdict table (`storyeval.pairwise.verdicts`).
    lengths : mapping or Series
        Story id -> length (words, tokens: any unit).
    reference : DataFrame, optional
        Reference verdicts (humans). With it, each judge is read on the pairs both judged, and
        rows for the reference and for the paired difference are added.
    dimension : str, optional
        Keep one dimension.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}

    Returns
    -------
    DataFrame
        Rows ``judge, dimension, estimand`` (``P(prefer longer)`` null 0.5, ``reference
        P(prefer longer)`` null 0.5, ``difference`` null 0), ``estimate``, interval, test,
        ``n`` (decided verdicts of unequal lengths) and ``n_clusters`` (prompts).

    Notes
    -----
    P(prefer longer) is ``sum(longer won) / sum(decided, unequal lengths)`` over verdicts
    (`storyeval.meta.length.prefer_longer_rate`); the difference is the contrast of the two
    ratios, judge verdicts and reference verdicts on the same pairs both entering the
    prompt's cluster sum (`storyeval.bias.inference.ratio_contrast`).

    Validated: equal to ``storyeval meta --length`` (the same function on the same pairs) on
    HANNA ratings turned into verdicts, to 1e-12 (tests/test_bias_length.py).
    """
    from storyeval.meta.length import prefer_longer_rate

    k = select(_keyed_lengths(verdicts, lengths, "verdicts"), dimension=dimension)
    ref = None
    if reference is not None:
        ref = select(_keyed_lengths(reference, lengths, "reference"), dimension=dimension,
                     source="reference")
    rows = []
    kw: dict[str, Any] = {"confidence_level": confidence_level, "alternative": alternative}
    for (judge, dim), g in k.groupby(["judge", "dimension"], sort=False):
        r = None
        if ref is not None:
            r = ref[ref["dimension"] == dim]
            if r.empty:
                raise InputError(f"reference: no verdicts on dimension {dim!r} (of judge "
                                 f"{judge!r}); its dimensions are {sorted(set(ref['dimension']))}")
            both = g[PAIR].merge(r[PAIR].drop_duplicates(), on=PAIR, how="left",
                                 indicator=True)["_merge"].eq("both").to_numpy()
            g = g[both]
            r = r.merge(g[PAIR].drop_duplicates(), on=PAIR)
        rate, _ = prefer_longer_rate(g["outcome"], g["len_lo"], g["len_hi"])
        won, used = _longer_parts(g)
        res = ratio_contrast(won, used, clusters=g["prompt_id"].to_numpy(), null=0.5, **kw)
        rows.append({"judge": judge, "dimension": dim, "estimand": "P(prefer longer)",
                     **res.to_dict(), "estimate": rate})
        if r is None:
            continue
        ref_rate, _ = prefer_longer_rate(r["outcome"], r["len_lo"], r["len_hi"])
        rw, ru = _longer_parts(r)
        res = ratio_contrast(rw, ru, clusters=r["prompt_id"].to_numpy(), null=0.5, **kw)
        rows.append({"judge": judge, "dimension": dim, "estimand": "reference P(prefer longer)",
                     **res.to_dict(), "estimate": ref_rate})
        nj, nr = len(g), len(r)
        num = np.zeros((nj + nr, 2))
        den = np.zeros((nj + nr, 2))
        num[:nj, 0], den[:nj, 0], num[nj:, 1], den[nj:, 1] = won, used, rw, ru
        clusters = np.concatenate([g["prompt_id"].to_numpy(), r["prompt_id"].to_numpy()])
        res = ratio_contrast(num, den, weights=[1.0, -1.0], clusters=clusters, **kw)
        rows.append({"judge": judge, "dimension": dim, "estimand": "difference",
                     **res.to_dict(), "estimate": rate - ref_rate})
    if not rows:
        raise InputError("no verdicts to read")
    return pd.DataFrame(rows)


def residual_length_correlation(wide: pd.DataFrame, rater: str, human: str, length: str, *,
                                confidence_level: float = 0.95,
                                alternative: str = "two-sided") -> dict:
    """Pearson's r of a rater's residual (rater - human) with story length, prompt-clustered.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``; columns ``rater``, ``human`` and ``length``. Stories
        with a missing value in any of the three are left out (counted in ``n``).

    Returns
    -------
    dict
        ``rater, human, length``, then the fields of `ClusteredEstimate.to_dict`
        (``estimate`` = r; the test of r = 0 and the interval on Fisher's z scale).

    Notes
    -----
    `storyeval.bias.inference.clustered_correlation` of ``wide[rater] - wide[human]`` and
    ``wide[length]``, clustered by prompt.
    """
    for col in (rater, human, length):
        if col not in wide.columns:
            raise InputError(f"no column {col!r} in the scores")
    x = wide[rater].to_numpy(dtype=np.float64) - wide[human].to_numpy(dtype=np.float64)
    y = wide[length].to_numpy(dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    prompts = wide.index.get_level_values("prompt_id").to_numpy()[ok]
    res = clustered_correlation(x[ok], y[ok], clusters=prompts,
                                confidence_level=confidence_level, alternative=alternative)
    return {"rater": rater, "human": human, "length": length,
            "estimand": "r(rater - human, length)", **res.to_dict()}


def length_controlled_win_rates(verdicts: pd.DataFrame, lengths: Mapping[str, float] | pd.Series,
                                *, dimension: str | None = None, n_resamples: int = 1000,
                                confidence_level: float = 0.95,
                                random_state: int | None = 0) -> pd.DataFrame:
    """AlpacaEval's length-controlled win rate of every system against all others, with
    prompt-bootstrap intervals and standard errors.

    Each verdict between systems X and Y counts once for X (oriented to X) and once for Y;
    per judge, dimension and system: `storyeval.meta.length.length_controlled_win_rate` of the
    oriented verdicts (``+1`` the system's story won) with ``len(own) - len(other)``, its
    interval from ``n_resamples`` resamples of the prompts (seeded by ``random_state``; 0: no
    interval).

    Returns
    -------
    DataFrame
        ``judge, dimension, system, win_rate`` (ties half), ``lc_win_rate`` (at equal
        lengths), ``length_coef``, ``n`` (decided verdicts), ``lc_standard_error``,
        ``lc_ci_low``, ``lc_ci_high``, ``n_resamples``, ``seed``.
    """
    from storyeval.meta.length import length_controlled_win_rate

    k = select(_keyed_lengths(verdicts, lengths, "verdicts"), dimension=dimension)
    if k["sys_lo"].isna().any():
        raise InputError("verdicts: the systems of the stories are unknown (system_a/system_b "
                         "or SYSTEM/PROMPT ids)")
    lo = k.assign(system=k["sys_lo"], v=k["outcome"], la=k["len_lo"], lb=k["len_hi"])
    hi = k.assign(system=k["sys_hi"], v=-k["outcome"], la=k["len_hi"], lb=k["len_lo"])
    both = pd.concat([lo, hi], ignore_index=True)
    rows = []
    for (judge, dim, system), g in both.groupby(["judge", "dimension", "system"], sort=True):
        if (g["v"] != 0).sum() < 2:
            rows.append({"judge": judge, "dimension": dim, "system": system,
                         "win_rate": float(np.mean((g["v"] + 1) / 2)), "lc_win_rate": np.nan,
                         "length_coef": np.nan, "n": int((g["v"] != 0).sum()),
                         "lc_standard_error": np.nan, "lc_ci_low": np.nan,
                         "lc_ci_high": np.nan, "n_resamples": n_resamples})
            continue
        res = length_controlled_win_rate(g["v"], g["la"], g["lb"], clusters=g["prompt_id"],
                                         n_resamples=n_resamples,
                                         confidence_level=confidence_level,
                                         random_state=random_state)
        rows.append({"judge": judge, "dimension": dim, "system": system, **res})
    table = pd.DataFrame(rows)
    table["seed"] = random_state
    return table


def balanced_accuracy(verdicts: pd.DataFrame, reference: pd.DataFrame,
                      lengths: Mapping[str, float] | pd.Series, *, dimension: str | None = None,
                      n_bins: int = 10, random_state: int | None = 0) -> pd.DataFrame:
    """A judge's agreement with the reference, raw, length-controlled and on the reference's
    length-balanced subset of pairs.

    The reference's preference on a pair is the sign of its summed outcomes; a judge verdict
    scores 1 when it names the reference's story and 0 otherwise (ties 0). The balanced
    subset is `storyeval.meta.length.balance_length` of the reference's decided pairs (seeded
    by ``random_state``); ``lc_accuracy`` is
    `storyeval.meta.length.length_controlled_accuracy` on the same verdicts.

    Returns
    -------
    DataFrame
        ``judge, dimension, n_pairs, n_kept, reference_prefer_longer,
        reference_prefer_longer_balanced, accuracy, accuracy_balanced, lc_accuracy, seed``.
    """
    from storyeval.meta.length import balance_length, length_controlled_accuracy

    k = select(_keyed_lengths(verdicts, lengths, "verdicts"), dimension=dimension)
    ref = select(_keyed_lengths(reference, lengths, "reference"), dimension=dimension,
                 source="reference")
    pref = np.sign(ref.groupby(PAIR, sort=True)["outcome"].sum())
    first = ref.groupby(PAIR, sort=True)[["len_lo", "len_hi"]].first()
    decided = pref[pref != 0]
    rows = []
    for (judge, dim), g in k.groupby(["judge", "dimension"], sort=False):
        pd_dim = decided[decided.index.get_level_values("dimension") == dim]
        lens = first.loc[pd_dim.index]
        bal = balance_length(pd_dim.to_numpy(), lens["len_lo"], lens["len_hi"], n_bins=n_bins,
                             random_state=random_state)
        kept = pd.Series(bal.keep, index=pd_dim.index, name="kept")
        j = g.join(pd_dim.rename("pref"), on=PAIR).join(kept, on=PAIR)
        j = j[j["pref"].notna()]
        right = (j["outcome"] == j["pref"]).to_numpy(dtype=float)
        keep = j["kept"].to_numpy(dtype=bool)
        decided_j = (j["outcome"] != 0).to_numpy()
        lc = (length_controlled_accuracy(j["pref"][decided_j], j["outcome"][decided_j],
                                         j["len_lo"][decided_j], j["len_hi"][decided_j],
                                         n_bins=n_bins)["lc_accuracy"]
              if decided_j.any() else np.nan)
        rows.append({"judge": judge, "dimension": dim, "n_pairs": len(pd_dim),
                     "n_kept": int(bal.keep.sum()),
                     "reference_prefer_longer": bal.prefer_longer_before,
                     "reference_prefer_longer_balanced": bal.prefer_longer_after,
                     "accuracy": float(right.mean()) if len(right) else np.nan,
                     "accuracy_balanced": float(right[keep].mean()) if keep.any() else np.nan,
                     "lc_accuracy": lc, "seed": random_state})
    return pd.DataFrame(rows)
