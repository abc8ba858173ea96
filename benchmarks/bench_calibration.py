"""Type-I error and power of every comparison test storyeval offers (docs page "Which test?").

Two measures a and b are compared by their correlation with a human score h. Under the null both
correlate equally with h; the table is the share of replications with p < 0.05 (nominal 0.05).

Simulated data (realistic ties: the human score is the mean of three 1-5 ratings):

* **overall level**, n stories: latent quality ``q ~ N(0, 1)``; each of three raters gives
  ``clip(round(3 + q + N(0, 0.8^2)), 1, 5)``; ``h`` is their mean (13 possible values). The
  measures share a component ``u`` (metrics correlate with each other, r(a, b) about 0.6):
  ``a = q + 0.5 u + e_a``, ``b = q + 0.5 u + s e_b`` with standard normal noise; ``s = 1``
  under the null. Power: ``s`` is set so that the population tau-b(h, b) is lower than
  tau-b(h, a) by delta (found by bisection on 400,000 stories).
* **system level**, S systems x P = 50 prompts: ``q = q_s + N(0, 1)`` with system effects
  ``q_s ~ N(0, 0.3^2)`` drawn anew in every replication (the systems are a sample), the same
  ratings and measures per story; correlated are the S system means. Power: delta in the
  population system-level tau-b (40,000 systems).

Tests (two-sided and direction fixed unless said; names as ``storyeval meta --test``):
``paper`` (Williams t on the coefficient, one-sided, in the direction of the larger |r|),
``williams``, ``ustat`` (tau-b), ``jackknife``, ``bootstrap`` (items or prompts resampled, paired,
``--resamples`` resamples), ``permutation`` (swap a/b per story at the overall level, per prompt
at the system level; ties counted as extreme), ``permutation-random`` (system level, ties broken
at random). Each test is run with the storyeval functions it uses (`williams_test`,
`ustat_diff`, `jackknife_diff`, `normal_test`, `resample._kernels.direct`), on all replications
at once (a batch axis); only tau(a, b), which the Williams formula needs, is computed per
replication (scipy, O(n log n)).

Run: ``python benchmarks/bench_calibration.py [--reps 10000] [--resampling-reps 2000]
[--resamples 100] [--markdown FILE]``. The analytic tests get ``--reps`` replications per cell
(a fifth at n = 5000), the resampling tests ``--resampling-reps`` under the null and a quarter
of them for power (overall level: n = 30 only), each with ``--resamples`` resamples or
permutations. Prints a Markdown
table; the docs page "Which test?" shows its latest output.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import scipy.stats as st

from storyeval.compare.dependent import (
    jackknife_diff,
    kendall_rows,
    normal_test,
    untied_counts,
    ustat_diff,
)
from storyeval.compare.williams import williams_test

ALPHA = 0.05
PROMPTS = 50
SYS_SD = 0.3
METHODS = ("kendall_b", "pearson", "spearman")


# ------------------------------------------------------------------------------------------------
# data


def ratings_mean(q: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    r = np.clip(np.rint(3 + q[..., None] + rng.normal(0, 0.8, q.shape + (3,))), 1, 5)
    return r.mean(-1)


def stories(shape, s_b: float, rng, q=None):
    q = rng.normal(size=shape) if q is None else q
    u = rng.normal(size=shape)
    h = ratings_mean(q, rng)
    a = q + 0.5 * u + rng.normal(size=shape)
    b = q + 0.5 * u + s_b * rng.normal(size=shape)
    return h, a, b


def overall_data(reps: int, n: int, s_b: float, rng):
    return stories((reps, n), s_b, rng)


def system_data(reps: int, S: int, s_b: float, rng):
    """Story cubes (reps, S, P) of h, a, b."""
    q = rng.normal(0, SYS_SD, (reps, S, 1)) + rng.normal(size=(reps, S, PROMPTS))
    return stories(q.shape, s_b, rng, q=q)


# ------------------------------------------------------------------------------------------------
# batched coefficients


def coef(x: np.ndarray, y: np.ndarray, method: str) -> np.ndarray:
    if method == "kendall_b":
        r = kendall_rows(x, y)
        return r.sum(-1) / np.sqrt(untied_counts(x).sum(-1) * untied_counts(y).sum(-1))
    if method == "spearman":
        x, y = st.rankdata(x, axis=-1), st.rankdata(y, axis=-1)
    x = x - x.mean(-1, keepdims=True)
    y = y - y.mean(-1, keepdims=True)
    return (x * y).sum(-1) / np.sqrt((x * x).sum(-1) * (y * y).sum(-1))


def coef_ab(a: np.ndarray, b: np.ndarray, method: str) -> np.ndarray:
    if method != "kendall_b" or a.shape[-1] <= 300:
        return coef(a, b, method)
    flat_a, flat_b = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    out = np.array([st.kendalltau(x, y).statistic for x, y in zip(flat_a, flat_b)])
    return out.reshape(a.shape[:-1])


# ------------------------------------------------------------------------------------------------
# tests: each returns p-values (reps,)


def analytic_tests(h, a, b, method: str) -> dict[str, np.ndarray]:
    n = h.shape[-1]
    r12, r13, r23 = coef(h, a, method), coef(h, b, method), coef_ab(a, b, method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = {"paper": williams_test(r12, r13, r23, n).pvalue,
               "williams": williams_test(r12, r13, r23, n, alternative="two-sided",
                                         direction="fixed").pvalue}
        if method == "kendall_b":
            out["ustat"] = normal_test(ustat_diff(h, a, b))[1]
        if method != "spearman" or n <= 100:  # O(n^2) leave-one-out ranks
            out["jackknife"] = normal_test(jackknife_diff(h, a, b, method))[1]
    return out


def _two_sided_boot(d: np.ndarray) -> np.ndarray:
    B = d.shape[-1]
    below, above = (d <= 1e-12).sum(-1), (d >= -1e-12).sum(-1)
    return np.minimum(1.0, 2.0 * np.minimum(1 + below, 1 + above) / (B + 1))


def overall_resampling(h, a, b, method, n_boot, rng) -> dict[str, np.ndarray]:
    """Bootstrap of stories and story-level swaps, batched over replications x resamples."""
    reps, n = h.shape
    idx = rng.integers(0, n, (reps, n_boot, n))
    take = (lambda v: np.take_along_axis(v[:, None, :], idx, axis=-1))
    hb, ab, bb = take(h), take(a), take(b)
    d = coef(hb, ab, method) - coef(hb, bb, method)
    obs = coef(h, a, method) - coef(h, b, method)
    out = {"bootstrap": _two_sided_boot(d)}
    # permutation: swap a/b (z-scored) per story; conservative p (ties count as extreme)
    za = (a - a.mean(-1, keepdims=True)) / a.std(-1, keepdims=True)
    zb = (b - b.mean(-1, keepdims=True)) / b.std(-1, keepdims=True)
    m = rng.random((reps, n_boot, n)) < 0.5
    ap, bp = np.where(m, zb[:, None], za[:, None]), np.where(m, za[:, None], zb[:, None])
    dp = coef(h[:, None], ap, method) - coef(h[:, None], bp, method)
    out["permutation"] = (1 + (np.abs(dp) >= np.abs(obs)[:, None] - 1e-12).sum(-1)) / (n_boot + 1)
    return out


def system_tests(h, a, b, method, n_resampling, n_boot, rng, analytic=True):
    """h, a, b: (reps, S, P) stories. Analytic tests on the S system means; resampling tests
    (the first n_resampling replications) swap or resample whole prompts."""
    H, A, B = h.mean(-1), a.mean(-1), b.mean(-1)
    out = analytic_tests(H, A, B, method) if analytic else {}
    if not n_resampling:
        return out
    h, a, b, H, A, B = (v[:n_resampling] for v in (h, a, b, H, A, B))
    reps, _, P = h.shape
    obs = coef(H, A, method) - coef(H, B, method)
    # bootstrap prompts: system means of the resampled prompts
    w = np.stack([np.bincount(row, minlength=P) for row in
                  rng.integers(0, P, (reps * n_boot, P))]).reshape(reps, n_boot, P) / P
    mean = (lambda v: np.einsum("rbp,rsp->rbs", w, v))
    d = coef(mean(h), mean(a), method) - coef(mean(h), mean(b), method)
    out["bootstrap"] = _two_sided_boot(d)
    # permutation over prompts (z-scored measures), as storyeval.compare.procedures.system_permutation
    za = (a - a.mean((1, 2), keepdims=True)) / a.std((1, 2), keepdims=True)
    zb = (b - b.mean((1, 2), keepdims=True)) / b.std((1, 2), keepdims=True)
    m = (rng.random((reps, n_boot, P)) < 0.5).astype(float)
    shift = np.einsum("rnp,rsp->rns", m, zb - za) / P
    Za, Zb = za.mean(-1), zb.mean(-1)
    Hn = H[:, None]
    dp = coef(Hn, Za[:, None] + shift, method) - coef(Hn, Zb[:, None] - shift, method)
    obs_z = coef(H, Za, method) - coef(H, Zb, method)
    more = (np.abs(dp) > np.abs(obs_z)[:, None] + 1e-12).sum(-1)
    tied = (np.abs(np.abs(dp) - np.abs(obs_z)[:, None]) <= 1e-12).sum(-1)
    out["permutation"] = (1 + more + tied) / (n_boot + 1)
    out["permutation-random"] = (more + rng.random(reps) * (1 + tied)) / (n_boot + 1)
    del obs
    return out


# ------------------------------------------------------------------------------------------------
# effect sizes for power


def population_tau(s_b: float, level: str, rng) -> float:
    if level == "overall":
        h, a, b = stories((400_000,), s_b, rng)
    else:
        q = rng.normal(0, SYS_SD, (40_000, 1)) + rng.normal(size=(40_000, PROMPTS))
        h, a, b = (v.mean(-1) for v in stories(q.shape, s_b, rng, q=q))
    return st.kendalltau(h, a).statistic - st.kendalltau(h, b).statistic


def noise_for(delta: float, level: str, seed: int) -> float:
    lo, hi = 1.0, 6.0
    for _ in range(18):
        mid = (lo + hi) / 2
        if population_tau(mid, level, np.random.default_rng(seed)) < delta:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


# ------------------------------------------------------------------------------------------------


def rate(p: np.ndarray) -> float:
    return float(np.mean(np.asarray(p) < ALPHA))


def run(reps: int, resampling_reps: int, n_boot: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    cells = [("overall", n) for n in (30, 100, 1000, 5000)] + [("system", s) for s in (5, 10, 20)]
    effects = {0.0: {"overall": 1.0, "system": 1.0}}
    for delta in (0.05, 0.10):
        effects[delta] = {lev: noise_for(delta, lev, seed + 1) for lev in ("overall", "system")}
    for delta, noise in effects.items():
        # resampling tests: the full count under the null, a quarter for power
        n_res = resampling_reps if delta == 0 else resampling_reps // 4
        for level, size in cells:
            t0 = time.time()
            for method in METHODS:
                n_reps = reps if size < 5000 else max(reps // 5, 1)
                if level == "overall":
                    results = {}
                    for sl in _chunks(n_reps, size):
                        h, a, b = overall_data(sl, size, noise[level], rng)
                        part = analytic_tests(h, a, b, method)
                        for k, v in part.items():
                            results.setdefault(k, []).append(v)
                    results = {k: np.concatenate(v) for k, v in results.items()}
                    if size <= 30 and n_res:
                        parts = {}
                        for sl in _chunks(n_res, size * n_boot * 20):
                            h, a, b = overall_data(sl, size, noise[level], rng)
                            for k, v in overall_resampling(h, a, b, method, n_boot, rng).items():
                                parts.setdefault(k, []).append(v)
                        results.update({k: np.concatenate(v) for k, v in parts.items()})
                else:
                    results = {}
                    for sl in _chunks(n_reps, size * PROMPTS):
                        h, a, b = system_data(sl, size, noise[level], rng)
                        for k, v in system_tests(h, a, b, method, 0, n_boot, rng).items():
                            results.setdefault(k, []).append(v)
                    results = {k: np.concatenate(v) for k, v in results.items()}
                    if n_res:
                        for sl in _chunks(n_res, size * PROMPTS * n_boot // 10):
                            h, a, b = system_data(sl, size, noise[level], rng)
                            part = system_tests(h, a, b, method, sl, n_boot, rng, analytic=False)
                            for k, v in part.items():
                                results.setdefault("r:" + k, []).append(v)
                        results.update({k[2:]: np.concatenate(v) for k, v in results.items()
                                        if k.startswith("r:")})
                        results = {k: v for k, v in results.items() if not k.startswith("r:")}
                for test, p in results.items():
                    rows.append({"delta": delta, "level": level, "size": size,
                                 "method": method, "test": test, "rate": rate(p),
                                 "reps": len(p)})
            print(f"# delta {delta}, {level} {size}: {time.time() - t0:.1f} s", flush=True)
    return rows


def _chunks(total: int, size: int):
    step = max(1, int(1.5e6 // max(size, 1)))
    done = 0
    while done < total:
        yield min(step, total - done)
        done += step


TEST_ORDER = ("paper", "williams", "ustat", "jackknife", "bootstrap", "permutation",
              "permutation-random")


def markdown(rows: list[dict], delta: float) -> str:
    import pandas as pd

    frame = pd.DataFrame(rows)
    frame = frame[frame["delta"] == delta]
    frame["cell"] = frame["level"] + " " + frame["size"].astype(str)
    frame["col"] = frame["method"] + " / " + frame["test"]
    table = frame.pivot(index="col", columns="cell", values="rate")
    order = [f"{m} / {t}" for m in METHODS for t in TEST_ORDER if f"{m} / {t}" in table.index]
    cols = [c for lev, sizes in (("overall", (30, 100, 1000, 5000)), ("system", (5, 10, 20)))
            for c in (f"{lev} {s}" for s in sizes) if c in table.columns]
    table = table.loc[order, cols]
    head = "| coefficient / test | " + " | ".join(cols) + " |"
    lines = [head, "| --- |" + " ---: |" * len(cols)]
    for name, row in table.iterrows():
        cells = ["" if np.isnan(v) else f"{v:.3f}" for v in row]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


CALIBRATED = {("overall", "kendall_b"): "ustat", ("overall", "pearson"): "williams",
              ("overall", "spearman"): "jackknife"}
LOW, HIGH = 0.04, 0.06


def _verdict(rates) -> str:
    lo, hi = float(np.min(rates)), float(np.max(rates))
    if LOW <= lo and hi <= HIGH:
        return f"holds its level ({lo:.3f}-{hi:.3f})"
    if hi > HIGH and lo < LOW:
        return f"off in both directions ({lo:.3f}-{hi:.3f})"
    if hi > HIGH:
        return f"**too liberal** (up to {hi:.3f})"
    return f"conservative (down to {lo:.3f})"


def guidance(rows: list[dict]) -> str:
    """Sentences computed from the measured rates: which test holds its level where, what the
    paper's convention does, the power of the calibrated default."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    null = frame[frame["delta"] == 0]
    lines = []
    for level in ("overall", "system"):
        sizes = sorted(null.loc[null["level"] == level, "size"].unique())
        unit = "stories" if level == "overall" else "systems"
        lines.append(f"**{level.capitalize()} level** ({', '.join(map(str, sizes))} {unit}):\n")
        for method in METHODS:
            part = null[(null["level"] == level) & (null["method"] == method)]
            verdicts = []
            for t in TEST_ORDER:
                cells = part[part["test"] == t]
                if cells.empty:
                    continue
                where = ("" if len(cells) == len(sizes) else
                         f" [measured at {', '.join(map(str, sorted(cells['size'])))} only]")
                verdicts.append(f"`{t}` {_verdict(cells['rate'])}{where}")
            lines.append(f"- {method}: " + "; ".join(verdicts) + ".")
        lines.append("")
    for level, size in (("overall", 1000), ("overall", 100), ("system", 10)):
        for method in METHODS:
            test = CALIBRATED.get((level, method), "permutation-random")
            power = frame[(frame["level"] == level) & (frame["size"] == size)
                          & (frame["method"] == method) & (frame["test"] == test)
                          & (frame["delta"] > 0)].set_index("delta")["rate"]
            if len(power) == 2:
                lines.append(f"- Power of the default (`{test}`, {method}) with {size} "
                             f"{'stories' if level == 'overall' else 'systems'}: "
                             f"{power.iloc[0]:.2f} at delta tau = 0.05, {power.iloc[1]:.2f} at "
                             "0.10.")
    return "\n".join(lines) + "\n"


