"""``storyeval cluster``: cluster texts (e.g. story-prompts) by sentence embeddings -> UMAP ->
k-means, choose the number of clusters by silhouette, and list each cluster's representatives
(`storyeval.explain.cluster`).

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from storyeval.cli.common import add_progress_option, show_progress, stages

EPILOG = """\
examples:
  storyeval cluster --stories prompts.csv --text prompt --id prompt_id --embed --out clusters/
  storyeval cluster --stories prompts.csv --id prompt_id --embeddings emb.csv --k 14 \\
      --per-cluster 2 --out clusters/

Outputs (in --out): clusters.csv (id, cluster), representatives.csv (cluster, rank, id,
distance to the centroid, cluster size, text), silhouette.csv (k, mean silhouette, chosen).
The embeddings (--embeddings FILE: the id column and numeric columns; or --embed: the
offline MiniLM of the explain extra, an SBERT model as in the paper) are reduced with UMAP
(--reduce components, cosine metric; --reduce none: k-means on the unit-length embeddings),
k-means (k-means++ starts, --n-init restarts) runs for each --k (a range 2-15 or a list), and
the k with the highest mean silhouette is kept (the smaller on a tie). Seeded (--seed,
printed). A table without rows, an id given twice, an empty text, a missing, non-finite or
all-zero embedding is an error naming the row.

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval cluster``."""
    from storyeval.cli import add_raw_csv_option

    p = subparsers.add_parser(
        "cluster", help="cluster texts (embeddings -> UMAP -> k-means) and pick representatives",
        description="Cluster texts by their embeddings and list each cluster's "
                    "representatives.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stories", required=True, metavar="FILE",
                   help="a table (CSV/TSV/JSONL/Parquet) with an id and a text column")
    p.add_argument("--text", default="prompt", help="the text column (default prompt)")
    p.add_argument("--id", default="prompt_id", help="the id column (default prompt_id)")
    emb = p.add_mutually_exclusive_group(required=True)
    emb.add_argument("--embeddings", type=Path, metavar="FILE",
                     help="embedding table: the id column and numeric columns")
    emb.add_argument("--embed", action="store_true",
                     help="embed with the offline MiniLM (the explain extra)")
    p.add_argument("--k", default="2-15", metavar="RANGE",
                   help="numbers of clusters to try: 2-15 (default), 14, or 5,8,14")
    p.add_argument("--reduce", default="5", metavar="N",
                   help="UMAP components before k-means (default 5), or none")
    p.add_argument("--neighbors", type=int, default=15, help="UMAP neighbourhood (default 15)")
    p.add_argument("--per-cluster", type=int, default=1,
                   help="representatives per cluster (default 1)")
    p.add_argument("--n-init", type=int, default=10, help="k-means restarts (default 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of UMAP and k-means (default 0)")
    p.add_argument("--out", type=Path, metavar="DIR", help="output folder")
    p.add_argument("--overwrite", action="store_true", help="replace a previous run's files")
    add_progress_option(p)
    add_raw_csv_option(p)
    return p


def _ks(text: str) -> list[int]:
    from storyeval.exceptions import InputError

    try:
        if "-" in text and "," not in text:
            lo, hi = (int(v) for v in text.split("-"))
            return list(range(lo, hi + 1))
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"--k: expected a range (2-15) or integers (5,8,14), got {text!r}") \
            from None


def run(args: argparse.Namespace) -> int:
    """Cluster, print and write; returns the exit code."""
    import pandas as pd

    from storyeval.explain.cluster import cluster_embeddings
    from storyeval.generation.pipeline import stories_with_embeddings
    from storyeval.report.tables import format_table

    stage = stages(args)  # UMAP and k-means take a while: say what runs (on a terminal)
    # --embed: sentence-transformers draws its own bar (no tick of this line over it)
    stage.start("reading the stories and embeddings", bars=args.embed, tick=not args.embed)
    stories, emb, source = stories_with_embeddings(args.stories, text=args.text,
                                                   id_column=args.id,
                                                   embeddings_path=args.embeddings)
    stage.done(f"{len(stories):,} stories")
    reduce_to = None if str(args.reduce).lower() == "none" else int(args.reduce)
    stage.start("reducing and clustering", bars=True)  # a bar over k after the reduction
    res = cluster_embeddings(emb, k=_ks(args.k), reduce_to=reduce_to,
                             n_neighbors=args.neighbors, per_cluster=args.per_cluster,
                             n_init=args.n_init, random_state=args.seed,
                             show_progress=show_progress(args))
    stage.done()
    ids = stories[args.id].astype(str).to_numpy()
    clusters = pd.DataFrame({args.id: ids, "cluster": res.labels})
    reps = res.representatives.assign(**{args.id: ids[res.representatives["row"]],
                                         "text": stories[args.text].astype(str).to_numpy()[
                                             res.representatives["row"]]})
    reps = reps[["cluster", "rank", args.id, "distance", "size", "text"]]
    if args.out is not None:
        from storyeval._atomic import OutputFolder
        from storyeval._csv import write_csv

        with OutputFolder(args.out, overwrite=args.overwrite, command="storyeval cluster") as f:
            write_csv(clusters, f.file("clusters.csv"))
            write_csv(reps, f.file("representatives.csv"))
            write_csv(res.silhouettes, f.file("silhouette.csv"))
    print(f"storyeval cluster: {res.summary()}; embeddings: {source}")
    shown = reps.assign(text=reps["text"].str.slice(0, 60))
    print(format_table(shown, "table", digits=3), end="")
    return 0
