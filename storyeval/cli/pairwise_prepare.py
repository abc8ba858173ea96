"""``storyeval pairwise prepare``: LitBench's curation of preference pairs from upvoted
stories, each filter a named option, and a report of what each filter removed.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EPILOG = """\
input: one row per story: story_id, prompt_id, story, upvotes, timestamp (Unix seconds or a
date), optional prompt and n_tokens (a tokenizer's count; without it tokens are counted by a
regular expression, words and punctuation marks, as the report says).

steps (LitBench's defaults): --min-upvotes 10, --max-tokens 2048, --min-words 50, pairs of
stories of one prompt (chosen = more upvotes), --min-upvote-gap 0.25 ((u_c - u_r) / u_c),
chosen posted later (--no-later-winner to skip), --length-bins 100 (histogram of word
differences pruned to symmetry, seeded; --no-length-debias to skip). 'none' turns a
threshold off.

outputs: --out PAIRS (id, prompt_id, prompt, story_a = chosen, story_b, winner, chosen_story,
rejected_story, upvotes, timestamps, words): a preference file and a LitBench pair file at
once; --report FILE (step, setting, unit, before, removed, after, chosen_longer).

example:
  storyeval pairwise prepare --stories reddit.csv --out pairs.csv --report curation.csv
"""


def _threshold(kind):
    def parse(text: str):
        if text.strip().lower() == "none":
            return None
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number or 'none', got {text!r}")
    return parse


def add_prepare_parser(sub: argparse._SubParsersAction) -> None:
    from storyeval.cli.common import add_format_option

    p = sub.add_parser(
        "prepare", help="LitBench's curation of preference pairs from upvoted stories, with a "
                        "report of what each filter removed",
        description=__doc__.split("\n\n")[0].replace("``", "'"), epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stories", type=Path, required=True, metavar="FILE",
                   help="stories (CSV, TSV, JSONL or Parquet; columns below)")
    p.add_argument("--min-upvotes", type=_threshold(float), default=10.0, metavar="N",
                   help="drop stories with fewer upvotes (default 10; none: off)")
    p.add_argument("--max-tokens", type=_threshold(int), default=2048, metavar="N",
                   help="drop stories with more tokens (default 2048; none: off)")
    p.add_argument("--min-words", type=_threshold(int), default=50, metavar="N",
                   help="drop stories with fewer words (default 50; none: off)")
    p.add_argument("--min-upvote-gap", type=_threshold(float), default=0.25, metavar="SHARE",
                   help="drop pairs with (u_chosen - u_rejected) / u_chosen below SHARE "
                        "(default 0.25; none: off)")
    p.add_argument("--no-later-winner", action="store_true",
                   help="keep pairs whose chosen story was posted first")
    p.add_argument("--length-bins", type=int, default=100, metavar="N",
                   help="buckets of the length-difference histogram (even; default 100)")
    p.add_argument("--no-length-debias", action="store_true",
                   help="keep the length imbalance (no pruning to a symmetric histogram)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the length pruning (default 0; printed)")
    p.add_argument("--out", type=Path, required=True, metavar="PAIRS",
                   help="kept pairs (.csv, .tsv or .jsonl)")
    p.add_argument("--report", type=Path, metavar="FILE", help="the step report as CSV")
    add_format_option(p)


def write_pairs_table(frame, path: Path) -> None:
    """A table as CSV / TSV (storyeval's CSV writer) or JSON lines, replaced atomically."""
    from storyeval._atomic import atomic_path
    from storyeval._csv import write_csv

    suffix = path.suffix.lower()
    with atomic_path(path) as tmp:
        if suffix in (".csv", ".tsv"):
            write_csv(frame, tmp, sep="," if suffix == ".csv" else "\t")
        else:
            frame.to_json(tmp, orient="records", lines=True, force_ascii=False)


def run_prepare(args: argparse.Namespace) -> int:
    from storyeval._atomic import atomic_path, check_out_file
    from storyeval._csv import write_csv
    from storyeval.data.io import read_table
    from storyeval.exceptions import InputError
    from storyeval.pairwise.curation import curate_pairs
    from storyeval.report.tables import format_table

    check_out_file(args.out)
    if args.report is not None:
        check_out_file(args.report, "--report")
    suffix = args.out.suffix.lower()
    if suffix not in (".csv", ".tsv", ".jsonl", ".json"):
        raise InputError(f"--out {str(args.out)!r}: use a .csv, .tsv or .jsonl file")
    frame, fmt = read_table(args.stories)
    res = curate_pairs(frame, min_upvotes=args.min_upvotes, max_tokens=args.max_tokens,
                       min_words=args.min_words, min_upvote_gap=args.min_upvote_gap,
                       later_winner=not args.no_later_winner,
                       length_debias_bins=None if args.no_length_debias else args.length_bins,
                       seed=args.seed, source=str(args.stories), fmt=fmt)
    write_pairs_table(res.pairs, args.out)
    if args.report is not None:
        with atomic_path(args.report) as tmp:
            write_csv(res.report.assign(seed=args.seed), tmp)
    sys.stdout.write(format_table(res.report, args.format, digits=4))
    if args.format in ("table", "md"):
        rep = res.report
        before = rep.loc[rep["step"] == "pairs", "chosen_longer"].iloc[0]
        after = rep["chosen_longer"].iloc[-1]
        print(f"\nkept {len(res.pairs)} pairs in {args.out}; chosen story longer: "
              f"{before:.2%} of the pairs formed -> {after:.2%} kept (pairs of equal length "
              f"left out of the share); random seed {args.seed} (--seed)")
    return 0
