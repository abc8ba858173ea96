"""The default path, timed: this checkout beside the previous release's code and the peers, each
workload in fresh processes (docs page "Scale", section "The default path").

Workloads (the commands a user runs with the defaults):

* ``own-small``: ``storyeval meta --data R --scores S --metrics all --reference all`` on
  synthetic data of 10 systems x 20 prompts (200 stories), 6 Likert-mean criteria and 36
  measures, all pairs; timed three ways: the first run after install (numba's cache empty:
  ``NUMBA_CACHE_DIR`` a new folder), the next run in that folder once the first run's
  background compile (`storyeval.cli.warmup`) has finished, and a run with this checkout's
  warm cache.
* ``hanna``: ``storyeval meta --metrics all`` on the embedded HANNA data.
* ``scale``: the same ``meta`` on 10^5 stories (100 systems x 1,000 prompts) x 36 measures and
  one criterion, beside its peer: a loop of ``scipy.stats.kendalltau`` over the same (criterion,
  measure) pairs at the overall and system levels (the correlations alone, no tests), and the
  floor of any such command: a process that imports storyeval and reads the two files
  (``read_dataset``), computing nothing.
* ``large`` (only when named): the same ``meta`` on 10^6 stories (100 systems x 10,000
  prompts) x 16 measures and one criterion, with the peak resident memory of each process.

The previous release's code is extracted from git (``--previous``; default the newest other
release in CHANGELOG.md, by its tag ``vX``, else its commit in ``benchmarks/releases.txt``, else,
with a warning, the newest commit made on or before its day) into a temporary folder and run
with ``PYTHONPATH`` pointing there, with the same venv. Every number is the median wall time of
``--repeat`` fresh processes (user+system CPU beside it, and the largest peak resident memory of
the processes, each its own), with the 1-minute load average during the run: on a shared
machine, compare the columns of one run, not runs of different days.

Run: ``python benchmarks/bench_defaults.py [--workloads own-small,hanna,scale[,large]]
[--repeat 3] [--markdown FILE]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_calibration import write_page  # noqa: E402

MARKER = "defaults"
WORKLOADS = ("own-small", "hanna", "scale")


def make_data(folder: Path, systems: int, prompts: int, measures: int, criteria: int,
              seed: int = 11) -> tuple[Path, Path]:
    """Long ratings (3 annotators, 1-5) and long scores of a synthetic study, names the code
    has never seen."""
    rng = np.random.default_rng(seed)
    names = [f"writer-{k:03d}" for k in range(systems)]
    q = rng.normal(size=(systems, prompts)) + np.linspace(-1, 1, systems)[:, None]
    sys_idx, prompt_idx = np.meshgrid(np.arange(systems), np.arange(prompts), indexing="ij")
    base = {"system": np.repeat(np.array(names, dtype=object)[sys_idx.ravel()], 1),
            "prompt_id": prompt_idx.ravel()}
    parts = []
    for c in range(criteria):
        for a in range(3):
            value = np.clip(np.rint(3 + q + rng.normal(0, 1.2, q.shape)), 1, 5).ravel()
            parts.append(pd.DataFrame({**base, "criterion": f"Aspect {c + 1}",
                                       "annotator": f"rater-{a}", "value": value}))
    ratings = folder / f"ratings_{systems}x{prompts}.csv"
    pd.concat(parts).to_csv(ratings, index=False)
    scores = []
    for m in range(measures):
        value = (rng.uniform(0, 1) * q + rng.normal(size=q.shape)).ravel()
        scores.append(pd.DataFrame({**base, "measure": f"score-{m:02d}", "value": value}))
    score_file = folder / f"scores_{systems}x{prompts}.csv"
    pd.concat(scores).to_csv(score_file, index=False)
    return ratings, score_file


SCIPY_LOOP = textwrap.dedent("""
    import sys, warnings
    import pandas as pd
    from scipy import stats
    ratings, scores = pd.read_csv(sys.argv[1]), pd.read_csv(sys.argv[2])
    h = ratings.groupby(["system", "prompt_id", "criterion"])["value"].mean().unstack()
    m = scores.pivot_table(index=["system", "prompt_id"], columns="measure", values="value")
    data = h.join(m)
    means = data.groupby(level="system").mean()
    warnings.simplefilter("ignore")
    for frame in (data, means):
        for c in h.columns:
            for k in m.columns:
                stats.kendalltau(frame[c], frame[k])
