"""Coverage of the intervals of controlled estimates in simulation (issue 51, item 5): the
style-controlled Bradley-Terry strengths and length coefficient of `pairwise strengths --control
length`, and AlpacaEval's length-controlled win rate, both with prompt-bootstrap intervals.

Design (seeded): S systems with strengths ``theta_s`` (spread 1) and mean lengths ``300 + 60
zeta_s`` correlated with the strengths (0.6); P prompts, on each prompt ``m`` battles of
uniformly drawn pairs. A story's length is its system's mean plus a prompt effect (sd 40, shared
by the systems of the prompt) plus noise (sd 40). A battle of a and b is won by a with
probability ``sigmoid(theta_a - theta_b + u_pa - u_pb + beta (len_a - len_b) / 80)``, ``u_ps ~
N(0, tau^2)`` (tau = 0.5: verdicts of one prompt are correlated), beta = 0.8; 10% ties.
The estimands are the population values of each fitted model (the fit to a sample of 4,000
prompts, 20 times the largest cell: the marginal coefficients of a model with prompt effects are
attenuated, so the generating theta is not the target). Per replication: 200 bootstrap resamples
of prompts (and, for contrast, of single verdicts for the LC win rate), 95% intervals. Coverage =
share of (replication, system) cells whose interval holds the estimand; its Monte Carlo standard
error is printed beside it.

    python benchmarks/bench_controlled_coverage.py            # a few minutes on 2 cores
    python benchmarks/bench_controlled_coverage.py --quick    # fewer replications

Writes ``benchmarks/bench_controlled_coverage.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from storyeval.meta.length import length_controlled_win_rate  # noqa: E402
from storyeval.pairwise.style_control import controlled_strengths  # noqa: E402

S, BETA, TAU = 6, 0.8, 0.5
CELLS = [(40, 15), (120, 10)]  # prompts, battles per prompt


def simulate(prompts: int, per_prompt: int, seed: int) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    base = np.random.default_rng(12345)  # the systems are fixed across replications
    theta = base.normal(size=S)
    length = 300 + 60 * (0.6 * theta / theta.std() + 0.8 * base.normal(size=S))
    n = prompts * per_prompt
    p = np.repeat(np.arange(prompts), per_prompt)
    a = g.integers(0, S, n)
    b = (a + g.integers(1, S, n)) % S
    shift = g.normal(0, 40, prompts)
    u = g.normal(0, TAU, (prompts, S))
    la = length[a] + shift[p] + g.normal(0, 40, n)
    lb = length[b] + shift[p] + g.normal(0, 40, n)
    eta = theta[a] - theta[b] + u[p, a] - u[p, b] + BETA * (la - lb) / 80
    tie = g.random(n) < 0.1
    win = g.random(n) < 1 / (1 + np.exp(-eta))
    names = np.array([f"sys{i}" for i in range(S)])
    return pd.DataFrame({"prompt_id": p, "story_a": names[a], "story_b": names[b],
                         "system_a": names[a], "system_b": names[b], "dimension": "Overall",
                         "verdict": np.where(tie, "same", np.where(win, "A", "B")),
                         "order": "AB", "judge": [f"j{k}" for k in range(n)],
                         "length_a": la, "length_b": lb})


def lc_inputs(v: pd.DataFrame, system: str = "sys0"):
    """Verdicts of ``system`` oriented to it (+1 its story won), its and the other's length."""
    mine_a, mine_b = v["system_a"] == system, v["system_b"] == system
    verdict = np.where(v["verdict"] == "A", 1, np.where(v["verdict"] == "B", -1, 0))
    sign = np.where(mine_a, 1, -1)
    keep = (mine_a | mine_b).to_numpy()
    own = np.where(mine_a, v["length_a"], v["length_b"])
    other = np.where(mine_a, v["length_b"], v["length_a"])
    return (verdict * sign)[keep], own[keep], other[keep], v["prompt_id"].to_numpy()[keep]


