"""Synthetic ratings and verdicts with planted biases and known truths, for the calibration
benchmark (``benchmarks/bench_bias.py``), the docs and the tests.

Design (prompt-clustered; the systems are a fixed set, the prompts a random sample):
system quality ``mu_s`` evenly spaced in [-0.6, 0.6]; story quality
``q = mu_s + pi_p + e_sp`` (``pi_p ~ N(0, 0.5^2)`` the prompt's difficulty, ``e ~ N(0,
0.6^2)``); story length standardised ``z_sp ~ N(0, 1)``, independent of quality (reported as
``round(600 + 150 z)`` words).

* Ratings (`simulate_ratings`): human score ``3 + q + h_p + N(0, 0.5^2)``, rater k's
  ``3 + q + offset_k + delta 1[s owned by k] + beta z + r_kp + N(0, 0.6^2)`` (``h_p, r_kp ~
  N(0, 0.3^2)``: a prompt shifts everybody's scores of its stories). Truths: self-preference
  ``delta`` (against the humans, or against another rater that owns another system), offset
  ``offset_k + delta / S``, residual-length correlation `residual_length_truth`.
* Verdicts (`simulate_verdicts`): on every pair of stories of a prompt, an ordered logit with
  ties: ``eta = 1.5 (q_a - q_b) + lambda (z_a - z_b) + delta (own_a - own_b) + gamma (first_a -
  first_b) / 2``; P(a) = sigmoid(eta - tau), P(b) = sigmoid(-eta - tau), tie otherwise
  (``tau = 0.4``); the judge sees each pair in both orders (or one random order), the humans
  once in a random order with lambda = delta = gamma = 0. Truths (`verdict_truths`) are the
  population values of the estimands, from the model's probabilities averaged over many
  simulated prompts.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["rating_arrays", "residual_length_truth", "simulate_ratings", "simulate_verdicts",
           "verdict_arrays", "verdict_truths"]

PROMPT_SD, STORY_SD, HUMAN_SD, RATER_SD, SHIFT_SD = 0.5, 0.6, 0.5, 0.6, 0.3
SCALE, TAU = 1.5, 0.4


def _system_means(n_systems: int) -> np.ndarray:
    return np.linspace(-0.6, 0.6, n_systems)


def _stories(n_systems: int, n_prompts: int, rng: np.random.Generator):
    mu = _system_means(n_systems)
    pi = rng.normal(0, PROMPT_SD, n_prompts)
    q = mu[None, :] + pi[:, None] + rng.normal(0, STORY_SD, (n_prompts, n_systems))
    z = rng.normal(0, 1, (n_prompts, n_systems))
    return q, z


def simulate_ratings(n_systems: int = 8, n_prompts: int = 40, *,
                     raters: Mapping[str, int] | None = None,
                     self_preference: float | Mapping[str, float] = 0.0,
                     length_effect: float = 0.0, offset: float = 0.0,
                     seed: int | np.random.Generator | None = 0) -> pd.DataFrame:
    """A wide score table: ``human``, one column per rater, ``length`` (words).

    ``raters`` maps a rater name to the index of the system it owns (default ``{"Judge-A":
    n_systems // 2, "Judge-B": n_systems // 2 + 1}``); systems are named ``sys-0`` ... Index
    ``(system, prompt_id)``. ``self_preference``: one value for every rater, or one per rater
    (a rater left out has none).
    """
    raters = dict(raters) if raters is not None else {"Judge-A": n_systems // 2,
                                                      "Judge-B": n_systems // 2 + 1}
    cols = rating_arrays(n_systems, n_prompts, np.random.default_rng(seed), raters=raters,
                         self_preference=self_preference, length_effect=length_effect,
                         offset=offset)
    index = pd.MultiIndex.from_product([[f"sys-{s}" for s in range(n_systems)],
                                        range(n_prompts)], names=["system", "prompt_id"])
    return pd.DataFrame({k: v.T.ravel() for k, v in cols.items()}, index=index)


def rating_arrays(n_systems: int, n_prompts: int, rng: np.random.Generator, *,
                  raters: Mapping[str, int], self_preference: float | Mapping[str, float] = 0.0,
                  length_effect: float = 0.0, offset: float = 0.0) -> dict[str, np.ndarray]:
    """The arrays behind `simulate_ratings`: ``human``, one per rater and ``length``, each of
    shape (prompts, systems), drawn from ``rng`` in the order `simulate_ratings` draws them."""
    q, z = _stories(n_systems, n_prompts, rng)
    cols = {"human": 3 + q + rng.normal(0, SHIFT_SD, (n_prompts, 1))
            + rng.normal(0, HUMAN_SD, q.shape)}
    for name, own in raters.items():
        mine = np.zeros(n_systems)
        mine[own] = 1.0
        delta = (self_preference.get(name, 0.0) if isinstance(self_preference, Mapping)
                 else self_preference)
        cols[name] = (3 + q + offset + delta * mine[None, :] + length_effect * z
                      + rng.normal(0, SHIFT_SD, (n_prompts, 1))
                      + rng.normal(0, RATER_SD, q.shape))
    cols["length"] = np.round(600 + 150 * z)
    return cols


def residual_length_truth(n_systems: int, self_preference: float, length_effect: float,
                          length_sd: float = 150.0) -> float:
    """Population Pearson r of (rater - human) with the reported length, one rater owning one
    system (the length is rounded to words: its variance gains 1/12 word^2)."""
    p = 1.0 / n_systems
    var_resid = (length_effect**2 + RATER_SD**2 + HUMAN_SD**2 + 2 * SHIFT_SD**2
                 + self_preference**2 * p * (1 - p))
    cov = length_effect * length_sd
    return float(cov / np.sqrt(var_resid * (length_sd**2 + 1 / 12)))


def _probs(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pa = 1 / (1 + np.exp(-(eta - TAU)))
    pb = 1 / (1 + np.exp(eta + TAU))
    return pa, pb


def _pair_index(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(n_systems, k=1)


def _eta(q, z, ia, ib, own, length_bias, self_preference):
    return (SCALE * (q[:, ia] - q[:, ib]) + length_bias * (z[:, ia] - z[:, ib])
            + self_preference * (own[ia] - own[ib])[None, :])


def simulate_verdicts(n_systems: int = 8, n_prompts: int = 40, *, own: int | None = None,
                      self_preference: float = 0.0, length_bias: float = 0.0,
                      position_bias: float = 0.0, both_orders: bool = True,
                      judge: str = "Judge-A", seed: int | np.random.Generator | None = 0
                      ) -> tuple[pd.DataFrame, pd.DataFrame, pd.Series]:
    """(judge verdicts, human verdicts, story lengths) on every pair of every prompt.

    ``own`` is the index of the judge's own system (default ``n_systems // 2``). Verdict
    tables as `storyeval.pairwise.verdicts` (story ids ``sys-S/P``); lengths a Series by
    story id.
    """
    arr = verdict_arrays(n_systems, n_prompts, np.random.default_rng(seed), own=own,
                         self_preference=self_preference, length_bias=length_bias,
                         position_bias=position_bias, both_orders=both_orders)
    ia, ib = arr["pairs"]
    frames = [_frame(outcome, first, ia, ib, n_prompts, judge)
              for outcome, first in zip(arr["judge_outcome"], arr["judge_first"])]
    human = _frame(arr["human_outcome"], arr["human_first"], ia, ib, n_prompts, "human")
    story = [f"sys-{s}/{p}" for s in range(n_systems) for p in range(n_prompts)]
    lengths = pd.Series(arr["length"].T.ravel(), index=story)
    return pd.concat(frames, ignore_index=True), human, lengths


def verdict_arrays(n_systems: int, n_prompts: int, rng: np.random.Generator, *,
                   own: int | None = None, self_preference: float = 0.0,
                   length_bias: float = 0.0, position_bias: float = 0.0,
                   both_orders: bool = True) -> dict:
    """The arrays behind `simulate_verdicts`, drawn from ``rng`` in its order.

    Returns
    -------
    dict
        ``pairs`` (ia, ib: the systems of stories a and b of every pair, ia < ib);
        ``judge_outcome`` and ``judge_first``: one (prompts, pairs) array per presentation
        (a shown first, then b first; or one random order), outcome +1 a won, -1 b won, 0 a
        tie, first True when a was shown first; ``human_outcome``, ``human_first``; ``length``
        (prompts, systems) in words.
    """
    own = n_systems // 2 if own is None else own
    q, z = _stories(n_systems, n_prompts, rng)
    ia, ib = _pair_index(n_systems)
    mine = np.zeros(n_systems)
    mine[own] = 1.0
    base = _eta(q, z, ia, ib, mine, length_bias, self_preference)
    outcomes, firsts = [], []
    orders = [True, False] if both_orders else [None]
    for a_first in orders:
        first = (rng.random(base.shape) < 0.5) if a_first is None else np.full(base.shape,
                                                                               a_first)
        eta = base + position_bias * np.where(first, 0.5, -0.5)
        outcomes.append(_draw(eta, rng))
        firsts.append(first)
    human_first = rng.random(base.shape) < 0.5
    human = _draw(SCALE * (q[:, ia] - q[:, ib]), rng)
    return {"pairs": (ia, ib), "judge_outcome": outcomes, "judge_first": firsts,
            "human_outcome": human, "human_first": human_first,
            "length": np.round(600 + 150 * z)}


def _draw(eta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """+1 (a wins), -1 (b wins) or 0 (tie) under the ordered logit of ``eta``."""
    pa, pb = _probs(eta)
    u = rng.random(eta.shape)
    return np.where(u < pa, 1, np.where(u < pa + pb, -1, 0))


def _frame(outcome, first, ia, ib, n_prompts, judge) -> pd.DataFrame:
    verdict = np.where(outcome == 1, "A", np.where(outcome == -1, "B", "same"))
    prompt = np.repeat(np.arange(n_prompts), len(ia))
    sa, sb = np.tile(ia, n_prompts), np.tile(ib, n_prompts)
    pid = prompt.astype(str)
    return pd.DataFrame({
        "prompt_id": prompt, "story_a": np.char.add(np.char.add("sys-", sa.astype(str)),
                                                    np.char.add("/", pid)),
        "story_b": np.char.add(np.char.add("sys-", sb.astype(str)), np.char.add("/", pid)),
        "dimension": "Overall", "verdict": verdict.ravel(),
        "order": np.where(first.ravel(), "AB", "BA"), "judge": judge,
        "system_a": np.char.add("sys-", sa.astype(str)),
        "system_b": np.char.add("sys-", sb.astype(str))})


def verdict_truths(n_systems: int = 8, *, own: int | None = None, self_preference: float = 0.0,
                   length_bias: float = 0.0, position_bias: float = 0.0,
                   n_prompts: int = 200_000, seed: int = 12345) -> dict[str, float]:
    """Population values of the pairwise estimands under `simulate_verdicts`' model (judge in
    both orders): ``P(prefer longer)``, ``first-position rate``, ``net position flips``,
    ``self-preference`` (against the humans), from the model's probabilities averaged over
    ``n_prompts`` simulated prompts (Monte Carlo error about 1e-4)."""
    rng = np.random.default_rng(seed)
    own = n_systems // 2 if own is None else own
    q, z = _stories(n_systems, n_prompts, rng)
    ia, ib = _pair_index(n_systems)
    mine = np.zeros(n_systems)
    mine[own] = 1.0
    base = _eta(q, z, ia, ib, mine, length_bias, self_preference)
    pa1, pb1 = _probs(base + position_bias / 2)   # a shown first
    pa2, pb2 = _probs(base - position_bias / 2)   # b shown first
    words = np.round(600 + 150 * z)
    la = np.sign(words[:, ia] - words[:, ib])      # +1: a is longer, 0: equal lengths
    decided = (pa1 + pb1 + pa2 + pb2)
    longer = np.where(la > 0, pa1 + pa2, pb1 + pb2) * (la != 0)
    first = pa1 + pb2
    net = pa1 * pb2 - pb1 * pa2
    hpa, hpb = _probs(SCALE * (q[:, ia] - q[:, ib]))
    pair_own = (mine[ia] + mine[ib]) > 0
    sign = np.where(mine[ia] > 0, 1.0, -1.0)[None, pair_own]
    w_judge = ((pa1 - pb1) + (pa2 - pb2))[:, pair_own] / 2
    w_human = (hpa - hpb)[:, pair_own]
    return {"P(prefer longer)": float(longer.sum() / (decided * (la != 0)).sum()),
            "first-position rate": float(first.sum() / decided.sum()),
            "net position flips": float(net.mean()),
            "self-preference": float(np.mean(sign * (w_judge - w_human)) / 2)}
