"""Prediction-powered ranking: rank-sets with a stated coverage from few human and many judge
pairwise verdicts (Chatzi, Straitouri, Thejaswi & Gomez-Rodriguez, NeurIPS 2024).

Humans judge a random subset of the comparisons that a judge (an LLM) judges. The *win rate*
of item m, ``theta_m``, is the probability that m wins a human comparison in which it takes
part (a tie counts ``tie_credit``). Its prediction-powered estimate is the judge's win rate on
the comparisons without a human verdict, corrected by the mean human-minus-judge gap on the
comparisons with one (the *rectifier*), the judge's share tuned by PPI++'s ``lambda``. The
estimates' covariance ``Sigma`` defines a confidence ellipsoid
``{theta : (theta_hat - theta)^T Sigma^-1 (theta_hat - theta) <= chi2_{1 - alpha, d}}``; two
items are ordered when the ellipsoid's projection on their difference excludes 0, and an
item's *rank-set* runs from 1 + the number of items ordered above it to k - the number ordered
below it. The rank-sets of all items cover the ranking by ``theta`` together with probability
at least the confidence level (asymptotically), because the ellipsoid does.

Units: one *comparison* is a prompt and a pair of stories on one dimension; all verdicts on it
(both orders, several annotators or tries) are averaged into the share of A wins, B wins and
ties. A comparison is *labelled* when the human file has a verdict on it; every labelled
comparison must also have a judge verdict (else an error names the human row).

Two choices of the published code (github.com/Networks-Learning/prediction-powered-ranking,
``src/estimate.py``) are options here, with other defaults:

- ``scaling="total"`` divides the squared deviations of every item by the square of the total
  number of comparisons ``n``, as the published code does; an item m appears in only ``n_m``
  of them (``2n/k`` in a balanced design), so that standard error is ``n_m / n`` times the
  standard error of a mean over ``n_m`` comparisons, and the rank-sets undercover (measured
  with 10 systems and 5% human labels: 0.37 at a stated 0.90; benchmarks/bench_ppr.py,
  docs/leaderboards.md). The default ``scaling="per-model"`` divides by ``n_m^2`` (the variance
  of the per-item mean).
- ``tie_credit=0`` counts a tie as a loss of both items (the published code); the default 0.5
  counts it half a win, as everywhere in storyeval.
- ``cluster="comparison"`` treats comparisons as independent (the published code); the default
  ``"prompt"`` sums each prompt's contributions before squaring (cluster-robust), because
  comparisons of one prompt share its stories.

Validated against the published code's ``estimate``, ``lhat_opt``, ``sample_avg`` and
``find_ranksets`` on its Chatbot Arena data (fixtures in tests/data/ppr_reference_*.json,
``scaling="total", tie_credit=0, cluster="comparison"``), and by simulated coverage
(tests/test_pairwise_ppr.py, benchmarks/bench_ppr.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.exceptions import InputError

__all__ = [
    "ComparisonUnits",
    "RankSetResult",
    "comparison_units",
    "ppr_win_rates",
    "prediction_powered_ranking",
    "rank_sets",
]

_SCALINGS = ("per-model", "total")
_CLUSTERS = ("prompt", "comparison")
_METHODS = ("ppi++", "ppi", "human", "judge")


@dataclass(frozen=True)
class ComparisonUnits:
    """Comparisons of two verdict tables, one row per (prompt, pair of stories).

    Attributes
    ----------
    items : list of str
        Sorted item names (systems or stories).
    a, b : int arrays (n_units,)
        Item codes of the two sides (``a`` is the item of the story whose id sorts first).
    judge, human : float arrays (n_units, 3)
        Shares of the verdicts on the unit that say a won, b won, tie; ``human`` is NaN on
        units no human judged.
    prompt : int array (n_units,)
        Prompt codes (the clusters).
    human_rows, judge_rows : int arrays (n_units,)
        Number of verdicts behind each unit (0: no human verdict).
    dimension : str
    """

    items: list
    a: np.ndarray
    b: np.ndarray
    judge: np.ndarray
    human: np.ndarray
    prompt: np.ndarray
    human_rows: np.ndarray
    judge_rows: np.ndarray
    dimension: str = ""

    @property
    def labelled(self) -> np.ndarray:
        """Units with a human verdict."""
        return self.human_rows > 0


def _unit_frame(v: pd.DataFrame, by: str, source: str) -> pd.DataFrame:
    """One row per verdict: unit key, the two items (canonical orientation) and its outcome."""
    if by == "system":
        if "system_a" not in v.columns or "system_b" not in v.columns:
            raise InputError(f"{source}: by='system' needs columns 'system_a' and 'system_b' (or "
                             "story ids of the form 'system/prompt_id')")
        ia, ib = v["system_a"].astype(str).to_numpy(), v["system_b"].astype(str).to_numpy()
    elif by == "story":
        ia, ib = v["story_a"].to_numpy(dtype=str), v["story_b"].to_numpy(dtype=str)
    else:
        raise InputError(f"by must be 'system' or 'story', got {by!r}")
    same = ia == ib
    if same.any():
        row = int(np.flatnonzero(same)[0])
        raise InputError(f"{source}: row {v.index[row]} compares two stories of the same {by} "
                         f"{ia[row]!r}")
    sa, sb = v["story_a"].to_numpy(dtype=str), v["story_b"].to_numpy(dtype=str)
    swap = sa > sb  # orientation by story id: both files orient a pair the same way
    prompt = v["prompt_id"].map(_prompt_key).to_numpy(dtype=str)
    verdict = v["verdict"].to_numpy(dtype=str)
    a_won = np.where(swap, verdict == "B", verdict == "A")
    b_won = np.where(swap, verdict == "A", verdict == "B")
    lo, hi = np.where(swap, sb, sa), np.where(swap, sa, sb)
    return pd.DataFrame({
        "key": pd.Series(prompt) + "\x1f" + pd.Series(lo) + "\x1f" + pd.Series(hi),
        "prompt": prompt, "item_a": np.where(swap, ib, ia), "item_b": np.where(swap, ia, ib),
        "win_a": a_won.astype(float), "win_b": b_won.astype(float),
        "tie": (verdict == "same").astype(float), "row": v.index.to_numpy()})


def _prompt_key(value: object) -> str:
    """A prompt id as text (``7``, ``7.0`` and ``"7"`` are one prompt)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _select(verdicts: pd.DataFrame, dimension: str | None, judge: str | None,
            source: str) -> pd.DataFrame:
    from storyeval.pairwise.verdicts import validate_verdicts
    from storyeval.pairwise.winmatrix import select_verdicts

    v = verdicts if "winner" in verdicts.columns else validate_verdicts(verdicts, source=source)
    try:
        return select_verdicts(v, dimension=dimension, judge=judge)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None


