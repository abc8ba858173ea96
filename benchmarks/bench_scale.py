"""Benchmark: the meta-evaluation core from 960 to 1,000,000 stories (issue 13).

Synthetic long score tables: 10 systems x P prompts, 6 human criteria (means of three 1-5
ratings, 13 levels), 30 automatic metrics (every fifth rounded to 0.1, so with ties); at
1,000,000 stories 10 metrics (16 measures). For each size, in fresh processes:

* the meta-evaluation core through the API: ``read_dataset`` of the long table, Kendall tau-b
  of every pair of the 36 (16) measures at the overall and system levels
  (``correlation_grid``), and the Williams tests of every pair of metrics for every criterion
  at both levels (``williams_test``; 6 x 435 x 2 = 5,220 tests with 30 metrics): wall time
  (import included) and peak RSS (the process's VmHWM); the Kendall time is that of the
  counts, the one-time load of the compiled kernels (numba) is timed on its own before them,
  as the scipy loop's time leaves out importing scipy.stats;
* up to ``--bootstrap-max-stories`` (default 100,000), ``bootstrap_correlations`` of every
  metric with every criterion (tau-b, overall level, 1,000 resamples of prompts; what
  ``--ci bootstrap`` adds): wall time of the call and peak RSS;
* up to ``--cli-max-stories`` (default 10,000), the whole command ``storyeval meta --data
  FILE --criteria ... --metrics all --reference all --test williams --no-figures --format csv
  --out D``, which adds the reports and, with the comparison-test feature, the effect sizes
  and their intervals: wall time (import included) and peak RSS (the process's VmHWM);
* the default path (issue 26): ``meta_evaluate`` with its defaults on the dataset read (all
  pairs of metrics per criterion, the calibrated tests with their intervals), and the same
  with ``reference="none"`` (the correlations only): time of the call (after the compiled
  kernels' one-time load), process wall (reading and imports included) and peak RSS;
* reading and validating the long table alone (``read_dataset``);
* a plain ``scipy.stats.kendalltau`` loop over the pairs the Williams tests need (every metric
  with every criterion and with every other metric): wall time of the loop and peak RSS.

Prints a Markdown table, writes it with the raw numbers to ``benchmarks/bench_scale.json`` and
draws ``docs/img/bench_scale.png`` (log-log).

    python benchmarks/bench_scale.py                 # all sizes (about 20 minutes)
    python benchmarks/bench_scale.py --max-stories 20000 --cli-max-stories 0
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
CRITERIA = ["Relevance", "Coherence", "Empathy", "Surprise", "Engagement", "Complexity"]
# (prompts, metrics) with 10 systems: 960, 10^4, 10^5 and 10^6 stories
SIZES = [(96, 30), (1_000, 30), (10_000, 30), (100_000, 10)]
SYSTEMS = 10
BOOT_RESAMPLES = 1000


def make_wide(n_prompts: int, n_metrics: int, seed: int = 0) -> pd.DataFrame:
    """One row per story: system, prompt_id, the criteria, the metrics."""
    rng = np.random.default_rng(seed)
    n = n_prompts * SYSTEMS
    latent = np.repeat(rng.normal(size=SYSTEMS), n_prompts) + rng.normal(size=n)
    cols = {}
    for crit in CRITERIA:
        ratings = np.clip(np.rint(3 + latent[:, None] + rng.normal(size=(n, 3))), 1, 5)
        cols[crit] = ratings.mean(axis=1)
    for k in range(n_metrics):
        value = latent * rng.uniform(0.1, 1.0) + rng.normal(size=n)
        cols[f"metric{k:02d}"] = np.round(value, 1) if k % 5 == 0 else value
    wide = pd.DataFrame(cols)
    wide.insert(0, "prompt_id", np.tile(np.arange(n_prompts), SYSTEMS))
    wide.insert(0, "system", np.repeat([f"sys{s}" for s in range(SYSTEMS)], n_prompts))
    return wide


def write_long(path: Path, n_prompts: int, n_metrics: int) -> int:
    """The long table (system, prompt_id, measure, value) as CSV; returns its rows."""
    long = make_wide(n_prompts, n_metrics).melt(id_vars=["system", "prompt_id"],
                                                var_name="measure", value_name="value")
    long.to_csv(path, index=False)
    return len(long)


# Runs a snippet and prints its own peak resident memory (kB) on stderr: the rusage of a
# child counts the memory of the (large) benchmark process at fork time; VmHWM does not.
def _probe(body: str) -> str:
    return f"""
