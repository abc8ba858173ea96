"""``storyeval diversity``: distinct-n, corpus novelty-n, in/out-group embedding similarity and
log-odds keyness per group x time (x run), with the SD across runs and plots over time.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

EPILOG = """\
examples:
  storyeval diversity --stories hanna --group system --out div/
  storyeval diversity --stories poems.csv --group agent --time iteration --run run \\
      --corpus train.txt --embeddings emb.csv --out div/

Outputs (in --out): diversity.csv (one row per cell and statistic: distinct_n, novelty_n with
--corpus), spread.csv (mean and SD over --run), similarity.csv (per time: in-group and out-group
mean pairwise cosine, permutation p-value, seed), keyness.csv (each group against the others:
log-odds with an informative Dirichlet prior, z, p, p_adjusted: Benjamini-Hochberg over all the
words of that comparison, stated in its family column), over_time.png with --time.
The corpus is read line by line into sorted 64-bit n-gram hashes on disk (--chunk bounds the
memory); a false match has probability at most M * N / 2^64. Each story is tokenised once
(progress bar on a terminal); memory: the table as read plus 4 bytes per word, and 24 bytes
per word at the peak (10^6 stories of 40 words, a 166 MB CSV: 2.5 GB resident at the peak).
A story id (--id) given twice, a row given twice, a header-only table, an empty text and a
non-finite embedding are errors naming the row.

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval diversity``."""
    from storyeval.cli import add_raw_csv_option

    p = subparsers.add_parser(
        "diversity", help="distinct-n, corpus novelty, group similarity, keyness, run SD",
        description="Generation-side statistics of a set of stories.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stories", required=True, metavar="FILE",
                   help="a table with a text column, or 'hanna' (its 672 stories)")
    p.add_argument("--text", default="story", help="the text column (default story)")
    p.add_argument("--group", default="system", help="the group column (default system)")
    p.add_argument("--time", default=None, help="optional time column (iteration)")
    p.add_argument("--run", default=None, help="optional run column (SD across runs)")
    p.add_argument("--orders", default="1,2", metavar="LIST", help="n-gram orders (default 1,2)")
    p.add_argument("--corpus", type=Path, action="append", default=[], metavar="FILE",
                   help="UTF-8 corpus file, one text per line (repeatable)")
    p.add_argument("--corpus-group", default=None, metavar="NAME",
                   help="use the stories of this group as the corpus (e.g. Human)")
    p.add_argument("--chunk", type=int, default=2 ** 23,
                   help="n-gram hashes held in memory per order (default 2^23)")
    emb = p.add_mutually_exclusive_group()
    emb.add_argument("--embeddings", type=Path, metavar="FILE",
                     help="embedding table: an id column (--id) and numeric columns")
    emb.add_argument("--embed", action="store_true",
                     help="embed with the offline MiniLM (the explain extra)")
    p.add_argument("--id", default="story_id", help="id column of stories and embeddings")
    p.add_argument("--permutations", type=int, default=999, help="label permutations (999)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    p.add_argument("--overwrite", action="store_true", help="replace a previous run's files")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (also STORYEVAL_NO_PROGRESS=1; none when piped)")
    add_raw_csv_option(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Compute and write the statistics; returns the exit code."""
    from storyeval._atomic import OutputFolder
    from storyeval._csv import write_csv
    from storyeval.cli.common import show_progress, stages
    from storyeval.data.io import read_table
    from storyeval.exceptions import InputError
    from storyeval.generation.pipeline import (
        align_embeddings,
        check_stories,
        diversity_statistics,
        embed_stories,
    )
    from storyeval.report.generation_report import plot_over_time

    stage = stages(args)  # many stories take a while: say what runs (on a terminal)
    stage.start("reading the stories")
    if str(args.stories).lower() == "hanna":
        from storyeval.data.hanna import load_hanna_stories

        stories = load_hanna_stories()
        fmt = None
    else:
        stories, fmt = read_table(args.stories)
    stage.done(f"{len(stories):,} stories")
    stories = stories.reset_index(drop=True)
    check_stories(stories, text=args.text, id_column=args.id,
                  columns=(args.group, args.time, args.run), source=str(args.stories), fmt=fmt)
    try:
        orders = [int(x) for x in args.orders.split(",") if x.strip()]
    except ValueError as exc:
        raise InputError(f"--orders: expected integers, got {args.orders!r}") from exc
    corpus_texts = None
    if args.corpus_group is not None:
        mask = stories[args.group].astype(str) == args.corpus_group
        if not mask.any():
            raise InputError(f"--corpus-group: no story of group {args.corpus_group!r}")
        corpus_texts = stories.loc[mask, args.text].astype(str).tolist()
        stories = stories[~mask].reset_index(drop=True)
    emb = None
    if args.embeddings is not None:
        table, _ = read_table(args.embeddings)
        emb = align_embeddings(stories, table, id_column=args.id, source=str(args.embeddings))
    elif args.embed:
        emb = embed_stories(stories[args.text].astype(str).tolist())
    res = diversity_statistics(
        stories, text=args.text, group=args.group, time=args.time, run=args.run, orders=orders,
        corpus_files=args.corpus, corpus_texts=corpus_texts, chunk_ngrams=args.chunk,
        embeddings=emb, n_permutations=args.permutations, random_state=args.seed,
        show_progress=show_progress(args))
    stage.start(f"writing {args.out}")
    with OutputFolder(args.out, overwrite=args.overwrite, command="storyeval diversity") as f:
        for name, table in res.items():
            write_csv(table, f.file(f"{name}.csv"))
        if args.time:
            spread = res.get("spread")
            if spread is None:
                spread = res["diversity"].rename(columns={"value": "mean"})
            plot_over_time(spread, f.file("over_time.png"), group=args.group, time=args.time)
    stage.done()
    div = res["diversity"]
    print(f"storyeval diversity: {len(stories)} stories, orders {orders}, seed {args.seed}")
    from storyeval.report.tables import format_table

    print(format_table(div, "table", digits=4), end="")
    return 0
