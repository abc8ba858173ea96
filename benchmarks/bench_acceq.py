"""Benchmark: exact tie-calibrated pairwise accuracy (acc_eq) at 10^4, 10^5 and 10^6 stories (issue 40).

One pool of n stories (the overall level, WMT ``average_by="none"``), synthetic as in
``bench_scale.py``: 10 systems, a latent quality, the human score the mean of three 1-5 ratings
(13 levels), the metric ``0.5 * latent + N(0, 1)`` ("meta" data); and a harder case whose best
epsilon lies inside a flat maximum: one 1-5 rating, metric ``rating + N(0, 1)`` ("flat").
Each measurement runs in a fresh process (wall time of the call, peak RSS = VmHWM):

* ``search``: ``tie_calibrated`` (the exact search of `storyeval.compare.tie_search`);
* ``quadratic``: the pairwise algorithm that enumerates and sorts all n(n-1)/2 pairs (storyeval's
  implementation before issue 40, still used up to ``EXACT_CURVE_PAIRS`` pairs): value and
  epsilon must be equal; only where its memory fits (10^4: 5 x 10^7 pairs, about 6 GB);
* ``brute``: where the quadratic curve cannot be held (10^5: 5 x 10^9 pairs, about 200 GB), a
  compiled loop over every pair (numba, reference code of this benchmark only) counts the correct
  pairs at the search's epsilon and at the 64 candidates around it and at 64 epsilons spread over
  the range: the search's value must equal its count and no other epsilon may do better.

Prints a Markdown table, writes ``benchmarks/bench_acceq.json`` and renders it to
``docs/generated/scale/acceq.md`` (included by ``docs/scale.md``; `render` of the JSON).

    python benchmarks/bench_acceq.py                 # 10^4 and 10^5 (about 10 minutes)
    python benchmarks/bench_acceq.py --million       # and 10^6 stories of the "meta" data (search)

Bootstrap interval (issue 49): ``--interval`` times `tie_calibrated_ci`'s resamples at the
overall level (one pool; prompts resampled, 10 systems x n/10 prompts, 1,000 resamples) by the
shared branch and bound (`storyeval.compare.tie_search.resampled_best`) beside the per-pair curve
of every resample (the implementation before, quadratic in n, run where it fits: a few thousand
stories); the two must give the same values. Each in a fresh process, the load printed; writes
``benchmarks/bench_acceq_interval.json``.

    python benchmarks/bench_acceq.py --interval --sizes 2000 10000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "generated" / "scale" / "acceq.md"


def make_data(n: int, case: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if case == "meta":
        latent = np.repeat(rng.normal(size=10), n // 10) + rng.normal(size=n)
        ratings = np.clip(np.rint(3 + latent[:, None] + rng.normal(size=(n, 3))), 1, 5)
        return ratings.mean(axis=1), 0.5 * latent + rng.normal(size=n)
    human = rng.integers(1, 6, n).astype(np.float64)
    return human, human + rng.normal(size=n)


def _peak_mb() -> float:
    with open("/proc/self/status") as status:
        return int([line.split()[1] for line in status if line.startswith("VmHWM")][0]) / 1024


def _brute_counts(h: np.ndarray, m: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Correct pairs at every epsilon of the sorted array ``eps``, every pair visited."""
    import numba

    @numba.njit(cache=False)
    def counts(h, m, eps):
        k = len(eps)
        tied_from = np.zeros(k + 1, np.int64)  # human-tied pairs first counted at eps index
        conc_until = np.zeros(k + 1, np.int64)  # concordant pairs counted below eps index
        for i in range(len(h)):
            for j in range(i + 1, len(h)):
                d = m[i] - m[j]
                ad = abs(d)
                lo, hi = 0, k  # first eps index with eps >= |d|
                while lo < hi:
                    mid = (lo + hi) // 2
                    if eps[mid] >= ad:
                        hi = mid
                    else:
                        lo = mid + 1
                dh = h[i] - h[j]
                if dh == 0:
                    tied_from[lo] += 1
                elif dh * d > 0:
                    conc_until[lo] += 1
        return np.cumsum(tied_from)[:k] + (np.cumsum(conc_until[::-1])[::-1])[1:]

    return counts(h, m, eps)


