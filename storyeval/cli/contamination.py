"""``storyeval contamination``: Min-K% Prob and Min-K%++ membership scores for a causal LM.

Exit codes: 0 ok, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

import pandas as pd

SCORES = ("min_k", "min_k_pp")
SCORE_NAMES = {"min_k": "Min-K% Prob", "min_k_pp": "Min-K%++"}


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval contamination``."""
    parser = subparsers.add_parser(
        "contamination",
        help="Min-K%% / Min-K%%++ pretraining-data detection for a causal LM",
        description="Score each text with Min-K%% Prob and Min-K%%++ under a causal LM. With "
        "--labels: ROC AUC and TPR at low FPR with bootstrap CIs. With --nonmembers: a "
        "contamination rate whose threshold is calibrated on the known non-members at --fpr.",
        epilog="Exit codes: 0 ok, 2 usage or input error. Offline, --model must be a local "
        "folder (save_pretrained layout).",
    )
    parser.add_argument("--model", required=True, metavar="NAME_OR_PATH",
                        help="causal LM: local folder or Hugging Face hub name")
    parser.add_argument("--texts", required=True, type=Path, metavar="FILE",
                        help="texts to score (CSV, TSV, JSONL or Parquet)")
    parser.add_argument("--text-column", default="text", help="column holding the texts "
                        "(default: text; 'story' is used if there is no 'text' column)")
    parser.add_argument("--id-column", help="column identifying the texts (default: row number)")
    parser.add_argument("--labels", metavar="COLUMN",
                        help="0/1 or true/false column: 1 = member (seen in training)")
    parser.add_argument("--nonmembers", type=Path, metavar="FILE",
                        help="known non-members (same column names) to calibrate the "
                        "contamination-rate threshold")
    parser.add_argument("--fpr", type=float, default=0.05,
                        help="false-positive rate of the calibrated threshold (default: 0.05)")
    parser.add_argument("--k", type=float, default=0.2,
                        help="fraction of lowest-probability tokens averaged (default: 0.2)")
    parser.add_argument("--count-rule", choices=("reference", "floor_eps"),
                        default="reference",
                        help="tokens averaged: int(n*k) as the reference code (default), or "
                        "floor(k*n + 1e-9)")
    parser.add_argument("--bos", choices=("reference", "auto", "always", "never"),
                        default="reference",
                        help="first-token handling. reference (default): as the reference "
                        "code, tokenize with the tokenizer's own special tokens and never "
                        "score the first position (GPT-2-style tokenizers: first text token "
                        "not scored; LLaMA-style: BOS added, all scored); auto: prepend BOS "
                        "when the tokenizer has one, so every text token is scored; always: "
                        "prepend BOS or fail; never: no BOS")
    parser.add_argument("--fpr-comparison", choices=("<", "<="), default="<",
                        help="TPR at FPR: empirical FPR strictly below the target as Shi et "
                        "al.'s evaluation (default '<'), or at most it ('<=')")
    parser.add_argument("--max-length", type=int, help="window length in tokens (default: the "
                        "model's context length)")
    parser.add_argument("--stride", type=int, help="window shift for long texts (default: half "
                        "the window)")
    parser.add_argument("--batch-size", type=int, default=8, help="windows per forward pass")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, mps")
    parser.add_argument("--dtype", choices=("float64", "float32", "bfloat16", "float16"),
                        help="load the weights in this dtype (default: the checkpoint's)")
    parser.add_argument("--n-resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--confidence-level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="write scores.csv and summary.json (and evaluation.csv + "
                        "roc.png/pdf with --labels, contamination_rate.csv with "
                        "--nonmembers) to DIR; scores are also saved as they are computed "
                        "in DIR/checkpoint/, so the same command resumes an interrupted run")
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="standard output format (default: table)")
    return parser


def _read_texts(path: Path, text_column: str, id_column: str | None, what: str):
    from storyeval.data.io import read_table
    from storyeval.exceptions import InputError

    frame, _ = read_table(path)
    col = text_column
    if col not in frame.columns:
        if text_column == "text" and "story" in frame.columns:
            col = "story"
        else:
            raise InputError(f"{what} {path}: no column {text_column!r}; columns are "
                             f"{list(frame.columns)} (use --text-column)")
    texts = frame[col]
    bad = texts.map(lambda v: not isinstance(v, str) or not v.strip())
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise InputError(f"{what} {path}, line {i + 2}: column {col!r} is empty or not text")
    if id_column is not None:
        if id_column not in frame.columns:
            raise InputError(f"{what} {path}: no column {id_column!r} (--id-column)")
        ids = frame[id_column].tolist()
        if len(set(ids)) != len(ids):
            raise InputError(f"{what} {path}: column {id_column!r} has repeated ids")
    else:
        ids = list(range(len(frame)))
    if len(frame) == 0:
        raise InputError(f"{what} {path}: no rows")
    return frame, texts.tolist(), ids


