"""Calibration of the WMT meta-metrics' defaults: coverage of the tie-calibrated accuracy's
bootstrap interval, the level of the soft-pairwise-accuracy p-values, and how often significance
clusters split measures that are equally good.

Simulated data shaped like HANNA (as ``bench_coverage.py``): 10 fixed systems, one story per
system and prompt, latent quality = prompt effect + system effect + noise, the human score the
mean of three 1-5 ratings. Three metrics (data-generating processes):

* ``continuous``: 0.6 * quality + its own prompt effect + normal noise (never ties);
* ``likert``: the same rounded to a 1-5 scale (many ties, as an LLM rating);
* ``heavy-tailed``: 0.6 * quality + t(3) noise.

1. **acc_eq interval** (`storyeval.compare.tie_calibration.tie_calibrated_ci`, percentile,
   prompts resampled, epsilon re-optimised per resample), prompt and system levels: the share of
   95% intervals that contain the true value. Prompt level: the calibrated statistic of
   ``--population`` prompts. System level: the 10 systems are fixed and the statistic of their
   means depends on how many prompts are averaged, so the target is its expected value at the
   data set's number of prompts (the mean over ``--population / 2`` simulated data sets).
2. **SPA p-values** (`storyeval.compare.soft_accuracy.system_pvalues`): two systems of equal
   quality; the share of p-values <= 0.05 (one-sided; nominal 0.05).
3. **SPA interval** (`storyeval.compare.soft_accuracy.soft_pairwise_accuracy_ci`, percentile,
   prompts resampled, p-values recomputed in every resample with 200 permutations): the
   share of 95% intervals that contain SPA's expected value at the data set's number of
   prompts (SPA's p-values, and so SPA, depend on it).
4. **Clusters** (`storyeval.compare.clusters.significance_clusters`, overall level, tau-b, the
   calibrated ``ustat`` test, two-sided, alpha 0.05): four measures that are independent
   copies of the same metric (equally good); the share of data sets in which they are split
   into more than one cluster. WMT's rule does not adjust for the several comparisons, so this
   is a family-wise rate above 0.05 by design.

Run: ``python benchmarks/bench_wmt.py [--reps 200] [--resamples 300] [--seed 0] [--only
PART]`` (about 15 minutes on a shared, busy 2-core machine; the page's tables came from the
default run without the SPA interval, 433 s, and ``--only spa-ci --resamples 200``, 199 s). A
script, not a test: the tables are in docs/wmt.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

N_SYSTEMS = 10
N_RATERS = 3
METRICS = ("continuous", "likert", "heavy-tailed")


def _systems(rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.normal(0.0, 0.5, N_SYSTEMS))


def _draw(rng: np.random.Generator, n_prompts: int, systems: np.ndarray, kind: str):
    """(human, metric), shape (n_prompts, n_systems)."""
    prompt = rng.normal(0.0, 0.7, (n_prompts, 1))
    quality = prompt + systems[None, :] + rng.normal(0.0, 1.0, (n_prompts, N_SYSTEMS))
    ratings = np.clip(np.rint(3.0 + 0.8 * quality[..., None]
                              + rng.normal(0.0, 0.7, (n_prompts, N_SYSTEMS, N_RATERS))), 1, 5)
    human = ratings.mean(axis=2)
    metric_prompt = rng.normal(0.0, 0.8, (n_prompts, 1))
    if kind == "heavy-tailed":
        noise = rng.standard_t(3, (n_prompts, N_SYSTEMS))
    else:
        noise = rng.normal(0.0, 1.0, (n_prompts, N_SYSTEMS))
    metric = 0.6 * quality + metric_prompt + noise
    if kind == "likert":
        metric = np.clip(np.rint(3.0 + metric), 1, 5)
    return human, metric


def _wide(human: np.ndarray, metric: np.ndarray) -> pd.DataFrame:
    n_prompts = human.shape[0]
    idx = pd.MultiIndex.from_product([[f"s{k:02d}" for k in range(N_SYSTEMS)],
                                      range(n_prompts)], names=["system", "prompt_id"])
    return pd.DataFrame({"h": human.T.ravel(), "m": metric.T.ravel()}, index=idx)


def _truth(rng, systems, kind: str, population: int, n_prompts: int) -> dict[str, float]:
    """Prompt level: the calibrated statistic of ``population`` prompts. System level: the
    expected calibrated statistic of the system means of ``n_prompts`` prompts (its value
    depends on the number of prompts averaged), estimated from ``population`` draws."""
    from storyeval.compare.tie_calibration import tie_calibrated

    human, metric = _draw(rng, population, systems, kind)
    prompts = np.repeat(np.arange(population), N_SYSTEMS)
    prompt_level = tie_calibrated(human.ravel(), metric.ravel(), prompts).value
    draws = [tie_calibrated(*(x.mean(0) for x in _draw(rng, n_prompts, systems, kind))).value
             for _ in range(population // 2)]
    return {"prompt": prompt_level, "system": float(np.mean(draws))}


def coverage(reps: int, resamples: int, seed: int, population: int) -> pd.DataFrame:
    from storyeval.compare.tie_calibration import tie_calibrated_ci

    rows = []
    for kind in METRICS:
        rng = np.random.default_rng([seed, METRICS.index(kind)])
        systems = _systems(rng)
        for n_prompts in (30, 96):
            truth = _truth(rng, systems, kind, population, n_prompts)
            hits = {lev: [] for lev in truth}
            widths = {lev: [] for lev in truth}
            for rep in range(reps):
                wide = _wide(*_draw(rng, n_prompts, systems, kind))
                for level in truth:
                    low, high = tie_calibrated_ci(wide, "m", "h", level=level,
                                                  n_resamples=resamples, random_state=rep)
                    hits[level].append(low <= truth[level] <= high)
                    widths[level].append(high - low)
            for level in truth:
                cover = float(np.mean(hits[level]))
                rows.append({"metric": kind, "level": level, "prompts": n_prompts,
                             "true acc_eq": truth[level], "coverage": cover,
                             "MC s.e.": np.sqrt(cover * (1 - cover) / reps),
                             "mean width": float(np.mean(widths[level]))})
    return pd.DataFrame(rows)


def spa_level(reps: int, seed: int) -> pd.DataFrame:
    from storyeval.compare.soft_accuracy import system_pvalues

    rows = []
    for n_prompts in (10, 30, 96):
        rng = np.random.default_rng([seed, 100 + n_prompts])
        p = []
        for rep in range(reps):
            scores = rng.normal(0.0, 1.0, (2, n_prompts)) + rng.normal(0, 0.5, (1, n_prompts))
            idx = pd.MultiIndex.from_product([["a", "b"], range(n_prompts)],
                                             names=["system", "prompt_id"])
            wide = pd.DataFrame({"x": scores.ravel()}, index=idx)
            pv, _ = system_pvalues(wide, ["x"], n_permutations=999, random_state=rep)
            p.append(pv[0, 0, 1])
        p = np.asarray(p)
        rows.append({"prompts": n_prompts, "P(p <= 0.05)": float(np.mean(p <= 0.05)),
                     "MC s.e.": float(np.sqrt(0.05 * 0.95 / reps)),
                     "P(p <= 0.10)": float(np.mean(p <= 0.10))})
    return pd.DataFrame(rows)


def spa_coverage(reps: int, resamples: int, seed: int, permutations: int = 200) -> pd.DataFrame:
    """Coverage of the SPA interval: the target is SPA's expected value at the data set's
    number of prompts (its p-values depend on it), the mean over ``2 * reps`` data sets."""
    from storyeval.compare.soft_accuracy import (
        soft_pairwise_accuracy_ci,
        soft_pairwise_accuracy_table,
    )

    rows = []
    for kind in ("continuous", "likert"):
        for n_prompts in (30, 96):
            rng = np.random.default_rng([seed, 300 + n_prompts, METRICS.index(kind)])
            systems = _systems(rng)
            truth = float(np.mean([
                soft_pairwise_accuracy_table(_wide(*_draw(rng, n_prompts, systems, kind)),
                                             ["m"], ["h"], n_permutations=permutations,
                                             random_state=k)["value"].item()
                for k in range(2 * reps)]))
            hits, widths = [], []
            for rep in range(reps):
                wide = _wide(*_draw(rng, n_prompts, systems, kind))
                low, high = soft_pairwise_accuracy_ci(wide, "m", "h", n_resamples=resamples,
                                                      n_permutations=permutations,
                                                      random_state=rep)
                hits.append(low <= truth <= high)
                widths.append(high - low)
            cover = float(np.mean(hits))
            rows.append({"metric": kind, "prompts": n_prompts, "expected SPA": truth,
                         "coverage": cover, "MC s.e.": np.sqrt(cover * (1 - cover) / reps),
                         "mean width": float(np.mean(widths))})
    return pd.DataFrame(rows)


def cluster_splits(reps: int, seed: int) -> pd.DataFrame:
    from storyeval.compare.clusters import significance_clusters

    rows = []
    for n_prompts in (30, 96):
        rng = np.random.default_rng([seed, 200 + n_prompts])
        systems = _systems(rng)
        split = []
        for _ in range(reps):
            prompt = rng.normal(0.0, 0.7, (n_prompts, 1))
            quality = prompt + systems[None, :] + rng.normal(0.0, 1.0, (n_prompts, N_SYSTEMS))
            human = quality + rng.normal(0.0, 1.0, quality.shape)
            idx = pd.MultiIndex.from_product([[f"s{k:02d}" for k in range(N_SYSTEMS)],
                                              range(n_prompts)], names=["system", "prompt_id"])
            data = {"h": human.T.ravel()}
            for k in range(4):
                data[f"m{k}"] = (0.6 * quality + rng.normal(0.0, 1.0, quality.shape)).T.ravel()
            wide = pd.DataFrame(data, index=idx)
            table = significance_clusters(wide, ["m0", "m1", "m2", "m3"], ["h"],
                                          levels=["overall"])
            split.append(table["rank"].max() > 1)
        rate = float(np.mean(split))
        rows.append({"prompts": n_prompts, "stories": n_prompts * N_SYSTEMS,
                     "P(equally good measures split)": rate,
                     "MC s.e.": float(np.sqrt(rate * (1 - rate) / reps))})
    return pd.DataFrame(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=300)
    parser.add_argument("--population", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=["acc_eq", "spa", "spa-ci", "clusters"],
                        help="run one part")
    args = parser.parse_args()
    from storyeval.report.tables import format_table

    start = time.perf_counter()

    def wanted(part: str) -> bool:
        return args.only is None or args.only == part

    if wanted("acc_eq"):
        print("acc_eq: 95% percentile bootstrap intervals over prompts "
              f"({args.reps} data sets, {args.resamples} resamples)")
        print(format_table(coverage(args.reps, args.resamples, args.seed, args.population),
                           "md"))
    if wanted("spa"):
        print(f"\nSPA p-values under the null (two equal systems, {args.reps} data sets, "
              "999 permutations)")
        print(format_table(spa_level(args.reps, args.seed), "md"))
    if wanted("spa-ci"):
        print(f"\nSPA: 95% percentile bootstrap intervals over prompts ({args.reps // 2} data "
              f"sets, {args.resamples} resamples, 200 permutations)")
        print(format_table(spa_coverage(args.reps // 2, args.resamples, args.seed), "md"))
    if wanted("clusters"):
        print(f"\nClusters of four equally good measures (overall level, ustat, alpha 0.05, "
              f"{args.reps // 2} data sets)")
        print(format_table(cluster_splits(args.reps // 2, args.seed), "md"))
    print(f"\n{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
