"""``storyeval agreement --verdicts FILE`` / ``--labels FILE``: agreement of judges or
annotators on a table of categorical labels (pairwise verdicts A / B / same, Yes / No, ...)."""

from __future__ import annotations

import argparse
import sys

LABELS_HELP = ("long label table (CSV/TSV/JSONL/Parquet): item, rater, label, optional "
               "dimension; any categories (Yes/No, error types, ...)")
VERDICTS_HELP = ("pairwise verdict table (as `storyeval pairwise` reads): the judges' "
                 "agreement on A / B / same, items (pair, dimension)")


def add_label_options(parser: argparse.ArgumentParser) -> None:
    """The ``label tables`` option group of ``storyeval agreement``."""
    g = parser.add_argument_group(
        "label tables (Cohen's kappa for two raters, Fleiss' kappa, Gwet's AC1, "
        "Krippendorff's alpha nominal; item-bootstrap intervals)")
    src = g.add_mutually_exclusive_group()
    src.add_argument("--verdicts", metavar="FILE", help=VERDICTS_HELP)
    src.add_argument("--labels", metavar="FILE", help=LABELS_HELP)
    g.add_argument("--item", choices=("pair", "pair-order"), default="pair",
                   help="--verdicts: an item is a pair (default) or one presentation order "
                        "of it (judges that saw both orders)")
    g.add_argument("--position-verdicts", action="store_true",
                   help="--verdicts: the verdict column names screen positions (A = shown "
                        "first) rather than story_a / story_b, as `storyeval pairwise "
                        "--position-verdicts` reads it")
    g.add_argument("--judges", metavar="LIST",
                   help="--verdicts: comma-separated judges to compare (default: all)")
    g.add_argument("--resamples", type=int, default=2000,
                   help="item-bootstrap resamples of the intervals (0: none; default 2000)")
    g.add_argument("--seed", type=int, default=0,
                   help="random seed of the bootstrap (default: 0; printed with the results)")


def wants_labels(args: argparse.Namespace) -> bool:
    return getattr(args, "verdicts", None) is not None or getattr(args, "labels",
                                                                    None) is not None


def run_labels(args: argparse.Namespace) -> int:
    """Compute and print the agreement of a verdict or label file."""
    from storyeval.data.io import read_table
    from storyeval.exceptions import InputError
    from storyeval.pairwise.verdict_agreement import label_file_agreement, verdict_agreement
    from storyeval.pairwise.verdicts import read_verdicts

    if args.data is not None:
        raise InputError("--verdicts / --labels are a dataset of their own: do not combine "
                         "them with --data")
    if args.resamples < 0:
        raise InputError("--resamples must be >= 0")
    if args.position_verdicts and args.verdicts is None:
        raise InputError("--position-verdicts applies to --verdicts")
    if args.verdicts is not None:
        judges = ([j.strip() for j in args.judges.split(",") if j.strip()]
                  if args.judges else None)
        refers = "position" if args.position_verdicts else "story"
        result = verdict_agreement(read_verdicts(args.verdicts, verdict_refers_to=refers),
                                   item=args.item, judges=judges,
                                   confidence_level=args.confidence_level,
                                   n_resamples=args.resamples, random_state=args.seed)
        what = (f"{args.verdicts}: agreement of the judges on A / B / same (items: {args.item}; "
                f"verdicts name {'screen positions' if args.position_verdicts else 'stories'})")
    else:
        frame, _ = read_table(args.labels)
        result = label_file_agreement(frame, confidence_level=args.confidence_level,
                                      n_resamples=args.resamples, random_state=args.seed,
                                      source=str(args.labels))
        what = f"{args.labels}: agreement of the raters (items: item x dimension)"
    if args.resamples and args.format not in ("table", "md"):
        result = result.assign(seed=args.seed)  # the text formats say it under the table
    text = render_labels(result, what, args.format, args.confidence_level,
                         seed=args.seed if args.resamples else None)
    if args.out is None:
        sys.stdout.write(text)
        return 0
    from storyeval._atomic import OutputFolder
    from storyeval.cli import RUN_WARNINGS
    from storyeval.report.html_report import INDEX, render_page, tables_page
    from storyeval.report.tables import FILE_SUFFIX

    name = "verdicts" if args.verdicts is not None else "labels"
    shown = [c for c in ("dimension", "coefficient", "statistic", "ci_low", "ci_high",
                         "standard_error", "n_items", "n_raters") if c in result.columns]
    notes = [line for line in render_labels(result, what, "table", args.confidence_level,
                                            seed=args.seed if args.resamples else None
                                            ).splitlines()
             if line.startswith(("standard errors", "intervals", "random seed", "undefined"))]
    with OutputFolder(args.out, overwrite=args.overwrite, command="agreement") as folder:
        folder.write_text(f"{name}.{FILE_SUFFIX[args.format]}", text)
        page = tables_page(f"storyeval agreement --{name}", [("data", what)],
                           {name: result}, notes=notes, files=list(folder.names),
                           answer=result[shown],
                           answer_caption="agreement per dimension and coefficient, with "
                                          f"its {args.confidence_level:g} interval")
        page.warnings = list(dict.fromkeys(RUN_WARNINGS))
        folder.write_text(INDEX, render_page(page))
    from storyeval.cli.common import print_written

    print_written(folder.published, args.out)
    return 0


def render_labels(result, what: str, fmt: str, confidence_level: float,
                  seed: int | None = None) -> str:
    """The agreement table in ``fmt``; table and md get a title and notes (with the
    bootstrap's ``seed`` when it resampled)."""
    from storyeval.report.tables import format_table

    if fmt not in ("table", "md"):
        return format_table(result, fmt)
    prefix = "## " if fmt == "md" else ""
    shown = ["dimension", "coefficient", "statistic", "standard_error", "ci_low", "ci_high",
             "n_items", "n_raters", "n_categories"]
    level = f"{100 * confidence_level:g}%"
    lines = [f"{prefix}{what}\n\n", format_table(result[shown], fmt),
             f"\nstandard errors: {_se_methods(result)}\nintervals: {level} item bootstrap "
             "percentile; labels are nominal categories\n"]
    if seed is not None:
        lines.append(f"random seed: {seed} (--seed; the same seed gives the same numbers)\n")
    for dim, coef, reason in result.loc[result["reason"] != "",
                                        ["dimension", "coefficient", "reason"]].values:
        lines.append(f"undefined {coef} ({dim}): {reason}\n")
    return "".join(lines)


def _se_methods(result) -> str:
    pairs = result.loc[result["se_method"] != "", ["coefficient", "se_method"]]
    return "; ".join(f"{c} {m}" for c, m in dict(pairs.values).items())
