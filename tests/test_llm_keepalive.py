"""Kept-alive connections of the LLM client (issue 49 item 5): the verification before a
connection is reused is a zero-wait readability check, never a fixed rest, and servers that
close idle connections, half-close them after a response or answer slowly lose no answer,
answer no request twice and store none under another request's key.

Offline: each test starts its own HTTP/1.1 server on 127.0.0.1 (a thread per connection, raw
sockets, so that the closes happen exactly where the test says). No test measures time.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import select
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer, default_answer

from storyeval.llm import AnswerCache, OpenAIBackend, rate
from storyeval.llm._http import _ConnectionPool
from storyeval.llm.cache import messages_digest

URL_PATH = "/v1/chat/completions"


class KeepAliveServer:
    """An OpenAI-compatible server on 127.0.0.1 that answers each request with the stub's
    scripted answer for its key (header ``X-Storyeval-Cache-Key``) and echoes the request's
    nonce in the response id (as vLLM does), so that the client keeps connections alive.

    ``idle``: after each response the connection waits at most this many seconds (a callable
    drawing them, or a number) for the next request, then the server closes it, as servers
    with a keep-alive timeout do; a request that arrived in time is always answered.
    ``half_close``: after each response the server shuts its side down (FIN) and keeps reading;
    a request read then is counted (``unanswerable``) and cannot be answered.
    ``latency``: seconds before each response.
    """

    def __init__(self, *, idle=None, half_close: bool = False, latency: float = 0.0) -> None:
        self.idle, self.half_close, self.latency = idle, half_close, latency
        self.lock = threading.Lock()
        self.received: Counter = Counter()  # requests read, per key
        self.answered: Counter = Counter()  # responses sent, per key
        self.sha: dict[str, str] = {}  # digest of the messages received, per key
        self.connections = self.idle_closes = self.unanswerable = 0
        self.reused = 0  # requests read on a connection that had answered before
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _idle_wait(self) -> float | None:
        if self.idle is None:
            return None
        return self.idle() if callable(self.idle) else float(self.idle)

    def _read_request(self, conn: socket.socket, buf: bytes) -> tuple[bytes, bytes, bytes] | None:
        while b"\r\n\r\n" not in buf:
            data = conn.recv(65536)
            if not data:
                return None
            buf += data
        head, _, buf = buf.partition(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        while len(buf) < length:
            data = conn.recv(65536)
            if not data:
                return None
            buf += data
        return head, buf[:length], buf[length:]

    def _serve(self, conn: socket.socket) -> None:
        buf, served, shut = b"", 0, False
        with conn:
            while True:
                wait = self._idle_wait() if served else None
                if wait is not None and not buf and not select.select([conn], [], [], wait)[0]:
                    with self.lock:
                        self.idle_closes += 1
                    return  # idle for too long: closed, as a keep-alive timeout does
                try:
                    got = self._read_request(conn, buf)
                except OSError:
                    return
                if got is None:
                    return
                head, body, buf = got
                key = re.search(rb"(?i)x-storyeval-cache-key: *(\S+)", head).group(1).decode()
                nonce = re.search(rb"(?i)x-request-id: *(\S+)", head).group(1).decode()
                with self.lock:
                    self.received[key] += 1
                    self.reused += served > 0
                if shut:  # half-closed: the request was read, no answer can go back
                    with self.lock:
                        self.unanswerable += 1
                    continue
                if self.latency:
                    time.sleep(self.latency)
                payload = json.loads(body)
                text = default_answer(payload, key)
                if "messages" in payload:
                    with self.lock:
                        self.sha[key] = messages_digest(payload["messages"])
                answer = json.dumps({"id": f"chatcmpl-{nonce}", "model": "m", "choices": [
                    {"message": {"content": text}, "finish_reason": "stop"}]}).encode()
                try:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n%s" % (len(answer), answer))
                except OSError:
                    return
                with self.lock:
                    self.answered[key] += 1
                served += 1
                if self.half_close:
                    conn.shutdown(socket.SHUT_WR)  # FIN after the response; reading goes on
                    shut = True
                if b"connection: close" in head.lower():
                    return

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> KeepAliveServer:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stories(n: int) -> pd.DataFrame:
    return pd.DataFrame({"story_id": [f"S{i}" for i in range(n)], "system": ["A", "B"] * (n // 2),
                         "prompt_id": range(n), "prompt": [f"Prompt {i}." for i in range(n)],
                         "story": [f"Story number {i}." for i in range(n)]})


def run_against(srv, tmp_path: Path, n: int, concurrency: int, **kw):
    """rate() against ``srv``: the run, the cache's rows, and the keys asked."""
    be = OpenAIBackend("m", base_url=srv.base_url, api_key_env=None, concurrency=concurrency,
                       backoff_base=0.001, timeout=kw.pop("timeout", 10.0), max_retries=3,
                       random_state=0, **kw)
    cache = AnswerCache(tmp_path / "c.sqlite")
    try:
        run = rate(stories(n), be, eval_prompts="1", criteria="RE", tries=2, cache=cache,
                   show_progress=False)
        rows = cache.to_frame().set_index("key")
    finally:
        cache.close()
    return run, rows, run.ratings["key"].tolist()


