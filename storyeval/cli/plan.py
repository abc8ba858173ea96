"""``storyeval plan``: plan a pairwise / judge study (sample size, detectable effect), write a
balanced assignment plan, check a returned study against it.

Exit codes: 0 ok, 1 a returned study does not match its plan (``plan check``), 2 usage or input
error.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from storyeval.cli.common import add_progress_option, show_progress

EPILOG = """\
examples:
  storyeval plan power --design win_rate --effect 0.6
  storyeval plan power --design paired_accuracy --effect 0.78 --baseline 0.73 \\
      --discordance 0.2 --units-per-prompt 5 --icc 0.1
  storyeval plan power --design paired_accuracy --baseline 0.73 --discordance 0.37 --n 2480
  storyeval plan assign --systems E2E,AgentsRoom,Human --prompts 40 --annotators 12 \\
      --judgments-per-pair 2 --per-sitting 5 --out plan.csv
  storyeval plan check --plan plan.csv --returned returned.csv
  storyeval plan budget --pilot pilot.csv --human human --judge llm --cost-human 0.5 \\
      --cost-judge 0.002 --width 0.1 --simulate 500
  storyeval plan budget --pilot pilot.csv --human human --judge llm --cost-human 0.5 \\
      --judge-cost-from runs/my-model/cost.csv --budget 200
  storyeval plan active --data items.csv --probability judge_p --budget 100 --out next.csv
  storyeval ppi --data next_labelled.csv --human human --judge judge_p \\
      --label-probability label_probability

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
    _add_budget_parser(sub)
    _add_active_parser(sub)
    check = sub.add_parser("check", help="compare a returned study with its plan")
    check.add_argument("--plan", required=True, metavar="FILE")
    check.add_argument("--returned", required=True, metavar="FILE")
    return parser


def run(args: argparse.Namespace) -> int:
    """Run one step of ``storyeval plan``."""
    return {"power": _power, "assign": _assign, "check": _check,
            "budget": _budget, "active": _active}[args.plan_command](args)


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


def _add_budget_parser(sub) -> None:
    budget = sub.add_parser(
        "budget", help="how many human labels and judge calls reach a target width, "
                       "standard error or power at the least cost (PPI++), from pilot data",
        description="The cheapest split between human labels and judge calls for a "
                    "prediction-powered mean or win rate (storyeval ppi), from a pilot with "
                    "human and judge scores; or the most precise split a budget buys. Equal "
                    "to ppi-python's power analysis with --rounding nearest --interval z.")
    budget.add_argument("--pilot", required=True, metavar="FILE",
                        help="pilot items (CSV/TSV/JSONL/Parquet): rows with a human score are "
                             "the pilot; the judge must score every row")
    budget.add_argument("--human", required=True, metavar="COL", help="human score column")
    budget.add_argument("--judge", required=True, metavar="COL", help="judge score column")
    budget.add_argument("--id", metavar="COL",
                        help="item id column: a repeated id is an error")
    budget.add_argument("--cost-human", type=float, required=True, metavar="X",
                        help="cost of one human label")
    cost = budget.add_mutually_exclusive_group(required=True)
    cost.add_argument("--cost-judge", type=float, metavar="Y",
                      help="cost of one judge call (the judge's score of one item)")
    cost.add_argument("--judge-cost-from", metavar="FILE",
                      help="the cost.csv of a `storyeval rate --price` run (or the .cost.csv "
                           "of `pairwise judge --price`): its cost_per_item is the cost of "
                           "one judge call")
    budget.add_argument("--judge-label", metavar="LABEL",
                        help="with --judge-cost-from: the judge's row (when it has several)")
    target = budget.add_mutually_exclusive_group(required=True)
    target.add_argument("--width", type=float, help="target interval width (high - low)")
    target.add_argument("--se", type=float, help="target standard error")
    target.add_argument("--power", type=float,
                        help="target power to detect --effect (two-sided, --alpha)")
    target.add_argument("--budget", type=float, help="the most precise design for this cost")
    budget.add_argument("--effect", type=float, help="with --power: the difference to detect")
    budget.add_argument("--alpha", type=float, default=0.05, help="(default 0.05)")
    budget.add_argument("--confidence-level", type=float, default=0.95)
    budget.add_argument("--interval", choices=("t", "z"), default="t",
                        help="t: Student t, as storyeval ppi (default); z: normal, as "
                             "ppi-python")
    budget.add_argument("--rounding", choices=("conservative", "nearest"),
                        default="conservative",
                        help="conservative: the target is met / the budget kept (default); "
                             "nearest: ppi-python's")
    budget.add_argument("--simulate", type=int, default=0, metavar="R",
                        help="check the predicted width on R studies drawn from the pilot "
                             "(seeded by --seed; default 0: no check)")
    budget.add_argument("--seed", type=int, default=0, help="seed of --simulate (default 0)")
    budget.add_argument("--json", action="store_true", help="print JSON")
    add_progress_option(budget)


