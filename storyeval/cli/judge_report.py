"""``storyeval judge-report``: may this judge replace my raters? One verdict per criterion and
judge, with the alternative-annotator test, agreement at four levels beside the human baseline
and the sentinels, biases and the human labels the judge is worth.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse

EPILOG = """\
examples:
  storyeval judge-report --judges "Beluga-13B 1,ChatGPT 1"
  storyeval judge-report --judges llm --epsilon 0.15 --out judge/
  storyeval judge-report --data ratings.csv --annotators 'rater_*' --judges 'gpt*' --out judge/

The verdict rule (printed on the page): 'replaces the annotators' when the judge passes the
alternative-annotator test at epsilon and the content-blind system-identity sentinel does not;
'use with PPI and N human labels' when its story-level correlation is positive (interval above
0); 'do not use' otherwise. Its false-pass rate and power: docs page "May this judge replace my
raters?".

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval judge-report``."""
    from storyeval.cli.common import (
        add_data_options,
        add_include_reference_option,
        add_out_option,
        add_progress_option,
    )

    parser = subparsers.add_parser(
        "judge-report", help="may this judge replace the annotators? alt-test, agreement, "
                             "sentinels, biases, PPI and a verdict per criterion",
        description="For each criterion and candidate judge: the alternative-annotator test "
        "(Calderon, Reichart and Dror 2025), agreement with the human criterion at the "
        "overall, system, prompt and within-system levels beside the leave-one-out human "
        "baseline and content-blind sentinels, leniency and length bias, the human labels the "
        "judge is worth (PPI++), and one verdict from a stated rule.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    data = parser.add_argument_group("data")
    add_data_options(data)
    add_include_reference_option(data)
    what = parser.add_argument_group("what to compute")
    what.add_argument("--judges", default="llm", metavar="SPEC",
                      help="candidate judges: rater groups ('Beluga-13B 1'), measures, 'llm', "
                           "globs; comma-separated (default: llm)")
    what.add_argument("--criteria", default="all", metavar="LIST",
                      help="criteria, names or codes (default: all)")
    what.add_argument("--epsilon", type=float, default=0.2,
                      help="alt-test margin on the probability scale (default 0.2: experts; "
                           "0.15 skilled annotators, 0.1 crowd workers)")
    what.add_argument("--q", type=float, default=0.05,
                      help="false discovery rate of Benjamini-Yekutieli over annotators "
                           "(default 0.05)")
    what.add_argument("--scoring", choices=("neg_rmse", "accuracy"), default="neg_rmse",
                      help="alt-test alignment: neg_rmse (numeric ratings, default) or "
                           "accuracy (categorical labels)")
    what.add_argument("--coef", default="kendall_b",
                      choices=["kendall", "kendall_b", "kendall_c", "pearson", "spearman"],
                      help="correlation coefficient of the agreement table (default kendall_b)")
    what.add_argument("--length", default="auto", metavar="MEASURE",
                      help="measure of story length (length sentinel and length bias; "
                           "default: a measure named 'Text length' when there is one; "
                           "'none' to skip)")
    what.add_argument("--ppi-labels", type=int, default=100, metavar="N",
                      help="PPI budget of human labels (default 100)")
    what.add_argument("--own", metavar="JUDGE=SYSTEM", action="append", default=[],
                      help="a judge and a system it owns (its own model, or one of its "
                           "family): its self-preference joins the biases; repeatable")
    what.add_argument("--nan-policy", choices=("raise", "omit"), default="raise",
                      help="a missing judge rating or criterion score: an error (default), or "
                           "omit: leave out the prompts that have one")
    what.add_argument("--power", type=float, default=0.8,
                      help="of the items-to-pass search (default 0.8)")
    inference = parser.add_argument_group("inference")
    inference.add_argument("--confidence-level", type=float, default=0.95)
    inference.add_argument("--n-resamples", type=int, default=500, metavar="N",
                           help="bootstrap resamples (default 500)")
    inference.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the verdict table as JSON")
    out.add_argument("--digits", type=int, default=3, help="decimals shown (default: 3)")
    add_out_option(out, "judge_report.csv (every table) and index.html")
    add_progress_option(out)
    return parser


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from storyeval._progress import no_progress
    from storyeval.cli import RUN_WARNINGS
    from storyeval.cli.common import check_out_args, load_dataset_args, print_written, stages
    from storyeval.judge.page import write_report
    from storyeval.judge.report import verdict_summary
    from storyeval.report.tables import format_table

    check_out_args(args)  # numeric ranges: storyeval.cli.ranges
    stage = stages(args)  # the report's resamples take a while: say what runs (on a terminal)
    dataset = None
    if args.data is not None or args.scores:
        stage.start("reading the data")
        dataset = load_dataset_args(args, criteria=args.criteria)
        stage.done(f"{len(dataset.table):,} stories read")
    stage.start("judge report: alt-test, agreement, biases, PPI")
    with no_progress():  # its parts' bootstrap bars: the stage line speaks for them
        report = _report(dataset, args)
    stage.done()
    table = verdict_summary(report)
    if args.json:
        print(json.dumps({"settings": {k: v for k, v in report.settings.items()},
                          "verdicts": json.loads(table.to_json(orient="records"))}, indent=2,
                         default=str))
    else:
        print(f"epsilon {args.epsilon}, q {args.q}; rule: {report.settings['rule']}\n")
        print(format_table(table, "table", digits=args.digits))
    if args.out is not None:
        stage.start(f"writing {args.out}")
        paths = write_report(report, args.out, overwrite=args.overwrite,
                             warnings_seen=RUN_WARNINGS)
        stage.done()
        print_written(paths, args.out) if not args.json else print(
            f"wrote {len(paths)} files to {args.out}", file=sys.stderr)
    return 0


def _report(dataset, args: argparse.Namespace):
    """`storyeval.judge.report.judge_report` with the command's options."""
    from storyeval.cli.bias import _own_arg
    from storyeval.judge.report import judge_report

    return judge_report(
        dataset, judges=args.judges, criteria=args.criteria, epsilon=args.epsilon, q=args.q,
        scoring=args.scoring, method=args.coef,
        include_human_stories=args.include_human_stories,
        length=None if args.length == "none" else args.length,
        confidence_level=args.confidence_level, n_resamples=args.n_resamples,
        ppi_labels=args.ppi_labels, power=args.power, own=_own_arg(args.own) or None,
        nan_policy=args.nan_policy, random_state=args.seed)
