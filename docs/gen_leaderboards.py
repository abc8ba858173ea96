"""Generate the command outputs shown in docs/leaderboards.md.

Usage (from the repository root)::

    python docs/gen_leaderboards.py              # writes docs/generated/leaderboards/
    python docs/gen_leaderboards.py --out DIR    # somewhere else (the stale check in tests/)

The example verdict file is built from the embedded HANNA data in a temporary folder: the three
annotators' Relevance ratings turned into side-by-side verdicts on every pair of the ten
generation systems within each prompt (`storyeval.pairwise.verdicts_from_scores`); the win
matrix is paper 001's published Overall matrix. The commands run in-process; each output is one
Markdown snippet ``docs/generated/leaderboards/NAME.md``. The benchmark tables
(``bench.md`` and ``coverage.md`` in the same folder) are written by
``benchmarks/bench_leaderboard.py`` and ``benchmarks/bench_leaderboard_coverage.py``.
The prediction-powered example (``ppr.md``, ``ppr_win_rate.md``) keeps the annotators'
verdicts on a seeded random 5% of the comparisons (20% for the judge panel ``panel.md`` of
Beluga-13B, Mistral-7B and ChatGPT) (prompt and pair of systems) as the human
file and turns Beluga-13B's Relevance ratings (Eval-Prompt 1) into the judge's verdicts on all
of them; ``ppr_coverage.md`` is the table of ``benchmarks/bench_ppr.json`` (written by
``benchmarks/bench_ppr.py``).
``tests/test_docs_leaderboards.py`` regenerates the snippets and compares them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd
from gen_common import run_cli, shell, snippet_writer, working_directory

DOCS = Path(__file__).resolve().parent
DEFAULT_OUT = DOCS / "generated" / "leaderboards"
#: Snippets written by the benchmarks, not by this script.
FOREIGN = {"bench.md", "coverage.md"}

COMMANDS: dict[str, list[str]] = {
    "leaderboard": ["pairwise", "strengths", "humans.csv", "--dimension", "Relevance",
                    "--digits", "2", "--out", "report"],
    "matrix": ["pairwise", "strengths", "--matrix", "overall.csv", "--digits", "4"],
    "ppr": ["pairwise", "strengths", "--human", "humans_5pct.csv", "--judge", "beluga.csv",
            "--digits", "2"],
    "ppr_win_rate": ["pairwise", "strengths", "--human", "humans_5pct.csv", "--judge",
                     "beluga.csv", "--estimand", "win-rate", "--digits", "2"],
    "panel": ["pairwise", "panel", "panel.csv", "--human", "humans_20pct.csv", "--digits", "3"],
}
#: The judges of the panel example: three LLM raters' Relevance ratings (Eval-Prompt 1).
PANEL = ("Beluga-13B RE 1", "Mistral-7B RE 1", "ChatGPT RE 1")
BENCH_PPR = DOCS.parent / "benchmarks" / "bench_ppr.json"
# paper 001, Appendix A, Overall (rows: Ours, Agents' Room, Dramatron; row beat column)
OVERALL = ("item,Ours,AgentsRoom,Dramatron\nOurs,0,41,47\nAgentsRoom,15,0,33\n"
           "Dramatron,9,23,0\n")


def write_data(folder: Path) -> None:
    from storyeval.data import load_hanna
    from storyeval.pairwise.from_scores import verdicts_from_scores

    wide = load_hanna().select_systems(exclude=["Human"]).wide()
    humans = pd.concat([verdicts_from_scores(wide, f"Human {i} RE", judge=f"annotator {i}",
                                             dimension="Relevance") for i in (1, 2, 3)])
    humans.to_csv(folder / "humans.csv", index=False)
    (folder / "overall.csv").write_text(OVERALL)
    judge = verdicts_from_scores(wide, "Beluga-13B RE 1", judge="Beluga-13B",
                                 dimension="Relevance")
    judge.to_csv(folder / "beluga.csv", index=False)
    key = humans["prompt_id"].astype(str) + "|" + humans["story_a"] + "|" + humans["story_b"]
    units = pd.Series(key.unique()).sort_values()
    chosen = set(units.sample(frac=0.05, random_state=0))
    humans[key.isin(chosen)].to_csv(folder / "humans_5pct.csv", index=False)
    chosen = set(units.sample(frac=0.2, random_state=0))
    humans[key.isin(chosen)].to_csv(folder / "humans_20pct.csv", index=False)
    panel = pd.concat([verdicts_from_scores(wide, m, judge=m.split(" ")[0],
                                            dimension="Relevance") for m in PANEL])
    panel.to_csv(folder / "panel.csv", index=False)


def ppr_coverage_table() -> str:
    """The coverage table of benchmarks/bench_ppr.json (Markdown)."""
    import json

    bench = json.loads(BENCH_PPR.read_text(encoding="utf-8"))
    methods = [("ppr", "win rates (default)"), ("ppr_published", "win rates, published code"),
               ("human", "win rates, humans only"), ("judge", "win rates, judge only"),
               ("bt_prompt", "strengths (default: sandwich)"),
               ("bt_bootstrap", "strengths, bootstrap"), ("bt_comparison", "strengths, iid")]
    head = ("| systems | comparisons | human share | " + " | ".join(m[1] for m in methods)
            + " |\n|" + " --- |" * (3 + len(methods)) + "\n")
    rows = []
    for c in bench["cells"]:
        cells = [f"{c[m]['coverage']:.3f} ({c[m]['size']:.1f})" if m in c else "-"
                 for m, _ in methods]
        rows.append(f"| {c['k']} | {c['comparisons']:,} | {c['share']:.0%} | "
                    + " | ".join(cells) + " |")

    def span(method: str, key: str, digits: int) -> str:
        values = [c[method][key] for c in bench["cells"] if method in c]
        return f"{min(values):.{digits}f}-{max(values):.{digits}f}"

    mc = max(c[m]["mc_se"] for c in bench["cells"] for m, _ in methods if m in c)
    return (head + "\n".join(rows) + "\n\n"
            f"Simultaneous coverage of the rank-sets of all systems at a stated "
            f"{bench['level']:g} (mean rank-set size in brackets; `-`: not run, the bootstrap "
            f"runs on the studies of 300 prompts), {bench['reps']} simulated studies per row "
            f"(seed {bench['seed']}; Monte Carlo standard error at most {mc:.3f}). Per-system "
            f"coverage of the strengths' {bench['level']:g} intervals: sandwich "
            f"{span('bt_prompt', 'ci_cover', 3)} (default), bootstrap "
            f"{span('bt_bootstrap', 'ci_cover', 3)}, iid {span('bt_comparison', 'ci_cover', 3)}; "
            "mean standard error relative to the "
            f"human-only one: {span('bt_prompt', 'width_ratio', 2)} (sandwich); lambda "
            f"{span('bt_prompt', 'lam', 2)}. Written by `{bench['command']}` "
            f"({bench['seconds']:.0f} s).\n")


def generate(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(DOCS.parent))
    written: list[Path] = []
    write = snippet_writer(out, written)
    with tempfile.TemporaryDirectory() as tmp, working_directory(Path(tmp)):
        write_data(Path(tmp))
        for name, argv in COMMANDS.items():
            text = run_cli([*argv, "--format", "md"])
            write(name, f"```console\n$ {shell(argv)}\n```\n\n{text}")
    if BENCH_PPR.exists():
        write("ppr_coverage", ppr_coverage_table())
    return written


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    for p in generate(ap.parse_args().out):
        print(p)
