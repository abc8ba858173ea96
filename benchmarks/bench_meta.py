"""Benchmark: the vectorised meta-evaluation core against a per-pair scipy loop.

Work (issue "Foundation", part 9): all 72 automatic metrics plus the criterion-matched LLM
raters of HANNA, the six criteria, overall and system levels, Kendall tau-b correlations with
the criteria, Williams tests for all pairs of raters, BH over the paper's family.

Prints: both times, the ratio, the largest difference between the two results, the wall time of
``storyeval meta --metrics all`` in a fresh process (import included) and its peak memory. The
core is timed on the loop's work (the effect-size intervals that ``meta_evaluate`` adds to every
test are left out, their point estimates kept) and again in full.

    python benchmarks/bench_meta.py
"""

from __future__ import annotations

import itertools
import os
import resource
import subprocess
import sys
import time
import warnings

import numpy as np
import pandas as pd
from scipy import stats

from storyeval.correlation.levels import snap_ties
from storyeval.data import load_hanna
from storyeval.data.selection import criterion_pairs, select_criteria, select_measures
from storyeval.exceptions import UndefinedStatisticWarning
from storyeval.meta.pipeline import meta_evaluate


def vectorised() -> pd.DataFrame:
    result = meta_evaluate(measures="all", reference="all")
    return result.correlations, result.williams


def _point_effect_sizes(wide, comp, **options):
    """The effect sizes without their intervals: the work the scipy loop does not do."""
    import storyeval.compare.procedures as compare

    sa = compare._orient(comp["r_a"], options["sign_convention"])
    sb = compare._orient(comp["r_b"], options["sign_convention"])
    size = len(sa)
    nan = np.full(size, np.nan)
    return {"delta": sa * comp["r_a"] - sb * comp["r_b"], "ci_low": nan, "ci_high": nan,
            "ci_method": np.full(size, "", dtype=object),
            "ci_reason": np.full(size, "", dtype=object)}


def vectorised_same_work() -> pd.DataFrame:
    """The core without the effect-size intervals (a bootstrap and U-statistics per test,
    which the loop does not compute): the same work as the loop."""
    import storyeval.meta.pipeline as pipeline

    full = pipeline.effect_sizes
    pipeline.effect_sizes = _point_effect_sizes
    try:
        return vectorised()
    finally:
        pipeline.effect_sizes = full


def per_pair_loop() -> tuple[pd.DataFrame, pd.DataFrame]:
    """What an analysis notebook would do: scipy per pair, Williams per test, BH per family."""
    dataset = load_hanna(include_human_stories=False)
    wide = dataset.wide()
    crits = select_criteria(dataset, "all")
    pairs = criterion_pairs(dataset.catalogue, select_measures(dataset.catalogue, "all"), crits)
    means = wide.groupby(level="system", sort=False).mean()
    # the same tie rule as the core (system means equal to 1e-12 are ties)
    means = pd.DataFrame(snap_ties(means.to_numpy()), index=means.index, columns=means.columns)
    data = {"overall": wide, "system": means}
    corr_rows, tests = [], []
    for level, frame in data.items():
        n = len(frame)
        for crit, group in pairs.groupby("criterion", sort=False):
            r = {m: stats.kendalltau(frame[m], frame[crit]).statistic for m in group["measure"]}
            corr_rows += [(m, crit, level, v) for m, v in r.items()]
            for a, b in itertools.combinations(group["measure"], 2):
                r23 = stats.kendalltau(frame[a], frame[b]).statistic
                t, p = _williams(r[a], r[b], r23, n)
                tests.append((level, crit, a, b, t, p))
    corr = pd.DataFrame(corr_rows, columns=["measure", "criterion", "level", "value"])
    will = pd.DataFrame(tests, columns=["level", "criterion", "measure_a", "measure_b", "t", "p"])
    rater = dataset.catalogue.set_index("measure")["rater"]
    will["family"] = (will["level"] + "|" + will["measure_a"].map(rater) + "|"
                      + will["measure_b"].map(rater))
    will["p_adjusted"] = will.groupby("family")["p"].transform(_bh_ignoring_nan)
    return corr, will


def _bh_ignoring_nan(p: pd.Series) -> pd.Series:
    out = p.copy()
    ok = p.notna()
    if ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method="bh")
    return out


