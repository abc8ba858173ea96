"""The longest silent stretch of a command on a terminal: run it with standard error on a
pseudo-terminal (so storyeval draws its stage lines and bars), time-stamp every write there and
report the longest stretch without one, counted from the start of the process to its exit.

Standard output goes to a file (as when piped), so the results are captured apart from the
progress text: ``stdout`` of the result is exactly what the command printed.

Run: ``python benchmarks/silent_gap.py [--no-progress] -- storyeval ARGS ...`` (``storyeval`` is
run as ``python -m storyeval`` with this interpreter), or ``--workloads`` for the audit table of
the 0.4.1 changelog (``--quick``: small inputs)."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Run:
    """One run: ``writes`` are (seconds since start, bytes) of each read from the terminal."""

    argv: list[str]
    rc: int
    seconds: float
    stdout: bytes
    writes: list[tuple[float, bytes]] = field(default_factory=list)

    @property
    def stderr(self) -> str:
        return b"".join(w for _, w in self.writes).decode("utf-8", "replace")

    @property
    def longest_silence(self) -> float:
        """The longest stretch without a write on standard error, start and exit included."""
        times = [0.0] + [t for t, _ in self.writes] + [self.seconds]
        return max(b - a for a, b in zip(times, times[1:]))

    @property
    def first_write(self) -> float:
        return self.writes[0][0] if self.writes else self.seconds


def run_on_terminal(argv: list[str], *, env: dict[str, str] | None = None,
                    timeout: float = 600.0, columns: int = 120) -> Run:
    """Run ``argv`` with standard error on a new pseudo-terminal ``columns`` wide, standard
    output to a file and standard input empty."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=slave,
                                env=env, close_fds=True)
        os.close(slave)
        writes: list[tuple[float, bytes]] = []
        try:
            while True:
                left = timeout - (time.perf_counter() - start)
                if left <= 0:
                    proc.kill()
                    raise TimeoutError(f"{argv!r} ran past {timeout} s")
                ready, _, _ = select.select([master], [], [], min(left, 0.05))
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:  # EIO: every writer has closed the terminal
                        chunk = b""
                    if not chunk:
                        break
                    writes.append((time.perf_counter() - start, chunk))
                elif proc.poll() is not None:
                    break
            rc = proc.wait()
            seconds = time.perf_counter() - start
        finally:
            os.close(master)
        out.seek(0)
        return Run(list(argv), rc, seconds, out.read(), writes)


def storyeval_argv(args: list[str]) -> list[str]:
    """``python -m storyeval ARGS`` with this interpreter."""
    return [sys.executable, "-m", "storyeval", *args]