def _judge_cost_from(path: str, label: str | None) -> tuple[float, str]:
    """(cost per judged item, its description) from a run's cost file."""
    from storyeval.data.io import numeric_column, read_table, row_label
    from storyeval.exceptions import InputError

    frame, fmt = read_table(path)
    missing = [c for c in ("judge", "cost_per_item") if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: no column {missing[0]!r}; give the cost.csv written by "
                         "`storyeval rate --price ... --out DIR` (or FILE.cost.csv of "
                         "`pairwise judge --price`)")
    if frame.empty:
        raise InputError(f"{path}: no rows (a header only)")
    judges = frame["judge"].astype(str)
    if judges.duplicated().any():
        i = int(np.flatnonzero(judges.duplicated().to_numpy())[0])
        raise InputError(f"{row_label(path, i, fmt)}: judge {judges.iloc[i]!r} appears twice")
    if label is not None:
        rows = np.flatnonzero((judges == label).to_numpy())
        if not rows.size:
            raise InputError(f"{path}: no judge {label!r} (judges: {judges.tolist()})")
        i = int(rows[0])
    elif len(frame) > 1:
        raise InputError(f"{path} holds {len(frame)} judges {judges.tolist()}: choose one "
                         "with --judge-label")
    else:
        i = 0
    value = numeric_column(frame["cost_per_item"], "cost_per_item", path, fmt).iloc[i]
    if not np.isfinite(value):
        raise InputError(f"{row_label(path, i, fmt)}: no cost_per_item (the run had no "
                         "--price, or no answer with usage): give --cost-judge")
    return float(value), f"cost_per_item of {judges.iloc[i]} in {path}"


def _pilot(args):
    from storyeval.data.io import numeric_column, read_table, row_label
    from storyeval.exceptions import InputError

    frame, fmt = read_table(args.pilot)
    src = str(args.pilot)
    if frame.empty:
        raise InputError(f"{src}: no rows (a header only)")
    for name in (args.human, args.judge, *([args.id] if args.id else [])):
        if name not in frame.columns:
            raise InputError(f"{src}: no column {name!r}; columns: {list(frame.columns)}")
    if args.id:
        dup = frame[args.id].astype(str).duplicated().to_numpy()
        if dup.any():
            i = int(np.flatnonzero(dup)[0])
            raise InputError(f"{row_label(src, i, fmt)}: id {str(frame[args.id].iloc[i])!r} repeats "
                             f"an earlier row (column {args.id!r})")
    human = numeric_column(frame[args.human], args.human, src, fmt).to_numpy(dtype=float)
    judge = numeric_column(frame[args.judge], args.judge, src, fmt).to_numpy(dtype=float)
    empty = np.flatnonzero(np.isnan(judge))
    if empty.size:
        raise InputError(f"{row_label(src, int(empty[0]), fmt)}: column {args.judge!r} is empty "
                         "(the judge must score every pilot item)")
    return human, judge, src


