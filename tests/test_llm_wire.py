"""The HTTP/1.1 client against servers that break framing (issue 28): no answer is ever stored
under another request's key, whatever stray bytes or unasked-for responses a server or proxy
sends on a kept-alive connection. Offline, against tests/_openai_stub_server.py on 127.0.0.1.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer, make_certificate

from storyeval.llm import AnswerCache, OpenAIBackend, SamplingParams, rate

FAULTS = ("garbage", "garbage-later", "double", "double-split", "early")


def stories(n: int) -> pd.DataFrame:
    return pd.DataFrame({"story_id": [f"S{i}" for i in range(n)], "system": ["A", "B"] * (n // 2),
                         "prompt_id": range(n), "prompt": [f"Prompt {i}." for i in range(n)],
                         "story": [f"Story number {i}." for i in range(n)]})


def wrong_keys(cache: AnswerCache, keys: list[str]) -> list[str]:
    """Stored answers whose text was written for another key (the stub names the key)."""
    rows = cache.get_many(keys)
    return [k for k, r in rows.items() if f"scripted answer for {k[:10]}" not in r["raw"]]


#: faults after which the first response read is still shown to be the answer without an echo
#: (junk is no response; an early response is the only one)
ALONE_OK = ("garbage", "garbage-later", "early")


@pytest.mark.parametrize("echo", [True, False], ids=["echo", "no-echo"])
@pytest.mark.parametrize("concurrency", [3, 12])
@pytest.mark.parametrize("fault", FAULTS)
def test_no_answer_under_the_wrong_key(tmp_path, fault, concurrency, echo, caplog):
    with StubServer(Script(wire_fault=fault, echo_request_id=echo)) as srv:
        be = OpenAIBackend("stub", base_url=srv.base_url, api_key_env=None,
                           concurrency=concurrency, backoff_base=0.001, timeout=5.0,
                           max_retries=2 if fault.startswith("double") and not echo else 8,
                           random_state=0)
        cache = AnswerCache(tmp_path / "c.sqlite")
        n = 16 if concurrency == 3 else 48
        run = rate(stories(n), be, eval_prompts="1", criteria="RE", tries=2,
                   sampling=SamplingParams(), cache=cache)
        keys = run.ratings["key"].tolist()
        assert wrong_keys(cache, keys) == []
        if echo or fault in ALONE_OK:
            assert run.n_request_failures == 0
            assert len(cache.get_many(keys)) == len(keys) == 2 * n
        else:
            # every answer is followed by a second response on its connection and nothing
            # shows which one is the request's: none is stored, each failure says why
            assert len(cache) == 0 and run.n_request_failures == 2 * n
            assert run.ratings["error"].str.contains("another response came with").all()
        # the server's framing faults were noticed (an early answer, before the request body
        # was read, is still one answer per request)
        assert ("that connection is closed" in caplog.text) == (fault != "early")
        # a second pass on the same server: everything from the cache, still right
        again = rate(stories(n), be, eval_prompts="1", criteria="RE", tries=2, cache=cache)
        assert again.n_sent == 2 * n - len(cache)
        if again.n_sent == 0:
            pd.testing.assert_frame_equal(again.ratings, run.ratings)
        cache.close()


def test_a_clean_server_keeps_its_connections(tmp_path, caplog):
    """A server that echoes the nonce (vLLM) keeps its connections; another one gets a
    connection per request."""
    with StubServer(Script(echo_request_id=True)) as srv:
        be = OpenAIBackend("stub", base_url=srv.base_url, api_key_env=None, concurrency=2,
                           random_state=0)
        run = rate(stories(20), be, eval_prompts="1", criteria="RE", tries=2, cache=None)
        assert run.n_request_failures == 0
        assert srv.state.connections <= 4  # 40 requests, kept-alive connections reused
    with StubServer(Script()) as srv:
        run = rate(stories(10), be.__class__("stub", base_url=srv.base_url, api_key_env=None,
                                             concurrency=2), eval_prompts="1", criteria="RE",
                   tries=1, cache=None)
        assert run.n_request_failures == 0 and srv.state.connections == 10
    assert "connection is closed" not in caplog.text


@pytest.mark.parametrize("fault", ["garbage", "double", "double-split"])
def test_no_answer_under_the_wrong_key_over_tls(tmp_path, fault):
    try:
        folder, ctx = make_certificate(tmp_path)
    except FileNotFoundError:
        pytest.skip("openssl is not installed")
    with StubServer(Script(wire_fault=fault, echo_request_id=True), ssl_context=ctx) as srv:
        be = OpenAIBackend("stub", base_url=srv.base_url, api_key_env=None, concurrency=6,
                           backoff_base=0.001, timeout=5.0, max_retries=8, random_state=0,
                           ca_bundle=folder / "cert.pem")
        cache = AnswerCache(tmp_path / "c.sqlite")
        run = rate(stories(24), be, eval_prompts="1", criteria="RE", tries=2, cache=cache)
        keys = run.ratings["key"].tolist()
        assert run.n_request_failures == 0 and len(cache.get_many(keys)) == 48
        assert wrong_keys(cache, keys) == []
        cache.close()