def _labels(frame: pd.DataFrame, column: str, path: Path) -> list[bool]:
    from storyeval.exceptions import InputError

    if column not in frame.columns:
        raise InputError(f"--texts {path}: no column {column!r} (--labels); columns are "
                         f"{list(frame.columns)}")
    mapping = {"1": True, "0": False, "true": True, "false": False, "member": True,
               "non-member": False, "nonmember": False}
    out = []
    for i, v in enumerate(frame[column].tolist()):
        key = str(v).strip().lower()
        key = key.removesuffix(".0")
        if key not in mapping:
            raise InputError(f"--texts {path}, line {i + 2}: column {column!r} holds {v!r}; "
                             f"expected 0/1 or true/false")
        out.append(mapping[key])
    return out


def run(args: argparse.Namespace) -> int:
    from storyeval.contamination import (
        contamination_rate,
        evaluate_membership,
        load_causal_lm,
        score_texts,
    )
    from storyeval.exceptions import InputError, UndefinedStatisticWarning

    if not 0 < args.k <= 1:
        raise InputError(f"--k must be in (0, 1], got {args.k}")
    if not 0 <= args.fpr < 1:
        raise InputError(f"--fpr must be in [0, 1), got {args.fpr}")
    frame, texts, ids = _read_texts(args.texts, args.text_column, args.id_column, "--texts")
    labels = _labels(frame, args.labels, args.texts) if args.labels else None
    ref = None
    if args.nonmembers is not None:
        _, ref_texts, ref_ids = _read_texts(args.nonmembers, args.text_column, args.id_column,
                                            "--nonmembers")
        ref = (ref_texts, ref_ids)

    if args.n_resamples < 1:
        raise InputError(f"--n-resamples must be >= 1, got {args.n_resamples}")
    model, tokenizer = load_causal_lm(args.model, device=args.device, dtype=args.dtype)
    options = {"k": args.k, "count_rule": args.count_rule, "bos": args.bos, "max_length": args.max_length,
               "stride": args.stride, "batch_size": args.batch_size}
    # with --out, every scored text is persisted at once: re-running the command resumes
    ckpt = (args.out / "checkpoint") if args.out is not None else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UndefinedStatisticWarning)
        scores = score_texts(texts, model, tokenizer, ids=ids, **options,
                             checkpoint=ckpt / "texts.jsonl" if ckpt else None)
        ref_scores = (score_texts(ref[0], model, tokenizer, ids=ref[1], **options,
                                  checkpoint=ckpt / "nonmembers.jsonl" if ckpt else None)
                      if ref is not None else None)
    for w in caught:
        print(f"storyeval contamination: warning: {w.message}", file=sys.stderr)
    scores.insert(1, "set", "texts")
    if labels is not None:
        scores.insert(2, "is_member", labels)
    if ref_scores is not None:
        ref_scores.insert(1, "set", "nonmembers")

    summary: dict = {
        "model": str(args.model), "k": args.k, "count_rule": args.count_rule,
        "bos": args.bos, "fpr_comparison": args.fpr_comparison,
        "max_length": args.max_length, "stride": args.stride, "dtype": args.dtype,
        "n_texts": len(scores), "n_unscored": int((scores["reason"] != "").sum()),
        "confidence_level": args.confidence_level, "n_resamples": args.n_resamples,
        "seed": args.seed,
    }
    ok = scores["reason"] == ""
    evaluations, rates = [], []
    if labels is not None:
        for col in SCORES:
            sub = scores[ok & scores[col].notna()]
            if sub["is_member"].all() or not sub["is_member"].any():
                raise InputError(f"--labels {args.labels}: the scored texts need both members "
                                 f"and non-members")
            evaluations.append(evaluate_membership(
                sub[col].to_numpy(), sub["is_member"].to_numpy(), score_name=SCORE_NAMES[col],
                confidence_level=args.confidence_level, n_resamples=args.n_resamples,
                random_state=args.seed, fpr_comparison=args.fpr_comparison))
        summary["evaluation"] = [
            {"score": e.score_name, "auc": e.auc, "auc_ci": list(e.auc_ci),
             "tpr": {f"{f:g}": v for f, v in e.tpr.items()},
             "tpr_ci": {f"{f:g}": list(c) for f, c in e.tpr_ci.items()},
             "fpr_comparison": e.fpr_comparison,
             "n_members": e.n_members, "n_nonmembers": e.n_nonmembers, "notes": e.notes}
            for e in evaluations]
    if ref_scores is not None:
        ref_ok = ref_scores["reason"] == ""
        summary["n_nonmembers_unscored"] = int((~ref_ok).sum())
        for col in SCORES:
            r = contamination_rate(
                scores.loc[ok & scores[col].notna(), col].to_numpy(),
                ref_scores.loc[ref_ok & ref_scores[col].notna(), col].to_numpy(), fpr=args.fpr,
                score_name=SCORE_NAMES[col], confidence_level=args.confidence_level,
                n_resamples=args.n_resamples, random_state=args.seed)
            rates.append(r)
        summary["contamination_rate"] = [
            {"score": r.score_name, "rate": r.rate, "ci": list(r.ci), "threshold": r.threshold,
             "target_fpr": r.target_fpr, "calibration_fpr": r.calibration_fpr,
             "n_texts": r.n_texts, "n_flagged": r.n_flagged, "n_calibration": r.n_calibration,
             "threshold_origin": f"calibrated on {r.n_calibration} known non-members "
                                 f"({args.nonmembers}) at FPR <= {r.target_fpr:g}"}
            for r in rates]

    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        table = scores if ref_scores is None else pd.concat([scores, ref_scores],
                                                            ignore_index=True)
        table.to_csv(args.out / "scores.csv", index=False)
        if evaluations:
            pd.concat([e.to_frame() for e in evaluations]).to_csv(
                args.out / "evaluation.csv", index=False)
            from storyeval.contamination import plot_membership

            sub = scores[ok]
            fig = plot_membership({SCORE_NAMES[c]: sub[c].to_numpy() for c in SCORES},
                                  sub["is_member"].to_numpy(),
                                  title=f"{Path(str(args.model)).name} on {args.texts.name} "
                                        f"(k={args.k:g}, BOS {args.bos})")
            for ext in ("png", "pdf"):
                fig.savefig(args.out / f"roc.{ext}", dpi=200)
        if rates:
            pd.concat([r.to_frame() for r in rates]).to_csv(
                args.out / "contamination_rate.csv", index=False)
        (args.out / "summary.json").write_text(json.dumps(_jsonable(summary), indent=2) + "\n",
                                               encoding="utf-8")

    if args.format == "json":
        print(json.dumps(_jsonable(summary), indent=2))
    else:
        _print_table(summary, scores)
    return 0