def assert_each_answered_once(srv: KeepAliveServer, run, rows, keys: list[str]) -> None:
    """Every request stored once, under its own key, from its first attempt, and the server
    sent exactly one response per key (no answer lost, none paid twice)."""
    assert run.n_request_failures == 0
    assert sorted(rows.index) == sorted(keys) and len(set(keys)) == len(keys)
    wrong = [k for k in keys if f"scripted answer for {k[:10]}" not in rows.loc[k, "raw"]]
    assert wrong == []
    assert set(rows["attempts"]) == {1}  # a resend after a close is not a failed attempt
    assert dict(srv.answered) == dict.fromkeys(keys, 1)
    # stored with the digest of the messages that were sent for it
    assert {k: rows.loc[k, "messages_sha"] for k in keys} == srv.sha


# -- the reuse path has no rest ---------------------------------------------------------------

class _NoRest:
    """Replacements of ``asyncio.sleep`` and ``time.sleep`` that record every wait longer than
    zero asked for by storyeval's code (the servers' threads may wait as they like)."""

    def __init__(self, monkeypatch) -> None:
        self.calls: list[tuple[str, float]] = []
        real_async, real_time = asyncio.sleep, time.sleep

        def async_sleep(delay, *a, **k):
            self._note(sys._getframe(1), delay)
            return real_async(delay, *a, **k)

        def time_sleep(delay):
            self._note(sys._getframe(1), delay)
            return real_time(delay)

        monkeypatch.setattr(asyncio, "sleep", async_sleep)
        monkeypatch.setattr(time, "sleep", time_sleep)

    def _note(self, frame, delay) -> None:
        where = frame.f_code.co_filename
        # the figure workers' watchdog thread (storyeval.report._lifeline) polls on its own
        # clock; it is not a wait of the client
        if threading.current_thread().name == "storyeval-lifeline":
            return
        if delay and "storyeval" in Path(where).parts:
            self.calls.append((f"{where}:{frame.f_lineno}", delay))


def test_no_wait_on_the_reuse_path_of_a_clean_server(tmp_path, monkeypatch):
    """rate() against a server that echoes the nonce: connections are reused and no code of
    storyeval waits (no rest before a reuse, no backoff)."""
    rests = _NoRest(monkeypatch)
    with StubServer(Script(echo_request_id=True)) as srv:
        be = OpenAIBackend("m", base_url=srv.base_url, api_key_env=None, concurrency=4,
                           random_state=0)
        run = rate(stories(40), be, eval_prompts="1", criteria="RE", tries=2, cache=None,
                   show_progress=False)
        assert run.n_request_failures == 0 and run.n_sent == 80
        # the first wave has connections of their own (until the echo is seen), then 4 are
        # kept alive and reused for the other 76 requests
        assert srv.state.connections <= 8
    assert rests.calls == []


def test_the_pool_reuses_one_connection_with_no_wait(monkeypatch):
    """50 requests one after the other through the pool: one connection, and neither sleep is
    called (the check before reuse is a poll with no timeout)."""
    rests = _NoRest(monkeypatch)
    polls: list[float] = []
    real_poll = select.poll

    class CountingPoll:
        def __init__(self) -> None:
            self._p = real_poll()

        def register(self, *a):
            return self._p.register(*a)

        def poll(self, timeout=None):
            polls.append(timeout)
            return self._p.poll(timeout)

    monkeypatch.setattr(select, "poll", CountingPoll)
    with KeepAliveServer() as srv:
        async def go() -> list[str]:
            pool = _ConnectionPool(2, 5.0, 5.0, {"Content-Type": "application/json"})
            out = []
            try:
                for i in range(50):
                    reply = await pool.post(srv.base_url + "/chat/completions", b'{"x": 1}',
                                            {"X-Storyeval-Cache-Key": f"k{i:03d}",
                                             "X-Request-Id": f"n{i:021d}"})
                    out.append(json.loads(reply.body)["choices"][0]["message"]["content"])
            finally:
                await pool.aclose()
            return out

        texts = asyncio.run(go())
    assert [t.endswith(f"for k{i:03d}.") for i, t in enumerate(texts)] == [True] * 50
    assert srv.connections == 1 and srv.reused == 49
    assert rests.calls == []
    assert polls and set(polls) == {0}  # readability checked without waiting


