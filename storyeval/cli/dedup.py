"""``storyeval dedup``: drop near-duplicate texts (embedding cosine above a threshold), stating
for each removed row the kept row it duplicates (`storyeval.generation.dedup`).

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from storyeval.cli.common import add_progress_option, stages

EPILOG = """\
examples:
  storyeval dedup --stories poems.csv --text poem --id id --embed --out dedup/
  storyeval dedup --stories poems.csv --id id --embeddings emb.csv --threshold 0.7 --out dedup/

Outputs (in --out): kept.csv (the input rows kept, in input order, every column), removed.csv
(id, duplicate_of, cosine: with --keep first, the kept row with the highest cosine; with
--keep none, the most similar row). --keep first (default): of a pair with cosine >
--threshold the earlier row is kept (a greedy pass in input order: sort the table by priority
first); --keep none: both rows of every such pair are removed. Rows are compared in blocks of
--block-size (memory block x n floats). Embeddings: --embeddings FILE (an id column and
numeric columns) or --embed (the offline MiniLM of the explain extra: all-MiniLM-L6-v2, an
SBERT model as in the poetry paper, which used cosine > 0.7). A table without rows, an id
given twice, an empty text, a missing, non-finite or all-zero embedding is an error naming
the row.

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval dedup``."""
    from storyeval.cli import add_raw_csv_option

    p = subparsers.add_parser(
        "dedup", help="near-duplicate filtering by embedding cosine (> 0.7 by default)",
        description="Drop near-duplicate texts: embedding cosine above a threshold.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stories", required=True, metavar="FILE",
                   help="a table (CSV/TSV/JSONL/Parquet) with an id and a text column")
    p.add_argument("--text", default="story", help="the text column (default story)")
    p.add_argument("--id", default="story_id", help="the id column (default story_id)")
    emb = p.add_mutually_exclusive_group(required=True)
    emb.add_argument("--embeddings", type=Path, metavar="FILE",
                     help="embedding table: the id column and numeric columns")
    emb.add_argument("--embed", action="store_true",
                     help="embed with the offline MiniLM (the explain extra)")
    p.add_argument("--threshold", type=float, default=0.7,
                   help="a pair with cosine above it is a near-duplicate (default 0.7)")
    p.add_argument("--keep", choices=("first", "none"), default="first",
                   help="first: keep the earlier row of a pair (default); none: drop both")
    p.add_argument("--block-size", type=int, default=2048, help="rows compared at once")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    p.add_argument("--overwrite", action="store_true", help="replace a previous run's files")
    add_raw_csv_option(p)
    add_progress_option(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Filter and write; returns the exit code."""
    from storyeval._atomic import OutputFolder
    from storyeval._csv import write_csv
    from storyeval.generation.dedup import near_duplicates
    from storyeval.generation.pipeline import stories_with_embeddings

    stage = stages(args)  # many stories take a while: say what runs (on a terminal)
    # --embed: sentence-transformers draws its own bar (no tick of this line over it)
    stage.start("reading the stories and embeddings", bars=args.embed, tick=not args.embed)
    stories, emb, source = stories_with_embeddings(args.stories, text=args.text,
                                                   id_column=args.id,
                                                   embeddings_path=args.embeddings)
    stage.done(f"{len(stories):,} stories")
    stage.start("comparing embeddings")
    res = near_duplicates(emb, threshold=args.threshold, keep=args.keep,
                          block_size=args.block_size)
    stage.done()
    ids = stories[args.id].astype(str).to_numpy()
    removed = res.removed.assign(id=ids[res.removed["row"].to_numpy()],
                                 duplicate_of=ids[res.removed["duplicate_of"].to_numpy()])
    removed = removed[["id", "duplicate_of", "cosine"]].rename(columns={"id": args.id})
    with OutputFolder(args.out, overwrite=args.overwrite, command="storyeval dedup") as f:
        write_csv(stories[res.keep], f.file("kept.csv"))
        write_csv(removed, f.file("removed.csv"))
    print(f"storyeval dedup: {res.summary()}; embeddings: {source}")
    return 0
