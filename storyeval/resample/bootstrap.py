"""Bootstrap confidence intervals for correlations at every level, resampling prompts, systems or
both, with the same resamples shared by every measure (paired comparisons)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from storyeval._normal import ndtr, ndtri
from storyeval._progress import progress_bar
from storyeval.correlation.resampled import level_statistic
from storyeval.correlation.resampled_overall import OverallKernel
from storyeval.correlation.ties import TIE_RTOL
from storyeval.exceptions import (
    FewClustersWarning,
    InputError,
    UndefinedStatisticWarning,
    user_stacklevel,
)
from storyeval.resample._common import (
    RESAMPLE_BY,
    check_confidence,
    check_method,
    check_positive_int,
    counts_from_draws,
    quantile_columns,
)
from storyeval.resample._data import LEVELS, Grid, check_level, make_grid, resolve_pairs

__all__ = ["CI_METHODS", "MIN_CLUSTERS", "RESAMPLE_BY", "bootstrap_correlations",
           "cluster_counts", "draw_resamples", "expanded_level"]

CI_METHODS = ("percentile", "bca", "expanded")
_BATCH = 100  # resamples per progress-bar step
MIN_CLUSTERS = 20  # below this many resampled prompts / systems, a FewClustersWarning


def cluster_counts(n_systems: int, n_prompts: int, resample_by: str) -> dict[str, int]:
    """The resampled units and how many there are, e.g. ``{"prompts": 96}`` (``"both"``: the
    prompts and the systems)."""
    counts = {"prompts": n_prompts, "systems": n_systems}
    return {unit: counts[unit] for unit in counts if resample_by in (unit, "both")}


def expanded_level(n_clusters: int, confidence_level: float = 0.95) -> float:
    """The confidence level of the percentile interval that is the *expanded* percentile
    interval (Hesterberg 2015) over ``n_clusters`` resampled clusters.

    The normal quantile ``z`` of the nominal level is replaced by ``sqrt(n / (n - 1)) t_{n-1}``,
    which undoes the two reasons a bootstrap interval over few clusters is too narrow (the
    plug-in variance divides by n, and the normal quantile ignores the uncertainty of the
    variance). 0.983 for 10 clusters at 95%; it tends to the nominal level as n grows.

    Examples
    --------
    >>> round(expanded_level(10), 3), round(expanded_level(1000), 3)
    (0.983, 0.95)
    """
    from scipy.stats import t as student_t  # lazy: scipy.stats costs 1 s to import

    if n_clusters < 2:
        raise InputError(f"the expanded interval needs at least 2 clusters, got {n_clusters}")
    alpha = 1 - check_confidence(confidence_level)
    t = student_t.ppf(1 - alpha / 2, n_clusters - 1) * np.sqrt(n_clusters / (n_clusters - 1))
    return float(1 - 2 * ndtr(-t))


def few_clusters_message(clusters: dict[str, int], ci_method: str) -> str | None:
    """The [`FewClustersWarning`][storyeval.exceptions.FewClustersWarning] text when a resampled
    unit has fewer than ``MIN_CLUSTERS`` clusters, else None."""
    few = {unit: n for unit, n in clusters.items() if n < MIN_CLUSTERS}
    if not few:
        return None
    what = " and ".join(f"{n} {unit}" for unit, n in few.items())
    text = (f"the bootstrap resamples only {what} (fewer than {MIN_CLUSTERS} clusters), so "
            f"{ci_method} intervals tend to be too short: they contain the true value less "
            "often than their confidence level (measured coverage of nominal 95% intervals over "
            "10 prompts: percentile 0.93, BCa 0.90; benchmarks/bench_coverage.py, Resampling "
            "docs page)")
    if ci_method == "expanded":
        return text + "; the expanded interval corrects most of this; or add clusters"
    return (text + "; the expanded percentile interval (ci_method='expanded', --ci-method "
            "expanded) covered 0.97 there; or add clusters")


def draw_resamples(
    n_systems: int,
    n_prompts: int,
    *,
    n_resamples: int,
    resample_by: str = "prompts",
    random_state: int | np.random.Generator | None = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Multiplicities of systems and prompts for ``n_resamples`` bootstrap resamples.

    Parameters
    ----------
    n_systems, n_prompts : int
        Sizes of the grid.
    n_resamples : int
    resample_by : {"prompts", "systems", "both"}, default "prompts"
        ``"prompts"``: draw ``n_prompts`` prompts with replacement and keep every system's story
        for each drawn prompt (all systems stay); ``"systems"``: draw systems, keep all their
        prompts; ``"both"``: draw prompts and systems independently (a story enters
        ``c_s * c_p`` times).
    random_state : int, Generator or None, default 0
        Seed of the resampling (0, as the command line; None draws a fresh seed: not
        reproducible).
        ``g = numpy.random.default_rng(random_state)``; prompts are drawn first
        (``g.integers(0, n_prompts, (n_resamples, n_prompts))``), then systems
        (``g.integers(0, n_systems, (n_resamples, n_systems))``).

    Returns
    -------
    cS : (n_resamples, n_systems) ndarray
    cP : (n_resamples, n_prompts) ndarray
        How many times each system / prompt is drawn (all ones for the axis not resampled).
    """
    if resample_by not in RESAMPLE_BY:
        raise InputError(f"resample_by must be one of {RESAMPLE_BY}, got {resample_by!r}")
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    rng = np.random.default_rng(random_state)
    cP = np.ones((n_resamples, n_prompts))
    cS = np.ones((n_resamples, n_systems))
    if resample_by in ("prompts", "both"):
        cP = counts_from_draws(rng.integers(0, n_prompts, (n_resamples, n_prompts)), n_prompts)
    if resample_by in ("systems", "both"):
        cS = counts_from_draws(rng.integers(0, n_systems, (n_resamples, n_systems)), n_systems)
    return cS, cP


