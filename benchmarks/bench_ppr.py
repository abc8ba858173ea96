"""Coverage of prediction-powered rank-sets and strengths with few human labels (issue 51).

Simulation: k systems answer every prompt; every pair of systems is compared once per prompt
(k (k - 1) / 2 comparisons per prompt). On prompt p, system m has strength ``s_m + u_pm``
(``u ~ N(0, prompt_sd^2)``: comparisons of one prompt are correlated) and the human verdict is
a Bernoulli draw with ``P(a wins) = sigmoid(s_a + u_pa - s_b - u_pb)``. The judge copies the
human verdict with probability ``agree`` and otherwise draws its own verdict from strengths
``s + bias`` (it favours the weakest system: ``bias`` is ``judge_bias`` = 1.5 on it, 0 on the
others). Humans label a uniformly random ``share`` of the comparisons (5% by default).

Truths: the human win rate ``theta_m = mean_j E[sigmoid(...)]`` (Gauss-Hermite over the prompt
effect) and the population Bradley-Terry strengths (the logistic fit to those expected
probabilities, centred). A replication covers when every system's rank-set holds its true
rank (simultaneous coverage, the stated level); per-system intervals are counted one by one.

Methods: `ppr_win_rates` (defaults: per-model scaling, prompt clusters; and the published
code's choices ``scaling="total", cluster="comparison"``), the human-only rank-sets, and
`ppi_logistic_bt` (strengths: the cluster-robust sandwich, ppi-python's variance, and on the
studies of 300 prompts the prompt bootstrap with 200 resamples at the estimate's lambda).

Run: ``python benchmarks/bench_ppr.py [--quick] [--reps 150]`` (about 10 minutes on a busy 2-core machine); writes
``benchmarks/bench_ppr.json`` (``--quick``: a small grid, not written unless ``--out``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from storyeval.pairwise.ppi_strengths import ppi_logistic_bt
from storyeval.pairwise.ppr import ComparisonUnits, ppr_win_rates, rank_sets

OUT = Path(__file__).with_suffix(".json")
SHOWN = ("ppr", "ppr_published", "human", "judge", "bt_prompt", "bt_comparison", "bt_bootstrap")


def truths(strength: np.ndarray, prompt_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """(win rates, centred BT strengths) of the human population."""
    from storyeval.pairwise.arena import fit_counts

    x, w = np.polynomial.hermite_e.hermegauss(61)
    w = w / w.sum()
    diff = strength[:, None] - strength[None, :]
    sd = np.sqrt(2.0) * prompt_sd
    p = (w[None, None, :] / (1 + np.exp(-(diff[:, :, None] + sd * x[None, None, :])))).sum(-1)
    np.fill_diagonal(p, 0.0)
    k = len(strength)
    win = p.sum(axis=1) / (k - 1)
    theta = fit_counts(p * 1000.0, np.zeros((k, k)), ties_model="drop", regularization=0.0)[0]
    return win, theta - theta.mean()


def simulate(k: int = 6, n_prompts: int = 300, share: float = 0.05, *, agree: float = 0.7,
             prompt_sd: float = 0.5, spread: float = 1.0, judge_bias: float = 1.5,
             seed: int = 0
             ) -> tuple[ComparisonUnits, np.ndarray, np.ndarray]:
    """(units, true win rates, true centred strengths) of one simulated study."""
    rng = np.random.default_rng(seed)
    s = np.linspace(spread / 2, -spread / 2, k)
    bias = np.zeros(k)
    bias[-1] = judge_bias
    ia, ib = np.triu_indices(k, 1)
    pairs = len(ia)
    a, b = np.tile(ia, n_prompts), np.tile(ib, n_prompts)
    prompt = np.repeat(np.arange(n_prompts), pairs)
    u = rng.normal(0.0, prompt_sd, (n_prompts, k))
    eta = s[a] + u[prompt, a] - s[b] - u[prompt, b]
    human = (rng.random(len(a)) < 1 / (1 + np.exp(-eta))).astype(float)
    own = (rng.random(len(a)) < 1 / (1 + np.exp(-(eta + bias[a] - bias[b])))).astype(float)
    judge = np.where(rng.random(len(a)) < agree, human, own)
    m = len(a)
    lab = np.zeros(m, bool)
    lab[rng.choice(m, max(2, round(share * m)), replace=False)] = True
    onehot = np.stack([judge, 1 - judge, np.zeros(m)], axis=1)
    hum = np.where(lab[:, None], np.stack([human, 1 - human, np.zeros(m)], axis=1), np.nan)
    units = ComparisonUnits([f"S{i}" for i in range(k)], a, b, onehot, hum, prompt,
                            lab.astype(np.int64), np.ones(m, np.int64), "sim")
    win, theta = truths(s, prompt_sd)
    return units, win, theta


def _rank(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(-x, method="min").astype(np.int64)


def one(units: ComparisonUnits, win: np.ndarray, theta: np.ndarray, level: float,
        bootstrap: int = 0) -> dict:
    """Coverage indicators and widths of every method on one study (``bootstrap`` > 0: also
    the strengths' prompt bootstrap with that many resamples, seed 0)."""
    k = len(units.items)
    true_w, true_t = _rank(win), _rank(theta)
    out: dict = {}
    for name, opts in (("ppr", {}), ("ppr_published", {"scaling": "total",
                                                       "cluster": "comparison"}),
                       ("human", {"method": "human"}), ("judge", {"method": "judge"})):
        est, cov, lam = ppr_win_rates(units, **opts)
        low, high = rank_sets(est, cov, confidence_level=level)
        out[name] = {"cover": bool(np.all((low <= true_w) & (true_w <= high))),
                     "size": float(np.mean(high - low + 1)), "lam": lam}
    y = np.where(units.labelled, units.human[:, 0], np.nan)
    f = units.judge[:, 0]
    z = None
    methods: list[tuple[str, dict]] = [("bt_prompt", {"cluster": units.prompt}),
                                       ("bt_comparison", {}),
                                       ("bt_human", {"cluster": units.prompt, "lam": 0.0})]
    if bootstrap:
        methods.append(("bt_bootstrap", {"cluster": units.prompt, "n_resamples": bootstrap}))
    for name, opts in methods:
        r = ppi_logistic_bt(units.a, units.b, y, f, k, confidence_level=level, **opts)
        low, high = rank_sets(r.estimate, r.covariance, confidence_level=level, df=k - 1)
        inside = (r.low <= theta) & (theta <= r.high)
        out[name] = {"cover": bool(np.all((low <= true_t) & (true_t <= high))),
                     "size": float(np.mean(high - low + 1)), "lam": r.lam,
                     "ci_cover": float(inside.mean()), "se": float(np.mean(r.se))}
        if name == "bt_human":
            z = r
    for name in [m for m, _ in methods if m != "bt_human"]:
        out[name]["width_ratio"] = out[name]["se"] / z.se.mean() if z is not None else np.nan
    return out


def run_cell(k: int, n_prompts: int, share: float, agree: float, reps: int, level: float,
             seed0: int) -> dict:
    boot = 200 if n_prompts <= 300 else 0  # the bootstrap refits: the smaller studies only
    rows = [one(*simulate(k, n_prompts, share, agree=agree, seed=seed0 + r), level, boot)
            for r in range(reps)]
    cell: dict = {"k": k, "n_prompts": n_prompts, "share": share, "agree": agree,
                  "comparisons": n_prompts * k * (k - 1) // 2, "reps": reps, "level": level}
    for method in rows[0]:
        vals = {key: float(np.mean([r[method][key] for r in rows])) for key in rows[0][method]}
        cover = vals.pop("cover")
        cell[method] = {"coverage": cover, "mc_se": float(np.sqrt(cover * (1 - cover) / reps)),
                        **vals}
    return cell


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a small grid (about 20 s)")
    p.add_argument("--reps", type=int, default=150)
    p.add_argument("--level", type=float, default=0.90)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.quick:
        grid = [(6, 300, 0.05, 0.7)]
        reps = min(args.reps, 60)
    else:
        grid = [(k, n_p, share, 0.7) for k in (6, 10) for n_p in (300, 1500)
                for share in (0.05, 0.2)]
        reps = args.reps
    start = time.perf_counter()
    cells = []
    for i, (k, n_p, share, agree) in enumerate(grid):
        cell = run_cell(k, n_p, share, agree, reps, args.level, args.seed + 100_000 * i)
        cells.append(cell)
        print(f"k={k} prompts={n_p} share={share} agree={agree}: " + ", ".join(
            f"{m} {cell[m]['coverage']:.3f} (size {cell[m]['size']:.2f})" for m in SHOWN
            if m in cell),
              flush=True)
    result = {"level": args.level, "reps": reps, "seed": args.seed, "cells": cells,
              "seconds": round(time.perf_counter() - start, 1),
              "command": "python benchmarks/bench_ppr.py" + (" --quick" if args.quick else "")}
    out = args.out if args.out is not None else (None if args.quick else OUT)
    if out is not None:
        out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
