"""Level, power, agreement and coverage of the within-system comparison tests (docs page "Which
test?", section "The within-system level").

One replication compares measures ``a`` and ``b`` at the within-system level (each system's
correlation with the human score across its prompts, averaged over the systems): S systems x P
prompts, one story per (system, prompt). The latent quality of a story is
``q = q_s + v_p + w`` (system effect ``q_s ~ N(0, 0.3^2)``, prompt effect ``v_p ~ N(0, 0.5^2)``
shared by every system's story of the prompt, story effect ``w ~ N(0, 1)``); the human score is
the mean of three 1-5 ratings of ``3 + q`` (`bench_calibration._human`). Cells (``DGPS``):

* ``exchangeable``: ``a, b = q + e``, ``e ~ N(0, 1)``: the null, a and b exchangeable.
* ``exch-heavy``: the same with Student t(3) noise (scaled to variance 1).
* ``shared-noise``: a null that is not exchangeable: ``a = q + (u_p + e) / sqrt(2)`` with a
  noise ``u_p`` shared by every system's story of prompt p, ``b = q + e'``. Within each system
  (h, a) and (h, b) have the same distribution, so the within-system difference is 0 for every
  coefficient, but a's errors are correlated across systems and b's are not.
* ``stretched``: ``b = exp(q + e')``, an increasing map of an exchangeable copy: a null for the
  rank coefficients (tau-b), not for Pearson (there the rate is power).
* ``noisier-b``: ``b = q + 1.5 e'`` (an alternative: power, and the intervals' coverage).

Candidates, all through the public functions: ``prompt-jackknife`` (the default:
`storyeval.compare.procedures.compare_rows` with that test, i.e.
`storyeval.compare.within.compare_within_level`), ``bootstrap`` (`compare_rows` with test
``bootstrap``: a paired bootstrap of prompts, p = 2 min(#{d* <= 0}, #{d* >= 0}) / B with its
percentile interval) and ``permutation`` (swapping a and b on every system's story of a random
half of the prompts, mid-p; computed here only, as a candidate). Printed per cell: rejection rate at
0.05 (Monte Carlo s.e.), for the tests with an interval the share of rows where p < 0.05 and the
interval's exclusion of 0 disagree, and the coverage of E[delta | these systems] (the mean of
delta over the cell's replications, which share the design).

Run: ``nice -n 10 python benchmarks/bench_within.py [--quick] [--reps 400] [--page
docs/which-test.md] [--json benchmarks/bench_within.json]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_calibration import _human, hash_name, wide_table, write_page  # noqa: E402

ALPHA = 0.05
MARKER = "within"
SYS_SD, PROMPT_SD = 0.3, 0.5
DGPS = ("exchangeable", "exch-heavy", "shared-noise", "stretched", "noisier-b")
NULL_FOR = {"exchangeable": ("kendall_b", "pearson"), "exch-heavy": ("kendall_b", "pearson"),
            "shared-noise": ("kendall_b", "pearson"), "stretched": ("kendall_b",)}
SIZES = ((5, 10), (5, 30), (10, 30), (10, 96))
QUICK_SIZES = ((5, 10), (10, 30))
CANDIDATES = ("prompt-jackknife", "bootstrap", "permutation")


def simulate(dgp: str, reps: int, systems: int, prompts: int, rng: np.random.Generator):
    """Human scores (reps, S, P) and measures a, b (reps, S, P, 2) of one cell."""
    shape = (reps, systems, prompts)
    q = (rng.normal(0, SYS_SD, (reps, systems, 1)) + rng.normal(0, PROMPT_SD, (reps, 1, prompts))
         + rng.normal(size=shape))
    if dgp == "exch-heavy":
        e = rng.standard_t(3, size=shape + (2,)) / math.sqrt(3.0)
    else:
        e = rng.normal(size=shape + (2,))
    if dgp == "shared-noise":
        u = rng.normal(size=(reps, 1, prompts))
        e[..., 0] = (u + e[..., 0]) / math.sqrt(2.0)
    if dgp == "noisier-b":
        e[..., 1] *= 1.5
    m = q[..., None] + e
    if dgp == "stretched":
        m[..., 1] = np.exp(m[..., 1])
    return _human(q, "likert-3", rng), m


def _comparison(wide: pd.DataFrame, crit: list[str], meas: list[list[str]], method: str):
    from storyeval.correlation.levels import correlation_grid

    a = [m[0] for m in meas]
    b = [m[1] for m in meas]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid = correlation_grid(wide, [*a, *b], crit, level="within", method=method)
    ra = grid.take(a, crit)["value"]
    rb = grid.take(b, crit)["value"]
    return {"criterion": np.array(crit, dtype=object), "measure_a": np.array(a, dtype=object),
            "measure_b": np.array(b, dtype=object), "r_a": ra, "r_b": rb,
            "r_ab": np.full(len(a), np.nan), "n": np.full(len(a), wide.index.levshape[1])}


def _kendall_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """tau-b along the last axis (small n: every pair)."""
    i, j = np.triu_indices(x.shape[-1], k=1)
    sx, sy = np.sign(x[..., j] - x[..., i]), np.sign(y[..., j] - y[..., i])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(-1) / np.sqrt((sx != 0).sum(-1) * (sy != 0).sum(-1))


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc, yc = x - x.mean(-1, keepdims=True), y - y.mean(-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (xc * yc).sum(-1) / np.sqrt((xc * xc).sum(-1) * (yc * yc).sum(-1))


def permutation_midp(h: np.ndarray, m: np.ndarray, method: str, n_perm: int,
                     rng: np.random.Generator) -> np.ndarray:
    """Two-sided mid-p of the within-system difference, swapping a and b on whole prompts
    (every system's story of the prompt at once); h (reps, S, P), m (reps, S, P, 2)."""
    corr = _kendall_b if method == "kendall_b" else _pearson
    reps, S, P = h.shape
    obs = np.nanmean(corr(m[..., 0], h) - corr(m[..., 1], h), axis=1)  # (reps,)
    more = np.zeros(reps)
    tied = np.zeros(reps)
    for _ in range(n_perm):
        swap = rng.random((reps, 1, P)) < 0.5
        a = np.where(swap, m[..., 1], m[..., 0])
        b = np.where(swap, m[..., 0], m[..., 1])
        d = np.abs(np.nanmean(corr(a, h) - corr(b, h), axis=1))
        more += d > np.abs(obs) + 1e-12
        tied += np.abs(d - np.abs(obs)) <= 1e-12
    return (more + 0.5 * (1 + tied)) / (n_perm + 1)


def run_cell(dgp: str, systems: int, prompts: int, method: str, reps: int, seed: int,
             n_resamples: int, n_perm: int, candidates: tuple[str, ...]) -> list[dict]:
    from storyeval.compare.procedures import compare_rows

    rng = np.random.default_rng([seed, hash_name(dgp), systems, prompts, hash_name(method)])
    h, m = simulate(dgp, reps, systems, prompts, rng)
    wide, crit, meas = wide_table(h, m)
    comp = _comparison(wide, crit, meas, method)
    rows = []
    null = method in NULL_FOR.get(dgp, ())
    for cand in candidates:
        t0 = time.time()
        if cand == "permutation":
            p = permutation_midp(h, m, method, n_perm, rng)
            delta, low, high = comp["r_a"] - comp["r_b"], None, None
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = compare_rows(wide, comp, level="within", method=method, test=cand,
                                   sign_convention="raw", n_resamples=n_resamples,
                                   random_state=seed)
            p, delta, low, high = res["p"], res["delta"], res["ci_low"], res["ci_high"]
        reject = np.asarray(p) < ALPHA
        rate = float(reject.mean())
        row = {"dgp": dgp, "systems": systems, "prompts": prompts, "method": method,
               "test": cand, "reps": reps, "rate": rate,
               "se": math.sqrt(rate * (1 - rate) / reps), "null": null,
               "disagree": None, "coverage": None, "seconds": time.time() - t0}
        if low is not None:
            excludes = (low > 0) | (high < 0)
            target = float(np.mean(delta))
            row["disagree"] = int((reject != excludes).sum())
            row["coverage"] = float(((low <= target) & (target <= high)).mean())
        rows.append(row)
    return rows


def run_single(dgp: str, systems: int, prompts: int, method: str, reps: int, seed: int,
               n_resamples: int) -> dict:
    """Coverage of the bootstrap interval of one within-system correlation (``meta --ci
    bootstrap``: `bootstrap_correlations(level="within")`, prompts resampled), percentile and
    expanded, of E[r_W(h, a) | these systems] (the mean over the cell's replications)."""
    from storyeval.resample._common import quantile_columns
    from storyeval.resample.bootstrap import bootstrap_correlations, expanded_level

    rng = np.random.default_rng([seed, hash_name(dgp), systems, prompts, hash_name(method), 1])
    h, m = simulate(dgp, reps, systems, prompts, rng)
    wide, crit, meas = wide_table(h, m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res, theta = bootstrap_correlations(wide, [(row[0], c) for row, c in zip(meas, crit)],
                                            level="within", method=method,
                                            n_resamples=n_resamples, random_state=seed,
                                            return_distribution=True)
    value = res["value"].to_numpy()
    target = float(np.mean(value))
    row = {"dgp": dgp, "systems": systems, "prompts": prompts, "method": method, "reps": reps,
           "target": target}
    for name, level in (("percentile", 0.95), ("expanded", expanded_level(prompts, 0.95))):
        alpha = (1 - level) / 2
        low, high = quantile_columns(theta, np.stack([np.full(reps, alpha),
                                                      np.full(reps, 1 - alpha)]))
        row[name] = float(((low <= target) & (target <= high)).mean())
    return row


def single_markdown(rows: list[dict], command: str) -> str:
    names = {"kendall_b": "tau-b", "pearson": "Pearson"}
    lines = ["| data | systems x prompts | coefficient | E[r_W(h, a)] | percentile | expanded |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        lines.append(f"| {r['dgp']} | {r['systems']} x {r['prompts']} | {names[r['method']]} | "
                     f"{r['target']:.3f} | {r['percentile']:.3f} | {r['expanded']:.3f} |")
    lines.append("")
    lines.append(f"`{command}`: coverage of nominal 95% bootstrap intervals (prompts "
                 "resampled) of one within-system correlation, of its mean over the cell's "
                 "replications; Monte Carlo s.e. about 0.013 at 300 replications.")
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict], command: str, seconds: float) -> str:
    names = {"kendall_b": "tau-b", "pearson": "Pearson"}
    lines = ["| data | systems x prompts | coefficient | test | null? | P(p < 0.05) | "
             "p and interval disagree | coverage of E[delta] |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        rate = f"{r['rate']:.3f} ({r['se']:.3f})"
        if r["null"] and not 0.035 <= r["rate"] <= 0.065:
            rate += " **outside 0.035-0.065**"
        disagree = "" if r["disagree"] is None else f"{r['disagree']} of {r['reps']}"
        coverage = "" if r["coverage"] is None else f"{r['coverage']:.3f}"
        lines.append(f"| {r['dgp']} | {r['systems']} x {r['prompts']} | {names[r['method']]} | "
                     f"{r['test']} | {'yes' if r['null'] else 'no'} | {rate} | {disagree} | "
                     f"{coverage} |")
    load = os.getloadavg()[0]
    lines.append("")
    lines.append(f"`{command}`: {len(rows)} rows in {seconds:.0f} s (load {load:.1f}); Monte "
                 "Carlo s.e. in brackets; \"null?\": whether the within-system difference is 0 "
                 "(the rate is a level; otherwise power). Coverage: of the mean of delta over "
                 "the cell's replications (E[delta | these systems]), by the test's interval "
                 "(the permutation candidate has none here).")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="two sizes, 200 replications, 200 resamples and permutations")
    parser.add_argument("--sizes", help="systems x prompts cells, e.g. 5x10,10x30,10x96 "
                                        "(default: 5x10,5x30,10x30,10x96; --quick 5x10,10x30)")
    parser.add_argument("--dgps", default=",".join(DGPS))
    parser.add_argument("--methods", default="kendall_b,pearson")
    parser.add_argument("--tests", default=",".join(CANDIDATES))
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--permutations", type=int, default=500)
    parser.add_argument("--markdown", help="write the table to this file")
    parser.add_argument("--json", help="write the rows to this file (benchmarks/bench_within.json "
                                       "backs the docs page: tests/test_bench_within.py)")
    parser.add_argument("--page", help=f"put the table into this docs page, between its "
                                       f"<!-- {MARKER}:start/end --> markers")
    parser.add_argument("--single", action="store_true",
                        help="instead: coverage of the bootstrap interval of one within-system "
                             "correlation (markers <!-- within-single:start/end -->)")
    args = parser.parse_args(argv)
    if args.single:
        return _main_single(args, argv)
    sizes = QUICK_SIZES if args.quick else SIZES
    if args.sizes:
        sizes = tuple(tuple(int(v) for v in cell.split("x")) for cell in args.sizes.split(","))
    reps = 200 if args.quick else args.reps
    resamples = 200 if args.quick else args.resamples
    perms = 200 if args.quick else args.permutations
    start = time.time()
    rows = []
    for dgp in args.dgps.split(","):
        for systems, prompts in sizes:
            for method in args.methods.split(","):
                cands = tuple(args.tests.split(","))
                if prompts > 30:  # the candidates' cost grows with P^2: the default only
                    cands = tuple(c for c in cands if c == "prompt-jackknife")
                for row in run_cell(dgp, systems, prompts, method, reps, args.seed, resamples,
                                    perms, cands):
                    rows.append(row)
                    print(row, flush=True)
    command = "python benchmarks/bench_within.py " + " ".join(argv or sys.argv[1:])
    table = markdown(rows, command.strip(), time.time() - start)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    if args.json:
        import json

        Path(args.json).write_text(json.dumps({"command": command.strip(), "rows": rows},
                                              indent=1) + "\n", encoding="utf-8")
    if args.page:
        write_page(args.page, table, (f"<!-- {MARKER}:start -->", f"<!-- {MARKER}:end -->"))
    return 0


def _main_single(args: argparse.Namespace, argv: list[str] | None) -> int:
    sizes = QUICK_SIZES if args.quick else SIZES
    if args.sizes:
        sizes = tuple(tuple(int(v) for v in cell.split("x")) for cell in args.sizes.split(","))
    reps = 200 if args.quick else args.reps
    rows = []
    for dgp in ("exchangeable", "exch-heavy"):
        for systems, prompts in sizes:
            for method in args.methods.split(","):
                row = run_single(dgp, systems, prompts, method, reps, args.seed, args.resamples)
                rows.append(row)
                print(row, flush=True)
    command = "python benchmarks/bench_within.py " + " ".join(argv or sys.argv[1:])
    table = single_markdown(rows, command.strip())
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    if args.json:
        import json

        Path(args.json).write_text(json.dumps({"command": command.strip(), "rows": rows},
                                              indent=1) + "\n", encoding="utf-8")
    if args.page:
        write_page(args.page, table, ("<!-- within-single:start -->",
                                      "<!-- within-single:end -->"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
