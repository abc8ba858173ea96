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

Every estimate comes from the computation of the public functions `self_preference`,
`leniency`, `residual_length_correlation`, `pairwise_self_preference`, `length_preference` and
`position_bias`: their per-unit contributions, computed on arrays for a batch of 250 data sets
at a time (`storyeval.bias.simulate.rating_arrays` / `verdict_arrays`, the arrays behind the
simulated tables) and passed to the vectorised `ratio_contrasts` / `clustered_correlations`
(the functions `ratio_contrast` and `clustered_correlation` call with one data set). The first
two data sets of every cell and scenario are also run through the public functions on the
simulated tables, and the run stops unless both give the same estimates, intervals and
p-values (relative tolerance 1e-9).

    python benchmarks/bench_bias.py              # 1,000 data sets per cell and scenario
    python benchmarks/bench_bias.py --reps 50    # a quick look
    python benchmarks/bench_bias.py --data ratings   # rerun one kind, keep the other's rows

It also measures the coverage of the prompt-level comparison of a rater against the
system-identity sentinel (`storyeval.bias.compare_with_system_sentinel`, and the paired t of
`storyeval.compare.compare_prompt_level` on the same data sets; `run_sentinel_cell`): about
10 minutes on one core.

About 1 minute on one core (it was 30 minutes with one call of the public functions per data
set).

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
from storyeval.bias.inference import clustered_correlations, ratio_contrasts  # noqa: E402

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
#: Data sets per vectorised batch (memory: about 150 MB at 10 systems x 100 prompts).
CHUNK = 250
#: Data sets per cell and scenario recomputed with the public functions to check the batch.
CHECK = 2


def _rows(frame) -> np.ndarray:
    """(estimate, ci_low, ci_high, pvalue) of every data set of a batch, shape (R, 4)."""
    return frame[["estimate", "ci_low", "ci_high", "pvalue"]].to_numpy(dtype=np.float64, copy=True)


