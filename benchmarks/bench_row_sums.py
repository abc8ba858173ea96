"""Time `storyeval.compare.dependent.shared_kendall_rows`, the per-story Kendall row sums of the
U-statistic comparison test, on `bench_scale.py`'s synthetic data.

Pairs: every criterion with every metric, plus (``--criterion-pairs``) each criterion with the
next one: 6 x 31 = 186 pairs with 30 metrics. Prints the median of ``--repeats`` calls (after
one small call that loads numba's compiled code), the traced peak of one more call (NumPy's
allocations, via tracemalloc) and a hash of the outputs, so that two engines or two versions
can be compared::

    python benchmarks/bench_row_sums.py --prompts 10000 --metrics 30 --criterion-pairs
    STORYEVAL_KENDALL_ENGINE=numpy python benchmarks/bench_row_sums.py --prompts 10000 ...
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import CRITERIA, make_wide  # noqa: E402

from storyeval.compare.dependent import shared_kendall_rows  # noqa: E402
from storyeval.correlation.kendall_sorted import engine  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=10_000, help="10 systems per prompt")
    parser.add_argument("--metrics", type=int, default=30)
    parser.add_argument("--criterion-pairs", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    wide = make_wide(args.prompts, args.metrics)
    columns = list(wide.columns[2:])  # the criteria, then the metrics
    X = wide[columns].to_numpy(float)
    k = len(CRITERIA)
    xcols, ycols = [], []
    for c in range(k):
        xcols += [c] * (len(columns) - k)
        ycols += list(range(k, len(columns)))
        if args.criterion_pairs:
            xcols.append(c)
            ycols.append((c + 1) % k)
    xs, ys = np.array(xcols), np.array(ycols)
    shared_kendall_rows(X[:50], xs, ys)  # loads the compiled code (numba engine)
    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        shared_kendall_rows(X, xs, ys)
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    rows, untied = shared_kendall_rows(X, xs, ys)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    digest = hashlib.sha256(rows.tobytes() + untied.tobytes()).hexdigest()[:16]
    print(f"engine {engine()}: {X.shape[0]:,} stories, {len(xs)} pairs: median "
          f"{np.median(times):.3f} s of {[round(t, 3) for t in times]}, traced peak "
          f"{peak / 2**20:.0f} MB (outputs {(rows.nbytes + untied.nbytes) / 2**20:.0f} MB), "
          f"outputs {digest}")


if __name__ == "__main__":
    main()
