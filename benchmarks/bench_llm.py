"""Speed of the LLM rater machinery (no model involved).

1. Throughput of :class:`storyeval.llm.OpenAIBackend` against the scripted local server
   (``tests/_openai_stub_server.py``, run in its own process) answering every request after
   50 ms, at concurrency 64 (target: >= 100 requests/s).
2. Replay of a fully cached run through :func:`storyeval.llm.rate` (render, key, look up,
   assemble the ratings table), in items/s (target: >= 10,000 items/s).

Usage: ``python benchmarks/bench_llm.py [--requests 2000] [--concurrency 64] [--latency 0.05]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def _stories(n: int, words: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    vocab = np.array(["the", "a", "story", "of", "time", "man", "woman", "night", "sea", "house", "ship", "war", "love", "dog", "star"])
    text = [" ".join(rng.choice(vocab, words)) for _ in range(n)]
    return pd.DataFrame({"story_id": [f"S/{i}" for i in range(n)], "system": "S",
                         "prompt_id": range(n), "prompt": [f"Prompt {i}" for i in range(n)],
                         "story": text, "reference": text[::-1]})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2016, help="requests of the HTTP benchmark")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--replay-stories", type=int, default=700)
    args = ap.parse_args(argv)
    os.environ.setdefault("STORYEVAL_NO_PROGRESS", "1")
    from storyeval.llm import AnswerCache, OpenAIBackend, SamplingParams, rate

    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "_openai_stub_server.py"),
                               "--latency", str(args.latency)], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().split()
        port = int(line[1])
        base = f"http://127.0.0.1:{port}/v1"
        n_stories = max(1, args.requests // 24)
        st = _stories(n_stories)
        with tempfile.TemporaryDirectory() as tmp:
            backend = OpenAIBackend("bench", base_url=base, concurrency=args.concurrency,
                                    api_key_env=None)
            cache = AnswerCache(Path(tmp) / "bench.sqlite")
            t0 = time.perf_counter()
            run = rate(st, backend, eval_prompts="1-4", criteria="all", tries=1, cache=cache,
                       sampling=SamplingParams(max_tokens=32), show_progress=False)
            dt = time.perf_counter() - t0
            print(f"HTTP: {run.n_sent} requests in {dt:.2f} s = {run.n_sent / dt:,.0f} requests/s "
                  f"(latency {args.latency * 1000:.0f} ms, concurrency {args.concurrency}; "
                  f"target >= 100/s); failures: {run.n_request_failures}")

            # Replay: fill a cache for a larger run without HTTP, then time a full cached rate().
            big = _stories(args.replay_stories, words=300)
            from storyeval.llm.runner import _build

            job = _build(big, backend, model_name=None, eval_prompts="1-4", criteria=None,
                         tries=3, sampling=SamplingParams(), templates=None, guidelines=None,
                         criteria_file=None)
            cache2 = AnswerCache(Path(tmp) / "replay.sqlite")
            con = cache2._con
            con.execute("BEGIN")
            con.executemany(
                "INSERT INTO answers (key, backend, model, messages_sha, sampling, try_index, "
                "seed, raw, created) VALUES (?, 'openai', 'bench', '', '{}', ?, ?, ?, 0)",
                [(k, t, t, f" {t % 5 + 1} \u2014 fine.") for k, t in
                 zip(job.items["key"], job.items["try"])])
            con.execute("COMMIT")
            t0 = time.perf_counter()
            run = rate(big, backend, eval_prompts="1-4", tries=3, cache=cache2,
                       show_progress=False)  # first replay also re-parses and stores the parse
            dt1 = time.perf_counter() - t0
            t0 = time.perf_counter()
            run = rate(big, backend, eval_prompts="1-4", tries=3, cache=cache2,
                       show_progress=False)
            dt2 = time.perf_counter() - t0
            n = len(run.ratings)
            assert run.n_sent == 0 and (run.ratings["status"] == "ok").all()
            print(f"Replay: {n:,} cached items in {dt2:.2f} s = {n / dt2:,.0f} items/s "
                  f"(target >= 10,000/s); first replay with re-parsing: {n / dt1:,.0f} items/s")
    finally:
        server.kill()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
