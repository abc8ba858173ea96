"""Coverage and width gain of prediction-powered intervals on HANNA-like simulations.

The populations are HANNA itself (1,056 stories): a story's human score is the mean of its
three annotators' ratings on Coherence, the judge an LLM rater's criterion-matched score
(ChatGPT Eval-Prompt 4, the best on Coherence, r = 0.56; Llama-13B Eval-Prompt 4, the worst,
r = 0.27). Each replication draws a study with replacement from a population (its mean is the
truth), gives human labels to a uniformly random 5%, 10% or 20% of it and the judge's score to
every item, and computes 95% intervals with storyeval's public functions:

- mean: a study of 1,056 stories, `ppi_mean`;
- paired difference: two systems' stories on 528 prompts drawn from HANNA's 96 (1,056 stories),
  a labelled prompt having both stories labelled, `ppi_mean_difference_many(paired=True)` (the
  mean of the per-prompt differences: GPT-2 - Fusion, as in docs/planning.md, and GPT - HINT);
- independent difference: 528 stories of each system drawn separately from its 96, the same
  share of each labelled, `ppi_mean_difference_many(paired=False)` (GPT-2 - Fusion; each
  system its own lambda, a Welch-Satterthwaite t interval);
- win rate: a study of 4,320 pairs drawn from the 4,320 pairs of two machine systems' stories
  on one prompt (45 system pairs x 96 prompts, the alphabetically first system as A), 1 when A's
  story has the higher mean human score (0.5 for a tie), the judge's verdict likewise,
  `ppi_win_rate`.

The replications of a setting are computed at once by `ppi_mean_many` and
`ppi_mean_difference_many` (every public estimate is a row of them); the first replications of each setting are recomputed with `ppi_mean`,
`ppi_mean_difference` and `ppi_win_rate` and must agree to 1e-12. The labelled items are the
first ones of each study, a uniformly random subset since the items are drawn independently.

Methods: storyeval's default (PPI++ with lambda cross-fitted over 5 folds, fold seed 0, Student
t interval), ppi-python's PPI++ (lambda fitted on all labels, normal interval), the two halves
of the change (cross-fit with z; t without cross-fit), PPI (lambda = 1, t) and the human-only
intervals (t and z). Per setting and method, pooled over the study seeds: coverage (share of
intervals holding the truth) with its Monte Carlo standard error and the range over seeds, mean
width relative to the human-only interval of the same reference distribution (t or z), mean
lambda and mean effective number of human labels n_eff (and the mean width itself).

Rare binary outcomes (``--rare``; issue 47): the human label is 1 for a rare event
(prevalence 5% or 7%) and the judge answers 0/1 (sensitivity 0.7, false-positive rate 0.03) or
gives a probability (a noisy logistic score); 1,056 items with 5% and 10% labelled (53 and 106
labels: about 3-7 labelled events), 2,000 and 4,000 items with 5% (100 and 200 labels: 5-14
events). The population is
synthetic (Bernoulli draws, 200,000 items; its mean is the truth) because HANNA has no rare
binary label. Written to ``benchmarks/bench_ppi_rare.json``.

Run: ``python benchmarks/bench_ppi.py [--reps 2000] [--seeds 0 1 2 3] [--rare]`` (about 5
minutes on 2 cores; ``--rare`` about 1 minute). Writes ``benchmarks/bench_ppi.json``, read by
``docs/gen_planning.py`` for the coverage table of docs/planning.md.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval.data.hanna import load_hanna
from storyeval.exceptions import StoryevalWarning
from storyeval.power.ppi import (
    ppi_mean,
    ppi_mean_difference,
    ppi_mean_difference_many,
    ppi_mean_many,
    ppi_win_rate,
)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "bench_ppi.json"
OUT_RARE = ROOT / "benchmarks" / "bench_ppi_rare.json"
FRACTIONS = (0.05, 0.10, 0.20)
#: (study size, human share) of the rare-binary cells: 53, 106, 100 and 200 labels
RARE_CELLS = ((1056, 0.05), (1056, 0.10), (2000, 0.05), (4000, 0.05))
CHUNK = 500
#: (label, keyword arguments of the public functions, human-only reference label)
METHODS = (
    ("ppi++ cross-fit, t (default)", {}, "human only, t"),
    ("ppi++, z (ppi-python)", {"folds": 1, "interval": "z"}, "human only, z"),
    ("ppi++ cross-fit, z", {"interval": "z"}, "human only, z"),
    ("ppi++, t", {"folds": 1}, "human only, t"),
    ("ppi, t", {"method": "ppi"}, "human only, t"),
    ("human only, t", {"method": "classical"}, "human only, t"),
    ("human only, z", {"method": "classical", "interval": "z"}, "human only, z"),
)


def populations() -> list[dict]:
    """Per setting: name, estimand, study size and the population's per-item arrays."""
    scores = load_hanna().scores
    wide = scores.pivot_table(index=["system", "prompt_id"], columns="measure", values="value")
    out = []
    for judge in ("ChatGPT CH 4", "Llama-13B CH 4"):
        out.append({"setting": f"mean, {judge.split()[0]}", "estimand": "mean", "size": 1056,
                    "human": wide["Coherence"].to_numpy(), "judge": wide[judge].to_numpy()})
    for a, b, kind in (("GPT-2", "Fusion", "paired"), ("GPT", "HINT", "paired"),
                       ("GPT-2", "Fusion", "independent")):
        sa, sb = wide.loc[a], wide.loc[b].reindex(wide.loc[a].index)
        out.append({"setting": f"difference ({kind}) {a} - {b}, ChatGPT",
                    "estimand": "difference", "paired": kind == "paired", "size": 528,
                    "human": sa["Coherence"].to_numpy(), "judge": sa["ChatGPT CH 4"].to_numpy(),
                    "human_b": sb["Coherence"].to_numpy(),
                    "judge_b": sb["ChatGPT CH 4"].to_numpy()})
    systems = sorted(wide.index.get_level_values(0).unique().drop("Human"))
    h_pairs, j_pairs = [], []
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            sa, sb = wide.loc[a], wide.loc[b].reindex(wide.loc[a].index)
            h_pairs.append(np.sign(sa["Coherence"] - sb["Coherence"]) / 2 + 0.5)
            j_pairs.append(np.sign(sa["ChatGPT CH 4"] - sb["ChatGPT CH 4"]) / 2 + 0.5)
    out.append({"setting": "win rate, ChatGPT", "estimand": "win rate", "size": 4320,
                "human": np.concatenate(h_pairs), "judge": np.concatenate(j_pairs)})
    return out