# ------------------------------------------------------------------------------------------------
# the audit workloads: (name, storyeval arguments); files are made in ``folder``
def _pairs_file(folder: Path, battles: int, systems: int, prompts: int = 1000) -> Path:
    """A verdict file of ``battles`` Bradley-Terry battles among ``systems`` systems (ties 10%),
    prompt ``k mod prompts``, one judge label per repeat of a (prompt, pair)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    a = rng.integers(0, systems, battles)
    b = (a + rng.integers(1, systems, battles)) % systems
    strength = np.linspace(-1, 1, systems)
    p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
    u = rng.random(battles)
    verdict = np.where(u < p_a * 0.9, "A", np.where(u < 0.9, "B", "same"))
    prompt = np.arange(battles) % prompts
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    judge = pd.DataFrame({"p": prompt, "lo": lo, "hi": hi}).groupby(["p", "lo", "hi"]).cumcount()
    sa, sb = np.char.add("s", a.astype(str)), np.char.add("s", b.astype(str))
    pid = prompt.astype(str)
    path = folder / f"battles_{battles}.csv"
    pd.DataFrame({"prompt_id": pid, "story_a": np.char.add(np.char.add(sa, "/"), pid),
                  "story_b": np.char.add(np.char.add(sb, "/"), pid), "dimension": "Overall",
                  "verdict": verdict, "order": "AB", "judge": "j" + judge.astype(str).to_numpy(),
                  "system_a": sa, "system_b": sb}).to_csv(path, index=False)
    return path


def _stories_file(folder: Path, stories: int) -> Path:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(1)
    words = np.array("the a story of night sea king old young ran saw light dark river "
                     "house tree wind fire said came went long short blue red".split())
    systems = 10
    path = folder / f"stories_{stories}.csv"
    pd.DataFrame({
        "story_id": [f"m{i % systems}/p{i // systems}" for i in range(stories)],
        "system": [f"m{i % systems}" for i in range(stories)],
        "prompt_id": [f"p{i // systems}" for i in range(stories)],
        "prompt": [f"Write about p{i // systems}." for i in range(stories)],
        "story": [" ".join(rng.choice(words, 120)) + "." for _ in range(stories)],
        "reference": [" ".join(rng.choice(words, 120)) + "." for _ in range(stories)],
    }).to_csv(path, index=False)
    return path


def _pilot_file(folder: Path, items: int, labelled: int) -> Path:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(2)
    human = rng.normal(size=items)
    judge = human + rng.normal(size=items)
    human[labelled:] = np.nan
    path = folder / f"pilot_{items}.csv"
    pd.DataFrame({"h": human, "j": judge}).to_csv(path, index=False)
    return path


def _embedding_files(folder: Path, rows: int, dim: int = 384) -> tuple[Path, Path]:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(3)
    x = rng.normal(size=(rows, dim)).astype(np.float32)
    ids = [f"t{i}" for i in range(rows)]
    pd.DataFrame({"id": ids, "text": ids}).to_csv(folder / f"texts_{rows}.csv", index=False)
    pd.DataFrame(x, columns=[f"e{j}" for j in range(dim)]).assign(id=ids).to_csv(
        folder / f"emb_{rows}.csv", index=False)
    return folder / f"texts_{rows}.csv", folder / f"emb_{rows}.csv"


#: The audit's commands: name -> (storyeval arguments, made from a folder of inputs, quick).
def workloads(folder: Path, quick: bool) -> list[tuple[str, list[str]]]:
    """The commands of the audit, at sizes where the 0.4.0 code took well over 2 s (``quick``:
    small sizes for a smoke run)."""
    reps = "500" if quick else "20000"
    battles = _pairs_file(folder, 2000 if quick else 100_000, 20 if quick else 100)
    stories = _stories_file(folder, 200 if quick else 20_000)
    judged = _pairs_file(folder, 2000 if quick else 30_000, 20 if quick else 30)
    pilot = _pilot_file(folder, 3000, 500)
    texts, emb = _embedding_files(folder, 300 if quick else 10_000)
    return [
        ("power", ["power", "--r-human", "0.3,0.2", "--r-between", "0.5", "--replications",
                   reps]),
        ("power --level system", ["power", "--level", "system", "--r-human", "0.8,0.6",
                                  "--r-between", "0.7", "--replications", reps]),
        ("pairwise strengths", ["pairwise", "strengths", str(battles)]),
        ("pairwise accuracy", ["pairwise", "accuracy", str(judged), "--reference",
                               str(judged)]),
        ("pairwise compare", ["pairwise", "compare", str(judged), "--reference", str(judged)]),
        ("diversity", ["diversity", "--stories", str(stories), "--out", str(folder / "div"),
                       "--overwrite"]),
        ("perturb", ["perturb", "--stories", str(stories), "--out", str(folder / "perturbed"),
                     "--overwrite"]),
        ("plan budget --simulate", ["plan", "budget", "--pilot", str(pilot), "--human", "h",
                                    "--judge", "j", "--cost-human", "1", "--cost-judge", "0.01",
                                    "--width", "0.1", "--simulate", reps]),
        ("plan assign", ["plan", "assign", "--systems", ",".join(f"s{i}" for i in range(10)),
                         "--prompts", "50" if quick else "2000", "--annotators", "50",
                         "--out", str(folder / "plan_{run}.csv")]),
        ("meta (HANNA)", ["meta", "--metrics", "all"]),
        ("agreement (HANNA)", ["agreement"]),
        ("bias (HANNA)", ["bias", "--metrics", "llm", "--criteria", "RE"]),
        ("judge-report (HANNA)", ["judge-report"]),
        ("ppi", ["ppi", "--data", str(pilot), "--human", "h", "--judge", "j"]),
        ("dedup", ["dedup", "--stories", str(texts), "--id", "id", "--text", "text",
                   "--embeddings", str(emb), "--out", str(folder / "dedup"), "--overwrite"]),
        ("cluster", ["cluster", "--stories", str(texts), "--id", "id", "--text", "text",
                     "--embeddings", str(emb), "--reduce", "none", "--k", "2-8"]),
        ("score --metrics fast", ["score", "--input", str(stories), "--metrics", "fast",
                                  "--out", str(folder / "scores_{run}.csv")]),
    ]


_OVERHEAD = """
import json, sys, time
from storyeval.power.planner import simulate_power
from storyeval.power.budget import plan_label_budget, simulate_label_budget
import numpy as np
show = sys.argv[1] == "on"
cpu, wall = time.process_time(), time.perf_counter()
df = simulate_power(0.3, 0.2, 0.5, n=[100, 400], replications=REPS, seed=0, show_progress=show)
rng = np.random.default_rng(0)
h = rng.normal(size=3000); j = h + rng.normal(size=3000); h[500:] = np.nan
plan = plan_label_budget(h, j, cost_human=1, cost_judge=0.01, width=0.1)
import inspect
bar = ({"show_progress": show}
       if "show_progress" in inspect.signature(simulate_label_budget).parameters else {})
