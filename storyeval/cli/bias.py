"""``storyeval bias`` (pointwise ratings) and ``storyeval pairwise bias`` (verdicts): the judge-bias
battery of `storyeval.bias` with prompt-clustered intervals and tests; and the ``--sentinels``
option of ``storyeval meta``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from storyeval.cli import add_raw_csv_option
from storyeval.cli.common import (
    add_data_options,
    add_format_option,
    add_include_reference_option,
    add_out_option,
    add_progress_option,
)

DESCRIPTION = """\
Judge biases of pointwise raters, each with a prompt-clustered interval and test (cluster-robust
t over prompts): self-preference (--own RATER=SYSTEM, repeatable; a rater that owns several
systems is read as a model family) as a difference-in-differences against the human scores of
the same stories, or against another rater (--reference other: the HANNA paper's setting,
LLM-written stories rated by LLMs only; use --raters-only with the score files of `storyeval
rate`); leniency (mean offset and mean absolute error against the human mean, per
criterion); scale use (share of each scale point); the correlation of a rater's residual
(rater - human) with story length (--length MEASURE). Without --data it reads the embedded
HANNA data (generation systems only unless --include-human-stories).
"""

EPILOG = """\
examples:
  storyeval bias --metrics 'Beluga-13B 1,Mistral-7B 1' --length 'Text length'
  storyeval bias --own 'Beluga-13B 1=GPT-2' --criteria RE,CH
  storyeval bias --eval-prompts Beluga-13B=3,4
  storyeval bias --raters-only --scores beluga/scores.csv --scores mistral/scores.csv \\
      --own Beluga-13B=Beluga-13b --own Mistral-7B=Mistral-7b --reference other

