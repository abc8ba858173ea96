"""``storyeval agreement``: the human annotators' ICC(2,k) and the user-study agreement table.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from storyeval.cli.common import add_format_option, add_out_option

EXTENSIONS = {"table": "txt", "md": "md", "csv": "csv", "latex": "tex", "json": "json"}

ANNOTATOR_COLUMNS = ["criterion", "icc2k", "ci_low", "ci_high", "n_items", "k"]
USER_STUDY_COLUMNS = [
    "display_name", "error_rate", "error_rate_majority", "ac1", "standard_error", "ci_low",
    "ci_high", "n_explanations",
]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval agreement``."""
    parser = subparsers.add_parser(
        "agreement",
        help="inter-annotator agreement: HANNA annotators' ICC(2,k), user-study AC1",
        description="Print the HANNA human annotators' ICC(2,k) per criterion (stories as "
        "items, the three annotators as raters) and the user-study table (error rate and "
        "Gwet's AC1 with its interval per error category).",
        epilog="Exit codes: 0 ok, 2 usage or input error.",
    )
    parser.add_argument("--what", choices=("annotators", "user-study", "all"), default="all",
                        help="which table(s) to compute (default: all)")
    add_format_option(parser)
    add_out_option(parser, "one file per table (annotators.EXT, user_study.EXT) instead of "
                   "printing")
    parser.add_argument("--exclude-human-stories", action="store_true",
                        help="annotator ICC over the 960 generated stories only (default: all "
                        "1,056 stories)")
    parser.add_argument("--confidence-level", type=float, default=0.95,
                        help="level of the intervals (default: 0.95)")
    return parser


def _hanna_wide() -> pd.DataFrame:
    from storyeval.data import load_hanna

    return load_hanna().wide()


def compute_tables(
    what: str, *, exclude_human_stories: bool = False, confidence_level: float = 0.95
) -> dict[str, pd.DataFrame]:
    """The tables ``storyeval agreement`` prints, keyed ``annotators`` / ``user_study``."""
    from storyeval.exceptions import InputError

    if not 0 < confidence_level < 1:
        raise InputError(f"--confidence-level must be in (0, 1), got {confidence_level}")
    tables: dict[str, pd.DataFrame] = {}
    if what in ("annotators", "all"):
        from storyeval.meta.agreement import annotator_icc

        exclude = ["Human"] if exclude_human_stories else []
        tables["annotators"] = annotator_icc(
            _hanna_wide(), exclude_systems=exclude, confidence_level=confidence_level
        )[ANNOTATOR_COLUMNS]
    if what in ("user-study", "all"):
        from storyeval.meta.user_study import user_study_table

        tables["user_study"] = user_study_table(confidence_level=confidence_level)[
            USER_STUDY_COLUMNS
        ].rename(columns={"display_name": "category"})
    return tables


TITLES = {
    "annotators": "HANNA human annotators: ICC(2,k) per criterion",
    "user_study": "User study (Beluga-13B explanations): error rate and Gwet's AC1",
}


def run(args: argparse.Namespace) -> int:
    """Compute and print (or write) the agreement tables; returns the exit code."""
    from storyeval.report.tables import format_table

    tables = compute_tables(
        args.what,
        exclude_human_stories=args.exclude_human_stories,
        confidence_level=args.confidence_level,
    )
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, df in tables.items():
            path = args.out / f"{name}.{EXTENSIONS[args.format]}"
            text = format_table(df, args.format)
            path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
            print(path)
        return 0
    if args.format == "json":
        payload = {name: json.loads(format_table(df, "json")) for name, df in tables.items()}
        payload["confidence_level"] = args.confidence_level
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return 0
    for i, (name, df) in enumerate(tables.items()):
        if args.format in ("table", "md"):
            prefix = "## " if args.format == "md" else ""
            sys.stdout.write(("\n" if i else "") + prefix + TITLES[name] + "\n\n")
        text = format_table(df, args.format)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