def rating_batch(n_systems: int, n_prompts: int, seeds, planted: dict) -> dict[str, np.ndarray]:
    """The estimates of `rating_rows` for many seeds at once: the same simulated data
    (`storyeval.bias.simulate.rating_arrays`) and the same per-story contributions, through
    the vectorised `ratio_contrasts` / `clustered_correlations`."""
    raters = {"Judge-A": n_systems // 2, "Judge-B": n_systems // 2 + 1}
    draws = [sim.rating_arrays(n_systems, n_prompts, np.random.default_rng(s), raters=raters,
                               **planted) for s in seeds]
    # units in the order of simulate_ratings' wide table: system-major (system, prompt)
    col = {k: np.stack([d[k].T.ravel() for d in draws]) for k in draws[0]}
    system = np.repeat(np.arange(n_systems), n_prompts)
    prompts = np.tile(np.arange(n_prompts), n_systems)
    own_a = (system == raters["Judge-A"]).astype(float)
    own_b = (system == raters["Judge-B"]).astype(float)
    out = {}
    for name, ref, comp in (("self-preference vs humans", "human", 1 - own_a),
                            ("self-preference vs other rater", "Judge-B", 1 - own_a - own_b)):
        e = col["Judge-A"] - col[ref]
        num = np.stack([e * own_a, e * comp], axis=2)
        den = np.broadcast_to(np.stack([own_a, comp], axis=1), num.shape)
        out[name] = _rows(ratio_contrasts(num, den, weights=[1.0, -1.0], clusters=prompts))
    d = col["Judge-A"] - col["human"]
    ones = np.ones_like(d)
    out["offset"] = _rows(ratio_contrasts(d, ones, clusters=prompts))
    out["MAE"] = _rows(ratio_contrasts(np.abs(d), ones, clusters=prompts))
    out["MAE"][:, 3] = np.nan  # interval only, as in `leniency`
    out["r(residual, length)"] = _rows(clustered_correlations(d, col["length"],
                                                              clusters=prompts))
    return out


def verdict_batch(n_systems: int, n_prompts: int, seeds, planted: dict) -> dict[str, np.ndarray]:
    """The estimates of `verdict_rows` for many seeds at once (same data and contributions as
    the public functions on the tables of `simulate_verdicts`, vectorised)."""
    draws = [sim.verdict_arrays(n_systems, n_prompts, np.random.default_rng(s), **planted)
             for s in seeds]
    ia, ib = draws[0]["pairs"]
    own = n_systems // 2
    # judge units: (prompt, pair) with a shown first, then with b shown first
    o1 = np.stack([d["judge_outcome"][0].ravel() for d in draws]).astype(float)
    o2 = np.stack([d["judge_outcome"][1].ravel() for d in draws]).astype(float)
    oh = np.stack([d["human_outcome"].ravel() for d in draws]).astype(float)
    length = np.stack([d["length"] for d in draws])
    sign_len = np.sign(length[:, :, ia] - length[:, :, ib]).reshape(len(seeds), -1)
    n_pairs = len(ia)
    prompts = np.repeat(np.arange(n_prompts), n_pairs)
    judge = np.concatenate([o1, o2], axis=1)
    jp = np.concatenate([prompts, prompts])
    out = {}
    # self-preference: judge verdicts on own-vs-other pairs, less the human verdict's score
    mine = (ia == own) | (ib == own)
    sel = np.tile(mine, n_prompts)
    sign = np.tile(np.where(ia == own, 1.0, -1.0), n_prompts)[sel]
    human_w = (sign * oh[:, sel] + 1) / 2
    x = np.concatenate([(sign * o1[:, sel] + 1) / 2 - human_w,
                        (sign * o2[:, sel] + 1) / 2 - human_w], axis=1)
    sp_prompts = np.concatenate([prompts[sel], prompts[sel]])
    out["self-preference (pairwise)"] = _rows(ratio_contrasts(x, np.ones_like(x),
                                                              clusters=sp_prompts))
    # length: longer won among decided verdicts of unequal lengths
    sl = np.concatenate([sign_len, sign_len], axis=1)
    used_j = (judge != 0) & (sl != 0)
    won_j = (judge == sl) & used_j
    used_h = (oh != 0) & (sign_len != 0)
    won_h = (oh == sign_len) & used_h
    out["P(prefer longer)"] = _rows(ratio_contrasts(won_j.astype(float), used_j.astype(float),
                                                    clusters=jp, null=0.5))
    zj, zh = np.zeros_like(judge), np.zeros_like(oh)
    num = np.concatenate([np.stack([won_j, zj], axis=2), np.stack([zh, won_h], axis=2)], axis=1)
    den = np.concatenate([np.stack([used_j, zj], axis=2), np.stack([zh, used_h], axis=2)],
                         axis=1)
    out["P(prefer longer) - humans"] = _rows(ratio_contrasts(
        num.astype(float), den.astype(float), weights=[1.0, -1.0],
        clusters=np.concatenate([jp, prompts])))
    # position: a is shown first in the first presentation, b in the second
    decided = judge != 0
    first_won = np.concatenate([o1 == 1, o2 == -1], axis=1) & decided
    out["first-position rate"] = _rows(ratio_contrasts(first_won.astype(float),
                                                       decided.astype(float), clusters=jp,
                                                       null=0.5))
    net = ((o1 == 1) & (o2 == -1)).astype(float) - ((o1 == -1) & (o2 == 1)).astype(float)
    out["net position flips"] = _rows(ratio_contrasts(net, np.ones_like(net), clusters=prompts))
    return out


def _check_batch(kind: str, n_systems: int, n_prompts: int, seeds, planted: dict,
                 batch: dict[str, np.ndarray]) -> None:
    """The first data sets again through the public functions on the simulated tables: the
    vectorised batch must give the same estimates, intervals and p-values."""
    fn = rating_rows if kind == "ratings" else verdict_rows
    for i, seed in enumerate(seeds[:CHECK]):
        public = fn(n_systems, n_prompts, seed, planted)
        for name, values in public.items():
            np.testing.assert_allclose(batch[name][i], values, rtol=1e-9, atol=1e-12,
                                       err_msg=f"{kind} {name} seed {seed}")


def run_cell(kind: str, n_systems: int, n_prompts: int, reps: int) -> list[dict]:
    batch_fn = rating_batch if kind == "ratings" else verdict_batch
    planted = RATINGS_PLANTED if kind == "ratings" else VERDICTS_PLANTED
    zero = dict.fromkeys(planted, 0.0)
    truth = (rating_truths if kind == "ratings" else verdict_truth)(n_systems, planted)
    results: dict[str, list] = {"null": [], "planted": []}
    for scenario, params, base in (("null", zero, 10_000), ("planted", planted, 20_000)):
        for start in range(0, reps, CHUNK):
            seeds = list(range(base + start, base + min(reps, start + CHUNK)))
            batch = batch_fn(n_systems, n_prompts, seeds, params)
            if start == 0:
                _check_batch(kind, n_systems, n_prompts, seeds, params, batch)
            results[scenario].append(batch)
    out = []
    for name in results["null"][0]:
        null = np.concatenate([b[name] for b in results["null"]])
        cov = np.concatenate([b[name] for b in results["planted"]])
        p, (est, lo, hi) = null[:, 3], cov[:, :3].T
        tested = not np.isnan(p).all()
        out.append({"data": kind, "estimand": name, "systems": n_systems, "prompts": n_prompts,
                    "reps": reps, "level": float(np.mean(p < 0.05)) if tested else None,
                    "null": NULLS.get(name, 0.0) if tested else None,
                    "truth": truth[name], "coverage": float(np.mean((lo <= truth[name])
                                                                    & (truth[name] <= hi))),
                    "mean_estimate": float(est.mean()),
                    "nan_pvalues": int(np.isnan(p).sum()) if tested else None,
                    "nan_intervals": int(np.isnan(lo).sum())})
    return out


#: Design cells of the prompt-level comparison of a rater against the system sentinel.
SENTINEL_CELLS = [(5, 20), (10, 100)]


def sentinel_delta(n_systems: int, n_prompts: int, seed: int,
                   intervals: bool = True) -> np.ndarray:
    """(delta, ci_low, ci_high) of a rater that reads the stories (Judge-A of
    `simulate_ratings`) against the system-identity sentinel of the human score, Kendall tau-b
    within each prompt: first `storyeval.bias.compare_with_system_sentinel` (its
    defaults: 500 resamples, seed 0), then `storyeval.compare.compare_prompt_level` (paired t over
    prompts) on the sentinel of `storyeval.bias.sentinel_scores`."""
    from storyeval.bias import compare_with_system_sentinel, sentinel_scores
    from storyeval.compare import compare_prompt_level

    wide = sim.simulate_ratings(n_systems, n_prompts, seed=seed, raters={"Judge-A": 0})
    if not intervals:  # the estimate only (no resampling): for the truth
        return np.array([compare_with_system_sentinel(wide, "human", "Judge-A", n_boot=2)
                         .iloc[0]["delta"]])
    boot = compare_with_system_sentinel(wide, "human", "Judge-A").iloc[0]
    wide["sentinel"] = sentinel_scores(wide, ["human"])[("system", "human")].to_numpy()
    paired = compare_prompt_level(wide, "human", "Judge-A", "sentinel").iloc[0]
    return np.array([boot["delta"], boot["ci_low"], boot["ci_high"], paired["delta"],
                     paired["ci_low"], paired["ci_high"]], dtype=np.float64)


def run_sentinel_cell(n_systems: int, n_prompts: int, reps: int) -> list[dict]:
    """Coverage of the two prompt-level intervals of (rater - sentinel). The truth, the
    expected difference of the two prompt-level correlations at this design, is the mean
    delta of ``reps`` other data sets (Monte Carlo error ``truth_mc_se``)."""
    truth_draws = np.array([sentinel_delta(n_systems, n_prompts, 30_000 + r, False)[0]
                            for r in range(reps)])
    truth = float(truth_draws.mean())
    rows = np.array([sentinel_delta(n_systems, n_prompts, 40_000 + r) for r in range(reps)])
    if not np.allclose(rows[:, 0], rows[:, 3], rtol=0, atol=1e-12):
        raise AssertionError("the two functions estimate different differences")
    out = []
    for method, (lo, hi) in (("compare_with_system_sentinel", (1, 2)),
                             ("compare_prompt_level", (4, 5))):
        covered = (rows[:, lo] <= truth) & (truth <= rows[:, hi])
        out.append({"method": method, "systems": n_systems, "prompts": n_prompts,
                    "reps": reps, "truth": truth,
                    "truth_mc_se": float(truth_draws.std(ddof=1) / np.sqrt(reps)),
                    "coverage": float(covered.mean()),
                    "mean_width": float(np.mean(rows[:, hi] - rows[:, lo])),
                    "nan_intervals": int(np.isnan(rows[:, lo]).sum())})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--data", choices=["all", "ratings", "verdicts", "sentinel"],
                        default="all",
                        help="rerun one kind only, keeping the other's rows of --out")
    args = parser.parse_args(argv)
    kinds = (("ratings", "verdicts") if args.data == "all" else
             () if args.data == "sentinel" else (args.data,))
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
    previous = (json.loads(args.out.read_text(encoding="utf-8"))
                if args.data != "all" and args.out.is_file() else {})
    if args.data in ("all", "sentinel"):
        sentinel = []
        for n_systems, n_prompts in SENTINEL_CELLS:
            for row in run_sentinel_cell(n_systems, n_prompts, args.reps):
                sentinel.append(row)
                print(f"sentinel S={n_systems:2d} P={n_prompts:3d} {row['method']:30s} "
                      f"coverage {row['coverage']:.3f}", flush=True)
    else:
        sentinel = previous.get("sentinel_prompt_level", [])
    if previous:
        kept = [r for r in previous["results"] if r["data"] not in kinds]
        results = sorted(kept + results, key=lambda r: r["data"] != "ratings")
    payload = {"benchmark": "benchmarks/bench_bias.py", "reps": args.reps, "alpha": 0.05,
               "confidence_level": 0.95, "cells": CELLS, "ratings_planted": RATINGS_PLANTED,
               "verdicts_planted": VERDICTS_PLANTED, "seconds_last_run": round(time.time() - start),
               "results": results, "sentinel_prompt_level": sentinel}
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
