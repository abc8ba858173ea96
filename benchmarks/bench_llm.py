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

3. ``--clients``: the HTTP clients alone, side by side against the same server process: the
   own pool (`storyeval.llm.backends._ConnectionPool`), aiohttp and httpx, each in a fresh
   process at each concurrency, sending the same JSON POST (a rating request's size): requests/s,
   first-request latency (from the client process's launch, imports included, to its first
   answer) and client CPU seconds per request (user + system of the client process, from
   ``getrusage``). Each client sends ``16 x concurrency`` requests or stops at ``--client-seconds``.
4. ``--command``: the whole ``storyeval rate`` command in a fresh process (CLI start-up, story
   file reading, rendering, sending, caching, writing ``--out``): requests/s and the time from
   launch to the first request at the server.
6. ``--verify``: the cost of verifying every answer (issue 48): ``rate()`` end to end and the
   whole ``storyeval rate`` command at concurrency 16 against a 2 ms server and at 256 against a
   50 ms server, each against a server that echoes the request nonce (vLLM; kept-alive
   connections) and one that does not (a connection per request, verified by the server's
   close), beside aiohttp sending the same requests on kept-alive connections with no check;
   the load average is printed before each line.
7. ``--w3 [--json FILE]``: the issue-49 targets, the whole ``storyeval rate`` command against an
   echoing server at concurrency 16 (2 ms server, 8,064 requests; target >= 900 requests/s) and
   W3 (41,472 requests, concurrency 256, 50 ms server; target >= 4,100 requests/s), each round
   followed by aiohttp alone and the own client alone against the same server process, with the
   load average before each; the rows go to FILE (JSON) and a markdown table beside it.
5. ``--endpoints``: ``rate`` against one server process and against two, each with the same
   ``--endpoint-concurrency`` (default 16, so that the client is not the bottleneck), after a
   warm-up run: the ratio of the two throughputs, end to end and in the sending phase
   (target >= 1.7).

Usage: ``python benchmarks/bench_llm.py [--concurrency 64,256,1024] [--latency 0.05]
[--requests-per-worker 8] [--replay-stories 700] [--clients] [--command] [--endpoints]
[--skip-rate]``
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


# ---------------------------------------------------------------------------------------------
# The HTTP clients side by side (each in its own process: CPU time and imports are its own)
# ---------------------------------------------------------------------------------------------

_BODY = json.dumps({"model": "bench", "messages": [
    {"role": "user", "content": "Rate the story. " + "word " * 400}],
    "temperature": 0.7, "top_p": 1.0, "max_tokens": 32, "seed": 0}).encode()


async def _client_own(url: str, c: int, n: int, deadline: float, first: list) -> int:
    from storyeval.llm.backends import _ConnectionPool

    pool = _ConnectionPool(c, 60.0, 10.0, {"Content-Type": "application/json"})
    return await _drive(lambda i: pool.post(url, _BODY, {"X-Storyeval-Cache-Key": str(i)}),
                        c, n, deadline, first, pool.aclose)


async def _client_aiohttp(url: str, c: int, n: int, deadline: float, first: list) -> int:
    import aiohttp

    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c),
                                    timeout=aiohttp.ClientTimeout(total=60))

    async def post(i: int):
        async with session.post(url, data=_BODY, headers={
                "Content-Type": "application/json", "X-Storyeval-Cache-Key": str(i)}) as r:
            return r.status, dict(r.headers), await r.read()

    return await _drive(post, c, n, deadline, first, session.close)


async def _client_httpx(url: str, c: int, n: int, deadline: float, first: list) -> int:
    import httpx

    client = httpx.AsyncClient(timeout=60, limits=httpx.Limits(
        max_connections=c, max_keepalive_connections=c))

    async def post(i: int):
        r = await client.post(url, content=_BODY, headers={
            "Content-Type": "application/json", "X-Storyeval-Cache-Key": str(i)})
        return r.status_code, r.headers, r.content

    return await _drive(post, c, n, deadline, first, client.aclose)


async def _drive(post, c: int, n: int, deadline: float, first: list, close) -> int:
    import asyncio

    it = iter(range(n))
    done = [0]

    async def worker() -> None:
        for i in it:
            if time.time() > deadline:
                return
            reply = await post(i)  # (status, headers, body, ...)
            status, body = reply[0], reply[2]
            assert status == 200 and body, status
            if not first:
                first.append(time.time())
            done[0] += 1

    try:
        await asyncio.gather(*(worker() for _ in range(c)))
    finally:
        await close()
    return done[0]


