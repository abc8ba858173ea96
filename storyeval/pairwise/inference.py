"""Inference for pairwise accuracy: intervals and tests for one judge (or reward model, or
pointwise measure turned pairwise), paired tests comparing two judges on the same pairs, and
significance groups over many judges.

Two designs:

* **independent pairs** (each pair judged once, pairs share nothing): the number of correct
  verdicts is binomial. Exact (Clopper-Pearson) and Wilson intervals, the exact binomial test
  against the chance level, and exact McNemar for two judges.
* **clustered pairs** (pairs sharing a prompt; the two presentation orders of one pair): the
  verdicts of a cluster are dependent, so clusters are resampled (cluster bootstrap: percentile
  interval, p-value from the centred bootstrap distribution) and two judges are compared by a
  cluster sign-flip permutation test or a paired cluster bootstrap.

Every resampling is a matrix product of a (resamples x clusters) weight or sign matrix with the
(clusters x k) cluster sums: no loop over pairs or resamples. The measured type-I error and
coverage of each default are in ``benchmarks/bench_pairwise_calibration.py`` (docs: "Pairwise
judging", "Calibration").
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.compare.multitest import adjust_pvalues
from storyeval.exceptions import InputError, UndefinedStatisticWarning, user_stacklevel
from storyeval.resample.clusters import (
    ONE_CLUSTER_REASON,
    bootstrap_weights,
    check_confidence,
    check_resamples,
    cluster_codes,
    cluster_sums,
    percentile_interval,
    rng_from,
    sign_flip_ratio_interval,
    sign_flips,
    single_cluster,
    warn_few_clusters,
)

__all__ = [
    "AccuracyInference",
    "JudgeComparison",
    "accuracy_agreement",
    "accuracy_columns",
    "accuracy_from_counts",
    "accuracy_inference",
    "binomial_accuracy",
    "chance_level",
    "cluster_t_accuracy",
    "compare_accuracies",
    "compare_judges",
    "exact_interval",
    "interval_agreement",
    "judge_accuracy_inference",
    "mcnemar_exact",
    "mcnemar_score",
    "parse_counts",
    "scored_verdicts",
    "significance_groups",
    "tango_interval",
    "wilson_interval",
]

_ALTERNATIVES = ("two-sided", "greater", "less")
_ACC_METHODS = ("auto", "exact", "wilson", "cluster-bootstrap", "cluster-t")
_TESTS = ("auto", "mcnemar", "mcnemar-exact", "permutation", "bootstrap", "cluster-t")
_CLUSTERS = ("auto", "prompt", "pair", "none")


#: Below this many clusters ``method="auto"`` takes the cluster-robust t (k/n) instead of the
#: cluster bootstrap, whose level was 0.062-0.092 and coverage 0.892-0.927 with 10-20 prompts
#: (cluster t: 0.047-0.061 and 0.940-0.948; benchmarks/bench_pairwise_few_clusters.py).
CLUSTER_T_BELOW = 30

#: Why a cluster-robust t of one cluster gives no interval and no p-value.
ONE_CLUSTER_T_REASON = ("a single cluster: a cluster-robust standard error needs at least two "
                        "clusters, so there is no interval and no p-value")


def _auto_method(n_clusters: int, n_units: int, order_balanced: bool = False) -> str:
    """The interval ``method="auto"`` resolves to."""
    if n_clusters == n_units:
        return "wilson"
    if n_clusters < CLUSTER_T_BELOW and not order_balanced:
        return "cluster-t"
    return "cluster-bootstrap"


def _check_credit(tie_credit: float, name: str) -> float:
    if not (np.isscalar(tie_credit) and 0 <= float(tie_credit) <= 1):
        raise InputError(f"{name} must be a number in [0, 1], got {tie_credit!r}")
    return float(tie_credit)


def _check_alternative(alternative: str) -> str:
    if alternative not in _ALTERNATIVES:
        raise InputError(f"alternative must be one of {_ALTERNATIVES}, got {alternative!r}")
    return alternative


def refuse_unclustered(method: str, n_clusters: int, n_units: int,
                       unit: str = "a cluster", *,
                       remedy: str = "or pass no clusters if they are independent") -> None:
    """An independent-units interval (Wilson, Clopper-Pearson) on clustered units is refused:
    it would be too narrow (7.6x on all-pairs verdicts of 10 systems)."""
    if method in ("exact", "wilson") and n_clusters < n_units:
        raise InputError(
            f"interval {method!r} assumes independent units, but {n_units} units fall in "
            f"{n_clusters} clusters ({unit} holds several): it would be too narrow; use "
            f"'cluster-t' or 'cluster-bootstrap' ('auto' picks one), {remedy}")


def _check_choice(value: str, choices: tuple[str, ...], name: str) -> str:
    if value not in choices:
        raise InputError(f"{name} must be one of {choices}, got {value!r}")
    return value


# ------------------------------------------------------------------------ results
@dataclass(frozen=True)
class AccuracyInference:
    """An accuracy with its interval and its test against the chance level; unpacks like
    ``(statistic, pvalue)``.

    Attributes
    ----------
    statistic : float
        The accuracy (``statistic_kind``: ``"k/n"`` pooled over verdicts, or
        ``"order-balanced"``: the mean of the accuracies with the human-preferred story shown
        first and shown second).
    ci_low, ci_high : float
        Two-sided interval at ``confidence_level`` (always two-sided, whatever
        ``alternative``).
    pvalue : float
        Test of ``accuracy == chance`` against ``alternative``.
    method : str
        ``"exact"`` (Clopper-Pearson interval, exact binomial test), ``"wilson"`` (Wilson
        score interval, exact binomial test) or ``"cluster-bootstrap"``.
    test : str
        The test that gave ``pvalue``: ``"exact binomial"``, ``"score test"`` (a fractional
        k, ties earning partial credit: the exact binomial test does not apply) or
        ``"cluster bootstrap"``.
    k, n : float
        Credited verdicts (ties earn their credit) and verdicts scored.
    n_clusters : int
        Independent units (``n`` for independent pairs).
    """

    statistic: float
    ci_low: float
    ci_high: float
    pvalue: float
    method: str
    alternative: str
    chance: float
    k: float
    n: int
    n_clusters: int
    confidence_level: float
    statistic_kind: str = "k/n"
    n_resamples: int = 0
    test: str = "exact binomial"
    reason: str = ""

    def __iter__(self):
        return iter((self.statistic, self.pvalue))

    def confidence_interval(self) -> tuple[float, float]:
        return (self.ci_low, self.ci_high)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(self)])


@dataclass(frozen=True)
class JudgeComparison:
    """Two judges on the same pairs: the accuracy difference ``a - b`` with its interval and a
    two-sided paired test of equal accuracy; unpacks like ``(difference, pvalue)``.

    ``agreement`` says how the interval relates to the p-value at ``alpha = 1 -
    confidence_level`` (`interval_agreement`): ``"inverts the test"`` (the interval is the
    set of differences the same test does not reject: it excludes 0 exactly when ``pvalue <
    alpha``), ``"agree"`` (two procedures that happen to agree on this row) or
    ``"DISAGREE: ..."`` (two procedures, and the interval's verdict on 0 differs from the
    p-value's: the row says so rather than print a mark the p-value denies).
    """

    judge_a: str
    judge_b: str
    accuracy_a: float
    accuracy_b: float
    difference: float
    ci_low: float
    ci_high: float
    pvalue: float
    test: str
    interval: str
    n: int
    n_clusters: int
    n_discordant: int
    confidence_level: float
    n_resamples: int = 0
    reason: str = ""
    agreement: str = ""

    def __iter__(self):
        return iter((self.difference, self.pvalue))

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(self)])


# ------------------------------------------------------------------ binomial design
def wilson_interval(k: float, n: float, confidence_level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a proportion k/n (two-sided).

    Notes
    -----
    With z = Phi^-1(1 - alpha/2): centre (k + z^2/2) / (n + z^2), half-width
    z sqrt(k (n - k) / n + z^2 / 4) / (n + z^2). Validated against statsmodels
    ``proportion_confint(method="wilson")`` and scipy ``binomtest(...).proportion_ci``.
    """
    level = check_confidence(confidence_level)
    if n <= 0:
        return (math.nan, math.nan)
    z = stats.norm.ppf(1 - (1 - level) / 2)
    centre = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return (float(max(0.0, centre - half)), float(min(1.0, centre + half)))


def exact_interval(k: float, n: float, confidence_level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson ("exact") interval for k/n from beta quantiles (two-sided).

    Notes
    -----
    low = Beta(alpha/2; k, n - k + 1), high = Beta(1 - alpha/2; k + 1, n - k); 0 and 1 at the
    ends. Validated against statsmodels ``proportion_confint(method="beta")``.
    """
    level = check_confidence(confidence_level)
    if n <= 0:
        return (math.nan, math.nan)
    tail = (1 - level) / 2
    low = 0.0 if k <= 0 else float(stats.beta.ppf(tail, k, n - k + 1))
    high = 1.0 if k >= n else float(stats.beta.ppf(1 - tail, k + 1, n - k))
    return (low, high)


SCORE_TEST = "score test"  # the test the Wilson interval inverts (and that of a fractional k)


def binomial_test_name(k: float, interval: str = "exact") -> str:
    """The test `_binomial_pvalue` runs for ``k`` beside ``interval``: the exact binomial
    test of a whole count beside the Clopper-Pearson interval, the score (normal) test beside
    the Wilson interval (which inverts it) and for a fractional count."""
    return "exact binomial" if interval == "exact" and float(k).is_integer() else SCORE_TEST


def _binomial_pvalue(k: float, n: int, chance: float, alternative: str,
                     interval: str = "exact") -> float:
    """The test each interval inverts: with ``"exact"`` the exact binomial test whose
    two-sided p is twice the smaller tail (the test the Clopper-Pearson interval inverts;
    scipy's ``binomtest`` when ``chance = 0.5``), with ``"wilson"`` (or a fractional k) the
    score test ``z = (k - n c) / sqrt(n c (1 - c))`` (the test the Wilson interval
    inverts)."""
    if n <= 0:
        return math.nan
    if interval == "exact" and float(k).is_integer():
        ki = int(k)
        if alternative == "greater":
            return float(stats.binom.sf(ki - 1, n, chance))
        if alternative == "less":
            return float(stats.binom.cdf(ki, n, chance))
        return float(min(1.0, 2 * min(stats.binom.cdf(ki, n, chance),
                                      stats.binom.sf(ki - 1, n, chance))))
    z = (k - n * chance) / math.sqrt(n * chance * (1 - chance))
    if alternative == "greater":
        return float(stats.norm.sf(z))
    if alternative == "less":
        return float(stats.norm.cdf(z))
    return float(min(1.0, 2 * stats.norm.sf(abs(z))))


def binomial_accuracy(
    k: float,
    n: int,
    *,
    chance: float = 0.5,
    interval: str = "wilson",
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
) -> AccuracyInference:
    """Accuracy k/n of independent verdicts: a Wilson interval with the score test it
    inverts, or a Clopper-Pearson interval with the exact binomial test it inverts.

    Parameters
    ----------
    k, n : number
        Correct verdicts and verdicts (``0 <= k <= n``); ``k`` may be fractional when ties
        earn partial credit (then the test is the score test, not the exact one).
    chance : float, default 0.5
        Accuracy of a judge answering at random (see [`chance_level`][] with ties).
    interval : {"wilson", "exact"}, default "wilson"
        ``"wilson"``: the Wilson score interval and the score test (R's
        ``prop.test(correct = FALSE)``); ``"exact"``: the Clopper-Pearson interval and the
        exact binomial test with the two-sided p twice the smaller tail. Each interval is
        the set of accuracies its test does not reject, so with ``alternative="two-sided"``
        it excludes ``chance`` exactly when ``pvalue < 1 - confidence_level`` (a fractional
        k under ``"exact"`` takes the score test: the row's ``test`` says so).
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        Of the test of ``accuracy == chance``.

    Returns
    -------
    AccuracyInference

    Notes
    -----
    Before 0.3.2 the Wilson interval sat beside the exact test, and the two could disagree.
    Validated against published counts: LitBench's 201/301 and 1053/1959 give two-sided
    exact p = 6.0e-9 and 9.7e-4 (scipy ``binomtest``) and Wilson 95% intervals (0.613,
    0.719) and (0.515, 0.560); the score test against statsmodels
    ``proportions_ztest(prop_var=chance)``.

    Examples
    --------
    >>> r = binomial_accuracy(201, 301, interval="exact")
    >>> f"{r.pvalue:.1e}", r.test
    ('6.0e-09', 'exact binomial')
    >>> r = binomial_accuracy(201, 301)
    >>> f"{r.pvalue:.1e}", round(r.ci_low, 3), round(r.ci_high, 3), r.test
    ('5.8e-09', 0.613, 0.719, 'score test')
    """
    _check_alternative(alternative)
    _check_choice(interval, ("wilson", "exact"), "interval")
    level = check_confidence(confidence_level)
    if not (0 < chance < 1):
        raise InputError(f"chance must be in (0, 1), got {chance!r}")
    if not (float(n).is_integer() and n >= 1 and 0 <= k <= n):
        raise InputError(f"need 0 <= k <= n with n a positive whole number, got k={k!r}, "
                         f"n={n!r}")
    low, high = (wilson_interval if interval == "wilson" else exact_interval)(k, n, level)
    return AccuracyInference(
        statistic=k / n, ci_low=low, ci_high=high,
        pvalue=_binomial_pvalue(k, int(n), chance, alternative, interval), method=interval,
        alternative=alternative, chance=float(chance), k=float(k), n=int(n),
        n_clusters=int(n), confidence_level=level, test=binomial_test_name(k, interval))


_COUNTS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(\d+)\s*$")


def parse_counts(text: str) -> tuple[float, int]:
    """``"201/301"`` as ``(201, 301)``; an error naming the text otherwise."""
    match = _COUNTS.match(str(text))
    if not match:
        raise InputError(f"counts {text!r}: expected K/N with whole numbers, e.g. 201/301")
    k, n = float(match.group(1)), int(match.group(2))
    if n < 1 or k > n:
        raise InputError(f"counts {text!r}: need 0 <= K <= N and N >= 1")
    return k, n


def accuracy_from_counts(
    counts: Sequence[str | tuple[float, int]],
    *,
    chance: float = 0.5,
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
) -> pd.DataFrame:
    """Accuracies given as counts (``"201/301"`` or ``(201, 301)``): one row each, with the
    Wilson interval and the score test it inverts, and the Clopper-Pearson interval and the
    exact binomial test it inverts.

    Returns
    -------
    DataFrame
        ``counts, accuracy, k, n, chance, alternative, pvalue, exact_low, exact_high,
        pvalue_score, wilson_low, wilson_high, confidence_level``: ``pvalue`` is the exact
        binomial test's (the published numbers; ``exact_*`` inverts it), ``pvalue_score`` the
        score test's (``wilson_*`` inverts it). A fractional K takes the score test in both.
    """
    if isinstance(counts, str) or not len(counts):
        raise InputError("counts must be a non-empty list such as ['201/301', '1053/1959']")
    rows = []
    for item in counts:
        k, n = parse_counts(item) if isinstance(item, str) else (float(item[0]), int(item[1]))
        w = binomial_accuracy(k, n, chance=chance, interval="wilson", alternative=alternative,
                              confidence_level=confidence_level)
        e = binomial_accuracy(k, n, chance=chance, interval="exact", alternative=alternative,
                              confidence_level=confidence_level)
        rows.append({"counts": f"{k:g}/{n}", "accuracy": w.statistic,
                     "k": int(k) if float(k).is_integer() else k, "n": n,
                     "chance": chance, "alternative": alternative, "pvalue": e.pvalue,
                     "exact_low": e.ci_low, "exact_high": e.ci_high,
                     "pvalue_score": w.pvalue, "wilson_low": w.ci_low,
                     "wilson_high": w.ci_high, "confidence_level": confidence_level})
    return pd.DataFrame(rows)


def chance_level(
    judge_shares: Sequence[float],
    human_shares: Sequence[float] | None = None,
    *,
    tie_credit: float = 0.0,
    human_ties: str = "exclude",
) -> float:
    """Expected accuracy of a judge that answers at random with its own answer frequencies.

    Parameters
    ----------
    judge_shares : (p_A, p_B, p_same)
        How often the judge names story A, story B, or "same" (summing to 1).
    human_shares : (h_A, h_B, h_same), optional
        The humans' verdict frequencies; needed with ``human_ties="include"``.
    tie_credit : float, default 0
        Credit of a judge's "same" on a human-decided pair (``"exclude"`` only).
    human_ties : {"exclude", "include"}
        Human-tied pairs left out (accuracy on decided pairs) or a third outcome to match.

    Notes
    -----
    ``"exclude"``: a random answer independent of the pair names the preferred story with
    probability (p_A + p_B) / 2 and says "same" with p_same, so chance = (1 - p_same) / 2 +
    tie_credit * p_same (0.5 without ties). ``"include"``: chance = p_A h_A + p_B h_B +
    p_same h_same.

    Examples
    --------
    >>> chance_level([0.4, 0.4, 0.2])
    0.4
    """
    p = _shares(judge_shares, "judge_shares")
    if human_ties == "exclude":
        return float((1 - p[2]) / 2 + tie_credit * p[2])
    if human_ties != "include":
        raise InputError(f"human_ties must be 'exclude' or 'include', got {human_ties!r}")
    if human_shares is None:
        raise InputError("human_shares is required with human_ties='include'")
    return float(p @ _shares(human_shares, "human_shares"))


def _shares(values: Sequence[float], name: str) -> np.ndarray:
    p = np.asarray(values, dtype=float)
    if p.shape != (3,) or (p < 0).any() or not np.isclose(p.sum(), 1.0):
        raise InputError(f"{name} must be three shares (A, B, same) summing to 1, got "
                         f"{list(values)!r}")
    return p


# ------------------------------------------------------------------ clustered design
def _ratio_columns(sums: np.ndarray, order_averaged: bool) -> np.ndarray:
    """Accuracy from summed columns (score, count) or (s1, n1, s2, n2) along the last axis."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if order_averaged:
            return 0.5 * (sums[..., 0] / sums[..., 1] + sums[..., 2] / sums[..., 3])
        return sums[..., 0] / sums[..., 1]


def _unit_columns(scores: np.ndarray, preferred_first: np.ndarray | None) -> np.ndarray:
    ones = np.ones_like(scores)
    if preferred_first is None:
        return np.column_stack([scores, ones])
    f = np.asarray(preferred_first, dtype=bool)
    return np.column_stack([scores * f, ones * f, scores * ~f, ones * ~f])


def _bootstrap_pvalue(draws: np.ndarray, estimate: float, null: float, alternative: str,
                      n_resamples: int) -> float:
    """p-value from the bootstrap distribution centred at the estimate (shifted to the null)."""
    centred = draws[np.isfinite(draws)] - estimate
    gap = estimate - null
    if alternative == "greater":
        extreme = np.count_nonzero(centred >= gap)
    elif alternative == "less":
        extreme = np.count_nonzero(centred <= gap)
    else:
        extreme = np.count_nonzero(np.abs(centred) >= abs(gap))
    return float((1 + extreme) / (1 + len(centred)))


def accuracy_inference(
    scores: np.ndarray,
    *,
    clusters: np.ndarray | None = None,
    preferred_first: np.ndarray | None = None,
    method: str = "auto",
    chance: float = 0.5,
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
) -> AccuracyInference:
    """Accuracy of per-verdict scores with an interval and a test against ``chance``.

    Parameters
    ----------
    scores : (n,) array
        1 for a correct verdict, 0 for a wrong one, the tie credit for a tie.
    clusters : (n,) array, optional
        Cluster label of each verdict (prompt, or pair for both orders of one pair).
    preferred_first : (n,) bool array, optional
        Whether the human-preferred story was shown first; with it, the statistic is the
        order-balanced accuracy (``judge_accuracy``'s ``balanced_accuracy``: the mean of the
        accuracies with the preferred story shown first and second), resampled by the
        (cluster) bootstrap whatever ``method``; else k/n.
    method : {"auto", "exact", "wilson", "cluster-bootstrap", "cluster-t"}, default "auto"
        ``"auto"``: when a cluster holds more than one verdict, the cluster-robust t below
        `CLUSTER_T_BELOW` (30) clusters and the cluster bootstrap from there on (always the
        bootstrap for the order-balanced statistic), else the Wilson interval with the exact
        binomial test. ``"exact"``/``"wilson"`` treat the
        verdicts as independent and use k/n; they are refused (`InputError`) when a cluster
        holds several verdicts. ``"cluster-t"``: the cluster-robust (CR1) t
        interval and test of k/n with ``clusters - 1`` degrees of freedom (holds its level
        down to 10 clusters where the cluster bootstrap does not: docs "Pairwise judging");
        not with ``preferred_first``.
    chance, alternative, confidence_level
        As in [`binomial_accuracy`][].
    n_resamples : int, default 2000
        Cluster bootstrap resamples.
    random_state : int, Generator or None, default 0
        Seed of the resampling (0, as the command line; None draws a fresh seed: not
        reproducible).

    Notes
    -----
    Cluster bootstrap: clusters are drawn with replacement (B x C multiplicities W); the
    resampled accuracy is (W S)/(W N) for the cluster sums S of the scores and N of the
    counts (per order for the order-balanced statistic). Percentile interval; p-value
    (1 + #{|a* - a| >= |a - chance|}) / (1 + B) (two-sided; one-sided analogues).

    Cluster t (`cluster_t_accuracy`): ``a = sum S_g / sum N_g``,
    ``se^2 = G / (G - 1) sum_g (S_g - a N_g)^2 / (sum N_g)^2`` (CR1, the cluster-robust
    variance of the intercept of an OLS fit of the scores on a constant),
    ``t = (a - chance) / se`` against Student's t with ``G - 1`` degrees of freedom, interval
    ``a +- t_{(1 + level) / 2, G - 1} se``; the test and interval agree. Validated against
    statsmodels ``OLS(...).fit(cov_type="cluster")`` (tests/test_pairwise_cluster_t.py).
    """
    method = _check_choice(method, _ACC_METHODS, "method")
    _check_alternative(alternative)
    level = check_confidence(confidence_level)
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or not len(s):
        raise InputError("scores must be a non-empty 1-D array")
    codes, n_clusters = cluster_codes(clusters, len(s))
    refuse_unclustered(method, n_clusters, len(s))
    if method == "auto":
        method = _auto_method(n_clusters, len(s), preferred_first is not None)
    if preferred_first is not None and method == "cluster-t":
        raise InputError("method 'cluster-t' takes k/n only; the order-balanced accuracy "
                         "(preferred_first) needs method 'cluster-bootstrap'")
    if preferred_first is not None:
        method = "cluster-bootstrap"  # no binomial interval of a mean of two accuracies
    if method in ("exact", "wilson"):
        return binomial_accuracy(float(s.sum()), len(s), chance=chance, interval=method,
                                 alternative=alternative, confidence_level=level)
    if method == "cluster-t":
        return cluster_t_accuracy(s, codes, n_clusters, chance=float(chance),
                                  alternative=alternative, confidence_level=level)
    b = check_resamples(n_resamples)
    averaged = preferred_first is not None
    sums = cluster_sums(_unit_columns(s, preferred_first), codes, n_clusters)
    estimate = float(_ratio_columns(sums.sum(axis=0), averaged))
    if single_cluster(n_clusters, "cluster bootstrap of an accuracy"):
        return AccuracyInference(
            statistic=estimate, ci_low=math.nan, ci_high=math.nan, pvalue=math.nan,
            method="cluster-bootstrap", alternative=alternative, chance=float(chance),
            k=float(s.sum()), n=len(s), n_clusters=n_clusters, confidence_level=level,
            statistic_kind="order-balanced" if averaged else "k/n", n_resamples=0,
            test="none", reason=ONE_CLUSTER_REASON)
    warn_few_clusters(n_clusters, "cluster bootstrap of an accuracy")
    draws = _ratio_columns(bootstrap_weights(n_clusters, b, rng_from(random_state)) @ sums,
                           averaged)
    low, high = percentile_interval(draws, level)
    return AccuracyInference(
        statistic=estimate, ci_low=float(low), ci_high=float(high),
        pvalue=_bootstrap_pvalue(draws, estimate, chance, alternative, b),
        method="cluster-bootstrap", alternative=alternative, chance=float(chance),
        k=float(s.sum()), n=len(s), n_clusters=n_clusters, confidence_level=level,
        statistic_kind="order-balanced" if averaged else "k/n", n_resamples=b,
        test="cluster bootstrap")


def cluster_t_accuracy(scores: np.ndarray, codes: np.ndarray, n_clusters: int, *,
                       chance: float = 0.5, alternative: str = "two-sided",
                       confidence_level: float = 0.95) -> AccuracyInference:
    """Accuracy k/n with the cluster-robust (CR1) t interval and test, ``G - 1`` df.

    Parameters
    ----------
    scores : (n,) array
        1 for a correct verdict, 0 for a wrong one, the tie credit for a tie.
    codes : (n,) int array
        Cluster code of each verdict, 0 .. n_clusters - 1 (`cluster_codes`).
    n_clusters : int
        Number of clusters G.
    chance, alternative, confidence_level
        As in [`binomial_accuracy`][].

    Returns
    -------
    AccuracyInference
        ``method="cluster-t"``, ``test="cluster t (CR1, G - 1 df)"``; NaN interval and
        p-value with a reason when G < 2 or every cluster residual is 0.

    Notes
    -----
    ``a = sum_g S_g / sum_g N_g`` (S_g the scores' sum, N_g the verdicts of cluster g),
    ``se^2 = G / (G - 1) sum_g (S_g - a N_g)^2 / (sum_g N_g)^2``,
    ``t = (a - chance) / se`` against Student's t with ``G - 1`` df; the interval
    ``a +- q se`` with ``q`` the ``(1 + confidence_level) / 2`` quantile (two-sided whatever
    ``alternative``). It is the intercept of an OLS fit of the scores on a constant with
    statsmodels' cluster-robust covariance (``cov_type="cluster"``, whose small-sample factor
    ``G / (G - 1) (n - 1) / (n - 1)`` is G / (G - 1)) and t inference with G - 1 df.
    Measured (benchmarks/bench_pairwise_few_clusters.py: the design "clustered by prompt" of
    bench_pairwise_calibration.py, 15 pairs per prompt, 1,000 data sets per cell): level
    0.047-0.061 and coverage 0.940-0.948 with 10-60 prompts (the cluster bootstrap: 0.092
    and 0.892 with 10 prompts).
    """
    s = np.asarray(scores, dtype=np.float64)
    k, n = float(s.sum()), len(s)
    total = np.bincount(codes, weights=s, minlength=n_clusters)
    count = np.bincount(codes, minlength=n_clusters).astype(np.float64)
    a = k / n
    G = int(n_clusters)
    common = {"statistic": a, "method": "cluster-t", "alternative": alternative,
              "chance": float(chance), "k": k, "n": n, "n_clusters": G,
              "confidence_level": confidence_level, "test": "cluster t (CR1, G - 1 df)"}
    if G < 2:
        warnings.warn(f"cluster-robust t of an accuracy: {ONE_CLUSTER_T_REASON}",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
        return AccuracyInference(ci_low=math.nan, ci_high=math.nan, pvalue=math.nan,
                                 reason=ONE_CLUSTER_T_REASON, **common)
    resid = total - a * count
    se = math.sqrt(G / (G - 1) * float(resid @ resid)) / n
    if not se > 0:
        return AccuracyInference(ci_low=math.nan, ci_high=math.nan, pvalue=math.nan,
                                 reason="cluster-robust standard error is 0 (every cluster "
                                        "at the overall accuracy)", **common)
    t = (a - chance) / se
    dist = stats.t(G - 1)
    p = {"two-sided": 2 * dist.sf(abs(t)), "greater": dist.sf(t),
         "less": dist.cdf(t)}[alternative]
    q = float(dist.ppf(0.5 + confidence_level / 2))
    return AccuracyInference(ci_low=a - q * se, ci_high=a + q * se, pvalue=float(min(1.0, p)),
                             **common)


def accuracy_columns(
    scores: np.ndarray,
    scored: np.ndarray,
    *,
    clusters: np.ndarray | None = None,
    method: str = "auto",
    chance: np.ndarray | float = 0.5,
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Intervals and tests for k accuracies over the same units at once (measures x criteria
    of `pointwise_pairwise_accuracy` / `preference_accuracy`).

    Parameters
    ----------
    scores : (n, k) array
        Score of unit i for column j (1, 0 or a tie credit); ignored where not ``scored``.
    scored : (n, k) bool array
        Units counted in column j's accuracy.
    clusters : (n,) array, optional
        Cluster of each unit (the prompt); None: independent units.
    method, alternative, confidence_level, n_resamples, random_state
        As in [`accuracy_inference`][]; the cluster bootstrap draws one set of cluster
        multiplicities for all columns.
    chance : float or (k,) array
        Null accuracy per column.

    Returns
    -------
    DataFrame
        k rows: ``ci_low, ci_high, pvalue, test, agreement, chance, alternative, method,
        n_clusters, confidence_level, n_resamples, reason``; ``agreement`` says whether the
        interval inverts the test or, for two procedures, agrees with it about the chance
        level (`accuracy_agreement`); ``test`` names the test of the p-value
        (``"score test"`` where ties earn fractional credit and the exact binomial test does
        not apply), ``reason`` why a p-value is missing (a single cluster).
    """
    method = _check_choice(method, _ACC_METHODS, "method")
    _check_alternative(alternative)
    level = check_confidence(confidence_level)
    ok = np.asarray(scored, dtype=bool)
    s = np.where(ok, np.asarray(scores, dtype=np.float64), 0.0)
    n_units, k = s.shape
    null = np.broadcast_to(np.asarray(chance, dtype=np.float64), (k,))
    codes, n_clusters = cluster_codes(clusters, n_units)
    refuse_unclustered(method, n_clusters, n_units, "a prompt",
                       remedy="or give no clusters if the pairs share no story")
    if method == "auto":
        method = _auto_method(n_clusters, n_units)
    if method == "cluster-t":
        return _cluster_t_columns(s, ok, codes, n_clusters, null, alternative, level)
    rows = []
    if method in ("exact", "wilson"):
        for j in range(k):  # one binomial per column (measures, not pairs)
            n = int(ok[:, j].sum())
            if n == 0:
                rows.append((math.nan, math.nan, math.nan, 0))
                continue
            r = binomial_accuracy(float(s[:, j].sum()), n, chance=float(null[j]),
                                  interval=method, alternative=alternative,
                                  confidence_level=level)
            rows.append((r.ci_low, r.ci_high, r.pvalue, n))
        low, high, p, n_cl = (np.array(c, dtype=float) for c in zip(*rows))
        tests = [binomial_test_name(float(s[:, j].sum()), method) if ok[:, j].any()
                 else "none" for j in range(k)]
        reps = 0
    elif single_cluster(n_clusters, "cluster bootstrap of accuracies"):
        low = high = p = np.full(k, math.nan)
        n_cl = (cluster_sums(ok.astype(np.float64), codes, n_clusters) > 0).sum(axis=0)
        reps, tests = 0, ["none"] * k
    else:
        reps = check_resamples(n_resamples)
        warn_few_clusters(n_clusters, "cluster bootstrap of accuracies")
        sums = cluster_sums(np.hstack([s, ok.astype(np.float64)]), codes, n_clusters)
        weights = bootstrap_weights(n_clusters, reps, rng_from(random_state))
        boot = weights @ sums
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = boot[:, :k] / boot[:, k:]
            estimate = sums[:, :k].sum(axis=0) / sums[:, k:].sum(axis=0)
        low, high = percentile_interval(draws, level)
        p = np.array([_bootstrap_pvalue(draws[:, j], estimate[j], null[j], alternative, reps)
                      if np.isfinite(estimate[j]) else math.nan for j in range(k)])
        n_cl = (sums[:, k:] > 0).sum(axis=0)
        tests = ["cluster bootstrap"] * k
    one = method == "cluster-bootstrap" and n_clusters < 2
    agree = [accuracy_agreement(lo, hi, pv, level, c, alternative, method, t)
             for lo, hi, pv, c, t in zip(np.broadcast_to(low, (k,)), np.broadcast_to(high, (k,)),
                                          np.broadcast_to(p, (k,)), null, tests)]
    return pd.DataFrame({"ci_low": low, "ci_high": high, "pvalue": p, "test": tests,
                         "agreement": agree,
                         "chance": null, "alternative": alternative, "method": method,
                         "n_clusters": np.asarray(n_cl, dtype=np.int64),
                         "confidence_level": level, "n_resamples": reps,
                         "reason": ONE_CLUSTER_REASON if one else ""})


def _cluster_t_columns(s: np.ndarray, ok: np.ndarray, codes: np.ndarray, n_clusters: int,
                       null: np.ndarray, alternative: str, level: float) -> pd.DataFrame:
    """`cluster_t_accuracy` of every column at once; column j's clusters are those with a
    scored unit in j (as statsmodels on column j's units)."""
    sums = cluster_sums(s, codes, n_clusters)
    counts = cluster_sums(ok.astype(np.float64), codes, n_clusters)
    n = counts.sum(axis=0)
    g = (counts > 0).sum(axis=0)
    if (g < 2).any():
        warnings.warn(f"cluster-robust t of accuracies: {ONE_CLUSTER_T_REASON}",
                      UndefinedStatisticWarning, stacklevel=user_stacklevel())
    with np.errstate(invalid="ignore", divide="ignore"):
        a = sums.sum(axis=0) / n
        resid = sums - a * counts
        se = np.sqrt(g / (g - 1) * (resid ** 2).sum(axis=0)) / n
        tstat = (a - null) / se
    df = np.maximum(g - 1, 1)
    p = {"two-sided": 2 * stats.t.sf(np.abs(tstat), df), "greater": stats.t.sf(tstat, df),
         "less": stats.t.cdf(tstat, df)}[alternative]
    q = stats.t.ppf(0.5 + level / 2, df)
    defined = (g >= 2) & (se > 0)
    reason = np.where(g < 2, ONE_CLUSTER_T_REASON, np.where(defined, "", "cluster-robust standard error is 0 (every "
                                     "cluster at the overall accuracy)"))
    nan = np.full(len(a), math.nan)
    return pd.DataFrame({"ci_low": np.where(defined, a - q * se, nan),
                         "ci_high": np.where(defined, a + q * se, nan),
                         "pvalue": np.where(defined, np.minimum(p, 1.0), nan),
                         "test": "cluster t (CR1, G - 1 df)",
                         "agreement": [accuracy_agreement(lo, hi, pv, level, c, alternative,
                                                          "cluster-t", "")
                                       for lo, hi, pv, c in zip(
                                           np.where(defined, a - q * se, nan),
                                           np.where(defined, a + q * se, nan),
                                           np.where(defined, np.minimum(p, 1.0), nan), null)],
                         "chance": null,
                         "alternative": alternative, "method": "cluster-t",
                         "n_clusters": g.astype(np.int64), "confidence_level": level,
                         "n_resamples": 0, "reason": reason})


# ------------------------------------------------------------------ verdict tables
#: The columns that identify a pair of stories judged on a dimension.
PAIR_COLUMNS = ["dimension", "prompt_id", "lo", "hi"]


def keyed_judge_verdicts(judge_verdicts: pd.DataFrame, reference: pd.DataFrame, *,
                         judge: str | None = None, dimension: str | None = None
                         ) -> pd.DataFrame:
    """The judge's verdicts keyed by pair (`storyeval.pairwise.consistency`'s ``lo``/``hi``
    order), each with ``human``: the sign of the humans' summed outcomes on that pair (1, -1,
    0 for a human tie, NaN where the humans did not judge it). ``judge`` and ``dimension``
    select (an error names a missing one)."""
    from storyeval.pairwise.consistency import _pair_keys
    from storyeval.pairwise.verdicts import validate_verdicts

    jv = validate_verdicts(judge_verdicts, source="judge_verdicts")
    rv = validate_verdicts(reference, source="reference")
    if judge is not None:
        if judge not in set(jv["judge"]):
            raise InputError(f"judge {judge!r} not in judge_verdicts; available: "
                             f"{sorted(set(jv['judge']))}")
        jv = jv[jv["judge"] == judge]
    if dimension is not None:
        for name, t in (("judge_verdicts", jv), ("reference", rv)):
            if dimension not in set(t["dimension"]):
                raise InputError(f"dimension {dimension!r} not in {name}")
        jv, rv = jv[jv["dimension"] == dimension], rv[rv["dimension"] == dimension]
    human = np.sign(_pair_keys(rv).groupby(PAIR_COLUMNS, sort=False)["outcome"].sum())
    return _pair_keys(jv).join(human.rename("human"), on=PAIR_COLUMNS)


AGGREGATES = ("none", "net")
#: What ``accuracy`` estimates under each ``aggregate``.
ESTIMANDS = {"none": "k/n over verdicts",
             "net": "k/n over pairs, net verdict over both orders (JudgeBench; tie = wrong)"}


def scored_verdicts(
    judge_verdicts: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    tie_credit: float = 0.0,
    judge: str | None = None,
    dimension: str | None = None,
    aggregate: str = "none",
) -> pd.DataFrame:
    """Each judge verdict on a human-decided pair with its score, as `judge_accuracy`
    scores it (its mean per judge and dimension is ``judge_accuracy``'s ``accuracy``).

    ``aggregate="net"`` (the rule of JudgeBench-style benchmarks): one row per pair, the net
    verdict over its presentation orders, ``sign(sum of the judge's outcomes)`` (both orders
    for the same story: that story; one order for a story and "same" in the other: that
    story; opposite stories, i.e. inconsistent, or "same" twice: a tie), and a tie counts as
    wrong (``tie_credit`` must be 0). ``n_orders`` says how many verdicts a pair's net verdict
    summarises; ``first_is_lo`` and ``preferred_first`` are then those of its first verdict.

    Returns
    -------
    DataFrame
        ``judge, dimension, prompt_id, lo, hi, first_is_lo, preferred_first, outcome, human,
        score`` (1 right, 0 wrong, ``tie_credit`` for a judge's "same"), plus ``n_orders``
        with ``aggregate="net"``. Pairs the humans tied or did not judge are left out
        (counted by `judge_accuracy`).
    """
    credit = _check_credit(tie_credit, "tie_credit")
    aggregate = _check_choice(aggregate, AGGREGATES, "aggregate")
    if aggregate == "net" and credit != 0:
        raise InputError("aggregate 'net' (JudgeBench's rule) counts a tie as wrong; "
                         "tie_credit must be 0")
    keyed = keyed_judge_verdicts(judge_verdicts, reference, judge=judge, dimension=dimension)
    keyed = keyed[keyed["human"].notna() & (keyed["human"] != 0)].copy()
    if aggregate == "net":
        keyed = _net_verdicts(keyed)
    keyed["human"] = keyed["human"].astype(np.int64)
    keyed["preferred_first"] = keyed["first_is_lo"] == (keyed["human"] == 1)
    keyed["score"] = np.where(keyed["outcome"] == keyed["human"], 1.0,
                              np.where(keyed["outcome"] == 0, credit, 0.0))
    cols = ["judge", "dimension", "prompt_id", "lo", "hi", "first_is_lo", "preferred_first",
            "outcome", "human", "score"]
    if aggregate == "net":
        cols.append("n_orders")
    return keyed.loc[:, cols].reset_index(drop=True)


def _net_verdicts(keyed: pd.DataFrame) -> pd.DataFrame:
    """One row per (judge, pair): the sign of the summed outcomes of its verdicts."""
    keys = ["judge", *PAIR_COLUMNS]
    grouped = keyed.groupby(keys, sort=False)
    net = grouped.agg(outcome=("outcome", "sum"), human=("human", "first"),
                      first_is_lo=("first_is_lo", "first"), n_orders=("outcome", "size"))
    net["outcome"] = np.sign(net["outcome"]).astype(np.int64)
    return net.reset_index()


def _cluster_labels(scored: pd.DataFrame, cluster: str) -> np.ndarray | None:
    """Cluster label per scored verdict: its prompt, its pair, or none (independent)."""
    cluster = _check_choice(cluster, _CLUSTERS, "cluster")
    if cluster == "auto":
        per_prompt = scored.groupby(["judge", "dimension", "prompt_id"], sort=False).size()
        cluster = "prompt" if (per_prompt > 1).any() else "none"
    if cluster == "none":
        return None
    keys = ["prompt_id"] if cluster == "prompt" else ["prompt_id", "lo", "hi"]
    return pd.MultiIndex.from_frame(scored[keys].astype(str)).to_flat_index().to_numpy()


def judge_accuracy_inference(
    judge_verdicts: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    judge: str | None = None,
    dimension: str | None = None,
    tie_credit: float = 0.0,
    cluster: str = "auto",
    method: str = "auto",
    chance: float | None = None,
    alternative: str = "two-sided",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
    balanced: bool = False,
    aggregate: str = "none",
) -> pd.DataFrame:
    """Judge accuracy against human verdicts with an interval and a test against chance.

    Parameters
    ----------
    balanced : bool, default False
        False: the statistic is k/n (the share of credited verdicts; `judge_accuracy`'s
        ``accuracy``, the estimand of `compare_judges`). True: the order-balanced accuracy
        (`judge_accuracy`'s ``balanced_accuracy``), with a (cluster) bootstrap interval and
        p-value; the two are equal when every pair is judged in both orders.
    aggregate : {"none", "net"}, default "none"
        ``"net"``: one verdict per pair, the net verdict over its presentation orders, a tie
        wrong (`scored_verdicts`; JudgeBench's rule).
    cluster : {"auto", "prompt", "pair", "none"}, default "auto"
        Dependent verdicts: those of one prompt (``"prompt"``), the two orders of one pair
        (``"pair"``), or none. ``"auto"``: ``"prompt"`` when some prompt has more than one
        verdict of a judge (several pairs or both orders), else ``"none"``.
    method : {"auto", "exact", "wilson", "cluster-bootstrap", "cluster-t"}
        See [`accuracy_inference`][]; ``"auto"`` bootstraps clusters when there are any.
        ``"exact"`` and ``"wilson"`` are refused on clustered verdicts (an error naming the
        cluster and the clustered methods); ``cluster="none"`` declares them independent.
    chance : float, optional
        Default: the tie-aware chance level of the judge (its own share of "same" answers
        earning ``tie_credit``, [`chance_level`][]); 0.5 for a judge that never says "same".

    Returns
    -------
    DataFrame
        One row per (judge, dimension): ``accuracy`` (``statistic_kind`` says which: k/n, or
        order-balanced with ``balanced``), ``ci_low, ci_high, pvalue, test, agreement,
        chance, alternative, method, statistic_kind, cluster, n_verdicts, n_clusters,
        confidence_level, n_resamples`` (``agreement``: `accuracy_agreement`).
    """
    scored = scored_verdicts(judge_verdicts, reference, tie_credit=tie_credit, judge=judge,
                             dimension=dimension, aggregate=aggregate)
    if balanced and aggregate == "net":
        raise InputError("the order-balanced accuracy is an accuracy over verdicts; with "
                         "aggregate 'net' a pair has one verdict")
    if scored.empty:
        raise InputError("no judge verdict on a pair the humans decided: nothing to score")
    labels = _cluster_labels(scored, cluster)
    if labels is not None and method in ("exact", "wilson"):
        unit = "prompt" if cluster_name(scored, cluster) == "prompt" else "pair (both orders)"
        per = pd.Series(labels).groupby([scored["judge"], scored["dimension"], labels]).size()
        if (per > 1).any():
            raise InputError(
                f"interval {method!r} assumes independent verdicts, but they are clustered by "
                f"{unit} (a {unit.split()[0]} holds several verdicts of a judge): it would be "
                "too narrow; use 'cluster-t' or 'cluster-bootstrap' ('auto' picks one), or "
                "cluster 'none' to declare the verdicts independent")
    rng = rng_from(random_state)
    rows = []
    for (jname, dim), idx in scored.groupby(["judge", "dimension"], sort=True).indices.items():
        g = scored.iloc[idx]
        share_same = float((g["outcome"] == 0).mean())
        null = chance if chance is not None else chance_level(
            [(1 - share_same) / 2, (1 - share_same) / 2, share_same], tie_credit=tie_credit)
        res = accuracy_inference(
            g["score"].to_numpy(), clusters=None if labels is None else labels[idx],
            preferred_first=g["preferred_first"].to_numpy() if balanced else None,
            method=method, chance=null, alternative=alternative,
            confidence_level=confidence_level, n_resamples=n_resamples, random_state=rng)
        rows.append({"judge": jname, "dimension": dim, "accuracy": res.statistic,
                     "ci_low": res.ci_low, "ci_high": res.ci_high, "pvalue": res.pvalue,
                     "test": res.test,
                     "agreement": accuracy_agreement(res.ci_low, res.ci_high, res.pvalue,
                                                     res.confidence_level, res.chance,
                                                     res.alternative, res.method, res.test),
                     "chance": res.chance, "alternative": res.alternative,
                     "method": res.method, "statistic_kind": res.statistic_kind,
                     "cluster": "none" if labels is None else cluster_name(scored, cluster),
                     "n_verdicts": res.n, "n_clusters": res.n_clusters,
                     "confidence_level": res.confidence_level,
                     "n_resamples": res.n_resamples, "reason": res.reason})
    return pd.DataFrame(rows)


def cluster_name(scored: pd.DataFrame, cluster: str) -> str:
    """The cluster unit ``"auto"`` resolves to."""
    if cluster != "auto":
        return cluster
    return "none" if _cluster_labels(scored, "auto") is None else "prompt"


# ------------------------------------------------------------------ comparing judges
def mcnemar_exact(correct_a: np.ndarray, correct_b: np.ndarray) -> tuple[float, int, int]:
    """Exact McNemar test of two paired 0/1 vectors: (two-sided p, n_ab, n_ba) with n_ab the
    pairs only ``a`` got right.

    Notes
    -----
    p = min(1, 2 F(min(n_ab, n_ba); n_ab + n_ba, 1/2)) with F the binomial CDF: the
    definition of statsmodels ``mcnemar(table, exact=True)``, its validation reference.
    """
    a, b = _binary_pair(correct_a, correct_b)
    n_ab = int(np.count_nonzero((a == 1) & (b == 0)))
    n_ba = int(np.count_nonzero((a == 0) & (b == 1)))
    p = min(1.0, 2.0 * float(stats.binom.cdf(min(n_ab, n_ba), n_ab + n_ba, 0.5)))
    return p, n_ab, n_ba


def mcnemar_score(correct_a: np.ndarray, correct_b: np.ndarray) -> tuple[float, int, int]:
    """Asymptotic McNemar test (the score test, no continuity correction) of two paired 0/1
    vectors: (two-sided p, n_ab, n_ba).

    Notes
    -----
    z = (n_ab - n_ba) / sqrt(n_ab + n_ba), p = 2 Phi(-|z|); p = 1 without a discordant pair.
    It is the score test of Tango's (1998) interval at a difference of 0 (`tango_interval`),
    so the two agree on every table. Fagerland, Lydersen and Laake (2013) found its actual
    level rarely above nominal even with few discordant pairs, where the exact conditional
    test is conservative; the exact level of this implementation (a sum over the binomial
    distribution of the discordant pairs) is at most 0.054 at alpha 0.05 and 0.010 at alpha
    0.01 for 20-1,000 pairs and discordance 1-50% (tests/test_pairwise_inference.py checks
    the 0.05 case). Validated against statsmodels
    ``mcnemar(table, exact=False, correction=False)``.

    References
    ----------
    1. Fagerland, M. W., Lydersen, S. and Laake, P. (2013). The McNemar test for binary
       matched-pairs data: mid-p and asymptotic are better than exact conditional. BMC
       Medical Research Methodology 13, 91.
    """
    a, b = _binary_pair(correct_a, correct_b)
    n_ab = int(np.count_nonzero((a == 1) & (b == 0)))
    n_ba = int(np.count_nonzero((a == 0) & (b == 1)))
    if n_ab + n_ba == 0:
        return 1.0, n_ab, n_ba
    z = (n_ab - n_ba) / math.sqrt(n_ab + n_ba)
    return float(min(1.0, 2.0 * stats.norm.sf(abs(z)))), n_ab, n_ba


def _binary_pair(correct_a: np.ndarray, correct_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(correct_a), np.asarray(correct_b)
    if not (np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all()):
        raise InputError("McNemar's test needs 0/1 scores; with partial tie credit use the "
                         "permutation or bootstrap test")
    return a, b


def _tango_z(delta: float, n_ab: int, n_ba: int, n: int) -> float:
    """Tango's score statistic of ``difference = delta`` (decreasing in delta)."""
    b, c = float(n_ab), float(n_ba)
    num = b - c - n * delta
    if num == 0:
        return 0.0
    w = -b - c + (2.0 * n - b + c) * delta
    q21 = (math.sqrt(max(w * w + 8.0 * n * c * delta * (1.0 - delta), 0.0)) - w) / (4.0 * n)
    var = n * (2.0 * q21 + delta * (1.0 - delta))
    return num / math.sqrt(var) if var > 0 else math.copysign(math.inf, num)


def tango_interval(n_ab: int, n_ba: int, n: int,
                   confidence_level: float = 0.95) -> tuple[float, float]:
    """Tango's (1998) score interval for the difference of two paired proportions,
    ``(n_ab - n_ba) / n`` (n_ab: pairs only ``a`` got right, of ``n`` pairs).

    Notes
    -----
    For a difference d the cell probability of the pairs only ``b`` got right is fitted under
    the constraint (its restricted maximum likelihood estimate, Tango's closed form
    ``q = (sqrt(W^2 + 8 n n_ba d (1 - d)) - W) / (4 n)`` with
    ``W = -n_ab - n_ba + (2 n - n_ab + n_ba) d``), and
    ``Z(d) = (n_ab - n_ba - n d) / sqrt(n (2 q + d (1 - d)))``; the interval is
    ``{d : |Z(d)| <= z_{(1 + level) / 2}}``, found by root finding (Z decreases in d). At
    d = 0, Z is McNemar's statistic, so the interval excludes 0 exactly when
    `mcnemar_score` gives ``p < 1 - confidence_level``. Recommended with the asymptotic
    McNemar test by Fagerland, Lydersen and Laake (2014). Validated against the restricted
    likelihood maximised numerically (scipy) and statsmodels' McNemar statistic at d = 0.

    References
    ----------
    1. Tango, T. (1998). Equivalence test and confidence interval for the difference in
       proportions for the paired-sample design. Statistics in Medicine 17, 891-908.
    2. Fagerland, M. W., Lydersen, S. and Laake, P. (2014). Recommended tests and confidence
       intervals for paired binomial proportions. Statistics in Medicine 33, 2850-2875.

    Examples
    --------
    >>> low, high = tango_interval(30, 10, 100)
    >>> round(low, 4), round(high, 4)
    (0.0795, 0.317)
    """
    from scipy.optimize import brentq

    level = check_confidence(confidence_level)
    if not (n >= 1 and 0 <= n_ab and 0 <= n_ba and n_ab + n_ba <= n):
        raise InputError(f"need 0 <= n_ab + n_ba <= n and n >= 1, got {n_ab}, {n_ba}, {n}")
    z = float(stats.norm.ppf(0.5 + level / 2))
    est = (n_ab - n_ba) / n
    eps = 1e-12

    def bound(target: float, lo: float, hi: float, edge: float) -> float:
        def f(d: float) -> float:
            return _tango_z(d, n_ab, n_ba, n) - target
        if f(edge) * f(est) > 0:  # |Z| never reaches z on this side: the end of [-1, 1]
            return -1.0 if edge < est else 1.0
        return float(brentq(f, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps))

    low = bound(z, -1.0 + eps, est, -1.0 + eps) if est > -1 else -1.0
    high = bound(-z, est, 1.0 - eps, 1.0 - eps) if est < 1 else 1.0
    return (low, high)


def interval_agreement(low: float, high: float, pvalue: float, level: float,
                       inverts: bool, null: float = 0.0) -> str:
    """How a two-sided interval at ``level`` and a two-sided p-value of ``null`` relate on one
    row: ``"inverts the test"``, ``"agree"``, ``"DISAGREE: ..."`` or ``""`` (undefined)."""
    if not (np.isfinite(low) and np.isfinite(high) and np.isfinite(pvalue)):
        return ""
    alpha = 1 - level
    excludes, rejects = bool(low > null or high < null), bool(pvalue < alpha)
    if excludes == rejects:
        return "inverts the test" if inverts else "agree"
    if excludes:
        return (f"DISAGREE: the interval excludes {null:g}, p = {pvalue:.3g} >= {alpha:g} "
                "(two procedures; trust the test)")
    return (f"DISAGREE: p = {pvalue:.3g} < {alpha:g}, the interval covers {null:g} (two "
            "procedures; trust the test)")


def accuracy_agreement(low: float, high: float, pvalue: float, level: float, chance: float,
                       alternative: str, method: str, test: str) -> str:
    """`interval_agreement` of an accuracy row against its chance level: the Wilson interval
    inverts the score test, Clopper-Pearson the exact test, the cluster t its t test; the
    cluster bootstrap's percentile interval and p are two procedures. A one-sided test beside
    the two-sided interval says so."""
    if alternative != "two-sided":
        return "" if not np.isfinite(pvalue) else "one-sided test; the interval is two-sided"
    inverts = ((method == "wilson" and test == SCORE_TEST)
               or (method == "exact" and test == "exact binomial") or method == "cluster-t")
    return interval_agreement(low, high, pvalue, level, inverts, null=chance)


def compare_accuracies(
    scores_a: np.ndarray,
    scores_b: np.ndarray,
    *,
    clusters: np.ndarray | None = None,
    test: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
    labels: tuple[str, str] = ("a", "b"),
) -> JudgeComparison:
    """Paired two-sided test of equal accuracy of two judges scored on the same verdict units.

    Parameters
    ----------
    scores_a, scores_b : (n,) arrays
        Scores of the two judges on the same units (aligned).
    clusters : (n,) array, optional
        Cluster of each unit (prompt; pair for both orders); None: independent units.
    test : {"auto", "mcnemar", "mcnemar-exact", "permutation", "bootstrap", "cluster-t"}
        ``"mcnemar"``: the asymptotic McNemar (score) test with Tango's score interval of the
        difference, which inverts it (independent units, 0/1 scores; `mcnemar_score`,
        `tango_interval`): the interval excludes 0 exactly when p < 1 - confidence_level.
        ``"mcnemar-exact"``: the exact conditional McNemar test (conservative) beside the
        same Tango interval; ``agreement`` marks a row where they disagree. ``"permutation"``: cluster sign-flip test (the judges' labels swapped
        within a cluster; exact enumeration when 2^C <= ``n_resamples``).
        ``"bootstrap"``: paired cluster bootstrap, p from the centred distribution, with the
        cluster-bootstrap percentile interval of the difference (two procedures: the row's
        ``agreement`` says whether they agree). The permutation test comes with the interval
        that inverts it (`sign_flip_ratio_interval`: every difference delta that the sign-flip
        test of the centred cluster sums does not reject, the same sign vectors). ``"cluster-t"``: the cluster-robust (CR1) t test of the difference with
        ``clusters - 1`` df and the t interval it inverts (holds its level with 10-20 prompts;
        measured by benchmarks/bench_pairwise_few_clusters.py). ``"auto"``: McNemar for
        independent 0/1 units, else permutation. Before 0.3.2 ``"mcnemar"`` was the exact
        test beside an Agresti-Min interval, which could exclude 0 beside p = 0.059.

    Notes
    -----
    The effect is the difference of pooled accuracies, sum(a - b)/n (equal to the difference
    of order-averaged accuracies when every pair is judged in both orders). Sign flip:
    T = sum_c D_c with D_c the cluster sums of a - b; p = (1 + #{|T*| >= |T|}) / (1 + B) for
    T* = sum_c e_c D_c with random signs e_c. Measured type-I error in
    ``benchmarks/bench_pairwise_calibration.py``. Cluster t: ``d = sum_c D_c / n``,
    ``se^2 = C / (C - 1) sum_c (D_c - d n_c)^2 / n^2`` (n_c the units of cluster c),
    ``t = d / se`` against Student's t with C - 1 df, interval ``d +- q se`` clipped to
    [-1, 1] (statsmodels' cluster-robust OLS of a - b on a constant; tested).
    """
    test = _check_choice(test, _TESTS, "test")
    level = check_confidence(confidence_level)
    a = np.asarray(scores_a, dtype=np.float64)
    b = np.asarray(scores_b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or not len(a):
        raise InputError(f"scores_a and scores_b must be aligned non-empty 1-D arrays, got "
                         f"shapes {a.shape} and {b.shape}")
    n = len(a)
    codes, n_clusters = cluster_codes(clusters, n)
    binary = bool(np.isin(a, (0, 1)).all() and np.isin(b, (0, 1)).all())
    if test == "auto":
        test = "mcnemar" if (n_clusters == n and binary) else "permutation"
    n_disc = int(np.count_nonzero(a != b))
    diff = float((a - b).mean())
    common: dict[str, Any] = {"judge_a": labels[0], "judge_b": labels[1], "accuracy_a": float(a.mean()),
              "accuracy_b": float(b.mean()), "difference": diff, "n": n,
              "n_clusters": n_clusters, "n_discordant": n_disc, "confidence_level": level}
    if test in ("mcnemar", "mcnemar-exact"):
        if n_clusters < n:
            raise InputError("McNemar's test assumes independent pairs; clustered verdicts "
                             "(shared prompts, both orders) need test='permutation', "
                             "'bootstrap' or 'cluster-t'")
        exact = test == "mcnemar-exact"
        p, n_ab, n_ba = (mcnemar_exact if exact else mcnemar_score)(a, b)
        low, high = tango_interval(n_ab, n_ba, n, level)
        return JudgeComparison(ci_low=float(low), ci_high=float(high), pvalue=p,
                               test="mcnemar-exact" if exact else "mcnemar-score",
                               interval="tango-score",
                               agreement=interval_agreement(low, high, p, level, not exact),
                               **common)
    reps = check_resamples(n_resamples)
    rng = rng_from(random_state)
    if single_cluster(n_clusters, f"{test} comparison of two judges"):
        return JudgeComparison(ci_low=math.nan, ci_high=math.nan, pvalue=math.nan,
                               test="none", interval="none", reason=ONE_CLUSTER_REASON,
                               **common)
    sums = cluster_sums(np.column_stack([a - b, np.ones(n)]), codes, n_clusters)
    if test == "cluster-t":
        return _cluster_t_difference(sums, diff, n, level, common)
    if n_clusters < n:  # sign flips with few clusters are exact but coarse: warn for both
        warn_few_clusters(n_clusters, f"{test} comparison of two judges")
    if test == "bootstrap":
        boot = bootstrap_weights(n_clusters, reps, rng) @ sums
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = boot[:, 0] / boot[:, 1]
        boot_low, boot_high = percentile_interval(draws, level)
        p = float(min(1.0, _bootstrap_pvalue(draws, diff, 0.0, "two-sided", reps)))
        return JudgeComparison(ci_low=float(boot_low), ci_high=float(boot_high), pvalue=p,
                               test="cluster-bootstrap", interval="cluster-bootstrap-percentile",
                               n_resamples=reps,
                               agreement=interval_agreement(boot_low, boot_high, p, level,
                                                            False), **common)
    return _sign_flip_difference(sums, diff, level, reps, rng, common)


def _sign_flip_difference(sums: np.ndarray, diff: float, level: float, reps: int,
                          rng: np.random.Generator, common: dict[str, Any]) -> JudgeComparison:
    """`compare_accuracies`' cluster sign-flip test of the difference and the interval that
    inverts it (`sign_flip_ratio_interval`, the same sign vectors), from the cluster sums
    (C, 2) of a - b and of the units."""
    signs, exact = sign_flips(len(sums), reps, rng)
    total = sums[:, 0].sum()
    flipped = signs @ sums[:, 0]
    # a relative tolerance so that float sums equal to |T| count as extreme
    extreme = np.count_nonzero(np.abs(flipped) >= abs(total) - 1e-9 * (1 + abs(total)))
    p = float(min(1.0, extreme / len(signs) if exact else (1 + extreme) / (1 + len(signs))))
    low, high = sign_flip_ratio_interval(sums, signs, exact, level)
    low, high = max(-1.0, low), min(1.0, high)
    if not p < 1 - level and not low <= 0.0 <= high:
        # only the float tolerance above can count a vector at 0 that the interval's exact
        # ends leave out (a difference of 1e-16): the test's decision wins
        low, high = min(low, 0.0), max(high, 0.0)
    return JudgeComparison(ci_low=low, ci_high=high, pvalue=p,
                           test="cluster-permutation-exact" if exact else "cluster-permutation",
                           interval="cluster-permutation-inversion", n_resamples=reps,
                           agreement=interval_agreement(low, high, p, level, True), **common)


def _cluster_t_difference(sums: np.ndarray, diff: float, n: int, level: float,
                          common: dict[str, Any]) -> JudgeComparison:
    """`compare_accuracies`' cluster-robust t test and interval of the difference, from the
    cluster sums (C, 2) of a - b and of the units."""
    G = len(sums)
    resid = sums[:, 0] - diff * sums[:, 1]
    se = math.sqrt(G / (G - 1) * float(resid @ resid)) / n
    if not se > 0:
        return JudgeComparison(ci_low=math.nan, ci_high=math.nan, pvalue=math.nan,
                               test="cluster-t", interval="cluster-t",
                               reason="cluster-robust standard error is 0", **common)
    dist = stats.t(G - 1)
    q = float(dist.ppf(0.5 + level / 2))
    low, high = max(-1.0, diff - q * se), min(1.0, diff + q * se)
    p = float(min(1.0, 2 * dist.sf(abs(diff) / se)))
    return JudgeComparison(ci_low=low, ci_high=high, pvalue=p, test="cluster-t",
                           interval="cluster-t",
                           agreement=interval_agreement(low, high, p, level, True), **common)


def compare_judges(
    judge_verdicts: pd.DataFrame,
    reference: pd.DataFrame,
    *,
    dimension: str | None = None,
    tie_credit: float = 0.0,
    cluster: str = "auto",
    test: str = "auto",
    confidence_level: float = 0.95,
    n_resamples: int = 2000,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Every pair of judges compared on the verdict units both judged (same pair, same order,
    same dimension), with Benjamini-Hochberg adjusted p-values.

    Returns
    -------
    DataFrame
        One row per (dimension, judge_a, judge_b), judge_a before judge_b by name: the columns
        of `JudgeComparison` plus ``dimension``, ``cluster`` and ``pvalue_bh`` (BH over all
        judge pairs of the dimension: the family is the J(J-1)/2 comparisons).
    """
    scored = scored_verdicts(judge_verdicts, reference, tie_credit=tie_credit,
                             dimension=dimension)
    judges = sorted(set(scored["judge"]))
    if len(judges) < 2:
        raise InputError(f"comparing judges needs at least 2 judges in the verdicts, found "
                         f"{judges}")
    rng = rng_from(random_state)
    unit = ["dimension", "prompt_id", "lo", "hi", "first_is_lo"]
    dup = scored.duplicated(["judge", *unit])
    if dup.any():
        raise InputError(f"judge {scored['judge'][dup].iloc[0]!r} has two verdicts on one "
                         "(pair, order, dimension)")
    frames = []
    for dim, g in scored.groupby("dimension", sort=True):
        wide = g.pivot(index=unit, columns="judge", values="score")
        key = wide.index.to_frame(index=False)
        clusters = _cluster_labels(g, cluster)
        labels = None
        if clusters is not None:
            keys = ["prompt_id"] if cluster_name(g, cluster) == "prompt" else ["prompt_id",
                                                                              "lo", "hi"]
            labels = pd.MultiIndex.from_frame(key[keys].astype(str)).to_flat_index().to_numpy()
        rows = []
        present = [j for j in judges if j in wide.columns]
        for i, ja in enumerate(present):
            for jb in present[i + 1:]:
                both = wide[[ja, jb]].notna().all(axis=1).to_numpy()
                if not both.any():
                    continue
                res = compare_accuracies(
                    wide[ja].to_numpy()[both], wide[jb].to_numpy()[both],
                    clusters=None if labels is None else labels[both], test=test,
                    confidence_level=confidence_level, n_resamples=n_resamples,
                    random_state=rng, labels=(ja, jb))
                rows.append({"dimension": dim, **asdict(res),
                             "cluster": "none" if labels is None else cluster_name(g, cluster)})
        if rows:
            frame = pd.DataFrame(rows)
            frame["pvalue_bh"] = adjust_pvalues(frame["pvalue"].to_numpy(dtype=float),
                                                method="bh")
            frames.append(frame)
    if not frames:
        raise InputError("no two judges judged the same (pair, order, dimension)")
    return pd.concat(frames, ignore_index=True)


def significance_groups(
    accuracies: pd.DataFrame,
    comparisons: pd.DataFrame,
    *,
    alpha: float = 0.05,
) -> pd.DataFrame:
    """Which judges are indistinguishable from the best one, per dimension.

    Parameters
    ----------
    accuracies : DataFrame
        ``judge_accuracy_inference`` output (``judge, dimension, accuracy, ci_low, ci_high``).
    comparisons : DataFrame
        ``compare_judges`` output (``pvalue_bh``: BH over all judge pairs).
    alpha : float, default 0.05
        False discovery rate of the BH family.

    Returns
    -------
    DataFrame
        ``dimension, rank, judge, accuracy, ci_low, ci_high, difference_to_best,
        pvalue_vs_best_bh, group``: ``"top"`` for the best judge and every judge whose
        BH-adjusted comparison with it is not significant at ``alpha``, else ``"below"``.
    """
    if not (0 < alpha < 1):
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")
    rows = []
    for dim, acc in accuracies.groupby("dimension", sort=True):
        acc = acc.sort_values(["accuracy", "judge"], ascending=[False, True])
        best = acc["judge"].iloc[0]
        cmp = comparisons[comparisons["dimension"] == dim]
        for rank, row in enumerate(acc.itertuples(index=False), start=1):
            if row.judge == best:
                p, d = math.nan, 0.0
            else:
                hit = cmp[((cmp["judge_a"] == best) & (cmp["judge_b"] == row.judge))
                          | ((cmp["judge_b"] == best) & (cmp["judge_a"] == row.judge))]
                p = float(hit["pvalue_bh"].iloc[0]) if len(hit) else math.nan
                d = row.accuracy - acc["accuracy"].iloc[0]
            top = row.judge == best or not (p < alpha)
            rows.append({"dimension": dim, "rank": rank, "judge": row.judge,
                         "accuracy": row.accuracy, "ci_low": row.ci_low,
                         "ci_high": row.ci_high, "difference_to_best": d,
                         "pvalue_vs_best_bh": p, "group": "top" if top else "below"})
    return pd.DataFrame(rows)
