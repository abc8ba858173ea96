"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

It speaks ``POST /v1/chat/completions`` (JSON in, JSON out, HTTP/1.1 keep-alive; asyncio, so
64 slow requests in flight cost no threads) and can be told
to answer each request key (header ``X-Storyeval-Cache-Key``, else a hash of the body) with a
number of 429s (with ``Retry-After``), 500s, malformed 200 bodies, empty answers or slow answers
before the real answer, or to inject such faults at random into a share of all attempts
(``fault_rate``; reproducible, drawn from the key and the attempt number). It counts requests per
key and TCP connections, so tests can check that no answered request is repeated. With
``echo_auth`` it sends the ``Authorization`` header back everywhere a careless server or proxy
might: answers, error bodies (past their first 300 characters), malformed bodies (past 80),
``finish_reason`` and ``usage``.

Run it alone (for the benchmark): ``python tests/_openai_stub_server.py --latency 0.05`` prints
``PORT <n>`` and serves until killed; ``GET /stats`` returns the time of the first request, the
request and connection counts, and ``POST /stats`` returns them and resets them.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
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
    order: 429s, then 500s, then malformed bodies, then empty answers, then slow answers, then
    normal answers. ``fault_rate`` then turns that share of the remaining attempts into one of
    ``fault_kinds`` ("429", "500", "hang": an answer after ``slow_latency``, "malformed"),
    chosen from a hash of (``fault_seed``, key, attempt)."""

    latency: float = 0.0
    rate_limit_first: int = 0
    retry_after: str | None = "0.05"
    error_500_first: int = 0
    malformed_first: int = 0
    empty_first: int = 0
    slow_first: int = 0
    slow_latency: float = 2.0
    require_key: str | None = None
    echo_auth: bool = False
    status_override: int | None = None
    answer: Callable[[dict[str, Any], str], str] = default_answer
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = ("429", "500", "hang", "malformed")
    fault_seed: int = 0
    usage: dict[str, Any] | None = None
    #: When set, the usage field of each answer: a function of the request's payload (None:
    #: the answer carries no usage field at all)
    usage_fn: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
    finish_reason: Any = "stop"
    #: HTTP/1.1 framing faults of a broken server or proxy, on every answer: "garbage" (stray
    #: bytes right after the response, same write), "garbage-later" (stray bytes in a second
    #: write 2 ms later), "double" (a second, unasked-for response in the same write),
    #: "double-split" (that second response in a write of its own, right after), "early" (the
    #: response is sent
    #: as soon as the headers are read, before the request body).
    wire_fault: str | None = None
    #: Late faults (issue 37), on a share ``wire_fault_rate`` of the answers (drawn from the
    #: key): "double-late" (the same response again, ``wire_delay`` s later), "smuggle-late"
    #: (an answer for another key, with an id of its own, ``wire_delay`` s later),
    #: "stale-first" (the connection's previous response is sent again before the answer).
    #: Faults of a server or proxy that mixes up its responses (issue 48): "stray-first" (a
    #: response for another key, with a never-seen id, sent at once, before the answer, which
    #: follows after ``latency``), "replay-first" / "replay-instead" (a copy of the response
    #: last sent for another key, on any connection, before the answer / instead of it).
    #: The share ``wire_fault_rate`` is drawn from the key and the attempt.
    wire_fault_rate: float = 1.0
    #: a replayed response was sent at least this many seconds earlier
    replay_age: float = 0.05
    wire_delay: float = 0.005
    #: extra response headers of ``status_override`` answers (e.g. a redirect's Location)
    override_headers: dict[str, str] = field(default_factory=dict)
    #: ``status_override`` error bodies name the request target (path and query)
    echo_path: bool = False
    #: the ``model`` field of answers (default: the requested model)
    served_model: str | None = None
    #: a request whose last message contains this text is refused with HTTP 400 (a story
    #: longer than the served model's context)
    bad_request_marker: str | None = None
    #: a request whose messages contain this text is answered by "other-model"
    wrong_model_marker: str | None = None
    #: every answer carries the same ``id`` (a server that does not make ids unique)
    constant_id: bool = False
    #: ids drawn from this many values (Ollama's OpenAI layer draws them from 999)
    id_values: int | None = None
    #: the ``id`` is ``chatcmpl-<X-Request-Id>`` when the request has that header, as vLLM's
    #: is (the request's nonce echoed)
    echo_request_id: bool = False


def _draw(seed: int, key: str, attempt: int) -> float:
    """A reproducible uniform number in [0, 1) from (seed, key, attempt)."""
    h = hashlib.sha256(f"{seed}\x1f{key}\x1f{attempt}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


@dataclass
class StubState:
    received: Counter = field(default_factory=Counter)
    answered: Counter = field(default_factory=Counter)
    auth_headers: list[str] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    keep_payloads: bool = True
    connections: int = 0
    open_now: int = 0  # connections open now, and the most open at once
    max_open: int = 0
    faults: Counter = field(default_factory=Counter)
    first_at: float | None = None  # time.time() of the first request since the last reset
    paths: list[str] = field(default_factory=list)  # request targets (path and query)
    ids: int = 0  # response ids handed out (each answer has its own, as real servers do)

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"first_at": self.first_at, "received": sum(self.received.values()),
                    "keys": len(self.received), "connections": self.connections}

    def reset(self) -> None:
        with self.lock:
            self.received.clear()
            self.answered.clear()
            self.faults.clear()
            self.connections = 0
            self.first_at = None


_REASONS = {200: "OK", 301: "Moved Permanently", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}


class _Handler:
    """Decides the answer to one request (the HTTP plumbing is in :class:`StubServer`)."""

    def __init__(self, script: Script, state: StubState) -> None:
        self.script, self.state = script, state

    async def respond(self, path: str, headers: dict[str, str], raw: bytes):
        script, state = self.script, self.state
        with state.lock:
            state.paths.append(path)
        if not path.split("?", 1)[0].rstrip("/").endswith("/chat/completions"):
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
        pad = " padding" * 40 if script.echo_auth else ""  # the echo starts past character 300
        if script.require_key is not None and auth != f"Bearer {script.require_key}":
            return 401, json.dumps({"error": {"message": "invalid api key" + pad + echo}}).encode(), {}
        if script.status_override is not None:
            where = f" at {path}" if script.echo_path else ""
            msg = json.dumps({"error": {"message": "scripted error" + where + pad + echo}})
            return script.status_override, msg.encode(), dict(script.override_headers)
        if script.bad_request_marker and script.bad_request_marker in json.dumps(payload):
            msg = {"error": {"message": "This model's maximum context length is 4096 tokens"
                             + pad + echo, "code": "context_length_exceeded"}}
            return 400, json.dumps(msg).encode(), {}
        n = attempt
        if n <= script.rate_limit_first:
            hdr = {"Retry-After": script.retry_after} if script.retry_after else {}
            return 429, b'{"error": {"message": "rate limited"}}', hdr
        n -= script.rate_limit_first
        if n <= script.error_500_first:
            return 500, json.dumps({"error": {"message": "boom" + pad + echo}}).encode(), {}
        n -= script.error_500_first
        if n <= script.malformed_first:
            return 200, self._malformed(n, echo), {}
        n -= script.malformed_first
        if n <= script.empty_first:
            return 200, self._body(payload, "", script.finish_reason, echo), {}
        n -= script.empty_first
        delay = script.slow_latency if n <= script.slow_first else script.latency
        if script.fault_rate and _draw(script.fault_seed, key, attempt) < script.fault_rate:
            kinds = script.fault_kinds
            kind = kinds[int(_draw(script.fault_seed + 1, key, attempt) * len(kinds))]
            with state.lock:
                state.faults[kind] += 1
            if kind == "429":
                hdr = {"Retry-After": script.retry_after} if script.retry_after else {}
                return 429, b'{"error": {"message": "rate limited"}}', hdr
            if kind == "500":
                return 500, json.dumps({"error": {"message": "boom" + pad + echo}}).encode(), {}
            if kind == "malformed":
                return 200, self._malformed(attempt, echo), {}
            if kind == "empty":
                return 200, self._body(payload, "", script.finish_reason, echo), {}
            delay = script.slow_latency  # "hang": longer than the client's timeout
        if delay:
            await asyncio.sleep(delay)
        text = script.answer(payload, key) + echo
        with state.lock:
            state.answered[key] += 1
        return 200, self._body(payload, text, script.finish_reason, echo,
                               headers.get("x-request-id")), {}

    def _malformed(self, n: int, echo: str) -> bytes:
        bad = [b"{not json", b'{"choices": []}', b'{"choices": [{"message": {}}]}']
        body = bad[(n - 1) % len(bad)]
        if echo:  # the echo starts past the 80 characters a careless client keeps
            body += (" " * 80 + echo).encode()
        return body

    def _body(self, payload: dict[str, Any], text: str, finish_reason: Any, echo: str,
              nonce: str | None = None) -> bytes:
        usage = dict(self.script.usage) if self.script.usage is not None else \
            {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if self.script.usage_fn is not None:
            usage = self.script.usage_fn(payload)
        if echo:
            finish_reason = f"stop{echo}"
            usage.update(prompt_tokens=f"10{echo}", completion_tokens=f"5{echo}",
                         note=f"usage{echo}")
        with self.state.lock:
            self.state.ids += 1
            rid = "chatcmpl-stub" if self.script.constant_id else f"chatcmpl-stub-{self.state.ids}"
            if self.script.id_values:
                rid = f"chatcmpl-{random.Random(self.state.ids).randrange(self.script.id_values)}"
            if self.script.echo_request_id and nonce:
                rid = f"chatcmpl-{nonce}"
        body = {
            "id": rid, "object": "chat.completion", "created": int(time.time()),
            "model": ("other-model" if self.script.wrong_model_marker
                      and self.script.wrong_model_marker in json.dumps(payload)
                      else self.script.served_model or payload.get("model", "")),
            "choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": text}}],
            "usage": usage,
        }
        if usage is None:
            del body["usage"]
        return json.dumps(body).encode()


class StubServer:
    """An asyncio HTTP/1.1 server (keep-alive) in a background thread.

    Use ``with StubServer(Script(...)) as srv: srv.base_url``.
    """

    def __init__(self, script: Script | None = None, *, port: int = 0,
                 ssl_context: Any = None) -> None:
        self.script = script or Script()
        self._ssl = ssl_context  # an ssl.SSLContext: serve https
        self.state = StubState()
        self._handler = _Handler(self.script, self.state)
        self._sent: list[tuple[float, str, bytes]] = []  # (time, key, response) sent lately
        self._port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self.state.lock:
            self.state.connections += 1
            self.state.open_now += 1
            self.state.max_open = max(self.state.max_open, self.state.open_now)
        previous = None
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
                n_body = int(headers.get("content-length", "0") or 0)
                close = "close" in headers.get("connection", "").lower()
                fault = self.script.wire_fault
                key = headers.get("x-storyeval-cache-key", "")
                with self.state.lock:
                    attempt = self.state.received[key] + 1
                if fault is not None and "," in fault:  # several kinds: one per key and attempt
                    kinds = fault.split(",")
                    fault = kinds[int(_draw(self.script.fault_seed + 8, key, attempt)
                                      * len(kinds))]
                hit = (method == "POST" and fault is not None and not path.endswith("/stats")
                       and _draw(self.script.fault_seed + 7, key, attempt)
                       < self.script.wire_fault_rate)
                if fault == "early" and method == "POST" and not path.endswith("/stats"):
                    status, body, extra = await self._handler.respond(path, headers, b"{}")
                    writer.write(self._message(status, body, extra))
                    await writer.drain()
                    await reader.readexactly(n_body)
                    if close:
                        break
                    continue
                raw = await reader.readexactly(n_body)
                if hit and fault == "stray-first":  # at once, before the answer is computed
                    self._count_fault(fault)
                    writer.write(self._stray("double", headers))
                    await writer.drain()
                if path.rstrip("/").endswith("/stats"):  # for the benchmark: GET, POST resets
                    body = json.dumps(self.state.stats()).encode()
                    if method == "POST":
                        self.state.reset()
                    status, extra = 200, {}
                elif method != "POST":
                    status, body, extra = 404, b"{}", {}
                else:
                    if self.state.first_at is None:
                        self.state.first_at = time.time()
                    status, body, extra = await self._handler.respond(path, headers, raw)
                message = plain = self._message(status, body, extra)
                if fault in ("garbage", "double") and method == "POST":
                    message += self._stray(fault, headers)
                if fault == "stale-first" and hit and previous is not None:
                    message = previous + message
                    self._count_fault(fault)
                replay = self._replay_for(key)
                if fault in ("replay-first", "replay-instead") and hit and replay is not None:
                    self._count_fault(fault)
                    message = replay + (message if fault == "replay-first" else b"")
                previous = plain if status == 200 else previous
                if status == 200 and method == "POST" and plain in message:  # really sent
                    self._sent.append((time.monotonic(), key, plain))
                    del self._sent[:-256]
                writer.write(message)
                await writer.drain()
                late = False
                if fault in ("double-late", "smuggle-late") and hit and status == 200:
                    self._count_fault(fault)
                    stray = plain if fault == "double-late" else self._stray("double", headers)
                    asyncio.get_running_loop().call_later(self.script.wire_delay,
                                                          self._write_late, writer, stray)
                    late = True
                if fault in ("garbage-later", "double-split") and method == "POST":
                    await asyncio.sleep(0.002 if fault == "garbage-later" else 0)
                    writer.write(self._stray(fault, headers))
                    await writer.drain()
                if close:  # the client said Connection: close (after any late stray)
                    if late:
                        await asyncio.sleep(self.script.wire_delay + 0.002)
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError,
                asyncio.CancelledError):
            pass
        finally:
            with self.state.lock:
                self.state.open_now -= 1
            writer.close()

    def _replay_for(self, key: str) -> bytes | None:
        """The newest response sent for another key at least ``replay_age`` s ago."""
        limit = time.monotonic() - self.script.replay_age
        for t, k, message in reversed(self._sent):
            if t <= limit and k != key:
                return message
        return None

    def _count_fault(self, fault: str) -> None:
        with self.state.lock:
            self.state.faults[fault] += 1

    @staticmethod
    def _write_late(writer: asyncio.StreamWriter, data: bytes) -> None:
        if not writer.is_closing():
            writer.write(data)

    @staticmethod
    def _message(status: int, body: bytes, extra: dict[str, str]) -> bytes:
        head = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
                "Content-Type: application/json", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in extra.items()]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body

    def _stray(self, fault: str, headers: dict[str, str]) -> bytes:
        """Bytes nobody asked for: junk, or a whole well-formed answer for another key."""
        if fault.startswith("garbage"):
            return b"XYZZY stray bytes\r\n\r\n"
        key = "stray-" + headers.get("x-storyeval-cache-key", "")
        body = self._handler._body({}, self.script.answer({}, key), "stop", "")
        return self._message(200, body, {})

    def _serve(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", self._port, backlog=1024,
                                 ssl=self._ssl))
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
        return f"{'https' if self._ssl else 'http'}://127.0.0.1:{self.port}/v1"

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


def make_certificate(folder: Any) -> tuple[Any, Any]:
    """A self-signed certificate for 127.0.0.1 in ``folder`` (cert.pem, key.pem, and a copy
    under OpenSSL's hashed name in ``certs/``), made with the openssl command; returns the
    folder and a server SSL context. Raises FileNotFoundError without openssl."""
    import shutil
    import ssl
    import subprocess
    from pathlib import Path

    d = Path(folder)
    if shutil.which("openssl") is None:
        raise FileNotFoundError("openssl")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"),
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    (d / "certs").mkdir(exist_ok=True)
    h = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", str(d / "cert.pem")],
                       check=True, capture_output=True, text=True).stdout.strip()
    shutil.copy(d / "cert.pem", d / "certs" / f"{h}.0")  # OpenSSL's folder layout (c_rehash)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / "cert.pem", d / "key.pem")
    return d, ctx


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--echo", action="store_true",
                    help="echo X-Request-Id in the response id, as vLLM does")
    args = ap.parse_args(argv)
    srv = StubServer(Script(latency=args.latency, echo_request_id=args.echo), port=args.port)
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