The self-preference estimate assumes parallel trends: without self-preference the rater's and
the reference's own-minus-other gaps are equal in expectation (one scale, one
discrimination). Exit codes: 0 ok, 2 usage or input error.
"""

PAIRWISE_HELP = ("judge biases of verdicts: position (first-position rate, flips), "
                 "self-preference, length preference; prompt-clustered intervals and tests")


def _add_inference(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("inference")
    g.add_argument("--confidence-level", type=float, default=0.95)
    g.add_argument("--alternative", choices=["two-sided", "greater", "less"],
                   default="two-sided",
                   help="of every test (greater: the bias is positive; default two-sided)")


def _add_own(p: argparse.ArgumentParser, who: str) -> None:
    p.add_argument("--own", metavar=f"{who}=SYSTEM", action="append", default=[],
                   help=f"a {who.lower()} and a system it owns (its own model, or one of its "
                        "family); repeatable (repeat a "
                        f"{who.lower()} for a family)")


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "bias", help="judge biases of ratings: self-preference, leniency, scale use, length",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    data = parser.add_argument_group("data")
    add_data_options(data)
    add_include_reference_option(data)
    data.add_argument("--raters-only", action="store_true",
                      help="the --scores files are the whole data (LLM ratings, no human "
                           "scores), e.g. the scores.csv of `storyeval rate` runs")
    what = parser.add_argument_group("what to compute")
    _add_own(what, "RATER")
    what.add_argument("--reference", default="humans", metavar="REF",
                      help="self-preference reference: humans (default), other (the other "
                           "rater of --own), a rater, or none (the rater's own-minus-other "
                           "gap, which mixes self-preference with real quality differences)")
    what.add_argument("--metrics", metavar="SPEC",
                      help="raters for leniency, scale use and length (default: the --own "
                           "raters, else every LLM rating; a measure specification as meta)")
    what.add_argument("--criteria", default="all", metavar="LIST",
                      help="criteria, names or codes (default: all)")
    what.add_argument("--length", metavar="MEASURE",
                      help="the measure holding story lengths (HANNA: 'Text length'): "
                           "residual-length correlations")
    what.add_argument("--eval-prompts", metavar="MODEL=A,B",
                      help="instead: the paired comparison of Eval-Prompt B against A of one "
                           "LLM on the same stories (mean rating and correlation with each "
                           "human criterion, B - A, clustered by prompt), e.g. Beluga-13B=3,4")
    _add_inference(parser)
    out = parser.add_argument_group("output")
    add_format_option(out)
    out.add_argument("--digits", type=int, default=3, help="decimals shown (default: 3)")
    add_out_option(out, "the tables as CSV (full precision) and index.html")
    add_raw_csv_option(out)
    add_progress_option(out)
    return parser


def add_pairwise_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """``storyeval pairwise bias`` (registered by `storyeval.cli.pairwise`)."""
    p = sub.add_parser("bias", help=PAIRWISE_HELP, description=PAIRWISE_HELP + ".")
    p.add_argument("verdicts", type=Path, metavar="VERDICTS",
                   help="verdict file (.csv, .tsv, .jsonl)")
    p.add_argument("--position-verdicts", action="store_true",
                   help="the verdict column names screen positions (A = shown first)")
    p.add_argument("--reference", type=Path, metavar="FILE",
                   help="reference (human) verdicts on the same pairs")
    _add_own(p, "JUDGE")
    p.add_argument("--reference-judge", metavar="JUDGE",
                   help="self-preference against another judge of VERDICTS (the paper's "
                        "setting) instead of --reference")
    p.add_argument("--lengths", type=Path, metavar="FILE",
                   help="story lengths: story_id and length columns, or story_id and story "
                        "texts (counted in words)")
    p.add_argument("--length-controlled", action="store_true",
                   help="add the length-controlled win rate of every system (AlpacaEval) "
                        "and, with --reference, the judge's accuracy on the reference's "
                        "length-balanced pairs")
    p.add_argument("--dimension", help="keep one dimension (default: each)")
    p.add_argument("--bins", type=int, default=10,
                   help="length bins of the balanced subset (default 10)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the length-balanced subset (default 0)")
    _add_inference(p)
    add_format_option(p)
    p.add_argument("--digits", type=int, default=3, help="decimals shown (default: 3)")
    add_out_option(p, "the tables as CSV (full precision) and index.html")
    add_raw_csv_option(p)
    return p


def _own_arg(items: list[str]) -> dict[str, list[str]]:
    from storyeval.exceptions import InputError

    own: dict[str, list[str]] = {}
    for item in items:
        rater, sep, system = item.rpartition("=")
        if not sep or not rater.strip() or not system.strip():
            raise InputError(f"--own: expected RATER=SYSTEM, got {item!r}")
        own.setdefault(rater.strip(), []).append(system.strip())
    return own


def _notes(args: argparse.Namespace, tables: dict) -> list[str]:
    from storyeval.bias.inference import CORRELATION_TEST, TEST_NAME
    from storyeval.bias.self_preference import ASSUMPTION, NO_REFERENCE

    lines = [f"intervals and tests: {TEST_NAME}, clustered by prompt; confidence level "
             f"{args.confidence_level:g}; {args.alternative}"]
    if "residual_length" in tables:
        lines.append(f"residual length: Pearson r; {CORRELATION_TEST}, clustered by prompt")
    if "self_preference" in tables:
        none = getattr(args, "reference", None) == "none"
        lines.append(f"self-preference: {NO_REFERENCE if none else ASSUMPTION}")
    if "position" in tables:
        lines.append("position: first-position rate tested against 0.5 (valid when the order "
                     "is randomised or both orders shown); net position flips = P(first won "
                     "both orders) - P(second won both orders), tested against 0")
    if "eval_prompts" in tables:
        from storyeval.bias.eval_prompts import JACKKNIFE_TEST

        lines[0] = (f"intervals and tests: mean rating: {TEST_NAME}; correlation with human: "
                    f"{JACKKNIFE_TEST}; clustered by prompt; confidence level "
                    f"{args.confidence_level:g}; {args.alternative}; BH over the criteria")
    if "length_balanced" in tables:
        lines.append(f"length-balanced subset: seed {args.seed}")
    return lines


TITLES = {"self_preference": "Self-preference (difference-in-differences)",
          "leniency": "Leniency: offset and MAE against the human mean",
          "scale_use": "Scale use: share of each scale point",
          "residual_length": "Residual (rater - human) vs story length: Pearson r",
          "position": "Position bias", "length": "Length preference: P(prefer longer)",
          "lc_win_rate": "Length-controlled win rate per system (AlpacaEval)",
          "length_balanced": "Accuracy on the reference's length-balanced pairs",
          "eval_prompts": "Eval-Prompt B against A on the same stories (B - A)"}


#: Columns left out of text and Markdown tables (the notes name the test; CSV and JSON keep
#: them all).
SHORT_DROP = ("test", "se", "null", "t", "df")


def _rater_names(dataset) -> dict[str, str]:
    """Measure -> the rater the answer names: an LLM's criterion-specific rating its rater
    group (``Beluga-13B 1``), anything else its display name (``BLEU``)."""
    cat = dataset.catalogue
    return {m: (r if k == "llm_rater" else d) for m, r, k, d in
            zip(cat["measure"], cat["rater"], cat["kind"], cat["display_name"])}


def _print(args: argparse.Namespace, tables: dict, command: str,
           names: dict[str, str] | None = None, short: dict[str, str] | None = None) -> None:
    import json

    from storyeval.report.bias_answer import (
        bias_answer,
        bias_answer_caption,
        bias_answer_lines,
    )
    from storyeval.report.present import wrap_text
    from storyeval.report.tables import format_table

    notes = _notes(args, tables)
    answer = bias_answer(tables, names=names, digits=min(args.digits, 3), short=short)
    caption = bias_answer_caption(tables)
    if args.format == "json":
        print(json.dumps({k: json.loads(format_table(v, "json")) for k, v in tables.items()},
                         indent=2))
    elif args.format == "csv":
        for name, table in tables.items():
            sys.stdout.write(f"# {name}\n" + format_table(table, "csv"))
    else:
        if len(answer):  # the answer first: which biases are significant, per rater
            lines = bias_answer_lines(answer)
            if args.format == "md":
                lines = [f"- {line}" for line in lines]
            sys.stdout.write("Answer: significant biases per rater\n\n"
                             + wrap_text("\n".join(lines) + "\n") + "\n"
                             + wrap_text(caption + "\n") + "\n")
        for name, table in tables.items():
            shown = table.drop(columns=[c for c in SHORT_DROP if c in table.columns])
            title = TITLES.get(name, name)
            if name == "self_preference" and getattr(args, "reference", None) == "none":
                title = "Self-preference without a reference: the rater's own-minus-other gap"
            sys.stdout.write(f"{title}\n\n"
                             + format_table(shown, args.format, digits=args.digits) + "\n")
        sys.stdout.write(wrap_text("".join(f"{line}\n" for line in notes)))
    if args.out is not None:
        from storyeval.cli.common import write_tables_report

        write_tables_report(args, command=command, title=f"storyeval {command}", tables=tables,
                            notes=notes, answer=answer if len(answer) else None,
                            answer_caption=caption)


def run(args: argparse.Namespace) -> int:
    from storyeval.bias.battery import raters_only_dataset, rating_bias
    from storyeval.cli.common import check_out_args, load_dataset_args, stages
    from storyeval.exceptions import InputError

    check_out_args(args)
    stage = stages(args)  # large rating tables take a while: say what runs (on a terminal)
    stage.start("reading the data")
    if args.raters_only:
        if args.data is not None or not args.scores:
            raise InputError("--raters-only reads the --scores files alone (no --data)")
        import pandas as pd

        from storyeval.data.io import read_table

        frames = [read_table(path)[0] for path in args.scores]
        dataset = raters_only_dataset(pd.concat(frames, ignore_index=True),
                                      name=", ".join(p.name for p in args.scores))
    else:
        dataset = load_dataset_args(args, criteria=args.criteria)
        ref = dataset.reference_system
        if ref in dataset.systems and not args.include_human_stories:
            dataset = dataset.select_systems(exclude=[ref])
    stage.done(f"{len(dataset.table):,} stories read")
    if args.eval_prompts:
        tables = {"eval_prompts": _eval_prompts(dataset, args)}
        _print(args, tables, "bias", _rater_names(dataset), dict(dataset.criterion_codes))
        return 0
    stage.start("bias tests")
    tables = rating_bias(dataset, own=_own_arg(args.own), reference=args.reference,
                         raters=args.metrics, criteria=args.criteria, length=args.length,
                         raters_only=args.raters_only, confidence_level=args.confidence_level,
                         alternative=args.alternative)
    stage.done()
    if not tables:
        raise InputError("nothing to compute: give --own for self-preference, or raters "
                         "(--metrics) with human scores")
    _print(args, tables, "bias", _rater_names(dataset), dict(dataset.criterion_codes))
    return 0


def _eval_prompts(dataset, args: argparse.Namespace):
    """``--eval-prompts MODEL=A,B``: `storyeval.bias.eval_prompts.compare_eval_prompts`."""
    from storyeval.bias.eval_prompts import compare_eval_prompts
    from storyeval.exceptions import InputError

    model, sep, eps = args.eval_prompts.rpartition("=")
    parts = [e.strip() for e in eps.split(",")]
    if not sep or not model.strip() or len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise InputError(f"--eval-prompts {args.eval_prompts!r}: give MODEL=A,B, e.g. "
                         "Beluga-13B=3,4")
    if args.own or args.metrics or args.length:
        raise InputError("--eval-prompts compares two Eval-Prompts on its own: leave out "
                         "--own, --metrics and --length")
    return compare_eval_prompts(dataset, model.strip(), eval_prompts=(int(parts[0]),
                                                                      int(parts[1])),
                                criteria=None if args.criteria == "all"
                                else [c.strip() for c in args.criteria.split(",")],
                                confidence_level=args.confidence_level,
                                alternative=args.alternative)


def _read_lengths(path: Path):
    import pandas as pd

    from storyeval.data.io import numeric_column, read_table, row_label
    from storyeval.exceptions import InputError

    frame, fmt = read_table(path)
    if "story_id" not in frame.columns:
        raise InputError(f"{path}: no story_id column")
    if frame.empty:
        raise InputError(f"{path}: no rows (a header only)")
    dup = frame["story_id"].astype(str).duplicated().to_numpy()
    if dup.any():
        raise InputError(f"{row_label(str(path), int(dup.argmax()), fmt)}: story_id "
                         f"{frame['story_id'].iloc[int(dup.argmax())]!r} has a second length")
    if "length" in frame.columns:
        values = numeric_column(frame["length"], "length", str(path), fmt)
        bad = (values.isna() | (values < 0)).to_numpy()
        if bad.any():
            raise InputError(f"{row_label(str(path), int(bad.argmax()), fmt)}: length "
                             f"{frame['length'].iloc[int(bad.argmax())]!r} is not a number >= 0")
    elif "story" in frame.columns:
        values = frame["story"].astype(str).str.split().str.len()
    else:
        raise InputError(f"{path}: needs a length column or a story column (texts)")
    return pd.Series(values.to_numpy(dtype=float), index=frame["story_id"].astype(str))


def run_pairwise(args: argparse.Namespace) -> int:
    """``storyeval pairwise bias``."""
    from storyeval.bias.battery import verdict_bias
    from storyeval.cli.common import check_out_args
    from storyeval.pairwise import read_verdicts

    check_out_args(args)
    refers = "position" if args.position_verdicts else "story"
    verdicts = read_verdicts(args.verdicts, verdict_refers_to=refers)
    reference = read_verdicts(args.reference) if args.reference is not None else None
    lengths = _read_lengths(args.lengths) if args.lengths is not None else None
    tables = verdict_bias(verdicts, reference=reference, own=_own_arg(args.own),
                          reference_judge=args.reference_judge, lengths=lengths,
                          length_controlled=args.length_controlled, dimension=args.dimension,
                          n_bins=args.bins, random_state=args.seed,
                          confidence_level=args.confidence_level, alternative=args.alternative)
    _print(args, tables, "pairwise bias")
    return 0


def add_sentinel_option(group) -> None:
    """``storyeval meta --sentinels [LIST]`` and its data options."""
    group.add_argument("--sentinels", nargs="?", const="auto", metavar="LIST",
                       help="add content-blind sentinel measures (cross-fitted leave-one-"
                            "prompt-out: system, length, prompt; default: those the data "
                            "allow) to every table and comparison")
    group.add_argument("--sentinel-length", metavar="MEASURE",
                       help="the measure holding story lengths for the length sentinel "
                            "(HANNA: 'Text length', the default there)")


def apply_sentinels(args: argparse.Namespace, dataset):
    """(dataset with the sentinels, measure specification with them) for ``meta``."""
    if not args.sentinels:  # before any import: storyeval.bias loads scipy.stats (~0.5 s)
        return dataset, args.metrics
    from storyeval.bias.sentinels import SENTINEL_KINDS, add_sentinels
    from storyeval.data.selection import select_measures
    from storyeval.exceptions import InputError

    ref = dataset.reference_system
    if ref in dataset.systems and not args.include_human_stories:
        dataset = dataset.select_systems(exclude=[ref])
    if args.systems:
        dataset = dataset.select_systems([s.strip() for s in args.systems.split(",")])
    hanna = dataset.name == "hanna"
    length = args.sentinel_length or ("Text length" if hanna else None)
    texts = None
    if hanna:
        from storyeval.data.hanna import load_hanna_stories

        stories = load_hanna_stories()
        texts = dict(zip(stories["prompt_id"], stories["prompt"]))
    if args.sentinels == "auto":
        kinds = ["system"] + (["length"] if length else []) + (["prompt"] if texts else [])
    else:
        kinds = [k.strip() for k in args.sentinels.split(",") if k.strip()]
        unknown = [k for k in kinds if k not in SENTINEL_KINDS]
        if unknown:
            raise InputError(f"--sentinels: unknown {unknown}; choose among {SENTINEL_KINDS}")
    chosen = select_measures(dataset.catalogue, args.metrics, presets=dataset.presets)
    dataset, added = add_sentinels(dataset, kinds=kinds, length=length, prompt_texts=texts)
    return dataset, [*chosen, *added]
