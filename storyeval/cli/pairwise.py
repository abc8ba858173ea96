"""storyeval pairwise: pairwise judging (win matrices, Bradley-Terry strengths, position
consistency, judge accuracy), pairwise accuracy of pointwise measures, and the side-by-side
judging prompt.

Sub-commands:

    storyeval pairwise matrix VERDICTS [--dimension D] [--by system|story] [--judge J]
    storyeval pairwise strengths VERDICTS [--dimension D] [--ties davidson|half|drop]
                                          [--resamples 1000] [--resample prompt|battle]
                                          [--confidence-level 0.95] [--seed 0] [--out DIR]
    storyeval pairwise strengths --matrix W.csv [--ties-matrix T.csv]
    storyeval pairwise consistency VERDICTS
    storyeval pairwise accuracy VERDICTS --reference HUMAN_VERDICTS [--tie-credit 0]
                                [--interval auto|exact|wilson|cluster-bootstrap|cluster-t|none]
                                [--cluster auto|prompt|pair|none] [--chance P]
    storyeval pairwise counts K/N [K/N ...] [--chance 0.5] [--alternative two-sided]
    storyeval pairwise compare VERDICTS --reference HUMAN_VERDICTS
                               [--test auto|mcnemar|mcnemar-exact|permutation|bootstrap|
                                       cluster-t] [--alpha 0.05]
    storyeval pairwise ranking VERDICTS --reference HUMAN_VERDICTS [--judge J]
                               [--strength win-rate|bradley-terry] [--resamples 1000]
    storyeval pairwise panel JUDGES --human HUMAN_VERDICTS [--loo-pool mean|majority|ppi]
                             [--test permutation|bootstrap|cluster-t] [--seed 0]
    storyeval pairwise strengths --human H.csv --judge J.csv [--estimand bradley-terry|win-rate]
                                 [--variance prompt|comparison] [--scaling per-model|total]
    storyeval pairwise pointwise [--data FILE] [--scores FILE ...] [--preferences FILE]
                                 [--metrics SPEC] [--criteria LIST]
                                 [--human-ties exclude|include] [--tie-credit 0.5]
    storyeval pairwise from-scores [--data FILE] [--scores FILE ...] (--metrics SPEC | --humans)
                                   [--criteria LIST] [--tie-margin 0] --out VERDICTS.csv
    storyeval pairwise bias VERDICTS [--reference HUMAN_VERDICTS] [--own JUDGE=SYSTEM ...]
                            [--reference-judge J] [--lengths FILE] [--length-controlled]
    storyeval pairwise template --prompt FILE --story-a FILE --story-b FILE [--dimensions LIST]
    storyeval pairwise judge --backend openai|hf|vllm --model NAME [--base-url URL]
                             (--stories FILE | --dataset hanna) [--systems LIST] [--limit N]
                             [--dimensions LIST] [--no-overall] [--one-order] [--tries N]
                             --cache PATH --out VERDICTS.csv [--dry-run] [--cache-only]

Verdict files: CSV, TSV or JSON lines with ``prompt_id, story_a, story_b, dimension, verdict
(A/B/same), order (AB/BA)`` and optional ``judge``, ``system_a``, ``system_b``
(see `storyeval.pairwise.verdicts`). Exit codes: 0 ok, 1 ``judge``: some requests failed
after their retries (rerun to resume), 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from storyeval.cli.common import (
    add_data_options,
    add_format_option,
    add_include_reference_option,
    add_out_option,
    add_progress_option,
    stages,
)
from storyeval.cli.llm_options import (
    add_backend_model_options,
    add_price_option,
    add_sampling_and_transport_options,
    add_shard_option,
    backend_from_args,
    cost_of_run,
    dry_run_cost,
    for_file,
    sampling_from_args,
    shard_from_args,
    shard_settings,
)
from storyeval.report.present import MEASURE_ID, wrap_text

#: Options of `pairwise judge` that shards merged together must share.
JUDGE_SHARD_SETTINGS = ("judge", "dataset", "systems", "limit", "dimensions", "no_overall",
                        "one_order", "tries", "template", "dimensions_file")

if TYPE_CHECKING:
    import pandas as pd

    from storyeval._progress import Stages
    from storyeval.data import Dataset

_ACTIONS = ("matrix", "strengths", "consistency", "accuracy", "counts", "compare", "ranking",
            "pointwise", "from-scores", "template", "judge", "bias", "genrm", "prepare",
            "votes", "select", "panel")


def _split(text: str | None) -> list[str] | None:
    if text is None or text.strip().lower() == "all":
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


SEED_HELP = "random seed of the resampling (default: 0; printed with the results)"
OUT_HELP = ("the tables as CSV (full precision) and index.html, a page that opens with the "
            "answer (the best judge or measure per dimension, its interval and test)")


def _report(args: argparse.Namespace, title: str, tables: dict, notes: str,
            answer: pd.DataFrame | None, caption: str) -> None:
    """``--out``: the tables and index.html (`storyeval.cli.common.write_tables_report`)."""
    if getattr(args, "out", None) is None:
        return
    from storyeval.cli.common import write_tables_report

    facts = [(k, str(v)) for k, v in (
        ("verdicts", getattr(args, "verdicts", None)),
        ("reference", getattr(args, "reference", None)),
        ("data", getattr(args, "data", None)),
        ("seed", getattr(args, "seed", None))) if v is not None]
    write_tables_report(args, command="pairwise", title=title, tables=tables,
                        notes=[line for line in notes.splitlines() if line.strip()],
                        facts=facts, answer=answer, answer_caption=caption)


def best_rows(table: pd.DataFrame, by: str, value: str, keep: list[str]) -> pd.DataFrame:
    """Per ``by`` group, the top of the table, with a column ``answer`` after ``by``: with
    intervals (``ci_low``, ``ci_high``), the leader and every row whose interval overlaps the
    leader's ("tied at the top"; a leader whose interval is clear of every other row's is
    "best"); without, the rows with the largest ``value`` ("largest, no interval" or, several
    equal, "tied")."""
    import numpy as np
    import pandas as pd

    if table.empty or value not in table:
        return table.iloc[:0]
    cols = [c for c in keep if c in table.columns]
    parts = []
    for _, group in table.groupby(by, sort=False):
        group = group.sort_values(value, ascending=False, kind="stable")
        lead = group.iloc[0]
        has_ci = {"ci_low", "ci_high"} <= set(group.columns) and np.isfinite(
            [float(lead["ci_low"]), float(lead["ci_high"])]).all()
        if has_ci:
            top = group[group["ci_high"].astype(float) >= float(lead["ci_low"])]
            answer = "best" if len(top) == 1 else "tied at the top"
        else:
            top = group[group[value] == lead[value]]
            answer = "largest, no interval" if len(top) == 1 else "tied"
        parts.append(top[cols].assign(answer=answer))
    out = pd.concat(parts)
    return out[[by, "answer", *[c for c in cols if c != by]]]


def seed_note(seed: int | None) -> str:
    """The line that says which seed the resampling used."""
    return f"random seed: {seed} (--seed; the same seed gives the same numbers)\n"


def with_seed(frame: pd.DataFrame, seed: int | None, fmt: str = "csv") -> pd.DataFrame:
    """``frame`` with a ``seed`` column for the machine-readable formats (csv, json; the text
    formats say it in a note under the table)."""
    return frame.assign(seed=seed) if fmt in ("csv", "json") else frame


def _add_strengths_parser(sub: argparse._SubParsersAction) -> None:
    """`pairwise strengths`: a leaderboard from a verdict file, or strengths from a matrix."""
    from storyeval.cli import add_raw_csv_option
    from storyeval.cli.common import add_out_option

    p = sub.add_parser("strengths", help="Bradley-Terry leaderboard: strengths with bootstrap "
                                         "CIs over prompts, rank intervals, significance groups; "
                                         "or a bare win matrix with standard errors")
    p.add_argument("verdicts", type=Path, nargs="?", metavar="VERDICTS",
                   help="verdict file (.csv, .tsv, .jsonl); or give --matrix")
    p.add_argument("--matrix", type=Path, metavar="W.csv",
                   help="a square win matrix (row beat column; item names in the header row "
                        "and first column, or bare numbers): strengths with observed-"
                        "information standard errors and Wald intervals")
    p.add_argument("--ties-matrix", type=Path, metavar="T.csv",
                   help="with --matrix: the symmetric tie counts")
    p.add_argument("--position-verdicts", action="store_true",
                   help="the verdict column names screen positions (A = shown first) "
                        "rather than story_a / story_b")
    add_format_option(p)
    p.add_argument("--digits", type=int, default=3, help="decimals shown (default: 3)")
    p.add_argument("--dimension", help="dimension (needed when the file holds several)")
    p.add_argument("--by", choices=["system", "story"], default="system")
    p.add_argument("--judge", metavar="NAME|J.csv",
                   help="keep one judge's verdicts (default: all); with --human and no "
                        "VERDICTS: the judge's verdict file")
    p.add_argument("--ties", choices=["davidson", "half", "drop"], default="davidson",
                   help="how ties enter: Davidson's tie model (default), half a win each, or "
                        "dropped")
    p.add_argument("--regularization", type=float, default=0.0,
                   help="ridge penalty R * sum(theta^2) on the log-strengths, equal to "
                        "choix's alpha (default 0: plain MLE)")
    p.add_argument("--resamples", type=int, default=None,
                   help="bootstrap resamples (0: no interval; default 1000; with --human: "
                        "default 0, the sandwich's normal intervals)")
    p.add_argument("--resample", choices=["prompt", "battle"], default="prompt",
                   help="bootstrap unit: prompts (default) or single verdicts (FastChat's)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--alpha", type=float, default=0.05,
                   help="BH false discovery rate of the significance groups (default 0.05)")
    p.add_argument("--strong-weight", type=float, default=1.0,
                   help="weight of a strong graded verdict (A>>B); Arena-Hard uses 3")
    p.add_argument("--seed", type=int, default=0, help="random seed of the bootstrap (0)")
    p.add_argument("--control", metavar="COL[,COL]",
                   help="covariate control (e.g. length): columns COL_a and COL_b of the "
                        "verdicts enter the fit; prints controlled and uncontrolled strengths "
                        "side by side (ties count half)")
    p.add_argument("--no-progress", action="store_true",
                   help="no stage lines or progress bar (they are drawn on a terminal only; "
                        "also STORYEVAL_NO_PROGRESS=1)")
    _add_ppr_options(p)
    add_out_option(p, "an HTML report (forest plot, table, pairwise tests) and CSV files; "
                      "with --matrix or --control: the strengths table as CSV and index.html")
    add_raw_csv_option(p)


def _add_ppr_options(p: argparse.ArgumentParser) -> None:
    """`pairwise strengths --human H.csv --judge J.csv`: prediction-powered strengths."""
    g = p.add_argument_group(
        "prediction-powered (few human, many judge verdicts)",
        "--human H.csv with --judge J.csv (or the judge file as VERDICTS, then --judge keeps "
        "one judge): strengths or win rates with rank-sets of a stated coverage")
    g.add_argument("--human", type=Path, metavar="H.csv",
                   help="human verdicts on a random subset of the comparisons the judge judged")
    g.add_argument("--judge-name", metavar="NAME",
                   help="with --human --judge J.csv: keep this judge of J.csv")
    g.add_argument("--estimand", choices=["bradley-terry", "win-rate"], default="bradley-terry",
                   help="PPI++ Bradley-Terry log-strengths (default) or the win rates of "
                        "Chatzi et al. 2024")
    g.add_argument("--method", choices=["ppi++", "ppi", "human", "judge"], default="ppi++",
                   help="ppi++ (lambda tuned, default), ppi (lambda 1), human (human verdicts "
                        "alone), judge (win rates only: the judge alone, uncorrected)")
    g.add_argument("--lam", type=float, default=None, help="a fixed lambda in [0, 1]")
    g.add_argument("--variance", choices=["prompt", "comparison"], default="prompt",
                   help="cluster-robust over prompts (default) or independent comparisons "
                        "(ppi-python's and the published code's)")
    g.add_argument("--scaling", choices=["per-model", "total"], default="per-model",
                   help="win rates: squared deviations over n_m^2 (default) or over the total "
                        "n^2 (the published code's; undercovers)")
    g.add_argument("--tie-credit", type=float, default=0.5,
                   help="win rates: a tie's credit for each side (0.5; the published code: 0)")
    g.add_argument("--reference", metavar="ITEM",
                   help="Bradley-Terry: fix this item at log-strength 0 (default: centred)")


def _run_ppr(args: argparse.Namespace) -> int:
    """`pairwise strengths --human H.csv`: prediction-powered strengths and rank-sets."""
    from storyeval import pairwise as pw
    from storyeval.exceptions import InputError
    from storyeval.report.tables import format_table

    conflicts = [opt for opt, on in (("--matrix", args.matrix is not None),
                                     ("--control", bool(args.control)),
                                     ("--resample battle", args.resample != "prompt"))
                 if on]
    if conflicts:
        raise InputError(f"--human does not combine with {conflicts[0]}")
    if args.verdicts is not None:
        judge_path, judge_name = args.verdicts, args.judge
        if args.judge_name is not None:
            raise InputError("--judge-name is for --judge J.csv; with a VERDICTS file use "
                             "--judge NAME")
    elif args.judge is not None:
        judge_path, judge_name = Path(args.judge), args.judge_name
    else:
        raise InputError("--human needs the judge's verdicts: --judge J.csv (or VERDICTS)")
    refers = "position" if args.position_verdicts else "story"
    human = pw.read_verdicts(args.human, verdict_refers_to=refers)
    judge = pw.read_verdicts(judge_path, verdict_refers_to=refers)
    sources = {"human_source": str(args.human), "judge_source": str(judge_path)}
    common = {"dimension": args.dimension, "by": args.by, "judge_name": judge_name}
    if args.estimand == "win-rate":
        table, note = _ppr_win_rates(args, human, judge, common, sources)
    else:
        table, note = _ppr_strengths(args, human, judge, common, sources)
    sys.stdout.write(format_table(table, args.format, digits=args.digits))
    if args.format in ("table", "md"):
        sys.stdout.write(wrap_text("\n" + note + "\n"))
    title = ("Prediction-powered " + ("win rates" if args.estimand == "win-rate"
                                      else "Bradley-Terry strengths") + " and rank-sets")
    _report(args, title, {"strengths": table}, note, None, "")
    return 0


def _ppr_win_rates(args, human, judge, common, sources):
    from storyeval.exceptions import InputError
    from storyeval.pairwise.ppr import prediction_powered_ranking

    if args.reference is not None:
        raise InputError("--reference is for --estimand bradley-terry")
    res = prediction_powered_ranking(
        human, judge, **common, **sources, method=args.method, lam=args.lam,
        tie_credit=args.tie_credit, scaling=args.scaling, cluster=args.variance,
        confidence_level=args.confidence_level)
    s = res.settings
    note = (f"estimand: each item's human win rate (a tie counts {args.tie_credit:g}); "
            f"{args.method}, lambda {res.lam:.3g}; {s['n_labelled']} human-labelled and "
            f"{s['n_unlabelled']} judge-only comparisons in all (the columns n_labelled and "
            f"n_unlabelled, where shown, count each item's own); se: {args.variance}-clustered "
            f"sandwich (no bootstrap for win rates), {args.scaling} scaling; rank-sets cover the ranking of all items together with "
            f"probability >= {args.confidence_level:g} (asymptotically; chi-square with k "
            "degrees of freedom, Chatzi et al. 2024)")
    return res.table, note


def _ppr_interval_note(args: argparse.Namespace, variance: str) -> str:
    if "bootstrap" in variance:
        return (f"; intervals: {args.confidence_level:g} percentile bootstrap over prompts "
                f"({variance.split('(')[1].rstrip(')')} resamples valid, seed {args.seed}; each "
                "refitted at the estimate's lambda), rank-sets from the bootstrap covariance; ")
    return (f"; intervals: normal {args.confidence_level:g}, {args.variance}-clustered "
            "sandwich (--resamples N: prompt bootstrap); ")


def _ppr_strengths(args, human, judge, common, sources):
    from storyeval.exceptions import InputError
    from storyeval.pairwise.ppi_strengths import ppi_bradley_terry

    if args.method == "judge":
        raise InputError("--method judge is for --estimand win-rate (the judge's own "
                         "strengths: pairwise strengths J.csv)")
    lam = {"ppi": 1.0, "human": 0.0}.get(args.method, args.lam)
    if args.method != "ppi++" and args.lam is not None:
        raise InputError(f"--lam fixes lambda of --method ppi++; --method {args.method} sets it")
    table, res = ppi_bradley_terry(human, judge, **common, **sources, lam=lam,
                                   reference=args.reference, variance=args.variance,
                                   confidence_level=args.confidence_level,
                                   n_resamples=args.resamples, random_state=args.seed)
    if not res.converged:
        raise InputError(f"no prediction-powered strengths: {res.reason}")
    note = ("estimand: Bradley-Terry log-strengths of the human verdicts (a tie counts half), "
            + (f"fixed at 0 for {args.reference}" if args.reference else "centred (mean 0)")
            + f"; {args.method} (PPI++ for the logistic model), lambda {res.lam:.3g}; "
            f"{res.n_labelled} human-labelled and {res.n_unlabelled} judge-only comparisons "
            "in all (the columns n_labelled and n_unlabelled count each item's own)"
            + _ppr_interval_note(args, res.variance) +
            "human_*: the human verdicts alone; width_ratio = se / human_se; rank-sets cover "
            f"the ranking of all items together with probability >= "
            f"{args.confidence_level:g} (asymptotically; chi-square with k - 1 degrees of "
            "freedom)")
    return table, note


def _run_strengths(args: argparse.Namespace) -> int:
    from storyeval import pairwise as pw
    from storyeval.cli.common import check_out_args
    from storyeval.exceptions import InputError
    from storyeval.report.tables import format_table

    check_out_args(args)
    if args.human is not None:
        args.resamples = 0 if args.resamples is None else args.resamples
        return _run_ppr(args)
    args.resamples = 1000 if args.resamples is None else args.resamples
    if args.judge_name is not None:
        raise InputError("--judge-name needs --human H.csv --judge J.csv")
    if args.resamples < 0:
        raise InputError("--resamples must be >= 0")
    if (args.matrix is None) == (args.verdicts is None):
        raise InputError("give a verdict file or --matrix W.csv (one of them)")
    if args.matrix is not None:
        from storyeval.pairwise.bt_matrix import bradley_terry_matrix, read_win_matrix

        wins = read_win_matrix(args.matrix)
        ties = read_win_matrix(args.ties_matrix) if args.ties_matrix is not None else None
        if ties is not None and list(ties.index) != list(wins.index):
            raise InputError(f"{args.ties_matrix}: its items {list(ties.index)} differ from "
                             f"those of {args.matrix} {list(wins.index)}")
        result = bradley_terry_matrix(wins, ties, ties_model=args.ties,
                                      confidence_level=args.confidence_level)
        sys.stdout.write(format_table(result, args.format, digits=args.digits))
        _report(args, "Bradley-Terry strengths of a win matrix", {"strengths": result},
                f"win matrix: {args.matrix}; ties: {args.ties_matrix or 'none'} "
                f"({args.ties}); observed-information standard errors, Wald "
                f"{args.confidence_level:g} intervals", None, "")
        return 0
    from storyeval._progress import Stages
    from storyeval.pairwise.leaderboard import leaderboard

    show = False if args.no_progress else None
    stages = Stages(show)  # a large verdict file takes a while: say what runs (on a terminal)
    refers = "position" if args.position_verdicts else "story"
    stages.start(f"reading {args.verdicts.name}")
    verdicts = pw.read_verdicts(args.verdicts, verdict_refers_to=refers)
    stages.done(f"{len(verdicts):,} verdicts")
    if args.control:
        from storyeval.pairwise.style_control import controlled_strengths

        if args.resample != "prompt":
            raise InputError("--control resamples prompts; --resample battle is for the "
                             "uncontrolled leaderboard")

        stages.start(f"fitting the controlled model, {args.resamples} bootstrap resamples of "
                     "prompts", bars=True)
        table, coef = controlled_strengths(verdicts, _split(args.control) or [],
                                           dimension=args.dimension, by=args.by,
                                           judge=args.judge, n_resamples=args.resamples,
                                           confidence_level=args.confidence_level,
                                           random_state=args.seed, show_progress=show)
        stages.done(f"{len(table)} items")
        sys.stdout.write(format_table(table, args.format, digits=args.digits))
        if args.format in ("table", "md"):
            sys.stdout.write("\ncoefficients (log-odds per SD of the covariate difference):\n"
                             + format_table(coef, args.format, digits=args.digits))
            sys.stdout.write(
                f"\nintervals (controlled strengths, coefficients): {args.confidence_level:g} "
                f"percentile bootstrap over prompts ({args.resamples} resamples, seed "
                f"{args.seed}); se: bootstrap standard deviation\n")
        _report(args, "Bradley-Terry strengths with covariate control",
                {"strengths": table, "coefficients": coef},
                f"covariates: {args.control} (columns COL_a and COL_b of the verdicts); "
                "coefficients in log-odds per SD of the covariate difference; ties count half; "
                f"intervals: {args.confidence_level:g} percentile bootstrap over prompts "
                f"({args.resamples} resamples, seed {args.seed})", None, "")
        return 0
    stages.start(f"fitting Bradley-Terry, {args.resamples} bootstrap resamples of "
                 f"{args.resample}s", bars=True)
    board = leaderboard(verdicts, dimension=args.dimension, by=args.by, judge=args.judge,
                        ties=args.ties, regularization=args.regularization,
                        n_resamples=args.resamples, confidence_level=args.confidence_level,
                        resample=args.resample, alpha=args.alpha,
                        strong_weight=args.strong_weight, random_state=args.seed,
                        show_progress=show)
    stages.done(f"{len(board.items)} items")
    if args.format in ("table", "md"):  # the answer first, in words
        from storyeval.report.leaderboard import leaderboard_answer

        lines = leaderboard_answer(board, digits=args.digits)
        sys.stdout.write(wrap_text("\n".join(lines) + "\n\n"))
    sys.stdout.write(format_table(board.table, args.format, digits=args.digits))
    if args.format in ("table", "md"):
        sys.stdout.write(wrap_text(
            f"\nintervals: {args.confidence_level:g} percentile bootstrap over "
            f"{args.resample}s ({args.resamples} resamples, seed {args.seed}); rank_ci_*: "
            "percentile interval of the bootstrap ranks; rank_ci_aware: 1 + items whose "
            f"interval lies wholly above; group: paired bootstrap tests, BH at {args.alpha:g}\n"))
    if args.out is not None:
        from storyeval.report.leaderboard import write_leaderboard_report

        write_leaderboard_report(board, args.out, overwrite=args.overwrite, digits=args.digits,
                                 source=str(args.verdicts))
    return 0


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
        add_progress_option(p)
        return p

    p = verdict_parser("matrix", "win / loss / tie counts per pair of items")
    p.add_argument("--dimension", help="dimension (needed when the file holds several)")
    p.add_argument("--by", choices=["system", "story"], default="system")
    p.add_argument("--judge", help="keep one judge's verdicts (default: all)")

    _add_strengths_parser(sub)

    verdict_parser("consistency", "position consistency and first-position win rate")

    p = verdict_parser("accuracy", "judge accuracy against human verdicts (k/n, and the "
                                   "order-balanced accuracy beside it)")
    p.add_argument("--reference", type=Path, required=True, metavar="FILE",
                   help="human verdict file on the same pairs")
    p.add_argument("--judge", help="keep one judge (default: one row per judge)")
    p.add_argument("--dimension", help="keep one dimension (default: one row per dimension)")
    p.add_argument("--tie-credit", type=float, default=0.0,
                   help="credit for a judge's 'same' on a human-decided pair (default 0)")
    p.add_argument("--aggregate", choices=["none", "net"], default="none",
                   help="none (default): every verdict counts; net: one verdict per pair, the "
                        "net verdict over both presentation orders, a tie or an inconsistent "
                        "pair wrong (the rule of JudgeBench-style benchmarks)")
    _add_inference_options(p, interval=True)
    add_out_option(p, OUT_HELP)

    _add_counts_parser(sub)
    p = verdict_parser("compare", "compare judges on the same pairs: paired tests, BH over "
                                  "judge pairs, significance groups")
    p.add_argument("--reference", type=Path, required=True, metavar="FILE",
                   help="human verdict file on the same pairs")
    p.add_argument("--dimension", help="keep one dimension (default: each dimension)")
    p.add_argument("--tie-credit", type=float, default=0.0,
                   help="credit for a judge's 'same' on a human-decided pair (default 0)")
    p.add_argument("--test", choices=["auto", "mcnemar", "mcnemar-exact", "permutation",
                                      "bootstrap", "cluster-t"],
                   default="auto",
                   help="paired test: McNemar's score test with the Tango interval that "
                        "inverts it (mcnemar), or the exact McNemar test beside that interval "
                        "(mcnemar-exact) (independent pairs); cluster sign-flip permutation "
                        "with the interval that inverts it, paired cluster bootstrap (with a "
                        "cluster-bootstrap percentile interval) or cluster-robust t with the interval that inverts it (cluster-t, G - 1 "
                        "df; few prompts) (clustered pairs); auto: mcnemar without clusters, "
                        "else permutation (default). Column agreement: whether the interval "
                        "and the p-value agree about 0")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="false discovery rate of the significance groups (BH over all judge "
                        "pairs of a dimension; default 0.05). --format csv prints the "
                        "comparisons, json both tables")
    _add_inference_options(p, interval=False)
    add_out_option(p, OUT_HELP)
    p = verdict_parser("ranking", "judge-vs-human agreement on system rankings and items "
                                  "(Spearman, Kendall; prompt bootstrap)")
    p.add_argument("--reference", type=Path, required=True, metavar="FILE",
                   help="human verdict file on the same systems")
    p.add_argument("--judge", help="the judge of VERDICTS (needed when it holds several)")
    p.add_argument("--strength", choices=["win-rate", "bradley-terry"], default="win-rate",
                   help="system strength per dimension (default: win rate, ties half)")
    p.add_argument("--resamples", type=int, default=1000,
                   help="prompt-bootstrap resamples (0: no interval; default 1000)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0, help=SEED_HELP)
    add_out_option(p, OUT_HELP)
    p = verdict_parser("panel", "pool several judges (mean, majority, PPI-weighted), their "
                                "weights, leave-one-judge-out rankings, pool vs best judge")
    p.add_argument("--human", type=Path, required=True, metavar="H.csv",
                   help="human verdicts on a random subset of the judges' comparisons")
    p.add_argument("--dimension", help="dimension (needed when the files hold several)")
    p.add_argument("--by", choices=["system", "story"], default="system")
    p.add_argument("--loo-pool", choices=["mean", "majority", "ppi"], default="mean",
                   help="the pool whose leave-one-judge-out rankings are shown (mean)")
    p.add_argument("--test", choices=["permutation", "bootstrap", "cluster-t"],
                   default="permutation",
                   help="paired prompt-clustered test of pool vs best judge (permutation)")
    p.add_argument("--resamples", type=int, default=2000, help="resamples of the test (2000)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0, help=SEED_HELP)
    add_out_option(p, OUT_HELP)

    _add_pointwise_parser(sub)
    from storyeval.cli import pairwise_from_scores

    pairwise_from_scores.add_parser(sub)

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
    _add_judge_parser(sub)
    from storyeval.cli.pairwise_litbench import add_parsers as add_litbench_parsers

    add_litbench_parsers(sub)
    from storyeval.cli.bias import add_pairwise_parser

    add_pairwise_parser(sub)
    parser.set_defaults(_pairwise_parser=parser)
    return parser


POINTWISE_DESCRIPTION = """\
Pairwise accuracy of pointwise measures: how often a measure orders two stories as people do.
The human side is either the per-story human scores of each criterion (every pair of stories
of one prompt; default) or a file of explicit preferences (--preferences: any pairs, even
across prompts). A measure prefers the story it scores higher; nothing is flipped, so a
lower-is-better measure scores below 0.5. Works on any dataset (--data, --scores); without
--data it uses the embedded HANNA data (generation systems only unless
--include-human-stories). A preference file is a dataset on its own: --preferences with
--scores and no --data compares the score files' measures with the preferences (any story
ids; no ratings table needed).
"""

POINTWISE_EPILOG = """\
preference files (CSV/TSV/JSONL/Parquet): story_a, story_b, winner (a, b, tie, or the id of
the preferred story), optional criterion (without it: one overall criterion, reported as
'preference') and annotator (several preferences of one pair: majority; a draw is a human
tie). Story ids are SYSTEM/PROMPT_ID and must be stories of the data.

