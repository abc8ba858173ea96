"""Coverage of bootstrap intervals over prompts: how often a 95% interval contains the true tau.

Simulated data shaped like HANNA: a fixed set of 10 systems, each writing one story per prompt;
a story's latent quality is ``prompt effect + system effect + noise``; the human score is the mean
of three 1-5 ratings of it (each rounded and clipped), the metric is correlated with the latent
quality and has a prompt effect of its own. Prompts are the clusters (the resampling unit,
``resample_by="prompts"``), and the statistic is Kendall tau-b at the overall level (all stories).

The true value is tau on a very large sample (``--population`` prompts x 10 systems). For 10, 20,
30 and 96 prompts, ``--reps`` data sets are drawn (seeded), and on each the percentile and the BCa
interval (``storyeval.resample.bootstrap_correlations``, ``--resamples`` resamples, the same
draws for all) are computed, and the *expanded* percentile interval (Hesterberg 2015,
``ci_method="expanded"``): the percentile interval at the higher confidence level
``expanded_level(n)`` (0.983 for 10 prompts). Printed: the share of intervals that contain the
true tau (with its Monte Carlo standard error), the mean width, and how often the interval misses
low / high.

Run: ``python benchmarks/bench_coverage.py [--reps 1000] [--resamples 1000] [--seed 0]``
(about 25 minutes on a busy 2-core machine; `--reps 200` for a quick look). A script, not a
test: the table is in docs/resampling.md.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import scipy.stats as st

N_SYSTEMS = 10
N_RATERS = 3


def _systems(rng: np.random.Generator) -> np.ndarray:
    """The fixed system effects (the same 10 systems in every data set and in the population)."""
    return np.sort(rng.normal(0.0, 0.5, N_SYSTEMS))


def _draw(rng: np.random.Generator, n_prompts: int, systems: np.ndarray):
    """(human, metric) arrays of shape (n_prompts, n_systems)."""
    prompt = rng.normal(0.0, 0.7, (n_prompts, 1))
    quality = prompt + systems[None, :] + rng.normal(0.0, 1.0, (n_prompts, N_SYSTEMS))
    ratings = np.clip(np.rint(3.0 + 0.8 * quality[..., None]
                              + rng.normal(0.0, 0.7, (n_prompts, N_SYSTEMS, N_RATERS))), 1, 5)
    human = ratings.mean(axis=2)
    metric_prompt = rng.normal(0.0, 0.8, (n_prompts, 1))  # e.g. some prompts invite long stories
    metric = 0.6 * quality + metric_prompt + rng.normal(0.0, 1.0, (n_prompts, N_SYSTEMS))
    return human, metric


def _wide(human: np.ndarray, metric: np.ndarray) -> pd.DataFrame:
    n_prompts = human.shape[0]
    index = pd.MultiIndex.from_product([[f"S{s:02d}" for s in range(N_SYSTEMS)],
                                        range(n_prompts)], names=["system", "prompt_id"])
    return pd.DataFrame({"human": human.T.ravel(), "metric": metric.T.ravel()}, index=index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--population", type=int, default=50_000,
                        help="prompts in the sample that defines the true tau")
    parser.add_argument("--clusters", default="10,20,30,96")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from storyeval.exceptions import FewClustersWarning
    from storyeval.resample import bootstrap_correlations
    from storyeval.resample.bootstrap import expanded_level

    rng = np.random.default_rng(args.seed)
    systems = _systems(rng)
    human, metric = _draw(rng, args.population, systems)
    true_tau = st.kendalltau(human.ravel(), metric.ravel()).statistic
    print(f"true Kendall tau-b (overall level, {args.population} prompts x {N_SYSTEMS} systems): "
          f"{true_tau:.4f}")
    print(f"{args.reps} data sets per row, {args.resamples} resamples each, prompts resampled, "
          f"nominal 95%, seed {args.seed}\n")
    header = (f"{'prompts':>7} | {'method':<16} | {'coverage':>8} | {'MC se':>5} | "
              f"{'tau < low':>9} | {'tau > high':>10} | {'mean width':>10} | {'mean tau':>8}")
    print(header)
    print("-" * len(header))
    start = time.perf_counter()
    for n_prompts in (int(c) for c in args.clusters.split(",")):
        methods = {"percentile": "percentile", "bca": "bca",
                   f"expanded ({expanded_level(n_prompts):.3f})": "expanded"}
        hits = {name: [] for name in methods}
        low_miss = dict.fromkeys(methods, 0)
        widths = {name: [] for name in methods}
        values = []
        for rep in range(args.reps):
            wide = _wide(*_draw(rng, n_prompts, systems))
            seed = int(rng.integers(2**32))
            for name, ci_method in methods.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FewClustersWarning)
                    row = bootstrap_correlations(
                        wide, [("metric", "human")], level="overall", method="kendall_b",
                        n_resamples=args.resamples, resample_by="prompts",
                        ci_method=ci_method, confidence_level=0.95, random_state=seed,
                        show_progress=False).iloc[0]
                hits[name].append(row["ci_low"] <= true_tau <= row["ci_high"])
                low_miss[name] += true_tau < row["ci_low"]
                widths[name].append(row["ci_high"] - row["ci_low"])
            values.append(row["value"])
        for name, hit in hits.items():
            cover = float(np.mean(hit))
            se = np.sqrt(cover * (1 - cover) / args.reps)
            miss_low = low_miss[name] / args.reps
            miss_high = 1 - cover - miss_low
            print(f"{n_prompts:>7} | {name:<16} | {cover:>8.3f} | {se:>5.3f} | "
                  f"{miss_low:>9.3f} | {miss_high:>10.3f} | {np.mean(widths[name]):>10.3f} | "
                  f"{np.mean(values):>8.3f}")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
