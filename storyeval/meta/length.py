"""Length as a confound of story evaluation: diagnostics and controls.

Longer stories are often preferred, by humans and more so by LLM judges; a judge can then agree
with humans by preferring the longer story without judging anything else. This module measures
and removes that shortcut on *pairs* of stories (a, b):

* `prefer_longer_rate`: P(prefer longer), the share of decided pairs with unequal lengths in
  which the preferred story is the longer one (0.5 = no length preference);
* `length_controlled_accuracy`: the judge's agreement with the humans with length made
  uninformative: within bins of the absolute length difference, the pairs where the humans
  preferred the longer story and those where they preferred the shorter weigh half each, so a
  judge that always picks the longer story scores exactly 0.5 and one that copies the humans 1;
* `length_controlled_win_rate`: AlpacaEval's length-controlled win rate of story a over b:
  ``logit P(a wins) = b0 + phi * tanh(dlen / sd(dlen))`` (``dlen = len(a) - len(b)``) fitted
  by maximum likelihood with a ridge penalty 0.1 / 2 (b0^2 + phi^2), which keeps a judge that
  always picks the longer story (separable data) finite; the controlled win rate is
  ``sigmoid(b0)``, the win rate at equal lengths, with a cluster (prompt) bootstrap interval and
  standard error when ``n_resamples > 0``;
* `balance_length`: a length-balanced subset: the length differences (preferred minus
  rejected) are binned by absolute size, and in every bin the larger of the two signs is pruned
  at random to the size of the smaller (symmetric histogram: P(prefer longer) = 0.5 exactly);
  it reports how many decided pairs it kept;
* `partial_correlation`: a measure's correlation with a criterion controlling for length,
  ``(r_xy - r_xz r_yz) / sqrt((1 - r_xz^2)(1 - r_yz^2))`` on the level's coefficient (partial
  Pearson, or Kendall's partial tau, Kendall 1942);
* `pointwise_pairs`: the within-prompt pairs of stories of a score table, with each pointwise
  measure's verdict (+1 / -1 / 0 as the score of a is higher / lower / equal), so that
  P(prefer longer) of pointwise measures is read on the same pairs as judges.

Verdicts are coded +1 (a preferred), -1 (b preferred), 0 (tie).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = [
    "BalancedSubset",
    "balance_length",
    "length_controlled_accuracy",
    "length_controlled_win_rate",
    "length_table",
    "partial_correlation",
    "pointwise_pairs",
    "prefer_longer_rate",
]

RIDGE = 0.1


def _verdicts(values, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise InputError(f"{name} must be one-dimensional, got shape {arr.shape}")
    bad = ~np.isin(arr, (-1.0, 0.0, 1.0))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InputError(f"{name}: verdicts must be +1 (a), -1 (b) or 0 (tie); row {k} is "
                         f"{arr[k]!r}")
    return arr


def _lengths(length_a, length_b, n: int) -> np.ndarray:
    a, b = np.asarray(length_a, dtype=np.float64), np.asarray(length_b, dtype=np.float64)
    if a.shape != (n,) or b.shape != (n,):
        raise InputError(f"length_a and length_b need one value per pair ({n}); got shapes "
                         f"{a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("lengths must be finite numbers (a missing length at row "
                         f"{int(np.flatnonzero(~(np.isfinite(a) & np.isfinite(b)))[0])})")
    return a - b


def prefer_longer_rate(verdict, length_a, length_b) -> tuple[float, int]:
    """P(prefer longer) over the decided pairs whose stories differ in length, and their count.

    Examples
    --------
    >>> prefer_longer_rate([1, -1, 1, 0], [300, 100, 100, 50], [200, 200, 400, 60])
    (0.6666666666666666, 3)
    """
    v = _verdicts(verdict, "verdict")
    d = _lengths(length_a, length_b, len(v))
    used = (v != 0) & (d != 0)
    n = int(used.sum())
    if n == 0:
        return float("nan"), 0
    return float(np.mean(np.sign(d[used]) == v[used])), n


def _length_term(d: np.ndarray) -> np.ndarray:
    sd = d.std()
    return np.tanh(d / sd) if sd > 0 else np.zeros_like(d)


def _fit_logistic(X: np.ndarray, y: np.ndarray, penalised: np.ndarray) -> np.ndarray:
    """Ridge-penalised logistic regression by Newton's method (few columns, exact Hessian)."""
    beta = np.zeros(X.shape[1])
    ridge = RIDGE * penalised.astype(float)
    for _ in range(200):
        eta = X @ beta
        p = 1.0 / (1.0 + np.exp(-eta))
        grad = X.T @ (y - p) - ridge * beta
        hess = (X * (p * (1 - p))[:, None]).T @ X + np.diag(ridge) + 1e-12 * np.eye(len(beta))
        step = np.linalg.solve(hess, grad)
        # halve the step until the penalised log-likelihood does not decrease
        old = _penalised_loglik(X, y, beta, ridge)
        t = 1.0
        while t > 1e-8 and _penalised_loglik(X, y, beta + t * step, ridge) < old - 1e-12:
            t /= 2
        beta = beta + t * step
        if np.max(np.abs(t * step)) < 1e-10:
            break
    return beta


