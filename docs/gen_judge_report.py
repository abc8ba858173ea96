"""Generate the numbers and tables of the page "May this judge replace my raters?"
(docs/judge-report.md).

Usage (from the repository root)::

    python docs/gen_judge_report.py               # writes docs/generated/judge/
    python docs/gen_judge_report.py --out DIR     # somewhere else (the stale check in tests/)

Every snippet comes from running storyeval on the embedded HANNA data (`judge_report` for all
twenty LLM rater groups, the alt-test at several margins), from ``storyeval judge-report`` run
in-process on the synthetic data of the "Your own data" tutorial (docs/own_data/make_data.py)
with a simulated judge, and from ``benchmarks/bench_judge_report.py`` (the verdict rule's
false-pass rate and power, read from ``benchmarks/bench_judge_report.json``).
``tests/test_docs_judge_report.py`` regenerates the snippets and compares them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from gen_common import console, md, snippet_writer

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
DEFAULT_OUT = DOCS / "generated" / "judge"
BENCH = ROOT / "benchmarks" / "bench_judge_report.json"
MAKE_DATA = DOCS / "own_data" / "make_data.py"
SHORT = {"replaces the annotators": "replaces"}


def _md(frame: pd.DataFrame, digits: int = 3) -> str:
    return md(frame, digits).rstrip() + "\n"


def hanna_report():
    from storyeval.judge.report import judge_report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return judge_report(judges="llm")


def verdict_grid(report) -> str:
    """Rater group x criterion: the verdict (shortened) and the alt-test's winning rate."""
    v = report.verdicts.copy()
    v["cell"] = [f"{SHORT.get(x, x.replace('use with PPI and ', 'PPI, ').replace(' human labels', ' labels'))}"
                 f" (w {w:.2f})" for x, w in zip(v["verdict"], v["winning_rate"])]
    grid = v.pivot_table(index="judge", columns="criterion", values="cell", aggfunc="first",
                         sort=False)
    grid = grid[list(dict.fromkeys(v["criterion"]))].reset_index()
    return _md(grid.rename(columns={"judge": "rater group"}))


def evidence_table(report) -> str:
    """Eval-Prompt 1 raters: the numbers behind each verdict."""
    v = report.verdicts
    v = v[v["judge"].str.endswith(" 1")]
    cols = ["criterion", "judge", "winning_rate", "advantage_probability",
            "sentinel_advantage_probability", "overall_corr", "overall_ci_low",
            "human_loo_overall", "ppi_gain", "labels_needed", "items_to_pass"]
    v = v[cols].copy()
    for name in ("labels_needed", "items_to_pass"):
        v[name] = v[name].astype("Int64")
    return _md(v)


def sentinel_table(report) -> str:
    """The alt-test of the system-identity sentinel, per criterion."""
    a = report.alt_test[report.alt_test["judge"].str.startswith("Sentinel")]
    rows = a.groupby("criterion", sort=False).agg(
        winning_rate=("winning_rate", "first"),
        advantage_probability=("advantage_probability", "first"),
        largest_pvalue=("pvalue", "max")).reset_index()
    return _md(rows)


def agreement_table(report) -> str:
    """Beluga-13B (Eval-Prompt 1), the system sentinel and the leave-one-out human baseline at
    the four levels, on Engagement."""
    a = report.agreement
    keep = a["judge"].isin(["Beluga-13B 1", "Sentinel: system identity", "Sentinel: length only",
                            "Sentinel: prompt mean", "human (leave-one-out)"]) & (
        a["criterion"] == "Engagement")
    a = a[keep].copy()
    a["cell"] = [f"{x:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(x) else "undefined"
                 for x, lo, hi in zip(a["value"], a["ci_low"], a["ci_high"])]
    grid = a.pivot_table(index="judge", columns="level", values="cell", aggfunc="first",
                         sort=False)
    return _md(grid[["overall", "system", "prompt", "within"]].reset_index())


def sentinel_tests_table(report) -> str:
    """Beluga-13B (Eval-Prompt 1) against the three sentinels on Engagement at every level."""
    t = report.sentinel_tests
    t = t[(t["judge"] == "Beluga-13B 1") & (t["criterion"] == "Engagement")]
    return _md(t[["sentinel", "level", "judge_corr", "sentinel_corr", "delta", "ci_low",
                  "ci_high", "p", "test"]].assign(
        test=lambda d: d["test"].str.split(",").str[0]))


