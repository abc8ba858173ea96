"""How often the judge report's verdict rule lets a bad judge pass, and how often a good one.

A judge "replaces the annotators" when it passes the alternative-annotator test
(`storyeval.compare.alt_test`). Its error rates depend on the design (items, annotators) and on
how good the judge is, so they are measured by simulation on Likert ratings like HANNA's: a
story's latent quality ``z ~ N(0, 1)``; each annotator rates ``clip(round(3 + z + e), 1, 5)``
with ``e ~ N(0, annotator_noise^2)``; the judge gives the continuous ``3 + z + judge_noise u``
(``u ~ N(0, 1)``, a mean of several tries is continuous too). The judge's noise is calibrated
so that its expected paired difference ``E[d] = P(annotator at least as good) - P(judge at
least as good)`` equals a target *gap*: ``gap = epsilon`` is the boundary of the alt-test's
null hypothesis (a judge worse than the annotators by exactly epsilon), where its false-pass
rate is largest; ``gap = 0`` is a judge as good as an annotator (power).
"""

from __future__ import annotations

import numpy as np

from storyeval.compare.alt_test import paired_differences, winning_rates
from storyeval.exceptions import InputError

__all__ = ["calibrate_judge_noise", "expected_gap", "simulate_pass_rate", "simulated_ratings"]


def simulated_ratings(n_datasets: int, n_items: int, n_annotators: int, judge_noise: float, *,
                      annotator_noise: float = 1.0, rng: np.random.Generator,
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Judge ratings (n_datasets, n_items) and annotator ratings (n_datasets, n_items,
    n_annotators) from the model of the module docstring.

    Examples
    --------
    >>> judge, humans = simulated_ratings(2, 50, 3, 0.8, rng=np.random.default_rng(0))
    >>> judge.shape, humans.shape, float(humans.min()) >= 1, float(humans.max()) <= 5
    ((2, 50), (2, 50, 3), True, True)
    """
    z = rng.standard_normal((n_datasets, n_items))
    humans = np.clip(np.round(3.0 + z[..., None] + annotator_noise
                              * rng.standard_normal((n_datasets, n_items, n_annotators))), 1, 5)
    judge = 3.0 + z + judge_noise * rng.standard_normal((n_datasets, n_items))
    return judge, humans


def expected_gap(judge_noise: float, *, n_annotators: int = 3, annotator_noise: float = 1.0,
                 n_items: int = 200_000, seed: int = 12345) -> float:
    """Monte Carlo ``E[d]`` of a judge with this noise (common random numbers: the same
    ``seed`` gives a smooth function of ``judge_noise``)."""
    judge, humans = simulated_ratings(1, n_items, n_annotators, judge_noise,
                                      annotator_noise=annotator_noise,
                                      rng=np.random.default_rng(seed))
    return float(paired_differences(judge, humans).mean())


def calibrate_judge_noise(gap: float, *, n_annotators: int = 3, annotator_noise: float = 1.0,
                          tol: float = 1e-4, n_items: int = 200_000) -> float:
    """The judge noise whose expected gap is ``gap`` (bisection on `expected_gap` with
    ``n_items`` simulated items)."""
    def gap_at(noise: float) -> float:
        return expected_gap(noise, n_annotators=n_annotators, annotator_noise=annotator_noise,
                            n_items=n_items)

    lo, hi = 0.0, 20.0
    if not gap_at(lo) <= gap <= gap_at(hi):
        raise InputError(f"calibrate_judge_noise: no judge of this model has gap {gap!r}")
    while hi - lo > tol:
        mid = (lo + hi) / 2
        if gap_at(mid) < gap:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def simulate_pass_rate(n_items: int, *, gap: float, epsilon: float = 0.2, q: float = 0.05,
                       n_annotators: int = 3, annotator_noise: float = 1.0,
                       n_datasets: int = 2000, seed: int = 0, chunk: int = 250,
                       judge_noise: float | None = None) -> dict:
    """Share of simulated datasets on which the alt-test passes (winning rate >= 0.5).

    Parameters
    ----------
    n_items, n_annotators : int
        The design (every annotator rates every item).
    gap : float
        The judge's expected paired difference (`expected_gap`): ``epsilon`` at the null's
        boundary (the false-pass rate), 0 for a judge as good as an annotator (power).
    epsilon, q : float
        Of the alt-test.
    n_datasets : int, default 2000
    seed : int, default 0
    judge_noise : float, optional
        The calibrated noise of ``gap`` when already known (`calibrate_judge_noise`).

    Returns
    -------
    dict
        ``pass_rate``, its Monte Carlo standard error ``mc_se``, ``judge_noise`` and the inputs.
    """
    noise = judge_noise if judge_noise is not None else calibrate_judge_noise(
        gap, n_annotators=n_annotators, annotator_noise=annotator_noise)
    rng = np.random.default_rng(seed)
    passed = 0
    for start in range(0, n_datasets, chunk):
        size = min(chunk, n_datasets - start)
        judge, humans = simulated_ratings(size, n_items, n_annotators, noise,
                                          annotator_noise=annotator_noise, rng=rng)
        rates = winning_rates(paired_differences(judge, humans), epsilon=epsilon, q=q)
        passed += int((rates >= 0.5).sum())
    rate = passed / n_datasets
    return {"n_items": n_items, "n_annotators": n_annotators, "gap": gap, "epsilon": epsilon,
            "q": q, "annotator_noise": annotator_noise, "judge_noise": noise,
            "n_datasets": n_datasets, "seed": seed, "pass_rate": rate,
            "mc_se": float(np.sqrt(rate * (1 - rate) / n_datasets))}
