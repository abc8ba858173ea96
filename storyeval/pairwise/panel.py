"""Judge panels: several judges' pairwise verdicts pooled into one judge (mean, majority, a
PPI-weighted pool), each judge's weight, the leave-one-judge-out change of the ranking, and a
paired, prompt-clustered test of whether a pool agrees with the humans better than its best
member.

Every judge must judge the same comparisons (prompt and pair of stories, all verdicts on one
comparison averaged into the share won by ``a``, a tie counting half); a judge's score on a
comparison is that share. Pools:

- ``mean``: the judges' mean score;
- ``majority``: 1 when more judges lean to ``a`` (score above 0.5) than to ``b``, 0 when fewer,
  0.5 on a tie of votes;
- ``ppi``: the weighted mean ``sum_j w_j f_j`` with the weights that best predict the human
  score on the labelled comparisons (non-negative least squares of the centred human scores on
  the centred judge scores, normalised to sum to 1; equal weights when none is positive). A
  prediction-powered estimate's variance falls with the squared correlation of prediction and
  label, which these weights maximise among non-negative combinations. The weights are fitted
  on the same labelled comparisons the test uses, which favours the pool: the test of that pool
  is optimistic (the mean and majority pools have no fitted weight).

Agreement of a judge (or pool) with the humans on a labelled comparison: ``1 - |f - y|`` (1
when both say the same, 0.5 for a tie against a win). The best member is the judge of highest
mean agreement, chosen on the same data (which favours the member). Each pool is compared with
it by `storyeval.pairwise.inference.compare_accuracies` on the labelled comparisons, clustered
by prompt (two-sided).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = ["PanelResult", "judge_panel", "pool_scores"]

POOLS = ("mean", "majority", "ppi")


@dataclass(frozen=True)
class PanelResult:
    """A judge panel's pools, weights and tests.

    Attributes
    ----------
    judges : DataFrame
        One row per judge: ``judge, weight_mean, weight_majority, weight_ppi, agreement,
        lam`` (PPI++'s lambda of prediction-powered ranking with this judge alone),
        ``loo_tau, loo_rank_changes, loo_max_shift`` (the ranking by the `loo_pool` pool's
        prediction-powered win rates without this judge, against the ranking with all).
    pools : DataFrame
        One row per pool: ``pool, agreement, best_member, best_agreement, difference,
        ci_low, ci_high, pvalue, test, n, n_clusters, lam, rank_set_size``.
    rankings : DataFrame
        Per pool and item: prediction-powered win rate, rank and rank-set with that pool as
        the judge.
    settings : dict
    """

    judges: pd.DataFrame
    pools: pd.DataFrame
    rankings: pd.DataFrame
    settings: dict = field(default_factory=dict)


def pool_scores(scores: np.ndarray, pool: str, weights: np.ndarray | None = None
                ) -> np.ndarray:
    """Pooled score per comparison from ``scores`` (n, J) of the judges.

    Examples
    --------
    >>> s = np.array([[1.0, 1.0, 0.0], [0.0, 0.5, 1.0]])
    >>> pool_scores(s, "majority").tolist(), pool_scores(s, "mean").round(3).tolist()
    ([1.0, 0.5], [0.667, 0.5])
    """
    if pool == "mean":
        return scores.mean(axis=1)
    if pool == "majority":
        votes = np.sign(scores - 0.5).sum(axis=1)
        return np.where(votes > 0, 1.0, np.where(votes < 0, 0.0, 0.5))
    if pool == "ppi":
        if weights is None:
            raise InputError("pool 'ppi' needs weights")
        return scores @ weights
    raise InputError(f"pool must be one of {POOLS}, got {pool!r}")


def ppi_weights(y: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Non-negative least squares weights of the centred judge scores ``f`` (n, J) for the
    centred human scores ``y``, normalised to sum to 1 (equal weights when all are 0)."""
    from scipy.optimize import nnls

    w, _ = nnls(f - f.mean(axis=0), y - y.mean())
    total = w.sum()
    return w / total if total > 0 else np.full(f.shape[1], 1.0 / f.shape[1])


def _panel_units(judges: pd.DataFrame, human: pd.DataFrame, dimension: str | None, by: str,
                 judge_source: str, human_source: str):
    """(keys, items codes a, b, prompt codes, judge names, scores (n, J), human (n,))."""
    from storyeval.pairwise.ppr import _select, _unit_frame

    h = _select(human, dimension, None, human_source)
    j = _select(judges, dimension if dimension is not None else str(h["dimension"].iloc[0]),
                None, judge_source)
    ju = _unit_frame(j, by, judge_source)
    ju["judge"] = j["judge"].to_numpy(dtype=str)
    ju["score"] = ju["win_a"] + 0.5 * ju["tie"]
    names = sorted(set(ju["judge"]))
    if len(names) < 2:
        raise InputError(f"{judge_source}: a panel needs verdicts of at least 2 judges (column "
                         f"'judge'), found {names}")
    wide = ju.pivot_table(index="key", columns="judge", values="score", aggfunc="mean")
    wide = wide[names]
    gap = wide.isna().to_numpy()
    if gap.any():
        r, c = np.argwhere(gap)[0]
        prompt, lo, hi = str(wide.index[r]).split("\x1f")
        raise InputError(f"{judge_source}: judge {names[c]!r} has no verdict on prompt "
                         f"{prompt!r}, stories {lo!r} vs {hi!r}, which other judges judged; a "
                         f"panel's judges must judge the same comparisons ({int(gap.sum())} "
                         "gap(s) in all)")
    first = ju.groupby("key", sort=True)[["prompt", "item_a", "item_b"]].first()
    hu = _unit_frame(h, by, human_source)
    missing = ~hu["key"].isin(wide.index).to_numpy()
    if missing.any():
        r = int(np.flatnonzero(missing)[0])
        raise InputError(f"{human_source}: row {hu['row'].iloc[r]} has no verdict in "
                         f"{judge_source}; the judges must judge every human-labelled "
                         "comparison")
    y = (hu["win_a"] + 0.5 * hu["tie"]).groupby(hu["key"]).mean()
    human_score = y.reindex(wide.index).to_numpy()
    codes, items = pd.factorize(np.concatenate([first["item_a"].to_numpy(dtype=str),
                                                first["item_b"].to_numpy(dtype=str)]), sort=True)
    n = len(wide)
    prompt, _ = pd.factorize(first["prompt"].to_numpy(dtype=str), sort=True)
    return ([str(x) for x in items], codes[:n], codes[n:], prompt, names, wide.to_numpy(),
            human_score)


def _units(items, a, b, prompt, judge_score, human_score):
    from storyeval.pairwise.ppr import ComparisonUnits

    lab = ~np.isnan(human_score)
    share = np.stack([judge_score, 1 - judge_score, np.zeros_like(judge_score)], axis=1)
    hshare = np.stack([human_score, 1 - human_score, np.zeros_like(human_score)], axis=1)
    return ComparisonUnits(items, a, b, share, hshare, prompt, lab.astype(np.int64),
                           np.ones(len(a), np.int64))


def _ranking(units, level: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    from scipy.stats import rankdata

    from storyeval.pairwise.ppr import ppr_win_rates, rank_sets

    theta, cov, lam = ppr_win_rates(units)
    low, high = rank_sets(theta, cov, confidence_level=level)
    return theta, rankdata(-theta, method="min"), np.stack([low, high], axis=1), lam


def judge_panel(
    judges: pd.DataFrame,
    human: pd.DataFrame,
    *,
    dimension: str | None = None,
    by: str = "system",
    loo_pool: str = "mean",
    test: str = "permutation",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int = 0,
    judge_source: str = "judge verdicts",
    human_source: str = "human verdicts",
) -> PanelResult:
    """Pool several judges' verdicts, weigh them, and test the pools against the best judge.

    Parameters
    ----------
    judges : DataFrame
        Verdict table of two or more judges (column ``judge``) on the same comparisons.
    human : DataFrame
        Human verdicts on a random subset of those comparisons.
    dimension, by
        As in `storyeval.pairwise.ppr.comparison_units`.
    loo_pool : {"mean", "majority", "ppi"}, default "mean"
        The pool whose leave-one-judge-out rankings are reported.
    test : {"permutation", "bootstrap", "cluster-t"}, default "permutation"
        Paired test of a pool's agreement against the best member's, clustered by prompt
        (`storyeval.pairwise.inference.compare_accuracies`).
    confidence_level : float, default 0.95
        Of the test's interval and of the rank-sets.
    n_resamples : int, default 2000
    random_state : int, default 0
        Seed of the test's resampling.
    judge_source, human_source : str
        Names used in error messages.

    Returns
    -------
    PanelResult

    Notes
    -----
    Rankings: prediction-powered win rates (`storyeval.pairwise.ppr.ppr_win_rates`, PPI++,
    prompt-clustered) with the pool's score as the judge's verdict on every comparison.
    ``loo_tau``: Kendall's tau-b between the pool's win rates with all judges and without the
    judge; ``loo_rank_changes``: items whose rank changes; ``loo_max_shift``: the largest rank
    change.

    Validated by hand-worked pools (tests/test_pairwise_panel.py); the test is
    `compare_accuracies`' (validated there).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = [(p, f"{x}/{p}", f"{y}/{p}", v, j) for p in range(30)
    ...         for (x, y) in (("S", "T"), ("T", "U"), ("S", "U"))
    ...         for j, v in (("j1", "A"), ("j2", "A" if p % 4 else "B"), ("j3", "B"))]
    >>> judges = pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b", "verdict",
    ...                                      "judge"]).assign(dimension="Overall", order="AB")
    >>> human = judges[(judges.judge == "j1") & (judges.prompt_id < 24)].drop(columns="judge")
    >>> judge_panel(judges, human, n_resamples=200).pools["pool"].tolist()
    ['mean', 'majority', 'ppi']
    """
    from scipy.stats import kendalltau

    from storyeval.pairwise.inference import compare_accuracies

    if loo_pool not in POOLS:
        raise InputError(f"loo_pool must be one of {POOLS}, got {loo_pool!r}")
    if test not in ("permutation", "bootstrap", "cluster-t"):
        raise InputError(f"test must be 'permutation', 'bootstrap' or 'cluster-t', got {test!r}")
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    items, a, b, prompt, names, f, y = _panel_units(judges, human, dimension, by,
                                                     judge_source, human_source)
    lab = ~np.isnan(y)
    if lab.sum() < 2:
        raise InputError(f"{human_source}: a panel needs at least 2 human-labelled comparisons")
    n_j = len(names)
    w_ppi = ppi_weights(y[lab], f[lab])

    def agreement(score: np.ndarray) -> np.ndarray:
        return 1.0 - np.abs(score[lab] - y[lab])

    member = np.array([agreement(f[:, j]).mean() for j in range(n_j)])
    best = int(np.argmax(member))
    level = confidence_level

    def pooled(kind: str, cols: np.ndarray) -> np.ndarray:
        weights = None
        if kind == "ppi":
            weights = ppi_weights(y[lab], f[lab][:, cols])
        return pool_scores(f[:, cols], kind, weights)

    everyone = np.arange(n_j)
    pool_rows, ranking_rows = [], []
    rng = np.random.default_rng(random_state)
    for kind in POOLS:
        score = pooled(kind, everyone)
        theta, rank, sets, lam = _ranking(_units(items, a, b, prompt, score, y), level)
        res = compare_accuracies(agreement(score), agreement(f[:, best]), clusters=prompt[lab],
                                 test=test, confidence_level=level, n_resamples=n_resamples,
                                 random_state=rng, labels=(f"pool:{kind}", names[best]))
        r = asdict(res)
        pool_rows.append({"pool": kind, "agreement": r["accuracy_a"],
                          "best_member": names[best], "best_agreement": r["accuracy_b"],
                          "difference": r["difference"], "ci_low": r["ci_low"],
                          "ci_high": r["ci_high"], "pvalue": r["pvalue"], "test": test,
                          "n": r["n"], "n_clusters": r["n_clusters"], "lam": lam,
                          "rank_set_size": float(np.mean(sets[:, 1] - sets[:, 0] + 1))})
        ranking_rows.append(pd.DataFrame({
            "pool": kind, "item": items, "win_rate": theta, "rank": rank.astype(np.int64),
            "rank_set_low": sets[:, 0], "rank_set_high": sets[:, 1]}))
    full_theta = _ranking(_units(items, a, b, prompt, pooled(loo_pool, everyone), y), level)
    judge_rows: list[dict[str, Any]] = []
    for j, name in enumerate(names):
        rest = np.delete(everyone, j)
        theta, rank, _, _ = _ranking(_units(items, a, b, prompt, pooled(loo_pool, rest), y),
                                     level)
        alone = _ranking(_units(items, a, b, prompt, f[:, j], y), level)[3]
        shift = np.abs(rank - full_theta[1])
        judge_rows.append({
            "judge": name, "weight_mean": 1.0 / n_j, "weight_majority": 1.0 / n_j,
            "weight_ppi": float(w_ppi[j]), "agreement": float(member[j]), "lam": alone,
            "loo_tau": float(kendalltau(full_theta[0], theta).statistic),
            "loo_rank_changes": int(np.count_nonzero(shift)),
            "loo_max_shift": int(shift.max())})
    settings = {"loo_pool": loo_pool, "test": test, "confidence_level": level,
                "n_resamples": n_resamples, "seed": random_state,
                "n_labelled": int(lab.sum()), "n_comparisons": len(y)}
    rankings = pd.concat(ranking_rows, ignore_index=True)
    return PanelResult(pd.DataFrame(judge_rows), pd.DataFrame(pool_rows), rankings, settings)
