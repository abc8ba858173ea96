"""Benchmark: reading and validating 10^6 stories x 16 measures (issue 40, item 2), old against
new in one run.

The long score table of ``bench_scale.py`` at 10^6 stories (10 systems x 100,000 prompts, 6
human criteria and 10 metrics: 16 million rows; CSV about 400 MB) is written once as CSV and as
Parquet. Each reading, ``read_dataset(FILE, criteria=...)`` (read, validate, pivot to the
wide table, build the Dataset), runs in a fresh Python process, alternately with the code of
this checkout (new) and with the package of ``--old-ref`` (default ``main``) extracted by
``git archive`` (old); both must give the same table (a hash of it is compared). Each process
reports its wall time (imports excluded), its CPU time (user + system, all threads) and its
peak resident memory (VmHWM). The load average of the machine is printed with the numbers:
on a shared machine the wall time of one process grows with the others' load; the CPU time
does much less.

Writes ``benchmarks/bench_read.json`` and the table ``docs/generated/scale/read.md`` that the
scale page shows.

    python benchmarks/bench_read.py                   # about 10 minutes on 2 cores
    python benchmarks/bench_read.py --stories 100000  # a quick look
    python benchmarks/bench_read.py --table-only      # the page's table from the JSON
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from bench_scale import CRITERIA, SYSTEMS, make_wide  # noqa: E402

PAGE_TABLE = ROOT / "docs" / "generated" / "scale" / "read.md"
JSON_PATH = ROOT / "benchmarks" / "bench_read.json"
TARGETS = {"csv": 4.0, "parquet": 2.0}  # seconds, issue 40
NAMES = {"csv": "CSV", "parquet": "Parquet"}

READ_BODY = """
import sys, time, hashlib
import pandas as pd
from storyeval.data import read_dataset
start, cpu = time.perf_counter(), time.process_time()
ds = read_dataset(sys.argv[1], criteria=sys.argv[2].split(","))
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
digest = hashlib.sha256(pd.util.hash_pandas_object(ds.table, index=True).to_numpy()
                        .tobytes()).hexdigest()[:16]
with open("/proc/self/status") as status:
    peak = int([l.split()[1] for l in status if l.startswith("VmHWM")][0]) / 1024
print(wall, cpu, peak, digest, ds.table.shape[0], ds.table.shape[1])
"""


def write_files(folder: Path, n_prompts: int, n_metrics: int) -> dict[str, Path]:
    long = make_wide(n_prompts, n_metrics).melt(id_vars=["system", "prompt_id"],
                                                var_name="measure", value_name="value")
    paths = {"csv": folder / "long.csv", "parquet": folder / "long.parquet"}
    long.to_csv(paths["csv"], index=False)
    long.to_parquet(paths["parquet"], index=False)
    return paths


def old_package(ref: str, folder: Path) -> Path:
    """The ``storyeval`` package of git ``ref``, extracted into ``folder``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "storyeval"],
                             check=True, capture_output=True).stdout
    with tempfile.NamedTemporaryFile(suffix=".tar") as tmp:
        Path(tmp.name).write_bytes(archive)
        with tarfile.open(tmp.name) as tar:
            tar.extractall(folder, filter="data")
    return folder


def read_once(code: Path, path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "STORYEVAL_NO_PROGRESS": "1"}
    out = subprocess.run([sys.executable, "-c", READ_BODY, str(path), ",".join(CRITERIA)],
                         env=env, check=True, capture_output=True, text=True, cwd=code).stdout
    wall, cpu, peak, digest, rows, cols = out.split()
    return {"wall_s": float(wall), "cpu_s": float(cpu), "peak_mb": float(peak),
            "digest": digest, "stories": int(rows), "measures": int(cols)}


def _median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def table(result: dict) -> str:
    """The Markdown table of the scale page."""
    lines = ["| file | code | wall, median (min-max) | CPU time, median | peak RSS, median "
             "| target |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for fmt in ("csv", "parquet"):
        for code in ("old", "new"):
            runs = result["runs"][fmt][code]
            walls = [r["wall_s"] for r in runs]
            lines.append(
                f"| {NAMES[fmt]} ({result['size_mb'][fmt]:,.0f} MB) | {code} "
                f"| {_median(walls):.1f} s ({min(walls):.1f}-{max(walls):.1f}) "
                f"| {_median([r['cpu_s'] for r in runs]):.1f} s "
                f"| {_median([r['peak_mb'] for r in runs]):,.0f} MB "
                f"| {f'< {TARGETS[fmt]:g} s' if code == 'new' else ''} |")
    load = result["load_average"]
    return ("\n".join(lines) + "\n\n"
            f"{result['stories']:,} stories x {result['measures']} measures "
            f"({result['rows']:,} rows), `read_dataset(FILE, criteria=...)` in fresh processes, "
            f"{result['repeats']} runs each, old (`{result['old_ref']}`, "
            f"{result['old_commit']}) and new alternating; the same table from both "
            f"(hash {result['digest']}). Machine: {result['cpus']} CPUs, load average "
            f"{load[0]:.1f} before and {load[1]:.1f} after (other processes share the cores); "
            f"{result['date']}; `python benchmarks/bench_read.py`.\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stories", type=int, default=10**6,
                        help="stories (multiple of 10; default 10^6 with 16 measures)")
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old-ref", default="main",
                        help="git ref of the old code (default: main)")
    parser.add_argument("--table-only", action="store_true",
                        help="write the page's table from benchmarks/bench_read.json")
    args = parser.parse_args()
    from storyeval._atomic import atomic_write_text

    if args.table_only:
        atomic_write_text(PAGE_TABLE, table(json.loads(JSON_PATH.read_text())))
        return
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = write_files(folder, args.stories // SYSTEMS, args.metrics)
        old = old_package(args.old_ref, folder / "old")
        runs: dict = {fmt: {"old": [], "new": []} for fmt in paths}
        for _ in range(args.repeats):
            for fmt, path in paths.items():
                for code, where in (("old", old), ("new", ROOT)):
                    runs[fmt][code].append(read_once(where, path))
                    r = runs[fmt][code][-1]
                    print(f"{fmt} {code}: wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s, "
                          f"peak {r['peak_mb']:,.0f} MB", flush=True)
        sizes = {fmt: p.stat().st_size / 2**20 for fmt, p in paths.items()}
    digests = {r["digest"] for f in runs.values() for c in f.values() for r in c}
    if len(digests) != 1:
        raise SystemExit(f"old and new read different tables: {digests}")
    first = runs["csv"]["new"][0]
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.old_ref],
                            check=True, capture_output=True, text=True).stdout.strip()
    result = {"stories": first["stories"], "measures": first["measures"],
              "rows": first["stories"] * first["measures"], "repeats": args.repeats,
              "old_ref": args.old_ref, "old_commit": commit, "digest": digests.pop(),
              "cpus": os.cpu_count(), "load_average": [load_before, os.getloadavg()[0]],
              "date": time.strftime("%Y-%m-%d"), "size_mb": sizes, "runs": runs}
    atomic_write_text(JSON_PATH, json.dumps(result, indent=1) + "\n")
    text = table(result)
    atomic_write_text(PAGE_TABLE, text)
    print(text)


if __name__ == "__main__":
    main()