def rare_populations(size: int = 200_000, seed: int = 47) -> list[dict]:
    """Synthetic rare binary outcomes (prevalence 5% and 7%) with a 0/1 judge (sensitivity
    0.7, false-positive rate 0.03) and a probability judge (logistic of 2.5 Y + noise)."""
    rng = np.random.default_rng(seed)
    out = []
    for prevalence in (0.05, 0.07):
        y = (rng.random(size) < prevalence).astype(float)
        binary = np.where(y == 1, rng.random(size) < 0.7, rng.random(size) < 0.03)
        score = 1 / (1 + np.exp(-(-3.0 + 2.5 * y + rng.normal(0, 1, size))))
        for name, judge in (("0/1 judge", binary.astype(float)), ("probability judge", score)):
            out.append({"setting": f"rare binary {prevalence:.0%}, {name}", "estimand": "mean",
                        "size": 1056, "human": y, "judge": judge})
    return out


def _study(pop: dict, idx: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """(human_a, judge_a[, human_b, judge_b]) of the studies drawn as ``idx`` (reps x items),
    the first n items of each (system) labelled."""
    def take(values: np.ndarray, cols: slice, human: bool) -> np.ndarray:
        out = values[idx[:, cols]]
        if human:
            out[:, n:] = np.nan
        return out

    if pop["estimand"] != "difference":
        return take(pop["human"], slice(None), True), take(pop["judge"], slice(None), False)
    size = pop["size"]
    b_cols = slice(None) if pop["paired"] else slice(size, 2 * size)
    return (take(pop["human"], slice(0, size), True), take(pop["judge"], slice(0, size), False),
            take(pop["human_b"], b_cols, True), take(pop["judge_b"], b_cols, False))


def _batch(pop: dict, arrays: tuple[np.ndarray, ...], kwargs: dict) -> pd.DataFrame:
    if pop["estimand"] == "difference":
        return ppi_mean_difference_many(*arrays, paired=pop["paired"], **kwargs)
    return ppi_mean_many(*arrays, **kwargs)


def _spot_check(pop: dict, arrays: tuple[np.ndarray, ...], r: int, kwargs: dict,
                row: pd.Series) -> None:
    """The public single-study function gives the batched row (to 1e-12)."""
    one = [a[r] for a in arrays]
    if pop["estimand"] == "difference":
        res = ppi_mean_difference(*one, paired=pop["paired"], **kwargs)
    else:
        res = (ppi_win_rate if pop["estimand"] == "win rate" else ppi_mean)(*one, **kwargs)
    got = np.array([res.estimate, res.low, res.high])
    want = row[["estimate", "low", "high"]].to_numpy(dtype=float)
    if not np.allclose(got, want, rtol=0, atol=1e-12):
        raise AssertionError(f"{pop['setting']}: batched {want} != public {got}")


def _truth(pop: dict) -> float:
    if pop["estimand"] != "difference":
        return float(pop["human"].mean())
    if pop["paired"]:
        return float(np.mean(pop["human"] - pop["human_b"]))
    return float(pop["human"].mean() - pop["human_b"].mean())


def simulate(pop: dict, frac: float, reps: int, seed: int) -> pd.DataFrame:
    """One row per (replication, method): covered, width, lambda, n_eff."""
    rng = np.random.default_rng(seed)
    truth = _truth(pop)
    size = pop["size"]
    width = size if pop["estimand"] != "difference" or pop["paired"] else 2 * size
    n = max(2, round(frac * size))
    frames = []
    for start in range(0, reps, CHUNK):
        idx = rng.integers(0, pop["human"].size, (min(CHUNK, reps - start), width))
        arrays = _study(pop, idx, n)
        for label, kwargs, _ in METHODS:
            res = _batch(pop, arrays, kwargs)
            if start == 0:
                for r in range(2):
                    _spot_check(pop, arrays, r, kwargs, res.iloc[r])
            frames.append(pd.DataFrame({
                "method": label, "covered": (res.low <= truth) & (truth <= res.high),
                "width": res.high - res.low, "lam": res.lam, "n_eff": res.n_eff, "seed": seed,
                "n": res.n_labelled}))
    return pd.concat(frames, ignore_index=True)


def summarise(sim: pd.DataFrame, setting: str, frac: float) -> list[dict]:
    widths = sim.groupby("method").width.mean()
    rows = []
    for label, _, reference in METHODS:
        g = sim[sim.method == label]
        cov = float(g.covered.mean())
        by_seed = g.groupby("seed").covered.mean()
        rows.append({
            "setting": setting, "human share": frac, "n labelled": int(g.n.iloc[0]),
            "method": label, "reps": len(g), "coverage": cov,
            "mc se": float(np.sqrt(cov * (1 - cov) / len(g))),
            "coverage min seed": float(by_seed.min()), "coverage max seed": float(by_seed.max()),
            "mean width": float(widths[label]),
            "width / human-only": float(widths[label] / widths[reference]),
            "mean lambda": float(g.lam.mean()), "mean n_eff": float(g.n_eff.mean())})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000, help="replications per seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--rare", action="store_true",
                        help="the rare-binary cells only (bench_ppi_rare.json)")
    args = parser.parse_args()
    args.out = args.out or (OUT_RARE if args.rare else OUT)
    if args.rare:  # every rare-binary study warns that it undercovers: that is measured here
        warnings.simplefilter("ignore", StoryevalWarning)
    print(f"seeds {args.seeds}, {args.reps} replications per seed and setting, 95% two-sided "
          "intervals; fold seed 0")
    start = time.perf_counter()
    rows = []
    cells = ([(pop, frac) for pop in populations() for frac in FRACTIONS] if not args.rare
             else [({**pop, "size": size}, frac) for pop in rare_populations()
                   for size, frac in RARE_CELLS])
    for pop, frac in cells:
        sim = pd.concat([simulate(pop, frac, args.reps, seed) for seed in args.seeds])
        rows += [{**row, "study size": pop["size"]} for row in
                 summarise(sim, pop["setting"], frac)]
        print(f"  {pop['setting']}, {pop['size']} x {frac:.0%}: "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    table = pd.DataFrame(rows)
    shown = table.drop(columns=["coverage min seed", "coverage max seed", "mean width"])
    print(shown.round(3).to_markdown(index=False))
    for label, g in table.groupby("method", sort=False):
        low = g.loc[g.coverage.idxmin()]
        print(f"lowest coverage of {label}: {low.coverage:.3f} (mc se {low['mc se']:.4f}; "
              f"{low.setting}, {low['human share']:.0%})")
    seconds = round(time.perf_counter() - start)
    print(f"\n{seconds} s")
    payload = {"benchmark": "benchmarks/bench_ppi.py", "seeds": args.seeds,
               "reps_per_seed": args.reps, "confidence_level": 0.95, "fold_seed": 0,
               "seconds": seconds, "results": rows}
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    tmp.replace(args.out)


if __name__ == "__main__":
    main()
