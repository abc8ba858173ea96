"""``storyeval agreement``: the agreement of a dataset's human annotators per criterion, and the
user-study agreement table of the embedded HANNA data.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TYPE_CHECKING

import pandas as pd

from storyeval.cli.common import (
    add_data_options,
    add_format_option,
    add_out_option,
    add_progress_option,
    load_dataset_args,
    print_written,
    stages,
)

if TYPE_CHECKING:
    from storyeval.data.dataset import Dataset

COMMENT = {"table": "# ", "md": "> "}
USER_STUDY_COLUMNS = [
    "display_name", "error_rate", "error_rate_majority", "gwet_ac1", "standard_error", "ci_low",
    "ci_high", "n_explanations",
]
USER_STUDY_TITLE = "User study (Beluga-13B explanations): error rate and Gwet's AC1"

DESCRIPTION = """\
Agreement of the human annotators of a dataset, per criterion, with the stories as items:
ICC(2,k) (two-way random effects, absolute agreement, mean of k annotators; Shrout and Fleiss),
Krippendorff's alpha (interval and ordinal), Fleiss' kappa and Gwet's AC1 (nominal; the
categories are the rating values observed). Works on any dataset with one rating per annotator
(--data: long ratings with an 'annotator' column, or a wide table with --annotators; ragged
annotators allowed). Without --data it uses the embedded HANNA data, and also prints the
agreement table of its user study (error rate and Gwet's AC1 per error category). Tables of
categorical labels are read with --verdicts (pairwise verdicts A / B / same) or --labels
(item, rater, label: any categories).
"""

EPILOG = """\
examples:
  storyeval agreement                                   # embedded HANNA data + user study
  storyeval agreement --what annotators --exclude-human-stories
  storyeval agreement --data ratings.csv --criteria Fun,Clarity --format md
  storyeval agreement --data wide.csv --id system=model,prompt_id=item \\
      --annotators 'Overall=rater_*' --nan-policy raise
  storyeval agreement --verdicts verdicts.csv          # pairwise verdicts: A / B / same
  storyeval agreement --labels labels.csv              # item, rater, label (any categories)

Exit codes: 0 ok, 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval agreement``."""
    parser = subparsers.add_parser(
        "agreement",
        help="inter-annotator agreement per criterion (ICC(2,k), Krippendorff's alpha, "
             "Fleiss' kappa, Gwet's AC1); HANNA's user study",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    data = parser.add_argument_group("data")
    add_data_options(data, scores=False)
    data.add_argument("--criteria", default="all", metavar="LIST",
                      help="human criteria, names or codes (default: all of the dataset's); "
                           "for a wide table, the columns that hold them")
    data.add_argument("--exclude-human-stories", "--exclude-reference-stories",
                      dest="exclude_human_stories", action="store_true",
                      help="leave out the stories of the dataset's reference system (HANNA: "
                           "the 96 human-written stories); an error if it has none")
    what = parser.add_argument_group("what to compute")
    what.add_argument("--what", choices=("annotators", "user-study", "all"), default="all",
                      help="annotators: the annotators' agreement per criterion; user-study: "
                           "the embedded HANNA user study (not with --data); all (default): "
                           "both for the embedded data, the annotators table for --data")
    what.add_argument("--nan-policy", choices=("omit", "raise"), default="omit",
                      help="stories not rated by every annotator: ICC(2,k) leaves them out "
                           "(omit, default; counted in n_items_omitted) or they are an error "
                           "(raise); the other coefficients use every rating")
    what.add_argument("--confidence-level", type=float, default=0.95, metavar="X",
                      help="level of the intervals (default: 0.95)")
    from storyeval.cli.agreement_labels import add_label_options

    add_label_options(parser)
    out = parser.add_argument_group("output")
    add_format_option(out)
    add_out_option(out, "one file per table instead of printing (annotators.EXT; "
                        "user_study.EXT for the embedded data)")
    add_progress_option(out)
    return parser


# ----------------------------------------------------------------------------- computing
def _check_request(args: argparse.Namespace) -> None:
    from storyeval.exceptions import InputError

    if not 0 < args.confidence_level < 1:
        raise InputError(f"--confidence-level must be in (0, 1), got {args.confidence_level}")
    if args.data is not None and args.what == "user-study":
        raise InputError(f"--what user-study is the user study embedded with HANNA; it does not "
                         f"apply to --data {args.data}: use --what annotators")


def excluded_systems(dataset: Dataset, exclude_human_stories: bool) -> list[str]:
    """``[dataset.reference_system]`` when asked; an error if the dataset has none."""
    from storyeval.exceptions import InputError

    if not exclude_human_stories:
        return []
    if dataset.reference_system is None:
        raise InputError(f"--exclude-human-stories: dataset {dataset.name!r} has no reference "
                         "system (human-written stories); name one with --reference-system")
    return [dataset.reference_system]


def compute_tables(
    what: str,
    dataset: Dataset | None = None,
    *,
    embedded: bool | None = None,
    criteria: str = "all",
    exclude_human_stories: bool = False,
    confidence_level: float = 0.95,
    nan_policy: str = "omit",
) -> dict[str, pd.DataFrame]:
    """The tables ``storyeval agreement`` prints, keyed ``annotators`` / ``user_study``.

    ``dataset`` None is the embedded HANNA data. Only the embedded data (``embedded``; default:
    ``dataset is None``) has the user study; a user's dataset has only the annotators table."""
    from storyeval.exceptions import InputError

    if not 0 < confidence_level < 1:
        raise InputError(f"--confidence-level must be in (0, 1), got {confidence_level}")
    tables: dict[str, pd.DataFrame] = {}
    if what in ("annotators", "all"):
        from storyeval.agreement.annotators import annotator_agreement
        from storyeval.data import load_hanna

        data = load_hanna() if dataset is None else dataset
        tables["annotators"] = annotator_agreement(
            data, criteria=criteria, exclude_systems=excluded_systems(data, exclude_human_stories),
            confidence_level=confidence_level, nan_policy=nan_policy)
    if what in ("user-study", "all") and (dataset is None if embedded is None else embedded):
        from storyeval.reproduction.user_study import user_study_table

        tables["user_study"] = user_study_table(confidence_level=confidence_level)[
            USER_STUDY_COLUMNS
        ].rename(columns={"display_name": "category"})
    return tables


# ----------------------------------------------------------------------------- rendering
def annotator_title(dataset: Dataset, excluded: list[str]) -> str:
    left_out = f", stories of {excluded[0]!r} left out" if excluded else ""
    return (f"{dataset.name}: agreement of the human annotators per criterion "
            f"(items: the stories{left_out})")


def annotator_notes(dataset: Dataset, nan_policy: str, confidence_level: float) -> list[str]:
    """The dataset's notes and what the coefficients are."""
    icc = ("stories not rated by every annotator are left out (n_items_omitted; "
           "--nan-policy raise to make them an error)" if nan_policy == "omit"
           else "every story must be rated by every annotator (--nan-policy raise)")
    return [
        *dataset.notes,
        "ICC(2,k): two-way random effects, absolute agreement, mean of the k annotators "
        f"(Shrout and Fleiss); {icc}",
        "Krippendorff's alpha (interval, ordinal) uses every rating; Fleiss' kappa and Gwet's "
        "AC1 are nominal, their categories the rating values observed (column categories)",
        f"intervals: {confidence_level:.0%}",
    ]


def _estimate(value: float, low: float = math.nan, high: float = math.nan,
              digits: int = 3) -> str:
    if math.isnan(value):
        return ""
    from storyeval.report.present import fixed, interval_text

    interval = "" if math.isnan(low) else f" {interval_text(low, high, digits)}"
    return f"{fixed(value, digits)}{interval}"


def display_annotators(table: pd.DataFrame, confidence_level: float) -> pd.DataFrame:
    """The annotators table for reading: estimates with their intervals, no reason column."""
    ci = f"[{confidence_level:.0%} CI]"
    rows = table.to_dict("records")
    return pd.DataFrame({
        "criterion": table["criterion"], "stories": table["n_items"], "k": table["k"],
        "ratings/story": table["ratings_per_item"],
        f"ICC(2,k) {ci}": [_estimate(r["icc2k"], r["icc2k_ci_low"], r["icc2k_ci_high"])
                           for r in rows],
        "ICC omitted": table["n_items_omitted"],
        "alpha interval": [_estimate(v) for v in table["alpha_interval"]],
        "alpha ordinal": [_estimate(v) for v in table["alpha_ordinal"]],
        "Fleiss kappa": [_estimate(v) for v in table["fleiss_kappa"]],
        f"AC1 {ci}": [_estimate(r["gwet_ac1"], r["gwet_ac1_ci_low"], r["gwet_ac1_ci_high"]) for r in rows],
        "categories": table["categories"],
    })


def undefined_lines(table: pd.DataFrame) -> list[str]:
    """``criterion: reason`` of every undefined value."""
    shown = table[table["reason"] != ""]
    return [f"undefined for {c}: {r}" for c, r in zip(shown["criterion"], shown["reason"])]


def render(name: str, table: pd.DataFrame, fmt: str, notes: list[str],
           confidence_level: float) -> str:
    """One table in ``fmt``; table and md get the notes above and the undefined values below."""
    from storyeval.report.tables import format_table

    if name != "annotators" or fmt in ("csv", "json"):
        return format_table(table, fmt)
    text = format_table(display_annotators(table, confidence_level), fmt)
    if fmt not in COMMENT:
        return text
    from storyeval.report.present import current_width, wrap_lines

    width = current_width() if fmt == "table" else None
    above = [line + "\n" for line in wrap_lines(notes, width, prefix=COMMENT[fmt])]
    below = [line + "\n" for line in wrap_lines(undefined_lines(table), width,
                                                 prefix=COMMENT[fmt])]
    return "".join(above) + ("\n" if above else "") + text + ("\n" if below else "") + "".join(
        below)


# ----------------------------------------------------------------------------- command
def run(args: argparse.Namespace) -> int:
    """Compute and print (or write) the agreement tables; returns the exit code."""
    from storyeval.cli.agreement_labels import run_labels, wants_labels
    from storyeval.cli.common import check_out_args

    _check_request(args)
    if wants_labels(args):
        return run_labels(args)
    check_out_args(args)
    stage = stages(args)  # large rating tables take a while: say what runs (on a terminal)
    dataset = None
    if args.what != "user-study":
        stage.start("reading the data")
        dataset = load_dataset_args(args, criteria=args.criteria)
        stage.done(f"{len(dataset.table):,} stories read")
    stage.start("agreement coefficients and intervals")
    tables = compute_tables(
        args.what, dataset, embedded=args.data is None, criteria=args.criteria,
        exclude_human_stories=args.exclude_human_stories,
        confidence_level=args.confidence_level, nan_policy=args.nan_policy,
    )
    stage.done()
    notes, titles = [], {"user_study": USER_STUDY_TITLE}
    if dataset is not None:
        notes = annotator_notes(dataset, args.nan_policy, args.confidence_level)
        titles["annotators"] = annotator_title(
            dataset, excluded_systems(dataset, args.exclude_human_stories))
    if args.out is not None:
        return _write(tables, args, notes, dataset)
    if args.format == "json":
        return _print_json(tables, args, dataset, notes)
    if "annotators" in tables and args.format in COMMENT:  # the answer first
        sys.stdout.write(_answer_text(tables["annotators"], args) + "\n")
    for i, (name, df) in enumerate(tables.items()):
        if args.format in COMMENT:
            prefix = "## " if args.format == "md" else ""
            sys.stdout.write(("\n" if i else "") + prefix + titles[name] + "\n\n")
        text = render(name, df, args.format, notes, args.confidence_level)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _write(tables: dict[str, pd.DataFrame], args: argparse.Namespace, notes: list[str],
           dataset: Dataset | None = None) -> int:
    """One file per table and ``index.html`` showing them all, published together (see
    `storyeval._atomic.OutputFolder`)."""
    from storyeval._atomic import OutputFolder
    from storyeval.cli import RUN_WARNINGS
    from storyeval.report.html_report import INDEX, render_page, tables_page
    from storyeval.report.tables import FILE_SUFFIX, count

    with OutputFolder(args.out, overwrite=args.overwrite, command="agreement") as folder:
        for name, df in tables.items():
            text = render(name, df, args.format, notes, args.confidence_level)
            folder.write_text(f"{name}.{FILE_SUFFIX[args.format]}",
                              text if text.endswith("\n") else text + "\n")
        facts = [("data", "embedded HANNA data" if dataset is None or args.data is None
                  else f"{args.data}: {count(len(dataset.systems), 'system')}, "
                       f"{count(len(dataset.story_ids), 'story', 'stories')}"),
                 ("confidence level", f"{args.confidence_level:g}"),
                 ("missing ratings", str(args.nan_policy))]
        answer, lead = None, []
        if "annotators" in tables:
            from storyeval.report.agreement_answer import agreement_answer, agreement_lead

            answer = agreement_answer(tables["annotators"])
            lead = [agreement_lead(tables["annotators"])]
        from storyeval.report.agreement_answer import agreement_answer_caption

        page = tables_page("storyeval agreement", facts, tables, notes=notes,
                           files=list(folder.names), answer=answer, lead=lead,
                           answer_caption=agreement_answer_caption(args.confidence_level))
        page.warnings = list(RUN_WARNINGS) + page.warnings
        folder.write_text(INDEX, render_page(page))
    print_written(folder.published, args.out)
    return 0


def _answer_text(table: pd.DataFrame, args: argparse.Namespace) -> str:
    """The answer in the terminal: a sentence, the coefficients with their intervals and
    readings per criterion, and the scales they are read on."""
    from storyeval.report.agreement_answer import (
        agreement_answer,
        agreement_answer_caption,
        agreement_lead,
    )
    from storyeval.report.present import wrap_text
    from storyeval.report.tables import format_table

    prefix = "## " if args.format == "md" else ""
    return (f"{prefix}Answer: how well the annotators agree\n\n"
            + wrap_text(agreement_lead(table)) + "\n\n"
            + format_table(agreement_answer(table), args.format)
            + wrap_text("\n" + agreement_answer_caption(args.confidence_level) + "\n"))


def _print_json(tables: dict[str, pd.DataFrame], args: argparse.Namespace,
                dataset: Dataset | None, notes: list[str]) -> int:
    from storyeval.report.tables import format_table

    payload = {name: json.loads(format_table(df, "json")) for name, df in tables.items()}
    payload["confidence_level"] = args.confidence_level
    if "annotators" in tables:
        payload.update(dataset=dataset.name, nan_policy=args.nan_policy, notes=notes)
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    return 0