def _budget(args: argparse.Namespace) -> int:
    from storyeval.exceptions import InputError
    from storyeval.power.budget import plan_label_budget, simulate_label_budget

    if (args.effect is not None) != (args.power is not None):
        raise InputError("--effect goes with --power (and --power needs --effect)")
    if args.judge_label is not None and args.judge_cost_from is None:
        raise InputError("--judge-label goes with --judge-cost-from")
    human, judge, src = _pilot(args)
    if args.judge_cost_from is not None:
        cost_judge, cost_source = _judge_cost_from(args.judge_cost_from, args.judge_label)
    else:
        cost_judge, cost_source = args.cost_judge, "--cost-judge"
    plan = plan_label_budget(human, judge, cost_human=args.cost_human, cost_judge=cost_judge,
                             width=args.width, se=args.se, power=args.power,
                             effect=args.effect, budget=args.budget, alpha=args.alpha,
                             confidence_level=args.confidence_level, interval=args.interval,
                             rounding=args.rounding)
    result = {k: (v.item() if hasattr(v, "item") else v)
              for k, v in plan.to_frame().iloc[0].items()}
    result.update(pilot=src, cost_judge_source=cost_source)
    check = None
    if args.simulate:
        if args.simulate < 2:
            raise InputError(f"--simulate must be 0 or >= 2, got {args.simulate}")
        check = simulate_label_budget(plan, human, judge, reps=args.simulate, seed=args.seed,
                                      show_progress=show_progress(args))
        result["simulation"] = check
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(_budget_text(plan, src, cost_source, check))
    return 0


def _budget_text(plan, src: str, cost_source: str, check) -> str:
    from storyeval.report.present import wrap_text

    level = f"{plan.confidence_level:g}"
    lines = [wrap_text(
        f"{src}: {plan.n_pilot} pilot items (human sd {plan.sd_human:.4g}, judge sd "
        f"{plan.sd_judge:.4g}, correlation {plan.ppi_corr:.3f}); target {plan.target}; a human "
        f"label costs {plan.cost_human:g}, a judge call {plan.cost_judge:g} "
        f"({cost_source})")]
    if plan.method == "ppi++":
        lines.append(f"  plan: {plan.n_human:,} human labels and {plan.n_judge:,} judge calls "
                     f"({plan.n_unlabelled:,} items judged only), cost {plan.cost:,.2f}; "
                     f"PPI++ lambda {plan.lam:.3f}")
    else:
        lines.append(f"  plan: {plan.n_human:,} human labels and no judge call (the judge "
                     f"does not pay for itself here), cost {plan.cost:,.2f}")
    lines.append(f"  predicted: se {plan.predicted_se:.4g}, {level} {plan.interval} interval "
                 f"width {plan.predicted_width:.4g}; worth {plan.effective_n:,.1f} human "
                 "labels alone")
    lines.append(f"  human labels only: {plan.human_only_n:,} labels, cost "
                 f"{plan.human_only_cost:,.2f}")
    if check is not None:
        lines.append(wrap_text(
            f"  simulated ({check['reps']:,} studies drawn from the pilot, seed {check['seed']}, "
            f"PPI++ cross-fitted over {check['folds']} folds): mean width "
            f"{check['simulated_width']:.4g} (predicted / simulated {check['width_ratio']:.3f}),"
            f" coverage {check['coverage']:.3f}"))
    lines.append(f"  rounding: {plan.rounding}")
    return "\n".join(lines)


