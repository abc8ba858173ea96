"""Generate the numbers and tables of the page "WMT meta-metrics and length" (docs/wmt.md).

Usage (from the repository root)::

    python docs/gen_wmt.py               # writes docs/generated/wmt/
    python docs/gen_wmt.py --out DIR     # somewhere else (the stale check in tests/)

Every snippet comes from running storyeval: ``storyeval meta`` commands in-process on the
embedded HANNA data, the library functions on the page's synthetic pairs, and the comparison
with the reference numbers of google-research/mt-metrics-eval stored in
``tests/data/mteval_reference.json`` (computed once with that toolkit outside the project; the
file records the commit, the functions and their arguments). The Markdown holds no dates, paths
or timings; ``tests/test_docs_wmt.py`` regenerates it and compares. The snippets live in their
own folder because ``docs/gen_pages.py`` owns the ``*.md`` files directly under
``docs/generated/``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from gen_common import console, generator_main, md, remove_stale, snippet_writer

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
DEFAULT_OUT = DOCS / "generated" / "wmt"
REFERENCE = ROOT / "tests" / "data" / "mteval_reference.json"
MEASURES = "BLEU,BERTScore F1,Beluga-13B 1"
CRITERIA = "Relevance,Coherence"


def _hanna_wide() -> pd.DataFrame:
    from storyeval.data import load_hanna

    wide = load_hanna().wide()
    return wide[wide.index.get_level_values("system") != "Human"].sort_index()


GROUPING = {"item": "prompt (item)", "none": "overall (none)", "sys": "per system (sys)"}


def reference_agreement() -> str:
    """storyeval's acc_eq / tau_23 and SPA beside mt-metrics-eval's numbers."""
    from storyeval.compare.soft_accuracy import soft_pairwise_accuracy
    from storyeval.compare.tie_calibration import tie_calibrated

    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))
    wide = _hanna_wide()
    rows, worst_value, eps_equal, eps_ties, eps_other = [], 0.0, 0, 0, 0
    for r in ref["tie_calibration"]:
        by = {"item": "prompt_id", "sys": "system", "none": None}[r["average_by"]]
        groups = None if by is None else wide.index.get_level_values(by)
        res = tie_calibrated(wide[r["criterion"]].to_numpy(), wide[r["measure"]].to_numpy(),
                             groups, variant="acc23" if r["variant"] == "acc23" else "tau23")
        worst_value = max(worst_value, abs(res.value - r["value"]))
        k = int(np.searchsorted(res.thresholds, r["epsilon"]))
        if abs(res.epsilon - r["epsilon"]) <= 1e-12:
            eps_equal += 1
        elif (k < len(res.thresholds) and res.thresholds[k] == r["epsilon"]
              and res.values[k] == res.value and res.epsilon < r["epsilon"]):
            eps_ties += 1  # an exactly equal maximum at a larger epsilon
        else:
            eps_other += 1
        if r["variant"] == "acc23":
            rows.append({"measure": r["measure"], "criterion": r["criterion"],
                         "grouping": GROUPING[r["average_by"]],
                         "mt-metrics-eval acc_eq": f"{r['value']:.9f}",
                         "storyeval acc_eq": f"{res.value:.9f}",
                         "mt-metrics-eval epsilon": f"{r['epsilon']:.6g}",
                         "storyeval epsilon": f"{res.epsilon:.6g}"})
    spa_rows, worst_spa = [], 0.0
    for r in ref["spa"]:
        def mat(x):
            return np.array([[np.nan if v is None else v for v in row] for row in x])
        ours = soft_pairwise_accuracy(mat(r["human_p"]), mat(r["metric_p"]))
        worst_spa = max(worst_spa, abs(ours - r["spa"]))
        spa_rows.append({"measure": r["measure"], "criterion": r["criterion"],
                         "mt-metrics-eval SPA": f"{r['spa']:.9f}",
                         "storyeval SPA": f"{ours:.9f}"})
    n = len(ref["tie_calibration"])
    values = "all within 1e-9" if worst_value <= 1e-9 else "NOT all within 1e-9"
    eps = (f"epsilon identical in {eps_equal} of {n}"
           + (f"; in the other {eps_ties} (per-system grouping only) several epsilons reach "
              "exactly the same maximum, and mt-metrics-eval's running floating-point sum picks "
              "a larger one by rounding noise (for the same data its acc23 and 23 runs, affine "
              "in each other, pick different ones) while storyeval takes the smallest: the same "
              "value" if eps_ties else "")
           + (f"; {eps_other} NOT explained" if eps_other else ""))
    spa = "all within 1e-9" if worst_spa <= 1e-9 else "NOT all within 1e-9"
    return (f"Reference: mt-metrics-eval commit `{ref['commit'][:12]}`, "
            "`stats.KendallWithTiesOpt(gold, metric, variant, num_sys=10, average_by, "
            "sample_rate=1.0)`; HANNA's 960 generated stories (10 systems x 96 prompts). "
            f"{n} comparisons (acc23 and 23; groupings item, none and sys): values {values}; "
            f"{eps}. The acc23 rows:\n\n"
            + md(pd.DataFrame(rows))
            + "\n\nSoft pairwise accuracy from the same p-value matrices (mt-metrics-eval's "
            "`pce.compute_pairwise_p_values`, 1,000 permutations; then "
            f"`pce.compute_one_minus_pce`): {spa}.\n\n" + md(pd.DataFrame(spa_rows)))


def clusters_example() -> str:
    from storyeval.compare.clusters import assign_clusters

    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))["assign_ranks"]
    sig = np.array(ref["sig_matrix"])
    names = [f"m{k}" for k in range(len(sig))]
    frame = pd.DataFrame(sig, columns=names)
    frame = frame.map(lambda v: "" if v == 0 else f"{v:.2f}")
    frame.insert(0, "p(row better than column)", names)
    ranks = assign_clusters(sig, ref["pval"])
    frame["storyeval rank"] = ranks
    frame["mt-metrics-eval rank"] = ref["ranks"]
    return md(frame)


def synthetic_length() -> str:
    from storyeval.meta.length import (
        balance_length,
        length_controlled_accuracy,
        length_controlled_win_rate,
        prefer_longer_rate,
    )

    rng = np.random.default_rng(2024)
    n = 4000
    la, lb = rng.integers(100, 1000, n), rng.integers(100, 1000, n)
    human = np.where(rng.random(n) < 0.5, 1, -1)  # independent of length
    longer = np.sign(la - lb)
    shortcut = np.where(rng.random(n) < 0.65, longer, -longer)
    shortcut[longer == 0] = 1
    rows = []
    for name, judge in (("always prefers the longer story", longer),
                        ("copies the humans", human)):
        acc = length_controlled_accuracy(human, judge, la, lb)
        rows.append({"judge": name, "P(prefer longer)": prefer_longer_rate(judge, la, lb)[0],
                     "accuracy": acc["accuracy"], "length-controlled accuracy":
                     acc["lc_accuracy"], "LC win rate (a over b)":
                     length_controlled_win_rate(judge, la, lb)["lc_win_rate"]})
    table = md(pd.DataFrame(rows))
    sub = balance_length(shortcut, la, lb, random_state=0)
    return (f"{n:,} synthetic pairs, lengths uniform on 100-999 words, human verdicts independent "
            "of length (seed 2024):\n\n" + table
            + f"\n\nA second set whose humans prefer the longer story "
            f"{sub.prefer_longer_before:.3f} of the time: `balance_length` keeps "
            f"{sub.n_kept_decided:,} of {sub.n_decided:,} decided pairs, and among them "
            f"P(prefer longer) = {sub.prefer_longer_after:.3f}.\n")


def levels_table() -> str:
    from storyeval.data.mteval import level_vocabulary

    return md(level_vocabulary())


def generate(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)

    base = ["meta", "--metrics", MEASURES, "--criteria", CRITERIA]
    write("acc_eq", console([*base, "--coef", "acc_eq", "--levels", "overall,item,system",
                             "--format", "md"]))
    write("reference", reference_agreement())
    write("spa", console([*base, "--coef", "spa", "--format", "md"]))
    write("clusters_example", clusters_example())
    write("clusters", console([*base, "--levels", "system", "--test", "permutation-random",
                               "--clusters"]))
    write("length_synthetic", synthetic_length())
    write("length_hanna", console(["meta", "--metrics", "BLEU,Beluga-13B 1", "--criteria",
                                   "Relevance", "--levels", "overall", "--reference", "none",
                                   "--length", "Text length"]))
    write("levels", levels_table())
    remove_stale(out, written)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    return generator_main(generate, DEFAULT_OUT, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
