"""LitBench's procedures under ``storyeval pairwise``: ``genrm`` (a generative reward model on
preference pairs), ``prepare`` (LitBench's curation filters and length debiasing), ``votes``
(pooled per-vote accuracy clustered by pair; explanation features vs correctness) and
``select`` (the best template's accuracy with the choice accounted for).

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ACTIONS = ("genrm", "prepare", "votes", "select")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``pairwise genrm`` and ``pairwise prepare``."""
    _add_genrm_parser(sub)
    from storyeval.cli.pairwise_prepare import add_prepare_parser

    add_prepare_parser(sub)
    _add_votes_parser(sub)
    _add_select_parser(sub)


def _add_votes_parser(sub: argparse._SubParsersAction) -> None:
    from storyeval.cli.common import add_format_option

    p = sub.add_parser(
        "votes", help="pooled per-vote accuracy clustered by pair; explanation features vs "
                      "correctness (cluster-robust, BH)",
        description="Accuracy pooled over every vote of a study where each pair gets several "
                    "votes (LitBench: 10-13), with the cluster-robust t interval (CR1, pairs "
                    "as clusters, G - 1 df). With --keywords and an 'explanation' column: "
                    "the regression of correctness on each feature's keyword indicator, "
                    "cluster-robust intervals, BH-adjusted p-values over the features.",
        epilog="votes file: pair, voter, correct (1/0, or a credit in between), optional "
               "explanation. keywords file: JSON {\"feature\": [\"word\", ...]}. Exit codes: 0 "
               "ok, 2 usage or input error.")
    p.add_argument("--votes", type=Path, required=True, metavar="FILE")
    p.add_argument("--keywords", type=Path, metavar="JSON",
                   help="features as keyword lists (needs an 'explanation' column)")
    p.add_argument("--model", choices=["marginal", "joint"], default="marginal",
                   help="one regression per feature (default) or all features at once")
    p.add_argument("--adjust", choices=["bh", "by", "bonferroni", "holm", "none"],
                   default="bh", help="multiplicity over the features (default bh)")
    p.add_argument("--chance", type=float, default=0.5)
    p.add_argument("--confidence-level", type=float, default=0.95)
    add_format_option(p)


def _add_select_parser(sub: argparse._SubParsersAction) -> None:
    from storyeval.cli.common import add_format_option

    p = sub.add_parser(
        "select", help="the best template's accuracy with the choice accounted for (max-t "
                       "simultaneous intervals, or a validation split)",
        description="Which of several judging templates is best, and its accuracy with an "
                    "interval that accounts for having picked it (the winner's curse): max-t "
                    "(default; chosen by simulation, docs/litbench.md), split, or naive.",
        epilog="verdicts file: unit, cluster, template, correct (every unit judged by every "
               "template). Exit codes: 0 ok, 2 usage or input error.")
    p.add_argument("--verdicts", type=Path, required=True, metavar="FILE")
    p.add_argument("--method", choices=["max-t", "split", "naive"], default="max-t")
    p.add_argument("--chance", type=float, default=0.5)
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--validation-share", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap or the split")
    add_format_option(p)


def _read_columns(path: Path, columns: tuple[str, ...], keys: tuple[str, ...]):
    """A table with ``columns`` (correct numeric in [0, 1]; the others text), its rows
    unique by ``keys``; errors name the file, column and row."""
    import numpy as np
    import pandas as pd

    from storyeval.data.io import numeric_column, read_table, row_label, string_column
    from storyeval.exceptions import InputError

    frame, fmt = read_table(path)
    if len(frame) == 0:
        raise InputError(f"{path}: no rows")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {missing}; expected {list(columns)}")
    out = pd.DataFrame({c: string_column(frame[c], c, str(path), fmt).to_numpy()
                        for c in columns if c != "correct"})
    y = numeric_column(frame["correct"], "correct", str(path), fmt).to_numpy()
    bad = np.flatnonzero(~((y >= 0) & (y <= 1)))
    if len(bad):
        raise InputError(f"{row_label(str(path), int(bad[0]), fmt)}: column 'correct' must be "
                         f"in [0, 1], got {frame['correct'].iloc[int(bad[0])]!r}")
    out["correct"] = y
    dup = out.duplicated(list(keys))
    if dup.any():
        i = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"{row_label(str(path), i, fmt)}: {dict(out.loc[i, list(keys)])} is "
                         "given twice")
    for extra in ("explanation",):
        if extra in frame.columns:
            out[extra] = frame[extra].fillna("").astype(str).to_numpy()
    return out


