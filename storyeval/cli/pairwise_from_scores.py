"""storyeval pairwise from-scores: per-story ratings or scores turned into side-by-side verdicts.

    storyeval pairwise from-scores [--data FILE] [--scores FILE ...]
                                   (--metrics SPEC | --humans) [--criteria LIST]
                                   [--tie-margin X] --out VERDICTS.csv

Within each prompt, every pair of systems gets one verdict per judge and criterion: the story
scored higher wins, scores within ``--tie-margin`` of each other are ``same``
(`storyeval.pairwise.from_scores.verdicts_from_scores`). The file is a verdict file that
``pairwise strengths``, ``accuracy``, ``compare``, ``ranking`` and ``bias`` read: ``--humans``
writes the reference (one judge per annotator), ``--metrics`` the judges (one per measure or
LLM rater group), each criterion a ``dimension``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from storyeval.cli.common import add_data_options, add_include_reference_option

if TYPE_CHECKING:
    import pandas as pd

    from storyeval.data import Dataset

DESCRIPTION = __doc__.split("\n\n", 1)[0] + "\n\n" + __doc__.split("\n\n", 2)[2]

EPILOG = """\
examples:
  storyeval pairwise from-scores --humans --criteria RE --out humans.csv
  storyeval pairwise from-scores --metrics "BLEU,Beluga-13B 1" --criteria RE --out judges.csv
  storyeval pairwise accuracy judges.csv --reference humans.csv

exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from storyeval.cli import add_raw_csv_option

    p = sub.add_parser("from-scores", help="turn per-story ratings or scores into side-by-side "
                                           "verdicts (a verdict file)",
                       description=DESCRIPTION, epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    data = p.add_argument_group("data")
    add_data_options(data)
    add_include_reference_option(data)
    what = p.add_argument_group("what to turn into verdicts")
    who = what.add_mutually_exclusive_group(required=True)
    who.add_argument("--metrics", metavar="SPEC",
                     help="measures, as in `storyeval meta --metrics` (all, llm, non-llm, a "
                          "family, LLM rater groups such as 'Beluga-13B 1', names or globs): "
                          "one judge per measure (an LLM rater group: its criterion-matched "
                          "rating per criterion)")
    who.add_argument("--humans", action="store_true",
                     help="the human ratings: one judge per annotator ('annotator ID'), or the "
                          "criterion's per-story score (judge 'humans') where the data hold no "
                          "annotator columns; the reference of `pairwise accuracy`")
    what.add_argument("--criteria", default="all", metavar="LIST",
                      help="comma-separated criteria or codes, each one verdict dimension "
                           "(default: all of the dataset's)")
    what.add_argument("--tie-margin", type=float, default=0.0, metavar="X",
                      help="scores that differ by at most X are a tie ('same'; default 0: only "
                           "equal scores)")
    p.add_argument("--out", type=Path, required=True, metavar="VERDICTS.csv",
                   help="the verdict file (CSV, written atomically)")
    add_raw_csv_option(p)
    return p


def _metric_judges(dataset: Dataset, spec: str, criteria: list[str]
                   ) -> list[tuple[str, str, str]]:
    """(column, judge label, criterion) per verdict set: a measure paired with a criterion as
    `storyeval meta` pairs them, labelled by its rater group (an LLM's model and Eval-Prompt,
    a metric's display name)."""
    from storyeval.data.selection import criterion_pairs, select_measures

    cat = dataset.catalogue
    pairs = criterion_pairs(cat, select_measures(cat, spec, presets=dataset.presets), criteria)
    info = cat.set_index("measure")
    label = {m: (info.at[m, "rater"] if info.at[m, "kind"] == "llm_rater"
                 else info.at[m, "display_name"]) for m in set(pairs["measure"])}
    return [(m, str(label[m]), c) for m, c in zip(pairs["measure"], pairs["criterion"])]


def _human_judges(dataset: Dataset, criteria: list[str]) -> list[tuple[str, str, str]]:
    """(column, judge label, criterion): each annotator of a criterion, else the criterion's
    per-story score (the mean of its annotators, or the only human score of the data)."""
    from storyeval.exceptions import InputError

    cat = dataset.catalogue
    out = []
    for criterion in criteria:
        raters = cat[(cat["kind"] == "annotator") & (cat["criterion"] == criterion)]
        if len(raters):
            out += [(m, f"annotator {a}", criterion)
                    for m, a in zip(raters["measure"], raters["annotator"])]
        elif (cat["measure"] == criterion).any():
            out.append((criterion, "humans", criterion))
        else:
            raise InputError(f"--humans: the data hold no human ratings of {criterion!r}")
    return out


def verdict_table(dataset: Dataset, judges: list[tuple[str, str, str]], tie_margin: float
                  ) -> tuple[pd.DataFrame, int]:
    """The verdicts of every (column, judge, criterion), and the number of pairs left out
    because a story of the pair has no score."""
    import pandas as pd

    from storyeval.exceptions import InputError
    from storyeval.pairwise.from_scores import verdicts_from_scores

    wide = dataset.wide()
    prompts = wide.index.get_level_values(1)
    n_pairs = int(sum(k * (k - 1) // 2 for k in pd.Series(prompts).value_counts()))
    parts, missing = [], 0
    for column, judge, criterion in judges:
        part = verdicts_from_scores(wide, column, judge=judge, dimension=criterion,
                                    tie_margin=tie_margin)
        missing += n_pairs - len(part)
        parts.append(part)
    table = pd.concat(parts, ignore_index=True)
    keys = table[["prompt_id", "story_a", "story_b", "dimension", "judge"]]
    if keys.duplicated().any():  # two columns with one label (e.g. two measures' names)
        row = table[keys.duplicated(keep=False)].iloc[0]
        raise InputError(f"two score columns give judge {row['judge']!r} verdicts on "
                         f"{row['story_a']} vs {row['story_b']} ({row['dimension']}); choose "
                         "measures whose names differ")
    return table, missing


def run(args: argparse.Namespace) -> int:
    from storyeval._atomic import atomic_path, check_out_file
    from storyeval._csv import write_csv
    from storyeval.cli.common import load_dataset_args
    from storyeval.data.selection import select_criteria
    from storyeval.exceptions import InputError

    check_out_file(args.out)
    if args.out.suffix.lower() not in (".csv", ""):
        raise InputError(f"--out {args.out}: the verdict file is CSV; name it *.csv")
    dataset = load_dataset_args(args, criteria=args.criteria)
    ref = dataset.reference_system
    if not args.include_human_stories and ref in dataset.systems:  # as `pairwise pointwise`
        if set(dataset.systems) == {ref}:
            raise InputError(f"the data hold only the stories of the reference system {ref!r}, "
                             "left out by default; pass --include-human-stories to use them")
        dataset = dataset.select_systems(exclude=[ref])
    criteria = select_criteria(dataset, args.criteria)
    judges = (_human_judges(dataset, criteria) if args.humans
              else _metric_judges(dataset, args.metrics, criteria))
    if not judges:
        raise InputError("nothing to turn into verdicts: --metrics selects no measure of the "
                         f"criteria {criteria}")
    table, missing = verdict_table(dataset, judges, args.tie_margin)
    if table.empty:
        raise InputError("no pair of stories of one prompt has two scores: no verdict to "
                         "write")
    with atomic_path(args.out) as tmp:
        write_csv(table, tmp)
    counts = table["verdict"].value_counts()
    print(f"wrote {len(table):,} verdicts to {args.out}: {table['judge'].nunique()} judge(s) x "
          f"{table['dimension'].nunique()} dimension(s) over {table['prompt_id'].nunique()} "
          f"prompts; A {counts.get('A', 0):,}, B {counts.get('B', 0):,}, same "
          f"{counts.get('same', 0):,} (tie margin {args.tie_margin:g})"
          + (f"; {missing:,} pairs left out: a story without a score" if missing else ""),
          file=sys.stderr)
    return 0
