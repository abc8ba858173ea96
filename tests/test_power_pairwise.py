"""Closed-form power of pairwise / judge designs: statsmodels, hand formulas and simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import normal_power_het

from storyeval.exceptions import InputError
from storyeval.power.pairwise import (
    design_effect,
    kappa_sd,
    minimum_detectable_effect,
    pairwise_power,
    pairwise_sample_size,
    strength_to_win_rate,
)

CASES = [  # (design, effect, kwargs, delta, sd0, sd1)
    ("win_rate", 0.58, {}, 0.08, 0.5, math.sqrt(0.58 * 0.42)),
    ("paired_accuracy", 0.78, {"baseline": 0.73, "discordance": 0.2}, 0.05, math.sqrt(0.2),
     math.sqrt(0.2 - 0.05**2)),
    ("two_proportions", 0.78, {"baseline": 0.73}, 0.05, math.sqrt(2 * 0.755 * 0.245),
     math.sqrt(0.78 * 0.22 + 0.73 * 0.27)),
]


@pytest.mark.parametrize("design,effect,kw,delta,sd0,sd1", CASES)
@pytest.mark.parametrize("n", [50, 400, 2480])
def test_power_equals_statsmodels_normal_power_het(design, effect, kw, delta, sd0, sd1, n):
    for m, icc in ((1, 0.0), (5, 0.1)):
        deff = 1 + (m - 1) * icc
        expected = normal_power_het(delta, n / deff, 0.05, std_null=sd0, std_alternative=sd1)
        got = pairwise_power(design, effect, n, units_per_prompt=m, icc=icc, **kw)
        assert got == pytest.approx(expected, abs=1e-9)


def test_kappa_power_equals_statsmodels_one_sided():
    sd0, sd1 = kappa_sd(0.4, 0.3), kappa_sd(0.6, 0.3)
    expected = normal_power_het(0.2, 150, 0.05, std_null=sd0, std_alternative=sd1,
                                alternative="larger")
    got = pairwise_power("kappa", 0.6, 150, baseline=0.4, prevalence=0.3)
    assert got == pytest.approx(expected, abs=1e-9)


def test_kappa_sd_hand_value():
    # Bloch & Kraemer (1989): (1-k)[(1-k)(1-2k) + k(2-k)/(2 pi (1-pi))], k=0.5, pi=0.5
    assert kappa_sd(0.5, 0.5) ** 2 == pytest.approx(0.5 * (0 + 0.75 / 0.5), abs=1e-12)
    assert kappa_sd(0.0, 0.2) == pytest.approx(1.0, abs=1e-12)


def test_mcnemar_sample_size_is_connors_formula():
    # Connor (1987): n = (z_{a/2} sqrt(psi) + z_b sqrt(psi - d^2))^2 / d^2 (one tail)
    psi, d = 0.2, 0.05
    za, zb = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    connor = (za * math.sqrt(psi) + zb * math.sqrt(psi - d**2)) ** 2 / d**2
    plan = pairwise_sample_size("paired_accuracy", 0.78, baseline=0.73, discordance=psi)
    assert plan.n_units == math.ceil(connor)  # the opposite tail adds < 1e-9 power here
    assert plan.power >= 0.8
    below = pairwise_power("paired_accuracy", 0.78, plan.n_units - 1, baseline=0.73,
                           discordance=psi)
    assert below < 0.8


def test_kappa_sample_size_closed_form():
    # one-sided: n = ((z_{1-a} sd0 + z_{1-b} sd1) / delta)^2, exact
    sd0, sd1 = kappa_sd(0.4, 0.5), kappa_sd(0.6, 0.5)
    n_star = ((stats.norm.ppf(0.95) * sd0 + stats.norm.ppf(0.8) * sd1) / 0.2) ** 2
    plan = pairwise_sample_size("kappa", 0.6, baseline=0.4)
    assert plan.n_units == math.ceil(n_star)


def test_clustering_multiplies_units_by_design_effect():
    from scipy.optimize import brentq

    sd1 = math.sqrt(0.6 * 0.4)
    n_star = brentq(lambda n: normal_power_het(0.1, n, 0.05, std_null=0.5,
                                               std_alternative=sd1) - 0.8, 1, 1e4, xtol=1e-12)
    clustered = pairwise_sample_size("win_rate", 0.6, units_per_prompt=10, icc=0.05)
    assert design_effect(10, 0.05) == pytest.approx(1.45, abs=1e-12)
    assert clustered.n_units == math.ceil(1.45 * n_star)
    assert clustered.n_prompts == math.ceil(clustered.n_units / 10)


@pytest.mark.parametrize("design,kw", [
    ("win_rate", {}),
    ("two_proportions", {"baseline": 0.73}),
    ("paired_accuracy", {"baseline": 0.73, "discordance": 0.371}),
    ("kappa", {"baseline": 0.4, "prevalence": 0.3}),
])
def test_mde_gives_target_power(design, kw):
    effect = minimum_detectable_effect(design, 500, **kw)
    assert pairwise_power(design, effect, 500, **kw) == pytest.approx(0.8, abs=1e-9)


def test_litbench_five_points_detectable():
    # LitBench (paper 002): 78% vs 73% on the 2,480-pair test set
    for psi in (0.1, 0.371, 0.49):
        mde = minimum_detectable_effect("paired_accuracy", 2480, baseline=0.73, discordance=psi)
        assert mde - 0.73 < 0.05
    assert minimum_detectable_effect("two_proportions", 2480, baseline=0.73) - 0.73 < 0.05


def test_strength_to_win_rate():
    assert strength_to_win_rate(math.log(3)) == pytest.approx(0.75, abs=1e-15)


def test_bad_input():
    with pytest.raises(InputError, match="discordance"):
        pairwise_power("paired_accuracy", 0.78, 100, baseline=0.73)
    with pytest.raises(InputError, match="discordance must be"):
        pairwise_power("paired_accuracy", 0.78, 100, baseline=0.73, discordance=0.01)
    with pytest.raises(InputError, match="design"):
        pairwise_power("nope", 0.6, 100)
    with pytest.raises(InputError, match="icc"):
        pairwise_power("win_rate", 0.6, 100, units_per_prompt=3, icc=1.5)
    with pytest.raises(InputError, match="zero"):
        pairwise_sample_size("win_rate", 0.5)


# --- independent simulations (Monte Carlo error: 4 standard errors + a 0.015 normal-approx
# allowance)
REPS = 20000


def _close(simulated: float, formula: float) -> None:
    mc_se = math.sqrt(formula * (1 - formula) / REPS)
    assert abs(simulated - formula) < 4 * mc_se + 0.015, (simulated, formula)


def test_simulated_clustered_win_rate():
    rng = np.random.default_rng(0)
    p, m, icc, n_prompts = 0.6, 5, 0.1, 60
    a = p * (1 / icc - 1)
    b = (1 - p) * (1 / icc - 1)  # beta-binomial: ICC = 1 / (a + b + 1)
    wins = rng.binomial(m, rng.beta(a, b, (REPS, n_prompts))).sum(1)
    n = m * n_prompts
    deff = design_effect(m, icc)
    z = (wins / n - 0.5) / (0.5 * math.sqrt(deff / n))
    simulated = float(np.mean(np.abs(z) > stats.norm.ppf(0.975)))
    _close(simulated, pairwise_power("win_rate", p, n, units_per_prompt=m, icc=icc))


def test_simulated_mcnemar():
    rng = np.random.default_rng(1)
    n, p10, p01 = 900, 0.125, 0.075  # psi 0.2, difference 0.05
    counts = rng.multinomial(n, [p10, p01, 1 - p10 - p01], REPS)
    disc = counts[:, 0] + counts[:, 1]
    z = (counts[:, 0] - counts[:, 1]) / np.sqrt(disc)
    simulated = float(np.mean(np.abs(z) > stats.norm.ppf(0.975)))
    _close(simulated, pairwise_power("paired_accuracy", 0.78, n, baseline=0.73,
                                     discordance=0.2))


def test_simulated_two_proportions():
    rng = np.random.default_rng(2)
    n = 1200
    xa, xb = rng.binomial(n, 0.78, REPS), rng.binomial(n, 0.73, REPS)
    pbar = (xa + xb) / (2 * n)
    z = (xa - xb) / n / np.sqrt(2 * pbar * (1 - pbar) / n)
    simulated = float(np.mean(np.abs(z) > stats.norm.ppf(0.975)))
    _close(simulated, pairwise_power("two_proportions", 0.78, n, baseline=0.73))


def test_simulated_kappa():
    rng = np.random.default_rng(3)
    n, k1, k0, pi = 200, 0.6, 0.4, 0.3
    q = pi * (1 - pi)
    probs = [pi**2 + k1 * q, (1 - pi) ** 2 + k1 * q, q * (1 - k1), q * (1 - k1)]
    c = rng.multinomial(n, probs, REPS)
    p_hat = (2 * c[:, 0] + c[:, 2] + c[:, 3]) / (2 * n)
    po = (c[:, 0] + c[:, 1]) / n
    pe = p_hat**2 + (1 - p_hat) ** 2
    kappa = (po - pe) / (1 - pe)
    z = (kappa - k0) / (kappa_sd(k0, pi) / math.sqrt(n))
    simulated = float(np.mean(z > stats.norm.ppf(0.95)))
    _close(simulated, pairwise_power("kappa", k1, n, baseline=k0, prevalence=pi))
