"""``storyeval merge``: join the outputs of N shards (``--shard K/N`` of ``storyeval score``,
``storyeval rate`` or ``storyeval pairwise judge``) into the output one run writes.

Exit codes: 0 ok, 2 usage or input error (a shard missing or given twice, shards of different
runs or settings).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EPILOG = """\
Each shard's output has its metadata beside it (OUT.shard.json, or shard.json in a `rate`
output folder): the shard K/N, the run's settings and the positions of its stories. The merge
checks that the shards are 1/N..N/N of one run with the same settings, each exactly once, and
writes the rows in the order of a single run: `score` and `pairwise judge` files byte for
byte; for `rate`, every table of the output folder (settings.json records the merged shards).

examples:
  for k in 1 2 3; do storyeval score --input stories.csv --metrics fast --shard $k/3 \\
      --out scores.$k.csv; done
  storyeval merge scores.1.csv scores.2.csv scores.3.csv --out scores.csv
  storyeval merge runs/beluga.* --out runs/beluga --overwrite

Exit codes: 0 ok, 2 usage or input error."""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval merge``."""
    parser = subparsers.add_parser(
        "merge", help="join the outputs of --shard K/N runs into the output of one run",
        description="Join the outputs of N shards of `storyeval score`, `storyeval rate` or "
        "`storyeval pairwise judge` (--shard K/N) into the output one run writes.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shards", nargs="+", type=Path, metavar="SHARD_OUTPUT",
                        help="the shards' --out files (or `rate` output folders)")
    parser.add_argument("--out", type=Path, required=True, metavar="PATH",
                        help="merged output: a file of the shards' format (score, pairwise "
                        "judge) or a folder (rate)")
    parser.add_argument("--overwrite", action="store_true",
                        help="rate: accept an --out folder that already holds files")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run ``storyeval merge``."""
    from storyeval.data.shards import merge_shard_tables, write_table_raw
    from storyeval.exceptions import InputError

    infos, tables = merge_shard_tables(args.shards)
    command = infos[0].command
    if command == "rate":
        from storyeval.cli.rate import write_merged

        write_merged(args.out, tables, infos, overwrite=args.overwrite)
    else:
        from storyeval._atomic import check_out_file

        fmt = tables[next(iter(tables))][1]
        if _format(args.out) != fmt:
            raise InputError(f"--out {args.out}: the shards are {fmt} files; give --out a "
                             f"{fmt} suffix")
        check_out_file(args.out)
        for role, (table, fmt) in tables.items():
            path = args.out if role == "main" else args.out.with_name(
                f"{args.out.stem}.{role}{args.out.suffix}")
            if role == "main" and command == "pairwise judge" and len(table) == 0:
                print("storyeval merge: warning: no usable verdict; the verdict file is not "
                      "written", file=sys.stderr)
                continue
            write_table_raw(table, path, fmt)
    n_rows = sum(len(t) for t, _ in tables.values())
    print(f"storyeval merge: {len(infos)} shards of `storyeval {command}` "
          f"({infos[0].total} {'pairs' if command == 'pairwise judge' else 'stories'}), "
          f"{n_rows} rows to {args.out}", file=sys.stderr)
    return 0


def _format(path: Path) -> str | None:
    return {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl",
            ".parquet": "parquet", ".pq": "parquet"}.get(path.suffix.lower())
