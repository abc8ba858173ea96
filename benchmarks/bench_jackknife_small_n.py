"""Level of the overall-level jackknife test of ``r(h, a) - r(h, b)`` with few stories.

The overall-level default for Pearson (and Spearman, tau-c) is the delete-one-item jackknife
of the difference (`storyeval.compare.dependent.jackknife_diff`) with a reference
distribution: the standard normal (before 0.3.2) or Student's t with n - 1 degrees of freedom
(`normal_test` with the estimate's ``df``, the default now). An independent audit found the
normal reference at 0.065 with 30 stories and weak correlations, and about twice nominal at
alpha 0.01. This benchmark measures both references at n = 30, 50, 100 stories and alpha 0.01
and 0.05 on null data sets where a and b correlate equally with h:

- ``normal, weak``: (h, a, b) trivariate normal, corr(h, a) = corr(h, b) = 0.2,
  corr(a, b) = 0.3 (the audit's "weak correlations");
- ``normal, moderate``: 0.5 and 0.5;
- ``normal, zero``: 0, 0 and corr(a, b) = 0.5;
- ``heavy tails t5, weak`` and ``heavy tails t3, weak``: the weak design with multivariate t
  scores (5 df: finite fourth moments; 3 df: infinite, where no variance estimate of r is
  consistent);
- ``likert, weak``: the weak design with h the mean of three 1-5 ratings (thresholded normal
  plus rater noise: Likert ties) and a, b rounded to one decimal.

Every replication runs `jackknife_diff` (the arithmetic the pipeline's batched jackknife
reproduces, tests/test_compare.py) on a batch axis. Output: the rejection rate of each cell
with its Monte Carlo standard error; ``--json`` writes ``benchmarks/bench_jackknife_small_n.json``
read by docs/which-test.md's section "Overall-level jackknife with few stories".

Run: ``python benchmarks/bench_jackknife_small_n.py [--reps 4000] [--seed 0]`` (about 1 minute
on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from storyeval.compare.dependent import DiffEstimate, jackknife_diff, normal_test

OUT = Path(__file__).resolve().parent / "bench_jackknife_small_n.json"
SIZES = (30, 50, 100)
ALPHAS = (0.01, 0.05)
DESIGNS = {  # name: (corr(h, a) = corr(h, b), corr(a, b), kind)
    "normal, weak": (0.2, 0.3, "normal"),
    "normal, moderate": (0.5, 0.5, "normal"),
    "normal, zero": (0.0, 0.5, "normal"),
    "heavy tails t5, weak": (0.2, 0.3, "t5"),
    "heavy tails t3, weak": (0.2, 0.3, "t3"),
    "likert, weak": (0.2, 0.3, "likert"),
}
CHUNK = 1000


def draw(design: str, reps: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(h, a, b), each (reps, n), of one null design."""
    r, r_ab, kind = DESIGNS[design]
    cov = np.array([[1.0, r, r], [r, 1.0, r_ab], [r, r_ab, 1.0]])
    x = rng.multivariate_normal(np.zeros(3), cov, size=(reps, n))
    if kind in ("t3", "t5"):
        df = int(kind[1])
        x = x / np.sqrt(rng.chisquare(df, size=(reps, n, 1)) / df)
    h, a, b = x[..., 0], x[..., 1], x[..., 2]
    if kind == "likert":
        ratings = h[..., None] + rng.normal(0, 0.7, size=(reps, n, 3))
        h = np.clip(np.round(1.5 * ratings + 3), 1, 5).mean(-1)
        a, b = np.round(a, 1), np.round(b, 1)
    return h, a, b


def cell(design: str, n: int, reps: int, seed: int, method: str = "pearson") -> dict:
    """Rejection rates of the normal and t(n - 1) references at each alpha."""
    rng = np.random.default_rng([seed, n, sum(map(ord, design))])
    p_z, p_t = [], []
    for start in range(0, reps, CHUNK):
        h, a, b = draw(design, min(CHUNK, reps - start), n, rng)
        est = jackknife_diff(h, a, b, method)
        p_t.append(normal_test(est)[1])  # the estimate's df: t with n - 1 df
        p_z.append(normal_test(DiffEstimate(est.delta, est.se))[1])  # no df: normal
    pz, pt = np.concatenate(p_z), np.concatenate(p_t)
    row = {"design": design, "method": method, "n": n, "reps": reps}
    for alpha in ALPHAS:
        for name, p in (("normal", pz), ("t", pt)):
            ok = np.isfinite(p)
            rate = float(np.mean(p[ok] < alpha))
            row[f"{name} {alpha:g}"] = rate
            row[f"{name} {alpha:g} se"] = float(np.sqrt(rate * (1 - rate) / ok.sum()))
    return row


def markdown(rows: list[dict]) -> str:
    head = ("| design | n | normal, 0.01 | t(n-1), 0.01 | normal, 0.05 | t(n-1), 0.05 |\n"
            "| --- | --- | --- | --- | --- | --- |\n")
    body = "".join(
        f"| {r['design']} | {r['n']} | {r['normal 0.01']:.4f} | {r['t 0.01']:.4f} | "
        f"{r['normal 0.05']:.3f} | {r['t 0.05']:.3f} |\n" for r in rows)
    se = max(max(r["t 0.01 se"], r["normal 0.01 se"]) for r in rows)
    se5 = max(max(r["t 0.05 se"], r["normal 0.05 se"]) for r in rows)
    return head + body + (f"\nMonte Carlo standard error at most {se:.4f} (alpha 0.01) and "
                          f"{se5:.4f} (alpha 0.05); {rows[0]['reps']} data sets per cell.\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--designs", nargs="*", default=list(DESIGNS))
    ap.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    ap.add_argument("--json", action="store_true", help=f"write {OUT.name}")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    rows = [cell(d, n, args.reps, args.seed) for d in args.designs for n in args.sizes]
    print(markdown(rows))
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.json:
        OUT.write_text(json.dumps({"reps": args.reps, "seed": args.seed, "rows": rows},
                                  indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