PAGE_HEAD = """# Which test?

`storyeval meta` compares two measures by their correlation with a human criterion: does
metric a agree with the humans better than metric b? Every comparison row names its test
(`test`), its sidedness (`sided`) and its convention (`convention`), and gives the difference
of the two correlations with a confidence interval (`delta`, `ci_low`, `ci_high`,
`ci_method`): a p-value alone does not say whether a difference is worth having.

## The short answer

- **Your own data: keep the default** (`--test auto`). It is two-sided with the direction fixed
  (a vs b): at the overall level the U-statistic z-test for Kendall tau-b (`ustat`), Williams' t
  for Pearson, the jackknife z-test for Spearman and tau-c; at the system level the paired
  permutation test that swaps whole prompts with random tie-breaking (`permutation-random`).
  The tables below give their measured type-I error for the default coefficient (tau-b) and
  for Pearson and Spearman.
- **Reproducing HANNA**: the paper's convention (`--test paper`, the default on the embedded
  HANNA data) runs Williams' t one-sided in the direction of the larger |r|, chosen after seeing
  the data. Its level is not what it says (first row of each coefficient below): the post-hoc
  direction doubles the one-sided level, and on Kendall's tau the Williams formula (derived for
  Pearson) overstates the variance, so the result is far below the nominal level at the overall
  level and, with 5 systems, far above it. The header of every paper-convention run states the
  measured level.
- `permutation-random` is exact when the two measures are *exchangeable* within prompts (the
  null simulated here). If one metric is a noisy, differently scaled transform of the other,
  standardising (done) helps but does not make them exchangeable. `bootstrap` does not need
  exchangeability, but at the system level it treats the systems as fixed and is very
  conservative when they are a sample; `permutation` counts ties with the observed difference
  as extreme, which makes it conservative with few systems.
- Every comparison row carries the effect size `delta = |r(h,a)| - |r(h,b)|` and its interval:
  read the interval, not only the p-value. Power is low at the system level whatever the test
  (10 systems, delta tau = 0.10: about one detection in eight): a non-significant system-level
  comparison says little.

## How this was measured

`benchmarks/bench_calibration.py` simulates stories whose human score is the mean of three 1-5
ratings (13 possible values: realistic ties), two measures that correlate equally with the
latent quality and with each other (r(a, b) about 0.6), and at the system level 50 prompts per
system with system effects drawn anew in every replication. The rates are P(p < 0.05);
with 10,000 replications a rate has a Monte Carlo standard error of 0.002 (0.005 with the
2,000 replications of the resampling tests). Power: b's noise is raised until the population
tau-b of b with the human score is lower than a's by delta (0.05 or 0.10), at each level.
The tests are the storyeval functions themselves, run on all replications at once.

"""

