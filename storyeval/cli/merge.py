"""``storyeval merge``: join the outputs of N shards (``--shard K/N`` of ``storyeval score``,
``storyeval rate`` or ``storyeval pairwise judge``) into the output one run writes.

Every shard's file is verified against its sidecar before anything is written (see EPILOG).

Exit codes: 0 ok, 2 usage or input error (a shard missing or given twice, shards of different
runs, settings or inputs, a file that differs from what its sidecar records).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EPILOG = """\
Each shard's output has its metadata beside it (OUT.shard.json, or shard.json in a `rate`
output folder): the shard K/N, the run's settings, fingerprints of the input's ids and of its
texts, the positions of its stories, and each file's header, rows, rows per story (or pair)
and SHA-256.

The merge verifies everything before it writes anything:
  - the shards are 1/N..N/N of one run, each exactly once, with the same settings;
  - the same input: the same ids and the same texts (a shard made from another stories file
    with the same ids is refused);
  - each shard's file is the path given on the command line (a `rate` folder's files and a
    file's companions are read beside the sidecar; a sidecar naming a file elsewhere, such as
    ../x or /x, is refused) and has the header, the rows, the rows of every story of the shard
    and the SHA-256 its sidecar records (a file cut, emptied, extended, edited or replaced
    after the shard wrote it is refused); the shards' headers agree.
Anything else is refused with one line naming the shard's file and what differs (exit code
2), and no output is written. The output is written atomically, in the order of a single run:
`score` and `pairwise judge` files byte for byte; for `rate`, every table of the output
folder (settings.json records the merged shards).

Sidecars of storyeval 0.3 (version 1) record neither the files' SHA-256 nor the input's
texts: they are refused unless --trust-old-sidecars, which merges them with the checks they
allow and says so on standard error; re-running such a shard (from its cache) is safer.

examples:
  for k in 1 2 3; do storyeval score --input stories.csv --metrics fast --shard $k/3 \\
      --out scores.$k.csv; done
  storyeval merge scores.1.csv scores.2.csv scores.3.csv --out scores.csv
  storyeval merge runs/beluga.* --out runs/beluga --overwrite

Exit codes: 0 ok, 2 usage or input error (a shard missing, given twice, of another run or
input, or a file that differs from its sidecar)."""


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
    parser.add_argument("--trust-old-sidecars", action="store_true",
                        help="merge shards of storyeval 0.3 (sidecar version 1, no SHA-256 "
                        "of the files, no fingerprint of the input's texts) with the checks "
                        "they allow, instead of refusing them")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run ``storyeval merge``."""
    from storyeval.data.shards import merge_shard_tables, write_table_raw
    from storyeval.exceptions import InputError

    _check_out_apart(args.out, args.shards)
    infos, tables = merge_shard_tables(args.shards, trust_old_sidecars=args.trust_old_sidecars)
    for info in infos:
        if info.version < 2:
            print(f"storyeval merge: warning: shard {info.shard} ({info.path}) has an old "
                  "sidecar: its files' SHA-256 and input texts are not checked "
                  "(--trust-old-sidecars)", file=sys.stderr)
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


def _check_out_apart(out: Path, shards: list[Path]) -> None:
    """--out must not be one of the shards' outputs (or a sidecar): the merge reads them."""
    from storyeval.data.shards import sidecar_path
    from storyeval.exceptions import InputError

    target = out.resolve()
    for shard in shards:
        if target in (shard.resolve(), sidecar_path(shard).resolve()):
            raise InputError(f"--out {out}: is the shard output {shard} (or its sidecar); "
                             "write the merge elsewhere")