def run_votes(args: argparse.Namespace) -> int:
    import json

    import pandas as pd

    from storyeval.exceptions import InputError
    from storyeval.pairwise.human_study import (
        explanation_features,
        keyword_indicators,
        pooled_vote_accuracy,
    )
    from storyeval.report.tables import format_table

    votes = _read_columns(args.votes, ("pair", "voter", "correct"), ("pair", "voter"))
    res = pooled_vote_accuracy(votes["correct"].to_numpy(), votes["pair"].to_numpy(),
                               chance=args.chance, confidence_level=args.confidence_level)
    pooled = pd.DataFrame([{"accuracy": res.statistic, "ci_low": res.ci_low,
                            "ci_high": res.ci_high, "pvalue": res.pvalue, "votes": res.n,
                            "pairs": res.n_clusters, "chance": args.chance,
                            "test": res.test}])
    sys.stdout.write(format_table(pooled, args.format))
    if args.format in ("table", "md"):
        print(f"\nintervals: two-sided {args.confidence_level:g}, votes clustered by pair; "
              f"p: two-sided test of accuracy = {args.chance:g}")
    if args.keywords is None:
        return 0
    if "explanation" not in votes.columns:
        raise InputError(f"--keywords needs an 'explanation' column in {args.votes}")
    from storyeval.data.io import read_text

    try:
        keywords = json.loads(read_text(args.keywords))
    except json.JSONDecodeError as exc:
        raise InputError(f"{args.keywords}: not JSON ({exc.msg}, line {exc.lineno})") from None
    if not isinstance(keywords, dict) or not all(
            isinstance(v, list) and all(isinstance(w, str) for w in v)
            for v in keywords.values()):
        raise InputError(f"{args.keywords}: expected an object {{feature: [keyword, ...]}}")
    feats = keyword_indicators(votes["explanation"].tolist(), keywords)
    table = explanation_features(votes["correct"].to_numpy(), feats, votes["pair"].to_numpy(),
                                 model=args.model, adjust=args.adjust,
                                 confidence_level=args.confidence_level)
    print()
    sys.stdout.write(format_table(table, args.format))
    if args.format in ("table", "md"):
        print(f"\neffect: slope of correctness on the feature ({args.model}; marginal = "
              f"accuracy with minus without); p_adjusted: {args.adjust} over the "
              f"{len(table)} features; clusters: pairs")
    return 0


def run_select(args: argparse.Namespace) -> int:
    from storyeval.exceptions import InputError
    from storyeval.pairwise.selection import selected_accuracy
    from storyeval.report.tables import format_table

    v = _read_columns(args.verdicts, ("unit", "cluster", "template", "correct"),
                      ("unit", "template"))
    wide = v.pivot(index="unit", columns="template", values="correct")
    if wide.isna().any().any():
        unit = wide.index[wide.isna().any(axis=1)][0]
        raise InputError(f"{args.verdicts}: unit {unit!r} lacks a verdict of template(s) "
                         f"{list(wide.columns[wide.loc[unit].isna()])}; every unit needs "
                         "every template")
    clusters = v.drop_duplicates("unit").set_index("unit")["cluster"].reindex(wide.index)
    if v.groupby("unit")["cluster"].nunique().max() > 1:
        raise InputError(f"{args.verdicts}: a unit is listed in two clusters")
    res = selected_accuracy(wide.to_numpy(), clusters.to_numpy(), names=list(wide.columns),
                            method=args.method, chance=args.chance,
                            confidence_level=args.confidence_level,
                            n_resamples=args.resamples,
                            validation_share=args.validation_share, random_state=args.seed)
    res = res.assign(seed=args.seed)
    sys.stdout.write(format_table(res, args.format))
    if args.format in ("table", "md"):
        best = res[res["selected"]].iloc[0]
        print(f"\nchosen: {best['template']} ({args.method}; the interval accounts for "
              f"choosing the best of {len(res)} templates"
              + (")" if args.method != "naive" else " - naive: it does NOT)")
              + f"; random seed {args.seed} (--seed)")
    return 0