def _penalised_loglik(X, y, beta, ridge) -> float:
    eta = X @ beta
    return float(np.sum(y * eta - np.logaddexp(0.0, eta)) - 0.5 * np.sum(ridge * beta**2))


def _abs_bins(size: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Quantile bins of the positive sizes ``size``: (bin of every value, edges)."""
    if size.size == 0:
        return np.zeros(0, dtype=np.int64), np.array([0.0, 1.0])
    edges = np.unique(np.quantile(size, np.linspace(0, 1, n_bins + 1)))
    which = np.clip(np.searchsorted(edges, size, side="right") - 1, 0, max(len(edges) - 2, 0))
    return which, edges


def length_controlled_accuracy(human, judge, length_a, length_b, *,
                               n_bins: int = 10) -> dict[str, float]:
    """Raw and length-balanced agreement of a judge with the humans on decided pairs.

    Pairs where the humans or the judge tie are left out. ``lc_accuracy`` reweights the pairs
    so that, within each of ``n_bins`` quantile bins of ``|len(a) - len(b)|``, the pairs whose
    human-preferred story is the longer and those whose preferred story is the shorter weigh
    half each (the bin keeps its share of the pairs); equal-length pairs keep their weight. A
    judge that always picks the longer story scores exactly 0.5, one that copies the humans 1.
    It is the expected accuracy on a `balance_length` subset, without discarding pairs. Bins
    holding one direction only cannot be balanced and are left out (``n_unbalanced``).

    Returns ``accuracy``, ``lc_accuracy``, ``n`` (pairs used), ``n_unbalanced``.
    """
    h, j = _verdicts(human, "human"), _verdicts(judge, "judge")
    if len(h) != len(j):
        raise InputError(f"human and judge differ in length ({len(h)} vs {len(j)})")
    d = _lengths(length_a, length_b, len(h))
    used = (h != 0) & (j != 0)
    if not used.any():
        raise InputError("length-controlled accuracy needs pairs decided by both the humans "
                         "and the judge")
    h, j, d = h[used], j[used], d[used]
    agree = (h == j).astype(float)
    delta = d * h  # > 0: the human-preferred story is the longer
    unequal = delta != 0
    which, _ = _abs_bins(np.abs(delta[unequal]), n_bins)
    longer = delta[unequal] > 0
    n_bins_found = int(which.max()) + 1 if which.size else 0
    count_l = np.bincount(which[longer], minlength=n_bins_found)
    count_s = np.bincount(which[~longer], minlength=n_bins_found)
    hit_l = np.bincount(which[longer], agree[unequal][longer], minlength=n_bins_found)
    hit_s = np.bincount(which[~longer], agree[unequal][~longer], minlength=n_bins_found)
    ok = (count_l > 0) & (count_s > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        balanced = 0.5 * (hit_l / count_l + hit_s / count_s)
    size = count_l + count_s
    total = size[ok].sum() + (~unequal).sum()
    lc = (np.sum(balanced[ok] * size[ok]) + agree[~unequal].sum()) / total if total else np.nan
    return {"accuracy": float(agree.mean()), "lc_accuracy": float(lc), "n": len(h),
            "n_unbalanced": int(size[~ok].sum())}


def length_controlled_win_rate(verdict, length_a, length_b, *, clusters=None,
                               n_resamples: int = 0, confidence_level: float = 0.95,
                               random_state: int | np.random.Generator | None = 0
                               ) -> dict[str, float]:
    """Win rate of a over b (ties count half) and its length-controlled value (AlpacaEval),
    with a cluster bootstrap interval and standard error of the controlled value.

    The model ``logit P(a wins) = b0 + phi * tanh(dlen / sd(dlen))`` is fitted on the decided
    pairs (ridge penalty ``RIDGE / 2 * (b0^2 + phi^2)``); the controlled win rate is
    ``sigmoid(b0)``, the win rate at equal lengths. Returns ``win_rate``, ``lc_win_rate``,
    ``length_coef`` (phi), ``n``; with ``n_resamples > 0`` also ``lc_standard_error``,
    ``lc_ci_low``, ``lc_ci_high`` and ``n_resamples``.

    Parameters
    ----------
    verdict, length_a, length_b : array-like (n,)
        +1 (a preferred), -1 (b), 0 (tie); the lengths of the two stories.
    clusters : array-like (n,), optional
        Cluster (prompt) of every pair: the bootstrap draws clusters with replacement and all
        pairs of a drawn cluster enter as often as it is drawn. None: pairs are drawn.
    n_resamples : int, default 0
        Bootstrap resamples (0: no interval).
    confidence_level : float, default 0.95
        Two-sided percentile interval.
    random_state : int or Generator, default 0
        Seed of the draws (``default_rng(random_state).integers(0, n_clusters, (b,
        n_clusters))`` for chunks of ``b`` resamples in turn).

    Notes
    -----
    Every resample refits the model, ``sd(dlen)`` included, from the full-sample estimate
    (Newton's method, all resamples at once). ``lc_standard_error`` is the standard deviation
    of the bootstrap values. AlpacaEval's own ``lc_standard_error`` is the standard error of
    the mean of its per-instruction predictions at equal lengths; those differ between
    instructions only through its instruction-difficulty term, which this model does not have
    (every prediction is ``sigmoid(b0)``), so that formula would give 0 here and ignores the
    uncertainty of the fitted coefficients; the bootstrap carries both.
    """
    v = _verdicts(verdict, "verdict")
    d = _lengths(length_a, length_b, len(v))
    decided = v != 0
    if decided.sum() < 2:
        raise InputError("length-controlled win rate needs at least two decided pairs")
    X = np.column_stack([np.ones(int(decided.sum())), _length_term(d[decided])])
    y = (v[decided] > 0).astype(float)
    beta = _fit_logistic(X, y, np.array([True, True]))
    out = {"win_rate": float(np.mean((v + 1) / 2)),
           "lc_win_rate": float(1.0 / (1.0 + np.exp(-beta[0]))),
           "length_coef": float(beta[1]), "n": int(decided.sum())}
    if not isinstance(n_resamples, (int, np.integer)) or n_resamples < 0:
        raise InputError(f"n_resamples must be an integer >= 0, got {n_resamples!r}")
    if n_resamples == 0:
        return out
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    if clusters is None:
        codes = np.arange(len(v))
    else:
        labels = np.asarray(clusters)
        if labels.shape != v.shape:
            raise InputError(f"clusters need one label per pair ({len(v)}), got shape "
                             f"{labels.shape}")
        codes = pd.factorize(labels, sort=True)[0]
    n_c = int(codes.max()) + 1
    rng = np.random.default_rng(random_state)
    # chunks of resamples x pairs of about 32 MB per array; each chunk's draws are
    # rng.integers(0, n_c, (chunk, n_c)), the clusters' multiplicities counted per row
    step = max(1, 2**22 // max(int(decided.sum()), n_c, 1))
    parts = []
    for lo in range(0, n_resamples, step):
        size = min(step, n_resamples - lo)
        draws = rng.integers(0, n_c, size=(size, n_c)) + (np.arange(size) * n_c)[:, None]
        mult = np.bincount(draws.ravel(), minlength=size * n_c).reshape(size, n_c)
        parts.append(_refit_weighted(d[decided], y, mult[:, codes[decided]].astype(np.float64),
                                     beta))
    b0 = np.concatenate(parts)
    lc = 1.0 / (1.0 + np.exp(-b0))
    good = lc[np.isfinite(lc)]
    a = (1 - confidence_level) / 2
    low, high = np.quantile(good, [a, 1 - a]) if len(good) else (np.nan, np.nan)
    out.update(lc_standard_error=float(good.std(ddof=1)) if len(good) > 1 else np.nan,
               lc_ci_low=float(low), lc_ci_high=float(high), n_resamples=int(n_resamples))
    return out


def _refit_weighted(d: np.ndarray, y: np.ndarray, w: np.ndarray, start: np.ndarray,
                    *, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
    """``b0`` of the ridge logistic model refitted on every row of weights ``w`` (B, n): the
    data with pair i repeated ``w[b, i]`` times (``sd(dlen)`` recomputed), by Newton's method
    with step halving, all rows at once; NaN where a row has no pair or does not converge."""
    tot = w.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (w @ d)[:, None] / tot
        sd = np.sqrt((w * (d[None] - mean) ** 2).sum(axis=1, keepdims=True) / tot)
        t = np.where(sd > 0, np.tanh(d[None] / sd), 0.0)
    beta = np.tile(start, (len(w), 1))

    def objective(bt: np.ndarray, rows) -> np.ndarray:
        eta = bt[:, :1] + bt[:, 1:] * t[rows]
        return (np.sum(w[rows] * (y * eta - np.logaddexp(0.0, eta)), axis=1)
                - 0.5 * RIDGE * np.sum(bt**2, axis=1))

    every = np.arange(len(w))
    f = objective(beta, every)
    done = np.zeros(len(w), dtype=bool)
    for _ in range(max_iter):
        eta = beta[:, :1] + beta[:, 1:] * t
        p = 1.0 / (1.0 + np.exp(-eta))
        r, q = w * (y - p), w * p * (1 - p)
        g0 = r.sum(axis=1) - RIDGE * beta[:, 0]
        g1 = (r * t).sum(axis=1) - RIDGE * beta[:, 1]
        h00 = q.sum(axis=1) + RIDGE
        h01 = (q * t).sum(axis=1)
        h11 = (q * t * t).sum(axis=1) + RIDGE
        det = h00 * h11 - h01**2
        step = np.column_stack([(h11 * g0 - h01 * g1) / det, (h00 * g1 - h01 * g0) / det])
        step[done] = 0.0
        scale = np.ones(len(w))
        new = beta + step
        f_new = objective(new, every)
        for _ in range(30):  # halve where the penalised log-likelihood decreased
            bad = f_new < f - 1e-12 * np.abs(f)
            if not bad.any():
                break
            scale[bad] /= 2
            new[bad] = beta[bad] + scale[bad, None] * step[bad]
            f_new[bad] = objective(new[bad], bad)
        beta, f = new, f_new
        done |= np.max(np.abs(scale[:, None] * step), axis=1) < tol
        if done.all():
            break
    out = beta[:, 0].copy()
    out[~done | (tot[:, 0] == 0)] = np.nan
    return out


@dataclass(frozen=True)
class BalancedSubset:
    """Result of `balance_length`: ``keep`` (boolean mask over the input pairs), the decided
    pairs before and after, and P(prefer longer) before and after."""

    keep: np.ndarray
    n_decided: int
    n_kept_decided: int
    prefer_longer_before: float
    prefer_longer_after: float
    bins: np.ndarray


def balance_length(preference, length_a, length_b, *, n_bins: int = 10,
                   random_state: int | np.random.Generator | None = 0) -> BalancedSubset:
    """Length-balanced subset of pairs by symmetric pruning of the length-difference histogram.

    ``delta = len(preferred) - len(rejected)`` of every decided pair is binned by ``|delta|``
    (``n_bins`` quantile bins of the nonzero ``|delta|``); in each bin the pairs whose
    preferred story is longer and those whose preferred story is shorter are cut to the
    smaller count (the excess drawn at random, ``numpy.random.default_rng(random_state)``).
    Ties and equal-length pairs are kept. The kept pairs' histogram of ``delta`` is symmetric
    per bin, so P(prefer longer) = 0.5 exactly.
    """
    v = _verdicts(preference, "preference")
    d = _lengths(length_a, length_b, len(v))
    if n_bins < 1:
        raise InputError(f"n_bins must be >= 1, got {n_bins}")
    delta = d * v  # > 0: the preferred story is the longer
    keep = np.ones(len(v), dtype=bool)
    active = (v != 0) & (delta != 0)
    which, edges = _abs_bins(np.abs(delta[active]), n_bins)
    rng = np.random.default_rng(random_state)
    idx = np.flatnonzero(active)
    positive = delta[active] > 0
    for b in np.unique(which):  # one draw per bin (few bins)
        longer, shorter = idx[(which == b) & positive], idx[(which == b) & ~positive]
        bigger, smaller = (longer, shorter) if len(longer) > len(shorter) else (shorter, longer)
        drop = rng.choice(bigger, size=len(bigger) - len(smaller), replace=False)
        keep[drop] = False
    before, _ = prefer_longer_rate(v, length_a, length_b)
    after, _ = prefer_longer_rate(v[keep], np.asarray(length_a, float)[keep],
                                  np.asarray(length_b, float)[keep])
    return BalancedSubset(keep, int((v != 0).sum()), int(((v != 0) & keep).sum()), before,
                          after, edges)


def partial_correlation(wide: pd.DataFrame, measures: Sequence[str], criteria: Sequence[str],
                        length: str, *, level: str = "overall", method: str = "kendall_b",
                        tie_rtol: float = 1e-12) -> pd.DataFrame:
    """Correlation of every measure with every criterion, raw and controlling for ``length``.

    Columns: ``measure, criterion, level, coefficient, value, partial, r_measure_length,
    r_criterion_length``.
    """
    from storyeval.correlation.levels import correlation_grid

    if length not in wide.columns:
        raise InputError(f"length column {length!r} is not in the score table")
    measures, criteria = list(measures), list(criteria)
    grid = correlation_grid(wide, list(dict.fromkeys([*measures, *criteria])),
                            list(dict.fromkeys([*criteria, length])), level=level,
                            method=method, tie_rtol=tie_rtol)
    rows = []
    for criterion in criteria:
        r_yz = grid.take([criterion], [length])["value"][0]
        for measure in measures:
            r_xy = grid.take([measure], [criterion])["value"][0]
            r_xz = grid.take([measure], [length])["value"][0]
            with np.errstate(invalid="ignore", divide="ignore"):
                partial = (r_xy - r_xz * r_yz) / np.sqrt((1 - r_xz**2) * (1 - r_yz**2))
            rows.append({"measure": measure, "criterion": criterion, "level": level,
                         "coefficient": grid.method, "value": r_xy, "partial": partial,
                         "r_measure_length": r_xz, "r_criterion_length": r_yz})
    return pd.DataFrame(rows)


def pointwise_pairs(wide: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """Every within-prompt pair of stories (a before b in system order) with each column's
    verdict ``sign(score_a - score_b)`` (NaN where a score is missing).

    Columns: ``prompt_id, system_a, system_b`` and one verdict column per entry of ``columns``
    plus ``<column>_a`` / ``<column>_b`` holding the scores (for lengths).
    """
    names = list(wide.index.names)
    sys_name = "system" if "system" in names else 0
    prompt_name = "prompt_id" if "prompt_id" in names else 1
    frame = wide[list(columns)].sort_index()
    prompts = frame.index.get_level_values(prompt_name).to_numpy()
    systems = frame.index.get_level_values(sys_name).to_numpy()
    order = np.argsort(pd.factorize(prompts, sort=True)[0], kind="stable")
    from storyeval.compare.tie_calibration import _pairs

    i, j = _pairs(pd.factorize(prompts[order], sort=True)[0])
    i, j = order[i], order[j]
    values = frame.to_numpy(dtype=np.float64)
    out = pd.DataFrame({"prompt_id": prompts[i], "system_a": systems[i],
                        "system_b": systems[j]})
    for k, col in enumerate(columns):
        out[col] = np.sign(values[i, k] - values[j, k])
        out[f"{col}_a"] = values[i, k]
        out[f"{col}_b"] = values[j, k]
    return out


def length_table(pairs: pd.DataFrame, human: str, raters: Sequence[str], length_a: str,
                 length_b: str) -> pd.DataFrame:
    """P(prefer longer) of the humans and of every rater on the same pairs, with each rater's
    raw and length-controlled accuracy against the humans.

    ``pairs`` holds verdict columns (+1 / -1 / 0; rows with a NaN verdict of the human or the
    rater are left out of that rater's row) and the two length columns.
    """
    for col in [human, *raters, length_a, length_b]:
        if col not in pairs.columns:
            raise InputError(f"column {col!r} is not in the pairs table")
    rows = []
    for rater in [human, *raters]:
        ok = pairs[[human, rater]].notna().all(axis=1).to_numpy()
        sub = pairs.loc[ok]
        rate, n = prefer_longer_rate(sub[rater], sub[length_a], sub[length_b])
        row = {"rater": rater, "prefer_longer": rate, "n_pairs_unequal_length": n}
        if rater != human:
            row.update(length_controlled_accuracy(sub[human], sub[rater], sub[length_a],
                                                  sub[length_b]))
        rows.append(row)
    return pd.DataFrame(rows)
