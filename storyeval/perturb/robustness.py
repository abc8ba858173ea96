"""Discrimination and invariance of a measure or judge on a perturbation suite.

Discrimination rate (OpenMEVA, Guan et al., 2021): the share of (original, variant) pairs in
which the original is preferred: a pointwise measure scores the original higher (ties count
0.5), a pairwise judge's verdict names the original (``"same"`` counts 0.5). Invariance: the
paired score change variant - original, its mean, and a test of zero mean change.

Intervals and tests are clustered by prompt (pairs of one prompt are not independent): the
cluster-robust (CR1) standard error of a mean, SE^2 = G / (G - 1) * sum_g (sum_{i in g}
(x_i - mean))^2 / n^2, a normal 95% interval mean +- 1.96 SE, and a two-sided t test of mean 0
with G - 1 degrees of freedom for the change.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["clustered_mean", "robustness_table", "score_outcomes", "verdict_outcomes"]


def clustered_mean(x: np.ndarray, clusters: np.ndarray, *, confidence: float = 0.95
                   ) -> tuple[float, float, float, float, float]:
    """Mean, CR1 standard error, normal interval and two-sided cluster t-test p-value (mean 0).

    Notes
    -----
    See the module docstring. With one cluster the SE is NaN. Validated against statsmodels
    OLS on a constant with ``cov_type="cluster"`` (tests).
    """
    x = np.asarray(x, dtype=np.float64)
    n = len(x)
    mean = float(x.mean()) if n else np.nan
    codes = np.unique(np.asarray(clusters), return_inverse=True)[1]
    g = int(codes.max()) + 1 if n else 0
    if g < 2:
        return mean, np.nan, np.nan, np.nan, np.nan
    sums = np.bincount(codes, weights=x - mean, minlength=g)
    se = float(np.sqrt(g / (g - 1) * np.sum(sums ** 2)) / n)
    from scipy import stats  # on use: `storyeval --help` and the parser need no scipy.stats

    zc = float(stats.norm.ppf(0.5 + confidence / 2))
    p = float(2 * stats.t.sf(abs(mean / se), g - 1)) if se > 0 else (1.0 if mean == 0 else 0.0)
    return mean, se, mean - zc * se, mean + zc * se, p


def _manifest_check(manifest: pd.DataFrame) -> None:
    missing = [c for c in ("story_id", "original_id", "kind") if c not in manifest.columns]
    if missing:
        raise InputError(f"manifest: missing column(s) {missing}")


def score_outcomes(scores: pd.DataFrame, manifest: pd.DataFrame, *,
                   lower_is_better: Collection[str] = ()) -> pd.DataFrame:
    """One row per (measure, variant): ``measure, kind, original_id, story_id, prompt_id,
    original, perturbed, change`` (perturbed - original) and ``preferred`` (1 if the original
    is better, 0.5 on a tie, 0 otherwise; "better" = higher unless the measure is in
    ``lower_is_better``). A pair with a NaN score has ``preferred`` NaN; `robustness_table`
    leaves it out and counts it in ``n_missing``."""
    _manifest_check(manifest)
    need = [c for c in ("story_id", "measure", "value") if c not in scores.columns]
    if need:
        raise InputError(f"scores: missing column(s) {need}")
    wide = scores.pivot_table(index="story_id", columns="measure", values="value",
                              aggfunc="first", dropna=False)
    ids = set(wide.index)
    absent = [s for s in list(manifest.story_id) + list(manifest.original_id) if s not in ids]
    if absent:
        raise InputError(f"scores: no score for story {absent[0]!r} of the manifest")
    prompt = (scores.drop_duplicates("story_id").set_index("story_id")["prompt_id"]
              if "prompt_id" in scores.columns else None)
    frames = []
    for measure in wide.columns:
        orig = wide.loc[manifest.original_id, measure].to_numpy(dtype=float)
        pert = wide.loc[manifest.story_id, measure].to_numpy(dtype=float)
        sign = -1.0 if measure in lower_is_better else 1.0
        d = sign * (orig - pert)
        frames.append(pd.DataFrame({
            "measure": measure, "kind": manifest.kind.to_numpy(),
            "original_id": manifest.original_id.to_numpy(),
            "story_id": manifest.story_id.to_numpy(),
            "prompt_id": (prompt.loc[manifest.original_id].to_numpy() if prompt is not None
                          else manifest.original_id.to_numpy()),
            "original": orig, "perturbed": pert, "change": pert - orig,
            "preferred": np.where(np.isnan(d), np.nan,
                                  np.where(d > 0, 1.0, np.where(d == 0, 0.5, 0.0)))}))
    return pd.concat(frames, ignore_index=True)


def verdict_outcomes(verdicts: pd.DataFrame, manifest: pd.DataFrame) -> pd.DataFrame:
    """One row per verdict on an (original, variant) pair: ``measure`` (the judge, with the
    dimension when there is one), ``kind``, ``original_id``, ``story_id``, ``prompt_id``,
    ``preferred`` (1 when the verdict names the original, 0.5 for ``"same"``, 0 otherwise).
    Verdicts on other pairs are ignored."""
    _manifest_check(manifest)
    need = [c for c in ("story_a", "story_b", "verdict") if c not in verdicts.columns]
    if need:
        raise InputError(f"verdicts: missing column(s) {need}")
    pair = {(o, v): k for o, v, k in zip(manifest.original_id, manifest.story_id, manifest.kind)}
    rows = []
    for rec in verdicts.to_dict("records"):
        a, b, verdict = str(rec["story_a"]), str(rec["story_b"]), str(rec["verdict"])
        if (a, b) in pair:
            orig, var, orig_side = a, b, "A"
        elif (b, a) in pair:
            orig, var, orig_side = b, a, "B"
        else:
            continue
        judge = str(rec.get("judge", "judge"))
        dim = rec.get("dimension")
        rows.append({"measure": f"{judge} {dim}" if isinstance(dim, str) and dim else judge,
                     "kind": pair[(orig, var)], "original_id": orig, "story_id": var,
                     "prompt_id": rec.get("prompt_id", orig),
                     "preferred": 0.5 if verdict == "same" else float(verdict == orig_side)})
    if not rows:
        raise InputError("verdicts: no verdict compares an original with one of its variants")
    return pd.DataFrame(rows)


def robustness_table(outcomes: pd.DataFrame, *, confidence: float = 0.95) -> pd.DataFrame:
    """Discrimination rate and (for pointwise scores) the paired change per measure and kind.

    Returns
    -------
    DataFrame
        ``measure, kind, n_pairs, n_missing`` (pairs with a NaN score, left out),
        ``n_prompts, discrimination`` (ties 0.5), its prompt-clustered CR1 normal interval
        ``disc_low, disc_high`` (clipped to [0, 1]); with a ``change`` column also
        ``mean_change, change_low, change_high`` and ``change_p`` (two-sided cluster t test of
        zero mean change, G - 1 df) and ``unchanged`` (share of pairs with change exactly 0).
    """
    rows = []
    has_change = "change" in outcomes.columns
    for (measure, kind), g in outcomes.groupby(["measure", "kind"], sort=True):
        n_missing = int(g["preferred"].isna().sum())
        g = g.dropna(subset=["preferred"])
        cl = g["prompt_id"].astype(str).to_numpy()
        m, _, lo, hi, _ = clustered_mean(g["preferred"].to_numpy(), cl, confidence=confidence)
        row = {"measure": measure, "kind": kind, "n_pairs": len(g), "n_missing": n_missing,
               "n_prompts": len(set(cl)), "discrimination": m,
               "disc_low": max(lo, 0.0) if lo == lo else lo,
               "disc_high": min(hi, 1.0) if hi == hi else hi}
        if has_change:
            c = g["change"].to_numpy(dtype=float)
            cm, _, clo, chi, p = clustered_mean(c, cl, confidence=confidence)
            row.update(mean_change=cm, change_low=clo, change_high=chi, change_p=p,
                       unchanged=float(np.mean(c == 0)) if len(c) else np.nan)
        rows.append(row)
    return pd.DataFrame(rows)
