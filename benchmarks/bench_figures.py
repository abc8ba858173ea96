"""What the heatmaps cost: ``storyeval meta --metrics all --out D`` on HANNA with the default
figures (PNG), with PNG and PDF, and without figures, side by side in one run.

Each variant runs ``--repeats`` times in a fresh process (imports included, as a user runs it);
the median wall time is printed with the ratio to the tables-only run (issue target: the default
figures at most 2x the tables-only time).

Run: ``python benchmarks/bench_figures.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VARIANTS = {
    "tables only (--no-figures)": ["--no-figures"],
    "tables + PNG heatmaps (default)": [],
    "tables + PNG and PDF heatmaps": ["--figure-format", "png,pdf"],
}


def _run(extra: list[str], out: Path) -> float:
    argv = [sys.executable, "-m", "storyeval", "meta", "--metrics", "all", "--format", "csv",
            "--out", str(out), "--overwrite", *extra]
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):  # interleaved, so that machine load hits all alike
            for name, extra in VARIANTS.items():
                times[name].append(_run(extra, Path(tmp) / "out"))
    base = statistics.median(times["tables only (--no-figures)"])
    print(f"storyeval meta --metrics all --out D on HANNA, median of {args.repeats} runs\n")
    print(f"{'variant':<34} | {'wall':>7} | {'x tables only':>13}")
    print("-" * 61)
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:<34} | {median:>6.2f}s | {median / base:>13.2f}")


if __name__ == "__main__":
    main()
