"""Benchmark: arena-scale leaderboards, storyeval against FastChat's method on the same battles
(issue 39).

Synthetic battles (seeded): S systems with log-strengths drawn N(0, 1), each battle a uniformly
drawn pair of distinct systems, outcome from Davidson's model with nu = 0.5 (about 20% ties),
in FastChat's format (``model_a, model_b, winner`` = ``model_a`` / ``model_b`` / ``tie``).
Each method runs in a fresh process (wall time from the DataFrame of battles, imports not
counted; peak memory = the process's VmHWM, the Python interpreter and imports included):

* ``storyeval``: `storyeval.pairwise.leaderboard.leaderboard_from_counts` after
  `count_battles` (ties counted half, FastChat's convention; 1,000 resamples of battles, as
  FastChat resamples; rank intervals, CI-aware ranks and the paired tests with BH included);
* ``fastchat-bt``: FastChat's current method (``rating_systems.compute_bt`` +
  ``compute_bootstrap_bt``, multinomial over distinct matchups, L-BFGS-B, a process pool over
  all cores) when ``fastchat.serve.monitor.rating_systems`` imports (a FastChat checkout on
  ``--fastchat-src``);
* ``fastchat-mle``: the installed PyPI release's ``compute_elo_mle_with_tie`` (fschat 0.2.36:
  one logistic regression on a dense battles x systems matrix, sklearn's default L2 penalty
  C = 1), point estimate only (its bootstrap refits every resample from the battles; the time of
  1,000 would be 1,000 times the point fit).

* ``storyeval-previous``: the same call with the code of a git ref (``--previous main``: the
  package extracted with ``git archive`` into a temporary folder), to measure a change in one run;
* ``command`` / ``command-previous`` (``--command``): the whole ``storyeval pairwise strengths
  FILE`` process (reading the CSV, 1,000 resamples of *prompts*, the default) on the same battles
  written as a verdict file with 1,000 prompts, new and previous code.

Every child's wall time and CPU seconds (user + system, from ``getrusage``) are recorded with
the load average before and after it: on a shared machine the CPU seconds compare code, the wall
time compares machines.

Max |difference| of point estimates on the Elo scale (``400 / ln 10 * theta + 1000``, both
anchored at mean 1000). The exact maximum likelihood estimate is checked against choix on the
aggregated counts (``choix.opt_pairwise`` to 1e-10) and against FastChat's own objective
(``rating_systems.bt_loss_and_grad``) minimised to convergence.

    python benchmarks/bench_leaderboard.py --page                # 1e5 and 1e6 battles
    python benchmarks/bench_leaderboard.py --page --fastchat-src /tmp/fastchat_main
    python benchmarks/bench_leaderboard.py --sizes 100000 --methods storyeval \
        storyeval-previous --command --json benchmarks/bench_leaderboard_change.json

Writes ``benchmarks/bench_leaderboard.json`` (``--json``) and, with ``--page``,
``docs/generated/leaderboards/bench.md``.
Coverage of the intervals: ``benchmarks/bench_leaderboard_coverage.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
ELO = 400.0 / math.log(10.0)


def battles(n: int, s: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """FastChat-format battles and the true centred log-strengths."""
    g = np.random.default_rng(seed)
    theta = g.normal(size=s)
    a = g.integers(0, s, n)
    b = (a + g.integers(1, s, n)) % s
    d = theta[a] - theta[b]
    p = np.stack([np.exp(d / 2), np.exp(-d / 2), np.full(n, 0.5)], axis=1)
    p /= p.sum(axis=1, keepdims=True)
    u = g.random(n)
    out = (u > p[:, 0]).astype(int) + (u > p[:, 0] + p[:, 1])
    names = np.array([f"model-{i:03d}" for i in range(s)])
    df = pd.DataFrame({"model_a": names[a], "model_b": names[b],
                       "winner": np.array(["model_a", "model_b", "tie"])[out]})
    return df, theta - theta.mean()


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _fastchat_rs(src: str | None):
    if src:
        sys.path.insert(0, src)
    from fastchat.serve.monitor import rating_systems  # noqa: PLC0415

    return rating_systems


def run_one(method: str, n: int, s: int, resamples: int, src: str | None) -> dict:
    """One method in this (fresh) process; returns times, memory and Elo estimates."""
    df, _ = battles(n, s)
    out: dict = {"method": method, "n": n, "systems": s}
    if method in ("storyeval", "storyeval-previous"):
        sys.path.insert(0, str(ROOT) if method == "storyeval" else os.environ["BENCH_PREVIOUS"])
        from storyeval.pairwise.arena import count_battles
        from storyeval.pairwise.leaderboard import leaderboard_from_counts

        t0 = time.perf_counter()
        # hash-based codes sorted by name, as the library's `battle_arrays` makes them
        codes, names = pd.factorize(np.concatenate([df["model_a"].to_numpy(),
                                                    df["model_b"].to_numpy()]), sort=True)
        w = df["winner"].to_numpy()
        outcome = np.where(w == "model_a", 0, np.where(w == "model_b", 1, 2))
        counts = count_battles(codes[:n], codes[n:], outcome, len(names))
        t1 = time.perf_counter()
        board = leaderboard_from_counts(counts, list(names), ties="half",
                                        n_resamples=resamples, random_state=0)
        t2 = time.perf_counter()
        tab = board.table.set_index("item")
        out.update(count_s=t1 - t0, fit_bootstrap_s=t2 - t1, total_s=t2 - t0,
                   resamples=resamples, elo=dict(tab["elo"].astype(float)),
                   ci_width_elo=float(ELO * (tab["ci_high"] - tab["ci_low"]).mean()))
    elif method == "fastchat-bt":
        rs = _fastchat_rs(src)
        t0 = time.perf_counter()
        point = rs.compute_bt(df)
        t1 = time.perf_counter()
        boot = rs.compute_bootstrap_bt(df, num_round=resamples)
        t2 = time.perf_counter()
        lo, hi = boot.quantile(0.025), boot.quantile(0.975)
        out.update(point_s=t1 - t0, bootstrap_s=t2 - t1, total_s=t2 - t0, resamples=resamples,
                   elo=dict(point.astype(float)), ci_width_elo=float((hi - lo).mean()))
        # FastChat's objective minimised to convergence (the exact MLE in its parametrisation)
        from scipy.optimize import minimize

        matchups, outcomes, models, weights = rs.preprocess_for_bt(df)
        res = minimize(rs.bt_loss_and_grad, np.zeros(len(models)),
                       args=(matchups, outcomes, weights, math.log(10.0)), jac=True,
                       method="L-BFGS-B", options={"gtol": 1e-10, "ftol": 1e-15,
                                                   "maxiter": 10_000})
        r = res.x - res.x.mean()
        out["elo_converged"] = dict(zip(models, 400 * r + 1000, strict=True))
    elif method == "fastchat-mle":
        from fastchat.serve.monitor.elo_analysis import compute_elo_mle_with_tie

        t0 = time.perf_counter()
        point = compute_elo_mle_with_tie(df)
        t1 = time.perf_counter()
        out.update(point_s=t1 - t0, total_s=t1 - t0, resamples=0,
                   bootstrap_1000_estimate_s=1000 * (t1 - t0), elo=dict(point.astype(float)))
    out["peak_mb"] = _peak_mb()
    return out


def _timed(cmd: list[str], env: dict | None = None,
           cwd: str | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    """Run a child; its wall time, CPU seconds (user + system) and the load around it."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc, {"process_wall_s": wall, "process_cpu_s": cpu,
                  "load_before": load0, "load_after": os.getloadavg()[0]}


