"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

It speaks ``POST /v1/chat/completions`` (JSON in, JSON out, HTTP/1.1 keep-alive; asyncio, so
64 slow requests in flight cost no threads) and can be told
to answer each request key (header ``X-Storyeval-Cache-Key``, else a hash of the body) with a
number of 429s (with ``Retry-After``), 500s, malformed 200 bodies or slow answers before the real
answer. It counts requests per key, so tests can check that no answered request is repeated.

Run it alone (for the benchmark): ``python tests/_openai_stub_server.py --latency 0.05`` prints
``PORT <n>`` and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def default_answer(payload: dict[str, Any], key: str) -> str:
    """A deterministic, well-formed answer: a rating from the key's hash and an explanation."""
    r = int(hashlib.sha256(key.encode()).hexdigest(), 16) % 5 + 1
    return f" {r} \u2014 The story is rated {r}.\n\nExplanation: scripted answer for {key[:10]}."


@dataclass
class Script:
    """What the server does. ``*_first`` counts apply to the first attempts of every key, in the
    order: 429s, then 500s, then malformed bodies, then slow answers, then normal answers."""

    latency: float = 0.0
    rate_limit_first: int = 0
    retry_after: str | None = "0.05"
    error_500_first: int = 0
    malformed_first: int = 0
    slow_first: int = 0
    slow_latency: float = 2.0
    require_key: str | None = None
    echo_auth: bool = False
    status_override: int | None = None
    answer: Callable[[dict[str, Any], str], str] = default_answer


@dataclass
class StubState:
    received: Counter = field(default_factory=Counter)
    answered: Counter = field(default_factory=Counter)
    auth_headers: list[str] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    keep_payloads: bool = True


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}


class _Handler:
    """Decides the answer to one request (the HTTP plumbing is in :class:`StubServer`)."""

    def __init__(self, script: Script, state: StubState) -> None:
        self.script, self.state = script, state

    async def respond(self, path: str, headers: dict[str, str], raw: bytes):
        script, state = self.script, self.state
        if not path.rstrip("/").endswith("/chat/completions"):
            return 404, b'{"error": {"message": "not found"}}', {}
        try:
            payload = json.loads(raw)
        except ValueError:
            return 400, b'{"error": {"message": "bad json"}}', {}
        key = headers.get("x-storyeval-cache-key") or hashlib.sha256(raw).hexdigest()
        auth = headers.get("authorization", "")
        with state.lock:
            state.received[key] += 1
            attempt = state.received[key]
            state.auth_headers.append(auth)
            if state.keep_payloads:
                state.payloads.append(payload)
        echo = f" (you sent {auth!r})" if script.echo_auth else ""
        if script.require_key is not None and auth != f"Bearer {script.require_key}":
            return 401, json.dumps({"error": {"message": "invalid api key" + echo}}).encode(), {}
        if script.status_override is not None:
            msg = json.dumps({"error": {"message": "scripted error" + echo}})
            return script.status_override, msg.encode(), {}
        n = attempt
        if n <= script.rate_limit_first:
            hdr = {"Retry-After": script.retry_after} if script.retry_after else {}
            return 429, b'{"error": {"message": "rate limited"}}', hdr
        n -= script.rate_limit_first
        if n <= script.error_500_first:
            return 500, json.dumps({"error": {"message": "boom" + echo}}).encode(), {}
        n -= script.error_500_first
        if n <= script.malformed_first:
            bad = [b"{not json", b'{"choices": []}', b'{"choices": [{"message": {}}]}']
            return 200, bad[(n - 1) % len(bad)], {}
        n -= script.malformed_first
        delay = script.slow_latency if n <= script.slow_first else script.latency
        if delay:
            await asyncio.sleep(delay)
        text = script.answer(payload, key) + echo
        body = {
            "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
            "model": payload.get("model", ""),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        with state.lock:
            state.answered[key] += 1
        return 200, json.dumps(body).encode(), {}


class StubServer:
    """An asyncio HTTP/1.1 server (keep-alive) in a background thread.

    Use ``with StubServer(Script(...)) as srv: srv.base_url``.
    """

    def __init__(self, script: Script | None = None, *, port: int = 0) -> None:
        self.script = script or Script()
        self.state = StubState()
        self._handler = _Handler(self.script, self.state)
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                if method != "POST":
                    status, body, extra = 404, b"{}", {}
                else:
                    status, body, extra = await self._handler.respond(path, headers, raw)
                head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
                        "Content-Type: application/json", f"Content-Length: {len(body)}"]
                head += [f"{k}: {v}" for k, v in extra.items()]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError,
                asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def _serve(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", self._port, backlog=1024))
        self._port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
            for t in pending:
                t.cancel()
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> StubServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        loop = self._loop

        async def _close() -> None:
            self._server.close()
            loop.stop()

        asyncio.run_coroutine_threadsafe(_close(), loop)
        self._thread.join(5)

    def __enter__(self) -> StubServer:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    args = ap.parse_args(argv)
    srv = StubServer(Script(latency=args.latency), port=args.port)
    srv.state.keep_payloads = False
    srv.start()
    print(f"PORT {srv.port}", flush=True)
    try:
        srv._thread.join()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
