"""``storyeval ppi``: a human mean, a difference of two systems or a win rate from a few human
labels and a judge's scores on every item (prediction-powered inference, PPI / PPI++).

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

EPILOG = """\
examples:
  storyeval ppi --data items.csv --human human --judge llm
  storyeval ppi --data items.csv --human human --judge llm --system system --systems A,B
  storyeval ppi --data items.csv --human human --judge llm --system system --systems A,B \\
      --paired-by prompt_id
  storyeval ppi --data pairs.csv --human human_pref --judge judge_pref --estimand win_rate

One row per item; the human column is empty where no human labelled the item (the labelled
items must be a random subset); the judge column is filled everywhere. By default PPI++'s
lambda is cross-fitted over 5 folds of the labelled items (seeded, --seed) and the interval is
Student t; --folds 1 --interval z gives ppi-python's PPI++.

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval ppi``."""
    parser = subparsers.add_parser(
        "ppi", help="prediction-powered estimate (PPI / PPI++) of a human mean, difference or "
                    "win rate from few human labels and a judge",
        description="Prediction-powered inference: the judge's mean on every item, corrected "
        "by the human-minus-judge gap on the labelled items, with a valid interval, the "
        "human-only interval and the effective number of human labels the judge is worth.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, metavar="FILE", help="CSV/TSV/JSONL/Parquet")
    parser.add_argument("--human", required=True, metavar="COL",
                        help="human score (win rate: 1 / 0 / 0.5), empty if not labelled")
    parser.add_argument("--judge", required=True, metavar="COL", help="the judge's score")
    parser.add_argument("--estimand", choices=("mean", "win_rate", "difference"),
                        help="default: difference with --systems, else mean")
    parser.add_argument("--system", metavar="COL", help="column naming each item's system")
    parser.add_argument("--systems", metavar="A,B",
                        help="difference A - B between these two systems (needs --system)")
    parser.add_argument("--paired-by", metavar="COL",
                        help="difference: pair A's and B's items by this column (a prompt)")
    parser.add_argument("--method", choices=("ppi++", "ppi", "classical"), default="ppi++",
                        help="ppi++: lambda tuned (default); ppi: lambda 1; classical: humans "
                             "only")
    parser.add_argument("--interval", choices=("z", "t"), default="t",
                        help="t: Student t, n - 1 df (default); z: normal (as ppi-python)")
    parser.add_argument("--folds", type=int, default=5, metavar="K",
                        help="ppi++: cross-fit lambda over K folds of the labelled items "
                             "(default 5); 1: lambda from all labels (as ppi-python)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds (default 0)")
    parser.add_argument("--confidence-level", type=float, default=0.95)
    parser.add_argument("--label-probability", metavar="COL",
                        help="the items were sent to humans with these probabilities "
                             "(`storyeval plan active`): the inverse-probability-weighted "
                             "estimate of active statistical inference (mean or win rate; "
                             "normal interval; --method, --folds and --interval do not apply)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _no_column(frame, name: str, source: str):
    import difflib

    from storyeval.exceptions import InputError

    close = difflib.get_close_matches(name, [str(c) for c in frame.columns], n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else f"; columns: {list(frame.columns)}"
    return InputError(f"{source}: no column {name!r}{hint}")


def _check_columns(frame, names: list[str], source: str, fmt: str):
    """``frame`` with its score columns ``names`` as floats; one line naming the file, the
    row and the column for an empty table, a missing column, a value that is not a number or
    is infinite (also a number too large for a float, e.g. 1e309)."""
    from storyeval.data.io import numeric_column, row_label
    from storyeval.exceptions import InputError

    if frame.empty:
        raise InputError(f"{source}: no rows (a header only)")
    frame = frame.copy()
    for name in names:
        if name not in frame.columns:
            raise _no_column(frame, name, source)
        frame[name] = numeric_column(frame[name], name, source, fmt)
    judge = frame[names[1]].isna().to_numpy()
    if judge.any():
        i = int(judge.argmax())
        raise InputError(f"{row_label(source, i, fmt)}: column {names[1]!r} is empty "
                         f"({int(judge.sum())} row(s) in all); the judge must score every item")
    return frame


def _column(frame, name: str):
    return frame[name].to_numpy(dtype=float)


def run(args: argparse.Namespace) -> int:
    """Run ``storyeval ppi``."""
    from storyeval.data.io import read_table
    from storyeval.exceptions import InputError
    from storyeval.power.ppi import ppi_mean, ppi_mean_difference, ppi_win_rate

    frame, fmt = read_table(args.data)
    src = str(args.data)
    frame = _check_columns(frame, [args.human, args.judge], src, fmt)
    estimand = args.estimand or ("difference" if args.systems else "mean")
    if args.label_probability is not None:
        return _run_active(args, frame, src, fmt, estimand)
    options = {"method": args.method, "confidence_level": args.confidence_level,
               "interval": args.interval, "folds": args.folds, "seed": args.seed}
    if estimand == "difference":
        if not (args.system and args.systems):
            raise InputError("a difference needs --system COL and --systems A,B")
        names = [s.strip() for s in args.systems.split(",")]
        if len(names) != 2 or names[0] == names[1]:
            raise InputError("--systems takes two distinct systems A,B")
        if args.system not in frame.columns:
            raise _no_column(frame, args.system, src)
        if args.paired_by and args.paired_by not in frame.columns:
            raise _no_column(frame, args.paired_by, src)
        parts = []
        for name in names:
            part = frame[frame[args.system].astype(str) == name]
            if part.empty:
                import difflib

                known = sorted(frame[args.system].astype(str).unique())
                close = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
                hint = f"did you mean {close[0]!r}?" if close else f"systems: {known[:20]}"
                raise InputError(f"{src}: no item of system {name!r} in column "
                                 f"{args.system!r}; {hint}")
            if args.paired_by:
                dup = part[args.paired_by].duplicated()
                if dup.any():
                    raise InputError(f"{src}: system {name!r} has two items for "
                                     f"{args.paired_by} {part[args.paired_by][dup].iloc[0]!r}")
                part = part.set_index(args.paired_by)
            parts.append(part)
        if args.paired_by:
            common = parts[0].index.intersection(parts[1].index)
            if len(common) != len(parts[0]) or len(common) != len(parts[1]):
                raise InputError(f"{src}: --paired-by {args.paired_by}: the two systems do not "
                                 "have the same set of values")
            parts = [p.loc[common] for p in parts]
        a, b = parts
        result = ppi_mean_difference(_column(a, args.human), _column(a, args.judge),
                                     _column(b, args.human), _column(b, args.judge),
                                     paired=bool(args.paired_by), **options)
        what = f"{names[0]} - {names[1]} ({'paired' if args.paired_by else 'independent'})"
    else:
        if args.systems or args.paired_by:
            raise InputError("--systems / --paired-by go with --estimand difference")
        fn = ppi_win_rate if estimand == "win_rate" else ppi_mean
        result = fn(_column(frame, args.human), _column(frame, args.judge), **options)
        what = args.human
    row = {k: (v.item() if hasattr(v, "item") else v)
           for k, v in result.to_frame().iloc[0].items()}
    human_low, human_high = (float(v) for v in result.human_interval())
    row.update(human_low=human_low, human_high=human_high)
    if args.json:
        json.dump({"data": src, "of": what, **row}, sys.stdout, indent=2)
        print()
        return 0
    level = f"{args.confidence_level:g}"
    tuning = (f"lambda {result.lam:.3g}, cross-fitted over {result.folds} folds, seed "
              f"{result.seed}" if result.folds > 1 else f"lambda {result.lam:.3g}")
    from storyeval.report.present import interval_text, wrap_text

    print(wrap_text(f"{src}: {result.estimand} of {what}, {args.method} ({args.interval} "
                    f"interval, {tuning}); {result.n_labelled} human-labelled, "
                    f"{result.n_unlabelled} judge-only items"))
    print(f"  prediction-powered: {result.estimate:.4f}  "
          f"{interval_text(result.low, result.high, 4)} ({level}), se {result.se:.4f}")
    print(f"  human only:         {result.human_estimate:.4f}  "
          f"{interval_text(human_low, human_high, 4)}, "
          f"se {result.human_se:.4f}")
    print(f"  width ratio {result.width_ratio:.3f}; the judge makes the {result.n_labelled} human "
          f"labels worth {result.n_eff:.1f} (effective number of human labels)")
    return 0


def _run_active(args: argparse.Namespace, frame, src: str, fmt: str, estimand: str) -> int:
    """``--label-probability``: the active estimate (`storyeval.power.active.active_mean`)."""
    from storyeval.data.io import numeric_column, row_label
    from storyeval.exceptions import InputError
    from storyeval.power.active import active_mean

    if estimand == "difference" or args.systems or args.paired_by:
        raise InputError("--label-probability estimates a mean or a win rate (not a "
                         "difference of systems)")
    if args.label_probability not in frame.columns:
        raise _no_column(frame, args.label_probability, src)
    pi = numeric_column(frame[args.label_probability], args.label_probability, src,
                        fmt).to_numpy(dtype=float)
    bad = np.flatnonzero(~((pi > 0) & (pi <= 1)))
    if bad.size:
        raise InputError(f"{row_label(src, int(bad[0]), fmt)}: {args.label_probability} "
                         f"{pi[bad[0]]!r} is not a probability in (0, 1]")
    human = _column(frame, args.human)
    if estimand == "win_rate":
        outside = np.flatnonzero((human < 0) | (human > 1))
        if outside.size:
            raise InputError(f"{row_label(src, int(outside[0]), fmt)}: {args.human} "
                             f"{human[outside[0]]!r} is outside [0, 1] for a win rate")
    result = active_mean(human, _column(frame, args.judge), pi,
                         confidence_level=args.confidence_level)
    row = {k: (v.item() if hasattr(v, "item") else v)
           for k, v in result.to_frame().iloc[0].items()}
    if args.json:
        json.dump({"data": src, "of": args.human, "estimand": estimand,
                   "method": "active (inverse-probability weighted)", **row}, sys.stdout,
                  indent=2)
        print()
        return 0
    from storyeval.report.present import interval_text, wrap_text

    print(wrap_text(f"{src}: {estimand.replace('_', ' ')} of {args.human}, active labelling "
                    f"(each human label weighted by 1 / {args.label_probability}; normal "
                    f"interval; lambda {result.lam:.3g}); {result.n_labelled} human-labelled "
                    f"of {result.n_items} items (expected {result.expected_labels:.1f})"))
    print(f"  estimate: {result.estimate:.4f}  {interval_text(result.low, result.high, 4)} "
          f"({args.confidence_level:g}), se {result.se:.4f}")
    return 0