import sys, time
try:
{body}
finally:
    with open("/proc/self/status") as status:
        print([l.split()[1] for l in status if l.startswith("VmHWM")][0], file=sys.stderr)
"""


CLI_BODY = """
    import runpy
    sys.argv = ["storyeval", *sys.argv[1:]]
    runpy.run_module("storyeval", run_name="__main__")
"""

CORE_BODY = """
    import numpy as np
    from storyeval.data import read_dataset
    from storyeval.correlation.levels import correlation_grid
    from storyeval.compare.williams import williams_test
    crits = sys.argv[2].split(",")
    ds = read_dataset(sys.argv[1], criteria=crits)
    wide = ds.wide()
    metrics = [c for c in wide.columns if c not in crits]
    measures = metrics + crits
    ia, ib = np.triu_indices(len(metrics), 1)
    ic = np.arange(len(metrics), len(measures))[:, None]
    tests = 0
    from storyeval.correlation.compiled import warm_up
    start = time.perf_counter()
    warm_up()  # the compiled kernels' one-time load, timed on its own
    load = time.perf_counter() - start
    for level in ("overall", "system"):
        start = time.perf_counter()
        grid = correlation_grid(wide, measures, measures, level=level)
        if level == "overall":
            kendall = time.perf_counter() - start
        r, n = grid.value, grid.n
        res = williams_test(r[ia, ic], r[ib, ic], r[ia, ib], n[ia, ib])
        tests += np.size(res.statistic)
    print(tests, kendall, load)
"""

BOOT_BODY = """
    from storyeval.data import read_dataset
    from storyeval.resample import bootstrap_correlations
    crits = sys.argv[2].split(",")
    wide = read_dataset(sys.argv[1], criteria=crits).wide()
    pairs = [(m, c) for m in wide.columns if m not in crits for c in crits]
    start = time.perf_counter()
    bootstrap_correlations(wide, pairs, level="overall", n_resamples=int(sys.argv[3]),
                           random_state=0, show_progress=False)
    print(time.perf_counter() - start, len(pairs))
"""

READ_BODY = """
    start = time.perf_counter()
    from storyeval.data import read_dataset
    ds = read_dataset(sys.argv[1], criteria=sys.argv[2].split(","))
    print(time.perf_counter() - start)
"""

# the default path of `storyeval meta` through the API (all pairs of metrics per criterion,
# the default calibrated tests with their intervals), or the correlations only (argv[3] "none")
DEFAULT_BODY = """
    import warnings
    from storyeval.data import read_dataset
    from storyeval.meta.pipeline import meta_evaluate
    warnings.simplefilter("ignore")
    from storyeval.correlation.compiled import warm_up
    crits = sys.argv[2].split(",")
    ds = read_dataset(sys.argv[1], criteria=crits)
    warm_up()  # the compiled kernels' one-time load (the command overlaps it with reading)
    start = time.perf_counter()
    res = meta_evaluate(ds, criteria=crits, reference=sys.argv[3])
    print(time.perf_counter() - start, len(res.williams))
"""

SCIPY_BODY = """
    import itertools
    from scipy import stats
    sys.path.insert(0, sys.argv[1])
    from bench_scale import make_wide, CRITERIA
    wide = make_wide(int(sys.argv[2]), int(sys.argv[3]))
    metrics = [c for c in wide.columns if c.startswith("metric")]
    cols = {c: wide[c].to_numpy() for c in wide.columns[2:]}
    pairs = [(m, c) for m in metrics for c in CRITERIA] + list(itertools.combinations(metrics, 2))
    start = time.perf_counter()
    for a, b in pairs:
        stats.kendalltau(cols[a], cols[b])
    print(time.perf_counter() - start, len(pairs))
