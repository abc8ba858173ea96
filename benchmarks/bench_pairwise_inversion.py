"""Coverage of the judge-comparison intervals on clustered verdicts (issue 47; docs page
"Pairwise judging", section on `pairwise compare`).

Through `storyeval.pairwise.inference.compare_accuracies`: two judges scored 0/1 on the same
pairs, grouped by prompt (C prompts of m pairs); a prompt effect ``u_c ~ N(0, 1)`` is shared
by both judges, judge j is right with probability ``Phi(mu_j + u_c)``. The estimand is the
difference of the pooled accuracies, E[a - b], computed from 200,000 independent draws. Each
cell is ``--reps`` data sets; for each test (`permutation`, the default on clustered verdicts,
with the interval that inverts it; `bootstrap`, p-value and percentile interval; `cluster-t`)
the share of intervals covering the estimand and the number of rows whose interval and p-value
disagree about 0 (must be 0 for the intervals that invert their test). Fixed seed.

Run: ``nice -n 10 python benchmarks/bench_pairwise_inversion.py --reps 500 [--markdown F]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import norm

from storyeval.pairwise.inference import compare_accuracies

#: (prompts, pairs per prompt, mu_a, mu_b) of each cell
CELLS = ((10, 4, 0.8, 0.3), (20, 4, 0.8, 0.3), (50, 2, 0.5, 0.5), (30, 6, 1.0, 0.2))
TESTS = ("permutation", "bootstrap", "cluster-t")


def draw(rng: np.random.Generator, prompts: int, per: int, mu_a: float, mu_b: float
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    clusters = np.repeat(np.arange(prompts), per)
    u = rng.normal(0.0, 1.0, prompts)[clusters]
    a = (rng.random(len(clusters)) < norm.cdf(mu_a + u)).astype(float)
    b = (rng.random(len(clusters)) < norm.cdf(mu_b + u)).astype(float)
    return a, b, clusters


def run_cell(cell: tuple[int, int, float, float], reps: int, seed: int) -> list[dict]:
    prompts, per, mu_a, mu_b = cell
    rng = np.random.default_rng([seed, prompts, per])
    big_a, big_b, _ = draw(rng, 200_000, 1, mu_a, mu_b)
    truth = float((big_a - big_b).mean())
    covered = dict.fromkeys(TESTS, 0)
    disagree = dict.fromkeys(TESTS, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few clusters warn, by design
        for rep in range(reps):
            a, b, clusters = draw(rng, prompts, per, mu_a, mu_b)
            for test in TESTS:
                r = compare_accuracies(a, b, clusters=clusters, test=test, n_resamples=1000,
                                       random_state=rep)
                covered[test] += bool(r.ci_low <= truth <= r.ci_high)
                disagree[test] += r.agreement.startswith("DISAGREE")
    return [{"prompts": prompts, "per": per, "truth": truth, "test": test, "reps": reps,
             "coverage": covered[test] / reps, "disagree": disagree[test]} for test in TESTS]


def markdown(rows: list[dict], command: str, seconds: float) -> str:
    lines = ["| prompts x pairs | E[a - b] | test | interval covers | MC s.e. | "
             "p and interval disagree |", "| --- | ---: | --- | ---: | ---: | ---: |"]
    for r in rows:
        se = math.sqrt(r["coverage"] * (1 - r["coverage"]) / r["reps"])
        lines.append(f"| {r['prompts']} x {r['per']} | {r['truth']:.3f} | `{r['test']}` | "
                     f"{r['coverage']:.3f} | {se:.3f} | {r['disagree']} of {r['reps']} |")
    lines += ["", f"`{command}` ({seconds:.0f} s; 1,000 resamples per test)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", help="also write the table to this Markdown file")
    args = parser.parse_args(argv)
    start = time.time()
    rows = [row for cell in CELLS for row in run_cell(cell, args.reps, args.seed)]
    command = "python benchmarks/bench_pairwise_inversion.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    text = markdown(rows, command.strip(), time.time() - start)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
