"""Active labelling vs uniform random labelling at equal budget (storyeval.power.active).

Each replication draws a fresh population of N items from a scenario, gives every item a
judge score and an uncertainty, and spends the same expected number of human labels two ways:

- **active**: probabilities proportional to the judge's uncertainty, mixed with 20% uniform
  (`active_probabilities`, ``mix=0.2``), one Bernoulli draw per item (`active_sample`);
- **uniform**: every item the same probability budget / N (the same estimator, so the
  difference is the choice of items only);

and `active_mean`'s 95% interval (tuned lambda) for both. Also the default `ppi_mean` (PPI++
cross-fitted, t) on a uniform sample of exactly ``budget`` items, for reference. Reported per
scenario and budget: mean interval width, its ratio active / uniform, and the coverage of the
scenario's population mean.

Scenarios (the outcome is a human preference 1 / 0, or a mean rating):

- ``calibrated, confident``: win probabilities p ~ Beta(0.6, 0.4) (many near 0 or 1), Y ~
  Bernoulli(p), the judge reports p (calibrated); uncertainty sqrt(p (1 - p));
- ``calibrated, uncertain``: p ~ Beta(20, 20) (all near 0.5), the same judge;
- ``overconfident``: p ~ Beta(0.6, 0.4), the judge reports sigmoid(3 logit(p) + N(0, 1)):
  its uncertainty says little about where it errs;
- ``ratings, disagreement``: human mean rating Y = q + N(0, s_i), judge score = mean of 3
  tries q + N(0, s_i) each, item difficulty s_i log-uniform on [0.1, 2]; uncertainty = sd of
  the 3 tries (`uncertainty_from_votes`).

Usage::

    python benchmarks/bench_active.py --quick        # 300 replications per cell, ~1 min
    python benchmarks/bench_active.py                # 2,000 per cell -> bench_active.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from storyeval.power.active import (  # noqa: E402
    active_probabilities,
    active_rows,
    uncertainty_from_probability,
    uncertainty_from_votes,
)
from storyeval.power.ppi import ppi_mean_many  # noqa: E402

N_ITEMS = 2000
BUDGETS = (100, 200)
MIX = 0.2
Z = 1.959963984540054


def _logit(p):
    return np.log(p) - np.log1p(-p)


def draw(scenario: str, rng: np.random.Generator, r: int, n: int):
    """(Y, judge score, uncertainty, population mean), arrays (r, n)."""
    if scenario.startswith("calibrated") or scenario == "overconfident":
        a, b = (20.0, 20.0) if scenario == "calibrated, uncertain" else (0.6, 0.4)
        p = np.clip(rng.beta(a, b, (r, n)), 1e-6, 1 - 1e-6)
        y = (rng.random((r, n)) < p).astype(float)
        if scenario == "overconfident":
            f = 1 / (1 + np.exp(-(3 * _logit(p) + rng.normal(0, 1, (r, n)))))
        else:
            f = p
        return y, f, uncertainty_from_probability(f.ravel()).reshape(r, n), a / (a + b)
    q = rng.uniform(1, 5, (r, n))
    s = np.exp(rng.uniform(np.log(0.1), np.log(2.0), (r, n)))
    y = q + rng.normal(0, 1, (r, n)) * s
    tries = q[..., None] + rng.normal(0, 1, (r, n, 3)) * s[..., None]
    u = uncertainty_from_votes(tries.reshape(r * n, 3)).reshape(r, n)
    return y, tries.mean(axis=2), u, 3.0


SCENARIOS = ("calibrated, confident", "calibrated, uncertain", "overconfident",
             "ratings, disagreement")


def cell(scenario: str, budget: int, reps: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = {k: {"width": [], "hit": [], "labels": []} for k in ("active", "uniform",
                                                               "ppi_mean uniform")}
    chunk = 250
    for start in range(0, reps, chunk):
        r = min(chunk, reps - start)
        y, f, u, truth = draw(scenario, rng, r, N_ITEMS)
        pi_active = np.stack([active_probabilities(row, budget, mix=MIX) for row in u])
        pi_uniform = np.full_like(pi_active, budget / N_ITEMS)
        for name, pi in (("active", pi_active), ("uniform", pi_uniform)):
            xi = rng.random(pi.shape) < pi
            est, se, _ = active_rows(np.where(xi, y, np.nan), f, pi)
            out[name]["width"].append(2 * Z * se)
            out[name]["hit"].append(np.abs(est - truth) <= Z * se)
            out[name]["labels"].append(xi.sum(axis=1))
        # the default PPI++ on exactly `budget` uniformly chosen items
        order = np.argsort(rng.random((r, N_ITEMS)), axis=1)
        lab = np.zeros((r, N_ITEMS), dtype=bool)
        np.put_along_axis(lab, order[:, :budget], True, axis=1)
        res = ppi_mean_many(np.where(lab, y, np.nan), f, seed=seed)
        out["ppi_mean uniform"]["width"].append((res["high"] - res["low"]).to_numpy())
        out["ppi_mean uniform"]["hit"].append(((res["low"] <= truth)
                                               & (truth <= res["high"])).to_numpy())
        out["ppi_mean uniform"]["labels"].append(np.full(r, budget))
    rows = []
    widths = {k: np.concatenate(v["width"]) for k, v in out.items()}
    for name, v in out.items():
        hit = np.concatenate(v["hit"])
        cov = float(hit.mean())
        rows.append({"scenario": scenario, "budget": budget, "method": name,
                     "reps": reps, "seed": seed, "mean width": float(widths[name].mean()),
                     "width / uniform": float(widths[name].mean() / widths["uniform"].mean()),
                     "coverage": cov, "mc se": math.sqrt(cov * (1 - cov) / reps),
                     "mean labels": float(np.concatenate(v["labels"]).mean())})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="300 replications per cell, "
                        "nothing written")
    parser.add_argument("--reps", type=int, help="replications per cell (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "bench_active.json")
    args = parser.parse_args(argv)
    reps = args.reps or (300 if args.quick else 2000)
    t0 = time.perf_counter()
    rows = []
    for k, scenario in enumerate(SCENARIOS):
        for budget in BUDGETS:
            rows += cell(scenario, budget, reps, args.seed + 1000 * k + budget)
    for r in rows:
        print(f"{r['scenario']:24} {r['budget']:4d} {r['method']:17} width "
              f"{r['mean width']:.4f} ({r['width / uniform']:.3f} of uniform) coverage "
              f"{r['coverage']:.3f} labels {r['mean labels']:.1f}")
    print(f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if not args.quick:
        payload = {"n_items": N_ITEMS, "mix": MIX, "reps": reps, "seed": args.seed,
                   "results": rows}
        args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
