"""Benchmark: stream a synthetic corpus into `storyeval.generation.NgramIndex` and query it.

Usage::

    python benchmarks/bench_novelty.py --tokens 100000000 --chunk 8388608

Writes a corpus of ``--tokens`` Zipf-distributed words (vocabulary 200,000; 100 words a line)
to a temporary file, builds the index of orders 1 and 2 from it as a stream, then queries the
n-grams of 1,000 synthetic stories. Reports the time of each step, the peak resident memory of
the process (``resource.getrusage``, which includes the interpreter and NumPy), the runs on disk
and the stated working-memory bound (24 bytes per held hash per order + the word-hash cache).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from storyeval.generation import NgramIndex, novelty_n


def write_corpus(path: Path, tokens: int, vocab: int = 200_000, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(vocab)])
    per_line, block = 100, 1_000_000
    with open(path, "w", encoding="utf-8") as f:
        done = 0
        while done < tokens:
            k = min(block, tokens - done)
            ids = np.minimum(rng.zipf(1.2, size=k) - 1, vocab - 1)
            w = words[ids].reshape(-1, per_line) if k % per_line == 0 else words[ids][None]
            f.write("\n".join(" ".join(row) for row in w) + "\n")
            done += k


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=10_000_000)
    ap.add_argument("--chunk", type=int, default=2 ** 23)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.txt"
        t0 = time.perf_counter()
        write_corpus(corpus, args.tokens)
        t1 = time.perf_counter()
        base = peak_mb()
        with NgramIndex((1, 2), chunk_ngrams=args.chunk, folder=Path(tmp) / "idx") as idx:
            idx.add_file(corpus)
            idx.finish()
            t2 = time.perf_counter()
            rng = np.random.default_rng(1)
            stories = [" ".join(f"w{int(i)}" for i in np.minimum(rng.zipf(1.2, 300) - 1, 10**6))
                       for _ in range(1000)]
            nov = [novelty_n(stories, idx, n) for n in (1, 2)]
            t3 = time.perf_counter()
            runs = sorted((Path(tmp) / "idx").glob("*.npy"))
            disk = sum(p.stat().st_size for p in runs) / 2 ** 20
        bound = 24 * args.chunk * 2 / 2 ** 20
        print(f"corpus tokens: {args.tokens:,} (written in {t1 - t0:.1f} s, "
              f"{corpus.stat().st_size / 2**20:.0f} MiB)")
        print(f"index build (stream, orders 1,2): {t2 - t1:.1f} s; runs on disk: {len(runs)}, "
              f"{disk:.0f} MiB")
        print(f"query 1,000 stories x 300 words: {t3 - t2:.2f} s; novelty-1 {nov[0]:.4f}, "
              f"novelty-2 {nov[1]:.4f}")
        print(f"peak RSS: {peak_mb():.0f} MiB (before the index: {base:.0f} MiB); stated "
              f"working bound for the held hashes: 24 B x {args.chunk:,} x 2 orders = "
              f"{bound:.0f} MiB (+ word-hash cache, at most 5e6 words)")


if __name__ == "__main__":
    main()
