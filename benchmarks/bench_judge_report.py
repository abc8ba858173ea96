"""False-pass rate and power of the judge report's verdict rule, and its run time on HANNA.

The rule says "replaces the annotators" only when the judge passes the alternative-annotator
test (and a content-blind sentinel does not), so its false-pass rate is at most the alt-test's.
The alt-test's is measured on simulated Likert ratings like HANNA's (`storyeval.judge.simulate`:
latent story quality, annotators rounding it with noise to 1-5, a continuous judge whose noise
is calibrated so that its expected paired difference E[d] equals a target gap):

- gap = epsilon: a judge worse than the annotators by exactly epsilon (the boundary of the
  null hypothesis, where passing is most likely among bad judges): the false-pass rate, which
  must be at most 0.05;
- gap = 0: a judge as good as an annotator (power);
- gap = -0.1: a judge better than an annotator (power).

Every setting: 3 annotators (HANNA's), epsilon 0.2, q 0.05, 2,000 simulated datasets; 50, 100,
300 and 960 items (HANNA's 960 stories of the 10 generation systems). The winning rates come
from `storyeval.compare.alt_test.winning_rates`, equal to `alt_test` (tests/test_alt_test.py).

Also timed: ``storyeval judge-report`` on HANNA (the five LLMs' Eval-Prompt 1 raters, all six
criteria, default options), wall clock and CPU time (user + system) of the whole command in a
fresh process, with the machine's load average (on a shared machine the wall clock is the CPU
time stretched by the other processes).

Run: ``python benchmarks/bench_judge_report.py [--datasets 2000]`` (a few minutes on 2 cores).
Writes ``benchmarks/bench_judge_report.json``, read by ``docs/gen_judge_report.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from storyeval.judge.simulate import calibrate_judge_noise, simulate_pass_rate

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "bench_judge_report.json"
EPSILON = 0.2
GAPS = {"worse by epsilon (false pass)": EPSILON, "as good as an annotator (power)": 0.0,
        "better by 0.1 (power)": -0.1}
SIZES = (50, 100, 300, 960)
JUDGES = "Beluga-13B 1,OrcaPlatypus 1,Mistral-7B 1,Llama-13B 1,ChatGPT 1"


def cli_seconds() -> tuple[float, float]:
    """Wall clock and CPU time (user + system) of ``storyeval judge-report`` on HANNA in a
    fresh process."""
    env = dict(os.environ, STORYEVAL_NO_PROGRESS="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "storyeval", "judge-report", "--judges", JUDGES,
                        "--out", str(Path(tmp) / "out")], check=True, env=env,
                       capture_output=True)
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--timing-only", action="store_true",
                        help="rerun only the command's timing on HANNA and update those fields "
                             "of --out (the simulation's rows are kept)")
    args = parser.parse_args(argv)
    if args.timing_only:
        _timing_only(args.out)
        return
    start = time.perf_counter()
    rows = []
    for label, gap in GAPS.items():
        noise = calibrate_judge_noise(gap)
        for n in SIZES:
            row = simulate_pass_rate(n, gap=gap, epsilon=EPSILON, n_datasets=args.datasets,
                                     seed=n, judge_noise=noise)
            rows.append({"judge": label, **row})
            print(f"{label:32s} n={n:4d} pass rate {row['pass_rate']:.4f} "
                  f"(mc se {row['mc_se']:.4f})", flush=True)
    timings = [cli_seconds() for _ in range(3)]
    seconds = [wall for wall, _ in timings]
    load = os.getloadavg()[0]
    payload = {"benchmark": "benchmarks/bench_judge_report.py", "epsilon": EPSILON, "q": 0.05,
               "n_annotators": 3, "n_datasets": args.datasets,
               "seconds": round(time.perf_counter() - start),
               "cli_judges": JUDGES, "cli_seconds": [round(s, 2) for s in seconds],
               "cli_cpu_seconds": [round(c, 2) for _, c in timings],
               "load_average": round(load, 1), "cpu_count": os.cpu_count(),
               "results": rows}
    args.out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"judge-report on HANNA: {min(seconds):.1f}-{max(seconds):.1f} s wall, "
          f"{min(c for _, c in timings):.1f}-{max(c for _, c in timings):.1f} s CPU "
          f"(load average {load:.1f}); wrote {args.out}")


def _timing_only(out: Path) -> None:
    """The three timed runs of `cli_seconds`, written into an existing results file."""
    payload = json.loads(out.read_text(encoding="utf-8"))
    timings = [cli_seconds() for _ in range(3)]
    payload.update(cli_judges=JUDGES, cli_seconds=[round(w, 2) for w, _ in timings],
                   cli_cpu_seconds=[round(c, 2) for _, c in timings],
                   load_average=round(os.getloadavg()[0], 1), cpu_count=os.cpu_count())
    out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    print(f"judge-report on HANNA: {min(w for w, _ in timings):.1f}-"
          f"{max(w for w, _ in timings):.1f} s wall, {min(c for _, c in timings):.1f}-"
          f"{max(c for _, c in timings):.1f} s CPU (load average {payload['load_average']}); "
          f"wrote {out}")


if __name__ == "__main__":
    main()
