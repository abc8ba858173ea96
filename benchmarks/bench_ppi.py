"""Coverage and width gain of prediction-powered intervals on HANNA-like simulations.

The population is HANNA itself (1,056 stories): a story's human score is the mean of its three
annotators' ratings on a criterion, the judge is an LLM rater's criterion-matched score
(ChatGPT Eval-Prompt 4, the best on Coherence, r = 0.56, and Llama-13B Eval-Prompt 4, the
worst, r = 0.27). Each replication draws a study of 1,056 stories with replacement from it
(the population mean is the truth), labels a uniformly random 5%, 10% or 20% with human scores
and gives the judge every story; then `storyeval.power.ppi_mean` computes PPI++ (lambda tuned),
PPI (lambda = 1) and the human-only (classical) 95% interval (normal, as ppi-python), and
PPI++ with the small-sample t interval (``interval="t"``). The win-rate rows do the same for
a win rate: the 4,320 pairs of two machine systems' stories on the same prompt (45 system pairs
x 96 prompts, the alphabetically first system as A), 1 when A's story has the higher mean human
score (0.5 for a tie), the judge's verdict likewise from its scores.

Printed per setting: coverage (share of intervals containing the truth, with its Monte Carlo
standard error), mean width relative to the human-only interval, mean lambda and the mean
effective number of human labels n_eff. Run: ``python benchmarks/bench_ppi.py [--reps 2000]
[--seed 0]`` (about a minute). A script, not a test: the table is in docs/planning.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from storyeval.data.hanna import load_hanna
from storyeval.power.ppi import ppi_mean

METHODS = (("ppi++", "z"), ("ppi++", "t"), ("ppi", "z"), ("classical", "z"))
FRACTIONS = (0.05, 0.10, 0.20)


def populations(criterion: str = "Coherence") -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(human, judge) per simulated setting, from the HANNA scores."""
    scores = load_hanna().scores
    wide = scores.pivot_table(index=["system", "prompt_id"], columns="measure", values="value")
    code = {"Coherence": "CH"}[criterion]
    out = {}
    for judge in (f"ChatGPT {code} 4", f"Llama-13B {code} 4"):
        out[f"mean, {judge}"] = (wide[criterion].to_numpy(), wide[judge].to_numpy())
    systems = sorted(wide.index.get_level_values(0).unique().drop("Human"))
    for judge in (f"ChatGPT {code} 4",):
        h_pairs, j_pairs = [], []
        for i, a in enumerate(systems):
            for b in systems[i + 1:]:
                sa, sb = wide.loc[a], wide.loc[b].reindex(wide.loc[a].index)
                h_pairs.append(np.sign(sa[criterion] - sb[criterion]) / 2 + 0.5)
                j_pairs.append(np.sign(sa[judge] - sb[judge]) / 2 + 0.5)
        out[f"win rate, {judge}"] = (np.concatenate(h_pairs), np.concatenate(j_pairs))
    return out


def simulate(human: np.ndarray, judge: np.ndarray, frac: float, reps: int,
             rng: np.random.Generator) -> pd.DataFrame:
    truth = float(human.mean())
    size = human.size
    rows = []
    for _ in range(reps):
        idx = rng.integers(0, size, size)
        labelled = rng.permutation(size) < max(2, round(frac * size))
        h = np.where(labelled, human[idx], np.nan)
        for method, interval in METHODS:
            r = ppi_mean(h, judge[idx], method=method, interval=interval)
            label = method if interval == "z" else f"{method} (t)"
            rows.append((label, r.low <= truth <= r.high, r.high - r.low, r.lam, r.n_eff,
                         r.n_labelled))
    return pd.DataFrame(rows, columns=["method", "covered", "width", "lam", "n_eff", "n"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"seed {args.seed}, {args.reps} replications per setting, 95% two-sided intervals")
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    lines = []
    for name, (human, judge) in populations().items():
        for frac in FRACTIONS:
            sim = simulate(human, judge, frac, args.reps, rng)
            human_width = sim.loc[sim.method == "classical", "width"].mean()
            for method, g in sim.groupby("method", sort=False):
                cov = g.covered.mean()
                lines.append({
                    "setting": name, "human share": f"{frac:.0%}", "n labelled": int(g.n.iloc[0]),
                    "method": method, "coverage": round(cov, 3),
                    "mc se": round(float(np.sqrt(cov * (1 - cov) / len(g))), 3),
                    "width / human-only": round(g.width.mean() / human_width, 3),
                    "mean lambda": round(g.lam.mean(), 3), "mean n_eff": round(g.n_eff.mean(), 1),
                })
    table = pd.DataFrame(lines)
    print(table.to_markdown(index=False))
    for label, g in table[table.method != "classical"].groupby("method", sort=False):
        print(f"lowest coverage of {label}: {g.coverage.min():.3f} (target >= 0.94)")
    print(f"\n{time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
