"""Options and helpers shared by several sub-commands."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from storyeval.report.tables import FORMATS


def add_format_option(parser: argparse.ArgumentParser, default: str = "table") -> None:
    parser.add_argument("--format", choices=FORMATS, default=default,
                        help=f"output format on standard output (default: {default})")


def add_out_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--out DIR`` and ``--overwrite`` (a folder that already holds files is refused
    without it)."""
    parser.add_argument("--out", metavar="DIR", type=Path, help=f"write {what} to DIR")
    parser.add_argument("--overwrite", action="store_true",
                        help="with --out: accept a folder that already holds files; this run's "
                             "files replace them and the previous run's other files are "
                             "removed (files storyeval did not write are kept)")


def check_out_args(args: argparse.Namespace) -> None:
    """Errors found before any computation: ``--digits`` below 0, ``--out`` naming a file
    where a folder is expected, a non-empty ``--out`` folder without ``--overwrite``."""
    from storyeval.exceptions import InputError
    from storyeval.report.tables import check_digits

    if getattr(args, "digits", None) is not None:
        check_digits(args.digits)
    out = getattr(args, "out", None)
    if out is None:
        if getattr(args, "overwrite", False):
            raise InputError("--overwrite needs --out")
        return
    from storyeval._atomic import OutputFolder

    OutputFolder(out, overwrite=getattr(args, "overwrite", False)).check()


def add_data_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, *,
                     scores: bool = True) -> None:
    """The options that say where a dataset is and which column is which."""
    parser.add_argument("--data", "--ratings", dest="data", type=Path, metavar="FILE",
                        help="human judgments (long ratings, a long score table or a wide "
                             "table; CSV/TSV/JSONL/Parquet) or HANNA's wide CSV; default: the "
                             "embedded HANNA data")
    if scores:
        parser.add_argument("--scores", type=Path, metavar="FILE", action="append",
                            default=[],
                            help="automatic per-story scores (story_id or system+prompt_id, "
                                 "measure, value; e.g. from `storyeval score`); repeatable, "
                                 "merged; only the stories they cover are used")
    parser.add_argument("--id", metavar="MAP",
                        help="which of --data's columns is which: ROLE=COLUMN,... with roles "
                             "system, prompt_id (or story_id with ids SYSTEM/PROMPT), and for "
                             "long tables criterion, annotator, value, measure; e.g. "
                             "system=model,prompt_id=item,value=score")
    parser.add_argument("--annotators", metavar="[CRIT=]GLOB", action="append", default=[],
                        help="wide table: columns holding one annotator's ratings each, e.g. "
                             "'rater_*' or 'Overall=ov_*'; repeatable")
    parser.add_argument("--measures", metavar="GLOBS",
                        help="wide table: the automatic score columns (comma-separated globs; "
                             "a name with a comma in double quotes; default: every other "
                             "numeric column)")
    parser.add_argument("--annotator-ids", choices=("auto", "ids", "slots"), default="auto",
                        help="long ratings: 'ids' = one column per annotator id; 'slots' = the "
                             "k-th rating of each story is annotator k; auto (default): slots "
                             "when there are more annotators than ratings per story")
    parser.add_argument("--reference-system", metavar="NAME",
                        help="a system whose stories are the references of reference-based "
                             "metrics (meta leaves them out unless --include-human-stories; "
                             "agreement keeps them unless --exclude-human-stories)")
    parser.add_argument("--allow-unbalanced", action="store_true",
                        help="accept systems with different prompt sets")
    parser.add_argument("--scale", metavar="[CRIT=]LO-HI",
                        help="the human rating scale, e.g. 1-5, or per criterion "
                             "'Overall=1-5,Fluency=0-10': a rating outside is an error naming "
                             "its row (without it, ratings far from the others warn)")
    parser.add_argument("--strict", action="store_true",
                        help="stories left out of the results (a score file that does not "
                             "cover them) are an error, not a warning")
    parser.add_argument("--hanna-out-of-scale", choices=("keep", "missing"), default="keep",
                        help="HANNA's data: its 1,174 LLM ratings below the 1-5 scale "
                             "(failed-extraction codes averaged into the mean of three tries): "
                             "keep as released (default: the paper's numbers) or treat as "
                             "missing (then meta needs --nan-policy omit)")


