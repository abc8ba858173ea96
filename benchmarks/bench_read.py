"""Benchmark: reading and validating 10^6 stories x 16 measures (issue 40, item 2), old against
new in one run.

The long score table of ``bench_scale.py`` at 10^6 stories (10 systems x 100,000 prompts, 6
human criteria and 10 metrics: 16 million rows; CSV about 400 MB) is written once as CSV and as
Parquet. Each reading, ``read_dataset(FILE, criteria=...)`` (read, validate, pivot to the
wide table, build the Dataset), runs in a fresh Python process, alternately with the code of
this checkout (new) and with the package of ``--old-ref`` (default ``main``) extracted by
``git archive`` (old); all must give the same table (a hash of it is compared). Each process
reports its wall time (imports excluded), its CPU time (user + system, all threads) and its
peak resident memory (VmHWM). The load average of the machine is printed with the numbers:
on a shared machine the wall time of one process grows with the others' load; the CPU time
does much less.

Peers (issue 40: "measure polars or duckdb where they would be faster"): the same reading,
checks and pivot done by polars and by duckdb (each when installed, else a printed reason),
then the same Dataset construction, also in fresh processes and compared by the same hash.

Writes ``benchmarks/bench_read.json`` and the table ``docs/generated/scale/read.md`` that the
scale page shows.

    python benchmarks/bench_read.py                   # about 10 minutes on 2 cores
    python benchmarks/bench_read.py --stories 100000  # a quick look
    python benchmarks/bench_read.py --table-only      # the page's table from the JSON

``--user-data`` times instead what ``storyeval meta --data RATINGS --scores SCORES`` reads
(issue 49, item 2): ``read_dataset(RATINGS, scores=[SCORES])`` on the synthetic study of
``bench_defaults.make_data`` (long ratings of 3 annotators and a long score table of 36
measures) at 100 systems x 1,000 prompts (10^5 stories, 3.6 million score rows, 156 MB) and at
10 x 20 (200 stories), old and new alternating in fresh processes, the same table from both;
with ``--meta`` also the whole ``meta --metrics all`` process (wall, CPU, peak RSS; one warm-up
run each first, so that both have compiled their numba kernels). Writes
``benchmarks/bench_read_user.json``.

    python benchmarks/bench_read.py --user-data --meta   # about 5 minutes on 2 cores
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
LABELS = {"polars": "polars (peer)", "polars-read": "polars reader + storyeval pivot (peer)",
          "duckdb": "duckdb (peer)"}

# what every timed child process prints once its Dataset ``ds`` is built
REPORT = """
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
digest = hashlib.sha256(pd.util.hash_pandas_object(ds.table, index=True).to_numpy()
                        .tobytes()).hexdigest()[:16]
with open("/proc/self/status") as status:
    peak = int([l.split()[1] for l in status if l.startswith("VmHWM")][0]) / 1024
print(wall, cpu, peak, digest, ds.table.shape[0], ds.table.shape[1])
"""

READ_BODY = """
import sys, time, hashlib
import pandas as pd
from storyeval.data import read_dataset
start, cpu = time.perf_counter(), time.process_time()
ds = read_dataset(sys.argv[1], criteria=sys.argv[2].split(","))
""" + REPORT

# The same work done by polars or duckdb (issue 40: "measure polars or duckdb where they would
# be faster"): read the long table, refuse missing keys and a (system, prompt_id, measure)
# twice, pivot to one row per story and one column per measure; the wide table then goes
# through the same Dataset construction as storyeval's readers, so the hash compares tables.
PEER_HEAD = """
import sys, time, hashlib
import pandas as pd
from storyeval.data.io import _PANDAS_NA
from storyeval.data.load import check_dataset_scales
from storyeval.data.scores import dataset_from_pivot
path, criteria = sys.argv[1], sys.argv[2].split(",")
start, cpu = time.perf_counter(), time.process_time()
"""

PEER_TAIL = """
table.columns = pd.Index([str(c) for c in table.columns])
ds = dataset_from_pivot(table, systems, prompts, name="long", source=path, criteria=criteria)
check_dataset_scales(ds, {}, path)
""" + REPORT

PEERS = {
    "polars": """
import polars as pl
if path.endswith(".csv"):
    long = pl.read_csv(path, schema_overrides={"value": pl.Float64},
                       null_values=list(_PANDAS_NA))
else:
    long = pl.read_parquet(path)
keys = ["system", "prompt_id", "measure"]
if long.select(pl.col(keys).null_count()).sum_horizontal().item():
    raise SystemExit("a missing system, prompt_id or measure")
if long.select(pl.struct(keys).is_duplicated().any()).item():
    raise SystemExit("a (system, prompt_id, measure) twice")