def client_worker(kind: str, url: str, c: int, n: int, seconds: float, launched: float) -> None:
    """Run in a fresh process: print one JSON line of the client's measurements."""
    import asyncio
    import importlib

    first: list[float] = []
    fn = {"own": _client_own, "aiohttp": _client_aiohttp, "httpx": _client_httpx}[kind]
    # imports count in the first-request latency, not in the CPU per request
    importlib.import_module({"own": "storyeval.llm.backends"}.get(kind, kind))
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.time()
    done = asyncio.run(fn(url, c, n, t0 + seconds, first))
    dt = time.time() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(json.dumps({"client": kind, "c": c, "done": done, "seconds": dt,
                      "rps": done / dt, "first_s": first[0] - launched if first else None,
                      "cpu_ms_per_req": 1000 * cpu / max(done, 1)}), flush=True)


def compare_clients(base: str, concurrencies: list[int], seconds: float) -> list[dict]:
    url = base + "/chat/completions"
    rows = []
    for c in concurrencies:
        for kind in ("own", "aiohttp", "httpx"):
            launched = time.time()
            out = subprocess.run([sys.executable, __file__, "--client-worker", kind, url, str(c),
                                  str(16 * c), str(seconds), repr(launched)],
                                 capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"client {kind:>7} c={c:>5}: {row['rps']:>7,.0f} requests/s "
                  f"({row['done']} in {row['seconds']:.1f} s), first answer "
                  f"{row['first_s']:.2f} s after launch, {row['cpu_ms_per_req']:.2f} ms client "
                  f"CPU per request", flush=True)
    return rows


def whole_command(base: str, c: int, n_requests: int, tmp: Path, tag: str = "",
                  root: Path = ROOT) -> dict:
    """``storyeval rate`` in a fresh process, start to end."""
    n_stories = max(1, -(-n_requests // 24))
    src = tmp / f"stories-{c}.csv"
    _stories(n_stories).to_csv(src, index=False)
    _stats(base, reset=True)
    env = {**os.environ, "STORYEVAL_NO_PROGRESS": "1", "PYTHONPATH": str(root)}
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "storyeval", "rate", "--base-url", base,
                             "--model", "bench", "--no-api-key", "--stories", str(src),
                             "--eval-prompts", "1-4", "--criteria", "all", "--tries", "1",
                             "--max-tokens", "32", "--concurrency", str(c),
                             "--cache", str(tmp / f"cmd-{c}{tag}.sqlite"),
                             "--out", str(tmp / f"cmd-{c}{tag}")], env=env,
                            stdout=subprocess.DEVNULL)
    samples = _cpu_samples(proc)  # (time, CPU seconds of the command) until it exits
    if proc.wait() != 0:
        raise RuntimeError("storyeval rate failed")
    dt = time.time() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    server = _stats(base)
    n = server["received"]
    before = [u for t, u in samples if t <= server["first_at"]]
    cpu_first = f"{before[-1]:.2f}" if before else "n/a"
    print(f"whole command c={c:>5}: {n} requests in {dt:.2f} s = {n / dt:,.0f} requests/s from "
          f"launch to exit; first request {server['first_at'] - t0:.2f} s after launch "
          f"(targets at 256: >= 1,000/s, < 1 s); the command used {cpu:.2f} CPU s in all and "
          f"{cpu_first} CPU s before its first request (on an idle machine its wall times are "
          f"about these, or the c/latency limit)", flush=True)
    return {"requests": n, "seconds": dt, "rps": n / dt, "cpu_s": cpu,
            "first_request_s": server["first_at"] - t0}