def _williams(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """The paper's convention, written out for one test."""
    r23 = r23 * np.sign(r12) * np.sign(r13)
    r12, r13 = abs(r12), abs(r13)
    if r13 > r12:
        r12, r13 = r13, r12
    k = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    if not np.isfinite(k) or k < 0:
        return np.nan, np.nan
    t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23)) / np.sqrt(
        2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3)
    return t, stats.t.sf(t, n - 3)


def timed(func, repeat: int = 1):
    """The output of ``func`` and the median wall time of ``repeat`` runs (seconds)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = func()
        times.append(time.perf_counter() - start)
    return out, float(np.median(times))


CLI = ["-m", "storyeval", "meta", "--metrics", "all"]

# Runs the same command and prints the process's own peak resident memory (kB). The rusage of
# a child counts the memory of this (large) process at fork time; /proc's VmHWM does not.
PEAK_PROBE = """
import runpy, sys
sys.argv = ["storyeval", *sys.argv[1:]]
try:
    runpy.run_module("storyeval", run_name="__main__")
finally:
    with open("/proc/self/status") as status:
        peak = [line.split()[1] for line in status if line.startswith("VmHWM")]
    print(peak[0], file=sys.stderr)
"""


def cli_run() -> tuple[float, float | None]:
    """Wall time of `storyeval meta --metrics all` in a new process (import included) and its
    peak resident memory in MB (None where /proc is missing)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, *CLI], stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    if not os.path.exists("/proc/self/status"):
        return wall, None
    probe = subprocess.run([sys.executable, "-c", PEAK_PROBE, *CLI[2:]], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return wall, int(probe.stderr.split()[-1]) / 1024


def main() -> None:
    warnings.simplefilter("ignore", UndefinedStatisticWarning)
    meta_evaluate(measures="BLEU", levels="system")  # warm imports for a fair in-process timing
    # The core takes well under a second, so its time is the median of 5 runs (this machine's
    # load varies); the loop takes half a minute and runs once.
    (v_corr, v_will), t_vec = timed(vectorised_same_work, repeat=5)
    _, t_full = timed(vectorised, repeat=5)
    (l_corr, l_will), t_loop = timed(per_pair_loop)
    key_c = ["measure", "criterion", "level"]
    merged = v_corr.merge(l_corr, on=key_c, suffixes=("_vec", "_loop"))
    key_w = ["level", "criterion", "measure_a", "measure_b"]
    merged_w = v_will.merge(l_will, on=key_w, suffixes=("_vec", "_loop"))
    assert len(merged) == len(v_corr) == len(l_corr), "correlation rows differ"
    assert len(merged_w) == len(v_will) == len(l_will), "Williams rows differ"
    d_corr = np.nanmax(np.abs(merged["value_vec"] - merged["value_loop"]))
    d_p = np.nanmax(np.abs(merged_w["p_adjusted_vec"] - merged_w["p_adjusted_loop"])[
        merged_w["reason"] == ""])
    # The core returns NaN with a reason where the test is undefined (e.g. two identical
    # measures: 0/0); the naive loop may return a number there from rounding noise.
    defined = merged_w["reason"] == ""
    assert merged_w.loc[defined, "p_adjusted_loop"].notna().all(), "undefined tests differ"
    n_undefined = int((~defined).sum())
    wall, peak = cli_run()
    print(f"work: {len(v_corr)} correlations, {len(v_will)} Williams tests (all pairs), BH")
    print(f"vectorised core:      {t_vec:8.2f} s   (median of 5 runs)")
    print(f"per-pair scipy loop:  {t_loop:8.2f} s")
    print(f"speed-up:             {t_loop / t_vec:8.1f} x   (target >= 50 x)")
    print(f"the core with the effect-size intervals of every test (bootstrap at the system "
          f"level, U-statistics overall; not in the loop): {t_full:.2f} s")
    print(f"max |diff| correlations {d_corr:.2e}, adjusted p {d_p:.2e} "
          f"({n_undefined} tests undefined in the core, NaN with a reason)")
    memory = f"peak RSS {peak:.0f} MB" if peak is not None else "peak RSS not measured"
    print(f"`storyeval meta --metrics all`: {wall:.2f} s wall incl. import (target < 2 s), "
          f"{memory} (target < 1024 MB)")
    print(f"this process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
