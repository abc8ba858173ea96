"""Type-I error of the judge-comparison tests and coverage of the accuracy intervals of
`storyeval.pairwise.inference` (docs page "Pairwise judging", section "Calibration").

Two judges are scored against human preferences; under the null both have the same accuracy.
Each verdict is right with probability ``sigmoid(mu + effects)`` (``mu = logit(0.7)``), the
effects drawn anew in every replication:

* **independent pairs**: n = 1,000 pairs, each judged once by each judge; a pair difficulty
  ``e ~ N(0, 1)`` shared by the two judges (so their errors are correlated). No clusters.
* **both orders**: n = 300 pairs, each judged in both presentation orders; shared pair
  difficulty ``e ~ N(0, 1)``, a judge-specific pair effect ``w ~ N(0, 0.8^2)`` shared by the
  two orders of a pair (the two verdicts of a judge on a pair are dependent), a position
  effect +-0.5 (the preferred story shown first / second). Clusters: pairs.
* **clustered by prompt**: 60 prompts x 15 pairs; a prompt effect ``u ~ N(0, 0.5^2)``, a
  judge-specific prompt effect ``v ~ N(0, 0.5^2)`` and a shared pair difficulty
  ``e ~ N(0, 1)``. Clusters: prompts.

Tests (two-sided, nominal 0.05), each run through `compare_accuracies`: ``mcnemar``
(McNemar's score test since issue 47, the exact test before; in the clustered designs it
ignores the clusters, shown as a warning of what that costs), ``permutation`` (cluster sign flips) and ``bootstrap`` (paired cluster bootstrap),
both with ``--resamples`` resamples. The default of each design is marked. Replications:
``--reps`` for the resampling tests (a quarter in the independent design, whose default is
McNemar), 5 x ``--reps`` for McNemar and the binomial intervals (cheap). Intervals (95%):
Wilson and Clopper-Pearson for k/n (assume independent verdicts), the cluster bootstrap of
`accuracy_inference` (order-averaged in the both-orders design), and the intervals of the
accuracy difference that `compare_accuracies` reports (Tango's score interval with McNemar,
Agresti-Min before issue 47; the cluster bootstrap percentile interval with the others). True
accuracies are computed by Gauss-Hermite quadrature of ``E[sigmoid(mu + s Z)]``. The test of
accuracy = chance (the score test beside the Wilson interval, the exact binomial test before
issue 47, for independent pairs, the cluster-bootstrap test of `accuracy_inference` otherwise) runs on
data drawn with ``mu = 0``, whose accuracy is 0.5 exactly.

Monte Carlo standard errors: sqrt(p (1 - p) / reps). Measured on a shared, busy 2-core
machine; run with ``nice``.

Run: ``python benchmarks/bench_pairwise_calibration.py [--reps 4000] [--resamples 499]
[--seed 0] [--markdown FILE]``.

``--mcnemar`` (issue 47) measures only the independent design's McNemar tests as they are
now: the score test with Tango's interval (the default, which inverts it), the exact test
beside the same interval, and how often the two procedures of each row disagree (a few
seconds per 1,000 replications).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

from storyeval.pairwise.inference import (
    accuracy_inference,
    binomial_accuracy,
    compare_accuracies,
)

MU = math.log(0.7 / 0.3)
ALPHA = 0.05
LEVEL = 0.95


def true_accuracy(mu: float, sd: float) -> float:
    """E[sigmoid(mu + sd Z)], Z standard normal (Gauss-Hermite, 80 nodes)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float((w / (1 + np.exp(-(mu + sd * x)))).sum() / math.sqrt(2 * math.pi))


@dataclass(frozen=True)
class Design:
    name: str
    default_test: str
    description: str

    def draw(self, rng: np.random.Generator, mu: float = MU):
        """(scores_a, scores_b, clusters or None, preferred_first or None); ``mu = 0`` gives
        accuracy 0.5 exactly (every effect is symmetric about 0)."""
        raise NotImplementedError

    def truth(self) -> float:
        raise NotImplementedError


class Independent(Design):
    def draw(self, rng, mu=MU):
        e = rng.normal(0, 1, 1000)
        p = 1 / (1 + np.exp(-(mu + e)))
        return ((rng.random(1000) < p).astype(float), (rng.random(1000) < p).astype(float),
                None, None)

    def truth(self):
        return true_accuracy(MU, 1.0)