check = simulate_label_budget(plan, h, j, reps=REPS // 4, seed=0, **bar)
print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall,
                  "power": df["power"].tolist(), "width": check["simulated_width"]}))
"""


def overhead(code: str | None, reps: int, repeat: int) -> list[str]:
    """CPU seconds of a power simulation and a budget simulation with the bars drawn (to a
    pseudo-terminal) and without, alternately in fresh processes; the results must agree."""
    import statistics

    env = dict(os.environ)
    if code:
        env["PYTHONPATH"] = code
    times: dict[str, list[float]] = {"off": [], "on": []}
    results = set()
    for _ in range(repeat):
        for mode in ("off", "on"):
            argv = [sys.executable, "-c", _OVERHEAD.replace("REPS", str(reps)), mode]
            run = run_on_terminal(argv, env=env)
            out = json.loads(run.stdout.decode().strip().splitlines()[-1])
            times[mode].append(out.pop("cpu"))
            out.pop("wall")
            results.add(json.dumps(out, sort_keys=True))
    off, on = statistics.median(times["off"]), statistics.median(times["on"])
    return [f"CPU seconds, median of {repeat}: no bars {off:.2f} ({times['off']}), bars "
            f"{on:.2f} ({times['on']}): overhead {100 * (on / off - 1):+.1f}%",
            f"results identical with and without bars: {len(results) == 1}"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-progress", action="store_true",
                        help="also run with STORYEVAL_NO_PROGRESS=1 (all output must then be "
                             "results: stderr empty)")
    parser.add_argument("--workloads", action="store_true", help="the audit's commands")
    parser.add_argument("--only", help="with --workloads: comma-separated names to run")
    parser.add_argument("--quick", action="store_true", help="small inputs")
    parser.add_argument("--show", action="store_true", help="print each run's stderr")
    parser.add_argument("--code", action="append", default=[], metavar="DIR",
                        help="run storyeval from DIR (PYTHONPATH); repeatable: each command "
                             "once per DIR, alternately (default: the installed storyeval)")
    parser.add_argument("command", nargs="*", help="storyeval arguments (after --)")
    parser.add_argument("--overhead", type=int, metavar="REPS",
                        help="time the bars' cost on power and budget simulations of REPS "
                             "replications (with --code: the first DIR)")
    parser.add_argument("--repeat", type=int, default=3, help="with --overhead (default 3)")
    args = parser.parse_args(argv)
    if args.overhead:
        for line in overhead(args.code[0] if args.code else None, args.overhead, args.repeat):
            print(line)
        return 0
    env = dict(os.environ)
    if args.no_progress:
        env["STORYEVAL_NO_PROGRESS"] = "1"
    print(f"load average {os.getloadavg()[0]:.2f} at the start", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        jobs = (workloads(Path(tmp), args.quick) if args.workloads
                else [(" ".join(args.command), args.command)])
        if args.only:
            keep = set(args.only.split(","))
            jobs = [j for j in jobs if j[0] in keep]
        codes = args.code or [None]
        heads = " | ".join(f"{Path(c).name if c else 'installed'}: whole run, first write, "
                           "longest silence (s)"
                           for c in codes)
        print(f"| command | {heads} | rc |")
        print("| --- |" + " --- |" * len(codes) + " --- |")
        runs = 0
        for name, cmd in jobs:
            cells, rcs = [], []
            for code in codes:
                if code:
                    env["PYTHONPATH"] = str(code)
                runs += 1  # "{run}" in an argument: a new output file per run
                run = run_on_terminal(storyeval_argv([a.replace("{run}", str(runs))
                                                      for a in cmd]), env=env)
                cells.append(f"{run.seconds:.1f}, {run.first_write:.1f}, "
                             f"**{run.longest_silence:.1f}**")
                rcs.append(str(run.rc))
                if args.show:
                    print(run.stderr, file=sys.stderr)
            print(f"| {name} | {' | '.join(cells)} | {','.join(rcs)} |", flush=True)
        print(f"load average {os.getloadavg()[0]:.2f} at the end", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
