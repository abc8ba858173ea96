"""Power, sample size and minimum detectable effect for pairwise and judge designs (closed forms).

Every design reduces to a two-sided (or one-sided) z-test of a mean of per-unit scores with
effect ``delta``, per-unit standard deviation ``sd0`` under the null and ``sd1`` under the
alternative, and a design effect for prompt clustering:

==================  ===========================================  ==========================
design              effect                                       per-unit sd0 / sd1
==================  ===========================================  ==========================
win rate vs 0.5     ``p - 0.5``                                  ``0.5`` / ``sqrt(p(1-p))``
paired accuracies   ``acc_a - acc_b`` (McNemar; discordance psi) ``sqrt(psi)`` /
                                                                 ``sqrt(psi - delta^2)``
two proportions     ``p_a - p_b`` (independent samples of n      ``sqrt(2 pbar qbar)`` /
                    each; two judges on different pairs, two     ``sqrt(p_a q_a + p_b q_b)``
                    systems' win rates)
kappa above k0      ``kappa - k0`` (one-sided; two raters,       Bloch & Kraemer's sd at k0
                    binary labels, prevalence pi)                / at kappa
==================  ===========================================  ==========================

A Bradley-Terry strength difference ``beta`` between two systems is the win rate
``1 / (1 + exp(-beta))`` (`strength_to_win_rate`). Clustering: ``m`` units per prompt with
intra-prompt correlation ``icc`` inflate the variance by ``deff = 1 + (m - 1) icc``
(`design_effect`), so ``n`` units carry the information of ``n / deff`` independent ones.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import pandas as pd
from scipy import optimize, stats

from storyeval.exceptions import InputError

__all__ = [
    "PairwisePlan",
    "design_effect",
    "kappa_sd",
    "minimum_detectable_effect",
    "pairwise_power",
    "pairwise_sample_size",
    "strength_to_win_rate",
    "z_test_power",
]

DESIGNS = ("win_rate", "paired_accuracy", "two_proportions", "kappa")


def design_effect(units_per_prompt: float, icc: float) -> float:
    """Variance inflation of prompt clustering: ``1 + (m - 1) * icc`` (Kish 1965).

    Validated against the hand formula and by simulation (tests/test_power_pairwise.py).

    Examples
    --------
    >>> design_effect(5, 0.1)
    1.4
    """
    if units_per_prompt < 1:
        raise InputError(f"units per prompt must be >= 1, got {units_per_prompt}")
    if not 0 <= icc <= 1:
        raise InputError(f"icc must be in [0, 1], got {icc}")
    return 1.0 + (units_per_prompt - 1.0) * icc


def strength_to_win_rate(beta: float) -> float:
    """The Bradley-Terry win probability of a strength difference ``beta`` (natural log odds).

    Examples
    --------
    >>> strength_to_win_rate(0.0)
    0.5
    """
    return 1.0 / (1.0 + math.exp(-beta))


def z_test_power(delta: float, n: float, *, sd0: float, sd1: float, alpha: float = 0.05,
                 alternative: str = "two-sided") -> float:
    """Power of a z-test of a mean of ``n`` independent units with null/alternative sds.

    Notes
    -----
    ``power = Phi((|delta| sqrt(n) - z sd0) / sd1) + Phi((-|delta| sqrt(n) - z sd0) / sd1)``
    with ``z = z_{1-alpha/2}`` (two-sided; the second term is the opposite tail), or
    ``Phi((delta sqrt(n) - z_{1-alpha} sd0) / sd1)`` for ``alternative="larger"``.

    Validated against ``statsmodels.stats.power.normal_power_het`` to 1e-12.
    """
    if alternative not in ("two-sided", "larger"):
        raise InputError(f"alternative must be 'two-sided' or 'larger', got {alternative!r}")
    if sd1 <= 0 or sd0 <= 0:
        raise InputError("the per-unit standard deviations must be positive")
    root = math.sqrt(n)
    if alternative == "larger":
        z = stats.norm.ppf(1 - alpha)
        return float(stats.norm.cdf((delta * root - z * sd0) / sd1))
    z = stats.norm.ppf(1 - alpha / 2)
    d = abs(delta) * root
    return float(stats.norm.cdf((d - z * sd0) / sd1) + stats.norm.cdf((-d - z * sd0) / sd1))


def kappa_sd(kappa: float, prevalence: float) -> float:
    """Per-subject sd of Cohen's (intraclass) kappa for two raters and binary labels.

    Notes
    -----
    ``n Var(kappa_hat) = (1 - k) [(1 - k)(1 - 2k) + k (2 - k) / (2 pi (1 - pi))]``
    (Bloch & Kraemer 1989, eq. for the intraclass kappa; both raters share the prevalence pi).
    Checked by simulation (tests/test_power_pairwise.py).
    """
    if not 0 < prevalence < 1:
        raise InputError(f"prevalence must be in (0, 1), got {prevalence}")
    k, p = kappa, prevalence
    var = (1 - k) * ((1 - k) * (1 - 2 * k) + k * (2 - k) / (2 * p * (1 - p)))
    if not var > 0:
        raise InputError(f"kappa {kappa} has no positive variance at prevalence {prevalence}")
    return math.sqrt(var)


def _moments(design: str, effect: float, *, baseline: float, discordance: float | None,
             prevalence: float) -> tuple[float, float, float, str]:
    """(delta, sd0, sd1, alternative) of one unit of a design."""
    if design == "win_rate":
        _prob(effect, "win rate")
        return effect - 0.5, 0.5, math.sqrt(effect * (1 - effect)), "two-sided"
    if design == "paired_accuracy":
        delta = effect - baseline
        if discordance is None:
            raise InputError("paired_accuracy needs the discordance rate (share of pairs the "
                             "two judges decide differently)")
        if not abs(delta) < discordance <= 1:
            raise InputError(f"discordance must be in (|difference|, 1] = ({abs(delta)}, 1], "
                             f"got {discordance}")
        return delta, math.sqrt(discordance), math.sqrt(discordance - delta**2), "two-sided"
    if design == "two_proportions":
        _prob(effect, "proportion")
        _prob(baseline, "baseline proportion")
        pbar = (effect + baseline) / 2
        sd1 = math.sqrt(effect * (1 - effect) + baseline * (1 - baseline))
        return effect - baseline, math.sqrt(2 * pbar * (1 - pbar)), sd1, "two-sided"
    if design == "kappa":
        return (effect - baseline, kappa_sd(baseline, prevalence), kappa_sd(effect, prevalence),
                "larger")
    raise InputError(f"design must be one of {list(DESIGNS)}, got {design!r}")


def _prob(p: float, name: str) -> None:
    if not 0 < p < 1:
        raise InputError(f"the {name} must be in (0, 1), got {p}")


@dataclass(frozen=True)
class PairwisePlan:
    """One planned (or finished) pairwise design: sizes, power and the detectable effect."""

    design: str
    effect: float
    baseline: float
    delta: float
    n_units: int
    n_prompts: int
    n_independent: float
    design_effect: float
    power: float
    alpha: float
    alternative: str
    test: str

    def to_frame(self) -> pd.DataFrame:
        """One row, one design."""
        return pd.DataFrame([asdict(self)])


_TESTS = {
    "win_rate": "one-sample z-test of a proportion against 0.5 (sd under H0: 0.5)",
    "paired_accuracy": "McNemar z-test without continuity correction (Connor 1987)",
    "two_proportions": "two-sample z-test of proportions, pooled sd under H0, n per group",
    "kappa": "one-sided z-test of Cohen's kappa > kappa0 (Bloch & Kraemer 1989)",
}


def pairwise_power(design: str, effect: float, n_units: float, *, baseline: float = 0.5,
                   discordance: float | None = None, prevalence: float = 0.5,
                   units_per_prompt: float = 1.0, icc: float = 0.0,
                   alpha: float = 0.05) -> float:
    """Power of a pairwise or judge design with ``n_units`` units (pairs, or pairs per group).

    Parameters
    ----------
    design : {"win_rate", "paired_accuracy", "two_proportions", "kappa"}
        See the module docstring.
    effect : float
        The value under the alternative: the win rate; judge A's accuracy; proportion A;
        the kappa.
    n_units : float
        Pairs judged (per group for ``two_proportions``; subjects for ``kappa``).
    baseline : float, default 0.5
        The comparison value: judge B's accuracy, proportion B, kappa0 (ignored for win_rate).
    discordance : float, optional
        ``paired_accuracy`` only: the share of pairs on which the two judges disagree (psi).
    prevalence : float, default 0.5
        ``kappa`` only: the share of positive labels.
    units_per_prompt, icc : float
        Prompt clustering: ``deff = 1 + (units_per_prompt - 1) icc``.
    alpha : float, default 0.05
        Two-sided level (one-sided for ``kappa``).

    Returns
    -------
    float

    Notes
    -----
    `z_test_power` at ``n_units / deff`` independent units with the design's moments
    (module docstring); Miller (2024), "Adding error bars to evals", sections 2-5.

    Validated against ``statsmodels.stats.power.normal_power_het`` (all designs), the hand
    formula of Connor (1987) for McNemar, and simulation of each design.

    Examples
    --------
    >>> round(pairwise_power("win_rate", 0.6, 200), 3)
    0.812
    """
    delta, sd0, sd1, alternative = _moments(design, effect, baseline=baseline,
                                            discordance=discordance, prevalence=prevalence)
    if n_units <= 0:
        raise InputError(f"the number of units must be positive, got {n_units}")
    n_ind = n_units / design_effect(units_per_prompt, icc)
    return z_test_power(delta, n_ind, sd0=sd0, sd1=sd1, alpha=alpha, alternative=alternative)


def _plan(design, effect, n_units, baseline, discordance, prevalence, m, icc, alpha):
    delta, _, _, alternative = _moments(design, effect, baseline=baseline,
                                        discordance=discordance, prevalence=prevalence)
    deff = design_effect(m, icc)
    power = pairwise_power(design, effect, n_units, baseline=baseline, discordance=discordance,
                           prevalence=prevalence, units_per_prompt=m, icc=icc, alpha=alpha)
    return PairwisePlan(design, effect, baseline, delta, int(n_units), math.ceil(n_units / m),
                        n_units / deff, deff, power, alpha, alternative, _TESTS[design])


def pairwise_sample_size(design: str, effect: float, *, power: float = 0.8,
                         baseline: float = 0.5, discordance: float | None = None,
                         prevalence: float = 0.5, units_per_prompt: float = 1.0,
                         icc: float = 0.0, alpha: float = 0.05) -> PairwisePlan:
    """The smallest whole number of units reaching `power` (arguments as `pairwise_power`).

    Notes
    -----
    The continuous root ``n*`` of ``power(n) = target`` (Brent's method; for a one-sided
    test ``n* = deff ((z_{1-a} sd0 + z_{1-b} sd1) / delta)^2`` exactly), rounded up;
    prompts = ceil(units / units_per_prompt).

    Validated against statsmodels' ``normal_power_het`` at the returned n (power >= target,
    and < target at n - 1) and against Connor's (1987) McNemar formula.

    Examples
    --------
    >>> pairwise_sample_size("win_rate", 0.6).n_units
    194
    """
    if not 0 < power < 1:
        raise InputError(f"power must be in (0, 1), got {power}")
    delta, *_ = _moments(design, effect, baseline=baseline, discordance=discordance,
                         prevalence=prevalence)
    if delta == 0 or (design == "kappa" and delta < 0):
        raise InputError("no sample size detects a zero (or, for kappa, negative) effect")

    def gap(n: float) -> float:
        return pairwise_power(design, effect, n, baseline=baseline, discordance=discordance,
                              prevalence=prevalence, units_per_prompt=units_per_prompt,
                              icc=icc, alpha=alpha) - power

    hi = 1.0
    while gap(hi) < 0:
        hi *= 2
        if hi > 1e12:
            raise InputError("the effect is too small to reach that power")
    n_star = optimize.brentq(gap, 1e-9, hi, xtol=1e-12) if gap(1e-9) < 0 else 1.0
    n = max(1, math.ceil(n_star - 1e-9))
    return _plan(design, effect, n, baseline, discordance, prevalence, units_per_prompt, icc,
                 alpha)


def minimum_detectable_effect(design: str, n_units: float, *, power: float = 0.8,
                              baseline: float = 0.5, discordance: float | None = None,
                              prevalence: float = 0.5, units_per_prompt: float = 1.0,
                              icc: float = 0.0, alpha: float = 0.05) -> float:
    """The smallest effect above `baseline` detected with `power` by a study of ``n_units``.

    Returns the *value* under the alternative (a win rate, judge A's accuracy, a kappa); the
    detectable difference is it minus the baseline (minus 0.5 for a win rate). For
    ``paired_accuracy`` the discordance rate is held fixed.

    Notes
    -----
    The root in ``effect`` of ``power(effect) = target`` on ``(baseline, upper]`` (Brent).

    Validated by plugging the result back into `pairwise_power` (equal to the target to 1e-9).

    Examples
    --------
    >>> round(minimum_detectable_effect("two_proportions", 2480, baseline=0.73), 4)
    0.7646
    """
    base = 0.5 if design == "win_rate" else baseline
    if design == "paired_accuracy":
        if discordance is None:
            raise InputError("paired_accuracy needs the discordance rate")
        upper = min(1.0, base + discordance) - 1e-12
    else:
        upper = 1.0 - 1e-12 if design != "kappa" else 1.0 - 1e-9

    def gap(effect: float) -> float:
        return pairwise_power(design, effect, n_units, baseline=baseline,
                              discordance=discordance, prevalence=prevalence,
                              units_per_prompt=units_per_prompt, icc=icc, alpha=alpha) - power

    lo = base + 1e-12
    if gap(upper) < 0:
        return math.nan
    return float(optimize.brentq(gap, lo, upper, xtol=1e-14))