def add_include_reference_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup
                                 ) -> None:
    """``--include-human-stories``: keep the dataset's reference system (left out by default)."""
    parser.add_argument("--include-human-stories", "--include-reference-stories",
                        dest="include_human_stories", action="store_true",
                        help="keep the reference system's stories (HANNA: 'Human', which the "
                             "paper leaves out); no effect on data without one")


def load_dataset_args(args: argparse.Namespace, *, criteria: str | None = None):
    """The dataset the data options of ``args`` name (see `add_data_options`).

    ``criteria`` (the command's ``--criteria``) also declares which columns of a wide or long
    score table are human criteria."""
    import warnings

    from storyeval.exceptions import DroppedStoriesWarning, InputError

    measures = getattr(args, "measures", None)
    if not getattr(args, "strict", False):
        return _read_dataset_args(args, criteria, measures)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DroppedStoriesWarning)
        try:
            return _read_dataset_args(args, criteria, measures)
        except DroppedStoriesWarning as exc:
            raise InputError(f"{exc} (--strict: dropped stories are an error)") from None


def _read_dataset_args(args: argparse.Namespace, criteria: str | None, measures):
    from storyeval.data import read_dataset
    from storyeval.data.selection import split_list

    return read_dataset(
        args.data,
        scores=list(getattr(args, "scores", None) or []),
        id=args.id,
        criteria=criteria or (),
        annotators=list(args.annotators),
        measures=None if measures is None else split_list(measures),
        annotator_mode=args.annotator_ids,
        reference_system=args.reference_system,
        require_same_prompts=not args.allow_unbalanced,
        scale=getattr(args, "scale", None),
        hanna_out_of_scale=getattr(args, "hanna_out_of_scale", "keep"),
    )


def write_tables_report(args: argparse.Namespace, *, command: str, title: str,
                        tables: dict, notes: Sequence[str] = (),
                        facts: Sequence[tuple[str, str]] = (), answer=None,
                        answer_caption: str = "") -> None:
    """``--out DIR``: each table as ``NAME.csv`` (full precision) and ``index.html`` opening
    with ``answer`` (`storyeval.report.html_report.tables_page`), published together
    (`storyeval._atomic.OutputFolder`)."""
    import sys

    from storyeval._atomic import OutputFolder
    from storyeval.cli import RUN_WARNINGS
    from storyeval.report.html_report import INDEX, render_page, tables_page
    from storyeval.report.tables import format_table

    digits = getattr(args, "digits", 3)
    with OutputFolder(args.out, overwrite=args.overwrite, command=command) as folder:
        for name, table in tables.items():
            folder.write_text(f"{name}.csv", format_table(table, "csv"))
        page = tables_page(title, list(facts), tables, notes=notes, files=list(folder.names),
                           digits=digits, answer=answer, answer_caption=answer_caption)
        page.warnings = list(dict.fromkeys(RUN_WARNINGS))
        folder.write_text(INDEX, render_page(page, digits=digits))
    print(f"wrote {len(folder.published)} files to {args.out}", file=sys.stderr)


def print_written(paths, out) -> None:
    """What an ``--out`` run wrote: every file's full path on standard output (one a line,
    for scripts), and one summary line on standard error naming the folder and its page."""
    import sys
    from pathlib import Path

    folder = Path(out).absolute()
    for path in paths:
        print(Path(path).absolute())
    index = folder / "index.html"
    print(f"wrote {len(paths)} files to {folder}"
          + (f"; open {index}" if index.exists() else ""), file=sys.stderr)


def add_progress_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--no-progress``: no stage lines or bars (they are drawn on a terminal only)."""
    parser.add_argument("--no-progress", action="store_true",
                        help="no stage lines or progress bars on standard error (they are "
                             "drawn on a terminal only; also STORYEVAL_NO_PROGRESS=1)")


def show_progress(args: argparse.Namespace) -> bool | None:
    """The ``show`` of `storyeval._progress`: False under ``--no-progress``, else None (on a
    terminal only)."""
    return False if getattr(args, "no_progress", False) else None


def stages(args: argparse.Namespace):
    """The command's `storyeval._progress.Stages` (see `show_progress`)."""
    from storyeval._progress import Stages

    return Stages(show_progress(args))