def comparison_units(
    human: pd.DataFrame,
    judge: pd.DataFrame,
    *,
    dimension: str | None = None,
    by: str = "system",
    judge_name: str | None = None,
    human_source: str = "human verdicts",
    judge_source: str = "judge verdicts",
) -> ComparisonUnits:
    """Join a human and a judge verdict table into comparison units.

    Parameters
    ----------
    human, judge : DataFrame
        Verdict tables (`storyeval.pairwise.verdicts`); the human table may hold several
        annotators (all pooled), the judge table several judges (choose one with
        `judge_name` unless it holds one).
    dimension : str, optional
        Needed when a table holds several dimensions; the same name in both.
    by : {"system", "story"}, default "system"
    judge_name : str, optional
        Keep this judge's verdicts of `judge`.
    human_source, judge_source : str
        Names used in error messages (file names).

    Returns
    -------
    ComparisonUnits

    Raises
    ------
    InputError
        A human verdict on a comparison the judge did not judge (naming the human row), or a
        judge table with several judges and no `judge_name`.
    """
    h = _select(human, dimension, None, human_source)
    j = _select(judge, dimension if dimension is not None else str(h["dimension"].iloc[0]),
                judge_name, judge_source)
    judges = list(dict.fromkeys(j["judge"]))
    if len(judges) > 1:
        raise InputError(f"{judge_source}: verdicts of several judges {judges}; choose one "
                         "(judge_name=..., --judge)")
    hu, ju = _unit_frame(h, by, human_source), _unit_frame(j, by, judge_source)
    cols = ["win_a", "win_b", "tie"]
    jg = ju.groupby("key", sort=True)
    keys = jg.size().index
    judge_share = jg[cols].mean().to_numpy()
    first = jg[["prompt", "item_a", "item_b"]].first()
    missing = ~hu["key"].isin(keys).to_numpy()
    if missing.any():
        r = int(np.flatnonzero(missing)[0])
        prompt, lo, hi = hu["key"].iloc[r].split("\x1f")
        raise InputError(f"{human_source}: row {hu['row'].iloc[r]} (prompt {prompt!r}, stories "
                         f"{lo!r} vs {hi!r}) has no verdict in {judge_source}; the judge must "
                         f"judge every human-labelled comparison ({int(missing.sum())} row(s) "
                         "in all)")
    hg = hu.groupby("key", sort=True)
    human_share = np.full_like(judge_share, np.nan)
    pos = keys.get_indexer(hg.size().index)
    human_share[pos] = hg[cols].mean().to_numpy()
    human_rows = np.zeros(len(keys), dtype=np.int64)
    human_rows[pos] = hg.size().to_numpy()
    codes, items = pd.factorize(np.concatenate([first["item_a"].to_numpy(dtype=str),
                                                first["item_b"].to_numpy(dtype=str)]), sort=True)
    n = len(keys)
    prompt_codes, _ = pd.factorize(first["prompt"].to_numpy(dtype=str), sort=True)
    return ComparisonUnits([str(x) for x in items], codes[:n], codes[n:], judge_share, human_share,
                           prompt_codes, human_rows, jg.size().to_numpy(),
                           str(j["dimension"].iloc[0]))