wide = long.pivot(on="measure", index=["system", "prompt_id"], values="value")
systems = long["system"].unique(maintain_order=True).to_list()
prompts = long["prompt_id"].unique(maintain_order=True).to_list()
table = wide.to_pandas().set_index(["system", "prompt_id"])
table.index = table.index.set_levels(table.index.levels[0].astype(str), level=0)
""",
    # polars' CSV reader (text columns as categoricals) feeding storyeval's checks and pivot
    # on codes: whether swapping the reader alone would pay
    "polars-read": """
import polars as pl
from storyeval.data import fast_scores
text = {"system": pl.Categorical, "measure": pl.Categorical}
if path.endswith(".csv"):
    long = pl.read_csv(path, schema_overrides={**text, "value": pl.Float64},
                       null_values=list(_PANDAS_NA))
else:
    long = pl.read_parquet(path).with_columns(pl.col(list(text)).cast(pl.Categorical))
arrow = long.to_arrow()
del long
table, systems, prompts, _ = fast_scores._pivot(fast_scores._unified(arrow))
del arrow
""",
    "duckdb": """
import duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
reader = (f"read_csv('{path}', nullstr={list(_PANDAS_NA)!r})" if path.endswith(".csv")
          else f"read_parquet('{path}')")
con.execute(f"CREATE TABLE long AS SELECT *, row_number() OVER () AS row FROM {reader}")
bad = con.execute("SELECT count(*) - count(system) - count(prompt_id) - count(measure) "
                  "+ 2 * count(*), (SELECT count(*) FROM (SELECT 1 FROM long GROUP BY "
                  "system, prompt_id, measure HAVING count(*) > 1)) FROM long").fetchone()
if bad[0] or bad[1]:
    raise SystemExit("a missing key or a (system, prompt_id, measure) twice")
def first_seen(column):
    return [r[0] for r in con.execute(f"SELECT {column} FROM long GROUP BY {column} "
                                      "ORDER BY min(row)").fetchall()]
systems, prompts, measures = first_seen("system"), first_seen("prompt_id"), first_seen("measure")
table = con.execute("PIVOT long ON measure USING first(value) GROUP BY system, prompt_id"
                    ).df().set_index(["system", "prompt_id"])[measures]