examples:
  storyeval pairwise pointwise --metrics "Beluga-13B 1,BLEU" --criteria RE,CH
  storyeval pairwise pointwise --data ratings.csv --scores bleu.csv --scores mine.csv
  storyeval pairwise pointwise --data ratings.csv --scores mine.csv --preferences prefs.csv
  storyeval pairwise pointwise --preferences prefs.csv --scores scores.csv   # no ratings

exit codes: 0 ok, 2 usage or input error.
"""


def _add_inference_options(p: argparse.ArgumentParser, *, interval: bool) -> None:
    g = p.add_argument_group("inference")
    if interval:
        g.add_argument("--interval", default="auto",
                       choices=["auto", "exact", "wilson", "cluster-bootstrap", "cluster-t",
                                "none"],
                       help="interval and test against chance: exact (Clopper-Pearson with the "
                            "exact binomial test) or Wilson (with the score test it inverts) "
                            "for independent pairs only (refused on clustered verdicts: "
                            "declare --cluster none if they are independent), a "
                            "cluster bootstrap or the cluster-robust t (cluster-t, G - 1 df: "
                            "holds its level down to 10 prompts) for clustered pairs; auto: when a "
                            "cluster holds several verdicts, cluster-t below 30 clusters and the "
                            "cluster bootstrap from 30 on, else Wilson (default); none: the "
                            "accuracy table only")
        g.add_argument("--chance", type=float, default=None,
                       help="chance level of the test (default: tie-aware, 0.5 for a judge "
                            "that never says 'same')")
        g.add_argument("--alternative", choices=["two-sided", "greater", "less"],
                       default="two-sided", help="of the test against chance (default "
                                                 "two-sided)")
    g.add_argument("--cluster", choices=["auto", "prompt", "pair", "none"], default="auto",
                   help="dependent verdicts: same prompt, the two orders of a pair, or none; "
                        "auto: prompt when a prompt holds several verdicts of a judge")
    g.add_argument("--resamples", type=int, default=2000,
                   help="bootstrap resamples / permutations (default 2000)")
    g.add_argument("--confidence-level", type=float, default=0.95)
    g.add_argument("--seed", type=int, default=0, help=SEED_HELP)


COUNTS_DESCRIPTION = """\
Accuracy from counts alone (K correct of N pairs, e.g. a paper's 201/301): the exact binomial
test against the chance level with the Clopper-Pearson interval that inverts it, and the score
test with the Wilson interval that inverts it. The pairs are assumed independent (for
clustered pairs, use `pairwise accuracy` on the verdicts).
"""


def _add_counts_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("counts", help="accuracy from counts K/N: exact binomial test, Wilson "
                                      "and exact intervals",
                       description=COUNTS_DESCRIPTION,
                       epilog="example:\n  storyeval pairwise counts 201/301 1053/1959\n\n"
                              "exit codes: 0 ok, 2 usage or input error.",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("counts", nargs="+", metavar="K/N", help="correct / total, e.g. 201/301")
    p.add_argument("--chance", type=float, default=0.5,
                   help="accuracy under the null (default 0.5; see chance_level for ties)")
    p.add_argument("--alternative", choices=["two-sided", "greater", "less"],
                   default="two-sided", help="of the binomial test (default two-sided)")
    p.add_argument("--confidence-level", type=float, default=0.95,
                   help="of the (two-sided) intervals (default 0.95)")
    add_format_option(p)
    p.add_argument("--digits", type=int, default=3, help="decimals shown (default: 3)")
    return p


def _add_pointwise_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "pointwise", help="pairwise accuracy of pointwise measures against human ratings or "
                          "preferences",
        description=POINTWISE_DESCRIPTION, epilog=POINTWISE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    data = p.add_argument_group("data")
    add_data_options(data)
    add_include_reference_option(data)
    data.add_argument("--preferences", type=Path, metavar="FILE",
                      help="human preferences (story_a, story_b, winner[, criterion, "
                           "annotator]) to compare with, instead of the pairs derived from the "
                           "per-story human scores; or a best-of-N file read as is (prompt, "
                           "chosen, rejected: RewardBench 2; chosen_story, rejected_story: "
                           "LitBench) with --scores: best-of-N / RM accuracy")
    what = p.add_argument_group("what to compute")
    what.add_argument("--metrics", default="all", metavar="SPEC",
                      help="measures, as in `storyeval meta --metrics`: all, llm, non-llm, a "
                           "taxonomy family, LLM rater groups (e.g. 'Beluga-13B 1': each "
                           "criterion with its matched rating), names or glob patterns "
                           "(default: all)")
    what.add_argument("--criteria", default="all", metavar="LIST",
                      help="comma-separated criteria or codes (default: all of the dataset's, "
                           "or with --preferences all of the file's)")
    what.add_argument("--human-ties", choices=["exclude", "include"], default="exclude",
                      help="pairs people rated equal: left out (default) or scored as a third "
                           "outcome a measure must match")
    what.add_argument("--tie-credit", type=float, default=0.5,
                      help="credit for a measure tie on a human-decided pair (default 0.5)")
    inf = p.add_argument_group("inference")
    inf.add_argument("--interval", default="none",
                     choices=["none", "auto", "cluster-bootstrap", "cluster-t", "wilson",
                              "exact"],
                     help="add an interval and a test against the tie-aware chance level: "
                          "auto = clustered by prompt (pairs of one prompt share stories; for "
                          "--preferences: by their prompt_id column, else Wilson with the "
                          "score test it inverts): cluster-t below 30 prompts, the cluster "
                          "bootstrap from 30 on; default none")
    inf.add_argument("--resamples", type=int, default=2000,
                     help="cluster-bootstrap resamples (default 2000)")
    inf.add_argument("--confidence-level", type=float, default=0.95)
    inf.add_argument("--seed", type=int, default=0, help=SEED_HELP)
    out = p.add_argument_group("output")
    add_format_option(out)
    out.add_argument("--digits", type=int, default=3, help="decimals shown (default: 3)")
    add_out_option(out, OUT_HELP)
    return p


def _add_judge_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "judge", help="judge story pairs side by side with an LLM (both orders, cached, "
                      "resumable)",
        description="Judge every pair of systems within each prompt side by side, in both "
                    "presentation orders, through an OpenAI-compatible server, a local Hugging "
                    "Face model or the vLLM engine. Answers go to the --cache file the moment "
                    "they arrive (the cache of `storyeval rate`); rerunning resumes and sends "
                    "only what is missing. Writes the verdict table (--out) that the matrix, "
                    "strengths, consistency and accuracy actions read, and the failures "
                    "(unreadable answers with their raw text, failed requests) next to it.",
        epilog="exit codes: 0 ok, 1 some requests failed after retries (rerun to resume), 2 "
               "usage or input error.")
    m = p.add_argument_group("model")
    add_backend_model_options(m)
    m.add_argument("--judge", metavar="LABEL",
                   help="judge label in the verdicts (default: --model, or the folder name of "
                        "a local path)")
    d = p.add_argument_group("stories")
    src = d.add_mutually_exclusive_group()
    src.add_argument("--dataset", choices=("hanna",), default=None,
                     help="hanna: the released HANNA texts (96 prompts x Human + 6 LLMs; "
                          "default when --stories is not given)")
    src.add_argument("--stories", type=Path, metavar="FILE",
                     help="CSV/JSONL/Parquet with story_id, system, prompt_id, prompt, story")
    d.add_argument("--systems", metavar="LIST", help="comma-separated systems to pair")
    d.add_argument("--limit", type=int, metavar="N",
                   help="only the first N prompts (all their pairs)")
    w = p.add_argument_group("what to ask")
    w.add_argument("--dimensions", metavar="LIST",
                   help="comma-separated dimensions (default: Plot, Creativity, Development, "
                        "Language Use)")
    w.add_argument("--no-overall", action="store_true", help="do not ask for an overall line")
    w.add_argument("--one-order", action="store_true",
                   help="show each pair once (story_a first) instead of in both orders")
    w.add_argument("--tries", type=int, default=1,
                   help="answers per pair and order (default: 1); tries > 1 get judge labels "
                        "'LABEL tryT'")
    w.add_argument("--template", type=Path, metavar="FILE", help="a replacement template file")
    w.add_argument("--dimensions-file", type=Path, metavar="FILE",
                   help="a replacement dimensions JSON file")
    add_sampling_and_transport_options(
        p, max_tokens=1024, max_tokens_note="; the assessment comes before the verdicts")
    c = p.add_argument_group("cache and output")
    c.add_argument("--cache", type=Path, default=Path("storyeval-llm-cache.sqlite"),
                   help="answer cache (SQLite, shared with `storyeval rate`; default: "
                        "./storyeval-llm-cache.sqlite)")
    c.add_argument("--cache-only", action="store_true",
                   help="send nothing; use stored answers")
    c.add_argument("--dry-run", action="store_true",
                   help="print the number of requests and a token estimate, send nothing")
    c.add_argument("--out", type=Path, metavar="FILE",
                   help="verdict table to write (.csv, .tsv or .jsonl; required unless "
                        "--dry-run); failures go to FILE's stem + '.failures' + suffix, "
                        "tokens, wall time and cost per judge to FILE's stem + '.cost.csv'")
    add_price_option(c)
    add_shard_option(c, "pairs")
    c.add_argument("--json", action="store_true", help="print the summary as JSON")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    c.add_argument("-v", "--verbose", action="store_true", help="log every retry")
    return p


def _judge_shard(args: argparse.Namespace, shard, pairs):
    """The pairs of ``shard`` (all without one) and the shard's metadata."""
    if shard is None:
        return pairs, None
    from storyeval.data.shards import make_shard_info, pair_ids, shard_rows, sidecar_path

    ids = pair_ids(pairs["story_a"].astype(str), pairs["story_b"].astype(str))
    rows = shard_rows(ids, shard)
    if args.out is None:  # a dry run: the shard's requests only
        return pairs.iloc[rows].reset_index(drop=True), None
    fmt = "jsonl" if args.out.suffix.lower() in (".jsonl", ".json") else args.out.suffix[1:]
    fail_name = args.out.stem + ".failures" + args.out.suffix
    files = [{"role": "main", "name": args.out.name, "format": fmt, "unit": "pair"},
             {"role": "failures", "name": fail_name, "format": fmt, "unit": "pair"}]
    info = make_shard_info(sidecar_path(args.out), command="pairwise judge", shard=shard,
                           settings=shard_settings(args, JUDGE_SHARD_SETTINGS), all_ids=ids,
                           inputs=pairs, extra={"format": fmt, "files": files})
    return pairs.iloc[rows].reset_index(drop=True), info


def _write_table(frame, path: Path) -> None:
    from storyeval._atomic import atomic_path
    from storyeval.exceptions import InputError

    suffix = path.suffix.lower()
    if suffix not in (".csv", ".tsv", ".jsonl", ".json"):
        raise InputError(f"--out {str(path)!r}: unsupported file type {suffix!r}; use .csv, "
                         ".tsv or .jsonl")
    with atomic_path(path) as tmp:  # an interrupted write leaves the previous file intact
        if suffix in (".csv", ".tsv"):
            frame.to_csv(tmp, sep="," if suffix == ".csv" else "\t", index=False)
        else:
            frame.to_json(tmp, orient="records", lines=True, force_ascii=False)


def _run_judge(args: argparse.Namespace) -> int:
    import json
    import logging

    from storyeval.exceptions import InputError
    from storyeval.llm.backends import BackendError
    from storyeval.llm.stories import load_stories
    from storyeval.pairwise.judge import judge_pairs, make_pairs, plan_judging

    if args.tries < 1:
        raise InputError(f"--tries must be >= 1, got {args.tries}")
    if args.dry_run and args.cache_only:
        raise InputError("--dry-run and --cache-only cannot be combined")
    if not args.dry_run and args.out is None:
        raise InputError("--out FILE is required (or use --dry-run)")
    if args.out is not None and args.out.suffix.lower() not in (".csv", ".tsv", ".jsonl",
                                                                 ".json"):
        raise InputError(f"--out {str(args.out)!r}: use a .csv, .tsv or .jsonl file")
    if args.out is not None:
        from storyeval._atomic import check_out_file

        check_out_file(args.out)
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be >= 1, got {args.limit}")
    if args.price is not None:  # a bad price table is refused before anything is sent
        from storyeval.llm.cost import parse_prices

        parse_prices(args.price)
    shard = shard_from_args(args)
    sampling = sampling_from_args(args)
    backend = backend_from_args(args)
    stories = load_stories(args.stories if args.stories is not None else (args.dataset or "hanna"))
    pairs = make_pairs(stories, systems=_split(args.systems) if args.systems else None,
                       limit=args.limit)
    pairs, shard_info = _judge_shard(args, shard, pairs)
    if shard is not None and len(pairs) == 0:
        print(f"shard {shard} holds none of the pairs: nothing to judge")
        if shard_info is not None and not args.dry_run:  # empty outputs for `storyeval merge`
            from storyeval._atomic import atomic_write_bytes, atomic_write_text
            from storyeval.data.shards import record_files

            for name in (f["name"] for f in shard_info.extra["files"]):
                atomic_write_bytes(args.out.with_name(name), b"")
            atomic_write_text(shard_info.path, record_files(shard_info).to_json())
        return 0
    common = {"dimensions": _split(args.dimensions) if args.dimensions else None,
              "overall": not args.no_overall, "both_orders": not args.one_order,
              "tries": args.tries, "sampling": sampling, "judge": args.judge,
              "template": args.template, "dimensions_file": args.dimensions_file}
    if args.dry_run:
        the_plan = plan_judging(pairs, backend, cache=args.cache, **common)
        print(json.dumps(the_plan.to_dict(), indent=2) if args.json else the_plan.summary())
        estimate = None if args.json else dry_run_cost(the_plan, args, the_plan.model)
        if estimate:
            print(estimate)
        return 0
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("storyeval pairwise judge: %(message)s"))
    log = logging.getLogger("storyeval.llm")
    log.addHandler(handler)
    log.setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        try:
            result = judge_pairs(pairs, backend, cache=args.cache, cache_only=args.cache_only,
                                 show_progress=False if args.no_progress else None, **common)
        except BackendError as exc:
            print(f"storyeval pairwise judge: error: {exc}", file=sys.stderr)
            print("storyeval pairwise judge: answers received so far are in the cache; rerun "
                  "to resume", file=sys.stderr)
            return 1
    finally:
        log.removeHandler(handler)
    j = result.judgments
    ok = j["status"] == "ok"
    fail_path = args.out.with_name(args.out.stem + ".failures" + args.out.suffix)
    if ok.any() or shard_info is not None:  # a shard writes its file, even an empty one
        _write_table(for_file(result.verdicts), args.out)
    else:
        print("storyeval pairwise judge: warning: no usable verdict; the verdict file is not "
              "written", file=sys.stderr)
    _write_table(for_file(j[~ok]), fail_path)
    if shard_info is not None:
        from storyeval._atomic import atomic_write_text
        from storyeval.data.shards import record_files

        atomic_write_text(shard_info.path, record_files(shard_info).to_json())
    cost = cost_of_run(j.assign(judge=result.settings["judge"]), args,
                       unit=["prompt_id", "story_a", "story_b"], by="judge")
    cost_path = args.out.with_name(args.out.stem + ".cost.csv")
    if shard_info is None:  # a shard's cost is the merged run's business
        _write_table(for_file(cost), cost_path)
    fails = result.failures()
    summary = {"plan": result.plan.to_dict(), "sent": result.n_sent,
               "answered": result.n_answered, "request_failures": result.n_request_failures,
               "statuses": {k: int(v) for k, v in j["status"].value_counts().items()},
               "settings": result.settings, "cache": str(args.cache),
               "out": str(args.out) if ok.any() else None, "failures_file": str(fail_path),
               "cost": cost.to_dict("records"),
               "cost_file": str(cost_path) if shard_info is None else None}
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        pl = result.plan
        sent = f"written to {args.batch_out}" if args.batch_out else "sent"
        print(f"{pl.model}: {pl.n_requests} requests, {pl.n_cached} from the cache, "
              f"{result.n_sent} {sent}, {result.n_answered} answered, "
              f"{result.n_request_failures} failed")
        print("judgments per judge x dimension:")
        print(fails.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        from storyeval.llm.cost import cost_lines
        from storyeval.report.present import wrap_text

        print(wrap_text("\n".join(cost_lines(cost, item="pair")), prefix="  "))
        print(f"wrote {int(ok.sum())} verdicts to {args.out} and {int((~ok).sum())} failures "
              f"to {fail_path}" + (f"; cost to {cost_path}" if shard_info is None else ""))
    return 1 if result.n_request_failures else 0


def _read(path: Path) -> str:
    from storyeval.exceptions import InputError

    if not path.exists():
        raise InputError(f"file not found: {path}")
    from storyeval.data.io import read_text

    return read_text(path)


def _pointwise_pairs(dataset: Dataset, metrics: str, criteria: str) -> list[tuple[str, str]]:
    """(measure, criterion) pairs chosen as ``storyeval meta`` chooses them."""
    from storyeval.data.selection import criterion_pairs, select_criteria, select_measures

    cat = dataset.catalogue
    pairs = criterion_pairs(cat, select_measures(cat, metrics, presets=dataset.presets),
                            select_criteria(dataset, criteria))
    return list(zip(pairs["measure"], pairs["criterion"]))


def _pointwise_stories(dataset: Dataset, include_reference: bool) -> tuple[Dataset, str]:
    """The dataset without its reference system's stories (unless asked), and a hint for
    preferences naming one of them."""
    from storyeval.exceptions import InputError

    ref = dataset.reference_system
    if include_reference or ref not in dataset.systems:
        return dataset, ""
    if set(dataset.systems) == {ref}:
        raise InputError(f"the data hold only the stories of the reference system {ref!r}, "
                         "left out by default; pass --include-human-stories to use them")
    return (dataset.select_systems(exclude=[ref]),
            (f"; the stories of the reference system {ref!r} are left out unless "
             "--include-human-stories"))


def _dataset_criterion(dataset: Dataset, label: str) -> str | None:
    """The dataset criterion that ``label`` names (name or code, case-insensitive), if any."""
    key = label.strip().lower()
    for crit in dataset.criteria:
        if key in (crit.lower(), str(dataset.criterion_codes.get(crit, crit)).lower()):
            return crit
    return None


def _preference_criteria(dataset: Dataset, labels: list[str], spec: str,
                         source: str) -> list[str]:
    """The criteria of a preference file selected by ``--criteria`` (names or codes)."""
    from storyeval.data.selection import split_spec
    from storyeval.exceptions import InputError

    tokens = split_spec(spec)
    if [t.lower() for t in tokens] == ["all"]:
        return labels
    chosen = set()
    for token in tokens:
        found = [c for c in labels if token.lower() == c.lower()
                 or _dataset_criterion(dataset, token) == c]
        if not found:
            raise InputError(f"--criteria: {source} has no preferences about {token!r}; its "
                             f"criteria are {labels}")
        chosen.update(found)
    return [c for c in labels if c in chosen]


def _preference_pairs(dataset: Dataset, metrics: str,
                      criteria: list[str]) -> list[tuple[str, str]]:
    """(measure, criterion) pairs for preference criteria: a criterion of the dataset pairs as
    in ``storyeval meta`` (an LLM rating with its own criterion); any other criterion (such as
    the overall ``preference``) pairs with every selected measure."""
    from storyeval.data.selection import criterion_pairs, select_measures

    cat = dataset.catalogue
    measures = select_measures(cat, metrics, presets=dataset.presets)
    known = [c for c in criteria if c in dataset.criteria]
    matched = criterion_pairs(cat, measures, known)
    other = [(m, c) for c in criteria if c not in known for m in measures]
    return list(zip(matched["measure"], matched["criterion"])) + other


def _preference_result(dataset: Dataset, args: argparse.Namespace, hint: str
                       ) -> pd.DataFrame:
    """Accuracy of the selected measures against the preferences of ``--preferences``."""
    from storyeval.pairwise import preference_accuracy, read_preferences, story_index

    source = str(args.preferences)
    prefs = read_preferences(args.preferences, story_ids=story_index(dataset.wide()),
                             missing_hint=hint)
    labels = list(dict.fromkeys(prefs["criterion"]))
    canonical = {c: _dataset_criterion(dataset, c) or c for c in labels}
    prefs = prefs.assign(criterion=prefs["criterion"].map(canonical))
    criteria = _preference_criteria(dataset, list(dict.fromkeys(canonical.values())),
                                    args.criteria, source)
    prefs = prefs[prefs["criterion"].isin(criteria)].reset_index(drop=True)
    pairs = _preference_pairs(dataset, args.metrics, criteria)
    return preference_accuracy(dataset.wide(), prefs, pairs, human_ties=args.human_ties,
                               tie_credit=args.tie_credit, source=source,
                               **_interval_args(args))


def _preference_only_result(args: argparse.Namespace) -> pd.DataFrame:
    """A preference file with score files and no ratings table: the stories are the score
    files' story ids, the measures their measures (--metrics: all, or names)."""
    from storyeval.data.selection import split_spec
    from storyeval.exceptions import InputError
    from storyeval.pairwise import preference_accuracy, read_preferences
    from storyeval.pairwise.preferences import preference_scores

    if not args.scores:
        raise InputError("--preferences without --data is a preference-only dataset: give the "
                         "measures' scores with --scores FILE (story_id, measure, value)")
    wide = preference_scores(args.scores)
    hint = (f"; the stories of a preference-only dataset are the story ids of the score "
            f"files ({', '.join(map(str, args.scores))}): every story of a pair needs a score")
    prefs = read_preferences(args.preferences, story_ids=wide.index, missing_hint=hint)
    tokens = split_spec(args.metrics)
    if [t.lower() for t in tokens] == ["all"]:
        measures = list(wide.columns)
    else:
        unknown = [t for t in tokens if t not in wide.columns]
        if unknown:
            raise InputError(f"--metrics: {unknown} not in the score files; their measures are "
                             f"{list(wide.columns)[:20]}")
        measures = tokens
    labels = list(dict.fromkeys(prefs["criterion"]))
    tokens = split_spec(args.criteria)
    if [t.lower() for t in tokens] != ["all"]:
        unknown = [t for t in tokens if t not in labels]
        if unknown:
            raise InputError(f"--criteria: {args.preferences} has no preferences about "
                             f"{unknown}; its criteria are {labels}")
        prefs = prefs[prefs["criterion"].isin(tokens)].reset_index(drop=True)
    return preference_accuracy(wide, prefs, measures, human_ties=args.human_ties,
                               tie_credit=args.tie_credit, source=str(args.preferences),
                               **_interval_args(args))


def _interval_args(args: argparse.Namespace) -> dict:
    """The interval options of `pairwise pointwise` as keyword arguments."""
    from storyeval.exceptions import InputError

    if args.resamples < 1:
        raise InputError("--resamples must be >= 1")
    return {"interval": args.interval, "confidence_level": args.confidence_level,
            "n_resamples": args.resamples, "random_state": args.seed}


def _pointwise_note(args: argparse.Namespace) -> str:
    """What the table compares and how ties count (printed under text tables)."""
    human = (f"human preferences of {args.preferences} (majority per pair of stories)"
             if args.preferences is not None else
             "per-story human scores (every pair of stories of one prompt)")
    ties = ("human ties left out; a measure tie on a human-decided pair earns "
            f"{args.tie_credit:g}" if args.human_ties == "exclude" else
            "human ties included: a tie is a third outcome the measure must match")
    note = (f"\nagainst: {human}\nties: {ties}\ndirection: a measure prefers the story it "
            "scores higher; lower-is-better measures are not flipped (they score below 0.5)\n"
            "measure: display name (CSV and JSON add measure_id, the identifier in the data)\n")
    if args.interval != "none":
        note += ("intervals: two-sided; pvalue: two-sided test of accuracy = chance (a measure "
                 "answering at random with its own tie rate)\n" + seed_note(args.seed))
    return note


def _run_pointwise(args: argparse.Namespace) -> int:
    from storyeval.cli.common import load_dataset_args
    from storyeval.pairwise import pointwise_pairwise_accuracy
    from storyeval.report.tables import format_table

    use_prefs = args.preferences is not None
    if use_prefs and _is_best_of_n(args.preferences):
        return _run_best_of_n(args)
    if use_prefs and args.data is None:
        result = _seeded(_preference_only_result(args), args)
        sys.stdout.write(format_table(_readable(result, args.format), args.format,
                                      digits=args.digits))
        if args.format in ("table", "md"):
            sys.stdout.write(wrap_text(_pointwise_note(args)))
        _pointwise_report(args, result)
        return 0
    dataset = load_dataset_args(args, criteria=None if use_prefs else args.criteria)
    dataset, hint = _pointwise_stories(dataset, args.include_human_stories)
    if use_prefs:
        result = _preference_result(dataset, args, hint)
    else:
        pairs = _pointwise_pairs(dataset, args.metrics, args.criteria)
        result = pointwise_pairwise_accuracy(dataset.wide(), pairs, human_ties=args.human_ties,
                                             tie_credit=args.tie_credit,
                                             **_interval_args(args))
    result = _seeded(_display_names(result, dataset), args)
    shown = result
    if args.format in ("table", "md", "latex"):  # the reader reads the display names
        shown = result.drop(columns=MEASURE_ID, errors="ignore")
    sys.stdout.write(format_table(_readable(shown, args.format), args.format,
                                  digits=args.digits))
    if args.format in ("table", "md"):
        sys.stdout.write(wrap_text(_pointwise_note(args)))
    _pointwise_report(args, result)
    return 0


def _is_best_of_n(path: Path) -> bool:
    from storyeval.data.io import read_table
    from storyeval.pairwise.best_of_n import is_best_of_n_table

    return is_best_of_n_table(read_table(path)[0].columns)


def _run_best_of_n(args: argparse.Namespace) -> int:
    """Best-of-N accuracy (RM accuracy for pairs) of the measures of --scores on the sets of
    a RewardBench 2 / LitBench file."""
    from storyeval.data.selection import split_spec
    from storyeval.exceptions import InputError
    from storyeval.pairwise.best_of_n import best_of_n_accuracy, read_best_of_n
    from storyeval.pairwise.preferences import preference_scores
    from storyeval.report.tables import format_table

    if args.data is not None or not args.scores:
        raise InputError(f"--preferences {args.preferences} is a best-of-N file (chosen and "
                         "rejected texts): give the scores of its stories with --scores FILE "
                         "(from `storyeval score --input` on the same file), without --data")
    sets = read_best_of_n(args.preferences)
    wide = preference_scores(args.scores)
    tokens = split_spec(args.metrics)
    measures = None if [t.lower() for t in tokens] == ["all"] else tokens
    interval = "auto" if args.interval == "none" else args.interval
    result = best_of_n_accuracy(sets, wide, measures, interval=interval,
                                **{k: v for k, v in _interval_args(args).items()
                                   if k != "interval"})
    result = with_seed(result, args.seed, args.format)
    sys.stdout.write(format_table(_readable(result, args.format), args.format,
                                  digits=args.digits))
    if args.format in ("table", "md"):
        sys.stdout.write(wrap_text(
            f"\nagainst: the sets of {args.preferences} (best-of-N: every chosen story must "
            "score strictly above every rejected one; a tie is wrong; with one chosen and one "
            "rejected story this is RM accuracy r_chosen > r_rejected)\nchance: 1 / C(N, "
            "chosen) per set (1/4 for one of four), averaged\nintervals: two-sided, clustered "
            "by prompt text (Wilson when every prompt has one set)\n" + seed_note(args.seed)))
    _report(args, "storyeval pairwise pointwise (best-of-N)", {"best_of_n": result}, "",
            best_rows(result[result["subset"] == "all"], "subset", "accuracy",
                      ["subset", "measure", "accuracy", "ci_low", "ci_high", "pvalue",
                       "n_sets"]),
            "the measure that ranks the chosen stories first most often")
    return 0


def _display_names(result: pd.DataFrame, dataset) -> pd.DataFrame:
    """The ``measure`` column in display names (``BLEU``, not HANNA's ``BLEU Ξ§``), the
    identifiers in a ``measure_id`` column after it (CSV, JSON and the report's files)."""
    from storyeval.report.present import display_names

    catalogue = dataset.catalogue
    return display_names(result, dict(zip(catalogue["measure"], catalogue["display_name"])))


def _pointwise_report(args: argparse.Namespace, result: pd.DataFrame) -> None:
    _report(args, "storyeval pairwise pointwise", {"pointwise": result},
            _pointwise_note(args),
            best_rows(result, "criterion", "accuracy",
                      ["criterion", "measure", "accuracy", "ci_low", "ci_high", "pvalue",
                       "test", "n_pairs"]),
            "per criterion, the measure whose pairwise decisions agree best with the humans: "
            "'best' when its interval is clear of every other measure's, else every measure "
            "whose interval overlaps the leader's, 'tied at the top' (without --interval: the "
            "largest accuracy, untested)")


def _seeded(result: pd.DataFrame, args: argparse.Namespace) -> pd.DataFrame:
    """The seed column when an interval was resampled."""
    return with_seed(result, args.seed, args.format) if args.interval != "none" else result


def run(args: argparse.Namespace) -> int:
    from storyeval.report.tables import format_table

    action = getattr(args, "pairwise_action", None)
    if action is None:
        args._pairwise_parser.print_help()
        return 2
    if getattr(args, "digits", None) is not None:
        from storyeval.report.tables import check_digits

        check_digits(args.digits)
    if action in ("accuracy", "compare", "ranking", "pointwise", "panel"):  # --out DIR
        from storyeval.cli.common import check_out_args

        check_out_args(args)
    if action == "template":
        from storyeval.pairwise import render_side_by_side

        text = render_side_by_side(_read(args.prompt), _read(args.story_a), _read(args.story_b),
                                   dimensions=_split(args.dimensions),
                                   overall=not args.no_overall, template=args.template)
        sys.stdout.write(text)
        return 0
    if action == "judge":
        return _run_judge(args)
    if action in ("genrm", "prepare", "votes", "select"):
        from storyeval.cli.pairwise_litbench import run as run_litbench

        return run_litbench(args)
    if action == "pointwise":
        return _run_pointwise(args)
    if action == "from-scores":
        from storyeval.cli import pairwise_from_scores

        return pairwise_from_scores.run(args)
    if action == "counts":
        return _run_counts(args)
    if action == "strengths":
        return _run_strengths(args)
    if action == "bias":
        from storyeval.cli.bias import run_pairwise

        return run_pairwise(args)

    from storyeval import pairwise as pw

    refers = "position" if args.position_verdicts else "story"
    stage = stages(args)  # large verdict files take a while: say what runs (on a terminal)
    stage.start("reading the verdicts")
    verdicts = pw.read_verdicts(args.verdicts, verdict_refers_to=refers)
    other = None
    if action in ("accuracy", "compare", "ranking"):
        other = pw.read_verdicts(args.reference)
    elif action == "panel":
        other = pw.read_verdicts(args.human, verdict_refers_to=refers)
    stage.done(f"{len(verdicts) + (0 if other is None else len(other)):,} verdicts")
    if action == "matrix":
        result = pw.win_matrix(verdicts, dimension=args.dimension, by=args.by,
                               judge=args.judge).to_frame()
    elif action == "consistency":
        result = pw.position_consistency(verdicts)
    elif action == "accuracy":
        return _run_accuracy(args, verdicts, other, stage)
    elif action == "compare":
        return _run_compare(args, verdicts, other, stage)
    elif action == "panel":
        return _run_panel(args, verdicts, other, stage)
    else:  # ranking
        return _run_ranking(args, verdicts, other, stage)
    sys.stdout.write(format_table(result, args.format, digits=args.digits))
    return 0


def _run_panel(args: argparse.Namespace, judges: pd.DataFrame, human: pd.DataFrame,
               stage: Stages) -> int:
    """`pairwise panel J.csv --human H.csv`: pools, weights, leave-one-out, pool vs best."""
    from storyeval.pairwise.panel import judge_panel
    from storyeval.report.tables import format_table

    _check_resampling(args)
    stage.start(f"pooling judges, {args.resamples:,} resamples")
    res = judge_panel(judges, human, dimension=args.dimension, by=args.by,
                      loo_pool=args.loo_pool, test=args.test,
                      confidence_level=args.confidence_level, n_resamples=args.resamples,
                      random_state=args.seed, judge_source=str(args.verdicts),
                      human_source=str(args.human))
    stage.done()
    s = res.settings
    note = (f"agreement: 1 - |judge score - human score| on the {s['n_labelled']} "
            f"human-labelled of {s['n_comparisons']} comparisons (a tie against a win: 0.5); "
            f"difference: pool - best member ({res.pools['best_member'].iloc[0]}, chosen on "
            f"the same data), paired {args.test} test clustered by prompt, two-sided, "
            f"{args.confidence_level:g} interval; the ppi pool's weights are fitted on the "
            "same labels (its test is optimistic); lam, rank-sets: prediction-powered win "
            "rates (PPI++) with the pool or judge as the judge; loo_*: the "
            f"{args.loo_pool} pool's ranking without the judge vs with all (Kendall tau-b, "
            "items whose rank changes, largest change)\n" + seed_note(args.seed))
    if args.format in ("csv", "json"):  # the pools; --out writes every table
        sys.stdout.write(format_table(with_seed(res.pools, args.seed, args.format),
                                      args.format, digits=args.digits))
    else:
        sys.stdout.write("pools against the best single judge:\n"
                         + format_table(res.pools, args.format, digits=args.digits)
                         + "\njudges:\n"
                         + format_table(res.judges, args.format, digits=args.digits))
        sys.stdout.write(wrap_text("\n" + note))
    _report(args, "Judge panel: pools, weights and leave-one-judge-out rankings",
            {"pools": res.pools, "judges": res.judges, "rankings": res.rankings}, note,
            None, "")
    return 0


def _readable(frame: pd.DataFrame, fmt: str) -> pd.DataFrame:
    """p-value columns as text for the human-readable formats (full precision otherwise)."""
    from storyeval.report.present import p_text

    if fmt not in ("table", "md", "latex"):
        return frame
    out = frame.copy()
    for col in [c for c in out.columns if str(c).startswith("pvalue")]:
        out[col] = out[col].map(p_text)
    return out


def _check_resampling(args: argparse.Namespace, minimum: int = 1) -> None:
    from storyeval.exceptions import InputError

    if args.resamples < minimum:
        raise InputError(f"--resamples must be >= {minimum}")


def _run_counts(args: argparse.Namespace) -> int:
    from storyeval.pairwise.inference import accuracy_from_counts
    from storyeval.report.tables import format_table

    result = accuracy_from_counts(args.counts, chance=args.chance,
                                  alternative=args.alternative,
                                  confidence_level=args.confidence_level)
    sys.stdout.write(format_table(_readable(result, args.format), args.format,
                                  digits=args.digits))
    if args.format in ("table", "md"):
        level = f"{100 * args.confidence_level:g}%"
        sys.stdout.write(f"\ntests of accuracy = {args.chance:g}, {args.alternative}: "
                         "pvalue exact binomial (exact_low/high, Clopper-Pearson, inverts it), "
                         "pvalue_score score test (wilson_low/high inverts it)\n"
                         f"intervals: {level}, two-sided; pairs assumed independent\n")
    return 0


def _run_accuracy(args: argparse.Namespace, verdicts: pd.DataFrame,
                  reference: pd.DataFrame, stage: Stages) -> int:
    from storyeval.pairwise import judge_accuracy
    from storyeval.pairwise.inference import judge_accuracy_inference
    from storyeval.report.tables import format_table

    stage.start("judge accuracy" + ("" if args.interval == "none" else
                                    f", {args.interval} intervals and tests"))
    result = judge_accuracy(verdicts, reference, judge=args.judge, dimension=args.dimension,
                            tie_credit=args.tie_credit, aggregate=args.aggregate)
    if args.interval != "none":
        _check_resampling(args)
        options = dict(judge=args.judge, dimension=args.dimension, tie_credit=args.tie_credit,
                       cluster=args.cluster, chance=args.chance, alternative=args.alternative,
                       confidence_level=args.confidence_level, n_resamples=args.resamples,
                       random_state=args.seed, aggregate=args.aggregate)
        inf = judge_accuracy_inference(verdicts, reference, method=args.interval, **options)
        keep = ["judge", "dimension", "ci_low", "ci_high", "pvalue", "test", "agreement",
                "chance", "alternative", "method", "cluster", "n_clusters", "n_resamples"]
        result = result.merge(inf[keep], on=["judge", "dimension"], how="left")
        result = _balanced_interval(result, verdicts, reference, options)
        result = with_seed(result, args.seed, args.format)
    result = _accuracy_columns_in_order(result)
    stage.done()
    sys.stdout.write(format_table(_readable(result, args.format), args.format,
                                  digits=args.digits))
    if args.format in ("table", "md"):
        sys.stdout.write(wrap_text(_accuracy_note(args)))
    _report(args, "storyeval pairwise accuracy", {"accuracy": result}, _accuracy_note(args),
            best_rows(result, "dimension", "accuracy",
                      ["dimension", "judge", "accuracy", "ci_low", "ci_high", "pvalue", "test",
                       "balanced_accuracy", "n_verdicts"]),
            "per dimension, the judge with the highest accuracy (k/n) with its interval and "
            "its test against chance, 'best' when its interval is clear of every other "
            "judge's, else with every judge whose interval overlaps it, 'tied at the top'; "
            "pairwise compare tests the differences")
    return 0


def _balanced_interval(result: pd.DataFrame, verdicts: pd.DataFrame, reference: pd.DataFrame,
                       options: dict) -> pd.DataFrame:
    """The order-balanced accuracy's own (cluster) bootstrap interval, where it is defined
    and differs from k/n (one row, one estimand: its interval never sits beside k/n)."""
    import numpy as np

    from storyeval.pairwise.inference import judge_accuracy_inference

    defined = result["balanced_accuracy"].notna()
    if options["aggregate"] == "net" or not defined.any():
        return result.assign(balanced_ci_low=np.nan, balanced_ci_high=np.nan)
    import warnings

    from storyeval.exceptions import UndefinedStatisticWarning

    with warnings.catch_warnings():  # a judge seen in one order only: NaN, said by the table
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        bal = judge_accuracy_inference(verdicts, reference, method="cluster-bootstrap",
                                       balanced=True, **options)
    bal = bal.rename(columns={"ci_low": "balanced_ci_low", "ci_high": "balanced_ci_high"})
    out = result.merge(bal[["judge", "dimension", "balanced_ci_low", "balanced_ci_high"]],
                       on=["judge", "dimension"], how="left")
    out.loc[~defined.to_numpy(), ["balanced_ci_low", "balanced_ci_high"]] = np.nan
    return out


def _accuracy_columns_in_order(result: pd.DataFrame) -> pd.DataFrame:
    """accuracy with its interval and test first, the balanced accuracy with its own after."""
    first = ["judge", "dimension", "accuracy", "ci_low", "ci_high", "pvalue", "test",
             "agreement", "chance", "estimand", "balanced_accuracy", "balanced_ci_low", "balanced_ci_high"]
    cols = [c for c in first if c in result.columns]
    return result[cols + [c for c in result.columns if c not in cols]]


def _accuracy_note(args: argparse.Namespace) -> str:
    """What the accuracy rows estimate (printed under text tables)."""
    what = ("net verdict per pair over both presentation orders (JudgeBench's rule; a tie or "
            "an inconsistent pair is wrong)" if args.aggregate == "net" else
            "credited verdicts / verdicts")
    note = (f"\naccuracy: k/n, {what}; pairwise compare tests the same estimand\n"
            "balanced_accuracy: mean of the accuracies with the human-preferred story shown "
            "first and second (a judge that always picks one position scores 0.5); equals "
            "accuracy when every pair is judged in both orders\n")
    if args.interval == "none":
        return note
    return note + (
        "intervals: two-sided at the confidence level; ci_low/ci_high: of k/n (Wilson with "
        "the score test it inverts, or exact (Clopper-Pearson) with the exact binomial test, "
        "for independent verdicts; the cluster-robust t with the test it inverts or a "
        "cluster bootstrap for clustered ones; 'test' names the test of the p-value, a score "
        "test where ties earn fractional credit); with a two-sided test the interval "
        "excludes the chance level exactly when p < 1 - confidence level, except for the "
        "cluster bootstrap (two procedures: column agreement says whether they agree); "
        "balanced_ci_low/high: of the balanced accuracy "
        "(bootstrap "
        f"over the same clusters or verdicts); pvalue: test of accuracy = chance, "
        f"{args.alternative}\n" + seed_note(args.seed))


_COMPARE_NOTE = ("difference = accuracy_a - accuracy_b (pooled over the verdicts both judged); "
                 "p-values two-sided\nagreement: 'inverts the test' (McNemar score test with "
                 "Tango's interval, the cluster sign-flip permutation test with its inversion, "
                 "cluster-t: the interval excludes 0 exactly when p < 1 - "
                 "confidence level), 'agree' or 'DISAGREE' (a cluster-bootstrap interval beside "
                 "a bootstrap p-value, or the exact McNemar test beside Tango's "
                 "interval: two procedures; the p-value decides)\ngroups: accuracy k/n with the interval pairwise accuracy "
                 "prints for it (same method, resamples and seed; column interval)\n")


def _run_compare(args: argparse.Namespace, verdicts: pd.DataFrame,
                 reference: pd.DataFrame, stage: Stages) -> int:
    import json

    from storyeval.pairwise.inference import (
        compare_judges,
        judge_accuracy_inference,
        significance_groups,
    )
    from storyeval.pairwise.verdicts import validate_verdicts
    from storyeval.report.tables import format_table

    _check_resampling(args)
    from numpy.random import default_rng

    rng = default_rng(args.seed)
    stage.start(f"comparing judges, {args.resamples:,} resamples")
    verdicts = validate_verdicts(verdicts)
    reps = args.resamples
    pairs = compare_judges(verdicts, reference, dimension=args.dimension,
                           tie_credit=args.tie_credit, cluster=args.cluster, test=args.test,
                           confidence_level=args.confidence_level, n_resamples=reps,
                           random_state=rng)
    # each judge's accuracy interval exactly as `pairwise accuracy` prints it (same method,
    # resamples and seed: one estimand, one interval), not drawn after the comparisons' draws
    acc = judge_accuracy_inference(verdicts, reference, dimension=args.dimension,
                                   tie_credit=args.tie_credit, cluster=args.cluster,
                                   confidence_level=args.confidence_level, n_resamples=reps,
                                   random_state=args.seed)
    groups = significance_groups(acc, pairs, alpha=args.alpha)
    stage.done()
    if "ci_low" in groups and "method" in acc:  # which interval each row printed
        where = acc.set_index(["judge", "dimension"])["method"]
        groups.insert(groups.columns.get_loc("ci_high") + 1, "interval", [
            where.get((j, d), "") for j, d in zip(groups["judge"], groups["dimension"])])
    pairs = with_seed(pairs, args.seed)
    _report(args, "storyeval pairwise compare", {"comparisons": pairs, "groups": groups},
            _COMPARE_NOTE + seed_note(args.seed),
            groups[groups["group"] == "top"] if "group" in groups else None,
            f"per dimension, the top group: the judges not significantly below the best "
            f"(BH over all judge pairs at {args.alpha:g})")
    shown = ["dimension", "judge_a", "judge_b", "accuracy_a", "accuracy_b", "difference",
             "ci_low", "ci_high", "pvalue", "pvalue_bh", "test", "agreement", "n",
             "n_clusters", "n_discordant"]
    if args.format == "json":
        print(json.dumps({"comparisons": json.loads(format_table(pairs, "json")),
                          "groups": json.loads(format_table(groups, "json"))}, indent=2))
        return 0
    if args.format == "csv":
        sys.stdout.write(format_table(pairs, "csv"))
        return 0
    sys.stdout.write(format_table(_readable(pairs[shown], args.format), args.format,
                                  digits=args.digits))
    sys.stdout.write(f"\nsignificance groups (top: not significantly below the best judge, "
                     f"BH over all judge pairs at {args.alpha:g}):\n\n")
    sys.stdout.write(format_table(_readable(groups, args.format), args.format,
                                  digits=args.digits))
    sys.stdout.write(wrap_text("\n" + _COMPARE_NOTE + seed_note(args.seed)))
    return 0


def _run_ranking(args: argparse.Namespace, verdicts: pd.DataFrame,
                 reference: pd.DataFrame, stage: Stages) -> int:
    import warnings

    from storyeval.exceptions import InputError, UndefinedStatisticWarning
    from storyeval.pairwise.ranking import ranking_agreement
    from storyeval.report.tables import format_table

    _check_resampling(args, minimum=0)
    judges = sorted(set(verdicts["judge"].astype(str))) if "judge" in verdicts else []
    if args.judge is None and len(judges) > 1:
        raise InputError(f"{args.verdicts} holds several judges {judges}; choose one with "
                         "--judge NAME")
    stage.start(f"ranking agreement, {args.resamples:,} resamples")
    with warnings.catch_warnings():  # an undefined row says why in its reason column
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        result = ranking_agreement(verdicts, reference, judge=args.judge,
                                   strength=args.strength, n_resamples=args.resamples,
                                   confidence_level=args.confidence_level,
                                   random_state=args.seed)
    stage.done()
    if args.resamples:
        result = with_seed(result, args.seed, args.format)
    shown = result
    if args.format in ("table", "md") and (result["reason"] == "").all():
        shown = result.drop(columns="reason")  # every row defined: nothing to explain
    sys.stdout.write(format_table(shown, args.format, digits=args.digits))
    if args.format in ("table", "md"):
        sys.stdout.write(wrap_text("\nsystems: judge's vs humans' system strengths (pooled over systems x "
                         "dimensions, then per dimension); items: -1/0/+1 verdicts on the pairs "
                         "both judged (means over annotators and orders); percentile intervals "
                         "over prompt resamples shared by both sides\n"
                         + (seed_note(args.seed) if args.resamples else "")))
    _report(args, "storyeval pairwise ranking", {"ranking": result},
            seed_note(args.seed) if args.resamples else "", result,
            "the judge's agreement with the humans on system rankings and items")
    return 0