# -- servers that close kept-alive connections ------------------------------------------------

def test_a_connection_closed_while_idle_is_not_reused():
    """The server closes a kept-alive connection after 50 ms idle; the next request, 500 ms
    later, goes on a new connection (found closed before it was written on the old one)."""
    with KeepAliveServer(idle=0.05) as srv:
        exchanges = []

        async def go() -> list[str]:
            pool = _ConnectionPool(2, 5.0, 5.0, {"Content-Type": "application/json"})
            real = pool._exchange

            def counted(*a):
                exchanges.append(1)
                return real(*a)

            pool._exchange = counted  # type: ignore[method-assign]
            texts = []
            try:
                for i in range(3):
                    reply = await pool.post(srv.base_url + "/chat/completions", b'{"x": 1}',
                                            {"X-Storyeval-Cache-Key": f"key{i}",
                                             "X-Request-Id": f"n{i:021d}"})
                    texts.append(json.loads(reply.body)["choices"][0]["message"]["content"])
                    await asyncio.sleep(0.5)  # the test's pause: the server closes meanwhile
            finally:
                await pool.aclose()
            return texts

        texts = asyncio.run(go())
    assert [t.endswith(f"for key{i}.") for i, t in enumerate(texts)] == [True] * 3
    assert srv.connections == 3 and srv.idle_closes >= 2
    assert dict(srv.received) == {"key0": 1, "key1": 1, "key2": 1}
    assert len(exchanges) == 3  # none written to the closed connection first


@pytest.mark.parametrize("concurrency", [2, 8])
def test_a_server_closing_idle_connections_at_random_loses_and_repeats_nothing(tmp_path,
                                                                              concurrency):
    """Keep-alive timeouts of 0-3 ms, so that connections close while idle in the pool, as the
    next request is written, or not at all: every answer stored once under its own key, and
    the server answered each key once."""
    draw = random.Random(0)
    lock = threading.Lock()

    def idle() -> float:
        with lock:  # a quarter close at once (idle in the pool, or crossing the next request)
            return 0.0 if draw.random() < 0.25 else draw.uniform(0.0, 0.003)

    with KeepAliveServer(idle=idle) as srv:
        run, rows, keys = run_against(srv, tmp_path, 60, concurrency)
    assert_each_answered_once(srv, run, rows, keys)
    assert srv.idle_closes >= 1 and srv.connections > concurrency


def test_a_server_that_half_closes_after_each_response(tmp_path):
    """A FIN after every response: no connection is reused for an answer (a request written on
    a half-closed one, if the FIN came late, is sent again on a new connection); every answer
    stored once, each key answered once."""
    with KeepAliveServer(half_close=True) as srv:
        run, rows, keys = run_against(srv, tmp_path, 30, 4)
    assert_each_answered_once(srv, run, rows, keys)
    # each answer came on a connection of its own; a request written on a half-closed one
    # (its FIN still on the way) was read by the server and sent again on a new connection
    assert srv.connections == len(keys)
    assert sum(srv.received.values()) == len(keys) + srv.unanswerable
    # the FIN is mostly seen before a reuse (a loaded machine may delay it now and then)
    assert srv.unanswerable <= len(keys) // 4


def test_a_slow_server_keeps_its_connections_and_is_asked_once(tmp_path):
    """Answers after 0.2 s: no timeout, no resend, connections kept alive and reused."""
    with KeepAliveServer(latency=0.2) as srv:
        run, rows, keys = run_against(srv, tmp_path, 12, 6, timeout=5.0)
    assert_each_answered_once(srv, run, rows, keys)
    assert dict(srv.received) == dict.fromkeys(keys, 1)
    assert srv.connections <= 12 and srv.reused >= 12  # 24 requests on at most 12 connections
