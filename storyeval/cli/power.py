"""``storyeval power``: how many stories (or systems) a comparison of two measures needs.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import sys

from storyeval.cli.common import add_data_options, add_out_option, check_out_args

EPILOG = """\
examples:
  storyeval power --r-human 0.45,0.35 --r-between 0.6
  storyeval power --r-human 0.45 --delta 0.05 --r-between 0.6 --coef pearson --n 100,400,1600
  storyeval power --level system --r-human 0.6,0.4 --r-between 0.7 --prompts 100
  storyeval power --data pilot.csv --measures mine,bleu --criterion Overall --delta 0.05 \\
      --out plan/

Assumed mode (--r-human, --r-between) or pilot mode (--measures A,B --criterion C on --data,
default the embedded HANNA data). Every power is the share of simulated replications whose
two-sided test has p < alpha, with its Monte Carlo standard error (mc_se).

Exit codes: 0 ok, 2 usage or input error.
"""


def _floats(text: str | None, option: str) -> list[float] | None:
    from storyeval.exceptions import InputError

    if text is None:
        return None
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"{option} takes comma-separated numbers, not {text!r}") from None


def _ints(text: str | None, option: str) -> list[int] | None:
    from storyeval.exceptions import InputError

    values = _floats(text, option)
    if values is None:
        return None
    if not values or any(v != int(v) for v in values):
        raise InputError(f"{option} takes comma-separated whole numbers, not {text!r}")
    return [int(v) for v in values]


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval power``."""
    parser = subparsers.add_parser(
        "power", help="plan a human evaluation: stories (or systems) needed to detect a "
                      "difference between two measures, by simulation",
        description="Power of the comparison test of two measures' correlations with a human "
        "criterion, by simulation, for a grid of sizes; prints the smallest size reaching the "
        "target power. Correlations are assumed (--r-human, --r-between) or estimated from "
        "pilot data (--measures A,B --criterion C).", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    assumed = parser.add_argument_group("assumed correlations")
    assumed.add_argument("--r-human", metavar="A[,B]",
                         help="r(h, a)[, r(h, b)]: the measures' correlations with the human "
                              "score, in the coefficient's units (one value needs --delta)")
    assumed.add_argument("--r-between", type=float, metavar="R",
                         help="r(a, b): the correlation between the two measures")
    pilot = parser.add_argument_group("pilot data (--measures A,B names the two measures)")
    add_data_options(pilot)
    pilot.add_argument("--criterion", metavar="NAME",
                       help="the human criterion of the pilot data (name or code)")
    plan = parser.add_argument_group("plan")
    plan.add_argument("--delta", type=float,
                      help="the difference r(h, a) - r(h, b) to detect (pilot mode: default the "
                           "observed one)")
    plan.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    plan.add_argument("--alpha", type=float, default=0.05,
                      help="level of the two-sided test (default 0.05)")
    plan.add_argument("--level", choices=("overall", "system"), default="overall",
                      help="overall: n stories; system: n systems x --prompts prompts")
    plan.add_argument("--coef", choices=("kendall_b", "pearson", "spearman"),
                      default="kendall_b", help="the correlation coefficient (default "
                                                "kendall_b)")
    plan.add_argument("--test", default="auto",
                      help="auto (the calibrated default of `storyeval meta`), williams, ustat, "
                           "jackknife, fisher-z (independent samples, overall), "
                           "permutation-midp, permutation-random (system)")
    plan.add_argument("--n", metavar="LIST",
                      help="sizes to simulate, comma-separated (default overall "
                           "25,50,100,200,400,800; system 5,10,20,40)")
    plan.add_argument("--full-grid", action="store_true",
                      help="simulate every size (default: stop at the first reaching --power)")
    plan.add_argument("--prompts", type=int,
                      help="system level: prompts per system (default: the pilot's, else 50)")
    plan.add_argument("--human-scale", choices=("ratings", "continuous"),
                      help="assumed mode, overall level: the human score is the mean of three "
                           "1-5 ratings (default) or continuous; pilot mode uses the "
                           "criterion's own values")
    plan.add_argument("--replications", type=int, default=2000,
                      help="simulated data sets per size (default 2000)")
    plan.add_argument("--permutations", type=int, default=100,
                      help="permutation-midp, permutation-random: permutations per data set "
                           "(default 100)")
    plan.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    plan.add_argument("--no-progress", action="store_true",
                      help="no progress bar (one is drawn on a terminal only; also "
                           "STORYEVAL_NO_PROGRESS=1)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table",
                        help="output on standard output (default: table)")
    add_out_option(parser, "power.csv (the table) and power.png (power against n)")
    return parser


def _mode(args: argparse.Namespace) -> str:
    from storyeval.exceptions import InputError

    pilot_opts = [o for o, v in (("--data", args.data), ("--measures", args.measures),
                                 ("--criterion", args.criterion), ("--scores", args.scores))
                  if v]
    if args.r_human is not None or args.r_between is not None:
        if pilot_opts:
            raise InputError(f"give assumed correlations (--r-human, --r-between) or pilot "
                             f"data ({', '.join(pilot_opts)}), not both")
        if args.r_human is None or args.r_between is None:
            raise InputError("assumed mode needs both --r-human and --r-between")
        return "assumed"
    if not pilot_opts:
        raise InputError("give assumed correlations (--r-human A[,B] --r-between R) or pilot "
                         "data (--measures A,B --criterion C, with --data FILE or the "
                         "embedded HANNA data)")
    if not args.measures or not args.criterion:
        raise InputError("pilot mode needs --measures A,B and --criterion C")
    return "pilot"


def run(args: argparse.Namespace) -> int:
    """Simulate, print the table and the answer; returns the exit code."""
    from storyeval.cli.common import load_dataset_args, show_progress, stages
    from storyeval.exceptions import InputError

    check_out_args(args)
    mode = _mode(args)
    n = _ints(args.n, "--n")
    kwargs = {"delta": args.delta, "level": args.level, "coef": args.coef, "test": args.test,
              "power": args.power, "alpha": args.alpha, "n": n, "prompts": args.prompts,
              "replications": args.replications, "n_permutations": args.permutations,
              "full_grid": args.full_grid, "seed": args.seed,
              "show_progress": show_progress(args)}
    if args.replications < 10:
        raise InputError(f"--replications must be at least 10, not {args.replications}")
    if args.permutations < 19:
        raise InputError(f"--permutations must be at least 19, not {args.permutations}")
    # the simulator's imports and the calibration of its latent correlations come before the
    # first bar (seconds): the stage line covers them
    stage = stages(args)
    stage.start(f"power simulation, {args.replications:,} replications per size", bars=True)
    from storyeval.power.planner import plan_power

    if mode == "assumed":
        result = plan_power(_floats(args.r_human, "--r-human"), args.r_between,
                            human_scale=args.human_scale, **kwargs)
    else:
        if args.human_scale is not None:
            raise InputError("--human-scale is for assumed correlations; pilot mode uses the "
                             "criterion's own values")
        from storyeval.data.selection import split_list

        measures = split_list(args.measures)
        if len(measures) != 2:
            raise InputError(f"--measures takes two measure names A,B in pilot mode, not "
                             f"{args.measures!r}")
        if args.data is None:  # embedded HANNA: --measures selects, it does not describe
            args = argparse.Namespace(**{**vars(args), "measures": None})
        dataset = load_dataset_args(args, criteria=args.criterion)
        result = plan_power(data=dataset, measures=measures, criterion=args.criterion,
                            **kwargs)
    stage.done()
    from storyeval.report.tables import format_table

    table = result.table
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=1, default=str) + "\n")
    elif args.format == "csv":
        sys.stdout.write(format_table(table, "csv"))
    else:
        shown = table[["n", "stories", "power", "mc_se", "n_replications"]]
        if args.level == "overall":
            shown = shown.drop(columns="stories")
        sys.stdout.write(result.summary() + "\n\n")
        sys.stdout.write(format_table(shown, "table", digits=3).rstrip("\n") + "\n")
        for note in result.notes:
            sys.stdout.write(f"note: {note}\n")
    if args.out is not None:
        from storyeval._atomic import OutputFolder

        with OutputFolder(args.out, overwrite=args.overwrite, command="power") as folder:
            folder.write_text("power.csv", format_table(table, "csv"))
            result.plot(folder.file("power.png"))
        for path in folder.published:
            print(path, file=sys.stderr if args.format != "table" else sys.stdout)
    return 0
