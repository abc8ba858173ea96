"""``storyeval perturb``: seeded perturbed variants of stories, with a manifest.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

EPILOG = """\
examples:
  storyeval perturb --stories hanna --kinds shuffle,repeat,truncate --seed 0 --out suite/
  storyeval score --input suite/stories.csv --metrics fast --out suite_scores.csv
  storyeval robustness --scores suite_scores.csv --manifest suite/manifest.csv --out rob/

Outputs (in --out): stories.csv (originals and variants, the stories format that score, rate
and pairwise judge read; a variant's story_id is ID~KIND, its system SYSTEM~KIND) and
manifest.csv (story_id, original_id, kind, parameters as JSON, seed, changed). One seed gives
byte-identical files.

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval perturb``."""
    from storyeval.cli import add_raw_csv_option
    from storyeval.perturb.kinds import KINDS

    p = subparsers.add_parser(
        "perturb", help="seeded perturbed variants of stories (robustness suites)",
        description="Write seeded perturbations of each story and a manifest.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stories", required=True, metavar="FILE",
                   help="a stories table (story_id, system, prompt_id, prompt, story) or 'hanna'")
    p.add_argument("--kinds", default=",".join(KINDS), metavar="LIST",
                   help=f"comma-separated, of {', '.join(KINDS)} (default: all)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--no-originals", action="store_true",
                   help="write only the variants (default: originals and variants)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    p.add_argument("--overwrite", action="store_true", help="replace a previous run's files")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (also STORYEVAL_NO_PROGRESS=1; none when piped)")
    add_raw_csv_option(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Write the suite; returns the exit code."""
    from storyeval._atomic import OutputFolder
    from storyeval._csv import write_csv
    from storyeval.cli.common import show_progress, stages
    from storyeval.llm.stories import load_stories
    from storyeval.perturb import perturb_stories

    stage = stages(args)  # many stories take a while: say what runs (on a terminal)
    stage.start("reading the stories")
    stories = load_stories(args.stories)
    stage.done(f"{len(stories):,} stories")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    out, manifest = perturb_stories(stories, kinds, seed=args.seed,
                                    include_originals=not args.no_originals,
                                    show_progress=show_progress(args))
    stage.start(f"writing {args.out}")
    with OutputFolder(args.out, overwrite=args.overwrite, command="storyeval perturb") as folder:
        write_csv(out, folder.file("stories.csv"))
        write_csv(manifest, folder.file("manifest.csv"))
    stage.done(f"{len(out):,} rows")
    print(f"storyeval perturb: {len(manifest)} variants of {len(stories)} stories, kinds "
          f"{','.join(kinds)}, seed {args.seed} -> {args.out}")
    return 0