""")


READ_ONLY = ("import sys; from storyeval.data.load import read_dataset; "
             "read_dataset(ratings=sys.argv[1], scores=sys.argv[2])")


NEXT_RUN = "next run (numba cache from the first run's background compile)"


def wait_for_warmup(limit: float = 300.0) -> None:
    """Until no background compile (`storyeval.cli.warmup`) runs (0.4.0 starts none)."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        found = subprocess.run(["pgrep", "-f", "storyeval.cli.warmup"], capture_output=True)
        if found.returncode != 0:
            return
        time.sleep(1.0)


# Runs one command and prints its wall seconds, CPU seconds, peak memory (kB) and exit code. A
# bare interpreter (-S: a few MB) starts it, because Linux counts the memory of the process
# that forks into the child's peak (the benchmark's own process holds the data it made).
LAUNCHER = ("import os, sys, time; start = time.perf_counter(); "
            "pid = os.posix_spawn(sys.argv[1], sys.argv[1:], os.environ, file_actions=["
            "(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)]); "
            "_, status, use = os.wait4(pid, 0); wall = time.perf_counter() - start; "
            "print(wall, use.ru_utime + use.ru_stime, use.ru_maxrss, "
            "os.waitstatus_to_exitcode(status))")


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Wall seconds, user+system CPU seconds and peak resident memory (GB) of one fresh process
    (it must succeed)."""
    done = subprocess.run([sys.executable, "-S", "-c", LAUNCHER, *command], env=env, cwd=cwd,
                          capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"the launcher failed:\n{done.stderr[-2000:]}")
    wall, cpu, rss_kb, code = done.stdout.split()
    if int(code) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return float(wall), float(cpu), int(rss_kb) / 1e6  # Linux reports kB


def summary(workload: str, case: str, code: str, runs: list[tuple[float, float, float]]) -> tuple:
    """One table row: medians of wall and CPU, the largest peak memory."""
    row = (workload, case, code, statistics.median(r[0] for r in runs),
           statistics.median(r[1] for r in runs), max(r[2] for r in runs))
    print(row, flush=True)
    return row


def extract(rev: str, folder: Path) -> Path:
    """The package of ``rev`` in ``folder`` (git archive), for PYTHONPATH."""
    folder.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev, "storyeval"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def recorded_releases() -> dict[str, str]:
    """``benchmarks/releases.txt``: version -> commit of each landed release."""
    path = Path(__file__).resolve().parent / "releases.txt"
    lines = [line.split() for line in path.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    return {version: commit for version, commit in lines}


def last_release() -> str:
    """The previous release's code: the newest release in CHANGELOG.md that is not the version
    being prepared (``## [X] - DATE``), by its tag ``vX``, else its commit in
    ``benchmarks/releases.txt``, else the newest commit dated on or before its day."""
    import re

    if not (ROOT / ".git").exists():  # an unpacked sdist: no history to take it from
        raise SystemExit("bench_defaults: the previous release is taken from git history; run "
                         "it in a git checkout, or pass --previous with a checkout's revision")
    version = re.search(r'"(.+)"', (ROOT / "storyeval" / "_version.py").read_text()).group(1)
    recorded = recorded_releases()
    for name, day in re.findall(r"^## \[([^\]]+)\] - (\d{4}-\d{2}-\d{2})",
                                (ROOT / "CHANGELOG.md").read_text(), flags=re.M):
        if name == version:
            continue
        for ref in (f"v{name}", recorded.get(name)):
            if ref is None:
                continue
            found = subprocess.run(["git", "rev-parse", "-q", "--verify", f"{ref}^{{commit}}"],
                                   cwd=ROOT, capture_output=True, text=True)
            if found.returncode == 0:  # the release's tag or recorded commit
                return found.stdout.strip()
        log = subprocess.run(["git", "log", "-1", "--format=%H",
                              f"--before={day} 23:59:59 +0000"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
        if log:  # a guess: say so (a commit of that day may be after the release)
            print(f"bench_defaults: release {name} has no tag and no line in "
                  f"benchmarks/releases.txt; taking the newest commit of {day} or before, "
                  f"{log[0][:7]}, as its code (pass --previous to choose)", file=sys.stderr)
            return log[0]
    return "HEAD"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--previous", help="git revision of the previous release")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--markdown")
    parser.add_argument("--page", help=f"put the table into this docs page, between its "
                                       f"<!-- {MARKER}:start/end --> markers")
    args = parser.parse_args(argv)
    previous = args.previous or last_release()
    work = Path(tempfile.mkdtemp(prefix="bench_defaults_"))
    try:
        old = extract(previous, work / "previous")
        name = subprocess.run(["git", "rev-parse", "--short", previous], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
        versions = {"this checkout": ROOT, f"previous release ({name})": old}
        rows = []
        loads = []
        # no background compile but where a first run is measured (it would compete)
        base_env = {**os.environ, "STORYEVAL_NO_PROGRESS": "1", "MPLBACKEND": "Agg",
                    "STORYEVAL_BACKGROUND_COMPILE": "0"}
        for workload in args.workloads.split(","):
            if workload == "own-small":
                data = make_data(work, 10, 20, 36, 6)
                meta = ["meta", "--data", str(data[0]), "--scores", str(data[1]),
                        "--metrics", "all", "--reference", "all"]
                cases = [("first run (numba cache empty)", meta, True),
                         ("second run (warm cache)", meta, False)]
            elif workload == "hanna":
                cases = [("meta --metrics all", ["meta", "--metrics", "all"], False)]
            elif workload == "scale":
                data = make_data(work, 100, 1000, 36, 1)
                cases = [("10^5 stories x 36 measures", [
                    "meta", "--data", str(data[0]), "--scores", str(data[1]),
                    "--metrics", "all"], False)]
            elif workload == "large":
                data = make_data(work, 100, 10_000, 16, 1)
                cases = [("10^6 stories x 16 measures", [
                    "meta", "--data", str(data[0]), "--scores", str(data[1]),
                    "--metrics", "all"], False)]
            else:
                raise SystemExit(f"unknown workload {workload!r}; use {WORKLOADS} or large")
            for label, command, cold in cases:
                for version, path in versions.items():
                    times: dict[str, list[tuple[float, float, float]]] = {label: []}
                    for _ in range(args.repeat):
                        env = {**base_env, "PYTHONPATH": str(path)}
                        cache = Path(tempfile.mkdtemp(dir=work))
                        if cold:  # a first run: nothing compiled yet
                            env["NUMBA_CACHE_DIR"] = str(cache)
                            env.pop("STORYEVAL_BACKGROUND_COMPILE", None)
                        command_line = [sys.executable, "-m", "storyeval", *command]
                        times[label].append(run(command_line, env, work))
                        loads.append(os.getloadavg()[0])
                        if cold:  # what the user's next run finds: the warm-up's cache
                            wait_for_warmup()
                            times.setdefault(NEXT_RUN, []).append(
                                run(command_line, {**env, "STORYEVAL_BACKGROUND_COMPILE": "0"},
                                    work))
                        shutil.rmtree(cache, ignore_errors=True)
                    rows += [summary(workload, case, version, runs)
                             for case, runs in times.items()]
                if workload == "scale":
                    script = work / "scipy_loop.py"
                    script.write_text(SCIPY_LOOP)
                    loop = [run([sys.executable, str(script), str(data[0]), str(data[1])],
                                base_env, work) for _ in range(args.repeat)]
                    rows.append(summary(workload, label, "peer: scipy.stats.kendalltau loop",
                                        loop))
                    floor = [run([sys.executable, "-c", READ_ONLY, str(data[0]), str(data[1])],
                                 {**base_env, "PYTHONPATH": str(ROOT)}, work)
                             for _ in range(args.repeat)]
                    rows.append(summary(workload, label, "floor: import storyeval, read the "
                                        "files, nothing computed", floor))
        table = ["| workload | case | code | wall (s, median) | CPU (s, median) | "
                 "peak memory (GB, largest) |",
                 "| --- | --- | --- | --- | --- | --- |"]
        table += [f"| {w} | {c} | {v} | {wall:.2f} | {cpu:.2f} | {rss:.2f} |"
                  for w, c, v, wall, cpu, rss in rows]
        table.append("")
        table.append(f"{args.repeat} fresh processes per cell; 1-minute load during the runs "
                     f"{min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores.")
        text = "\n".join(table) + "\n"
        print(text)
        if args.markdown:
            Path(args.markdown).write_text(text)
        if args.page:
            write_page(args.page, text, (f"<!-- {MARKER}:start -->", f"<!-- {MARKER}:end -->"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
