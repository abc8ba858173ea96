"""Coverage of leaderboard intervals in simulation (issue 39): known strengths, prompt-clustered
battles, 10-100 systems.

Design (seeded): S systems with log-strengths ``theta_s = 1.5 * z_s`` (``z`` standard normal),
P prompts; on each prompt every system's strength is shifted by a prompt effect ``u_ps ~ N(0,
tau^2)`` (tau = 0.5: battles of one prompt are correlated), and ``m`` battles of uniformly drawn
pairs are judged under Davidson's model (nu = 0.5) with the shifted strengths. The estimand is
the population Bradley-Terry-Davidson fit: the fit to the expected counts over the prompt
distribution (Gauss-Hermite quadrature over the prompt effects), centred. Per replication:
`storyeval.pairwise.leaderboard.leaderboard_from_counts` with 500 bootstrap resamples of prompts
(and, for contrast, of battles), 95% intervals. Coverage = share of (replication, system) cells
whose interval holds the true value; rank intervals against the true ranks.

    python benchmarks/bench_leaderboard_coverage.py            # about 5 minutes on 2 cores

Writes ``benchmarks/bench_leaderboard_coverage.json`` and
``docs/generated/leaderboards/coverage.md``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from storyeval.pairwise.arena import count_battles, fit_counts  # noqa: E402
from storyeval.pairwise.leaderboard import leaderboard_from_counts  # noqa: E402

NU, TAU, SPREAD = 0.5, 0.5, 1.5
CELLS = [  # systems, prompts, battles per prompt, replications
    (10, 100, 20, 200),
    (30, 200, 40, 100),
    (100, 300, 150, 40),
]


def _probs(d: np.ndarray) -> np.ndarray:
    p = np.stack([np.exp(d / 2), np.exp(-d / 2), np.full(d.shape, NU)], axis=-1)
    return p / p.sum(axis=-1, keepdims=True)


def truth(theta: np.ndarray) -> np.ndarray:
    """Population BT-Davidson estimand: the fit to the expected counts (uniform pairs)."""
    s = len(theta)
    i, j = np.triu_indices(s, 1)
    # the prompt shifts of i and j are independent N(0, tau^2): their difference N(0, 2 tau^2);
    # expectation over it by 60-point Gauss-Hermite quadrature
    x, w = np.polynomial.hermite_e.hermegauss(60)
    e = TAU * np.sqrt(2) * x
    pr = np.einsum("pkc,k->pc", _probs((theta[i] - theta[j])[:, None] + e[None, :]),
                   w / w.sum())
    wins = np.zeros((s, s))
    ties = np.zeros((s, s))
    wins[i, j], wins[j, i] = pr[:, 0], pr[:, 1]
    ties[i, j] = ties[j, i] = pr[:, 2]
    th, *_ = fit_counts(1e6 * wins, 1e6 * ties)
    return th


def simulate(theta, n_prompts, per_prompt, rng):
    s = len(theta)
    n = n_prompts * per_prompt
    prompt = np.repeat(np.arange(n_prompts), per_prompt)
    u = rng.normal(0.0, TAU, size=(n_prompts, s))
    a = rng.integers(0, s, n)
    b = (a + rng.integers(1, s, n)) % s
    d = theta[a] + u[prompt, a] - theta[b] - u[prompt, b]
    p = _probs(d)
    x = rng.random(n)
    out = (x > p[:, 0]).astype(int) + (x > p[:, 0] + p[:, 1])
    return a, b, out, prompt


def run_cell(s, n_prompts, per_prompt, reps, seed=0):
    rng = np.random.default_rng(seed + s)
    theta = SPREAD * rng.normal(size=s)
    true = truth(theta)
    true_rank = (-true).argsort().argsort() + 1
    items = [f"s{k:03d}" for k in range(s)]
    res = {}
    for unit in ("prompt", "battle"):
        hit = hit_rank = 0
        width = []
        for r in range(reps):
            a, b, out, prompt = simulate(theta, n_prompts, per_prompt,
                                         np.random.default_rng([seed, s, r]))
            c = count_battles(a, b, out, s, cluster=prompt if unit == "prompt" else None)
            board = leaderboard_from_counts(c, items, n_resamples=500, random_state=r,
                                            tests=False)
            tab = board.table.set_index("item").loc[items]
            lo, hi = tab["ci_low"].to_numpy(), tab["ci_high"].to_numpy()
            hit += int(((lo <= true) & (true <= hi)).sum())
            rl = tab["rank_ci_low"].to_numpy(float)
            rh = tab["rank_ci_high"].to_numpy(float)
            hit_rank += int(((rl <= true_rank) & (true_rank <= rh)).sum())
            width.append(float(np.mean(hi - lo)))
        res[unit] = {"strength_coverage": hit / (reps * s),
                     "rank_coverage": hit_rank / (reps * s),
                     "mean_width": float(np.mean(width))}
    return res


def main() -> None:
    rows = []
    for s, n_prompts, per_prompt, reps in CELLS:
        t0 = time.perf_counter()
        res = run_cell(s, n_prompts, per_prompt, reps)
        for unit, r in res.items():
            rows.append({"systems": s, "prompts": n_prompts, "battles": n_prompts * per_prompt,
                         "replications": reps, "resample": unit, **r,
                         "seconds": time.perf_counter() - t0})
            print(json.dumps(rows[-1]), flush=True)
    lines = ["| systems | prompts | battles | replications | bootstrap unit | strength interval "
             "coverage | rank interval coverage | mean width (log-strength) | >= 0.93 |",
             "| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        ok = r["strength_coverage"] >= 0.93 and r["rank_coverage"] >= 0.93
        lines.append(f"| {r['systems']} | {r['prompts']} | {r['battles']:,} | "
                     f"{r['replications']} | {r['resample']} | {r['strength_coverage']:.3f} | "
                     f"{r['rank_coverage']:.3f} | {r['mean_width']:.3f} | "
                     f"{'yes' if ok else 'NO'} |")
    table = "\n".join(lines) + "\n"
    print(table)
    (ROOT / "benchmarks" / "bench_leaderboard_coverage.json").write_text(
        json.dumps(rows, indent=1))
    (ROOT / "docs" / "generated" / "leaderboards" / "coverage.md").write_text(table)


if __name__ == "__main__":
    main()