def _env(method: str) -> dict:
    env = dict(os.environ)
    if method.endswith("previous"):
        env["BENCH_PREVIOUS"] = PREVIOUS["path"]
    return env


def _spawn(method, n, s, resamples, src) -> dict:
    cmd = [sys.executable, __file__, "--one", method, "--n", str(n), "--systems", str(s),
           "--resamples", str(resamples)]
    if src:
        cmd += ["--fastchat-src", src]
    proc, timing = _timed(cmd, _env(method))
    if proc.returncode != 0:
        return {"method": method, "n": n, "systems": s, "error": proc.stderr.strip()[-300:]}
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), **timing}


def verdict_file(n: int, s: int, path: Path, prompts: int = 1000) -> None:
    """The battles of `battles` as a verdict file: prompt ``k mod prompts``, one judge label per
    repeat of a (prompt, pair) so that no judgment repeats."""
    df, _ = battles(n, s)
    p = np.arange(n) % prompts
    a, b = df["model_a"].to_numpy(), df["model_b"].to_numpy()
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    judge = pd.DataFrame({"p": p, "lo": lo, "hi": hi}).groupby(["p", "lo", "hi"]).cumcount()
    pid = p.astype(str)
    pd.DataFrame({"prompt_id": p, "story_a": np.char.add(np.char.add(a.astype(str), "/"), pid),
                  "story_b": np.char.add(np.char.add(b.astype(str), "/"), pid),
                  "dimension": "Overall",
                  "verdict": df["winner"].map({"model_a": "A", "model_b": "B",
                                               "tie": "same"}).to_numpy(),
                  "order": "AB", "judge": "j" + judge.astype(str).to_numpy(), "system_a": a,
                  "system_b": b}).to_csv(path, index=False)