@dataclass(frozen=True)
class RankSetResult:
    """Prediction-powered win rates and rank-sets.

    Attributes
    ----------
    table : DataFrame
        One row per item, by estimate (best first): ``item, win_rate, se, rank, rank_set_low,
        rank_set_high, human_win_rate, human_se, judge_win_rate, n_labelled, n_unlabelled``.
    covariance : ndarray (k, k)
        ``Sigma``, the estimates' covariance (items in the order of ``items``).
    estimate : ndarray (k,)
    items : list
    lam : float
    settings : dict
    """

    table: pd.DataFrame
    covariance: np.ndarray
    estimate: np.ndarray
    items: list
    lam: float
    settings: dict = field(default_factory=dict)


def rank_sets(estimate, covariance, *, confidence_level: float = 0.95,
              df: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Rank-sets ``[low, high]`` of each item from an estimate and its covariance.

    Parameters
    ----------
    estimate : array (k,)
        Higher is better (rank 1).
    covariance : array (k, k)
    confidence_level : float, default 0.95
        Simultaneous coverage of all rank-sets.
    df : int, optional
        Degrees of freedom of the chi-square quantile: the dimension of the ellipsoid
        (default k; k - 1 for centred strengths, whose covariance has rank k - 1).

    Returns
    -------
    (low, high) : int arrays (k,)

    Notes
    -----
    Items i and j are ordered when ``|theta_i - theta_j| > sqrt(chi2_{c, df} (Sigma_ii +
    Sigma_jj - 2 Sigma_ij))``, i.e. when the projection of the ellipsoid ``(t -
    theta)^T Sigma^+ (t - theta) <= chi2_{c, df}`` on ``t_i - t_j`` excludes 0; ``low = 1 +
    #{j ordered above i}``, ``high = k - #{j ordered below i}`` (Chatzi et al. 2024,
    Algorithm 2).

    Examples
    --------
    >>> low, high = rank_sets([0.7, 0.5, 0.3], np.diag([1e-4, 1e-4, 1e-4]))
    >>> low.tolist(), high.tolist()
    ([1, 2, 3], [1, 2, 3])
    """
    th = np.asarray(estimate, dtype=float).ravel()
    cov = np.asarray(covariance, dtype=float)
    k = th.size
    if cov.shape != (k, k):
        raise InputError(f"covariance must be ({k}, {k}), got {cov.shape}")
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    if not (np.isfinite(th).all() and np.isfinite(cov).all()):
        raise InputError("rank_sets: the estimate and covariance must be finite")
    dof = k if df is None else int(df)
    q = stats.chi2.ppf(confidence_level, dof)
    d = np.diag(cov)
    var = d[:, None] + d[None, :] - 2 * cov
    gap = th[:, None] - th[None, :]  # [i, j] = theta_i - theta_j
    ordered = gap**2 > q * np.maximum(var, 0.0)
    above = (ordered & (gap < 0)).sum(axis=1)  # j ordered above i
    below = (ordered & (gap > 0)).sum(axis=1)
    return (1 + above).astype(np.int64), (k - below).astype(np.int64)


def _wins(units: ComparisonUnits, share: np.ndarray, tie_credit: float
          ) -> tuple[np.ndarray, np.ndarray]:
    return share[:, 0] + tie_credit * share[:, 2], share[:, 1] + tie_credit * share[:, 2]


def _win_mean(a, b, wa, wb, k) -> tuple[np.ndarray, np.ndarray]:
    """Per item: the mean of its win indicators over its comparisons, and the comparison count."""
    count = np.bincount(a, minlength=k) + np.bincount(b, minlength=k)
    total = np.bincount(a, wa, minlength=k) + np.bincount(b, wb, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / count, count


def _influence(a, b, wa, wb, k, scaling) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, psi_a, psi_b): psi of unit c on item a_c and b_c, centred per item; multiplied
    by n / n_m under per-model scaling, so that Var(mean_m) = sum_c psi_cm^2 / n^2."""
    mean, count = _win_mean(a, b, wa, wb, k)
    scale = len(a) / count if scaling == "per-model" else np.ones(k)
    return mean, (wa - mean[a]) * scale[a], (wb - mean[b]) * scale[b]


