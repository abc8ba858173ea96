"""Generate the command outputs shown in docs/planning.md.

Usage (from the repository root)::

    python docs/gen_planning.py              # writes docs/generated/planning/
    python docs/gen_planning.py --out DIR    # somewhere else (the stale check in tests/)

The example files are built in a temporary folder from the embedded HANNA data: an assignment
plan for four HANNA systems on 40 prompts (`storyeval plan assign`), filled in by simulated
annotators whose verdicts follow the stories' mean human Coherence plus seeded noise (the
"returned study"), a damaged copy of it for the plan check, and two item tables for
`storyeval ppi`: every HANNA story with its mean human Coherence (kept for a seeded random 10%)
and ChatGPT's Coherence rating (Eval-Prompt 4); GPT-2's and Fusion's stories with both stories
of a random quarter of the prompts labelled; and every pair of two machine systems' stories on
one prompt with the human and the judge's preference (kept for a random 10%).
Each command's output is one Markdown snippet ``docs/generated/planning/NAME.md``; the coverage
table ``ppi_coverage.md`` is rendered from ``benchmarks/bench_ppi.json`` (written by
``benchmarks/bench_ppi.py``). ``tests/test_docs_planning.py`` regenerates them and compares them
with the committed ones.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from gen_common import (
    generator_main,
    remove_stale,
    run_cli,
    shell,
    snippet_writer,
    working_directory,
)

DOCS = Path(__file__).resolve().parent
DEFAULT_OUT = DOCS / "generated" / "planning"
BENCH = DOCS.parent / "benchmarks" / "bench_ppi.json"
#: Coverage-table columns: the benchmark's method label and the column heading.
COVERAGE_COLUMNS = (
    ("ppi++ cross-fit, t (default)", "default (PPI++ cross-fit, t)"),
    ("ppi++, z (ppi-python)", "ppi-python PPI++ (z)"),
    ("ppi++, t", "PPI++ (t)"),
    ("ppi++ cross-fit, z", "PPI++ cross-fit (z)"),
    ("ppi, t", "PPI (t)"),
    ("human only, t", "human only (t)"),
)
SYSTEMS = "GPT-2,Fusion,HINT,TD-VAE"

COMMANDS: dict[str, list[str]] = {
    "power_win_rate": ["plan", "power", "--design", "win_rate", "--effect", "0.6"],
    "power_clustered": ["plan", "power", "--design", "paired_accuracy", "--effect", "0.78",
                        "--baseline", "0.73", "--discordance", "0.2", "--units-per-prompt", "5",
                        "--icc", "0.1"],
    "mde_litbench": ["plan", "power", "--design", "paired_accuracy", "--baseline", "0.73",
                     "--discordance", "0.37", "--n", "2480", "--effect", "0.78"],
    "mde_litbench_unpaired": ["plan", "power", "--design", "two_proportions", "--baseline",
                              "0.73", "--n", "2480"],
    "assign": ["plan", "assign", "--systems", SYSTEMS, "--prompts", "40", "--annotators", "12",
               "--judgments-per-pair", "2", "--per-sitting", "5", "--seed", "0",
               "--out", "plan.csv"],
    "plan_head": ["head", "-n", "6", "plan.csv"],
    "check_damaged": ["plan", "check", "--plan", "plan.csv", "--returned", "damaged.csv"],
    "check_returned": ["plan", "check", "--plan", "plan.csv", "--returned", "returned.csv"],
    "agreement": ["agreement", "--verdicts", "returned.csv", "--seed", "0"],
    "strengths": ["pairwise", "strengths", "returned.csv", "--seed", "0"],
    "ppi_mean": ["ppi", "--data", "stories.csv", "--human", "human", "--judge", "chatgpt"],
    "ppi_difference": ["ppi", "--data", "two_systems.csv", "--human", "human", "--judge",
                       "chatgpt", "--system", "system", "--systems", "GPT-2,Fusion",
                       "--paired-by", "prompt_id"],
    "ppi_win_rate": ["ppi", "--data", "pairs.csv", "--human", "human", "--judge", "chatgpt",
                     "--estimand", "win_rate"],
    "budget": ["plan", "budget", "--pilot", "stories.csv", "--human", "human", "--judge",
               "chatgpt", "--cost-human", "0.5", "--cost-judge", "0.002", "--width", "0.2",
               "--simulate", "500"],
    "budget_dear_judge": ["plan", "budget", "--pilot", "stories.csv", "--human", "human",
                          "--judge", "chatgpt", "--cost-human", "0.5", "--cost-judge", "0.2",
                          "--width", "0.2"],
    "budget_money": ["plan", "budget", "--pilot", "stories.csv", "--human", "human",
                     "--judge", "chatgpt", "--cost-human", "0.5", "--judge-cost-from",
                     "run/cost.csv", "--budget", "100"],
    "active": ["plan", "active", "--data", "pairs_p.csv", "--probability", "judge_p",
               "--budget", "200", "--seed", "0", "--out", "next.csv"],
    "active_estimate": ["ppi", "--data", "labelled.csv", "--human", "human", "--judge",
                        "judge_p", "--label-probability", "label_probability", "--estimand",
                        "win_rate"],
}
#: Commands that need files written by an earlier step (run just before them).
BEFORE = {"budget_money": "cost_run", "active_estimate": "label_next"}
BENCH_ACTIVE = DOCS.parent / "benchmarks" / "bench_active.json"
#: Commands whose non-zero exit code is the point of the example.
EXPECTED_EXIT = {"check_damaged": 1}


def _hanna_wide() -> pd.DataFrame:
    from storyeval.data import load_hanna

    scores = load_hanna().scores
    return scores.pivot_table(index=["system", "prompt_id"], columns="measure",
                              values="value")[["Coherence", "ChatGPT CH 4"]]


def fill_plan(folder: Path) -> None:
    """returned.csv: the plan with simulated verdicts; damaged.csv: one row lost, one order
    changed, one row added."""
    wide = _hanna_wide()["Coherence"]
    plan = pd.read_csv(folder / "plan.csv", dtype={"verdict": str})
    rng = np.random.default_rng(0)
    ha = wide.loc[list(zip(plan.system_a, plan.prompt_id, strict=True))].to_numpy()
    hb = wide.loc[list(zip(plan.system_b, plan.prompt_id, strict=True))].to_numpy()
    d = ha - hb + rng.normal(0, 0.6, len(plan))
    plan["verdict"] = np.where(d > 0.25, "A", np.where(d < -0.25, "B", "same"))
    plan.to_csv(folder / "returned.csv", index=False)
    damaged = plan.drop(index=3).reset_index(drop=True)
    damaged.loc[10, "order"] = "BA" if damaged.loc[10, "order"] == "AB" else "AB"
    damaged = pd.concat([damaged, damaged.iloc[[20]].assign(judge="annotator_13")],
                        ignore_index=True)
    damaged.to_csv(folder / "damaged.csv", index=False)


def write_items(folder: Path) -> None:
    """stories.csv and pairs.csv for `storyeval ppi` (human labels on a seeded 10%)."""
    wide = _hanna_wide().reset_index()
    rng = np.random.default_rng(0)
    labelled = rng.random(len(wide)) < 0.1  # a uniformly random 10% of the stories
    stories = pd.DataFrame({"system": wide.system, "prompt_id": wide.prompt_id,
                            "human": wide.Coherence.where(labelled).round(4),
                            "chatgpt": wide["ChatGPT CH 4"]})
    stories.to_csv(folder / "stories.csv", index=False)
    # two systems on the same prompts, both stories of a random quarter of the prompts labelled
    prompts = wide.prompt_id.unique()
    chosen = rng.choice(prompts, size=prompts.size // 4, replace=False)
    two = wide[wide.system.isin(["GPT-2", "Fusion"])]
    pair_labelled = two.prompt_id.isin(chosen)
    pd.DataFrame({"system": two.system, "prompt_id": two.prompt_id,
                  "human": two.Coherence.where(pair_labelled).round(4),
                  "chatgpt": two["ChatGPT CH 4"]}).to_csv(folder / "two_systems.csv",
                                                          index=False)
    by = wide.set_index(["system", "prompt_id"])
    machine = sorted(s for s in wide.system.unique() if s != "Human")
    rows = []
    for i, a in enumerate(machine):
        for b in machine[i + 1:]:
            for p in prompts:
                h = np.sign(by.loc[(a, p), "Coherence"] - by.loc[(b, p), "Coherence"])
                j = np.sign(by.loc[(a, p), "ChatGPT CH 4"] - by.loc[(b, p), "ChatGPT CH 4"])
                rows.append((a, b, p, h / 2 + 0.5, j / 2 + 0.5))
    pairs = pd.DataFrame(rows, columns=["system_a", "system_b", "prompt_id", "human",
                                        "chatgpt"])
    labelled = rng.random(len(pairs)) < 0.1
    pairs["human"] = pairs["human"].where(labelled)
    pairs.to_csv(folder / "pairs.csv", index=False)


def write_active_items(folder: Path) -> None:
    """pairs_p.csv: every pair of two machine systems' stories on one prompt with the human
    preference and a judge's probability that A wins, from the difference of ChatGPT's
    Coherence ratings (a logistic link; a seeded illustration, not a calibrated judge)."""
    pairs = pd.read_csv(folder / "pairs.csv")
    wide = _hanna_wide()
    by = wide["ChatGPT CH 4"]
    diff = (by.loc[list(zip(pairs.system_a, pairs.prompt_id, strict=True))].to_numpy()
            - by.loc[list(zip(pairs.system_b, pairs.prompt_id, strict=True))].to_numpy())
    human = wide["Coherence"]
    hd = (human.loc[list(zip(pairs.system_a, pairs.prompt_id, strict=True))].to_numpy()
          - human.loc[list(zip(pairs.system_b, pairs.prompt_id, strict=True))].to_numpy())
    out = pairs[["system_a", "system_b", "prompt_id"]].assign(
        truth=np.sign(hd) / 2 + 0.5, judge_p=(1 / (1 + np.exp(-1.5 * diff))).round(4))
    out.to_csv(folder / "pairs_p.csv", index=False)


def label_next(folder: Path) -> None:
    """labelled.csv: next.csv with the human preference filled in where send_to_human is 1
    (the humans' answers are the known HANNA preferences)."""
    plan = pd.read_csv(folder / "next.csv")
    plan["human"] = plan["truth"].where(plan["send_to_human"] == 1)
    plan.drop(columns="truth").to_csv(folder / "labelled.csv", index=False)


def cost_run(folder: Path) -> str:
    """A `storyeval rate` run through a batch file, with a price: 12 HANNA stories, one
    criterion, Eval-Prompt 1, one try. The requests are written with --batch-out; the results
    file answers each with a scripted rating and a usage whose prompt tokens are the
    characters of the request's messages / 4 and whose completion tokens are 40; reading it
    with --batch-in --price gives the run's cost (run/cost.csv). Returns the page snippet."""
    common = ["rate", "--dataset", "hanna", "--limit", "12", "--model", "my-judge",
              "--eval-prompts", "1", "--criteria", "CH", "--tries", "1", "--no-api-key",
              "--no-progress", "--cache", "answers.sqlite"]
    run_cli([*common, "--batch-out", "requests.jsonl"])
    results = []
    for i, line in enumerate((folder / "requests.jsonl").read_text().splitlines()):
        req = json.loads(line)
        chars = sum(len(m["content"]) for m in req["body"]["messages"])
        body = {"id": f"r{i}", "model": "my-judge", "choices": [{
            "index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": f"{i % 5 + 1} - scripted."}}],
            "usage": {"prompt_tokens": chars // 4, "completion_tokens": 40}}
        results.append({"custom_id": req["custom_id"],
                        "response": {"status_code": 200, "body": body}})
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    argv = [*common, "--batch-in", "results.jsonl", "--price", "prompt=2.5,completion=10",
            "--out", "run"]
    text = run_cli(argv)
    cost = pd.read_csv(folder / "run" / "cost.csv")
    return (f"```bash\n{shell(argv, wrap=90)}\n```\n\n```text\n{text.rstrip()}\n```\n\n"
            f"`run/cost.csv`:\n\n```text\n{cost.T.to_string(header=False)}\n```\n")


def active_table(bench_path: Path = BENCH_ACTIVE) -> str:
    """The active-labelling benchmark table (Markdown) from its JSON."""
    bench = json.loads(bench_path.read_text(encoding="utf-8"))
    rows = pd.DataFrame(bench["results"])
    lines = ["| scenario | budget | active width | uniform width | active / uniform | "
             "coverage active | coverage uniform | ppi_mean (uniform) width, coverage |",
             "| --- " * 8 + "|"]
    for (scenario, budget), g in rows.groupby(["scenario", "budget"], sort=False):
        by = g.set_index("method")
        a, u, d = by.loc["active"], by.loc["uniform"], by.loc["ppi_mean uniform"]
        lines.append(f"| {scenario} | {budget} | {a['mean width']:.4f} | {u['mean width']:.4f} "
                     f"| **{a['width / uniform']:.3f}** | {a.coverage:.3f} | {u.coverage:.3f} "
                     f"| {d['mean width']:.4f}, {d.coverage:.3f} |")
    se = rows["mc se"].max()
    return ("\n".join(lines) + "\n\n"
            f"{bench['n_items']:,} items per study, {bench['reps']:,} replications per cell "
            f"(seed {bench['seed']}), mix {bench['mix']:g}; Monte Carlo standard error of a "
            f"coverage at most {se:.4f}.\n")


def coverage_table(bench_path: Path = BENCH) -> str:
    """The PPI coverage table (Markdown) and its lowest coverages, from the benchmark JSON."""
    bench = json.loads(bench_path.read_text(encoding="utf-8"))
    rows = pd.DataFrame(bench["results"])
    default = COVERAGE_COLUMNS[0][0]
    heads = [head for _, head in COVERAGE_COLUMNS]
    lines = ["| setting | human share | labels | " + " | ".join(heads)
             + " | default width / human-only | default width / ppi-python | default n_eff |",
             "| --- " * (len(heads) + 6) + "|"]
    for (setting, share), g in rows.groupby(["setting", "human share"], sort=False):
        by = g.set_index("method")
        cells = []
        for method, _ in COVERAGE_COLUMNS:
            r = by.loc[method]
            cell = f"{r.coverage:.3f}"
            if method == default:
                cell = (f"**{cell}** ({r['coverage min seed']:.3f}-"
                        f"{r['coverage max seed']:.3f})")
            cells.append(cell)
        d = by.loc[default]
        versus = d["mean width"] / by.loc[COVERAGE_COLUMNS[1][0], "mean width"]
        lines.append(f"| {setting} | {share:.0%} | {int(d['n labelled'])} | "
                     + " | ".join(cells)
                     + f" | {d['width / human-only']:.2f} | {versus:.2f} | "
                       f"{d['mean n_eff']:.0f} |")
    reps = len(bench["seeds"]) * bench["reps_per_seed"]
    worst_se = rows["mc se"].max()
    text = "\n".join(lines) + "\n\n"
    text += (f"{reps:,} replications per setting ({bench['reps_per_seed']:,} for each of the "
             f"study seeds {', '.join(map(str, bench['seeds']))}; in brackets the default's "
             f"range over seeds); Monte Carlo standard error at most {worst_se:.4f}. "
             "Lowest coverage per method:\n\n")
    for method, head in COVERAGE_COLUMNS:
        g = rows[rows.method == method]
        low = g.loc[g.coverage.idxmin()]
        text += (f"- {head}: {low.coverage:.3f} ({low.setting}, "
                 f"{low['human share']:.0%} human labels)\n")
    return text


def generate(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)
    with tempfile.TemporaryDirectory() as tmp, working_directory(Path(tmp)):
        write_items(Path(tmp))
        write_active_items(Path(tmp))
        for name, argv in COMMANDS.items():
            if name == "check_damaged":
                fill_plan(Path(tmp))
            if BEFORE.get(name) == "cost_run":
                write("cost_run", cost_run(Path(tmp)))
            elif BEFORE.get(name) == "label_next":
                label_next(Path(tmp))
            wrap = 100 if name.startswith(("budget", "active")) else None
            write(name, f"```bash\n{shell(argv, wrap=wrap)}\n```\n\n```text\n"
                        f"{run_cli(argv, expect=EXPECTED_EXIT.get(name, 0)).rstrip()}\n```\n")
    write("ppi_coverage", coverage_table())
    write("active_benchmark", active_table())
    remove_stale(out, written)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    return generator_main(generate, DEFAULT_OUT, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
