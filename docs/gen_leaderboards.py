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
}
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
    return written


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    for p in generate(ap.parse_args().out):
        print(p)