def _cluster_sums(cluster, a, b, pa, pb, n_clusters, k) -> np.ndarray:
    """(n_clusters, k): per cluster and item, the sum of the units' contributions."""
    flat = np.bincount(cluster * k + a, pa, minlength=n_clusters * k)
    flat += np.bincount(cluster * k + b, pb, minlength=n_clusters * k)
    return flat.reshape(n_clusters, k)


def ppr_win_rates(units: ComparisonUnits, *, method: str = "ppi++", lam: float | None = None,
                  tie_credit: float = 0.5, scaling: str = "per-model",
                  cluster: str = "prompt") -> tuple[np.ndarray, np.ndarray, float]:
    """(estimate, covariance, lambda) of the items' human win rates.

    Parameters
    ----------
    units : ComparisonUnits
    method : {"ppi++", "ppi", "human", "judge"}, default "ppi++"
        ``ppi++``: lambda tuned (unless `lam` is given); ``ppi``: lambda = 1; ``human``: the
        human verdicts alone (lambda = 0); ``judge``: the judge's win rates on all units, no
        correction (what a judge-only leaderboard reports; not an estimate of the human win
        rate).
    lam : float, optional
        A fixed lambda in [0, 1] (with ``method="ppi++"``).
    tie_credit, scaling, cluster
        See the module docstring.

    Notes
    -----
    With labelled units L (n of them) and unlabelled units U (N), item m's judge mean on U is
    ``a_m``, the mean of the rectifier ``lambda f - h`` over the labelled units with m is
    ``b_m``, and ``theta_m = lambda a_m - b_m``. Unit c's influence on item m is
    ``psi_cm = (w_cm - mean_m) s_m 1[m in c]`` (``s_m = n / n_m``, or 1 with
    ``scaling="total"``); ``Sigma = G^T G`` with ``G`` the per-cluster sums of ``lambda
    psi^U / N`` (unlabelled) and ``psi^R / n`` (labelled rectifier). PPI++'s lambda is
    ``tr(C_hf) / ((1 + n/N) tr(V_U))``, ``C_hf = G_h^T G_f / n`` (the labelled units' human and
    judge influences), ``V_U = G_U^T G_U / N``, clipped to [0, 1].
    """
    if method not in _METHODS:
        raise InputError(f"method must be one of {_METHODS}, got {method!r}")
    if scaling not in _SCALINGS:
        raise InputError(f"scaling must be one of {_SCALINGS}, got {scaling!r}")
    if cluster not in _CLUSTERS:
        raise InputError(f"cluster must be one of {_CLUSTERS}, got {cluster!r}")
    if not (np.isfinite(tie_credit) and 0 <= tie_credit <= 1):
        raise InputError(f"tie_credit must be in [0, 1], got {tie_credit!r}")
    if lam is not None and not (np.isfinite(lam) and 0 <= lam <= 1):
        raise InputError(f"lam must be in [0, 1], got {lam!r}")
    k = len(units.items)
    lab = units.labelled
    n, big_n = int(lab.sum()), int((~lab).sum())
    fa, fb = _wins(units, units.judge, tie_credit)
    ha, hb = _wins(units, units.human, tie_credit)
    clu = units.prompt if cluster == "prompt" else np.arange(len(units.a))
    n_clu = int(clu.max()) + 1 if len(clu) else 0
    a, b = units.a, units.b
    if method == "judge":
        mean, pa, pb = _influence(a, b, fa, fb, k, scaling)
        g = _cluster_sums(clu, a, b, pa, pb, n_clu, k) / len(a)
        _check_items(mean, units.items, "the judge's")
        return mean, g.T @ g, float("nan")
    la, lb, lc = a[lab], b[lab], clu[lab]
    ua, ub, uc = a[~lab], b[~lab], clu[~lab]
    if n < 2 or (method != "human" and big_n < 2):
        raise InputError(f"prediction-powered ranking needs at least 2 human-labelled and 2 "
                         f"judge-only comparisons, got {n} and {big_n}")
    _check_items(_win_mean(la, lb, ha[lab], hb[lab], k)[0], units.items, "human-labelled")
    if method != "human":
        _check_items(_win_mean(ua, ub, fa[~lab], fb[~lab], k)[0], units.items, "judge-only")
    if method == "human":
        lam_ = 0.0
    elif method == "ppi" or lam is not None:
        lam_ = 1.0 if lam is None else float(lam)
    else:
        _, qa, qb = _influence(la, lb, fa[lab], fb[lab], k, scaling)
        _, ra, rb = _influence(la, lb, ha[lab], hb[lab], k, scaling)
        _, va, vb = _influence(ua, ub, fa[~lab], fb[~lab], k, scaling)
        gf = _cluster_sums(lc, la, lb, qa, qb, n_clu, k)
        gh = _cluster_sums(lc, la, lb, ra, rb, n_clu, k)
        gu = _cluster_sums(uc, ua, ub, va, vb, n_clu, k)
        denom = (1 + n / big_n) * np.sum(gu * gu) / big_n
        lam_ = float(np.clip(np.sum(gh * gf) / n / denom, 0.0, 1.0)) if denom > 0 else 0.0
    a_mean = np.zeros(k)
    pieces = np.zeros((n_clu, k))
    if lam_ > 0:
        a_mean, va, vb = _influence(ua, ub, fa[~lab], fb[~lab], k, scaling)
        pieces += lam_ * _cluster_sums(uc, ua, ub, va, vb, n_clu, k) / big_n
    b_mean, ra, rb = _influence(la, lb, lam_ * fa[lab] - ha[lab], lam_ * fb[lab] - hb[lab], k,
                                scaling)
    pieces += _cluster_sums(lc, la, lb, ra, rb, n_clu, k) / n
    return lam_ * a_mean - b_mean, pieces.T @ pieces, lam_