table.index = table.index.set_levels(table.index.levels[0].astype(str), level=0)
""",
}


def peer_missing(name: str) -> str | None:
    """Why the peer ``name`` cannot run here (not installed), or None."""
    import importlib.util

    module = name.split("-")[0]
    return None if importlib.util.find_spec(module) else f"{module} is not installed"


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


def read_once(code: Path, path: Path, peer: str | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(code), "STORYEVAL_NO_PROGRESS": "1"}
    body = READ_BODY if peer is None else PEER_HEAD + PEERS[peer] + PEER_TAIL
    done = subprocess.run([sys.executable, "-c", body, str(path), ",".join(CRITERIA)],
                          env=env, capture_output=True, text=True, cwd=code)
    if done.returncode:
        raise SystemExit(f"{peer or code}: reading {path} failed:\n{done.stderr[-2000:]}")
    out = done.stdout.strip().splitlines()[-1]
    wall, cpu, peak, digest, rows, cols = out.split()
    return {"wall_s": float(wall), "cpu_s": float(cpu), "peak_mb": float(peak),
            "digest": digest, "stories": int(rows), "measures": int(cols)}


USER_JSON = ROOT / "benchmarks" / "bench_read_user.json"
USER_SIZES = {"100x1000": (100, 1000, 36, 1), "10x20": (10, 20, 36, 6)}  # as bench_defaults

USER_BODY = """
import sys, time, hashlib
import pandas as pd
from storyeval.data import read_dataset
start, cpu = time.perf_counter(), time.process_time()
ds = read_dataset(sys.argv[1], scores=[sys.argv[2]])
""" + REPORT


def user_read_once(code: Path, ratings: Path, scores: Path) -> dict:
    """``read_dataset(ratings, scores=[scores])`` in a fresh process with the package at
    ``code``: wall and CPU time (imports excluded), peak RSS, a hash of the table."""
    env = {**os.environ, "PYTHONPATH": str(code), "STORYEVAL_NO_PROGRESS": "1"}
    done = subprocess.run([sys.executable, "-c", USER_BODY, str(ratings), str(scores)],
                          env=env, capture_output=True, text=True, cwd=code)
    if done.returncode:
        raise SystemExit(f"{code}: reading {scores} failed:\n{done.stderr[-2000:]}")
    wall, cpu, peak, digest, rows, cols = done.stdout.strip().splitlines()[-1].split()
    return {"wall_s": float(wall), "cpu_s": float(cpu), "peak_mb": float(peak),
            "digest": digest, "stories": int(rows), "measures": int(cols)}


def meta_once(code: Path, ratings: Path, scores: Path) -> dict:
    """The whole ``storyeval meta --data ratings --scores scores --metrics all`` process:
    wall, CPU time (user + system, all threads), peak RSS (``ru_maxrss``, what
    ``/usr/bin/time -f %M`` prints), a hash of its output."""
    import hashlib

    env = {**os.environ, "PYTHONPATH": str(code), "STORYEVAL_NO_PROGRESS": "1"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "storyeval", "meta", "--data",
                                  str(ratings), "--scores", str(scores), "--metrics", "all"],
                                 env=env, stdout=out, stderr=err, cwd=code)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own resources
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode:
            raise SystemExit(f"{code}: meta failed:\n{err.read().decode()[-2000:]}")
        digest = hashlib.sha256(out.read()).hexdigest()[:16]
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mb": usage.ru_maxrss / 1024, "digest": digest}


def user_main(args) -> None:
    """``--user-data``: old and new `read_dataset` (and ``meta`` with ``--meta``) on the
    synthetic study, alternating, with the load average printed beside every run."""
    from bench_defaults import make_data

    from storyeval._atomic import atomic_write_text

    load_before = os.getloadavg()[0]
    runs: dict = {}
    # the old code's commit, resolved once: a branch may move while the benchmark runs
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.old_ref],
                            check=True, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        old = old_package(commit, folder / "old")
        codes = {"old": old, "new": ROOT}
        files = {size: make_data(folder, *spec) for size, spec in USER_SIZES.items()}
        if args.meta:  # warm-up: numba compiles (and caches) its kernels for each tree
            for code in codes.values():
                meta_once(code, *files["10x20"])
        for size, (ratings, scores) in files.items():
            runs[size] = {"read": {c: [] for c in codes}, "meta": {c: [] for c in codes},
                          "score_mb": scores.stat().st_size / 2**20}
            for _ in range(args.repeats):
                for name, code in codes.items():
                    r = user_read_once(code, ratings, scores)
                    r["load_average"] = os.getloadavg()[0]
                    runs[size]["read"][name].append(r)
                    print(f"{size} read_dataset {name}: wall {r['wall_s']:.2f} s, CPU "
                          f"{r['cpu_s']:.2f} s, peak {r['peak_mb']:,.0f} MB, load "
                          f"{r['load_average']:.1f}", flush=True)
                    if not args.meta:
                        continue
                    m = meta_once(code, ratings, scores)
                    m["load_average"] = os.getloadavg()[0]
                    runs[size]["meta"][name].append(m)
                    print(f"{size} meta {name}: wall {m['wall_s']:.2f} s, CPU "
                          f"{m['cpu_s']:.2f} s, peak {m['peak_mb']:,.0f} MB, load "
                          f"{m['load_average']:.1f}", flush=True)
            for what in ("read", "meta"):
                digests = {r["digest"] for c in runs[size][what].values() for r in c}
                if len(digests) > 1:
                    raise SystemExit(f"{size} {what}: old and new differ: {digests}")
    result = {"old_ref": args.old_ref, "old_commit": commit, "repeats": args.repeats,
              "cpus": os.cpu_count(), "load_average": [load_before, os.getloadavg()[0]],
              "date": time.strftime("%Y-%m-%d"), "runs": runs}
    atomic_write_text(USER_JSON, json.dumps(result, indent=1) + "\n")
    print(user_table(result))


def user_table(result: dict) -> str:
    """The ``--user-data`` results as a Markdown table (medians, the load during the runs)."""
    lines = ["| data | what | code | wall, median (min-max) | CPU, median | peak RSS, median "
             "| load, median |", "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for size, got in result["runs"].items():
        for what in ("read", "meta"):
            for code, runs in got[what].items():
                if not runs:
                    continue
                walls = [r["wall_s"] for r in runs]
                lines.append(
                    f"| {size} ({got['score_mb']:,.0f} MB scores) | "
                    f"{'read_dataset' if what == 'read' else 'meta --metrics all'} | {code} "
                    f"| {_median(walls):.2f} s ({min(walls):.2f}-{max(walls):.2f}) "
                    f"| {_median([r['cpu_s'] for r in runs]):.2f} s "
                    f"| {_median([r['peak_mb'] for r in runs]):,.0f} MB "
                    f"| {_median([r['load_average'] for r in runs]):.1f} |")
    return ("\n".join(lines) + f"\n\nold: `{result['old_ref']}` ({result['old_commit']}); "
            f"{result['cpus']} CPUs; {result['date']}\n")


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
        for code, runs in result["runs"][fmt].items():
            walls = [r["wall_s"] for r in runs]
            lines.append(
                f"| {NAMES[fmt]} ({result['size_mb'][fmt]:,.0f} MB) | {LABELS.get(code, code)} "
                f"| {_median(walls):.1f} s ({min(walls):.1f}-{max(walls):.1f}) "
                f"| {_median([r['cpu_s'] for r in runs]):.1f} s "
                f"| {_median([r['peak_mb'] for r in runs]):,.0f} MB "
                f"| {f'< {TARGETS[fmt]:g} s' if code == 'new' else ''} |")
    load = result["load_average"]
    loads = [r["load_average"] for f in result["runs"].values() for c in f.values() for r in c
             if "load_average" in r]
    during = f", median {_median(loads):.1f} during the runs" if loads else ""
    skipped = "".join(f" Not run: {reason}." for reason in result.get("skipped", {}).values())
    return ("\n".join(lines) + "\n\n"
            f"{result['stories']:,} stories x {result['measures']} measures "
            f"({result['rows']:,} rows), `read_dataset(FILE, criteria=...)` in fresh processes, "
            f"{result['repeats']} runs each, old (`{result['old_ref']}`, "
            f"{result['old_commit']}), new and the peers alternating; the same table from all "
            f"(hash {result['digest']}). The polars and duckdb peers do the same reading, "
            "checks (no missing key, no (system, prompt_id, measure) twice) and pivot in their "
            "own idiom; the third reads with polars (text as categoricals) and hands the table "
            "to storyeval's checks and pivot on codes; all then build the same Dataset."
            f"{skipped} Machine: {result['cpus']} CPUs, load average {load[0]:.1f} before and "
            f"{load[1]:.1f} after{during} (other processes share the cores); "
            f"{result['date']}; `python benchmarks/bench_read.py`.\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stories", type=int, default=10**6,
                        help="stories (multiple of 10; default 10^6 with 16 measures)")
    parser.add_argument("--metrics", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old-ref", default="main",
                        help="git ref of the old code (default: main)")
    parser.add_argument("--no-peers", action="store_true",
                        help="skip the polars and duckdb peers")
    parser.add_argument("--table-only", action="store_true",
                        help="write the page's table from benchmarks/bench_read.json")
    parser.add_argument("--user-data", action="store_true",
                        help="time read_dataset(RATINGS, scores=[SCORES]) on bench_defaults' "
                             "synthetic study (10^5 and 200 stories) instead")
    parser.add_argument("--meta", action="store_true",
                        help="with --user-data: also the whole `meta --metrics all` process")
    args = parser.parse_args()
    from storyeval._atomic import atomic_write_text

    if args.user_data:
        user_main(args)
        return

    if args.table_only:
        atomic_write_text(PAGE_TABLE, table(json.loads(JSON_PATH.read_text())))
        return
    skipped = {name: "--no-peers" if args.no_peers else peer_missing(name) for name in PEERS}
    skipped = {name: why for name, why in skipped.items() if why}
    for why in skipped.values():
        print(f"peer not run: {why}", flush=True)
    codes = ["old", "new", *[name for name in PEERS if name not in skipped]]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = write_files(folder, args.stories // SYSTEMS, args.metrics)
        old = old_package(args.old_ref, folder / "old")
        runs: dict = {fmt: {code: [] for code in codes} for fmt in paths}
        for _ in range(args.repeats):
            for fmt, path in paths.items():
                for code in codes:
                    r = read_once(old if code == "old" else ROOT, path,
                                  code if code in PEERS else None)
                    r["load_average"] = os.getloadavg()[0]
                    runs[fmt][code].append(r)
                    print(f"{fmt} {code}: wall {r['wall_s']:.2f} s, CPU {r['cpu_s']:.2f} s, "
                          f"peak {r['peak_mb']:,.0f} MB, load {r['load_average']:.1f}",
                          flush=True)
        sizes = {fmt: p.stat().st_size / 2**20 for fmt, p in paths.items()}
    digests = {r["digest"] for f in runs.values() for c in f.values() for r in c}
    if len(digests) != 1:
        raise SystemExit(f"the readers read different tables: {digests}")
    first = runs["csv"]["new"][0]
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.old_ref],
                            check=True, capture_output=True, text=True).stdout.strip()
    result = {"stories": first["stories"], "measures": first["measures"],
              "rows": first["stories"] * first["measures"], "repeats": args.repeats,
              "old_ref": args.old_ref, "old_commit": commit, "digest": digests.pop(),
              "cpus": os.cpu_count(), "load_average": [load_before, os.getloadavg()[0]],
              "date": time.strftime("%Y-%m-%d"), "size_mb": sizes, "skipped": skipped,
              "runs": runs}
    atomic_write_text(JSON_PATH, json.dumps(result, indent=1) + "\n")
    text = table(result)
    atomic_write_text(PAGE_TABLE, text)
    print(text)


if __name__ == "__main__":
    main()
