"""Type-I error of the default comparison path on user data (docs page "Which test?").

Every number comes from storyeval's own functions, the ones `storyeval meta` runs with its
defaults on data without a default test (`--test auto`, sign convention ``raw``, family
``criterion``, 1,000 permutations, 1,000 bootstrap resamples): the correlations from
`storyeval.correlation.kernel.pairwise_correlations` (system means by
`storyeval.correlation.levels.level_data`, with the tie rule), the tests and intervals from
`storyeval.compare.procedures.compare_rows` (``ustat`` at the overall level for Kendall tau-b,
``permutation-random`` at the system level, with their default intervals), Williams' t for
Pearson from `storyeval.compare.williams.williams_test` with the Zou interval
(`storyeval.compare.procedures.effect_sizes`), and the adjustment from
`storyeval.compare.multitest.adjust_frame`. Replications are batched as rows of one call: each
replication has its own criterion column and measure columns in one wide table, so a call
runs thousands of comparisons at once (the swap masks and bootstrap resamples are shared by
the rows of a call, as they are by the comparisons of one `meta` run).

Data-generating processes (null: a and b correlate equally with the human score, and are
exchangeable within prompts):

* latent quality ``q ~ N(0, 1)`` per story (at the system level ``q = q_s + N(0, 1)`` with a
  system effect ``q_s ~ N(0, 0.3^2)`` drawn anew per replication, 50 prompts per system);
* human score: the mean of three 1-5 ratings ``clip(round(3 + q + N(0, 0.8^2)), 1, 5)`` (13
  values, ties), or one such rating (``likert-1``: 5 values);
* measures ``m_k = c q + s u + e_k`` with a shared component ``u ~ N(0, 1)`` and noise
  ``e_k`` (standard normal, or Student t with 3 degrees of freedom scaled to unit variance for
  ``heavy-tails``). ``base``: c = 1, s = 0.5; ``weak``: c = 0.15 (rho(h, m) about 0.1);
  ``strong-ab``: s = sqrt(3) (rho(a, b) about 0.8). The measured population correlations are
  printed with the table.

Also measured: the family-wise error of all pairs of 6 exchangeable measures under the default
family (BH over the comparisons of a criterion) and under the paper's family (each pair its
own family with one criterion), and how often a p < 0.05 comes with a 95% interval that
covers 0 (or p >= 0.05 with an interval that excludes 0).

Run: ``nice -n 10 python benchmarks/bench_calibration.py [--reps 2000] [--page
docs/which-test.md]``. At the default 2,000 replications per cell the cells took 1,228 s in
all on the shared, busy 2-core machine where the page's table was made; the time is
proportional to ``--reps`` (``--reps 1000``: about 10 minutes there). Each rate is printed
with its Monte Carlo standard error ``sqrt(rate (1 - rate) / replications)``.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import pandas as pd

from storyeval._atomic import atomic_write_text
from storyeval.compare.multitest import adjust_frame
from storyeval.compare.procedures import compare_rows, effect_sizes
from storyeval.compare.williams import williams_test
from storyeval.correlation.kernel import pairwise_correlations
from storyeval.correlation.levels import level_data

ALPHA = 0.05
PROMPTS = 50
SYS_SD = 0.3
OVERALL_SYSTEMS = 10  # the overall level pools stories; they still need a (system, prompt) index
DGPS = {
    "base": {"signal": 1.0, "shared": 0.5, "noise": "normal", "human": "likert-3"},
    "weak": {"signal": 0.15, "shared": 0.5, "noise": "normal", "human": "likert-3"},
    "strong-ab": {"signal": 1.0, "shared": math.sqrt(3), "noise": "normal", "human": "likert-3"},
    "heavy-tails": {"signal": 1.0, "shared": 0.5, "noise": "t3", "human": "likert-3"},
    "likert-1": {"signal": 1.0, "shared": 0.5, "noise": "normal", "human": "likert-1"},
}
OVERALL_SIZES = (30, 100, 1000)
SYSTEM_SIZES = (5, 10, 20)


# ------------------------------------------------------------------------------------------------
# data


def _noise(shape, kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "t3":
        return rng.standard_t(3, size=shape) / math.sqrt(3.0)  # unit variance
    return rng.normal(size=shape)


def _human(q: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    raters = 3 if kind == "likert-3" else 1
    r = np.clip(np.rint(3 + q[..., None] + rng.normal(0, 0.8, q.shape + (raters,))), 1, 5)
    return r.mean(-1)


def simulate(dgp: dict, reps: int, systems: int, prompts: int, measures: int, rng,
             system_effects: bool) -> tuple[np.ndarray, np.ndarray]:
    """Human scores (reps, S, P) and measures (reps, S, P, K) of ``reps`` replications."""
    shape = (reps, systems, prompts)
    q = rng.normal(size=shape)
    if system_effects:
        q = q + rng.normal(0, SYS_SD, (reps, systems, 1))
    u = rng.normal(size=shape)
    h = _human(q, dgp["human"], rng)
    base = dgp["signal"] * q + dgp["shared"] * u
    m = base[..., None] + _noise(shape + (measures,), dgp["noise"], rng)
    return h, m


def wide_table(h: np.ndarray, m: np.ndarray, first: int = 0,
               ) -> tuple[pd.DataFrame, list[str], list[list[str]]]:
    """One wide table: replication r (numbered from ``first``) has criterion ``h{r}`` and
    measures ``m{k}_{r}``."""
    reps, S, P, K = m.shape
    crit = [f"h{first + r}" for r in range(reps)]
    meas = [[f"m{k}_{first + r}" for k in range(K)] for r in range(reps)]
    index = pd.MultiIndex.from_product([[f"S{s:02d}" for s in range(S)], range(P)],
                                       names=["system", "prompt_id"])
    values = np.concatenate([h.reshape(reps, S * P).T,
                             m.transpose(1, 2, 0, 3).reshape(S * P, reps * K)], axis=1)
    cols = crit + [c for row in meas for c in row]
    return pd.DataFrame(values, index=index, columns=cols), crit, meas


def comparisons(wide: pd.DataFrame, crit: list[str], meas: list[list[str]], level: str,
                method: str) -> dict[str, np.ndarray]:
    """The comparison rows (all pairs of a replication's measures) with their correlations, as
    `meta_evaluate` builds them (`storyeval.meta.pipeline`), batched over replications."""
    reps, K = len(meas), len(meas[0])
    cols = [c for r in range(reps) for c in (crit[r], *meas[r])]
    data = level_data(wide, cols, level=level)
    X = np.asarray(data, dtype=np.float64).reshape(-1, reps, K + 1).transpose(1, 0, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        R = pairwise_correlations(X, method=method, warn=False).statistic  # (reps, K+1, K+1)
    i, j = np.triu_indices(K, k=1)
    rep = np.repeat(np.arange(reps), len(i))
    ii, jj = np.tile(i, reps), np.tile(j, reps)
    names = np.array(meas, dtype=object)
    return {"level": np.full(len(rep), level, dtype=object),
            "criterion": np.array(crit, dtype=object)[rep],
            "measure_a": names[rep, ii], "measure_b": names[rep, jj],
            "r_a": R[rep, 0, ii + 1], "r_b": R[rep, 0, jj + 1], "r_ab": R[rep, ii + 1, jj + 1],
            "n": np.full(len(rep), X.shape[1])}


def default_path(wide, comp, level: str, method: str, seed: int) -> dict[str, np.ndarray]:
    """p-values and intervals of the default test of ``level`` (what `storyeval meta` runs on
    user data): `compare_rows`, or Williams' t with its interval for Pearson."""
    from storyeval.compare.procedures import calibrated_test

    test = calibrated_test(level, method)
    shared = {"level": level, "method": method, "sign_convention": "raw",
              "random_state": seed}
    if test == "williams":
        res = williams_test(comp["r_a"], comp["r_b"], comp["r_ab"], comp["n"],
                            alternative="two-sided", direction="fixed", sign_convention="raw")
        out = {"p": np.asarray(res.pvalue, dtype=float)}
        out.update(effect_sizes(wide, comp, test=test, **shared))
        return out
    return compare_rows(wide, comp, test=test, **shared)


# ------------------------------------------------------------------------------------------------
# one cell


def run_cell(dgp_name: str, level: str, size: int, reps: int, method: str, seed: int,
             measures: int = 2, chunk: int | None = None) -> dict:
    dgp = DGPS[dgp_name]
    rng = np.random.default_rng([seed, hash_name(dgp_name), size, measures])
    system_effects = level == "system"
    S, P = (size, PROMPTS) if level == "system" else (OVERALL_SYSTEMS, size // OVERALL_SYSTEMS)
    chunk = chunk or reps
    parts = []
    for start in range(0, reps, chunk):
        n = min(chunk, reps - start)
        h, m = simulate(dgp, n, S, P, measures, rng, system_effects)
        wide, crit, meas = wide_table(h, m, start)
        comp = comparisons(wide, crit, meas, level, method)
        res = default_path(wide, comp, level, method, seed + start)
        frame = pd.DataFrame({"criterion": comp["criterion"], "level": level,
                              "measure_a": comp["measure_a"], "measure_b": comp["measure_b"],
                              "p": res["p"], "ci_low": res["ci_low"],
                              "ci_high": res["ci_high"]})
        parts.append(frame)
    frame = pd.concat(parts, ignore_index=True)
    out = {"dgp": dgp_name, "level": level, "size": size, "method": method,
           "measures": measures}
    reject = frame["p"].to_numpy() < ALPHA
    excludes = ((frame["ci_low"] > 0) | (frame["ci_high"] < 0)).to_numpy()
    if measures == 2:
        out.update(rate=reject.mean(), reps=len(frame))
    else:
        # family-wise error: any adjusted p < 0.05 in a replication, per family
        default = adjust_frame(frame, by="criterion", method="bh")
        paper = adjust_frame(frame, by="paper", method="bh")  # one criterion: m = 1 each
        out.update(rate=_any(default), rate_paper_family=_any(paper),
                   reps=frame["criterion"].nunique())
    out["disagree"] = float(np.mean(reject != excludes))
    out["p_sig_ci_covers_0"] = float(np.mean(reject & ~excludes))
    return out


def _any(adjusted: pd.DataFrame) -> float:
    hit = (adjusted["p_adjusted"] < ALPHA).groupby(adjusted["criterion"]).any()
    return float(hit.mean())


def hash_name(name: str) -> int:
    return sum((k + 1) * ord(c) for k, c in enumerate(name))


def population(dgp_name: str, seed: int = 1) -> dict[str, float]:
    """Pearson rho(h, a) and rho(a, b) of a DGP, on 200,000 stories."""
    dgp = DGPS[dgp_name]
    h, m = simulate(dgp, 1, 1, 200_000, 2, np.random.default_rng(seed), False)
    h, a, b = h.ravel(), m[..., 0].ravel(), m[..., 1].ravel()
    return {"rho_ha": float(np.corrcoef(h, a)[0, 1]), "rho_ab": float(np.corrcoef(a, b)[0, 1])}


# ------------------------------------------------------------------------------------------------


def mc_se(rate: float, reps: int) -> float:
    return math.sqrt(max(rate * (1 - rate), 1e-12) / reps)


def run(reps: int, seed: int, methods: tuple[str, ...], fwer: bool = True) -> list[dict]:
    rows = []
    for method in methods:
        for dgp in DGPS:
            for level, sizes in (("overall", OVERALL_SIZES), ("system", SYSTEM_SIZES)):
                for size in sizes:
                    t0 = time.time()
                    chunk = max(50, int(4e6 // (size * (PROMPTS if level == "system" else 1)
                                                * 64)))
                    row = run_cell(dgp, level, size, reps, method, seed, chunk=chunk)
                    row["seconds"] = time.time() - t0
                    rows.append(row)
                    print(f"# {method} {dgp} {level} {size}: {row['rate']:.3f} "
                          f"+- {mc_se(row['rate'], row['reps']):.3f} ({row['seconds']:.1f} s)",
                          flush=True)
    for level, size in (("overall", 100), ("system", 10)) if fwer else ():
        t0 = time.time()
        row = run_cell("base", level, size, reps, "kendall_b", seed, measures=6,
                       chunk=max(20, reps // 10))
        row["seconds"] = time.time() - t0
        rows.append(row)
        print(f"# FWER 6 measures {level} {size}: {row['rate']:.3f} (paper family "
              f"{row['rate_paper_family']:.3f}) ({row['seconds']:.1f} s)", flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    frame = pd.DataFrame(rows)
    two = frame[frame["measures"] == 2]
    lines = []
    for method, part in two.groupby("method", sort=False):
        cols = [f"overall {s}" for s in OVERALL_SIZES] + [f"system {s}" for s in SYSTEM_SIZES]
        lines += [(f"**{method}** (default test: overall `{_test('overall', method)}`, system "
                   f"`{_test('system', method)}`), P(p < 0.05) +- Monte Carlo standard error:"),
                  "", "| data | rho(h,a) | rho(a,b) | " + " | ".join(cols) + " |",
                  "| --- | ---: | ---: |" + " ---: |" * len(cols)]
        for dgp, cells in part.groupby("dgp", sort=False):
            pop = population(dgp)
            by = {f"{r['level']} {r['size']}": r for r in cells.to_dict("records")}
            vals = [f"{by[c]['rate']:.3f} +- {mc_se(by[c]['rate'], by[c]['reps']):.3f}"
                    if c in by else "" for c in cols]
            lines.append(f"| {dgp} | {pop['rho_ha']:.2f} | {pop['rho_ab']:.2f} | "
                         + " | ".join(vals) + " |")
        lines.append("")
    reps = sorted({int(r) for r in two["reps"]})
    lines.append(f"Replications per cell: {', '.join(map(str, reps))}.")
    lines.append("")
    fw = frame[frame["measures"] > 2]
    if len(fw):
        lines += [("**All pairs of 6 exchangeable measures** (base data, one criterion, 15 "
                   "tests per replication), P(some BH-adjusted p < 0.05):"), "",
                  "| level | default family `criterion` | paper's family | replications |",
                  "| --- | ---: | ---: | ---: |"]
        for r in fw.to_dict("records"):
            lines.append(f"| {r['level']} {r['size']} | {r['rate']:.3f} +- "
                         f"{mc_se(r['rate'], r['reps']):.3f} | {r['rate_paper_family']:.3f} | "
                         f"{r['reps']} |")
        lines.append("")
    lo, hi = two["disagree"].min(), two["disagree"].max()
    cov = two["p_sig_ci_covers_0"].max()
    lines.append(f"Test and interval disagree (p < 0.05 but the 95% interval covers 0, or "
                 f"p >= 0.05 and it excludes 0) in {lo:.3f}-{hi:.3f} of the comparisons per "
                 f"cell; p < 0.05 with an interval covering 0 in at most {cov:.3f}.")
    return "\n".join(lines) + "\n"


def _test(level: str, method: str) -> str:
    from storyeval.compare.procedures import calibrated_test

    return calibrated_test(level, method)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default="kendall_b,pearson")
    parser.add_argument("--no-fwer", action="store_true",
                        help="skip the family-wise error of 6 measures")
    parser.add_argument("--csv", help="also write the long table to this CSV file")
    parser.add_argument("--from-csv", help="skip the simulation: rows from this CSV")
    parser.add_argument("--markdown", help="write the table to this file")
    parser.add_argument("--page", help="put the table into this docs page (docs/which-test.md) "
                                       "between its calibration markers")
    args = parser.parse_args()
    t0 = time.time()
    if args.from_csv:
        rows = pd.read_csv(args.from_csv).to_dict("records")
    else:
        rows = run(args.reps, args.seed, tuple(args.methods.split(",")), not args.no_fwer)
    text = markdown(rows)
    seconds = (sum(float(r.get("seconds", 0)) for r in rows) if args.from_csv
               else time.time() - t0)
    took = (f"cells of {seconds:.0f} s in all" if args.from_csv else f"in {seconds:.0f} s")
    footer = (f"Generated by `nice -n 10 python benchmarks/bench_calibration.py --reps "
              f"{args.reps} --seed {args.seed} --methods {args.methods}` ({took}, on a "
              "shared, busy 2-core machine; the time grows in proportion to --reps).")
    print(text + "\n" + footer)
    if args.csv:
        pd.DataFrame(rows).to_csv(args.csv, index=False)
    if args.markdown:
        atomic_write_text(args.markdown, text + "\n" + footer + "\n")
    if args.page:
        write_page(args.page, text + "\n" + footer + "\n")


START, END = "<!-- calibration:start -->", "<!-- calibration:end -->"


def write_page(path: str, table: str) -> None:
    """Replace what lies between the calibration markers of a docs page with ``table``."""
    with open(path, encoding="utf-8") as fh:
        page = fh.read()
    head, rest = page.split(START, 1)
    _, tail = rest.split(END, 1)
    atomic_write_text(path, f"{head}{START}\n{table}{END}{tail}")


if __name__ == "__main__":
    main()