def _jackknife_weights(grid: Grid, resample_by: str) -> tuple[np.ndarray, np.ndarray]:
    S, P = grid.n_systems, grid.n_prompts
    if resample_by == "prompts":
        return np.ones((P, S)), 1.0 - np.eye(P)
    if resample_by == "systems":
        return 1.0 - np.eye(S), np.ones((S, P))
    raise InputError("ci_method='bca' needs a single resampling unit (its acceleration is a "
                     "leave-one-unit-out jackknife); use resample_by='prompts' or 'systems', or "
                     "ci_method='percentile' with resample_by='both'")


def _bca(theta_b: np.ndarray, theta_hat: np.ndarray, jack: np.ndarray, alpha: float):
    """BCa interval per column (Efron 1987), as scipy.stats.bootstrap computes it."""
    valid = np.isfinite(theta_b)
    nb = valid.sum(axis=0)
    less = ((theta_b < theta_hat) & valid).sum(axis=0)
    leq = ((theta_b <= theta_hat) & valid).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z0 = ndtri((less + leq) / (2.0 * nb))
        dev = np.nanmean(jack, axis=0) - jack
        a = (dev**3).sum(axis=0) / (6.0 * ((dev**2).sum(axis=0)) ** 1.5)
        za, z1a = ndtri(alpha), ndtri(1 - alpha)
        a1 = ndtr(z0 + (z0 + za) / (1 - a * (z0 + za)))
        a2 = ndtr(z0 + (z0 + z1a) / (1 - a * (z0 + z1a)))
    low, high = quantile_columns(theta_b, np.stack([a1, a2]))
    return low, high


