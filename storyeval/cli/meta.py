"""``storyeval meta``: correlations with human criteria, human baseline, comparison tests."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from storyeval.cli.common import (
    add_data_options,
    add_format_option,
    add_include_reference_option,
    add_out_option,
    add_progress_option,
    load_dataset_args,
)

if TYPE_CHECKING:  # matplotlib's module: imported only when figures are drawn
    from storyeval.report.figures import FigureWorkers

DESCRIPTION = """\
Meta-evaluate measures against human judgments: for every selected measure, its correlation
with each human criterion at the overall (story) and system levels, the human baseline, and
comparison tests of the measures (against the dataset's default reference rater, else all
pairs; each row names the test that ran: on your data a U-statistic, jackknife or permutation
test, Williams' t only for the HANNA reproduction or --test williams) with
Benjamini-Hochberg adjusted p-values. Works on any dataset (--data, --scores; see
`storyeval describe`); without --data it uses the HANNA data shipped with storyeval (10
generation systems x 96 prompts; the human-written stories are left out unless
--include-human-stories).
"""

EPILOG = """\
measure specifications (--metrics, comma-separated): all, llm, non-llm, llm-avg, paper,
reference-based, reference-free, lexical, embedding, model-based (join with & to intersect),
a model (Beluga-13B), a rater group (\"Beluga-13B 1\"), a measure name or display name, or a
glob pattern ('ROUGE-*'). A name holding a comma goes in double quotes inside the list
('"BERTScore F1 (all-MiniLM-L6-v2 L6, chunked)",BLEU'), alone, or by a glob ('BERTScore F1*').

examples:
  storyeval meta --metrics all
  storyeval meta --metrics paper --levels overall,system --out results/
  storyeval meta --metrics 'BLEU,chrF,Beluga-13B 1' --coef spearman --format md
  storyeval meta --scores my_scores.csv --metrics my-metric --include-human-stories
  storyeval meta --data ratings.csv --scores bleu.csv --scores mine.csv
  storyeval meta --data wide.csv --id system=model,prompt_id=item --criteria Overall \
      --annotators 'rater_*'
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "meta", help="correlations, human baseline and comparison tests",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    data = parser.add_argument_group("data")
    add_data_options(data)
    add_include_reference_option(data)
    data.add_argument("--systems", metavar="LIST", help="comma-separated systems to keep")
    what = parser.add_argument_group("what to compute")
    what.add_argument("--metrics", default="all", metavar="SPEC",
                      help="measures to evaluate (default: all; see below)")
    what.add_argument("--criteria", default="all", metavar="LIST",
                      help="human criteria, names or codes (default: all of the dataset's); "
                           "for a wide or long score table, the columns that hold them")
    what.add_argument("--levels", default="overall,system", metavar="LIST",
                      help="comma-separated among overall, system, prompt, within "
                           "(within-system: correlate within each system, then average; "
                           "default: overall,system)")
    what.add_argument("--coef", default="kendall_b",
                      choices=["kendall", "kendall_b", "kendall_c", "pearson", "spearman",
                               "acc_eq", "tau23", "spa"],
                      help="correlation coefficient (default: kendall_b, scipy's tau-b); "
                           "acc_eq (tie-calibrated pairwise accuracy), tau23 and spa (soft "
                           "pairwise accuracy, system level) print their own table instead "
                           "(docs: WMT meta-metrics)")
    from storyeval.cli.bias import add_sentinel_option

    add_sentinel_option(what)
    what.add_argument("--llm-criteria", choices=["matched", "all"], default="matched",
                      help="correlate an LLM's criterion rating with its own criterion only "
                           "(default, as the paper) or with all")
    what.add_argument("--nan-policy", choices=["raise", "omit", "propagate"], default="raise",
                      help="missing scores: error (default), pairwise deletion, or NaN")
    what.add_argument("--tie-rtol", type=float, default=1e-12, metavar="X",
                      help="system means agreeing within this relative tolerance are ties "
                           "(default 1e-12; 0 keeps raw float means)")
    tests = parser.add_argument_group("comparison tests")
    tests.add_argument("--test", default="auto", metavar="TEST",
                       help="comparison test: auto (default: the paper's Williams convention "
                            "on the embedded HANNA data, else the calibrated two-sided test: "
                            "ustat for tau-b / jackknife for Pearson, Spearman, tau-c at "
                            "the overall level, permutation-midp at the system level), "
                            "paper, williams, ustat, jackknife, bootstrap, permutation, "
                            "permutation-midp, permutation-random, prompt-t (prompt level), "
                            "prompt-jackknife (within level, its default); or one "
                            "per level: overall=ustat,system=bootstrap (docs: Which test?)")
    tests.add_argument("--reference", default="auto", metavar="RATER",
                       help="rater the tests compare every other measure against; 'auto' "
                            "(default) is the dataset's default reference (HANNA: the paper's "
                            "'Beluga-13B 1'), else all pairs; 'all' for all pairs; 'none' for "
                            "no tests")
    tests.add_argument("--adjust", choices=["bh", "by", "bonferroni", "holm", "none"],
                       default="bh", help="p-value adjustment (default: bh)")
    tests.add_argument("--family", default="auto", metavar="FAMILY",
                       help="adjustment family: auto (default: paper on the embedded HANNA "
                            "data, else criterion), paper (each compared rater's criteria, per "
                            "level), criterion (all comparisons of a criterion, per level), "
                            "level, all, or comma-separated columns")
    tests.add_argument("--alternative", choices=["greater", "two-sided", "less"],
                       help="alternative hypothesis (default: the test's; paper: one-sided "
                            "greater, others two-sided)")
    tests.add_argument("--direction", choices=["larger", "fixed"],
                       help="test in the direction of the larger |r| (paper; Williams tests "
                            "only) or always a vs b (default: the test's)")
    tests.add_argument("--test-permutations", type=int, metavar="N",
                       help="permutations of the permutation tests (default: 2000 for the "
                            "comparison tests, 1000 for --coef spa)")
    tests.add_argument("--sign-convention", choices=["auto", "paper", "raw"], default="auto",
                       help="raw: compare signed correlations; paper: compare |r|, each measure "
                            "oriented by the sign of its sample correlation (chosen after "
                            "seeing the data); auto (default): paper on the embedded HANNA "
                            "data, else raw")
    tests.add_argument("--lower-is-better", metavar="SPEC",
                       help="measures where lower scores are better, declared in advance "
                            "(comma-separated, as --metrics): negated before every comparison "
                            "under the raw convention")
    unc = parser.add_argument_group("uncertainty (resampling)")
    unc.add_argument("--ci", choices=["none", "bootstrap"], default="none",
                     help="add bootstrap confidence intervals (ci_low, ci_high) to every "
                          "correlation")
    unc.add_argument("--resamples", type=int, default=1000, metavar="B",
                     help="bootstrap resamples, of --ci bootstrap, of --test bootstrap and of "
                          "the intervals of tests without their own (default: 1000)")
    unc.add_argument("--resample-by", choices=["prompts", "systems", "both"],
                     default="prompts",
                     help="what the bootstrap resamples (default: prompts, the systems held "
                          "fixed; systems or both: the systems as a sample of a population)")
    unc.add_argument("--ci-method", choices=["percentile", "bca", "expanded"],
                     default="percentile",
                     help="bootstrap interval: percentile (default), bca (bias-corrected and "
                          "accelerated, one --resample-by unit), or expanded (the percentile "
                          "interval widened for few clusters, Hesterberg 2015; covers better "
                          "below 20 prompts or systems)")
    unc.add_argument("--confidence-level", type=float, default=0.95, metavar="X",
                     help="confidence level of intervals and chance bands (default: 0.95)")
    unc.add_argument("--permutations", type=int, default=0, metavar="N",
                     help="add a paired permutation test (two-sided, N permutations) next to "
                          "every comparison test (default: 0, off)")
    unc.add_argument("--permutation-unit", choices=["story", "prompt", "system"],
                     help="what the permutation swaps the two measures' scores by "
                          "(default: prompt, at every level; recorded in the output)")
    unc.add_argument("--chance", type=int, default=0, metavar="N",
                     help="show the chance baseline of each criterion from N random measures "
                          "(default: 0, off)")
    unc.add_argument("--seed", type=int, default=0,
                     help="random seed of resampling (default: 0)")
    out = parser.add_argument_group("output")
    add_format_option(out)
    add_out_option(out, "correlations.csv, baseline.csv, comparisons.csv, grids (md, tex, "
                        "csv), settings.json and the heatmaps (PNG; see --figure-format)")
    out.add_argument("--no-figures", action="store_true", help="with --out, skip the figures")
    out.add_argument("--figure-format", default="png", metavar="FMT[,FMT]",
                     help="with --out, the heatmaps' formats, comma-separated among png, pdf, "
                          "svg (default: png; e.g. png,pdf for a paper). The heatmaps are drawn "
                          "by two worker processes on a multi-core machine "
                          "(STORYEVAL_FIGURE_WORKERS=N sets how many; 0: in this process)")
    out.add_argument("--digits", type=int, default=3, help="decimals shown (default: 3)")
    add_progress_option(out)
    from storyeval.cli import meta_wmt

    meta_wmt.add_options(parser)
    return parser


def _path(text: str):
    from pathlib import Path

    return Path(text)


def _split(text: str | None) -> list[str] | None:
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def _test_arg(text: str) -> str | dict[str, str]:
    """``--test NAME`` or ``--test overall=NAME,system=NAME``."""
    from storyeval.exceptions import InputError

    if "=" not in text:
        return text.strip()
    out = {}
    for part in _split(text) or []:
        level, sep, name = part.partition("=")
        if not sep or not name.strip():
            raise InputError(f"--test: expected LEVEL=TEST, got {part!r}")
        out[level.strip()] = name.strip()
    return out


# From this many bytes of input, the compiled Kendall kernels load while the input is read: such
# inputs are counted by them, and reading them takes longer than the load.
_WARM_UP_MIN_BYTES = 8 * 2**20


def _warm_up_for_large_input(args: argparse.Namespace) -> None:
    from pathlib import Path

    paths = [Path(p) for p in [args.data, *(getattr(args, "scores", None) or [])] if p]
    size = sum(p.stat().st_size for p in paths if p.is_file())
    if size >= _WARM_UP_MIN_BYTES:
        from storyeval.correlation.compiled import warm_up

        warm_up(background=True)


def run(args: argparse.Namespace) -> int:
    from storyeval.cli.common import check_out_args
    from storyeval.exceptions import InputError
    from storyeval.meta.pipeline import FAMILIES

    if args.no_figures and args.out is None:
        raise InputError("--no-figures needs --out")
    check_out_args(args)
    from storyeval.cli import meta_wmt

    if args.test_permutations is None:  # the library's default of each use
        from storyeval.compare.procedures import TEST_PERMUTATIONS

        args.test_permutations = 1000 if meta_wmt.uses_wmt_coef(args) else TEST_PERMUTATIONS
    meta_wmt.check(args)
    if args.sentinels and meta_wmt.uses_wmt_coef(args):
        raise InputError("--sentinels works with the correlation coefficients (not acc_eq, "
                         "tau23, spa)")
    if meta_wmt.uses_wmt_coef(args):
        return meta_wmt.run_coef(args, meta_wmt.load_dataset(args, load_dataset_args))
    family = args.family if args.family in FAMILIES else _split(args.family)
    _warm_up_for_large_input(args)
    workers = None
    if args.out is not None and not args.no_figures:
        from storyeval.report.figures import FigureWorkers

        workers = FigureWorkers.start()  # they load matplotlib while the statistics run
    try:
        return _run(args, family, workers)
    finally:
        if workers is not None:
            workers.close()


def _run(args: argparse.Namespace, family: str | list[str],
         workers: FigureWorkers | None) -> int:
    from storyeval._progress import Stages
    from storyeval.cli import meta_wmt
    from storyeval.meta.pipeline import meta_evaluate
    from storyeval.report.meta_files import write_report
    from storyeval.report.meta_report import render

    stages = Stages(False if getattr(args, "no_progress", False) else None)  # large data: slow
    stages.start("reading the data")
    dataset = meta_wmt.load_dataset(args, load_dataset_args)
    stages.done(f"{len(dataset.table):,} stories read")
    from storyeval.cli.bias import apply_sentinels

    dataset, measures = apply_sentinels(args, dataset)  # --sentinels: measures like any other
    stages.start("correlations and comparison tests")
    result = meta_evaluate(
        dataset,
        measures=measures,
        criteria=args.criteria,
        levels=_split(args.levels),
        method=args.coef,
        # --clusters ranks every pair from this run's table: all pairs are compared
        reference="all" if args.clusters and args.reference == "auto" else args.reference,
        include_human_stories=args.include_human_stories,
        systems=_split(args.systems),
        llm_criteria=args.llm_criteria,
        nan_policy=args.nan_policy,
        tie_rtol=args.tie_rtol,
        adjust=args.adjust,
        family=family,
        alternative=args.alternative,
        direction=args.direction,
        sign_convention=args.sign_convention,
        lower_is_better=_split(args.lower_is_better) or (),
        test=_test_arg(args.test),
        confidence_level=args.confidence_level,
        n_resamples=args.resamples,
        n_permutations=args.test_permutations,
        resample_by=args.resample_by,
        permutation_unit=args.permutation_unit or "prompt",
        random_state=args.seed,
    )
    stages.done(f"{len(result.comparisons):,} comparisons")
    asked = [what for what, on in (("bootstrap intervals", args.ci == "bootstrap"),
                                   ("permutation p-values", args.permutations),
                                   ("chance baselines", args.chance)) if on]
    if asked:
        stages.start(", ".join(asked), bars=True)
    result = _add_resampling(result, args)
    if asked:
        stages.done()
    if args.format in ("table", "md") or args.out is not None:
        # the answer's own intervals and tests (storyeval.meta.answer_extras): its own step,
        # computed once for the terminal and the page
        from storyeval.meta.answer import answer_table

        stages.start("the answer: intervals and tests of the best measures", bars=True)
        answer_table(result)
        stages.done()
    shown, extra_files, page_tables = meta_wmt.extras(args, dataset, result)
    if args.format in ("table", "md"):  # the answer first, as index.html opens with it
        sys.stdout.write(_answer_text(result, args))
    sys.stdout.write(render(result, args.format, digits=args.digits))
    sys.stdout.write(meta_wmt.render_extras(shown, args.format, args.digits))
    if args.out is not None:
        stages.start(f"writing {args.out}")
        paths = write_report(result, args.out, figures=not args.no_figures, digits=args.digits,
                             overwrite=args.overwrite, figure_formats=args.figure_format,
                             figure_workers=workers, extra=extra_files,
                             extra_tables=page_tables,
                             warnings=_run_warnings())
        stages.done()
        print(f"wrote {len(paths)} files to {args.out}", file=sys.stderr)
    return 0


def _answer_text(result, args: argparse.Namespace) -> str:
    """The answer (`storyeval.report.answer`) before the grids: one line per level and
    criterion (the best measure, its correlation and interval, the test against the next
    measure; index.html adds the top group), then its notes."""
    from storyeval.report.answer import answer_lines, answer_notes, answer_table
    from storyeval.report.present import current_width, wrap_lines

    table = answer_table(result, digits=args.digits)
    if table.empty:
        return ""
    md = args.format == "md"
    width = None if md else current_width()
    head = ("## " if md else "") + "Answer: which measure agrees best with the humans\n\n"
    lines = wrap_lines(answer_lines(table), width, prefix="- " if md else "")
    notes = wrap_lines(answer_notes(result), width, prefix="> " if md else "# ")
    return head + "".join(f"{line}\n" for line in [*lines, "", *notes]) + "\n"


def _run_warnings() -> list[str]:
    """storyeval's warnings so far in this command (for index.html)."""
    from storyeval.cli import RUN_WARNINGS

    return list(RUN_WARNINGS)


def _add_resampling(result, args: argparse.Namespace):
    from storyeval.exceptions import InputError

    for name in ("resamples", "permutations", "chance", "test_permutations"):
        if getattr(args, name) < 0:
            raise InputError(f"--{name.replace('_', '-')} must be >= 0")
    if args.ci == "bootstrap":
        from storyeval.meta.resampling import add_bootstrap_ci

        result = add_bootstrap_ci(result, n_resamples=args.resamples,
                                  resample_by=args.resample_by, ci_method=args.ci_method,
                                  confidence_level=args.confidence_level,
                                  random_state=args.seed)
    if args.permutations:
        from storyeval.meta.resampling import add_permutation_pvalues

        result = add_permutation_pvalues(result, n_permutations=args.permutations,
                                         unit=args.permutation_unit, random_state=args.seed)
    if args.chance:
        from storyeval.meta.resampling import add_chance

        result = add_chance(result, n_draws=args.chance,
                            confidence_level=args.confidence_level, random_state=args.seed)
    return result
