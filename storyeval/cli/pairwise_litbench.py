"""LitBench's procedures under ``storyeval pairwise``: ``genrm`` (a generative reward model on
preference pairs) and ``prepare`` (LitBench's curation filters and length debiasing).

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ACTIONS = ("genrm", "prepare")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``pairwise genrm`` and ``pairwise prepare``."""
    _add_genrm_parser(sub)
    from storyeval.cli.pairwise_prepare import add_prepare_parser

    add_prepare_parser(sub)


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
    from storyeval.cli.pairwise_prepare import run_prepare

    return run_prepare(args)
