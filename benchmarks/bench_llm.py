"""Speed of the LLM rater machinery (no model involved).

Against the scripted local server (``tests/_openai_stub_server.py``, run in its own process,
answering every request after ``--latency``, default 50 ms):

1. Start-up and end-to-end throughput of :func:`storyeval.llm.rate` with
   :class:`storyeval.llm.OpenAIBackend` at each ``--concurrency`` (default 64, 256 and 1024):
   the time until the first request reaches the server and until the first answer is stored
   (target: first request within 1 s at any concurrency up to 1,024), then requests/s end to
   end (render, key, send, parse, commit each answer; targets: >= 500 requests/s at
   concurrency 256). The server's own counters (``GET /stats``) give the requests and TCP
   connections it saw.
2. Replay of a fully cached run through :func:`storyeval.llm.rate` (render, key, look up,
   assemble the ratings table), in items/s (target: >= 20,000 items/s).

Usage: ``python benchmarks/bench_llm.py [--concurrency 64,256,1024] [--latency 0.05]
[--requests-per-worker 8] [--replay-stories 700]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def _stories(n: int, words: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    vocab = np.array(["the", "a", "story", "of", "time", "man", "woman", "night", "sea", "house",
                      "ship", "war", "love", "dog", "star"])
    text = [" ".join(rng.choice(vocab, words)) for _ in range(n)]
    return pd.DataFrame({"story_id": [f"S/{i}" for i in range(n)], "system": "S",
                         "prompt_id": range(n), "prompt": [f"Prompt {i}" for i in range(n)],
                         "story": text, "reference": text[::-1]})


def _stats(base: str, *, reset: bool = False) -> dict:
    url = base.rsplit("/v1", 1)[0] + "/stats"
    req = urllib.request.Request(url, method="POST" if reset else "GET", data=b"" if reset else None)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=30) as resp:
        return json.loads(resp.read())


def _http_run(base: str, concurrency: int, n_requests: int, latency: float, tmp: Path) -> None:
    from storyeval.llm import AnswerCache, OpenAIBackend, SamplingParams, rate

    first_stored: list[float] = []

    class Timed(AnswerCache):
        def put(self, **kw):
            if not first_stored:
                first_stored.append(time.time())
            return super().put(**kw)

    n_stories = max(1, -(-n_requests // 24))  # 4 Eval-Prompts x 6 criteria, 1 try
    st = _stories(n_stories)
    backend = OpenAIBackend("bench", base_url=base, concurrency=concurrency, api_key_env=None)
    started: list[float] = []
    run_backend = backend.run

    def timed_run(*a, **kw):
        started.append(time.time())
        return run_backend(*a, **kw)

    backend.run = timed_run  # type: ignore[method-assign]
    cache = Timed(tmp / f"http-{concurrency}.sqlite")
    _stats(base, reset=True)
    t0 = time.time()
    run = rate(st, backend, eval_prompts="1-4", criteria="all", tries=1, cache=cache,
               sampling=SamplingParams(max_tokens=32), show_progress=False)
    dt = time.time() - t0
    server = _stats(base)
    first_req = server["first_at"] - t0 if server["first_at"] else float("nan")
    first_ans = first_stored[0] - t0 if first_stored else float("nan")
    prep = started[0] - t0
    print(f"concurrency {concurrency:>5}: first request at the server {first_req:.3f} s after "
          f"rate() was called ({first_req - prep:.3f} s after the backend started; rendering "
          f"and cache look-up took {prep:.3f} s), first answer stored after {first_ans:.3f} s "
          f"(target: first request < 1 s); "
          f"{run.n_sent} requests in {dt:.2f} s = {run.n_sent / dt:,.0f} requests/s end to end "
          f"(latency {latency * 1000:.0f} ms; target >= 500/s at 256); failures "
          f"{run.n_request_failures}; server saw {server['received']} requests on "
          f"{server['connections']} connections", flush=True)
    cache.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", default="64,256,1024",
                    help="comma-separated concurrencies (default: 64,256,1024)")
    ap.add_argument("--requests-per-worker", type=int, default=8,
                    help="requests per concurrent worker, at least 2,016 (default: 8)")
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
        print(f"server: tests/_openai_stub_server.py in its own process, {args.latency * 1000:.0f} "
              f"ms per answer; {os.cpu_count()} CPUs", flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            for c in (int(v) for v in args.concurrency.split(",")):
                _http_run(base, c, max(2016, c * args.requests_per_worker), args.latency,
                          Path(tmp))
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"peak RSS of the client process: {rss:,.0f} MB", flush=True)

            # Replay: fill a cache for a larger run without HTTP, then time a full cached rate().
            big = _stories(args.replay_stories, words=300)
            from storyeval.llm.runner import _build

            backend = OpenAIBackend("bench", base_url=base, api_key_env=None)
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
            best = float("inf")
            for _ in range(3):
                t0 = time.perf_counter()
                run = rate(big, backend, eval_prompts="1-4", tries=3, cache=cache2,
                           show_progress=False)
                best = min(best, time.perf_counter() - t0)
            n = len(run.ratings)
            assert run.n_sent == 0 and (run.ratings["status"] == "ok").all()
            print(f"Replay: {n:,} cached items in {best:.2f} s = {n / best:,.0f} items/s (best of "
                  f"3; target >= 20,000/s); first replay with re-parsing: {n / dt1:,.0f} items/s")
    finally:
        server.kill()
        server.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
