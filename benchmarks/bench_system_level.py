"""Level, agreement and coverage of the default system-level test on exchangeable and
non-exchangeable data (docs page "Which test?", section "The system-level test at the edges").

Every number comes from the user path's functions (`bench_calibration.default_path`: the
correlations of `storyeval.correlation.levels.level_data` system means, `compare_rows` with the
default `permutation-midp` test, 2,000 swaps, its test-compatible interval from 1,000
bootstrap resamples of prompts, sign convention ``raw``, seed per chunk). One replication is one
comparison of measures ``a`` and ``b`` with 50 prompts per system; the human score is the mean
of three 1-5 ratings of ``3 + q`` (`bench_calibration._human`), ``q = q_s + N(0, 1)`` with a
system effect ``q_s ~ N(0, 0.3^2)`` drawn anew per replication. Cells (``DGPS`` here):

* ``exchangeable``: ``a, b = q + 0.5 u + e`` (the calibration benchmark's ``base``): the null.
* ``exch-likert-1``: the same with one 1-5 rating as the human score (5 values: Likert ties).
* ``exch-heavy``: the same with Student t(3) noise.
* ``only-pearson``: a null for the rank coefficients that is not exchangeable: ``b`` adds a
  system-level offset ``0.6 sign(q_s) (q_s / 0.3)^2 0.3``, an increasing function of the
  system's quality, so the systems' expected scores of ``a`` and ``b`` have the same order
  (equal tau-b and Spearman over infinitely many prompts) but different Pearson correlations.
  Its rejection rate is the level for tau-b (claimed: at most 0.065) and power for Pearson.
* ``same-order``: ``b = a + f(mean of a over the system's stories)`` (b is a itself, shifted
  per system) with ``f`` increasing and
  nonlinear, so that b's *observed* system means are an increasing function of a's: the two
  measures rank the systems identically on every data set (tau-b's difference is exactly 0, a
  null for tau-b in every sample, claimed level at most 0.065) while their Pearson correlations
  with the human score differ (power for Pearson). 0.3.1's test ordered these ties by the
  Pearson difference and rejected; 0.4.0's never may (p >= 0.5 when the difference is 0).
* ``noisier-b``: ``b`` has twice the noise sd of ``a`` (an alternative; small for tau-b at few
  systems): rejection rate, sign errors.

Printed per cell and coefficient: the rejection rate at 0.05 with its Monte Carlo s.e.; how
often a row has ``delta`` exactly 0 (|delta| <= 1e-12) and ``p < 0.05`` (must be 0); how often
``p < 0.05`` and the interval excluding 0 disagree (must be 0); the share of rows with a
difference of exactly 0.

Run: ``nice -n 10 python benchmarks/bench_system_level.py --reps 1000 [--sizes 3,4,5,10]
[--markdown FILE]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_calibration import (  # noqa: E402
    PROMPTS,
    SYS_SD,
    _human,
    comparisons,
    default_path,
    hash_name,
    wide_table,
    write_page,
)

ALPHA = 0.05
MARKER = "system-edges"
DGPS = ("exchangeable", "exch-likert-1", "exch-heavy", "only-pearson", "same-order", "noisier-b")
NULL_FOR = {"exchangeable": ("kendall_b", "pearson"), "exch-likert-1": ("kendall_b", "pearson"),
            "exch-heavy": ("kendall_b", "pearson")}
# nulls in every sample: the two measures rank the systems identically, tau-b's difference is 0
SAMPLE_NULL_FOR = {"same-order": ("kendall_b",)}
# nulls only in the limit of infinitely many prompts: at 50 prompts b's stretched system means
# are ranked more reliably than a's, so tau-b's expected difference is not exactly 0 there
LIMIT_NULL_FOR = {"only-pearson": ("kendall_b",)}


def simulate(dgp: str, reps: int, systems: int, rng: np.random.Generator):
    """Human scores (reps, S, P) and measures a, b (reps, S, P, 2) of one cell."""
    shape = (reps, systems, PROMPTS)
    q_s = rng.normal(0, SYS_SD, (reps, systems, 1))
    q = rng.normal(size=shape) + q_s
    u = rng.normal(size=shape)
    if dgp == "exch-heavy":
        e = rng.standard_t(3, size=shape + (2,)) / math.sqrt(3.0)
    else:
        e = rng.normal(size=shape + (2,))
    if dgp == "noisier-b":
        e[..., 1] *= 2.0
    m = (q + 0.5 * u)[..., None] + e
    if dgp == "only-pearson":
        m[..., 1] += only_pearson_offset(q_s)
    if dgp == "same-order":
        # b is a shifted per system by an increasing function of a's observed system mean
        m[..., 1] = m[..., 0] + same_order_offset(m[..., 0].mean(axis=2, keepdims=True))
    human = "likert-1" if dgp == "exch-likert-1" else "likert-3"
    return _human(q, human, rng), m


def only_pearson_offset(q_s: np.ndarray) -> np.ndarray:
    """The ``only-pearson`` offset of b: increasing and nonlinear in the system effect."""
    z = q_s / SYS_SD
    return 0.6 * np.sign(z) * z ** 2 * SYS_SD


def same_order_offset(system_mean_a: np.ndarray) -> np.ndarray:
    """The ``same-order`` offset of b: increasing and nonlinear in a's observed system mean,
    so b's system means (a's plus this) keep a's order exactly."""
    z = system_mean_a / SYS_SD
    return 0.6 * np.sign(z) * z ** 2 * SYS_SD


