"""``storyeval robustness``: discrimination and invariance of measures or judges on a
perturbation suite written by ``storyeval perturb``.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EPILOG = """\
examples:
  storyeval robustness --scores suite_scores.csv --manifest suite/manifest.csv --out rob/
  storyeval robustness --verdicts judged/verdicts.csv --manifest suite/manifest.csv --out rob/

Outputs (in --out): robustness.csv (measure, kind, n_pairs, n_prompts, discrimination with ties
counted 0.5 and its prompt-clustered 95% interval; for scores the mean change perturbed minus
original, its interval, the two-sided cluster t-test p-value and the share unchanged),
outcomes.csv (one row per pair) and robustness.html (the report section).

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval robustness``."""
    from storyeval.cli import add_raw_csv_option

    p = subparsers.add_parser(
        "robustness", help="discrimination and invariance on a perturbation suite",
        description="Does a measure prefer the original over a perturbed story, and how much "
        "does its score move?", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--scores", type=Path, metavar="FILE",
                     help="a tidy score table (story_id, prompt_id, measure, value)")
    src.add_argument("--verdicts", type=Path, metavar="FILE",
                     help="a pairwise verdict table (story_a, story_b, verdict, judge, ...)")
    p.add_argument("--manifest", type=Path, required=True, metavar="FILE",
                   help="manifest.csv of storyeval perturb")
    p.add_argument("--lower-is-better", default="", metavar="LIST",
                   help="measures for which a lower score is better")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    p.add_argument("--overwrite", action="store_true", help="replace a previous run's files")
    add_raw_csv_option(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Write the robustness table and report section; returns the exit code."""
    from storyeval._atomic import OutputFolder
    from storyeval._csv import write_csv
    from storyeval.data.io import read_table
    from storyeval.exceptions import InputError
    from storyeval.perturb.robustness import (
        check_manifest,
        check_scores,
        robustness_table,
        score_outcomes,
        verdict_outcomes,
    )
    from storyeval.report.generation_report import robustness_html

    manifest, fmt = read_table(args.manifest)
    manifest = check_manifest(manifest, source=str(args.manifest), fmt=fmt)
    if args.scores is not None:
        scores, fmt = read_table(args.scores)
        scores = check_scores(scores, source=str(args.scores), fmt=fmt)
        lower = {m.strip() for m in args.lower_is_better.split(",") if m.strip()}
        outcomes = score_outcomes(scores, manifest, lower_is_better=lower)
    else:
        if args.lower_is_better:
            raise InputError("--lower-is-better goes with --scores (verdicts name the better "
                             "story)")
        verdicts, fmt = read_table(args.verdicts)
        outcomes = verdict_outcomes(verdicts, manifest, source=str(args.verdicts), fmt=fmt)
    table = robustness_table(outcomes)
    with OutputFolder(args.out, overwrite=args.overwrite,
                      command="storyeval robustness") as folder:
        write_csv(table, folder.file("robustness.csv"))
        write_csv(outcomes, folder.file("outcomes.csv"))
        folder.write_text("robustness.html", "<!doctype html><meta charset='utf-8'>"
                          + robustness_html(table) + "\n")
    from storyeval.report.tables import format_table

    sys.stdout.write(format_table(table, "table", digits=3))
    return 0
