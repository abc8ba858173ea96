"""Speed of the metric wrappers on the 672 stories shipped with storyeval.

Prints (1) the wall time of the lexical + surface measures (rouge, bleu, chrf, surface) on all
672 stories, including the one-off imports, against the 30 s target on 2 cores, and (2) the
BERTScore throughput (stories per second) of the default MiniLM backbone on a sample of LLM
stories with their human references (chunked, no cache).

Usage: python benchmarks/bench_metrics.py [--bertscore-stories N] [--skip-bertscore]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bertscore-stories", type=int, default=48)
    parser.add_argument("--skip-bertscore", action="store_true")
    args = parser.parse_args()

    import torch

    from storyeval.metrics import hanna_stories, score

    print(f"cpu threads: torch {torch.get_num_threads()}, os {os.cpu_count()}")
    stories = hanna_stories()
    start = time.perf_counter()
    timings = {}
    for name in ("rouge", "bleu", "chrf", "surface"):
        t = time.perf_counter()
        table = score(stories, name, show_progress=False)
        timings[name] = (time.perf_counter() - t, table["measure"].nunique())
    total = time.perf_counter() - start
    for name, (sec, k) in timings.items():
        print(f"{name:8s} {sec:6.2f} s  ({k} measures)")
    verdict = "OK" if total < 30 else "SLOW"
    print(f"lexical + surface on {len(stories)} stories: {total:.2f} s "
          f"(target < 30 s on 2 cores: {verdict}; includes importing evaluate)")
    if args.skip_bertscore:
        return
    sample = (stories[stories["system"] != "Human"]
              .groupby("system", sort=False).head(max(1, args.bertscore_stories // 6))
              .reset_index(drop=True))
    t = time.perf_counter()
    score(sample.head(2), "bertscore", show_progress=False)  # model load + warm-up
    load = time.perf_counter() - t
    t = time.perf_counter()
    score(sample, "bertscore", show_progress=False)
    sec = time.perf_counter() - t
    words = sample["story"].str.split().str.len().mean()
    print(f"BERTScore (all-MiniLM-L6-v2 L6, chunked): {len(sample)} stories "
          f"(mean {words:.0f} words, references ~500 words) in {sec:.1f} s = "
          f"{len(sample) / sec:.2f} stories/s (model load + warm-up {load:.1f} s)")


if __name__ == "__main__":
    main()
