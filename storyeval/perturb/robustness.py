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

from storyeval.data.io import numeric_column, row_label, string_column
from storyeval.exceptions import InputError

_VERDICTS = {"a": "A", "b": "B", "same": "same", "tie": "same"}

__all__ = ["check_lower_is_better", "check_manifest", "check_scores", "clustered_mean",
           "robustness_table", "score_outcomes", "verdict_outcomes"]


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
    # on x divided by a power of two (exact) that brings it into [-1, 1]: sums and squares of
    # huge finite values (1e308) do not overflow
    top = float(np.max(np.abs(x))) if n else 0.0
    scale = float(np.ldexp(1.0, np.frexp(top)[1] - 1)) if 0 < top < np.inf else 1.0
    xs = x / scale
    mean_s = float(xs.mean()) if n else np.nan
    mean = mean_s * scale
    codes = np.unique(np.asarray(clusters), return_inverse=True)[1]
    g = int(codes.max()) + 1 if n else 0
    if g < 2:
        return mean, np.nan, np.nan, np.nan, np.nan
    sums = np.bincount(codes, weights=xs - mean_s, minlength=g)
    se = float(np.sqrt(g / (g - 1) * np.sum(sums ** 2)) / n) * scale
    from scipy import stats  # on use: `storyeval --help` and the parser need no scipy.stats

    zc = float(stats.norm.ppf(0.5 + confidence / 2))
    p = float(2 * stats.t.sf(abs(mean / se), g - 1)) if se > 0 else (1.0 if mean == 0 else 0.0)
    return mean, se, mean - zc * se, mean + zc * se, p


def check_manifest(manifest: pd.DataFrame, *, source: str = "manifest",
                   fmt: str | None = None) -> pd.DataFrame:
    """The manifest with ``story_id``, ``original_id`` and ``kind`` as strings; a one-line
    error naming ``source`` and the row for: a missing column, no rows, an empty cell, a
    variant listed twice (it would be counted twice), a variant that is its own original (it
    would be compared with itself) or a variant that is another variant's original."""
    missing = [c for c in ("story_id", "original_id", "kind") if c not in manifest.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {missing}; found "
                         f"{list(manifest.columns)}")
    if manifest.empty:
        raise InputError(f"{source}: no rows (a header only); give the manifest.csv that "
                         "storyeval perturb wrote")
    manifest = manifest.copy()
    for c in ("story_id", "original_id", "kind"):
        manifest[c] = string_column(manifest[c], c, source, fmt)
    dup = manifest["story_id"].duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)
        raise InputError(f"{row_label(source, int(rows[1]), fmt)}: variant "
                         f"{manifest['story_id'].iloc[rows[1]]!r} is listed twice (also "
                         f"{row_label(source, int(rows[0]), fmt).split(', ')[-1]}); each "
                         "variant once")
    own = np.flatnonzero((manifest["story_id"] == manifest["original_id"]).to_numpy())
    if len(own):
        raise InputError(f"{row_label(source, int(own[0]), fmt)}: variant "
                         f"{manifest['story_id'].iloc[own[0]]!r} is its own original "
                         "(original_id); a story cannot be compared with itself")
    chained = np.flatnonzero(manifest["original_id"].isin(set(manifest["story_id"])).to_numpy())
    if len(chained):
        raise InputError(f"{row_label(source, int(chained[0]), fmt)}: original_id "
                         f"{manifest['original_id'].iloc[chained[0]]!r} is itself a variant "
                         "of the manifest; originals are unperturbed stories")
    return manifest


def check_scores(scores: pd.DataFrame, *, source: str = "scores",
                 fmt: str | None = None) -> pd.DataFrame:
    """The scores with string ids and float values; a one-line error naming ``source`` and
    the row for: a missing column, no rows, an empty id or measure, a value that is not a
    number or is infinite, a (story, measure) scored twice. An empty value is a missing score
    (the pair is counted in ``n_missing``)."""
    need = [c for c in ("story_id", "measure", "value") if c not in scores.columns]
    if need:
        raise InputError(f"{source}: missing column(s) {need}; found {list(scores.columns)}")
    if scores.empty:
        raise InputError(f"{source}: no rows (a header only)")
    scores = scores.copy()
    for c in ("story_id", "measure"):
        scores[c] = string_column(scores[c], c, source, fmt)
    scores["value"] = numeric_column(scores["value"], "value", source, fmt,
                                     scores[["story_id", "measure"]])
    dup = scores.duplicated(["story_id", "measure"]).to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise InputError(f"{row_label(source, i, fmt)}: story {scores['story_id'].iloc[i]!r} "
                         f"has a second score for measure {scores['measure'].iloc[i]!r}")
    return scores