def _add_active_parser(sub) -> None:
    active = sub.add_parser(
        "active", help="which items to send to humans next: probabilities from the judge's "
                       "uncertainty (active statistical inference), a seeded draw",
        description="Give every item a probability of a human label proportional to the "
                    "judge's uncertainty (mixed with uniform sampling), draw the items to "
                    "label (seeded), and write both: after labelling, `storyeval ppi "
                    "--label-probability label_probability` gives the estimate that stays "
                    "valid under this choice (Zrnic and Candes 2024).")
    active.add_argument("--data", required=True, metavar="FILE",
                        help="one row per item (CSV/TSV/JSONL/Parquet)")
    how = active.add_mutually_exclusive_group(required=True)
    how.add_argument("--probability", metavar="COL",
                     help="the judge's probability of a 1 (a win): uncertainty sqrt(p (1-p))")
    how.add_argument("--votes", metavar="COL,COL,...",
                     help="several verdicts per item (judges, orders, tries): uncertainty = "
                          "their standard deviation (disagreement)")
    how.add_argument("--uncertainty", metavar="COL", help="an uncertainty score >= 0")
    active.add_argument("--budget", type=float, required=True,
                        help="expected number of human labels")
    active.add_argument("--mix", type=float, default=0.2,
                        help="share of uniform sampling mixed in (default 0.2; > 0 keeps "
                             "every item possible)")
    active.add_argument("--id", metavar="COL", help="item id column: a repeated id is an error")
    active.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0)")
    active.add_argument("--out", required=True, metavar="FILE",
                        help="the items with label_probability and send_to_human (1/0) added")


def _active(args: argparse.Namespace) -> int:
    from storyeval._atomic import atomic_path
    from storyeval._csv import write_csv
    from storyeval.data.io import numeric_column, read_table, row_label
    from storyeval.exceptions import InputError
    from storyeval.power.active import (
        active_probabilities,
        active_sample,
        uncertainty_from_probability,
        uncertainty_from_votes,
    )

    frame, fmt = read_table(args.data)
    src = str(args.data)
    if frame.empty:
        raise InputError(f"{src}: no rows (a header only)")
    names = (args.votes.split(",") if args.votes else [args.probability or args.uncertainty])
    names = [n.strip() for n in names if n.strip()]
    for name in (*names, *([args.id] if args.id else [])):
        if name not in frame.columns:
            raise InputError(f"{src}: no column {name!r}; columns: {list(frame.columns)}")
    for taken in ("label_probability", "send_to_human"):
        if taken in frame.columns:
            raise InputError(f"{src}: already has a column {taken!r} (an earlier plan?)")
    if args.id:
        dup = frame[args.id].astype(str).duplicated().to_numpy()
        if dup.any():
            i = int(np.flatnonzero(dup)[0])
            raise InputError(f"{row_label(src, i, fmt)}: id {str(frame[args.id].iloc[i])!r} "
                             f"repeats an earlier row (column {args.id!r})")
    cols = np.column_stack([numeric_column(frame[n], n, src, fmt).to_numpy(dtype=float)
                            for n in names])
    empty = np.argwhere(np.isnan(cols))
    if args.votes is None and empty.size:
        i, j = empty[0]
        raise InputError(f"{row_label(src, int(i), fmt)}: column {names[j]!r} is empty")
    if args.probability:
        u = uncertainty_from_probability(cols[:, 0])
    elif args.votes:
        if len(names) < 2:
            raise InputError("--votes needs at least two columns")
        u = uncertainty_from_votes(cols)
    else:
        u = cols[:, 0]
    pi = active_probabilities(u, args.budget, mix=args.mix)
    chosen = active_sample(pi, seed=args.seed)
    out = frame.assign(label_probability=pi, send_to_human=chosen.astype(int))
    with atomic_path(args.out) as tmp:
        write_csv(out, tmp)
    print(f"{src}: {len(frame):,} items, expected {args.budget:g} human labels (mix "
          f"{args.mix:g}); seed {args.seed}: send {int(chosen.sum()):,} items to humans "
          f"(probabilities {pi.min():.3g}-{pi.max():.3g}) -> {args.out}")
    print("Keep label_probability: `storyeval ppi --label-probability label_probability` "
          "weights each human label by 1 / probability.")
    return 0