class BothOrders(Design):
    n, beta = 300, 0.5

    def draw(self, rng, mu=MU):
        e = np.repeat(rng.normal(0, 1, self.n), 2)
        first = np.tile([True, False], self.n)
        shift = np.where(first, self.beta, -self.beta)
        out = []
        for _ in range(2):
            w = np.repeat(rng.normal(0, 0.8, self.n), 2)
            p = 1 / (1 + np.exp(-(mu + e + w + shift)))
            out.append((rng.random(2 * self.n) < p).astype(float))
        return out[0], out[1], np.repeat(np.arange(self.n), 2), first

    def truth(self):
        sd = math.sqrt(1 + 0.8 ** 2)
        return 0.5 * (true_accuracy(MU + self.beta, sd) + true_accuracy(MU - self.beta, sd))


class Prompts(Design):
    prompts, per = 60, 15

    def draw(self, rng, mu=MU):
        n = self.prompts * self.per
        cluster = np.repeat(np.arange(self.prompts), self.per)
        base = rng.normal(0, 0.5, self.prompts)[cluster] + rng.normal(0, 1, n)
        out = []
        for _ in range(2):
            p = 1 / (1 + np.exp(-(mu + base + rng.normal(0, 0.5, self.prompts)[cluster])))
            out.append((rng.random(n) < p).astype(float))
        return out[0], out[1], cluster, None

    def truth(self):
        return true_accuracy(MU, math.sqrt(1 + 0.25 + 0.25))


DESIGNS = [
    Independent("independent pairs", "mcnemar", "1,000 pairs, one verdict each"),
    BothOrders("both orders", "permutation", "300 pairs x 2 orders, clusters = pairs"),
    Prompts("clustered by prompt", "permutation", "60 prompts x 15 pairs, clusters = prompts"),
]
TESTS = ("mcnemar", "permutation", "bootstrap")


def mc_se(p: float, reps: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / reps)


def replications(design: Design, reps: int) -> dict[str, int]:
    """Replications per test: the default and the other resampling tests ``reps`` (a quarter
    for the resampling tests of the independent design, which has 1,000 clusters and is not
    their use), McNemar (cheap) 5 x ``reps``."""
    out = {t: reps for t in TESTS}
    out["mcnemar"] = 5 * reps
    if design.default_test == "mcnemar":
        out["permutation"] = out["bootstrap"] = max(reps // 4, 1)
    return out


def run_design(design: Design, reps: int, resamples: int, rng: np.random.Generator) -> dict:
    """Rejection rates per test and coverage per interval, with their replication counts."""
    truth = design.truth()
    n_reps = replications(design, reps)
    reject = {t: 0 for t in TESTS}
    chance_tests = {"exact binomial": 0, "cluster bootstrap": 0}
    cover: dict[str, list[int]] = {}

    def hit(name: str, low: float, high: float, value: float) -> None:
        cover.setdefault(name, []).append(int(low <= value <= high))

    for rep in range(max(n_reps.values())):
        a, b, clusters, first = design.draw(rng)
        for test in TESTS:
            if rep >= n_reps[test]:
                continue
            res = compare_accuracies(a, b, clusters=None if test == "mcnemar" else clusters,
                                     test=test, n_resamples=resamples, random_state=rng)
            reject[test] += res.pvalue < ALPHA
            if test != "bootstrap":  # bootstrap and permutation report the same interval
                label = "Tango" if test == "mcnemar" else "cluster bootstrap"
                hit(f"difference: {label}", res.ci_low, res.ci_high, 0.0)
        for method in ("wilson", "exact"):
            r = binomial_accuracy(a.sum(), len(a), interval=method, confidence_level=LEVEL)
            hit(f"accuracy: {'Wilson' if method == 'wilson' else 'Clopper-Pearson'}",
                r.ci_low, r.ci_high, truth)
        if clusters is not None and rep < reps:
            r = accuracy_inference(a, clusters=clusters, preferred_first=first,
                                   method="cluster-bootstrap", n_resamples=resamples,
                                   confidence_level=LEVEL, random_state=rng)
            hit("accuracy: cluster bootstrap", r.ci_low, r.ci_high, truth)
        # the test of accuracy = chance, on data whose accuracy is 0.5
        a0, _, clusters0, first0 = design.draw(rng, mu=0.0)
        chance_tests["exact binomial"] += binomial_accuracy(a0.sum(), len(a0)).pvalue < ALPHA
        if clusters0 is not None and rep < reps:
            r = accuracy_inference(a0, clusters=clusters0, preferred_first=first0,
                                   method="cluster-bootstrap", n_resamples=resamples,
                                   random_state=rng)
            chance_tests["cluster bootstrap"] += r.pvalue < ALPHA
    n_chance = {"exact binomial": max(n_reps.values()),
                "cluster bootstrap": reps if design.default_test != "mcnemar" else 0}
    return {"reject": {t: (v / n_reps[t], n_reps[t]) for t, v in reject.items()},
            "chance": {k: (v / n_chance[k], n_chance[k]) for k, v in chance_tests.items()
                       if n_chance[k]},
            "cover": {k: (float(np.mean(v)), len(v)) for k, v in cover.items()},
            "truth": truth}


def run_mcnemar(reps: int, rng: np.random.Generator) -> str:
    """Level of McNemar's score and exact tests on the independent design's null data, the
    coverage of Tango's interval of the difference (0) and each test's disagreements with
    it, as a Markdown table."""
    design = DESIGNS[0]
    reject = {"mcnemar": 0, "mcnemar-exact": 0}
    disagree = dict.fromkeys(reject, 0)
    covered = 0
    for _ in range(reps):
        a, b, _, _ = design.draw(rng)
        for test in reject:
            res = compare_accuracies(a, b, test=test, confidence_level=LEVEL)
            reject[test] += res.pvalue < ALPHA
            disagree[test] += res.agreement.startswith("DISAGREE")
            covered += test == "mcnemar" and res.ci_low <= 0.0 <= res.ci_high
    cover = covered / reps
    lines = ["| test (independent pairs, 1,000) | type-I error at 0.05 | MC s.e. | Tango "
             "interval covers 0 | rows where test and interval disagree | replications |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for test, name in (("mcnemar", "McNemar score (default)"), ("mcnemar-exact",
                                                                 "exact McNemar")):
        p = reject[test] / reps
        lines.append(f"| {name} | {p:.4f} | {mc_se(p, reps):.4f} | {cover:.4f} | "
                     f"{disagree[test]} | {reps} |")
    return "\n".join(lines) + "\n"


