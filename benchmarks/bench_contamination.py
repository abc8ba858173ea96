"""Speed of Min-K% / Min-K%++ scoring on the CPU with a tiny GPT-2.

Trains the tiny model of the tests (:func:`storyeval.contamination.train_tiny_causal_lm`,
2 layers, 64 dimensions, 128-token context) on a few HANNA human stories, then scores the 96
human stories in full (about 500 words each, so every story needs the sliding window) and
prints scored tokens per second for several batch sizes and thread counts, plus the time of
the evaluation statistics (AUC, TPR at FPR, 1,000 bootstrap resamples).

Run: ``python benchmarks/bench_contamination.py [--batch-sizes 1 8 32] [--threads 1 2]``.
The numbers measure the storyeval machinery (windowing, batching, softmax moments); a real
LLM's throughput is dominated by its forward pass.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--steps", type=int, default=100, help="training steps of the model")
    args = parser.parse_args()

    import numpy as np
    import torch

    from storyeval.contamination import evaluate_membership, score_texts, train_tiny_causal_lm
    from storyeval.data import load_hanna_stories

    stories = load_hanna_stories().query("system == 'Human'")["story"].tolist()
    t0 = time.perf_counter()
    model, tok = train_tiny_causal_lm(stories[:48], steps=args.steps, context=128,
                                      tokenizer_texts=stories, show_progress=False)
    print(f"trained tiny GPT-2 ({sum(p.numel() for p in model.parameters()):,} parameters, "
          f"vocabulary {len(tok)}, context 128) for {args.steps} steps in "
          f"{time.perf_counter() - t0:.1f} s")
    score_texts(stories[:2], model, tok, show_progress=False)  # warm-up
    table = None
    for threads in args.threads:
        torch.set_num_threads(threads)
        for bs in args.batch_sizes:
            t = time.perf_counter()
            table = score_texts(stories, model, tok, batch_size=bs, show_progress=False)
            dt = time.perf_counter() - t
            n = int(table["n_tokens"].sum())
            print(f"threads={threads} batch_size={bs:>3}: {n:,} tokens of {len(stories)} "
                  f"stories in {dt:.2f} s = {n / dt:,.0f} tokens/s")
    y = np.r_[np.ones(48), np.zeros(48)]
    t = time.perf_counter()
    res = evaluate_membership(table["min_k_pp"], y, n_resamples=1000, random_state=0)
    print(f"evaluate_membership (AUC + 3 TPR@FPR, 1,000 bootstrap resamples, 96 texts): "
          f"{time.perf_counter() - t:.3f} s; Min-K%++ AUC {res.auc:.3f} "
          f"[{res.auc_ci[0]:.3f}, {res.auc_ci[1]:.3f}]")


if __name__ == "__main__":
    main()
