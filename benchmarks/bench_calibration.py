"""Type-I error of the default comparison path on user data (docs page "Which test?").

Every number comes from storyeval's own functions, the ones `storyeval meta` runs with its
defaults on data without a default test (`--test auto`, sign convention ``raw``, family
``criterion``, 2,000 test permutations, 1,000 bootstrap resamples): the correlations from
`storyeval.correlation.kernel.pairwise_correlations` (system means by
`storyeval.correlation.levels.level_data`, with the tie rule), the tests and intervals from
`storyeval.compare.procedures.compare_rows` (``ustat`` at the overall level for Kendall tau-b,
``permutation-midp`` at the system level, with their default intervals), Williams' t for
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

Coverage mode (``--coverage``, docs page "Which test?", section "Coverage of the default
intervals"): the share of 95% default intervals (``ci_low``, ``ci_high`` of the same
`default_path`) that cover the difference they estimate, under alternatives where a correlates
with the latent quality more strongly than b (`COVERAGE_DGPS`: ``c_a = 1, c_b = 0.6``, a weak
signal ``0.3, 0.15``, heavy-tailed noise, one rating as the human score; at the system level
also equal signals with a system-level offset of b unrelated to quality). The same data sets,
simulated by `simulate_full` (the draws of `simulate`), serve every method. Estimands:

* overall level: the population difference ``r(h, a) - r(h, b)``, the mean of the sample
  differences of 8 samples of 250,000 stories (`population_delta`, with its Monte Carlo s.e.);
* system level, per replication (its system effects drawn anew): ``infinite``, the difference
  of the coefficients of the systems' expected scores over infinitely many prompts (E[h | q_s]
  exactly, `expected_human`; E[m | q_s] = c q_s plus the offset); ``at_prompts``,
  E[delta | these systems] at 50 prompts, by ``--inner`` new draws of the prompts for the same
  systems (what the docs say the default interval estimates: systems fixed, prompts random);
  and ``mean_at_prompts``, the expected delta over systems and prompts (the mean of the
  replications' ``at_prompts``).

Run: ``nice -n 10 python benchmarks/bench_calibration.py --coverage --reps 1000 --inner 200
[--page docs/which-test.md]`` (the table goes between the page's coverage markers). Each
coverage is printed with its Monte Carlo standard error, with the mean width of the intervals.
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
from storyeval.compare.procedures import TEST_PERMUTATIONS, compare_rows, effect_sizes
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


RATER_SD = 0.8


def _raters(kind: str) -> int:
    return 3 if kind == "likert-3" else 1


def _human(q: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    raters = _raters(kind)
    r = np.clip(np.rint(3 + q[..., None] + rng.normal(0, RATER_SD, q.shape + (raters,))), 1, 5)
    return r.mean(-1)


def simulate(dgp: dict, reps: int, systems: int, prompts: int, measures: int, rng,
             system_effects: bool) -> tuple[np.ndarray, np.ndarray]:
    """Human scores (reps, S, P) and measures (reps, S, P, K) of ``reps`` replications."""
    h, m, _ = simulate_full(dgp, reps, systems, prompts, measures, rng, system_effects)
    return h, m


def simulate_full(dgp: dict, reps: int, systems: int, prompts: int, measures: int, rng,
                  system_effects: bool, effects: dict[str, np.ndarray] | None = None,
                  ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray] | None]:
    """`simulate`, also returning the system effects it drew (``quality`` (reps, S, 1), and
    ``bias`` (reps, S, 1, K) where the DGP has a ``system_bias``), or using ``effects`` instead
    of drawing them (the coverage mode's inner Monte Carlo: new prompts for given systems).

    A DGP's ``signal`` is one c for every measure, or one per measure (the coverage mode's
    alternatives); the draws, in the same order, are those of the calibration tables."""
    shape = (reps, systems, prompts)
    q = rng.normal(size=shape)
    if system_effects and effects is None:
        effects = {"quality": rng.normal(0, SYS_SD, (reps, systems, 1))}
        if "system_bias" in dgp:  # a system-level offset of each measure, unrelated to quality
            effects["bias"] = (rng.normal(size=(reps, systems, 1, measures))
                               * np.asarray(dgp["system_bias"], dtype=float))
    if effects is not None:
        q = q + effects["quality"]
    u = rng.normal(size=shape)
    h = _human(q, dgp["human"], rng)
    signal = np.asarray(dgp["signal"], dtype=float)
    if signal.ndim == 0:
        base = dgp["signal"] * q + dgp["shared"] * u
        m = base[..., None] + _noise(shape + (measures,), dgp["noise"], rng)
    else:
        m = (signal * q[..., None] + dgp["shared"] * u[..., None]
             + _noise(shape + (measures,), dgp["noise"], rng))
    if effects is not None and "bias" in effects:
        m = m + effects["bias"]
    return h, m, effects


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


def default_path(wide, comp, level: str, method: str, seed: int,
                 test: str | None = None) -> dict[str, np.ndarray]:
    """p-values and intervals of the default test of ``level`` (what `storyeval meta` runs on
    user data): `compare_rows`, or Williams' t with its interval for Pearson; ``test`` another
    test of `compare_rows` (`--system-test` of the coverage mode)."""
    from storyeval.compare.procedures import calibrated_test

    test = test or calibrated_test(level, method)
    shared = {"level": level, "method": method, "sign_convention": "raw",
              "random_state": seed}
    if test == "bootstrap-both":  # `--test bootstrap --resample-by both`
        test, shared["resample_by"] = "bootstrap", "both"
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


def population(dgp_name: str, seed: int = 1, table: dict | None = None) -> dict[str, float]:
    """Pearson rho(h, a), rho(h, b) and rho(a, b) of a DGP (of ``table``, default `DGPS`), on
    200,000 stories."""
    dgp = (DGPS if table is None else table)[dgp_name]
    h, m = simulate(dgp, 1, 1, 200_000, 2, np.random.default_rng(seed), False)
    h, a, b = h.ravel(), m[..., 0].ravel(), m[..., 1].ravel()
    return {"rho_ha": float(np.corrcoef(h, a)[0, 1]), "rho_hb": float(np.corrcoef(h, b)[0, 1]),
            "rho_ab": float(np.corrcoef(a, b)[0, 1])}


# ------------------------------------------------------------------------------------------------
# coverage of the default intervals under alternatives (--coverage)

# a correlates with the latent quality more strongly than b (c_a > c_b), so that
# r(h, a) > r(h, b); `alt-system-bias` instead gives b a system-level offset unrelated to quality
# (sd 0.3, the sd of the system effects), the one DGP here whose system-level difference does not
# vanish with infinitely many prompts (system level only: the overall data have no systems)
COVERAGE_DGPS = {
    "alt-base": {"signal": (1.0, 0.6), "shared": 0.5, "noise": "normal", "human": "likert-3"},
    "alt-weak": {"signal": (0.3, 0.15), "shared": 0.5, "noise": "normal", "human": "likert-3"},
    "alt-heavy-tails": {"signal": (1.0, 0.6), "shared": 0.5, "noise": "t3",
                        "human": "likert-3"},
    "alt-likert-1": {"signal": (1.0, 0.6), "shared": 0.5, "noise": "normal",
                     "human": "likert-1"},
    "alt-system-bias": {"signal": (1.0, 1.0), "shared": 0.5, "noise": "normal",
                        "human": "likert-3", "system_bias": (0.0, 0.3)},
}
SYSTEM_ONLY = ("alt-system-bias",)
POPULATION_SAMPLES, POPULATION_STORIES = 8, 250_000
INNER = 200  # inner Monte Carlo draws of new prompts per replication (system-level target)


def expected_human(quality: np.ndarray) -> np.ndarray:
    """E[h | q_s], exactly: the expected mean of three ratings is that of one rating
    ``clip(round(3 + x), 1, 5)`` with ``x = q_s + N(0, 1) + N(0, 0.8^2)``, i.e.
    ``1 + sum_t P(3 + x > t)`` over the thresholds t = 1.5, 2.5, 3.5, 4.5 (both human kinds)."""
    from scipy.special import ndtr

    sd = math.sqrt(1.0 + RATER_SD**2)
    return 1.0 + sum(ndtr((quality + 3.0 - t) / sd) for t in (1.5, 2.5, 3.5, 4.5))


def expected_measures(dgp: dict, effects: dict[str, np.ndarray], measures: int = 2,
                      ) -> np.ndarray:
    """E[m_k | system effects], (reps, S, K): ``c_k q_s`` (plus the system bias): the story
    quality deviation, the shared component and the noise have mean 0."""
    signal = np.broadcast_to(np.asarray(dgp["signal"], dtype=float), (measures,))
    m = signal * effects["quality"]
    if "bias" in effects:
        m = m + effects["bias"][:, :, 0, :]
    return m


def _deltas(X: np.ndarray, method: str) -> np.ndarray:
    """``r(h, a) - r(h, b)`` of each problem of ``X`` (problems, observations, [h, a, b])."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        R = pairwise_correlations(X, method=method, warn=False).statistic
    return R[:, 0, 1] - R[:, 0, 2]