def markdown(results: dict, reps: int, resamples: int, seed: int, seconds: float) -> str:
    lines = ["| design | test | type-I error at 0.05 | MC s.e. | replications | default |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    for d in DESIGNS:
        for t in TESTS:
            p, n = results[d.name]["reject"][t]
            note = ("McNemar score (ignores the clusters)" if t == "mcnemar" and
                    d.name != "independent pairs" else
                    {"mcnemar": "McNemar score", "permutation": "cluster sign-flip permutation",
                     "bootstrap": "paired cluster bootstrap"}[t])
            lines.append(f"| {d.name} | {note} | {p:.4f} | {mc_se(p, n):.4f} | {n} | "
                         f"{'yes' if t == d.default_test else ''} |")
    lines += ["", "| design | test of accuracy = chance (0.5) | type-I error at 0.05 | MC s.e. | "
              "replications | default |", "| --- | --- | ---: | ---: | ---: | --- |"]
    for d in DESIGNS:
        for name, (p, n) in results[d.name]["chance"].items():
            default = (name == "exact binomial") == (d.default_test == "mcnemar")
            shown = (name + " (ignores the clusters)" if name == "exact binomial"
                     and d.default_test != "mcnemar" else name)
            lines.append(f"| {d.name} | {shown} | {p:.4f} | {mc_se(p, n):.4f} | {n} | "
                         f"{'yes' if default else ''} |")
    lines += ["", "| design | interval (95%) | true value | coverage | MC s.e. | replications |",
              "| --- | --- | ---: | ---: | ---: | ---: |"]
    for d in DESIGNS:
        for name, (c, n) in results[d.name]["cover"].items():
            value = 0.0 if name.startswith("difference") else results[d.name]["truth"]
            lines.append(f"| {d.name} | {name} | {value:.4f} | {c:.4f} | {mc_se(c, n):.4f} | "
                         f"{n} |")
    footer = (f"*--reps {reps}, {resamples} resamples or permutations per test, seed {seed}; "
              f"{seconds:.0f} s with `nice` on a shared, busy 2-core machine. Generated by "
              "`python benchmarks/bench_pairwise_calibration.py "
              f"--reps {reps} --resamples {resamples} --seed {seed}`.*")
    lines += ["", footer]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--resamples", type=int, default=499)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", help="also write the tables to this Markdown file")
    parser.add_argument("--mcnemar", action="store_true",
                        help="only the McNemar tests of the independent design (issue 47)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    if args.mcnemar:
        sys.stdout.write(run_mcnemar(args.reps, rng))
        return 0
    start = time.perf_counter()
    results = {}
    for d in DESIGNS:
        t0 = time.perf_counter()
        results[d.name] = run_design(d, args.reps, args.resamples, rng)
        print(f"{d.name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    text = markdown(results, args.reps, args.resamples, args.seed,
                    time.perf_counter() - start)
    sys.stdout.write(text)
    if args.markdown:
        from storyeval._atomic import atomic_path

        with atomic_path(args.markdown) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