def epsilon_table() -> str:
    """Winning rate of the Eval-Prompt 1 raters on Engagement at four margins."""
    from storyeval.compare.alt_test import alt_test
    from storyeval.data import load_hanna

    data = load_hanna(include_human_stories=False)
    wide, cat = data.wide(), data.catalogue
    humans = wide[data.annotators()["Engagement"]]
    rows = []
    for model in ("Beluga-13B", "OrcaPlatypus", "Mistral-7B", "Llama-13B", "ChatGPT"):
        measure = cat.loc[(cat["rater"] == f"{model} 1") & (cat["criterion"] == "Engagement"),
                          "measure"].item()
        row = {"judge": f"{model} 1"}
        for eps in (0.0, 0.05, 0.1, 0.2):
            row[f"epsilon {eps}"] = alt_test(wide[measure], humans, epsilon=eps).winning_rate
        rows.append(row)
    return _md(pd.DataFrame(rows), digits=2)


def error_rates() -> str:
    payload = json.loads(BENCH.read_text(encoding="utf-8"))
    rows = pd.DataFrame(payload["results"])
    rows["cell"] = [f"{p:.4f} ({s:.4f})" for p, s in zip(rows["pass_rate"], rows["mc_se"])]
    grid = rows.pivot_table(index="judge", columns="n_items", values="cell", aggfunc="first",
                            sort=False)
    grid.columns = [f"{c} items" for c in grid.columns]
    return _md(grid.reset_index())


def runtime() -> str:
    payload = json.loads(BENCH.read_text(encoding="utf-8"))
    seconds, cpu = payload["cli_seconds"], payload["cli_cpu_seconds"]
    return (f"`storyeval judge-report --judges \"{payload['cli_judges']}\"` on HANNA (30 "
            f"criterion x judge pairs, default options) used {min(cpu):.1f}-{max(cpu):.1f} s "
            f"of CPU time (user + system) and {min(seconds):.1f}-{max(seconds):.1f} s of wall "
            f"clock over {len(seconds)} fresh processes, on a {payload['cpu_count']}-core "
            f"machine shared with other jobs (load average {payload['load_average']}; "
            "benchmarks/bench_judge_report.py).\n")


def _make_data():
    spec = importlib.util.spec_from_file_location("make_data", MAKE_DATA)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def own_data_judge(module) -> pd.DataFrame:
    """A simulated judge on the tutorial's stories: the story's latent Fluency quality (the
    first draws of make_data.make, seed 7) plus noise of sd 0.6 on the 1-5 scale."""
    rng = np.random.default_rng(7)
    stories = pd.DataFrame([(s, p) for s in module.SYSTEMS for p in module.PROMPTS],
                           columns=["system", "prompt_id"])
    skill = dict(zip(module.SYSTEMS, np.linspace(-1.0, 1.0, len(module.SYSTEMS))))
    quality = stories["system"].map(skill).to_numpy() + rng.normal(0, 0.8, len(stories))
    noise = np.random.default_rng(70).normal(0, 0.6, len(stories))
    return pd.DataFrame({"story_id": stories["system"] + "/" + stories["prompt_id"],
                         "measure": "sim-judge",
                         "value": np.clip(3 + quality + noise, 1, 5).round(2)})


OWN_DATA_COMMAND = ["judge-report", "--data", "ratings.csv", "--annotator-ids", "ids",
                    "--scores", "judge.csv", "--judges", "sim-judge", "--epsilon", "0.1",
                    "--n-resamples", "200"]


def own_data() -> str:
    module = _make_data()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        module.write(folder)
        own_data_judge(module).to_csv(folder / "judge.csv", index=False)
        return console(OWN_DATA_COMMAND, cwd=folder)


def generate(out: Path = DEFAULT_OUT) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    report = hanna_report()
    snippets = {
        "verdicts": verdict_grid(report),
        "evidence": evidence_table(report),
        "sentinel_alt_test": sentinel_table(report),
        "agreement": agreement_table(report),
        "sentinel_tests": sentinel_tests_table(report),
        "epsilon": epsilon_table(),
        "error_rates": error_rates(),
        "runtime": runtime(),
        "own_data": own_data(),
    }
    paths: list[Path] = []
    write = snippet_writer(out, paths)
    for name, text in snippets.items():
        write(name, text)
    return paths


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