# the planner's section (its example output was pasted from a real `storyeval power` run)
PAGE_PLANNING = """## Planning: how many stories?

Before collecting human ratings, `storyeval power` estimates by simulation how many stories
(at the system level: how many systems, with `--prompts` prompts each) the comparison test
needs to detect that measure a correlates with the humans better than measure b by `delta`.
Give the correlations you expect (`--r-human r(h,a),r(h,b) --r-between r(a,b)`, in the units
of `--coef`), or pilot data (`--data pilot.csv --measures A,B --criterion C`: the three
correlations are estimated from it and `--delta` defaults to the observed difference). For
each size of the grid (`--n`) it simulates `--replications` data sets with those population
correlations (a Gaussian copula; at the overall level the human score is the mean of three 1-5
ratings, or the pilot criterion's own values), runs the test `storyeval meta` would run
(`--test auto`, two-sided, `--alpha`) on all of them at once and reports the share with
p < alpha and its Monte Carlo standard error:

```console
$ storyeval power --r-human 0.45,0.35 --r-between 0.6
kendall_b at the overall level, test ustat (two-sided, alpha 0.05); r(h,a) = 0.450, r(h,b) = 0.350, r(a,b) = 0.600: delta = 0.100.
smallest n with power >= 0.8: 200 stories (power 0.899 +- 0.007, 2000 replications).

n    power  mc_se  n_replications
---  -----  -----  --------------
 25  0.138  0.008            2000
 50  0.317  0.010            2000
100  0.625  0.011            2000
200  0.899  0.007            2000
note: n > 200 not simulated (the target power is reached; --full-grid simulates them)
```

`--out DIR` writes the table (`power.csv`) and the power-versus-n plot (`power.png`). The
answer is the smallest size *of the grid* that reaches the target: refine `--n` around it for
a closer number. At the system level the simulated systems share a quality that the human score
and both measures reflect equally, so that under the null the two measures are exchangeable
within prompts (the assumption of `permutation-random`). The simulated data are an idealisation
of real ratings: plan with a margin. From Python: `storyeval.power.planner.plan_power`.

"""



