"""A rating run against a server that mixes faults (issue 37, "Done when").

The scripted server of ``tests/_openai_stub_server.py`` (in this process, on 127.0.0.1) sends,
on a share ``--wire-rate`` of the answers, a late duplicate of the response, a late
unasked-for response for another key (with an id of its own), or the connection's previous
response before the answer; refuses with HTTP 400 every request of the stories marked "too
long"; answers the stories marked "other model" from ``other-model``; and turns ``--fault-rate``
of all attempts into 429, 500 or malformed answers. The run uses concurrency ``--concurrency``.

Printed: requests, seconds, faults injected, answers stored, answers stored under a wrong key
(each stored answer is compared with the server's answer for its own key; the target is 0),
answers missing that should have been stored (target 0), failed items and whether they are
exactly the marked stories' (each named with its reason in ``failed_requests``).

Usage: ``python benchmarks/bench_llm_faults.py [--stories 1250] [--concurrency 16]
[--wire-rate 0.3] [--fault-rate 0.05] [--keep-alive/--no-keep-alive]``
(1,250 stories x 2 Eval-Prompts x 2 criteria x 2 tries = 10,000 requests).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from _openai_stub_server import Script, StubServer, default_answer  # noqa: E402

from storyeval.llm import AnswerCache, OpenAIBackend, rate  # noqa: E402
from storyeval.llm.outputs import failed_requests  # noqa: E402

LONG, OTHER = "AN-OVERLONG-STORY", "SERVED-BY-ANOTHER-MODEL"


def main(argv: list[str] | None = None) -> int:
    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stories", type=int, default=1250)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--wire-rate", type=float, default=0.3)
    ap.add_argument("--fault-rate", type=float, default=0.05)
    ap.add_argument("--no-keep-alive", action="store_true")
    args = ap.parse_args(argv)
    n = args.stories
    long = {i for i in range(n) if i % 97 == 3}
    other = {i for i in range(n) if i % 131 == 7} - long
    text = [f"Story number {i} about a lighthouse." + (f" {LONG}" if i in long else "")
            + (f" {OTHER}" if i in other else "") for i in range(n)]
    stories = pd.DataFrame({"story_id": [f"S{i}" for i in range(n)],
                            "system": [f"Sys{i % 5}" for i in range(n)], "prompt_id": range(n),
                            "prompt": [f"Prompt {i}." for i in range(n)], "story": text})
    script = Script(wire_fault="double-late,smuggle-late,stale-first",
                    wire_fault_rate=args.wire_rate, bad_request_marker=LONG,
                    wrong_model_marker=OTHER, fault_rate=args.fault_rate,
                    fault_kinds=("429", "500", "malformed"), retry_after="0.01", latency=0.002)
    with tempfile.TemporaryDirectory() as tmp, StubServer(script) as srv:
        srv.state.keep_payloads = False
        cache = AnswerCache(Path(tmp) / "c.sqlite")
        be = OpenAIBackend("stub", base_url=srv.base_url, api_key_env=None,
                           concurrency=args.concurrency, backoff_base=0.001, timeout=10.0,
                           max_retries=10, random_state=0, keep_alive=not args.no_keep_alive)
        t0 = time.perf_counter()
        run = rate(stories, be, eval_prompts="1,2", criteria="RE,CH", tries=2, cache=cache,
                   show_progress=False)
        seconds = time.perf_counter() - t0
        frame = cache.to_frame()
        faults = dict(srv.state.faults)
        sent = sum(srv.state.received.values())
        connections = srv.state.connections
    wrong = sum(raw != default_answer({}, k) for k, raw in zip(frame["key"], frame["raw"]))
    marked = {f"S{i}" for i in long | other}
    r = run.ratings
    missing = int((~r["story_id"].isin(marked) & (r["status"] != "ok")).sum())
    failed = failed_requests(r)
    named = set(failed["story_id"]) == marked and len(failed) == 8 * len(marked)
    reasons = (failed.loc[failed["story_id"].isin({f"S{i}" for i in long}), "error"]
               .str.contains("HTTP 400").all()
               and failed.loc[failed["story_id"].isin({f"S{i}" for i in other}), "error"]
               .str.contains("other-model").all())
    print(f"requests: {len(r)} items, {sent} attempts received by the server over "
          f"{connections} connections, {seconds:.1f} s (concurrency {args.concurrency}, "
          f"keep-alive {'off' if args.no_keep_alive else 'on'})")
    print(f"faults injected: {faults}")
    print(f"answers stored: {len(frame)}; under a wrong key: {wrong}; missing: {missing}")
    print(f"failed items: {len(failed)} ({len(marked)} marked stories x 8); exactly the marked "
          f"ones: {named}; reasons right: {bool(reasons)}")
    ok = wrong == 0 and missing == 0 and named and bool(reasons)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
