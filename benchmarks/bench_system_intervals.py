"""Candidate system-level intervals and their tests (issue 35): level and coverage.

The system-level mid-p permutation test (`permutation-midp`) holds its level, but the interval
that inverts it, a location shift of the swaps' distribution, covers E[delta | these systems]
less often than 0.95 when the measures differ (docs "Which test?"). This script measures, on the
data-generating processes of `bench_calibration.py` (5, 10, 20 systems x 50 prompts; fixed
seeds), each candidate procedure as one test and an interval that agrees with it by
construction (it excludes 0 exactly when the test rejects), and prints its level under the null
(P(p < 0.05), exchangeable measures) and
its coverage of E[delta | these systems] at 50 prompts under the alternatives (the target from
`bench_calibration.system_targets`, ``--inner`` new draws of the prompts):

* ``midp-shift``: the mid-p test over prompt swaps and the interval that inverts it
  (`storyeval.compare.procedures._midp_interval`; without the system tie rule; the default
  interval until the test-compatible one below);
* ``boot-z``: ``delta / se`` against N(0, 1), ``se`` the standard deviation of delta over
  ``--boot`` bootstrap resamples of prompts (h, a and b together);
* ``jack-t``: delete-one-prompt jackknife standard error, t with P - 1 df;
* ``jack5-t``: delete-a-group jackknife over 5 groups of prompts, t with 4 df;
* ``midp-h``: the mid-p shift interval widened to ``sqrt(c^2 + se_h^2)``, ``se_h`` the
  jackknife standard error of delta when only the human system means are perturbed (the
  variance the swaps miss: they hold the human scores fixed); its test is its inversion;
* ``midp-hd``: the same with the human-score part debiased, ``sqrt(c^2 + 1.96^2 max(0,
  se_h^2 - mean* se_h*^2))``, the mean over the first 100 swaps (where a and b are
  exchangeable and that part of the variance is 0 in expectation);
* ``midp-hp``: ``midp-hd`` widened only where ``se_h^2`` exceeds the 95th percentile of the
  100 swaps' values (a pre-test: under exchangeability about 5% of data sets are widened);
* ``stud-boot``, ``stud-jack10``, ``stud-h``, ``stud-hc1``, ``stud-hc4`` (5 systems only: a
  standard error per swap): studentised permutation tests, ``T = delta / s`` against the swaps'
  ``delta* / s*`` (mid-p), each swap's ``s*`` the same function of the swapped data; interval
  ``delta +- q s``. ``s``: the bootstrap s.d. over 50 resamples of prompts; the delete-a-group
  jackknife over 10 groups; ``se_h`` (as in ``midp-h``); ``sqrt(c^2 + k se_h^2)``, k = 1, 4;
* ``hyb-boot0``: the mid-p test with the test-compatible interval of
  `storyeval.compare.procedures.compatible_interval` (the default since issue 35): ``delta +-
  max(c, 1.96 se)`` with ``se`` from ``boot-z``, where that covers 0 only if the mid-p
  interval does; where the test rejects, the side towards 0 is cut at 0 (open);
* ``hyb-boot``: the same, but where the test rejects the side towards 0 stays at the mid-p
  interval's end; ``hyb-h0``, ``hyb-h``: the same two with ``midp-h``'s width.

Correlations from `storyeval.correlation.kernel.pairwise_correlations` (Kendall tau-b and
Pearson of the system means; measures z-scored over stories as the default test does).

Run: ``nice -n 10 python benchmarks/bench_system_intervals.py --reps 300 [--page
docs/which-test.md]`` (the table goes between the page's ``system-intervals`` markers).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_calibration as bc  # noqa: E402

from storyeval.compare.procedures import _midp_interval, compatible_interval  # noqa: E402
from storyeval.correlation.kernel import pairwise_correlations  # noqa: E402

NULL_DGPS = ("base", "weak", "heavy-tails", "likert-1")
ALT_DGPS = ("alt-base", "alt-weak", "alt-heavy-tails", "alt-likert-1", "alt-system-bias")
CANDIDATES = ("midp-shift", "boot-z", "jack-t", "jack5-t", "midp-h", "midp-hd",
              "midp-hp", "stud-boot", "stud-jack10", "stud-h", "stud-hc1", "stud-hc4",
              "hyb-h", "hyb-h0", "hyb-boot", "hyb-boot0")
# the studentised permutation tests recompute a standard error for every swap (1,000 swaps x
# 50 bootstrap resamples or 50 jackknife deletions per data set): run only at these sizes
# (--studentised-sizes)
STUDENTISED_SIZES: tuple[int, ...] = ()
NULL_SIZES, ALT_SIZES = (5, 10, 20), (5, 10)


def deltas(X: np.ndarray, method: str) -> np.ndarray:
    """``r(h, a) - r(h, b)`` of X (..., S, 3) (columns h, a, b)."""
    shape = X.shape[:-2]
    flat = X.reshape(-1, *X.shape[-2:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        R = pairwise_correlations(flat, method=method, warn=False).statistic
    return (R[:, 0, 1] - R[:, 0, 2]).reshape(shape)


def _jackknife_se(x: np.ndarray, method: str, groups: int, columns=(0, 1, 2)) -> np.ndarray:
    """Delete-a-group jackknife s.e. of delta, (R,), over ``groups`` groups of prompts; only
    ``columns`` are recomputed without the group (the others keep their full means)."""
    R, S, P, _ = x.shape
    g = np.arange(P) % groups
    full = x.mean(2)
    out = np.broadcast_to(full, (groups,) + full.shape).copy()
    tot = x.sum(2)
    for k in range(groups):
        part = (tot - x[:, :, g == k].sum(2)) / (P - np.sum(g == k))
        out[k][..., list(columns)] = part[..., list(columns)]
    th = deltas(out, method)  # (G, R)
    return np.sqrt((groups - 1) / groups * ((th - th.mean(0)) ** 2).sum(0))


SWAPS_FOR_BIAS = 100
STUD_BOOT = 50


def _swapped_human_variance(x: np.ndarray, swapped: np.ndarray, method: str,
                            chunk: int = 20) -> np.ndarray:
    """The human-only jackknife variance of delta of each given swap (n, R, S, 3 system
    means), (n, R)."""
    R, S, P, _ = x.shape
    h_loo = ((x[..., 0].sum(2)[..., None] - x[..., 0]) / (P - 1)).transpose(2, 0, 1)  # (P,R,S)
    out = np.empty((len(swapped), R))
    for start in range(0, R, chunk):
        part = slice(start, min(R, start + chunk))
        X = np.broadcast_to(swapped[:, None, part], (len(swapped), P) + swapped[:, part].shape[1:]
                            ).copy()  # (n, P, r, S, 3)
        X[..., 0] = h_loo[None, :, part]
        th = deltas(X, method)  # (n, P, r)
        out[:, part] = (P - 1) / P * ((th - th.mean(1, keepdims=True)) ** 2).sum(1)
    return out


def _swapped_boot_se(x: np.ndarray, masks: np.ndarray, W: np.ndarray, method: str,
                     chunk: int = 25) -> np.ndarray:
    """Bootstrap s.e. of delta for the data with a and b swapped in the prompts of each mask
    (masks (N, P), bootstrap counts W (B, P)), (N, R)."""
    R, S, P, _ = x.shape
    diff = (x[..., 2] - x[..., 1]).transpose(2, 0, 1).reshape(P, -1)  # (P, R*S)
    boot = (W @ x.transpose(2, 0, 1, 3).reshape(P, -1) / P).reshape(len(W), R, S, 3)
    out = np.empty((len(masks), R))
    for start in range(0, len(masks), chunk):
        mk = masks[start:start + chunk]
        move = ((mk[:, None, :] * W[None]) @ diff / P).reshape(len(mk), len(W), R, S)
        X = np.broadcast_to(boot, (len(mk),) + boot.shape).copy()
        X[..., 1] += move
        X[..., 2] -= move
        th = deltas(X, method)  # (n, B, R)
        out[start:start + chunk] = np.nanstd(th, axis=1, ddof=1)
    return out


def _swapped_group_jack_se(x: np.ndarray, masks: np.ndarray, method: str,
                           groups: int) -> np.ndarray:
    """Delete-a-group jackknife s.e. of delta (``groups`` groups of prompts) for the data
    swapped by each mask, (N, R)."""
    R, S, P, _ = x.shape
    g = np.arange(P) % groups
    G = (g[None, :] == np.arange(groups)[:, None]).astype(float)  # (G, P)
    keep = 1.0 - G
    n_keep = keep.sum(1)
    diff = (x[..., 2] - x[..., 1]).transpose(2, 0, 1).reshape(P, -1)
    part = (keep @ x.transpose(2, 0, 1, 3).reshape(P, -1)).reshape(groups, R, S, 3)
    part /= n_keep[:, None, None, None]
    move = ((masks[:, None, :] * keep[None]) @ diff / n_keep[None, :, None]).reshape(
        len(masks), groups, R, S)
    X = np.broadcast_to(part, (len(masks),) + part.shape).copy()
    X[..., 1] += move
    X[..., 2] -= move
    th = deltas(X, method)  # (N, G, R)
    return np.sqrt((groups - 1) / groups * ((th - th.mean(1, keepdims=True)) ** 2).sum(1))


def _studentised(d: np.ndarray, se: np.ndarray, perm: np.ndarray, se_perm: np.ndarray,
                 alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """The interval inverting the mid-p permutation test of ``T = delta / se`` against the
    swaps' ``T* = delta* / se*``: ``delta +- c se``, ``c`` the mid-p critical value."""
    # s floored at 1% of the swaps' median (the same floor for the data and every swap: a
    # Kendall delta of 5 system means often has s = 0, and delta / 0 is no statistic)
    floor = np.maximum(0.01 * np.nanmedian(se_perm, axis=0), 1e-12)
    se = np.maximum(se, floor)
    t_perm = perm / np.maximum(se_perm, floor)
    lo, hi = _midp_interval(np.zeros_like(d), t_perm, alpha)
    return d + lo * se, d + hi * se