def child(method: str, n: int, case: str) -> dict:
    h, m = make_data(n, case)
    import storyeval.compare.tie_calibration as tc

    out: dict = {"method": method, "n": n, "case": case, "pairs": n * (n - 1) // 2}
    if method in ("search", "quadratic"):
        if method == "quadratic":
            tc.EXACT_CURVE_PAIRS = 10**18  # enumerate every pair, whatever the size
        start = time.perf_counter()
        res = tc.tie_calibrated(h, m)
        out.update(seconds=time.perf_counter() - start, value=res.value, epsilon=res.epsilon,
                   correct=round(res.value * res.n_pairs), candidates=len(res.thresholds))
        if method == "search":  # the candidates it evaluated (the quadratic: all 5 x 10^7)
            out["thresholds"] = [float(t) for t in res.thresholds]
    else:  # brute: the counts at given epsilons
        eps = np.array(json.loads(os.environ["ACCEQ_EPS"]), dtype=np.float64)
        start = time.perf_counter()
        got = _brute_counts(h, m, eps)
        out.update(seconds=time.perf_counter() - start, epsilons=eps.tolist(),
                   counts=got.tolist())
    out["peak_mb"] = _peak_mb()
    return out


def interval_child(method: str, n: int, case: str, resamples: int) -> dict:
    """One way of computing every resample's calibrated acc_eq (overall level)."""
    from storyeval.compare.tie_calibration import (
        _prepare,
        _searched_resamples,
        _sorted_pairs,
        _story_resamples,
    )
    from storyeval.resample.bootstrap import draw_resamples

    h, m = make_data(n, case)
    prompts = np.tile(np.arange(n // 10), 10)
    _, draws = draw_resamples(10, n // 10, n_resamples=resamples, resample_by="prompts",
                              random_state=0)
    start = time.perf_counter()
    hh, mm, codes, keep = _prepare(h, m, None)
    if method == "search":
        values = _searched_resamples(hh, mm, codes, prompts[keep], draws, "overall", "acc23")
    else:
        values = _story_resamples(_sorted_pairs(hh, mm, codes, "acc23"), prompts[keep], False,
                                  draws)
    seconds = time.perf_counter() - start
    return {"method": method, "n": n, "case": case, "resamples": resamples,
            "seconds": seconds, "interval": np.quantile(values, [0.025, 0.975]).tolist(),
            "values": values.tolist(), "peak_mb": _peak_mb()}


def main_interval(sizes: list[int], cases: list[str], resamples: int,
                  reference_max: int) -> None:
    rows = []
    for n in sizes:
        for case in cases:
            row: dict = {"n": n, "case": case, "load_before": os.getloadavg()[0]}
            for method in ("search", "pairs") if n <= reference_max else ("search",):
                env = {**os.environ, "PYTHONPATH": str(ROOT)}
                proc = subprocess.run([sys.executable, __file__, "--interval-child", method,
                                       str(n), case, str(resamples)], capture_output=True,
                                      text=True, env=env, check=True)
                row[method] = json.loads(proc.stdout.strip().splitlines()[-1])
            if "pairs" in row:
                row["max_abs_difference"] = float(np.max(np.abs(
                    np.subtract(row["search"]["values"], row["pairs"]["values"]))))
            row["load_after"] = os.getloadavg()[0]
            for method in ("search", "pairs"):
                if method in row:
                    row[method].pop("values")
            print(json.dumps(row), flush=True)
            rows.append(row)
    lines = ["| stories | data | resamples | branch and bound: s | per-pair curve (before): s | "
             "max abs difference | 95% interval | load |",
             "| ---: | --- | ---: | ---: | ---: | ---: | --- | --- |"]
    for r in rows:
        ref = f"{r['pairs']['seconds']:.1f}" if "pairs" in r else "not run (quadratic)"
        diff = f"{r['max_abs_difference']:.1e}" if "pairs" in r else ""
        lo, hi = r["search"]["interval"]
        lines.append(f"| {r['n']:,} | {r['case']} | {r['search']['resamples']} | "
                     f"{r['search']['seconds']:.1f} | {ref} | {diff} | [{lo:.4f}, {hi:.4f}] | "
                     f"{r['load_before']:.1f}-{r['load_after']:.1f} |")
    print("\n".join(lines))
    (ROOT / "benchmarks" / "bench_acceq_interval.json").write_text(json.dumps(
        {"date": time.strftime("%Y-%m-%d", time.gmtime()), "rows": rows, "table": lines},
        indent=1) + "\n", encoding="utf-8")


def run_child(method: str, n: int, case: str, env_extra: dict | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env_extra or {})}
    proc = subprocess.run([sys.executable, __file__, "--child", method, str(n), case],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def brute_check(search: dict) -> dict:
    """Counts at the search's epsilon, the candidates it evaluated around it, and a grid."""
    h, m = make_data(search["n"], search["case"])
    thresholds = np.array(search["thresholds"])
    k = int(np.searchsorted(thresholds, search["epsilon"]))
    near = thresholds[max(0, k - 32):k + 32]
    grid = np.linspace(0, float(m.max() - m.min()), 64)
    eps = np.unique(np.r_[near, grid, search["epsilon"]])
    res = run_child("brute", search["n"], search["case"],
                    {"ACCEQ_EPS": json.dumps(eps.tolist())})
    counts = dict(zip(res["epsilons"], res["counts"]))
    res["equal"] = counts[search["epsilon"]] == search["correct"]
    res["no_better"] = max(res["counts"]) <= search["correct"]
    res.pop("counts")
    res.pop("epsilons")
    res["n_epsilons"] = len(eps)
    return res


def table(rows: list[dict]) -> str:
    head = ("| stories | data | pairs | search: s | search: peak MB | acc_eq | epsilon | "
            "reference | reference: s | reference: peak MB | equal |\n"
            "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | --- |\n")
    lines = []
    for r in rows:
        s, ref = r["search"], r.get("reference")
        if ref is None:
            refcols = "none (search only) | | | "
        elif ref["method"] == "quadratic":
            same = ref["value"] == s["value"] and ref["epsilon"] == s["epsilon"]
            refcols = (f"all pairs enumerated | {ref['seconds']:.1f} | {ref['peak_mb']:,.0f} | "
                       f"{'value and epsilon equal' if same else 'DIFFERENT'}")
        else:
            ok = ref["equal"] and ref["no_better"]
            refcols = (f"every pair counted at {ref['n_epsilons']} epsilons | "
                       f"{ref['seconds']:.1f} | {ref['peak_mb']:,.0f} | "
                       f"{'count equal, none better' if ok else 'MISMATCH'}")
        lines.append(f"| {r['n']:,} | {r['case']} | {s['pairs']:.2e} | {s['seconds']:.2f} | "
                     f"{s['peak_mb']:,.0f} | {s['value']:.6f} | {s['epsilon']:.6g} | {refcols} |")
    return head + "\n".join(lines) + "\n"


def render(result: dict) -> str:
    """The page's table and its provenance line from the JSON this script writes."""
    million = any(row["n"] >= 10**6 for row in result["rows"])
    return (table(result["rows"]) + f"\n`python benchmarks/bench_acceq.py"
            f"{' --million' if million else ''}`, {result['date']}, the shared 2-core "
            "development machine (other sessions running).\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("METHOD", "N", "CASE"))
    parser.add_argument("--million", action="store_true", help="add 10^6 stories (search)")
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "bench_acceq.json"))
    parser.add_argument("--no-page", action="store_true")
    parser.add_argument("--interval", action="store_true",
                        help="time the bootstrap interval's resamples (see the docstring)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 10_000, 100_000])
    parser.add_argument("--cases", nargs="+", default=["meta", "flat"])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--reference-max", type=int, default=2000,
                        help="largest n at which the per-pair curve runs too")
    parser.add_argument("--interval-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.interval_child:
        method, n, case, b = args.interval_child
        print(json.dumps(interval_child(method, int(n), case, int(b))))
        return 0
    if args.interval:
        main_interval(args.sizes, args.cases, args.resamples, args.reference_max)
        return 0
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.child[2])))
        return 0
    plan = [(10_000, "meta", "quadratic"), (10_000, "flat", "quadratic"),
            (100_000, "meta", "brute"), (100_000, "flat", "brute")]
    if args.million:
        plan += [(1_000_000, "meta", None)]
    rows = []
    for n, case, reference in plan:
        search = run_child("search", n, case)
        row = {"n": n, "case": case, "search": search}
        if reference == "quadratic":
            row["reference"] = run_child("quadratic", n, case)
        elif reference == "brute":
            row["reference"] = brute_check(search)
        print(f"{n} {case}: search {search['seconds']:.2f} s {search['peak_mb']:.0f} MB "
              f"value {search['value']!r} eps {search['epsilon']!r}; reference "
              f"{ {k: v for k, v in row.get('reference', {}).items() if k != 'thresholds'} }",
              flush=True)
        rows.append(row)
    for row in rows:
        for part in ("search", "reference"):
            if part in row:
                row[part].pop("thresholds", None)
    result = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "rows": rows}
    text = render(result)
    print(text)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if not args.no_page:
        PAGE.parent.mkdir(parents=True, exist_ok=True)
        PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
