"""``storyeval score``: score stories with automatic metrics and write the tidy score table.

Exit codes: 0 ok, 2 usage or input error (unknown metric, missing column, unloadable model).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

EPILOG = """\
A best-of-N file (prompt, chosen, rejected: RewardBench 2; prompt, chosen_story,
rejected_story: LitBench) is read as is: its stories get the ids chosen-K/ID, rejected-K/ID
that `storyeval pairwise pointwise --preferences FILE --scores OUT` reads back.

input columns: story_id (required, unique; built as "{system}/{prompt_id}" when absent and
both columns exist), story (required), reference (the human story for
the same prompt; needed by rouge, bleu, chrf, bertscore and BARTScore's ref directions),
prompt (needed by the prompt measures of surface and BARTScore's prompt directions), system,
prompt_id (integers or text such as item-7; needed by `storyeval meta` for system-level
correlations; without both columns, story ids SYSTEM/PROMPT give them).

output columns: story_id, system, prompt_id, measure, value, reason (why a value is NaN).

metrics: rouge, bleu, chrf, surface, bertscore, bartscore, families lexical, embedding,
model-based, fast (lexical + surface), all, evaluate:PATH for any Hugging Face evaluate
module, or rm:PATH for a Bradley-Terry reward model (a local sequence classifier with one
logit; prompt and story through its chat template; --device, --dtype, --batch-size and
--max-length apply). Measure names: see docs/metrics.md.

examples:
  storyeval score --dataset hanna --metrics fast --out hanna_scores.csv
  storyeval score --input stories.csv --metrics rouge,bertscore --cache .storyeval-cache \\
      --out scores.csv
  storyeval meta --scores hanna_scores.csv --include-human-stories

Exit codes: 0 ok, 2 usage or input error."""

_WRITERS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl",
            ".parquet": "parquet", ".pq": "parquet"}


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval score``."""
    parser = subparsers.add_parser(
        "score",
        help="score stories with ROUGE, BLEU, chrF, BERTScore, BARTScore, surface measures",
        description="Score stories with automatic metrics and write the tidy score table "
        "(story_id, system, prompt_id, measure, value, reason) that `storyeval meta --scores` "
        "reads.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = parser.add_argument_group("stories").add_mutually_exclusive_group(required=True)
    src.add_argument("--input", type=Path, metavar="FILE",
                     help="stories file (CSV, TSV, JSONL or Parquet; columns below)")
    src.add_argument("--dataset", choices=["hanna"],
                     help="the stories shipped with storyeval: 96 human HANNA stories and 576 "
                     "LLM stories (references: the human story of the same prompt)")
    parser.add_argument("--subset", choices=["all", "human", "llm"], default="all",
                        help="with --dataset hanna: which stories (default: all 672)")
    parser.add_argument("--metrics", default="fast", metavar="LIST",
                        help="comma-separated metrics / families (default: fast = "
                        "rouge,bleu,chrf,surface)")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help="output file; the format follows the suffix (.csv, .tsv, .jsonl, "
                        ".parquet); default: CSV on standard output")
    parser.add_argument("--catalogue", type=Path, metavar="FILE",
                        help="also write the measure catalogue (CSV: measure, display_name, "
                        "reference, family, ...)")
    parser.add_argument("--diversity-out", type=Path, metavar="FILE",
                        help="also write set-level diversity per system (distinct-1/2/3 and "
                        "inter-story trigram repetition over each system's stories) as CSV")
    run = parser.add_argument_group("running")
    run.add_argument("--cache", type=Path, metavar="DIR",
                     help="score cache folder (one SQLite file per metric configuration); "
                     "re-runs and interrupted runs only score what is missing")
    run.add_argument("--device", metavar="DEV", help="torch device for bertscore / bartscore / rm "
                     "(cpu, cuda, cuda:1; default: cuda if available)")
    run.add_argument("--batch-size", type=int, default=16, metavar="N",
                     help="stories per batch (default: 16)")
    run.add_argument("--dtype", choices=["float32", "bfloat16", "float16"],
                     help="precision of the bertscore / bartscore models (default: float32; "
                     "the deviation of the others is on the metric-fidelity page)")
    run.add_argument("--no-progress", action="store_true", help="no progress bars")
    run.add_argument("--shard", metavar="K/N",
                     help="score only shard K of N (K = 1..N; a story's shard is a stable hash "
                     "of its story_id), write it to --out with OUT.shard.json beside it; "
                     "`storyeval merge` joins the N outputs into the file one run writes")
    run.add_argument("--surface-tokenizer", choices=["spacy", "regex"], default="spacy",
                     help="words of the surface and diversity measures: spaCy's English "
                     "tokenizer, as HANNA's released columns (spacy, default; the metrics "
                     "extra), or a regular expression (regex; its measures are named "
                     "'[regex tokens]')")
    run.add_argument("--self-reference", choices=["exclude", "keep"], default="exclude",
                     help="a story whose reference is itself: NaN for reference-based measures "
                     "(exclude, default) or score it (keep)")
    bert = parser.add_argument_group("BERTScore")
    bert.add_argument("--bertscore-model", metavar="NAME_OR_PATH",
                      help="encoder (default: all-MiniLM-L6-v2 shipped offline; NOT the paper's "
                      "roberta-large, which needs the network once)")
    bert.add_argument("--bertscore-layers", type=int, metavar="N",
                      help="layer to use (default: bert-score's choice; 6 for MiniLM)")
    bert.add_argument("--long-texts", choices=["chunk", "truncate"], default="chunk",
                      help="stories longer than the encoder window: encode in windows (chunk, "
                      "default) or keep the first window with a warning (truncate)")
    bert.add_argument("--bertscore-idf", action="store_true",
                      help="weight word pieces by their idf over the references scored (as "
                      "bert-score's idf=True; the measures' variant and cache key say so)")
    bert.add_argument("--rescale", action="store_true",
                      help="add baseline-rescaled BERTScore measures")
    bert.add_argument("--baseline-path", metavar="FILE",
                      help="bert-score baseline file (LAYER,P,R,F); default: shipped one, else "
                      "computed from mismatched pairs")
    bart = parser.add_argument_group("BARTScore")
    bart.add_argument("--bartscore-model", metavar="NAME_OR_PATH",
                      help="seq2seq model (default: facebook/bart-large-cnn, needs the network "
                      "once)")
    bart.add_argument("--bartscore-directions", metavar="LIST",
                      help="comma-separated: ref->story, story->ref, prompt->story, "
                      "story->prompt, ref<->story, prompt<->story (default: all)")
    bart.add_argument("--max-length", type=int, metavar="N",
                      help="BARTScore and rm: token limit (default: the model's)")
    return parser


def metric_options(args: argparse.Namespace) -> dict[str, dict]:
    """Per-metric keyword options from the command-line arguments."""
    bert: dict = {"long_texts": args.long_texts, "rescale": args.rescale,
                  "idf": args.bertscore_idf}
    if args.bertscore_model:
        bert["model"] = args.bertscore_model
    if args.bertscore_layers is not None:
        bert["num_layers"] = args.bertscore_layers
    if args.baseline_path:
        bert["baseline_path"] = args.baseline_path
    bart: dict = {}
    if args.bartscore_model:
        bart["model"] = args.bartscore_model
    if args.bartscore_directions:
        bart["directions"] = [d.strip() for d in args.bartscore_directions.split(",") if d.strip()]
    if args.max_length is not None:
        bart["max_length"] = args.max_length
    rm: dict = {}
    if args.max_length is not None:
        rm["max_length"] = args.max_length
    for opts in (bert, bart, rm):
        if args.device:
            opts["device"] = args.device
        if args.dtype:
            opts["dtype"] = args.dtype
        opts["batch_size"] = args.batch_size
    return {"bertscore": bert, "bartscore": bart, "rm": rm,
            "surface": {"tokenizer": args.surface_tokenizer}}


def _out_format(path: Path) -> str:
    """The writer of an ``--out`` file, from its suffix; an error for a folder or an unknown
    suffix (checked before scoring)."""
    from storyeval._atomic import check_out_file
    from storyeval.exceptions import InputError

    check_out_file(path)
    fmt = _WRITERS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"--out {path}: unknown suffix {path.suffix!r}; use one of "
                         f"{sorted(_WRITERS)}")
    return fmt


def _write(table, path: Path | None) -> None:
    """The score table to ``path`` (replaced atomically) or to standard output."""
    if path is None:
        table.to_csv(sys.stdout, index=False)
        return
    from storyeval._atomic import atomic_path

    fmt = _out_format(path)
    if fmt == "parquet":
        from storyeval._optional import import_optional

        import_optional("pyarrow", extra="parquet", purpose="writing Parquet files")
    with atomic_path(path) as tmp:
        if fmt in ("csv", "tsv"):
            table.to_csv(tmp, index=False, sep="," if fmt == "csv" else "\t")
        elif fmt == "jsonl":
            table.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            table.to_parquet(tmp, index=False)


def _write_csv(table, path: Path) -> None:
    """A side table (``--catalogue``, ``--diversity-out``) as CSV, replaced atomically."""
    from storyeval._atomic import atomic_path

    with atomic_path(path) as tmp:
        table.to_csv(tmp, index=False)


def _check_outputs(args: argparse.Namespace) -> None:
    """Output errors found before scoring: a folder or an unknown suffix as a file."""
    from storyeval._atomic import check_out_file

    if args.out is not None:
        _out_format(args.out)
    for option, path in (("--catalogue", args.catalogue), ("--diversity-out",
                                                         args.diversity_out)):
        if path is not None:
            check_out_file(path, option)


#: Options that change the values of a run; shards merged together must agree on them.
SHARD_SETTINGS = ("dataset", "subset", "metrics", "batch_size", "dtype", "surface_tokenizer",
                  "self_reference", "bertscore_model", "bertscore_layers", "long_texts",
                  "bertscore_idf", "rescale", "baseline_path", "bartscore_model",
                  "bartscore_directions", "max_length")


def _check_shard(args: argparse.Namespace):
    """The parsed ``--shard`` (None without it); its usage errors before scoring."""
    from storyeval.data.shards import Shard
    from storyeval.exceptions import InputError

    if args.shard is None:
        return None
    shard = Shard.parse(args.shard)
    if args.out is None:
        raise InputError("--shard needs --out FILE (each shard writes its own file)")
    if args.diversity_out is not None:
        raise InputError("--diversity-out is a set-level table of all the stories: write it "
                         "in a run without --shard")
    return shard


def _write_shard_info(args: argparse.Namespace, shard, stories, table) -> None:
    from storyeval.data.shards import sidecar_path, write_shard_info

    files = [{"role": "main", "name": args.out.name, "format": _out_format(args.out),
              "unit": "story_id", "blocks": table.attrs["metric_blocks"]}]
    write_shard_info(sidecar_path(args.out), command="score", shard=shard,
                     settings={k: getattr(args, k) for k in SHARD_SETTINGS},
                     all_ids=stories["story_id"].astype(str).tolist(), inputs=stories,
                     extra={"format": _out_format(args.out), "files": files})


def run(args: argparse.Namespace) -> int:
    """Run ``storyeval score``; returns the exit code."""
    from storyeval.exceptions import InputError
    from storyeval.metrics import hanna_stories, score, validate_stories

    if args.batch_size < 1:
        raise InputError(f"--batch-size: must be >= 1, got {args.batch_size}")
    _check_outputs(args)
    shard = _check_shard(args)
    from storyeval.cli.common import stages

    stage = stages(args)  # many stories take a while: say what runs (on a terminal)
    stage.start("reading the stories")
    if args.dataset == "hanna":
        stories = hanna_stories(include=args.subset)
        source = "hanna"
    else:
        if args.subset != "all":
            raise InputError("--subset applies to --dataset hanna only")
        from storyeval.data.io import read_table

        stories, fmt = read_table(args.input)
        source = str(args.input)
        from storyeval.pairwise.best_of_n import (
            best_of_n_stories,
            is_best_of_n_table,
            validate_best_of_n,
        )

        if is_best_of_n_table(stories.columns):  # RewardBench 2 / LitBench sets, read as is
            stories = best_of_n_stories(validate_best_of_n(stories, source=source, fmt=fmt))
        stories = validate_stories(stories, source=source)
    stage.done(f"{len(stories):,} stories")
    start = time.perf_counter()
    table, catalogue = score(
        stories, args.metrics, options=metric_options(args), cache=args.cache,
        batch_size=args.batch_size, self_reference=args.self_reference,
        show_progress=False if args.no_progress else None, return_catalogue=True, shard=shard)
    if args.out is not None:  # (no line while the table goes to standard output)
        stage.start(f"writing {args.out}")
    _write(table, args.out)
    if shard is not None:
        _write_shard_info(args, shard, stories, table)
    if args.catalogue is not None:
        _write_csv(catalogue, args.catalogue)
    if args.out is not None:
        stage.done(f"{len(table):,} rows")
    if args.diversity_out is not None:
        from storyeval.metrics.surface import system_diversity

        stage.start("system diversity")
        diversity = system_diversity(stories, tokenizer=args.surface_tokenizer)
        stage.done()
        _write_csv(diversity, args.diversity_out)
    nan = table[table["value"].isna()]
    by_reason = "; ".join(f"{r}: {n}" for r, n in nan["reason"].value_counts().items())
    n_scored = len(stories) if shard is None else table["story_id"].nunique()
    print(f"storyeval score: {n_scored} stories from {source}"
          + (f" (shard {shard} of {len(stories)})" if shard is not None else "") + ", "
          f"{table['measure'].nunique()} measures, {len(table)} rows"
          + (f" to {args.out}" if args.out else "")
          + f" in {time.perf_counter() - start:.1f} s"
          + (f"; NaN values: {by_reason}" if len(nan) else ""), file=sys.stderr)
    return 0