def run_command(method: str, path: Path, resamples: int) -> dict:
    """The whole `storyeval pairwise strengths FILE` process (prompt bootstrap, the default)."""
    code = str(ROOT) if method == "command" else PREVIOUS["path"]
    env = {**os.environ, "PYTHONPATH": code, "STORYEVAL_NO_PROGRESS": "1"}
    cmd = [sys.executable, "-m", "storyeval", "pairwise", "strengths", str(path),
           "--resamples", str(resamples), "--format", "csv"]
    proc, timing = _timed(cmd, env, cwd=str(path.parent))  # not the checkout: PYTHONPATH decides
    out = {"method": method, "resamples": resamples, **timing}
    if proc.returncode != 0:
        out["error"] = proc.stderr.strip()[-300:]
    else:
        import hashlib

        out["table_sha"] = hashlib.sha256(proc.stdout.encode()).hexdigest()[:16]
    return out


#: The previous code (``--previous REF``): {"ref", "commit", "path"}.
PREVIOUS: dict = {}


def extract_previous(ref: str) -> None:
    """``git archive REF storyeval`` into a temporary folder (kept for the run)."""
    folder = tempfile.mkdtemp(prefix="storyeval-previous-")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", ref], capture_output=True,
                            text=True, check=True).stdout.strip()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "storyeval"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    PREVIOUS.update(ref=ref, commit=commit, path=folder)


def _fmt(x, digits=1):
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _earlier_rows(args) -> list[dict]:
    """Rows of methods named by ``--keep`` from the JSON being replaced (not rerun: e.g. a
    peer not installed), marked with that run's date."""
    if not args.keep or not Path(args.json).exists():
        return []
    old = json.loads(Path(args.json).read_text())
    rows = old["rows"] if isinstance(old, dict) else old
    date = old.get("date") if isinstance(old, dict) else None
    kept = []
    for r in rows:
        if r["method"] in args.keep and r["battles"] in args.sizes:
            kept.append({**r, "earlier_run": r.get("earlier_run") or date or args.keep_date})
    return kept


