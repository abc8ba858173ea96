"""Level and coverage of the judge-bias tests and intervals of `storyeval.bias` (issue 38).

Synthetic prompt-clustered data from `storyeval.bias.simulate` (fixed systems, random prompts;
a prompt shifts every score of its stories and its stories share their qualities across the
pairs): ratings of two raters owning one system each plus human scores, and verdicts of a judge
in both presentation orders plus one human verdict per pair. For each design cell (systems x
prompts) and replication:

* under no bias (self-preference 0, length effect 0, position effect 0, offset 0): the share of
  two-sided tests rejecting at 0.05 (the level; a calibrated test holds about 0.05, here
  between 0.035 and 0.065 with 1,000 data sets);
* with planted biases: the share of 95% intervals holding the true value (coverage), the truth
  being the population value of the estimand under the simulation's model
  (`storyeval.bias.simulate.verdict_truths` and the closed forms of the rating model).

Every estimate comes from the public functions: `self_preference`, `leniency`,
`residual_length_correlation`, `pairwise_self_preference`, `length_preference`,
`position_bias`.

    python benchmarks/bench_bias.py              # 1,000 data sets per cell and scenario
    python benchmarks/bench_bias.py --reps 50    # a quick look
    python benchmarks/bench_bias.py --data ratings   # rerun one kind, keep the other's rows

About 2 minutes for the ratings and 25 for the verdicts on one core.

Writes ``benchmarks/bench_bias.json`` (read by ``docs/gen_bias.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from storyeval.bias import (  # noqa: E402
    length_preference,
    leniency,
    pairwise_self_preference,
    position_bias,
    residual_length_correlation,
    self_preference,
)
from storyeval.bias import simulate as sim  # noqa: E402

CELLS = [(5, 20), (10, 20), (5, 100), (10, 100)]
RATINGS_PLANTED = {"self_preference": 0.5, "length_effect": 0.3, "offset": 0.3}
VERDICTS_PLANTED = {"self_preference": 0.6, "length_bias": 0.5, "position_bias": 0.5}
OUT = ROOT / "benchmarks" / "bench_bias.json"


def _folded_mean(mean: float, sd: float) -> float:
    """E|X| for X ~ N(mean, sd^2)."""
    return float(sd * np.sqrt(2 / np.pi) * np.exp(-mean**2 / (2 * sd**2))
                 + mean * (1 - 2 * stats.norm.cdf(-mean / sd)))


def rating_truths(n_systems: int, planted: dict) -> dict[str, float]:
    d, b, o = planted["self_preference"], planted["length_effect"], planted["offset"]
    sd = np.sqrt(b**2 + sim.RATER_SD**2 + sim.HUMAN_SD**2 + 2 * sim.SHIFT_SD**2)
    p = 1 / n_systems
    return {"self-preference vs humans": d, "self-preference vs other rater": d,
            "offset": o + d * p,
            "MAE": p * _folded_mean(o + d, sd) + (1 - p) * _folded_mean(o, sd),
            "r(residual, length)": sim.residual_length_truth(n_systems, d, b)}


def rating_rows(n_systems: int, n_prompts: int, seed: int, planted: dict) -> dict:
    own = {"Judge-A": f"sys-{n_systems // 2}", "Judge-B": f"sys-{n_systems // 2 + 1}"}
    wide = sim.simulate_ratings(n_systems, n_prompts, seed=seed, **planted)
    vs_h = self_preference(wide, own, reference="human").iloc[0]
    vs_o = self_preference(wide, own, reference={"Judge-A": "Judge-B",
                                                 "Judge-B": "Judge-A"}).iloc[0]
    len_ = leniency(wide, [("Judge-A", "human")]).set_index("estimand")
    res = residual_length_correlation(wide, "Judge-A", "human", "length")
    rows = {"self-preference vs humans": vs_h, "self-preference vs other rater": vs_o,
            "offset": len_.loc["offset"], "MAE": len_.loc["MAE"], "r(residual, length)": res}
    return {k: (float(v["estimate"]), float(v["ci_low"]), float(v["ci_high"]),
                float(v["pvalue"])) for k, v in rows.items()}


def verdict_rows(n_systems: int, n_prompts: int, seed: int, planted: dict) -> dict:
    jv, hv, lengths = sim.simulate_verdicts(n_systems, n_prompts, seed=seed, **planted)
    own = {"Judge-A": f"sys-{n_systems // 2}"}
    sp = pairwise_self_preference(jv, own, reference=hv).iloc[0]
    lp = length_preference(jv, lengths, reference=hv).set_index("estimand")
    pb = position_bias(jv).set_index("estimand")
    rows = {"self-preference (pairwise)": sp, "P(prefer longer)": lp.loc["P(prefer longer)"],
            "P(prefer longer) - humans": lp.loc["difference"],
            "first-position rate": pb.loc["first-position rate"],
            "net position flips": pb.loc["net position flips"]}
    return {k: (float(v["estimate"]), float(v["ci_low"]), float(v["ci_high"]),
                float(v["pvalue"])) for k, v in rows.items()}


def verdict_truth(n_systems: int, planted: dict) -> dict[str, float]:
    t = sim.verdict_truths(n_systems, **planted)
    return {"self-preference (pairwise)": t["self-preference"],
            "P(prefer longer)": t["P(prefer longer)"],
            "P(prefer longer) - humans": t["P(prefer longer)"] - 0.5,
            "first-position rate": t["first-position rate"],
            "net position flips": t["net position flips"]}


NULLS = {"P(prefer longer)": 0.5, "first-position rate": 0.5}


def run_cell(kind: str, n_systems: int, n_prompts: int, reps: int) -> list[dict]:
    fn = rating_rows if kind == "ratings" else verdict_rows
    planted = RATINGS_PLANTED if kind == "ratings" else VERDICTS_PLANTED
    zero = dict.fromkeys(planted, 0.0)
    truth = (rating_truths if kind == "ratings" else verdict_truth)(n_systems, planted)
    null_rows, cov_rows = [], []
    for r in range(reps):
        null_rows.append(fn(n_systems, n_prompts, 10_000 + r, zero))
        cov_rows.append(fn(n_systems, n_prompts, 20_000 + r, planted))
    out = []
    for name in null_rows[0]:
        p = np.array([row[name][3] for row in null_rows])
        lo = np.array([row[name][1] for row in cov_rows])
        hi = np.array([row[name][2] for row in cov_rows])
        est = np.array([row[name][0] for row in cov_rows])
        tested = not np.isnan(p).all()
        out.append({"data": kind, "estimand": name, "systems": n_systems, "prompts": n_prompts,
                    "reps": reps, "level": float(np.mean(p < 0.05)) if tested else None,
                    "null": NULLS.get(name, 0.0) if tested else None,
                    "truth": truth[name], "coverage": float(np.mean((lo <= truth[name])
                                                                    & (truth[name] <= hi))),
                    "mean_estimate": float(est.mean()), "nan_pvalues": int(np.isnan(p).sum())})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--data", choices=["all", "ratings", "verdicts"], default="all",
                        help="rerun one kind only, keeping the other's rows of --out")
    args = parser.parse_args(argv)
    kinds = ("ratings", "verdicts") if args.data == "all" else (args.data,)
    warnings.simplefilter("ignore")
    start = time.time()
    results = []
    for kind in kinds:
        for n_systems, n_prompts in CELLS:
            t0 = time.time()
            rows = run_cell(kind, n_systems, n_prompts, args.reps)
            results.extend(rows)
            for row in rows:
                print(f"{kind:8s} S={n_systems:2d} P={n_prompts:3d} {row['estimand']:32s} "
                      f"level {row['level'] if row['level'] is None else round(row['level'], 3)}"
                      f"  coverage {row['coverage']:.3f}", flush=True)
            print(f"  ({time.time() - t0:.0f} s)", flush=True)
    if args.data != "all" and args.out.is_file():
        kept = [r for r in json.loads(args.out.read_text(encoding="utf-8"))["results"]
                if r["data"] != args.data]
        results = sorted(kept + results, key=lambda r: r["data"] != "ratings")
    payload = {"benchmark": "benchmarks/bench_bias.py", "reps": args.reps, "alpha": 0.05,
               "confidence_level": 0.95, "cells": CELLS, "ratings_planted": RATINGS_PLANTED,
               "verdicts_planted": VERDICTS_PLANTED, "seconds_last_run": round(time.time() - start),
               "results": results}
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