def run_cell(dgp: str, systems: int, method: str, reps: int, seed: int,
             chunk: int = 500) -> dict:
    rng = np.random.default_rng([seed, hash_name(dgp), systems, hash_name(method)])
    parts = []
    for start in range(0, reps, chunk):
        n = min(chunk, reps - start)
        h, m = simulate(dgp, n, systems, rng)
        wide, crit, meas = wide_table(h, m, start)
        comp = comparisons(wide, crit, meas, "system", method)
        res = default_path(wide, comp, "system", method, seed + start)
        parts.append(pd.DataFrame({"delta": res["delta"], "p": res["p"],
                                   "ci_low": res["ci_low"], "ci_high": res["ci_high"]}))
    frame = pd.concat(parts, ignore_index=True)
    reject = frame["p"].to_numpy() < ALPHA
    excludes = ((frame["ci_low"] > 0) | (frame["ci_high"] < 0)).to_numpy()
    zero = np.abs(frame["delta"].to_numpy()) <= 1e-12
    rate = float(reject.mean())
    return {"dgp": dgp, "systems": systems, "method": method, "reps": len(frame),
            "rate": rate, "se": math.sqrt(rate * (1 - rate) / len(frame)),
            "null": (True if method in NULL_FOR.get(dgp, ()) else
                     "limit" if method in LIMIT_NULL_FOR.get(dgp, ()) else
                     "sample" if method in SAMPLE_NULL_FOR.get(dgp, ()) else False),
            "delta_0_share": float(zero.mean()),
            "delta_0_and_p_below": int((zero & reject).sum()),
            "disagree": int((reject != excludes).sum())}


def markdown(rows: list[dict], command: str, seconds: float) -> str:
    names = {"kendall_b": "tau-b", "pearson": "Pearson"}
    lines = ["| data | systems | coefficient | null? | P(p < 0.05) | delta = 0 (share) | "
             "delta = 0 and p < 0.05 | p and interval disagree |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        rate = f"{r['rate']:.3f} ({r['se']:.3f})"
        if r["null"] is True and r["systems"] >= 5 and not 0.035 <= r["rate"] <= 0.065:
            rate += " **outside 0.035-0.065**"
        if r["null"] in ("limit", "sample") and r["rate"] > 0.065:
            rate += " **above 0.065**"
        null = {True: "yes", False: "no", "limit": "in the limit",
                "sample": "in every sample"}[r["null"]]
        lines.append(f"| {r['dgp']} | {r['systems']} | {names[r['method']]} | "
                     f"{null} | {rate} | {r['delta_0_share']:.3f} | "
                     f"{r['delta_0_and_p_below']} | {r['disagree']} of {r['reps']} |")
    load = os.getloadavg()[0]
    lines.append("")
    lines.append(f"`{command}`: {len(rows)} cells in {seconds:.0f} s (load {load:.1f}); "
                 "Monte Carlo s.e. in brackets. \"null?\": whether the coefficient's "
                 "difference is 0 in the population of prompts (the rate is a level); \"in "
                 "the limit\": only over infinitely many prompts (at 50 prompts the "
                 "stretched system means of b are ranked more reliably than a's, so the rate "
                 "mixes level and power); \"in every sample\": the measures rank the "
                 "systems identically on every data set (the difference is exactly 0); "
                 "\"no\": the rate is power.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sizes", default="3,4,5,10")
    parser.add_argument("--dgps", default=",".join(DGPS))
    parser.add_argument("--methods", default="kendall_b,pearson")
    parser.add_argument("--markdown", help="write the table to this file")
    parser.add_argument("--page", help=f"put the table into this docs page, between its "
                                       f"<!-- {MARKER}:start/end --> markers")
    args = parser.parse_args(argv)
    start = time.time()
    rows = []
    for dgp in args.dgps.split(","):
        for systems in (int(s) for s in args.sizes.split(",")):
            for method in args.methods.split(","):
                row = run_cell(dgp, systems, method, args.reps, args.seed)
                rows.append(row)
                print(row, flush=True)
    command = "python benchmarks/bench_system_level.py " + " ".join(argv or sys.argv[1:])
    table = markdown(rows, command.strip(), time.time() - start)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    if args.page:
        write_page(args.page, table, (f"<!-- {MARKER}:start -->", f"<!-- {MARKER}:end -->"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