def _add_genrm_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "genrm", help="a generative reward model on preference pairs: single-token A/B "
                      "log-probabilities in both orders, accuracy with its interval",
        description="Judge the pairs of a LitBench-style file (prompt, chosen_story, "
                    "rejected_story; or prompt, chosen, rejected with one text each) with a "
                    "local causal LM: the verdict is read from the log-probabilities of the "
                    "single tokens A and B, each pair shown in both orders (the probability "
                    "that the chosen story is better is the mean over the orders). Writes the "
                    "verdict table and prints the accuracy (share of pairs whose chosen story "
                    "has probability > 0.5) with an interval clustered by prompt.",
        epilog="exit codes: 0 ok, 2 usage or input error.")
    p.add_argument("--pairs", type=Path, required=True, metavar="FILE",
                   help="pairs: prompt, chosen_story, rejected_story (LitBench) or prompt, "
                        "chosen, rejected (one text each); optional id")
    p.add_argument("--model", required=True, metavar="PATH",
                   help="local folder of a causal LM and its tokenizer")
    p.add_argument("--reasoning", action="store_true",
                   help="let the model reason first (greedy), then read the letter after "
                        "--answer-cue")
    p.add_argument("--max-new-tokens", type=int, default=256,
                   help="reasoning length limit (default 256)")
    p.add_argument("--answer-cue", default="\nAnswer:",
                   help="text appended after the reasoning (default '\\nAnswer:')")
    p.add_argument("--choices", metavar="A,B",
                   help="the two verdict tokens (default 'A,B', or ' A, B' after the cue)")
    p.add_argument("--template", type=Path, metavar="FILE",
                   help="replacement request with {prompt}, {first}, {second}")
    p.add_argument("--one-order", action="store_true",
                   help="show each pair once, the chosen story first or second at random "
                        "(--seed), as LitBench did")
    p.add_argument("--device", metavar="DEV", help="cpu, cuda... (default: cuda if available)")
    p.add_argument("--dtype", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--batch-size", type=int, default=8, help="requests per pass (default 8)")
    p.add_argument("--interval", default="auto",
                   choices=["auto", "cluster-t", "cluster-bootstrap", "wilson", "exact"],
                   help="interval of the accuracy (auto: Wilson when every prompt has one "
                        "pair, else clustered by prompt)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--seed", type=int, default=0,
                   help="seed of --one-order's shuffle and of a bootstrap (default 0)")
    p.add_argument("--out", type=Path, required=True, metavar="FILE",
                   help="verdict table (.csv, .tsv or .jsonl)")
    p.add_argument("--json", action="store_true", help="print the accuracy as JSON")


def _genrm_pairs(path: Path, one_order: bool, seed: int):
    """The pairs of a LitBench-style file as GenRM input, story_a the chosen story (or, with
    one order, the chosen story in a seeded random position); and the winners."""
    import numpy as np
    import pandas as pd

    from storyeval.exceptions import InputError
    from storyeval.pairwise.best_of_n import read_best_of_n

    sets = read_best_of_n(path)
    many = np.flatnonzero((sets["chosen"].map(len) != 1) | (sets["rejected"].map(len) != 1))
    if len(many):
        raise InputError(f"{path}: set {sets['set_id'].iloc[many[0]]!r} has "
                         f"{len(sets['chosen'].iloc[many[0]])} chosen and "
                         f"{len(sets['rejected'].iloc[many[0]])} rejected texts; genrm judges "
                         "pairs (one of each)")
    chosen = sets["chosen"].str[0].to_numpy()
    rejected = sets["rejected"].str[0].to_numpy()
    swap = (np.random.default_rng(seed).random(len(sets)) < 0.5 if one_order
            else np.zeros(len(sets), dtype=bool))
    ids_c = ("chosen-0/" + sets["set_id"]).to_numpy()
    ids_r = ("rejected-0/" + sets["set_id"]).to_numpy()
    pairs = pd.DataFrame({"story_a": np.where(swap, ids_r, ids_c),
                          "story_b": np.where(swap, ids_c, ids_r),
                          "prompt_id": pd.factorize(sets["prompt"])[0],
                          "prompt": sets["prompt"].to_numpy(),
                          "text_a": np.where(swap, rejected, chosen),
                          "text_b": np.where(swap, chosen, rejected)})
    return pairs, np.where(swap, "b", "a")


def run_genrm(args: argparse.Namespace) -> int:
    import json

    from storyeval._atomic import check_out_file
    from storyeval.data.io import read_text
    from storyeval.exceptions import InputError
    from storyeval.pairwise.genrm import GenerativeRewardModel, genrm_accuracy

    check_out_file(args.out)
    if args.out.suffix.lower() not in (".csv", ".tsv", ".jsonl", ".json"):
        raise InputError(f"--out {str(args.out)!r}: use a .csv, .tsv or .jsonl file")
    choices = None
    if args.choices:
        choices = tuple(c for c in args.choices.split(","))
        if len(choices) != 2:
            raise InputError(f"--choices: give two tokens separated by a comma, got "
                             f"{args.choices!r}")
    pairs, winners = _genrm_pairs(args.pairs, args.one_order, args.seed)
    g = GenerativeRewardModel(
        model=args.model, device=args.device, batch_size=args.batch_size, dtype=args.dtype,
        reasoning=args.reasoning, max_new_tokens=args.max_new_tokens, choices=choices,
        template=read_text(args.template) if args.template else None,
        answer_cue=args.answer_cue)
    verdicts = g.judge(pairs, both_orders=not args.one_order)
    from storyeval.cli.pairwise_prepare import write_pairs_table

    write_pairs_table(verdicts, args.out)
    res = genrm_accuracy(verdicts, winners, interval=args.interval,
                         confidence_level=args.confidence_level, n_resamples=args.resamples,
                         random_state=args.seed)
    summary = {"judge": verdicts["judge"].iloc[0], "pairs": len(pairs),
               "orders": 1 if args.one_order else 2, "accuracy": res.statistic,
               "ci_low": res.ci_low, "ci_high": res.ci_high, "pvalue": res.pvalue,
               "method": res.method, "n_clusters": res.n_clusters, "seed": args.seed,
               "out": str(args.out)}
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
        return 0
    from storyeval.report.present import fixed, interval_text, p_clause

    print(f"{summary['judge']}: accuracy {fixed(res.statistic)} "
          f"{interval_text(res.ci_low, res.ci_high)} on {len(pairs)} pairs "
          f"({summary['orders']} order(s); {res.method}, {res.n_clusters} prompts), "
          f"{p_clause(res.pvalue)} against 0.5 (two-sided); random seed {args.seed}")
    print(f"wrote {len(verdicts)} verdicts to {args.out}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.pairwise_action == "genrm":
        return run_genrm(args)
    if args.pairwise_action == "votes":
        return run_votes(args)
    if args.pairwise_action == "select":
        return run_select(args)
    from storyeval.cli.pairwise_prepare import run_prepare

    return run_prepare(args)