def bootstrap_correlations(
    wide: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    *,
    level: str = "overall",
    method: str = "kendall_b",
    n_resamples: int = 1000,
    resample_by: str = "prompts",
    ci_method: str = "percentile",
    confidence_level: float = 0.95,
    random_state: int | np.random.Generator | None = 0,
    return_distribution: bool = False,
    show_progress: bool | None = None,
    tie_rtol: float = TIE_RTOL,
) -> pd.DataFrame | tuple[pd.DataFrame, np.ndarray]:
    """Bootstrap confidence intervals for many (measure, criterion) correlations at one level.

    Parameters
    ----------
    wide : DataFrame
        Index ``(system, prompt_id)``, one float column per measure, every system with a story
        for every prompt, no missing values (HANNA: ``load_hanna(include_human_stories=False)
        .wide()``, 10 systems x 96 prompts).
    pairs : sequence of (measure, criterion)
        The correlations to compute (e.g. every metric with every criterion, and each LLM
        rating with its matching criterion).
    level : {"overall", "system", "prompt", "within"}, default "overall"
        As in [`storyeval.correlation.levels.correlate`][]: all stories; system means; within-prompt
        coefficients averaged over the prompts where they are defined; within-system
        coefficients (across a system's prompts) averaged over the systems where they are
        defined (a resampled prompt enters every system's coefficient with its multiplicity;
        resampled systems weight the average).
    method : {"kendall_b", "kendall_c", "pearson", "spearman"}, default "kendall_b"
    n_resamples : int, default 1000
    resample_by : {"prompts", "systems", "both"}, default "prompts"
        The resampling unit ([`draw_resamples`][]). Every pair is computed on the *same*
        resamples, so the replicate distributions of two measures are paired.
    ci_method : {"percentile", "bca", "expanded"}, default "percentile"
        Percentile interval; bias-corrected and accelerated (BCa) with the acceleration from a
        leave-one-unit-out jackknife (not available for ``resample_by="both"``); or the
        expanded percentile interval (Hesterberg 2015): the percentile interval at the level
        `expanded_level` of the number of resampled clusters (with ``"both"``, the smaller
        of the two counts), for few clusters (see `FewClustersWarning`).
    confidence_level : float, default 0.95
    random_state : int, Generator or None, default 0
        Seed of the resampling (0, as the command line; None draws a fresh seed: not
        reproducible).
        Seed; the same seed gives the same resamples (and numbers) for any set of pairs.
    return_distribution : bool, default False
        Also return the (n_resamples, n_pairs) replicate matrix, columns in ``pairs`` order.
    show_progress : bool, optional
        Progress bar (default: on a terminal only).
    tie_rtol : float, default 1e-12
        System means agreeing within this relative tolerance are ties, in every resample as in
        the point estimate (`storyeval.correlation.ties`); the same value as the point estimate's.

    Returns
    -------
    DataFrame
        One row per pair: ``measure, criterion, level, coefficient, value, ci_low, ci_high,
        se, confidence_level, n_resamples, n_resamples_valid, resample_by, ci_method``.
        ``value`` is the point estimate on the original data, ``se`` the standard deviation of
        the replicates, ``n_resamples_valid`` the replicates where the coefficient is defined
        (the interval uses those).

    Notes
    -----
    A resample is a vector of multiplicities (how often each prompt / system is drawn); every
    coefficient is evaluated from the multiplicities without building the resampled vectors
    (`storyeval.correlation.resampled`, `storyeval.correlation.resampled_overall`), e.g. for Kendall tau-b at
    the overall level ``C - D = sum_{i<j} w_i w_j s_x(i, j) s_y(i, j)`` with story weights
    ``w``: block sums under prompt resampling (``1/2 c^T T c`` with ``T[p, q] = sum_{i in p,
    j in q} s_x(i, j) s_y(i, j)``) or weighted O(n log k) counts
    (`storyeval.correlation.kendall_weighted`), whichever is predicted cheaper; pairs of copies of one
    story are tied in both variables and drop out, exactly as in scipy on the explicitly
    resampled vectors. Percentile interval:
    ``[Q(alpha/2), Q(1 - alpha/2)]`` of the replicates (linear interpolation), ``alpha = 1 -
    confidence_level``. BCa: ``z0 = Phi^-1((#{t* < t} + #{t* <= t}) / 2B)``, ``a = sum(d^3) /
    (6 (sum d^2)^1.5)`` with ``d`` the jackknife deviations, bounds at
    ``Phi(z0 + (z0 + z)/(1 - a (z0 + z)))`` for ``z = Phi^-1(alpha/2), Phi^-1(1 - alpha/2)``.

    References
    ----------
    1. Efron, B., Tibshirani, R. (1993). An Introduction to the Bootstrap. Chapman & Hall.
    2. Hesterberg, T. (2015). What Teachers Should Know About the Bootstrap: Resampling in the
       Undergraduate Statistics Curriculum. The American Statistician 69(4).
    3. Deutsch, D., Dror, R., Roth, D. (2021). A Statistical Analysis of Summarization
       Evaluation Metrics Using Resampling Methods. TACL 9.

    Validated against ``scipy.stats`` coefficients on the explicitly resampled vectors (every
    method, level and resampling unit) and against ``scipy.stats.bootstrap`` (percentile and BCa
    with identical draws) in tests/test_bootstrap.py.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> idx = pd.MultiIndex.from_product([list("ABCD"), range(20)], names=["system", "prompt_id"])
    >>> g = np.random.default_rng(0)
    >>> wide = pd.DataFrame({"h": g.normal(size=80)}, index=idx)
    >>> wide["m"] = wide["h"] + g.normal(size=80)
    >>> res = bootstrap_correlations(wide, [("m", "h")], n_resamples=200, random_state=1)
    >>> bool(res.loc[0, "ci_low"] <= res.loc[0, "value"] <= res.loc[0, "ci_high"])
    True
    """
    level = check_level(level, (*LEVELS, "within"))
    method = check_method(method)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    if resample_by not in RESAMPLE_BY:
        raise InputError(f"resample_by must be one of {RESAMPLE_BY}, got {resample_by!r}")
    if ci_method not in CI_METHODS:
        raise InputError(f"ci_method must be one of {CI_METHODS}, got {ci_method!r}")
    cl = check_confidence(confidence_level)
    pairs = resolve_pairs(pairs)
    grid = make_grid(wide, [c for p in pairs for c in p])
    few = few_clusters_message(cluster_counts(grid.n_systems, grid.n_prompts, resample_by),
                               ci_method)
    if few:
        warnings.warn(few, FewClustersWarning, stacklevel=2)
    col = {c: k for k, c in enumerate(grid.columns)}
    ia = np.array([col[p[0]] for p in pairs])
    ic = np.array([col[p[1]] for p in pairs])
    if ci_method == "bca":
        jS, jP = _jackknife_weights(grid, resample_by)
    mode = {"prompts": "prompts", "systems": "systems", "both": "stories"}[resample_by]
    evaluations = n_resamples + 1 + (len(jP) if ci_method == "bca" else 0)
    kernel = (OverallKernel(grid.X, ia, ic, method, mode, n_resamples=evaluations)
              if level == "overall" else None)

    def stat(cS, cP):
        return level_statistic(grid.X, ia, ic, method, level, cS, cP, kernel=kernel,
                               tie_rtol=tie_rtol)

    S, P = grid.n_systems, grid.n_prompts
    theta_hat = stat(np.ones((1, S)), np.ones((1, P)))[0]
    cS, cP = draw_resamples(S, P, n_resamples=n_resamples, resample_by=resample_by,
                            random_state=random_state)
    theta_b = np.empty((n_resamples, len(pairs)))
    with progress_bar(total=n_resamples, desc=f"bootstrap ({level})", unit="resample",
                      show=show_progress) as bar:
        for start in range(0, n_resamples, _BATCH):
            sl = slice(start, min(start + _BATCH, n_resamples))
            theta_b[sl] = stat(cS[sl], cP[sl])
            bar.update(sl.stop - sl.start)
    alpha = (1 - cl) / 2
    if ci_method == "expanded":
        n_clusters = min(cluster_counts(S, P, resample_by).values())
        alpha = (1 - expanded_level(n_clusters, cl)) / 2
    if ci_method in ("percentile", "expanded"):
        low, high = quantile_columns(theta_b, np.stack([np.full(len(pairs), alpha),
                                                        np.full(len(pairs), 1 - alpha)]))
    else:
        jack = stat(jS, jP)
        low, high = _bca(theta_b, theta_hat, jack, alpha)
    n_valid = np.isfinite(theta_b).sum(axis=0)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        se = np.nanstd(theta_b, axis=0, ddof=1)
    bad_point = ~np.isfinite(theta_hat)
    if bad_point.any():
        warnings.warn(f"{level} level, {method}: {int(bad_point.sum())} correlation(s) undefined "
                      f"on the original data (constant input), returned as NaN: "
                      f"{[pairs[k] for k in np.flatnonzero(bad_point)][:3]}",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
    partial = (n_valid < n_resamples) & ~bad_point
    if partial.any():
        warnings.warn(f"{level} level, {method}: the coefficient is undefined in some resamples "
                      f"(left out of the interval; see n_resamples_valid) for "
                      f"{int(partial.sum())} pair(s), e.g. {pairs[int(np.argmax(partial))]}",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
    no_ci = ~(np.isfinite(low) & np.isfinite(high)) & ~bad_point
    if ci_method == "bca" and no_ci.any():
        warnings.warn(f"BCa interval undefined for {int(no_ci.sum())} pair(s) (degenerate "
                      "bootstrap or jackknife distribution, e.g. a coefficient that is constant "
                      f"across resamples), e.g. {pairs[int(np.argmax(no_ci))]}; returned as NaN",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
    frame = pd.DataFrame({
        "measure": [p[0] for p in pairs],
        "criterion": [p[1] for p in pairs],
        "level": level,
        "coefficient": method,
        "value": theta_hat,
        "ci_low": low,
        "ci_high": high,
        "se": se,
        "confidence_level": cl,
        "n_resamples": n_resamples,
        "n_resamples_valid": n_valid.astype(np.int64),
        "resample_by": resample_by,
        "ci_method": ci_method,
    })
    if return_distribution:
        return frame, theta_b
    return frame