def main_speed(args) -> None:
    rows = []
    if any(m.endswith("previous") for m in args.methods) or args.command:
        extract_previous(args.previous)
        print(f"previous: {PREVIOUS['ref']} = {PREVIOUS['commit'][:10]}", flush=True)
    print(f"load: {os.getloadavg()}", flush=True)
    for n in args.sizes:
        res = {m: _spawn(m, n, args.systems, args.resamples, args.fastchat_src)
               for m in args.methods}
        ref = res["storyeval"].get("elo")
        for m, r in res.items():
            diff = conv = None
            if ref and r.get("elo") and m != "storyeval":
                keys = sorted(ref)
                diff = max(abs(ref[k] - r["elo"][k]) for k in keys)
                if r.get("elo_converged"):
                    conv = max(abs(ref[k] - r["elo_converged"][k]) for k in keys)
            target = None
            if m.startswith("storyeval"):
                limit = 60 if n >= 10**6 else 10
                target = (f"< {limit} s, < 2 GB: "
                          + ("met" if r.get("total_s", 1e9) < limit and r.get("peak_mb", 1e9)
                             < 2048 else "NOT met"))
            rows.append({"battles": n, "systems": args.systems, "method": m,
                         "resamples": r.get("resamples"), "time_s": r.get("total_s"),
                         "peak_mb": r.get("peak_mb"), "max_abs_diff_elo": diff,
                         "max_abs_diff_elo_converged": conv,
                         "ci_width_elo": r.get("ci_width_elo"),
                         "bootstrap_1000_estimate_s": r.get("bootstrap_1000_estimate_s"),
                         "target": target, "error": r.get("error"),
                         "process_wall_s": r.get("process_wall_s"),
                         "process_cpu_s": r.get("process_cpu_s"),
                         "load": [r.get("load_before"), r.get("load_after")]})
            print(json.dumps(rows[-1]), flush=True)
        if args.command:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "verdicts.csv"
                verdict_file(n, args.systems, path)
                for m in ("command", "command-previous", "command", "command-previous"):
                    r = run_command(m, path, args.resamples)  # alternately, twice each
                    rows.append({"battles": n, "systems": args.systems, "method": m,
                                 "resamples": args.resamples, "time_s": r["process_wall_s"],
                                 "process_cpu_s": r["process_cpu_s"],
                                 "load": [r["load_before"], r["load_after"]],
                                 "error": r.get("error"), "output": r.get("table_sha")})
                    print(json.dumps(rows[-1]), flush=True)
    rows = sorted(rows + _earlier_rows(args), key=lambda r: r["battles"])  # stable
    lines = ["| battles | systems | method | resamples | time (s) | peak memory (MB) | "
             "max abs diff vs storyeval (Elo) | same, FastChat's objective converged | "
             "mean 95% interval width (Elo) | target |",
             "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        if r["method"].startswith("command"):
            lines.append(f"| {r['battles']:,} | {r['systems']} | {r['method']} (whole process, "
                         f"prompt bootstrap) | {r['resamples']} | {_fmt(r['time_s'])} (CPU "
                         f"{_fmt(r['process_cpu_s'])} s; load {r['load'][0]:.1f}) | | | | | |")
            continue
        if r["error"]:
            lines.append(f"| {r['battles']:,} | {r['systems']} | {r['method']} | | failed: "
                         f"{r['error'].splitlines()[-1][:80]} | | | | | |")
            continue
        t = _fmt(r["time_s"])
        if r.get("load") and r["load"][0] is not None:
            t += f" (CPU {_fmt(r.get('process_cpu_s'))} s; load {r['load'][0]:.1f})"
        if r.get("earlier_run"):
            t += f" (earlier run, {r['earlier_run']})"
        if r["method"] == "fastchat-mle":
            t += f" (point only; 1,000 resamples ~{r['bootstrap_1000_estimate_s']:,.0f})"
        lines.append(f"| {r['battles']:,} | {r['systems']} | {r['method']} | {r['resamples']} | "
                     f"{t} | {_fmt(r['peak_mb'], 0)} | {_fmt(r['max_abs_diff_elo'], 7)} | "
                     f"{_fmt(r['max_abs_diff_elo_converged'], 9)} | {_fmt(r['ci_width_elo'])} "
                     f"| {r['target'] or ''} |")
    table = "\n".join(lines) + "\n"
    if args.keep:
        table += (f"\nRows marked \"earlier run\" were not rerun here ({', '.join(args.keep)}: "
                  "not installed in this environment) and come from the previous measurement.\n")
    print(table)
    print(f"load: {os.getloadavg()}")
    Path(args.json).write_text(json.dumps(
        {"date": time.strftime("%Y-%m-%d"), "previous": PREVIOUS.get("commit"), "rows": rows},
        indent=1))
    if args.page:
        (ROOT / "docs" / "generated" / "leaderboards" / "bench.md").write_text(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--systems", type=int, default=100)
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--fastchat-src", default=None,
                    help="folder holding a FastChat checkout's 'fastchat' package")
    ap.add_argument("--methods", nargs="+", default=["storyeval", "fastchat-bt", "fastchat-mle"],
                    choices=["storyeval", "storyeval-previous", "fastchat-bt", "fastchat-mle"])
    ap.add_argument("--previous", default="main",
                    help="git ref of the previous code (storyeval-previous, --command)")
    ap.add_argument("--json", default=str(ROOT / "benchmarks" / "bench_leaderboard.json"))
    ap.add_argument("--page", action="store_true",
                    help="also write docs/generated/leaderboards/bench.md (the full run)")
    ap.add_argument("--command", action="store_true",
                    help="also time the whole `pairwise strengths` command, new and previous")
    ap.add_argument("--keep", nargs="+", default=[], metavar="METHOD",
                    help="keep these methods' rows from the --json file being replaced, marked "
                         "as an earlier run (a peer not installed here)")
    ap.add_argument("--keep-date", default="an earlier run",
                    help="date of the kept rows when that file does not record one")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.n, args.systems, args.resamples,
                                 args.fastchat_src), default=float))
        return
    main_speed(args)


if __name__ == "__main__":
    main()
