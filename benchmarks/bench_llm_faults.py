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

Issue 48 adds the faults of a server or proxy that mixes up responses: a stray with a
never-seen id sent before the answer ("stray-first"), an older response replayed before the
answer or instead of it ("replay-first", "replay-instead"); servers whose ids repeat
(``--ids constant`` / ``ollama``: 999 values); servers that echo the request nonce as vLLM does
(``--echo yes``) or not; and ``--proxy``: every request through a forwarding proxy on 127.0.0.1
(``HTTP_PROXY``) that sends a stale response ahead of a third of the answers. One line per
combination of ``--concurrency``, ``--echo`` and ``--ids``.

Usage: ``python benchmarks/bench_llm_faults.py [--stories 1250] [--concurrency 4,16,256]
[--echo yes,no] [--ids unique,constant,ollama] [--proxy] [--wire-rate 0.3]
[--fault-rate 0.05] [--no-keep-alive]``
(1,250 stories x 2 Eval-Prompts x 2 criteria x 2 tries = 10,000 requests per line).
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


def one_run(stories, n: int, long: set, other: set, c: int, echo: bool, ids: str,
            args) -> bool:
    """One rating run against the mixed-fault server; prints one line; True when it passes."""
    script = Script(wire_fault="double-late,smuggle-late,stale-first,stray-first,replay-first,"
                               "replay-instead",
                    wire_fault_rate=args.wire_rate, bad_request_marker=LONG,
                    wrong_model_marker=OTHER, fault_rate=args.fault_rate,
                    fault_kinds=("429", "500", "malformed"), retry_after="0.01", latency=0.002,
                    echo_request_id=echo, constant_id=ids == "constant",
                    id_values=999 if ids == "ollama" else None, replay_age=args.replay_age)
    with tempfile.TemporaryDirectory() as tmp, StubServer(script) as srv:
        srv.state.keep_payloads = False
        cache = AnswerCache(Path(tmp) / "c.sqlite")
        be = OpenAIBackend("stub", base_url=srv.base_url, api_key_env=None,
                           concurrency=c, backoff_base=0.001, timeout=10.0,
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
    ok = wrong == 0 and missing == 0 and named and bool(reasons)
    print(f"c={c:>3} echo={'yes' if echo else 'no ':3} ids={ids:8}: {len(r)} items, {sent} "
          f"attempts over {connections} connections, {seconds:.1f} s; faults "
          f"{sum(faults.values())} ({', '.join(f'{k} {v}' for k, v in sorted(faults.items()))}); "
          f"stored {len(frame)}, under a wrong key {wrong}, missing {missing}; failed items "
          f"exactly the marked ones with their reasons: {named and bool(reasons)}; "
          f"{'PASS' if ok else 'FAIL'}", flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    import os

    import pandas as pd

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stories", type=int, default=1250)
    ap.add_argument("--concurrency", default="4,16,256")
    ap.add_argument("--echo", default="yes,no")
    ap.add_argument("--ids", default="unique,constant,ollama")
    ap.add_argument("--proxy", action="store_true")
    ap.add_argument("--wire-rate", type=float, default=0.3)
    ap.add_argument("--fault-rate", type=float, default=0.05)
    ap.add_argument("--no-keep-alive", action="store_true")
    ap.add_argument("--replay-age", type=float, default=0.5,
                    help="a replayed response was sent at least this many seconds before "
                         "(default 0.5: read by the client by then)")
    args = ap.parse_args(argv)
    n = args.stories
    long = {i for i in range(n) if i % 97 == 3}
    other = {i for i in range(n) if i % 131 == 7} - long
    text = [f"Story number {i} about a lighthouse." + (f" {LONG}" if i in long else "")
            + (f" {OTHER}" if i in other else "") for i in range(n)]
    stories = pd.DataFrame({"story_id": [f"S{i}" for i in range(n)],
                            "system": [f"Sys{i % 5}" for i in range(n)], "prompt_id": range(n),
                            "prompt": [f"Prompt {i}." for i in range(n)], "story": text})
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; wire faults on "
          f"{args.wire_rate:.0%} of the attempts, 429/500/malformed on {args.fault_rate:.0%}"
          + ("; through a proxy that sends a stale response ahead of a third of the answers"
             if args.proxy else ""), flush=True)
    proxy = None
    if args.proxy:
        from test_llm_faults import BuggyProxy

        proxy = BuggyProxy("stale-first", rate=0.3)
        for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
            os.environ.pop(name, None)
        os.environ["HTTP_PROXY"] = f"http://127.0.0.1:{proxy.port}"
    ok = True
    try:
        for c in (int(v) for v in args.concurrency.split(",")):
            for echo in (v.strip() == "yes" for v in args.echo.split(",")):
                for ids in args.ids.split(","):
                    ok &= one_run(stories, n, long, other, c, echo, ids.strip(), args)
    finally:
        if proxy is not None:
            proxy.close()
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