def _cpu_samples(proc: subprocess.Popen) -> list[tuple[float, float]]:
    """(time, user + system CPU seconds) of a running process every 5 ms (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    out = []
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            out.append((time.time(), (int(fields[11]) + int(fields[12])) / tick))
        except (OSError, IndexError, ValueError):
            break
        time.sleep(0.005)
    return out


def two_endpoints(latency: float, c: int, n_requests: int, tmp: Path) -> None:
    """rate() on one server process and on two (each ``c`` in flight): the speed-up."""
    from storyeval.llm import OpenAIBackend, SamplingParams, rate

    servers = [_start_server(latency) for _ in range(2)]
    try:
        bases = [b for _, b in servers]
        st = _stories(max(1, -(-n_requests // 24)))
        # warm-up (imports, first connections), so that neither timed run pays it
        rate(_stories(4), OpenAIBackend("bench", base_url=bases, concurrency=c,
                                        api_key_env=None),
             eval_prompts="1-4", criteria="all", tries=1, cache=tmp / "warm.sqlite",
             sampling=SamplingParams(max_tokens=32), show_progress=False)
        rates, http_rates = [], []
        for k in (1, 2):
            be = OpenAIBackend("bench", base_url=bases[:k], concurrency=c, api_key_env=None)
            http: list[float] = []
            send = be.run

            def timed(*a, _send=send, _http=http, **kw):
                t = time.perf_counter()
                try:
                    return _send(*a, **kw)
                finally:
                    _http.append(time.perf_counter() - t)

            be.run = timed  # type: ignore[method-assign]
            t0 = time.time()
            run = rate(st, be, eval_prompts="1-4", criteria="all", tries=1,
                       cache=tmp / f"ep-{k}.sqlite", sampling=SamplingParams(max_tokens=32),
                       show_progress=False)
            dt = time.time() - t0
            rates.append(run.n_sent / dt)
            http_rates.append(run.n_sent / http[0])
            print(f"{k} endpoint(s), concurrency {c} each: {run.n_sent} requests in {dt:.2f} s "
                  f"= {run.n_sent / dt:,.0f} requests/s (rate() end to end); sending phase "
                  f"{http[0]:.2f} s = {run.n_sent / http[0]:,.0f} requests/s", flush=True)
        print(f"two endpoints / one: {rates[1] / rates[0]:.2f}x end to end, "
              f"{http_rates[1] / http_rates[0]:.2f}x in the sending phase (target >= 1.7x; the "
              f"limit of c/latency is 2x)", flush=True)
    finally:
        for proc, _ in servers:
            proc.kill()
            proc.wait()


def verify_costs(tmp: Path, n16: int, n256: int, seconds: float) -> None:
    """rate() and the whole command against echoing and non-echoing servers, beside aiohttp."""
    from storyeval.llm import OpenAIBackend, SamplingParams, rate

    for latency, c, n in ((0.002, 16, n16), (0.05, 256, n256)):
        st = _stories(max(1, -(-n // 24)))
        for echo in (True, False):
            proc, base = _start_server(latency, echo=echo)
            what = "echoes the nonce" if echo else "no echo"
            try:
                load = os.getloadavg()[0]
                be = OpenAIBackend("bench", base_url=base, concurrency=c, api_key_env=None)
                _stats(base, reset=True)
                t0 = time.time()
                run = rate(st, be, eval_prompts="1-4", criteria="all", tries=1,
                           cache=tmp / f"v-{c}-{echo}.sqlite",
                           sampling=SamplingParams(max_tokens=32), show_progress=False)
                dt = time.time() - t0
                server = _stats(base)
                print(f"verify: {latency * 1000:.0f} ms server ({what}), c={c}: rate() "
                      f"{run.n_sent:,} requests in {dt:.2f} s = {run.n_sent / dt:,.0f} "
                      f"requests/s end to end; {server['connections']:,} connections; "
                      f"failures {run.n_request_failures}; load {load:.1f}", flush=True)
                print(f"verify: {latency * 1000:.0f} ms server ({what}), load "
                      f"{os.getloadavg()[0]:.1f}, ", end="", flush=True)
                whole_command(base, c, n, tmp, tag=f"-{echo}")
                if echo:
                    load = os.getloadavg()[0]
                    out = subprocess.run(
                        [sys.executable, __file__, "--client-worker", "aiohttp",
                         base + "/chat/completions", str(c), str(n), str(seconds),
                         repr(time.time())], capture_output=True, text=True, check=True)
                    row = json.loads(out.stdout.strip().splitlines()[-1])
                    print(f"verify: {latency * 1000:.0f} ms server, c={c}: aiohttp alone "
                          f"(kept-alive, no check, no cache) {row['rps']:,.0f} requests/s "
                          f"({row['done']:,} requests); load {load:.1f}", flush=True)
            finally:
                proc.kill()
                proc.wait()


#: The issue-49 targets of the whole ``storyeval rate`` command against an echoing server:
#: (name, server latency s, concurrency, default requests, target requests/s). W3 is 41,472
#: requests (1,728 stories x 4 Eval-Prompts x 6 criteria) at 256 in flight.
WORKLOADS = (("c16-2ms", 0.002, 16, 8064, 900.0), ("W3-c256-50ms", 0.05, 256, 41472, 4100.0))


def _peer(kind: str, base: str, c: int, n: int) -> dict:
    """One HTTP client alone (``own`` or ``aiohttp``) in a fresh process: its JSON row."""
    out = subprocess.run([sys.executable, __file__, "--client-worker", kind,
                          base + "/chat/completions", str(c), str(n), "600", repr(time.time())],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def w3_workloads(tmp: Path, rounds: int, sizes: dict[str, int],
                 baseline: Path | None = None) -> list[dict]:
    """The issue-49 workloads: per round, the whole ``storyeval rate`` command, aiohttp alone
    and the own client alone (and the command of the ``baseline`` tree, a folder holding
    another version's ``storyeval`` package), one after the other against the same echoing
    server process, with the 1-minute load average printed before each (the machine's other
    work moves them alike, so the ratios to aiohttp are the comparable numbers)."""
    rows = []
    for name, latency, c, n_default, target in WORKLOADS:
        n = sizes.get(name, n_default)
        proc, base = _start_server(latency, echo=True)
        try:
            for r in range(rounds):
                row: dict = {"workload": name, "latency_s": latency, "concurrency": c,
                             "requests": n, "target_rps": target, "round": r + 1}
                row["load_before"] = os.getloadavg()[0]
                print(f"{name} round {r + 1}: load {row['load_before']:.2f}; ", end="", flush=True)
                cmd = whole_command(base, c, n, tmp, tag=f"-{name}-{r}")
                row["command_rps"], row["command_cpu_s"] = cmd["rps"], cmd["cpu_s"]
                for kind in ("aiohttp", "own"):
                    row[f"load_{kind}"] = os.getloadavg()[0]
                    peer = _peer(kind, base, c, n)
                    row[f"{kind}_alone_rps"] = peer["rps"]
                    row[f"{kind}_cpu_ms_per_req"] = peer["cpu_ms_per_req"]
                if baseline is not None:
                    row["load_baseline"] = os.getloadavg()[0]
                    print(f"{name} round {r + 1} baseline {baseline}: ", end="", flush=True)
                    old = whole_command(base, c, n, tmp, tag=f"-{name}-{r}-old", root=baseline)
                    row["baseline_command_rps"] = old["rps"]
                    row["baseline_command_cpu_s"] = old["cpu_s"]
                row["command_over_aiohttp"] = row["command_rps"] / row["aiohttp_alone_rps"]
                row["own_over_aiohttp"] = row["own_alone_rps"] / row["aiohttp_alone_rps"]
                row["met"] = row["command_rps"] >= target
                print(f"{name} round {r + 1}: whole command {row['command_rps']:,.0f} req/s "
                      f"(target {target:,.0f}: {'met' if row['met'] else 'not met'}), aiohttp "
                      f"alone {row['aiohttp_alone_rps']:,.0f} (load {row['load_aiohttp']:.2f}), "
                      f"own client alone {row['own_alone_rps']:,.0f} (load "
                      f"{row['load_own']:.2f}); command / aiohttp "
                      f"{row['command_over_aiohttp']:.2f}, own / aiohttp "
                      f"{row['own_over_aiohttp']:.2f}", flush=True)
                rows.append(row)
        finally:
            proc.kill()
            proc.wait()
    return rows


def w3_markdown(rows: list[dict]) -> str:
    """The rows of `w3_workloads` as a markdown table."""
    out = ["| workload | round | load | whole command req/s (CPU s) | target | aiohttp alone | "
           "own client alone | command / aiohttp | own / aiohttp | baseline command req/s "
           "(CPU s) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        old = (f"{r['baseline_command_rps']:,.0f} ({r['baseline_command_cpu_s']:.1f})"
               if "baseline_command_rps" in r else "-")
        out.append(f"| {r['workload']} ({r['requests']:,} requests) | {r['round']} | "
                   f"{r['load_before']:.2f} | {r['command_rps']:,.0f} ({r['command_cpu_s']:.1f}) "
                   f"| {r['target_rps']:,.0f} ({'met' if r['met'] else 'not met'}) | "
                   f"{r['aiohttp_alone_rps']:,.0f} | {r['own_alone_rps']:,.0f} | "
                   f"{r['command_over_aiohttp']:.2f} | {r['own_over_aiohttp']:.2f} | {old} |")
    return "\n".join(out)


def _start_server(latency: float, *, echo: bool = False):
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "_openai_stub_server.py"),
                             "--latency", str(latency)] + (["--echo"] if echo else []),
                            stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline().split()[1])
    return proc, f"http://127.0.0.1:{port}/v1"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", default="64,256,1024",
                    help="comma-separated concurrencies (default: 64,256,1024)")
    ap.add_argument("--requests-per-worker", type=int, default=8,
                    help="requests per concurrent worker, at least 2,016 (default: 8)")
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--replay-stories", type=int, default=700)
    ap.add_argument("--clients", action="store_true",
                    help="also compare the own client with aiohttp and httpx")
    ap.add_argument("--client-seconds", type=float, default=20.0,
                    help="longest run of one client at one concurrency (default: 20)")
    ap.add_argument("--command", action="store_true",
                    help="also time the whole `storyeval rate` command at each concurrency")
    ap.add_argument("--endpoints", action="store_true",
                    help="also compare one and two server processes")
    ap.add_argument("--endpoint-concurrency", type=int, default=16,
                    help="requests in flight per server for --endpoints (default: 16, so that "
                         "a busy 2-core client is not the bottleneck)")
    ap.add_argument("--verify", action="store_true",
                    help="the cost of verifying answers: c=16 at 2 ms and c=256 at 50 ms, "
                         "echoing and non-echoing servers, beside aiohttp")
    ap.add_argument("--verify-requests", default="4032,12096",
                    help="requests of the --verify runs at c=16 and c=256 (default 4032,12096)")
    ap.add_argument("--w3", action="store_true",
                    help="the issue-49 targets: the whole command at c=16 against a 2 ms server "
                         "and W3 (41,472 requests, c=256, 50 ms), beside aiohttp and the own "
                         "client alone, alternately")
    ap.add_argument("--w3-rounds", type=int, default=2)
    ap.add_argument("--w3-requests", default="8064,41472",
                    help="requests of the --w3 workloads c16-2ms and W3 (default 8064,41472)")
    ap.add_argument("--w3-baseline", type=Path, default=None,
                    help="also time the whole command of another storyeval tree (a folder with "
                         "a storyeval package, e.g. `git archive v0.4.0 storyeval | tar -x -C DIR`)")
    ap.add_argument("--json", type=Path, default=None,
                    help="write the --w3 rows (and the load) to this JSON file, with a markdown "
                         "table beside it (.md)")
    ap.add_argument("--skip-rate", action="store_true",
                    help="skip parts 1 and 2 (rate() and the replay)")
    args = ap.parse_args(argv)
    os.environ.setdefault("STORYEVAL_NO_PROGRESS", "1")
    from storyeval.llm import AnswerCache, OpenAIBackend, SamplingParams, rate

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start "
          "(on a shared, busy machine the numbers are lower bounds)", flush=True)
    concurrencies = [int(v) for v in args.concurrency.split(",")]
    if args.verify:
        n16, n256 = (int(v) for v in args.verify_requests.split(","))
        with tempfile.TemporaryDirectory() as tmp:
            verify_costs(Path(tmp), n16, n256, args.client_seconds)
    if args.w3:
        n16, nw3 = (int(v) for v in args.w3_requests.split(","))
        with tempfile.TemporaryDirectory() as tmp:
            rows = w3_workloads(Path(tmp), args.w3_rounds,
                                {"c16-2ms": n16, "W3-c256-50ms": nw3}, args.w3_baseline)
        table = w3_markdown(rows)
        print(table, flush=True)
        if args.json is not None:
            meta = {"cpus": os.cpu_count(), "load_end": os.getloadavg(),
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                    "python": sys.version.split()[0],
                    "baseline": None if args.w3_baseline is None else str(args.w3_baseline)}
            args.json.write_text(json.dumps({"machine": meta, "rows": rows}, indent=1) + "\n")
            args.json.with_suffix(".md").write_text(
                f"{meta['cpus']} CPUs, {meta['date']}, load at the end "
                f"{meta['load_end'][0]:.2f}; baseline tree: {meta['baseline']}\n\n{table}\n")
    if args.endpoints:
        with tempfile.TemporaryDirectory() as tmp:
            two_endpoints(args.latency, args.endpoint_concurrency,
                          max(2016, args.endpoint_concurrency * 2 * args.requests_per_worker * 4),
                          Path(tmp))

    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "_openai_stub_server.py"),
                               "--latency", str(args.latency)], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline().split()
        port = int(line[1])
        base = f"http://127.0.0.1:{port}/v1"
        print(f"server: tests/_openai_stub_server.py in its own process, {args.latency * 1000:.0f} "
              f"ms per answer; {os.cpu_count()} CPUs", flush=True)
        if args.clients:
            compare_clients(base, concurrencies, args.client_seconds)
        with tempfile.TemporaryDirectory() as tmp:
            if args.command:
                for c in concurrencies:
                    whole_command(base, c, max(2016, c * args.requests_per_worker), Path(tmp))
            if args.skip_rate:
                return 0
            for c in concurrencies:
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
    if len(sys.argv) > 1 and sys.argv[1] == "--client-worker":
        kind, url, c, n, seconds, launched = sys.argv[2:8]
        client_worker(kind, url, int(c), int(n), float(seconds), float(launched))
        sys.exit(0)
    sys.exit(main())
