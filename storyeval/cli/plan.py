"""``storyeval plan``: plan a pairwise / judge study (sample size, detectable effect), write a
balanced assignment plan, check a returned study against it.

Exit codes: 0 ok, 1 a returned study does not match its plan (``plan check``), 2 usage or input
error.
"""

from __future__ import annotations

import argparse
import json
import sys

EPILOG = """\
examples:
  storyeval plan power --design win_rate --effect 0.6
  storyeval plan power --design paired_accuracy --effect 0.78 --baseline 0.73 \\
      --discordance 0.2 --units-per-prompt 5 --icc 0.1
  storyeval plan power --design paired_accuracy --baseline 0.73 --discordance 0.37 --n 2480
  storyeval plan assign --systems E2E,AgentsRoom,Human --prompts 40 --annotators 12 \\
      --judgments-per-pair 2 --per-sitting 5 --out plan.csv
  storyeval plan check --plan plan.csv --returned returned.csv

Exit codes: 0 ok, 1 the returned study does not match its plan, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval plan`` and its sub-commands."""
    from storyeval.cli import add_raw_csv_option

    parser = subparsers.add_parser(
        "plan", help="plan a pairwise or judge study: pairs needed, detectable effect, "
                     "balanced assignment plan, check of the returned study",
        description="Closed-form power for pairwise and judge designs (win rate, paired judge "
        "accuracies, two proportions, kappa; prompt clustering by a design effect), seeded "
        "assignment plans and their check.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="plan_command", metavar="STEP", required=True)
    power = sub.add_parser("power", help="pairs needed for a target power, or the power and "
                           "minimum detectable effect of a given number of pairs")
    power.add_argument("--design", required=True,
                       choices=("win_rate", "paired_accuracy", "two_proportions", "kappa"))
    power.add_argument("--effect", type=float,
                       help="value under the alternative: win rate, judge A's accuracy, "
                            "proportion A, kappa (needed without --n)")
    power.add_argument("--baseline", type=float, default=0.5,
                       help="judge B's accuracy, proportion B or kappa0 (default 0.5)")
    power.add_argument("--discordance", type=float,
                       help="paired_accuracy: share of pairs the two judges decide differently")
    power.add_argument("--prevalence", type=float, default=0.5,
                       help="kappa: share of positive labels (default 0.5)")
    power.add_argument("--units-per-prompt", type=float, default=1.0,
                       help="pairs per prompt, for the design effect (default 1)")
    power.add_argument("--icc", type=float, default=0.0,
                       help="intra-prompt correlation of outcomes (default 0)")
    power.add_argument("--n", type=int, help="a finished (or fixed) study's number of units: "
                       "print its power (with --effect) and minimum detectable effect")
    power.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    power.add_argument("--alpha", type=float, default=0.05,
                       help="test level (two-sided; one-sided for kappa; default 0.05)")
    power.add_argument("--json", action="store_true", help="print JSON")
    assign = sub.add_parser("assign", help="write a balanced, seeded assignment plan (CSV in "
                            "the verdict format, verdict column empty)")
    src = assign.add_mutually_exclusive_group(required=True)
    src.add_argument("--pairs", metavar="FILE",
                     help="pairs to judge: prompt_id, story_a, story_b[, system_a, system_b]")
    src.add_argument("--systems", metavar="A,B,...",
                     help="every pair of these systems on prompts 0..--prompts-1 "
                          "(story ids 'system/prompt')")
    assign.add_argument("--prompts", type=int, help="with --systems: number of prompts")
    assign.add_argument("--annotators", type=int, help="number of annotators (required)")
    assign.add_argument("--judgments-per-pair", type=int, default=1,
                        help="annotators per pair (default 1)")
    assign.add_argument("--per-sitting", type=int, default=5,
                        help="most pairs per sitting (default 5, as Agents' Room)")
    assign.add_argument("--dimensions", default="Overall",
                        help="comma-separated dimensions judged on every pair (default Overall)")
    assign.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    assign.add_argument("--out", required=True, metavar="FILE", help="the plan's CSV")
    assign.add_argument("--no-progress", action="store_true",
                        help="no progress bar (also STORYEVAL_NO_PROGRESS=1; none when piped)")
    add_raw_csv_option(assign)
    check = sub.add_parser("check", help="compare a returned study with its plan")
    check.add_argument("--plan", required=True, metavar="FILE")
    check.add_argument("--returned", required=True, metavar="FILE")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run one step of ``storyeval plan``."""
    return {"power": _power, "assign": _assign, "check": _check}[args.plan_command](args)


def _power(args: argparse.Namespace) -> int:
    from storyeval.exceptions import InputError
    from storyeval.power.pairwise import (
        minimum_detectable_effect,
        pairwise_power,
        pairwise_sample_size,
    )

    shared = {"baseline": args.baseline, "discordance": args.discordance,
              "prevalence": args.prevalence, "units_per_prompt": args.units_per_prompt,
              "icc": args.icc, "alpha": args.alpha}
    if args.n is None:
        if args.effect is None:
            raise InputError("plan power needs --effect (or --n for a finished study)")
        plan = pairwise_sample_size(args.design, args.effect, power=args.power, **shared)
        result = {k: v for k, v in plan.to_frame().iloc[0].items()}
        result["target_power"] = args.power
    else:
        mde = minimum_detectable_effect(args.design, args.n, power=args.power, **shared)
        result = {"design": args.design, "n_units": args.n, "baseline": args.baseline,
                  "alpha": args.alpha, "target_power": args.power,
                  "minimum_detectable_effect": mde,
                  "minimum_detectable_difference": mde - (0.5 if args.design == "win_rate"
                                                          else args.baseline)}
        if args.effect is not None:
            result["effect"] = args.effect
            result["power"] = pairwise_power(args.design, args.effect, args.n, **shared)
    result = {k: (v.item() if hasattr(v, "item") else v) for k, v in result.items()}
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        for key, value in result.items():
            print(f"{key:30} {value:.6g}" if isinstance(value, float) else f"{key:30} {value}")
    return 0


def _assign(args: argparse.Namespace) -> int:
    from storyeval.data.io import read_table
    from storyeval.exceptions import InputError
    from storyeval.pairwise.plan import write_assignment_plan

    if args.annotators is None:
        raise InputError("plan assign needs --annotators")
    options = {"annotators": args.annotators, "judgments_per_pair": args.judgments_per_pair,
               "per_sitting": args.per_sitting, "seed": args.seed,
               "dimensions": [d.strip() for d in args.dimensions.split(",") if d.strip()],
               "show_progress": False if args.no_progress else None}
    if args.systems is not None:
        if args.prompts is None:
            raise InputError("--systems needs --prompts")
        systems = [s.strip() for s in args.systems.split(",") if s.strip()]
        if len(systems) < 2 or len(set(systems)) != len(systems):
            raise InputError("--systems: give at least two distinct systems")
        summary = write_assignment_plan(args.out, systems=systems, prompts=args.prompts,
                                        **options)
    else:
        if args.prompts is not None:
            raise InputError("--prompts goes with --systems, not --pairs")
        pairs, _ = read_table(args.pairs)
        if pairs.empty:
            raise InputError(f"{args.pairs}: no pairs (a header only)")
        summary = write_assignment_plan(args.out, pairs=pairs, source=str(args.pairs),
                                        **options)
    print(f"seed {args.seed}: {summary.judgments} judgments of {summary.pairs} pairs "
          f"({args.judgments_per_pair} per pair) by {args.annotators} annotators, "
          f"{summary.load_min}-{summary.load_max} pairs and {summary.sittings_min}-"
          f"{summary.sittings_max} sittings each (at most {args.per_sitting} pairs per "
          f"sitting), {summary.ab} shown AB and {summary.ba} BA; {summary.rows} rows -> "
          f"{args.out}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from storyeval.data.io import read_table
    from storyeval.pairwise.plan import check_plan

    plan, _ = read_table(args.plan)
    returned, _ = read_table(args.returned)
    result = check_plan(returned, plan, sources=(str(args.returned), str(args.plan)))
    if result.ok:
        print(f"{args.returned}: matches {args.plan} ({len(plan)} rows)")
        return 0
    print(f"{args.returned}: {len(result.missing)} missing, {len(result.extra)} extra, "
          f"{len(result.altered)} altered assignment(s) against {args.plan}")
    for line in result.lines():
        print(f"  {line}")
    return 1
