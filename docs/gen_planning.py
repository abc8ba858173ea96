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

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from gen_common import run_cli, shell, snippet_writer, working_directory

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
}
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
        for name, argv in COMMANDS.items():
            if name == "check_damaged":
                fill_plan(Path(tmp))
            write(name, f"```bash\n{shell(argv)}\n```\n\n```text\n"
                        f"{run_cli(argv, expect=EXPECTED_EXIT.get(name, 0)).rstrip()}\n```\n")
    write("ppi_coverage", coverage_table())
    for stale in sorted(out.glob("*.md")):
        if stale not in written:
            stale.unlink()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    paths = generate(args.out)
    print(f"wrote {len(paths)} files to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