def check_lower_is_better(names: Collection[str], measures: Collection[str]) -> None:
    """An error naming every ``--lower-is-better`` name that is not a measure of the scores,
    with the closest measure names (a typo would silently flip the measure's direction)."""
    import difflib

    known = [str(m) for m in measures]
    unknown = [n for n in names if n not in set(known)]
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise InputError(f"--lower-is-better: {unknown[0]!r} is not a measure of the scores"
                         f"{hint} (measures: {', '.join(known[:20])}"
                         f"{', ...' if len(known) > 20 else ''})")


def score_outcomes(scores: pd.DataFrame, manifest: pd.DataFrame, *,
                   lower_is_better: Collection[str] = ()) -> pd.DataFrame:
    """One row per (measure, variant): ``measure, kind, original_id, story_id, prompt_id,
    original, perturbed, change`` (perturbed - original) and ``preferred`` (1 if the original
    is better, 0.5 on a tie, 0 otherwise; "better" = higher unless the measure is in
    ``lower_is_better``). A pair with a NaN score has ``preferred`` NaN; `robustness_table`
    leaves it out and counts it in ``n_missing``. Errors: a ``lower_is_better`` name that is
    not a measure, an infinite score, a (story, measure) scored twice, the manifest's
    (`check_manifest`)."""
    manifest = check_manifest(manifest)
    scores = check_scores(scores)
    check_lower_is_better(lower_is_better, scores["measure"].unique())
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
        with np.errstate(over="ignore"):
            d = sign * (orig - pert)
        overflow = np.flatnonzero(np.isinf(d))
        if len(overflow):
            i = int(overflow[0])
            raise InputError(f"scores: measure {measure!r}: the change from original "
                             f"{manifest.original_id.iloc[i]!r} ({orig[i]:g}) to variant "
                             f"{manifest.story_id.iloc[i]!r} ({pert[i]:g}) overflows; rescale "
                             "the scores")
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


def verdict_outcomes(verdicts: pd.DataFrame, manifest: pd.DataFrame, *,
                     source: str = "verdicts", fmt: str | None = None) -> pd.DataFrame:
    """One row per verdict on an (original, variant) pair: ``measure`` (the judge, with the
    dimension when there is one), ``kind``, ``original_id``, ``story_id``, ``prompt_id``,
    ``preferred`` (1 when the verdict names the original, 0.5 for ``"same"``, 0 otherwise).
    Verdicts on other pairs are ignored; a verdict other than A, B or same (tie) is an error."""
    manifest = check_manifest(manifest)
    need = [c for c in ("story_a", "story_b", "verdict") if c not in verdicts.columns]
    if need:
        raise InputError(f"{source}: missing column(s) {need}; found {list(verdicts.columns)}")
    if verdicts.empty:
        raise InputError(f"{source}: no rows (a header only)")
    dup = verdicts.duplicated().to_numpy()
    if dup.any():
        i = int(np.flatnonzero(dup)[0])
        raise InputError(f"{row_label(source, i, fmt)}: the same verdict row appears twice (it "
                         "would be counted twice); give each verdict once (a judge or annotator "
                         "column tells raters apart)")
    pair = {(o, v): k for o, v, k in zip(manifest.original_id, manifest.story_id, manifest.kind)}
    rows = []
    for i, rec in enumerate(verdicts.to_dict("records")):
        a, b = str(rec["story_a"]), str(rec["story_b"])
        verdict = _VERDICTS.get(str(rec["verdict"]).strip().lower())
        if verdict is None:
            raise InputError(f"{row_label(source, i, fmt)}: verdict {rec['verdict']!r} is not "
                             "one of 'A', 'B', 'same' (or 'tie')")
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
        raise InputError(f"{source}: no verdict compares an original with one of its variants")
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