def page(rows: list[dict], footer: str) -> str:
    parts = [PAGE_HEAD, PAGE_PLANNING, "## What the numbers say\n\n", guidance(rows), "\n"]
    for delta, title in ((0.0, "Type-I error (null: equal correlation), P(p < 0.05)"),
                         (0.05, "Power at delta tau = 0.05"), (0.10, "Power at delta tau = 0.10")):
        parts.append(f"## {title}\n\n{markdown(rows, delta)}\n")
    parts.append(footer + "\n")
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=10_000)
    parser.add_argument("--resampling-reps", type=int, default=2_000)
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", help="also write the tables to this file")
    parser.add_argument("--csv", help="also write the long table to this CSV file")
    parser.add_argument("--page", help="write the docs page (docs/which-test.md) here")
    parser.add_argument("--from-csv", help="skip the simulation: rows from this CSV (written by "
                                           "--csv)")
    args = parser.parse_args()
    t0 = time.time()
    if args.from_csv:
        import pandas as pd

        rows = pd.read_csv(args.from_csv).to_dict("records")
    else:
        rows = run(args.reps, args.resampling_reps, args.resamples, args.seed)
    text = []
    for delta, title in ((0.0, "Type-I error (null: equal tau), P(p < 0.05)"),
                         (0.05, "Power at delta tau = 0.05"), (0.10, "Power at delta tau = 0.10")):
        text.append(f"### {title}\n\n{markdown(rows, delta)}")
    out = "\n".join(text)
    print(out)
    reps = {r["reps"] for r in rows}
    footer = (f"Generated by `python benchmarks/bench_calibration.py --reps {args.reps} "
              f"--resampling-reps {args.resampling_reps} --resamples {args.resamples} "
              f"--seed {args.seed}` (replications per cell: {min(reps)}-{max(reps)}).")
    print(f"# total {time.time() - t0:.0f} s; {footer}")
    if args.page:
        with open(args.page, "w", encoding="utf-8") as fh:
            fh.write(page(rows, footer))
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(out)
    if args.csv:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