def estimands() -> dict:
    big = simulate(4000, 10, seed=999)
    table, coef = controlled_strengths(big, ["length"], n_resamples=0)
    v, own, other, _ = lc_inputs(big)
    return {"theta": table.set_index("item")["log_strength_controlled"].to_dict(),
            "beta": float(coef["beta"].iloc[0]),
            "lc": length_controlled_win_rate(v, own, other)["lc_win_rate"]}


def run_cell(prompts: int, per_prompt: int, reps: int, resamples: int, truth: dict) -> dict:
    hit_t, hit_b, hit_lc, hit_lc_iid, width_t, width_lc = [], [], [], [], [], []
    for r in range(reps):
        v = simulate(prompts, per_prompt, seed=r)
        table, coef = controlled_strengths(v, ["length"], n_resamples=resamples,
                                           random_state=r)
        t = table.set_index("item")
        true_t = pd.Series(truth["theta"]).loc[t.index]
        hit_t += list((t["ci_low_controlled"] <= true_t) & (true_t <= t["ci_high_controlled"]))
        width_t += list(t["ci_high_controlled"] - t["ci_low_controlled"])
        hit_b.append(bool(coef["ci_low"].iloc[0] <= truth["beta"] <= coef["ci_high"].iloc[0]))
        vv, own, other, pr = lc_inputs(v)
        for clusters, hits in ((pr, hit_lc), (None, hit_lc_iid)):
            res = length_controlled_win_rate(vv, own, other, clusters=clusters,
                                             n_resamples=resamples, random_state=r)
            hits.append(bool(res["lc_ci_low"] <= truth["lc"] <= res["lc_ci_high"]))
            if clusters is not None:
                width_lc.append(res["lc_ci_high"] - res["lc_ci_low"])

    def cov(h):
        p = float(np.mean(h))
        return p, float(np.sqrt(p * (1 - p) / len(h)))

    out = {"prompts": prompts, "battles_per_prompt": per_prompt, "replications": reps,
           "resamples": resamples}
    for name, h in (("strength_controlled", hit_t), ("length_coef", hit_b),
                    ("lc_win_rate_prompt_bootstrap", hit_lc),
                    ("lc_win_rate_pair_bootstrap", hit_lc_iid)):
        out[name], out[name + "_mc_se"] = cov(h)
    out["mean_width_strength"] = float(np.mean(width_t))
    out["mean_width_lc"] = float(np.mean(width_lc))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="60 replications per cell")
    ap.add_argument("--resamples", type=int, default=200)
    args = ap.parse_args()
    reps = 60 if args.quick else 200
    print(f"load: {os.getloadavg()}", flush=True)
    t0 = time.perf_counter()
    truth = estimands()
    rows = []
    for prompts, per in CELLS:
        rows.append(run_cell(prompts, per, reps, args.resamples, truth))
        print(json.dumps(rows[-1]), flush=True)
    lines = ["| prompts | verdicts per prompt | replications | controlled strengths | "
             "length coefficient | LC win rate, prompt bootstrap | LC win rate, pair bootstrap "
             "(contrast) |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        cells = [f"{r[k]:.3f} ± {r[k + '_mc_se']:.3f}" for k in
                 ("strength_controlled", "length_coef", "lc_win_rate_prompt_bootstrap",
                  "lc_win_rate_pair_bootstrap")]
        lines.append(f"| {r['prompts']} | {r['battles_per_prompt']} | {r['replications']} | "
                     + " | ".join(cells) + " |")
    print("\n".join(lines))
    print(f"nominal 0.95; {time.perf_counter() - t0:.0f} s; load {os.getloadavg()}")
    (ROOT / "benchmarks" / "bench_controlled_coverage.json").write_text(json.dumps(
        {"date": time.strftime("%Y-%m-%d"), "load": os.getloadavg(), "truth": truth,
         "rows": rows, "table": lines}, indent=1, default=float))


if __name__ == "__main__":
    main()