def _compatible(d: np.ndarray, lo: np.ndarray, hi: np.ndarray, w: np.ndarray,
                clip_at_zero: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``d +- max(w, c)`` where the test's interval ``[lo, hi]`` covers 0; where it excludes 0,
    only the side away from 0 is widened (``clip_at_zero``: the side towards 0 too, but not
    to 0), so that 0 is covered exactly when the test's interval covers it."""
    w = np.maximum(w, np.maximum(hi - d, d - lo))
    wlo, whi = d - w, d + w
    pos, neg = lo > 0, hi < 0
    if clip_at_zero:
        eps = 1e-9
        wlo = np.where(pos, np.maximum(wlo, np.minimum(lo, eps)), wlo)
        whi = np.where(neg, np.minimum(whi, np.maximum(hi, -eps)), whi)
    else:
        wlo = np.where(pos, lo, wlo)
        whi = np.where(neg, hi, whi)
    return wlo, whi


def _studentised_candidates(x, base, d, c, perm, swapped, masks, W, method) -> dict:
    """The studentised permutation tests (``T = delta / s`` against the swaps' ``delta* /
    s*``, each swap's ``s*`` computed on the swapped data) and their intervals."""
    P = x.shape[2]
    out = {}
    all_masks = np.vstack([np.zeros((1, P)), masks])
    se_all = _swapped_boot_se(x, all_masks, W[:STUD_BOOT], method)
    out["stud-boot"] = (d,) + _studentised(d, se_all[0], perm, se_all[1:])
    v_all = _swapped_human_variance(x, np.concatenate([base[None], swapped]), method)
    for name, k in (("stud-h", None), ("stud-hc1", 1.0), ("stud-hc4", 4.0)):
        s_all = np.sqrt(v_all) if k is None else np.sqrt(c[None] ** 2 + k * v_all)
        out[name] = (d,) + _studentised(d, s_all[0], perm, s_all[1:])
    se_all = _swapped_group_jack_se(x, all_masks, method, 10)
    out["stud-jack10"] = (d,) + _studentised(d, se_all[0], perm, se_all[1:])
    return out


def procedures(h: np.ndarray, m: np.ndarray, method: str, rng: np.random.Generator,
               n_perm: int, n_boot: int, studentised: bool = True) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """(delta, reject at 0.05, (low, high)) of every candidate for R data sets
    (h (R, S, P), m (R, S, P, 2))."""
    R, S, P, _ = m.shape
    z = (m - m.mean((1, 2), keepdims=True)) / m.std((1, 2), keepdims=True)
    x = np.concatenate([h[..., None], z], -1)  # (R, S, P, 3)
    base = x.mean(2)
    d = deltas(base, method)
    out = {}
    # permutation (prompt swaps), mid-p, and its shift interval
    masks = (rng.random((n_perm, P)) < 0.5).astype(float)
    move = (masks @ (x[..., 2] - x[..., 1]).transpose(2, 0, 1).reshape(P, -1) / P)
    swapped = np.broadcast_to(base, (n_perm,) + base.shape).copy()
    swapped[..., 1] += move.reshape(n_perm, R, S)
    swapped[..., 2] -= move.reshape(n_perm, R, S)
    perm = deltas(swapped, method)  # (N, R)
    lo, hi = _midp_interval(d, perm, 0.05)
    out["midp-shift"] = (d, lo, hi)
    c = hi - d
    se_h = _jackknife_se(x, method, P, columns=(0,))
    wide = np.sqrt(c**2 + se_h**2)
    out["midp-h"] = (d, d - wide, d + wide)
    # the same, debiased: minus the mean of se_h^2 over the first swaps (where a and b are
    # exchangeable and the human-driven part of delta's variance is 0 in expectation)
    v_perm = _swapped_human_variance(x, swapped[:SWAPS_FOR_BIAS], method)
    extra = np.maximum(se_h**2 - v_perm.mean(0), 0.0)
    wide = np.sqrt(c**2 + stats.norm.ppf(0.975) ** 2 * extra)
    out["midp-hd"] = (d, d - wide, d + wide)
    # the same, widened only where se_h^2 exceeds the 95th percentile of the swaps' values
    # (under exchangeability in about 5% of data sets)
    extra = np.where(se_h**2 > np.quantile(v_perm, 0.95, axis=0), extra, 0.0)
    wide = np.sqrt(c**2 + stats.norm.ppf(0.975) ** 2 * extra)
    out["midp-hp"] = (d, d - wide, d + wide)
    # bootstrap s.e. over prompts
    idx = rng.integers(0, P, (n_boot, P))
    W = np.zeros((n_boot, P))
    np.add.at(W, (np.repeat(np.arange(n_boot), P), idx.ravel()), 1.0)
    boot = deltas((W @ x.transpose(2, 0, 1, 3).reshape(P, -1) / P).reshape(n_boot, R, S, 3),
                  method)
    se = se_boot = np.nanstd(boot, axis=0, ddof=1)
    q = stats.norm.ppf(0.975)
    out["boot-z"] = (d, d - q * se, d + q * se)
    # studentised permutation: T = delta / se against the swaps' delta* / se*
    if studentised:
        out.update(_studentised_candidates(x, base, d, c, perm, swapped, masks, W, method))
    # test-compatible widening: a wider interval where it does not change whether 0 is covered
    for name, wide_name in (("hyb-h", "midp-h"), ("hyb-boot", "boot-z")):
        _, wlo, whi = out[wide_name]
        out[name] = (d,) + _compatible(d, lo, hi, whi - d)
        out[name + "0"] = (d,) + _compatible(d, lo, hi, whi - d, clip_at_zero=True)
    # the default: storyeval's own function on the same bootstrap s.e.
    out["hyb-boot0"] = (d,) + compatible_interval(d, lo, hi, se_boot, 0.95)
    for name, groups in (("jack-t", P), ("jack5-t", 5)):
        se = _jackknife_se(x, method, groups)
        q = stats.t.ppf(0.975, groups - 1)
        out[name] = (d, d - q * se, d + q * se)
    return out


def run(reps: int, seed: int, methods: tuple[str, ...], inner: int, n_perm: int,
        n_boot: int, sizes: tuple[int, ...] | None = None,
        dgps: tuple[str, ...] | None = None) -> list[dict]:
    rows = []
    null_sizes = sizes or NULL_SIZES
    alt_sizes = sizes or ALT_SIZES
    for method in methods:
        for null, names, sizes in ((True, NULL_DGPS, null_sizes), (False, ALT_DGPS, alt_sizes)):
            for name in (n for n in names if dgps is None or n in dgps):
                for S in sizes:
                    t0 = time.time()
                    dgp = (bc.DGPS if null else bc.COVERAGE_DGPS)[name]
                    rng = np.random.default_rng([seed, S, bc.hash_name(name)])
                    h, m, eff = bc.simulate_full(dgp, reps, S, bc.PROMPTS, 2, rng, True)
                    res = procedures(h, m, method, rng, n_perm, n_boot,
                                     S in STUDENTISED_SIZES)
                    target = (None if null else bc.system_targets(
                        dgp, eff, bc.PROMPTS, (method,), inner, rng)[method]["at_prompts"])
                    for cand, (d, lo, hi) in res.items():
                        reject = float(np.mean((lo > 0) | (hi < 0)))
                        cover = (math.nan if target is None
                                 else float(np.mean((lo <= target) & (target <= hi))))
                        rows.append({"method": method, "dgp": name, "systems": S,
                                     "candidate": cand, "reject": reject, "cover": cover,
                                     "width": float(np.mean(hi - lo)), "reps": reps})
                    print(f"# {method} {name} {S}: " + ", ".join(
                        f"{r['candidate']} {r['cover'] if not null else r['reject']:.3f}"
                        for r in rows[-len(res):]) + f" ({time.time() - t0:.0f} s)", flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    import pandas as pd

    frame = pd.DataFrame(rows)
    ran = set(frame["candidate"])
    null_sizes = sorted({int(s) for s in frame[frame["dgp"].isin(NULL_DGPS)]["systems"]})
    alt_sizes = sorted({int(s) for s in frame[frame["dgp"].isin(ALT_DGPS)]["systems"]})
    lines = []
    for method, part in frame.groupby("method", sort=False):
        null = part[part["dgp"].isin(NULL_DGPS)]
        alt = part[part["dgp"].isin(ALT_DGPS)]
        lines += [f"**{method}**: level under the null, P(p < 0.05), min-max over "
                  f"{', '.join(dict.fromkeys(null['dgp']))}; coverage of E[delta | these "
                  f"systems], min-max over {', '.join(dict.fromkeys(alt['dgp']))}:", "",
                  "| candidate | " + " | ".join(f"level {s}" for s in null_sizes) + " | "
                  + " | ".join(f"coverage {s}" for s in alt_sizes) + " |",
                  "| --- |" + " ---: |" * (len(null_sizes) + len(alt_sizes))]
        for cand in (c for c in CANDIDATES if c in ran):
            cells = []
            for S in null_sizes:
                v = null[(null["candidate"] == cand) & (null["systems"] == S)]["reject"]
                cells.append(f"{v.min():.3f}-{v.max():.3f}" if len(v) else "not run")
            for S in alt_sizes:
                v = alt[(alt["candidate"] == cand) & (alt["systems"] == S)]["cover"]
                cells.append(f"{v.min():.3f}-{v.max():.3f}" if len(v) else "not run")
            lines.append(f"| `{cand}` | " + " | ".join(cells) + " |")
        lines.append("")
    reps = int(frame["reps"].iloc[0])
    lines.append(f"Replications per cell: {reps} (Monte Carlo s.e. about "
                 f"{math.sqrt(0.05 * 0.95 / reps):.3f} for a level of 0.05 or a coverage of "
                 "0.95).")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default="kendall_b,pearson")
    parser.add_argument("--inner", type=int, default=100)
    parser.add_argument("--permutations", type=int, default=1000)
    parser.add_argument("--boot", type=int, default=400)
    parser.add_argument("--sizes", help="numbers of systems (comma-separated; default 5, 10, "
                                        "20 under the null, 5, 10 under the alternatives)")
    parser.add_argument("--dgps", help="these data-generating processes only (comma-separated)")
    parser.add_argument("--studentised-sizes", default="",
                        help="run the studentised candidates at these numbers of systems "
                             "(comma-separated; a standard error per swap: slow)")
    parser.add_argument("--markers", default="system-intervals",
                        help="--page: the name in the page's markers (<!-- NAME:start -->)")
    parser.add_argument("--page", help="put the table into this page between its "
                                       "markers (--markers)")
    args = parser.parse_args(argv)
    global STUDENTISED_SIZES
    STUDENTISED_SIZES = tuple(int(v) for v in args.studentised_sizes.split(",") if v)
    sizes = tuple(int(v) for v in args.sizes.split(",")) if args.sizes else None
    t0 = time.time()
    rows = run(args.reps, args.seed, tuple(args.methods.split(",")), args.inner,
               args.permutations, args.boot, sizes,
               tuple(args.dgps.split(",")) if args.dgps else None)
    text = markdown(rows)
    footer = (f"Generated by `nice -n 10 python benchmarks/bench_system_intervals.py --reps "
              f"{args.reps} --seed {args.seed} --methods {args.methods} --inner {args.inner} "
              f"--permutations {args.permutations} --boot {args.boot}"
              + (f" --sizes {args.sizes}" if args.sizes else "")
              + (f" --dgps {args.dgps}" if args.dgps else "")
              + (f" --studentised-sizes {args.studentised_sizes}" if args.studentised_sizes
                 else "") + "` (in "
              f"{time.time() - t0:.0f} s on a shared, busy 2-core machine).")
    print(text + "\n" + footer)
    if args.page:
        bc.write_page(args.page, text + "\n" + footer + "\n",
                      (f"<!-- {args.markers}:start -->", f"<!-- {args.markers}:end -->"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