def _jsonable(obj):
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_jsonable(v) for v in obj]
    return obj


def _print_table(summary: dict, scores: pd.DataFrame) -> None:
    lvl = f"{summary['confidence_level']:.0%}"
    print(f"model: {summary['model']}  k={summary['k']:g}  count rule: "
          f"{summary['count_rule']}  BOS policy: {summary['bos']}  TPR at FPR "
          f"{summary['fpr_comparison']} target")
    print(f"texts scored: {summary['n_texts'] - summary['n_unscored']} of {summary['n_texts']}"
          + (f" ({summary['n_unscored']} too short, see scores.csv 'reason')"
             if summary["n_unscored"] else ""))
    if "evaluation" not in summary and "contamination_rate" not in summary:
        print(scores[["text_id", "n_tokens", "min_k", "min_k_pp", "reason"]].to_string(
            index=False))
    for e in summary.get("evaluation", []):
        print(f"{e['score']}: ROC AUC {e['auc']:.3f} [{e['auc_ci'][0]:.3f}, "
              f"{e['auc_ci'][1]:.3f}] ({lvl} bootstrap CI; {e['n_members']} members, "
              f"{e['n_nonmembers']} non-members)")
        for f, v in e["tpr"].items():
            lo, hi = e["tpr_ci"][f]
            print(f"    TPR at FPR {e['fpr_comparison']} {float(f):.1%}: {v:.3f} "
                  f"[{lo:.3f}, {hi:.3f}]")
        for note in e["notes"]:
            print(f"    note: {note}")
    for r in summary.get("contamination_rate", []):
        print(f"{r['score']}: contamination rate {r['rate']:.3f} [{r['ci'][0]:.3f}, "
              f"{r['ci'][1]:.3f}] ({r['n_flagged']} of {r['n_texts']} flagged; threshold "
              f"{r['threshold']:.4g} {r['threshold_origin']}; achieved calibration FPR "
              f"{r['calibration_fpr']:.3f})")
