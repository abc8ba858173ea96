"""``storyeval describe``: what storyeval understood of a dataset, before computing anything.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import sys

from storyeval.cli.common import add_data_options, load_dataset_args

EPILOG = """\
examples:
  storyeval describe
  storyeval describe --data ratings.csv --scores bleu.csv --scores mine.csv
  storyeval describe --data wide.csv --id system=model,prompt_id=item --criteria Overall \\
      --annotators 'rater_*'

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval describe``."""
    parser = subparsers.add_parser(
        "describe", help="summary of a dataset: systems, prompts, criteria, annotators, measures",
        description="Read a dataset with the same options as `storyeval meta` and print what "
        "was understood: systems, prompts and their balance, the human criteria with their "
        "annotators, the automatic measures, missing cells, and how per-story human scores are "
        "computed.", epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_options(parser)
    parser.add_argument("--criteria", default="all", metavar="LIST",
                        help="for a wide or long score table: the columns holding human "
                             "criteria")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    return parser


def run(args: argparse.Namespace) -> int:
    """Print the summary; returns the exit code."""
    from storyeval.data.summary import describe_dataset, format_summary

    summary = describe_dataset(load_dataset_args(args, criteria=args.criteria))
    if args.json:
        sys.stdout.write(json.dumps(summary, indent=1, ensure_ascii=False, default=str) + "\n")
    else:
        sys.stdout.write(format_summary(summary))
    return 0