def _check_items(mean: np.ndarray, items: list, which: str) -> None:
    bad = np.flatnonzero(~np.isfinite(mean))
    if bad.size:
        raise InputError(f"item {items[bad[0]]!r} takes part in no {which} comparison; every "
                         "item needs human-labelled and judge-only comparisons")


def prediction_powered_ranking(
    human: pd.DataFrame,
    judge: pd.DataFrame,
    *,
    dimension: str | None = None,
    by: str = "system",
    judge_name: str | None = None,
    human_source: str = "human verdicts",
    judge_source: str = "judge verdicts",
    method: str = "ppi++",
    lam: float | None = None,
    tie_credit: float = 0.5,
    scaling: str = "per-model",
    cluster: str = "prompt",
    confidence_level: float = 0.95,
) -> RankSetResult:
    """Rank-sets of items with a stated coverage from human and judge pairwise verdicts.

    Parameters
    ----------
    human, judge : DataFrame
        Verdict tables; every comparison (prompt, pair of stories) humans judged must also be
        judged by the judge. The judge's other comparisons are the unlabelled ones; the
        labelled comparisons should be a random subset.
    dimension, by, judge_name, human_source, judge_source
        As in `comparison_units`.
    method, lam, tie_credit, scaling, cluster
        As in `ppr_win_rates`.
    confidence_level : float, default 0.95
        Probability with which the rank-sets of *all* items cover the ranking by the human
        win rates together (asymptotically).

    Returns
    -------
    RankSetResult
        The table also carries the human-only and judge-only win rates and the label counts.

    Notes
    -----
    Estimand: ``theta_m``, the probability that item m wins (a tie counts `tie_credit`) a
    human comparison drawn like the judged ones in which m takes part. The rank-sets are those
    of `rank_sets` with ``df = k``.

    References
    ----------
    1. Chatzi, I., Straitouri, E., Thejaswi, S., Gomez-Rodriguez, M. (2024).
       Prediction-powered ranking of large language models. NeurIPS 2024.
    2. Angelopoulos, A. N., Duchi, J. C., Zrnic, T. (2023). PPI++: Efficient
       prediction-powered inference. arXiv:2311.01453.

    Validated against the published code's ``estimate``/``lhat_opt``/``find_ranksets`` on its
    Chatbot Arena data to 1e-12 (``scaling="total", tie_credit=0, cluster="comparison"``),
    and by simulated coverage of the default (tests/test_pairwise_ppr.py).

    Examples
    --------
    >>> import pandas as pd
    >>> rows = [(p, f"{x}/{p}", f"{y}/{p}", v) for p in range(40)
    ...         for x, y, v in (("S", "T", "A"), ("T", "U", "A"), ("S", "U", "B" if p % 3 else "A"))]
    >>> judge = pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b", "verdict"]
    ...                      ).assign(dimension="Overall", order="AB")
    >>> human = judge[judge.prompt_id < 12]
    >>> r = prediction_powered_ranking(human, judge)
    >>> r.table["item"].tolist()[0]
    'S'
    """
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be in (0, 1), got {confidence_level!r}")
    units = comparison_units(human, judge, dimension=dimension, by=by, judge_name=judge_name,
                             human_source=human_source, judge_source=judge_source)
    try:
        theta, cov, lam_ = ppr_win_rates(units, method=method, lam=lam, tie_credit=tie_credit,
                                         scaling=scaling, cluster=cluster)
    except InputError as exc:  # name the files
        raise InputError(f"{human_source} and {judge_source}: {exc}") from None
    low, high = rank_sets(theta, cov, confidence_level=confidence_level)
    options: dict[str, Any] = {"tie_credit": tie_credit, "scaling": scaling, "cluster": cluster}
    human_theta, human_cov, _ = ppr_win_rates(units, method="human", **options)
    judge_theta = ppr_win_rates(units, method="judge", **options)[0]
    k = len(units.items)
    lab = units.labelled
    n_lab = np.bincount(units.a[lab], minlength=k) + np.bincount(units.b[lab], minlength=k)
    n_all = np.bincount(units.a, minlength=k) + np.bincount(units.b, minlength=k)
    from scipy.stats import rankdata

    table = pd.DataFrame({
        "item": units.items, "win_rate": theta, "se": np.sqrt(np.diag(cov)),
        "rank": rankdata(-theta, method="min").astype(np.int64),
        "rank_set_low": low, "rank_set_high": high,
        "human_win_rate": human_theta, "human_se": np.sqrt(np.diag(human_cov)),
        "judge_win_rate": judge_theta, "n_labelled": n_lab, "n_unlabelled": n_all - n_lab})
    table["lam"] = lam_
    table = table.sort_values(["win_rate", "item"], ascending=[False, True],
                              kind="stable").reset_index(drop=True)
    settings = {"method": method, "lam": lam_, "confidence_level": confidence_level,
                "dimension": units.dimension, "n_labelled": int(lab.sum()),
                "n_unlabelled": int((~lab).sum()), "by": by, **options}
    return RankSetResult(table, cov, theta, units.items, lam_, settings)