"""


def _williams_option() -> list[str]:
    """``--test williams`` where ``storyeval meta`` chooses among comparison tests: the issue's
    targets are for the Williams tests of all pairs."""
    help_text = subprocess.run([sys.executable, "-m", "storyeval", "meta", "--help"],
                               capture_output=True, text=True, check=True).stdout
    return ["--test", "williams"] if "--test " in help_text else []


WILLIAMS = _williams_option()


def run(body: str, args: list[str]) -> tuple[float, float, str]:
    """(wall seconds, peak RSS in MB, stdout) of a fresh Python process running ``body``."""
    env = {**os.environ, "STORYEVAL_NO_PROGRESS": "1", "MPLBACKEND": "Agg",
           "HF_HUB_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _probe(body), *args], env=env, check=True,
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak = int(done.stderr.split()[-1]) / 1024
    return wall, peak, done.stdout


def measure(n_prompts: int, n_metrics: int, folder: Path, cli_max: int,
            boot_max: int) -> dict:
    data = folder / f"long_{n_prompts}.csv"
    rows = write_long(data, n_prompts, n_metrics)
    crits = ",".join(CRITERIA)
    cli = ["--data", str(data), "--criteria", crits, "--metrics", "all", "--reference", "all",
           *WILLIAMS, "--no-figures", "--format", "csv", "--out", str(folder / f"out_{n_prompts}"),
           "--overwrite"]
    wall, peak, out = run(CORE_BODY, [str(data), crits])
    n_tests, kendall, load = int(out.split()[0]), float(out.split()[1]), float(out.split()[2])
    boot = boot_peak = boot_pairs = None
    if n_prompts * SYSTEMS <= boot_max:
        _, boot_peak, out = run(BOOT_BODY, [str(data), crits, str(BOOT_RESAMPLES)])
        boot, boot_pairs = float(out.split()[0]), int(out.split()[1])
    cli_wall = cli_peak = None
    if n_prompts * SYSTEMS <= cli_max:
        cli_wall, cli_peak, _ = run(CLI_BODY, ["meta", *cli])
    default_wall, default_peak, out = run(DEFAULT_BODY, [str(data), crits, "all"])
    default_s, comparisons = float(out.split()[0]), int(out.split()[1])
    corr_wall, corr_peak, out = run(DEFAULT_BODY, [str(data), crits, "none"])
    corr_s = float(out.split()[0])
    _, _, out = run(READ_BODY, [str(data), crits])
    read = float(out.split()[0])
    _, scipy_peak, out = run(SCIPY_BODY, [str(ROOT / "benchmarks"), str(n_prompts),
                                          str(n_metrics)])
    scipy_loop, n_pairs = float(out.split()[0]), int(out.split()[1])
    data.unlink()
    return {"stories": n_prompts * SYSTEMS, "measures": len(CRITERIA) + n_metrics,
            "rows": rows, "pairs": n_pairs, "williams_tests": n_tests, "kendall_s": kendall,
            "numba_load_s": load, "bootstrap_s": boot, "bootstrap_mb": boot_peak,
            "bootstrap_pairs": boot_pairs, "storyeval_s": wall,
            "storyeval_mb": peak, "read_s": read, "scipy_s": scipy_loop, "scipy_mb": scipy_peak,
            "cli_s": cli_wall, "cli_mb": cli_peak,
            "default_s": default_s, "default_wall_s": default_wall, "default_mb": default_peak,
            "default_comparisons": comparisons, "correlations_s": corr_s,
            "correlations_wall_s": corr_wall, "correlations_mb": corr_peak}


def table(results: list[dict]) -> str:
    header = ("| stories | measures (long rows) | storyeval core, wall (Williams tests) | peak RSS "
              "| of which reading + validating | of which tau-b of all pairs, overall "
              "(+ one-time load of the compiled kernels) "
              "| scipy loop (pairs) | loop peak RSS | scipy loop / storyeval tau-b "
              f"| `--ci bootstrap`: {BOOT_RESAMPLES:,} resamples, overall (pairs), peak RSS "
              "| `storyeval meta` command |")
    lines = [header,
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        cli = ("-" if r["cli_s"] is None
               else f"{r['cli_s']:.1f} s, {r['cli_mb']:,.0f} MB")
        boot = ("-" if r.get("bootstrap_s") is None else
                f"{r['bootstrap_s']:.1f} s ({r['bootstrap_pairs']}), "
                f"{r['bootstrap_mb']:,.0f} MB")
        lines.append(
            f"| {r['stories']:,} | {r['measures']} ({r['rows']:,}) | {r['storyeval_s']:.1f} s "
            f"({r['williams_tests']:,}) | {r['storyeval_mb']:,.0f} MB | {r['read_s']:.1f} s "
            f"| {r['kendall_s']:.2f} s (+ {r['numba_load_s']:.1f} s) "
            f"| {r['scipy_s']:.1f} s ({r['pairs']}) "
            f"| {r['scipy_mb']:,.0f} MB | {r['scipy_s'] / r['kendall_s']:.1f}x | {boot} "
            f"| {cli} |")
    return "\n".join(lines)


def default_table(results: list[dict]) -> str:
    """The default path (what a user gets without options) beside the correlations only and
    the scipy loop."""
    lines = [("| stories | measures | default path: `meta_evaluate` (comparisons) | its process: "
              "wall (reading, imports and the kernels' load included), peak RSS "
              "| correlations only (`reference=\"none\"`), process wall, peak RSS "
              "| scipy loop (pairs) | scipy loop / default path |"),
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        if r.get("default_s") is None:
            continue
        lines.append(
            f"| {r['stories']:,} | {r['measures']} | {r['default_s']:.2f} s "
            f"({r['default_comparisons']:,}) | {r['default_wall_s']:.1f} s "
            f"(reading {r['read_s']:.1f} s), {r['default_mb']:,.0f} MB "
            f"| {r['correlations_s']:.2f} s, {r['correlations_wall_s']:.1f} s, "
            f"{r['correlations_mb']:,.0f} MB "
            f"| {r['scipy_s']:.1f} s ({r['pairs']}) | {r['scipy_s'] / r['default_s']:.1f}x |")
    return "\n".join(lines)


def plot(results: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["stories"] for r in results]
    fig, ax = plt.subplots(figsize=(7, 6))
    ax.loglog(n, [r["storyeval_s"] for r in results], "o-",
              label="storyeval core: read, tau-b of all pairs, Williams (2 levels)")
    ax.loglog(n, [r["kendall_s"] for r in results], "^-",
              label="storyeval: tau-b of all pairs (overall level)")
    ax.loglog(n, [r["scipy_s"] for r in results], "s--",
              label="scipy.stats.kendalltau loop (pairs only)")
    default = [(r["stories"], r["default_s"]) for r in results if r.get("default_s")]
    if default:
        ax.loglog(*zip(*default), "v-", label="storyeval default path: correlations, "
                                                "calibrated tests, intervals (all pairs)")
        ax.loglog(*zip(*[(r["stories"], r["correlations_s"]) for r in results
                         if r.get("default_s")]), "x:", label="storyeval correlations only")
    boot = [(r["stories"], r["bootstrap_s"]) for r in results if r.get("bootstrap_s")]
    if boot:
        ax.loglog(*zip(*boot), "d-",
                  label=f"storyeval: bootstrap, {BOOT_RESAMPLES:,} resamples (overall)")
    for r in results:
        ax.annotate(f"{r['measures']} measures", (r["stories"], r["scipy_s"]),
                    textcoords="offset points", xytext=(4, -12), fontsize=7)
    ax.set_xlabel("stories")
    ax.set_ylabel("wall time (s)")
    ax.set_title("Meta-evaluation at scale (2 cores)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-stories", type=int, default=10**6)
    parser.add_argument("--cli-max-stories", type=int, default=10**4)
    parser.add_argument("--bootstrap-max-stories", type=int, default=10**5)
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "bench_scale.json"),
                        help="where to write the raw numbers (default: benchmarks/)")
    parser.add_argument("--plot", default=str(ROOT / "docs" / "img" / "bench_scale.png"),
                        help="where to draw the figure (default: docs/img/)")
    parser.add_argument("--plot-only", action="store_true",
                        help="draw the figure from the numbers in --json without measuring")
    args = parser.parse_args()
    if args.plot_only:
        plot(json.loads(Path(args.json).read_text()), Path(args.plot))
        return
    sizes = [s for s in SIZES if s[0] * SYSTEMS <= args.max_stories]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for n_prompts, n_metrics in sizes:
            results.append(measure(n_prompts, n_metrics, Path(tmp), args.cli_max_stories,
                                   args.bootstrap_max_stories))
            print(table(results[-1:]).splitlines()[-1], flush=True)
    print(table(results))
    print()
    print(default_table(results))
    from storyeval._atomic import atomic_write_text

    atomic_write_text(args.json, json.dumps(results, indent=1) + "\n")
    plot(results, Path(args.plot))


if __name__ == "__main__":
    main()