_POPULATION: dict[tuple[str, str], tuple[float, float]] = {}


def population_delta(dgp_name: str, method: str, seed: int = 1) -> tuple[float, float]:
    """The overall-level estimand ``r(h, a) - r(h, b)`` of a coverage DGP's population of
    stories: the mean over 8 independent samples of 250,000 stories (drawn as `population`
    draws them) of the sample difference, and its Monte Carlo standard error."""
    key = (dgp_name, method)
    if key not in _POPULATION:
        B, N = POPULATION_SAMPLES, POPULATION_STORIES
        h, m = simulate(COVERAGE_DGPS[dgp_name], B, 1, N, 2, np.random.default_rng(seed), False)
        d = _deltas(np.concatenate([h.reshape(B, N, 1), m.reshape(B, N, 2)], axis=2), method)
        _POPULATION[key] = (float(d.mean()), float(d.std(ddof=1) / math.sqrt(B)))
    return _POPULATION[key]


def system_targets(dgp: dict, effects: dict[str, np.ndarray], prompts: int,
                   methods: tuple[str, ...], inner: int, rng: np.random.Generator,
                   budget: int = 2_000_000) -> dict[str, dict[str, np.ndarray]]:
    """Each replication's system-level estimands, given its system effects:

    ``infinite``: the difference of the coefficients of the systems' expected scores over
    infinitely many prompts (`expected_human`, `expected_measures`);
    ``at_prompts``: E[delta | these systems] at ``prompts`` prompts per system (and
    ``sd_at_prompts``, the standard deviation of delta given the systems), by ``inner`` new
    draws of the prompts for the same systems (the data sets the permutation interval's
    resampling describes: systems fixed, prompts random), delta computed as `level_data` and
    the kernel compute it (system means; the human ones as integer sums of ratings, so that tied
    systems tie exactly, as the tie rule makes them)."""
    reps, S = effects["quality"].shape[:2]
    X = np.concatenate([expected_human(effects["quality"]), expected_measures(dgp, effects)],
                       axis=2)
    out = {method: {"infinite": _deltas(X, method), "at_prompts": np.empty(reps),
                    "sd_at_prompts": np.empty(reps)} for method in methods}
    raters = _raters(dgp["human"])
    step = max(1, budget // (inner * S * prompts))
    for start in range(0, reps, step):
        part = slice(start, min(reps, start + step))
        given = {k: np.repeat(v[part], inner, axis=0) for k, v in effects.items()}
        h, m, _ = simulate_full(dgp, len(given["quality"]), S, prompts, 2, rng, True, given)
        Xin = np.concatenate([np.rint(h * raters).sum(-1)[..., None], m.mean(2)], axis=2)
        for method in methods:
            d = _deltas(Xin, method).reshape(-1, inner)
            out[method]["at_prompts"][part] = np.nanmean(d, axis=1)
            out[method]["sd_at_prompts"][part] = np.nanstd(d, axis=1, ddof=1)
    return out


def run_coverage_cell(dgp_name: str, level: str, size: int, reps: int,
                      methods: tuple[str, ...], seed: int, inner: int = INNER,
                      chunk: int | None = None, system_test: str | None = None) -> list[dict]:
    """Coverage of the default interval (`default_path`) of each method on one DGP and size;
    the methods see the same data sets."""
    dgp = COVERAGE_DGPS[dgp_name]
    rng = np.random.default_rng([seed, hash_name(dgp_name), size, 2, 1])
    inner_rng = np.random.default_rng([seed, hash_name(dgp_name), size, 2, 2])
    system = level == "system"
    S, P = (size, PROMPTS) if system else (OVERALL_SYSTEMS, size // OVERALL_SYSTEMS)
    chunk = chunk or reps
    parts: dict[str, list[pd.DataFrame]] = {method: [] for method in methods}
    for start in range(0, reps, chunk):
        n = min(chunk, reps - start)
        h, m, effects = simulate_full(dgp, n, S, P, 2, rng, system)
        wide, crit, meas = wide_table(h, m, start)
        targets = (system_targets(dgp, effects, P, methods, inner, inner_rng)
                   if effects is not None else {})
        for method in methods:
            comp = comparisons(wide, crit, meas, level, method)
            res = default_path(wide, comp, level, method, seed + start,
                               system_test if system else None)
            frame = pd.DataFrame({"delta": comp["r_a"] - comp["r_b"], "ci_low": res["ci_low"],
                                  "ci_high": res["ci_high"], **targets.get(method, {})})
            parts[method].append(frame)
    rows = []
    for method in methods:
        frame = pd.concat(parts[method], ignore_index=True)
        lo, hi = frame["ci_low"].to_numpy(), frame["ci_high"].to_numpy()
        if system:
            estimands = {"infinite": frame["infinite"].to_numpy(),
                         "at_prompts": frame["at_prompts"].to_numpy(),
                         # the population-of-systems expected delta at P prompts: the mean of
                         # the conditional ones over the replications' systems
                         "mean_at_prompts": np.full(len(frame), frame["at_prompts"].mean())}
            target_se = float(frame["at_prompts"].std(ddof=1) / math.sqrt(len(frame)))
            # the width a normal interval with the true conditional s.e. would have
            normal_width = float(2 * 1.959964 * frame["sd_at_prompts"].mean())
        else:
            value, target_se = population_delta(dgp_name, method)
            estimands = {"population": np.full(len(frame), value)}
            normal_width = math.nan
        row = {"dgp": dgp_name, "level": level, "size": size, "method": method,
               "test": (system_test if system and system_test else _test(level, method)),
               "reps": len(frame),
               "width": float(np.mean(hi - lo)), "delta": float(frame["delta"].mean()),
               "target_se": target_se, "normal_width": normal_width,
               "undefined": int(np.sum(~np.isfinite(lo + hi)))}
        for name, target in estimands.items():
            # an undefined interval (NaN) counts as not covering
            row[f"cover_{name}"] = float(np.mean((lo <= target) & (target <= hi)))
            row[f"target_{name}"] = float(np.mean(target))
        rows.append(row)
    return rows


def run_coverage(reps: int, seed: int, methods: tuple[str, ...], inner: int = INNER,
                 dgps: tuple[str, ...] | None = None,
                 overall_sizes: tuple[int, ...] = OVERALL_SIZES,
                 system_sizes: tuple[int, ...] = SYSTEM_SIZES,
                 system_test: str | None = None) -> list[dict]:
    rows = []
    for dgp in dgps or tuple(COVERAGE_DGPS):
        for level, sizes in (("overall", overall_sizes), ("system", system_sizes)):
            if level == "overall" and dgp in SYSTEM_ONLY:
                continue
            for size in sizes:
                t0 = time.time()
                chunk = max(50, int(4e6 // (size * (PROMPTS if level == "system" else 1)
                                            * 64)))
                cell = run_coverage_cell(dgp, level, size, reps, methods, seed, inner, chunk,
                                         system_test)
                seconds = time.time() - t0
                for row in cell:
                    row["seconds"] = seconds / len(cell)
                    rows.append(row)
                    key = "cover_population" if level == "overall" else "cover_at_prompts"
                    print(f"# coverage {row['method']} {dgp} {level} {size}: {row[key]:.3f} "
                          f"+- {mc_se(row[key], row['reps']):.3f}, width {row['width']:.3f}",
                          flush=True)
                print(f"#   ({seconds:.1f} s)", flush=True)
    return rows


SYSTEM_ESTIMANDS = (
    ("infinite", "expected scores, infinitely many prompts"),
    ("at_prompts", "E[delta \\| these systems], 50 prompts"),
    ("mean_at_prompts", "E[delta], 50 prompts, systems drawn"),
)


def markdown_coverage(rows: list[dict]) -> str:
    frame = pd.DataFrame(rows)
    lines = []
    for method, part in frame.groupby("method", sort=False):
        overall = part[part["level"] == "overall"]
        if len(overall):
            cols = sorted({int(s) for s in overall["size"]})
            lines += [(f"**{method}, overall level** (`{_test('overall', method)}` interval), "
                       "coverage of the population difference +- Monte Carlo standard error "
                       "(mean width):"), "",
                      "| data | rho(h,a) | rho(h,b) | target | "
                      + " | ".join(f"{s} stories" for s in cols) + " |",
                      "| --- | ---: | ---: | ---: |" + " ---: |" * len(cols)]
            for dgp, cells in overall.groupby("dgp", sort=False):
                pop = population(dgp, table=COVERAGE_DGPS)
                by = {int(r["size"]): r for r in cells.to_dict("records")}
                first = next(iter(by.values()))
                vals = [_cover(by[s], "population") if s in by else "" for s in cols]
                lines.append(f"| {dgp} | {pop['rho_ha']:.2f} | {pop['rho_hb']:.2f} | "
                             f"{first['target_population']:.4f} +- {first['target_se']:.4f} | "
                             + " | ".join(vals) + " |")
            lines.append("")
        system = part[part["level"] == "system"]
        if len(system):
            cols = sorted({int(s) for s in system["size"]})
            test = str(system["test"].iloc[0]) if "test" in system else _test("system", method)
            lines += [(f"**{method}, system level** (`{test}` interval), "
                       "coverage +- Monte Carlo standard error [mean target]:"), "",
                      "| data | estimand | "
                      + " | ".join(f"{s} systems" for s in cols) + " |",
                      "| --- | --- |" + " ---: |" * len(cols)]
            for dgp, cells in system.groupby("dgp", sort=False):
                by = {int(r["size"]): r for r in cells.to_dict("records")}
                for key, label in SYSTEM_ESTIMANDS:
                    vals = [_cover(by[s], key, width=False) + f" [{by[s][f'target_{key}']:.3f}]"
                            if s in by else "" for s in cols]
                    lines.append(f"| {dgp} | {label} | " + " | ".join(vals) + " |")
                vals = [f"{by[s]['width']:.3f} ({by[s]['normal_width']:.3f})" if s in by
                        else "" for s in cols]
                lines.append(f"| {dgp} | mean width (3.92 sd of delta \\| these systems) | "
                             + " | ".join(vals) + " |")
            lines.append("")
    reps = sorted({int(r) for r in frame["reps"]})
    undefined = int(frame["undefined"].sum())
    lines.append(f"Replications per cell: {', '.join(map(str, reps))}; undefined intervals (counted "
                 f"as not covering): {undefined}.")
    return "\n".join(lines) + "\n"


def _cover(row: dict, key: str, width: bool = True) -> str:
    rate = row[f"cover_{key}"]
    text = f"{rate:.3f} +- {mc_se(rate, row['reps']):.3f}"
    return text + (f" ({row['width']:.3f})" if width else "")


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


STABILITY_DGPS = ("base", "weak", "heavy-tails", "likert-1")


def _renamed(wide: pd.DataFrame, crit: list[str], meas: list[list[str]]
             ) -> tuple[pd.DataFrame, list[str], list[list[str]], dict[str, np.ndarray]]:
    """The same table with realistic names (criterion ``Overall-r``, measures ``METEOR-r`` and
    ``my-metric-r``), its columns in another order, and the comparison rows' correlations
    unchanged."""
    names = {c: f"Overall-{r}" for r, c in enumerate(crit)}
    for r, (a, b) in enumerate(meas):
        names[a], names[b] = f"METEOR-{r}", f"my-metric-{r}"
    other = wide.rename(columns=names)
    other = other[list(reversed(other.columns))]
    return other, [names[c] for c in crit], [[names[a], names[b]] for a, b in meas], names


def run_seed_stability(reps: int, seed: int, methods: tuple[str, ...],
                       sizes: tuple[int, ...] | None = None) -> list[dict]:
    """The default system-level test on null data sets under two seeds (``seed``, ``seed +
    1``) and under other names and column order: its level under each seed, the share of
    data sets whose decision at 0.05 differs between the seeds, and the largest change of a
    p-value and of an interval end when the measures are renamed and the columns reordered
    (a p-value is a function of the data: 0 expected)."""
    rows = []
    for method in methods:
        for dgp in STABILITY_DGPS:
            for size in sizes or SYSTEM_SIZES:
                t0 = time.time()
                rng = np.random.default_rng([seed, hash_name(dgp), size, 3])
                h, m = simulate(DGPS[dgp], reps, size, PROMPTS, 2, rng, True)
                wide, crit, meas = wide_table(h, m)
                comp = comparisons(wide, crit, meas, "system", method)
                runs = [default_path(wide, comp, "system", method, s) for s in (seed, seed + 1)]
                other, crit2, meas2, _ = _renamed(wide, crit, meas)
                comp2 = dict(comp, criterion=np.array(crit2, dtype=object),
                             measure_a=np.array([m[0] for m in meas2], dtype=object),
                             measure_b=np.array([m[1] for m in meas2], dtype=object))
                renamed = default_path(other, comp2, "system", method, seed)
                rejects = [r["p"] < ALPHA for r in runs]
                rows.append({
                    "dgp": dgp, "size": size, "method": method, "reps": reps,
                    "level_seed0": float(rejects[0].mean()),
                    "level_seed1": float(rejects[1].mean()),
                    "flips": float(np.mean(rejects[0] != rejects[1])),
                    "rename_p": float(np.nanmax(np.abs(renamed["p"] - runs[0]["p"]))),
                    "rename_ci": float(np.nanmax(np.abs(np.r_[
                        renamed["ci_low"] - runs[0]["ci_low"],
                        renamed["ci_high"] - runs[0]["ci_high"]]))),
                    "seconds": time.time() - t0})
                r = rows[-1]
                print(f"# {method} {dgp} system {size}: level {r['level_seed0']:.3f} / "
                      f"{r['level_seed1']:.3f}, flips {r['flips']:.4f}, renamed max |dp| "
                      f"{r['rename_p']:.2g} ({r['seconds']:.1f} s)", flush=True)
    return rows


def markdown_stability(rows: list[dict]) -> str:
    frame = pd.DataFrame(rows)
    lines = []
    for method, part in frame.groupby("method", sort=False):
        sizes = sorted({int(s) for s in part["size"]})
        lines += [(f"**{method}, system level** (`{_test('system', method)}`, "
                   f"{TEST_PERMUTATIONS:,} permutations): P(p < 0.05) with seed 0 / seed 1 "
                   "+- Monte Carlo standard error; share of data sets whose decision at 0.05 "
                   "differs between the two seeds:"), "",
                  "| data | " + " | ".join(f"level {s}" for s in sizes) + " | "
                  + " | ".join(f"seed changes decision {s}" for s in sizes) + " |",
                  "| --- |" + " ---: |" * (2 * len(sizes))]
        for dgp, cells in part.groupby("dgp", sort=False):
            by = {int(r["size"]): r for r in cells.to_dict("records")}
            lv = [f"{by[s]['level_seed0']:.3f} / {by[s]['level_seed1']:.3f} +- "
                  f"{mc_se(by[s]['level_seed0'], by[s]['reps']):.3f}" for s in sizes]
            fl = [f"{by[s]['flips']:.4f}" for s in sizes]
            lines.append(f"| {dgp} | " + " | ".join(lv + fl) + " |")
        lines.append("")
    reps = sorted({int(r) for r in frame["reps"]})
    lines.append(f"Replications per cell: {', '.join(map(str, reps))}. Renaming the criterion "
                 "and measures (`Overall-r`, `METEOR-r`, `my-metric-r`) and reversing the "
                 "column order changed a p-value by at most "
                 f"{frame['rename_p'].max():.2g} and an interval end by at most "
                 f"{frame['rename_ci'].max():.2g}.")
    return "\n".join(lines) + "\n"


def _test(level: str, method: str) -> str:
    from storyeval.compare.procedures import calibrated_test

    return calibrated_test(level, method)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", default="kendall_b,pearson")
    parser.add_argument("--no-fwer", action="store_true",
                        help="skip the family-wise error of 6 measures")
    parser.add_argument("--coverage", action="store_true",
                        help="measure the coverage of the default intervals under alternatives "
                             "instead of the level of the tests")
    parser.add_argument("--inner", type=int, default=INNER,
                        help="--coverage: new prompt draws per replication for the system-level "
                             "target E[delta | systems]")
    parser.add_argument("--dgps", help="--coverage: these DGPs only (comma-separated)")
    parser.add_argument("--overall-sizes", help="--coverage: numbers of stories (comma-separated)")
    parser.add_argument("--system-sizes", help="--coverage: numbers of systems (comma-separated)")
    parser.add_argument("--overall-only", action="store_true",
                        help="--coverage: the overall level only")
    parser.add_argument("--system-only", action="store_true",
                        help="--coverage: the system level only")
    parser.add_argument("--system-test", choices=["bootstrap", "bootstrap-both"],
                        help="--coverage: the interval of this test at the system level instead "
                             "of the default one (bootstrap: percentile, 1,000 resamples of "
                             "prompts; bootstrap-both: of prompts and systems, --resample-by "
                             "both)")
    parser.add_argument("--seed-stability", action="store_true",
                        help="measure the default system-level test under two seeds and other "
                             "names instead (level, decisions changed by the seed, renaming)")
    parser.add_argument("--coverage-markers",
                        help="--coverage/--seed-stability --page: the name in the page's "
                             "markers (<!-- NAME:start -->; default: coverage, seed-stability)")
    parser.add_argument("--csv", help="also write the long table to this CSV file")
    parser.add_argument("--from-csv", help="skip the simulation: rows from this CSV")
    parser.add_argument("--markdown", help="write the table to this file")
    parser.add_argument("--page", help="put the table into this docs page (docs/which-test.md) "
                                       "between its calibration (--coverage: coverage) markers")
    args = parser.parse_args(argv)
    t0 = time.time()
    methods = tuple(args.methods.split(","))
    if args.from_csv:
        rows = pd.read_csv(args.from_csv).to_dict("records")
    elif args.seed_stability:
        rows = run_seed_stability(args.reps, args.seed, methods, tuple(
            int(v) for v in args.system_sizes.split(",")) if args.system_sizes else None)
    elif args.coverage:
        sizes = {k: tuple(int(v) for v in getattr(args, k).split(","))
                 for k in ("overall_sizes", "system_sizes") if getattr(args, k)}
        if args.overall_only:
            sizes["system_sizes"] = ()
        if args.system_only:
            sizes["overall_sizes"] = ()
        rows = run_coverage(args.reps, args.seed, methods, args.inner,
                            tuple(args.dgps.split(",")) if args.dgps else None,
                            system_test=args.system_test, **sizes)
    else:
        rows = run(args.reps, args.seed, methods, not args.no_fwer)
    text = (markdown_coverage(rows) if args.coverage else markdown_stability(rows)
            if args.seed_stability else markdown(rows))
    seconds = (sum(float(r.get("seconds", 0)) for r in rows) if args.from_csv
               else time.time() - t0)
    took = (f"cells of {seconds:.0f} s in all" if args.from_csv else f"in {seconds:.0f} s")
    command = (f"--coverage --reps {args.reps} --inner {args.inner}" if args.coverage
               else f"--seed-stability --reps {args.reps}" if args.seed_stability
               else f"--reps {args.reps}")
    if args.seed_stability and args.system_sizes:
        command += f" --system-sizes {args.system_sizes}"
    for flag in ("dgps", "system_sizes", "overall_sizes", "system_test"):
        if args.coverage and getattr(args, flag):
            command += f" --{flag.replace('_', '-')} {getattr(args, flag)}"
    for flag in ("overall_only", "system_only"):
        if args.coverage and getattr(args, flag):
            command += f" --{flag.replace('_', '-')}"
    footer = (f"Generated by `nice -n 10 python benchmarks/bench_calibration.py {command} "
              f"--seed {args.seed} --methods {args.methods}` ({took}, on a "
              "shared, busy 2-core machine; the time grows in proportion to --reps).")
    print(text + "\n" + footer)
    if args.csv:
        pd.DataFrame(rows).to_csv(args.csv, index=False)
    if args.markdown:
        atomic_write_text(args.markdown, text + "\n" + footer + "\n")
    if args.page:
        name = args.coverage_markers or ("seed-stability" if args.seed_stability
                                         else "coverage")
        markers = ((f"<!-- {name}:start -->", f"<!-- {name}:end -->")
                   if args.coverage or args.seed_stability else (START, END))
        write_page(args.page, text + "\n" + footer + "\n", markers)
    return 0


START, END = "<!-- calibration:start -->", "<!-- calibration:end -->"


def write_page(path: str, table: str, markers: tuple[str, str] = (START, END)) -> None:
    """Replace what lies between the markers (default: calibration) of a docs page with
    ``table``."""
    start, end = markers
    with open(path, encoding="utf-8") as fh:
        page = fh.read()
    head, rest = page.split(start, 1)
    _, tail = rest.split(end, 1)
    atomic_write_text(path, f"{head}{start}\n{table}{end}{tail}")


if __name__ == "__main__":
    raise SystemExit(main())
