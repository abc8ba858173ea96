"""storyeval pairwise: pairwise judging (win matrices, Bradley-Terry strengths, position
consistency, judge accuracy), pairwise accuracy of pointwise measures, and the side-by-side
judging prompt.

Sub-commands::

    storyeval pairwise matrix VERDICTS [--dimension D] [--by system|story] [--judge J]
    storyeval pairwise strengths VERDICTS [--dimension D] [--ties davidson|half|drop]
                                          [--resamples 1000] [--confidence-level 0.95] [--seed N]
    storyeval pairwise consistency VERDICTS
    storyeval pairwise accuracy VERDICTS --reference HUMAN_VERDICTS [--tie-credit 0]
    storyeval pairwise pointwise [--data FILE] [--measures LIST] [--criteria LIST]
                                 [--human-ties exclude|include] [--tie-credit 0.5]
    storyeval pairwise template --prompt FILE --story-a FILE --story-b FILE [--dimensions LIST]

Verdict files: CSV, TSV or JSON lines with ``prompt_id, story_a, story_b, dimension, verdict
(A/B/same), order (AB/BA)`` and optional ``judge``, ``system_a``, ``system_b``
(see :mod:`storyeval.pairwise.verdicts`). Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from storyeval.cli.common import add_format_option

_ACTIONS = ("matrix", "strengths", "consistency", "accuracy", "pointwise", "template")


def _split(text: str | None) -> list[str] | None:
    if text is None or text.strip().lower() == "all":
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "pairwise", help="pairwise judging: win matrices, Bradley-Terry, judge accuracy",
        description=__doc__.split("\n\n")[0],
        epilog="Exit codes: 0 ok, 2 usage or input error.")
    sub = parser.add_subparsers(dest="pairwise_action", metavar="ACTION")

    def verdict_parser(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        p.add_argument("verdicts", type=Path, metavar="VERDICTS",
                       help="verdict file (.csv, .tsv, .jsonl)")
        p.add_argument("--position-verdicts", action="store_true",
                       help="the verdict column names screen positions (A = shown first) "
                            "rather than story_a / story_b")
        add_format_option(p)
        p.add_argument("--digits", type=int, default=3, help="decimals shown (default: 3)")
        return p

    p = verdict_parser("matrix", "win / loss / tie counts per pair of items")
    p.add_argument("--dimension", help="dimension (needed when the file holds several)")
    p.add_argument("--by", choices=["system", "story"], default="system")
    p.add_argument("--judge", help="keep one judge's verdicts (default: all)")

    p = verdict_parser("strengths", "Bradley-Terry strengths with bootstrap CIs over prompts")
    p.add_argument("--dimension", help="dimension (needed when the file holds several)")
    p.add_argument("--by", choices=["system", "story"], default="system")
    p.add_argument("--judge", help="keep one judge's verdicts (default: all)")
    p.add_argument("--ties", choices=["davidson", "half", "drop"], default="davidson",
                   help="how ties enter: Davidson's tie model (default), half a win each, or "
                        "dropped")
    p.add_argument("--regularization", type=float, default=0.0,
                   help="ridge penalty on log-strengths (default 0: plain MLE)")
    p.add_argument("--resamples", type=int, default=1000,
                   help="bootstrap resamples of prompts (0: no interval; default 1000)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=None, help="random seed of the bootstrap")

    verdict_parser("consistency", "position consistency and first-position win rate")

    p = verdict_parser("accuracy", "judge accuracy against human verdicts (both orders averaged)")
    p.add_argument("--reference", type=Path, required=True, metavar="FILE",
                   help="human verdict file on the same pairs")
    p.add_argument("--judge", help="keep one judge (default: one row per judge)")
    p.add_argument("--dimension", help="keep one dimension (default: one row per dimension)")
    p.add_argument("--tie-credit", type=float, default=0.0,
                   help="credit for a judge's 'same' on a human-decided pair (default 0)")

    p = sub.add_parser("pointwise", help="pairwise accuracy of pointwise measures (all story "
                                         "pairs of each prompt)")
    p.add_argument("--data", type=Path, metavar="FILE",
                   help="score table (default: embedded HANNA, generation systems only)")
    p.add_argument("--include-human-stories", action="store_true",
                   help="HANNA: keep the human-written stories (left out by default)")
    p.add_argument("--measures", default="all", metavar="LIST",
                   help="comma-separated measures or LLM rater groups (e.g. 'Beluga-13B 1', "
                        "resolved to the criterion-matched rating); default: every metric and "
                        "LLM rater group")
    p.add_argument("--criteria", default="all", metavar="LIST",
                   help="comma-separated criteria or codes (default: all six)")
    p.add_argument("--human-ties", choices=["exclude", "include"], default="exclude")
    p.add_argument("--tie-credit", type=float, default=0.5,
                   help="credit for a measure tie on a human-decided pair (default 0.5)")
    add_format_option(p)
    p.add_argument("--digits", type=int, default=3, help="decimals shown (default: 3)")

    p = sub.add_parser("template", help="print the side-by-side judging prompt for one pair")
    p.add_argument("--prompt", type=Path, required=True, metavar="FILE",
                   help="file with the writing prompt")
    p.add_argument("--story-a", type=Path, required=True, metavar="FILE")
    p.add_argument("--story-b", type=Path, required=True, metavar="FILE")
    p.add_argument("--dimensions", metavar="LIST",
                   help="comma-separated dimensions (default: Plot, Creativity, Development, "
                        "Language Use)")
    p.add_argument("--no-overall", action="store_true", help="do not ask for an overall line")
    p.add_argument("--template", type=Path, metavar="FILE", help="a replacement template file")
    parser.set_defaults(_pairwise_parser=parser)
    return parser


def _read(path: Path) -> str:
    from storyeval.exceptions import InputError

    if not path.exists():
        raise InputError(f"file not found: {path}")
    return path.read_text(encoding="utf-8")


def _pointwise_pairs(dataset, measures: list[str] | None, criteria: list[str] | None):
    from storyeval.data import CRITERIA, resolve_criterion
    from storyeval.exceptions import InputError

    cat = dataset.catalogue
    crits = list(CRITERIA) if criteria is None else [resolve_criterion(c) for c in criteria]
    if measures is None:
        metrics = cat.loc[cat["kind"] == "metric", "measure"].tolist()
        groups = cat.loc[(cat["kind"] == "llm_rater") & cat["criterion"].isin(CRITERIA),
                         "rater"].drop_duplicates().tolist()
        measures = metrics + groups
    pairs = []
    for m in measures:
        rows = cat[cat["rater"] == m]
        if rows.empty:
            raise InputError(f"unknown measure or rater group {m!r}")
        for c in crits:
            if len(rows) == 1 and rows.iloc[0]["measure"] == m and \
                    rows.iloc[0]["kind"] != "llm_rater":
                pairs.append((m, c))
                continue
            match = rows[rows["criterion"] == c]
            if match.empty:
                raise InputError(f"rater group {m!r} has no rating for criterion {c!r}")
            pairs.append((str(match.iloc[0]["measure"]), c))
    return pairs


def run(args: argparse.Namespace) -> int:
    from storyeval.exceptions import InputError
    from storyeval.report.tables import format_table

    action = getattr(args, "pairwise_action", None)
    if action is None:
        args._pairwise_parser.print_help()
        return 2
    if action == "template":
        from storyeval.pairwise import render_side_by_side

        text = render_side_by_side(_read(args.prompt), _read(args.story_a), _read(args.story_b),
                                   dimensions=_split(args.dimensions),
                                   overall=not args.no_overall, template=args.template)
        sys.stdout.write(text)
        return 0
    if action == "pointwise":
        from storyeval.cli.common import load_dataset_arg
        from storyeval.pairwise import pointwise_pairwise_accuracy

        dataset = load_dataset_arg(args.data, None)
        if args.data is None and not args.include_human_stories:
            dataset = dataset.select_systems(exclude=["Human"])
        pairs = _pointwise_pairs(dataset, _split(args.measures), _split(args.criteria))
        result = pointwise_pairwise_accuracy(dataset.wide(), pairs, human_ties=args.human_ties,
                                             tie_credit=args.tie_credit)
        sys.stdout.write(format_table(result, args.format, digits=args.digits))
        return 0

    from storyeval import pairwise as pw

    refers = "position" if args.position_verdicts else "story"
    verdicts = pw.read_verdicts(args.verdicts, verdict_refers_to=refers)
    if action == "matrix":
        result = pw.win_matrix(verdicts, dimension=args.dimension, by=args.by,
                               judge=args.judge).to_frame()
    elif action == "strengths":
        if args.resamples < 0:
            raise InputError("--resamples must be >= 0")
        result = pw.bradley_terry(verdicts, dimension=args.dimension, by=args.by,
                                  judge=args.judge, ties=args.ties,
                                  regularization=args.regularization,
                                  n_resamples=args.resamples,
                                  confidence_level=args.confidence_level,
                                  random_state=args.seed)
    elif action == "consistency":
        result = pw.position_consistency(verdicts)
    else:  # accuracy
        reference = pw.read_verdicts(args.reference)
        result = pw.judge_accuracy(verdicts, reference, judge=args.judge,
                                   dimension=args.dimension, tie_credit=args.tie_credit)
    sys.stdout.write(format_table(result, args.format, digits=args.digits))
    return 0
