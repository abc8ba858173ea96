"""The OpenAI-compatible backend and the runner against a real local HTTP server.

The server (tests/_openai_stub_server.py) speaks the chat-completions protocol on 127.0.0.1 and
is scripted to answer with 429s (Retry-After), 500s, malformed bodies and slow answers.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from datetime import UTC

from _openai_stub_server import Script, StubServer, default_answer

from storyeval.llm import (
    AnswerCache,
    BackendError,
    OpenAIBackend,
    SamplingParams,
    parse_rating,
    plan,
    rate,
)
from storyeval.llm.prompts import load_criteria, load_templates, render_messages

CANARY = "sk-canary-7f3a9c-DO-NOT-LEAK"


def make_stories(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame({
        "story_id": [f"Sys{i % 2}/{i}" for i in range(n)],
        "system": [f"Sys{i % 2}" for i in range(n)],
        "prompt_id": list(range(n)),
        "prompt": [f"Write about door number {i}." for i in range(n)],
        "story": [f"Story {i}: a door opened and {'nothing ' * (i + 1)}happened." for i in range(n)],
        "reference": [f"Human story {i}." for i in range(n)],
    })


def backend(srv, **kw):
    opts = {"base_url": srv.base_url, "api_key_env": None, "concurrency": 4, "backoff_base": 0.01,
                "timeout": 5.0, "random_state": 0}
    opts.update(kw)
    return OpenAIBackend("stub-model", **opts)


def expected_rating(key: str) -> float:
    return parse_rating(default_answer({}, key)).rating


def test_end_to_end_and_resume(tmp_path):
    st = make_stories(3)
    cache = tmp_path / "c.sqlite"
    sp = SamplingParams(temperature=0.5, top_p=0.9, max_tokens=40, seed=11)
    with StubServer(Script()) as srv:
        run = rate(st, backend(srv), eval_prompts="1-4", criteria="RE,SU", tries=2,
                   sampling=sp, cache=cache)
        r = run.ratings
        assert len(r) == 3 * 4 * 2 * 2 and run.n_sent == 48 and run.n_request_failures == 0
        assert (r["status"] == "ok").all()
        np.testing.assert_array_equal(r["rating"], [expected_rating(k) for k in r["key"]])
        assert r["explanation"].str.startswith("The story is rated").all()
        # every request went once, with the recorded sampling parameters and per-try seeds
        assert set(srv.state.received.values()) == {1} and len(srv.state.received) == 48
        payloads = srv.state.payloads
        assert {p["seed"] for p in payloads} == {11, 12}
        assert {(p["temperature"], p["top_p"], p["max_tokens"], p["model"]) for p in payloads} \
            == {(0.5, 0.9, 40, "stub-model")}
        tpl = load_templates()
        want = render_messages(prompt=st["prompt"][1], story=st["story"][1],
                               criterion=load_criteria()["Surprise"], eval_prompt=4,
                               templates=tpl, reference=st["reference"][1])
        assert want in [p["messages"] for p in payloads]
        assert run.plan.n_to_send == 48 and run.plan.est_prompt_tokens > 0
        # resume: nothing is sent again
        run2 = rate(st, backend(srv), eval_prompts="1-4", criteria="RE,SU", tries=2,
                    sampling=sp, cache=cache)
        assert run2.n_sent == 0 and sum(srv.state.received.values()) == 48
        pd.testing.assert_frame_equal(run2.ratings, r)
        # a new try or a new sampling setting is a new request
        run3 = rate(st, backend(srv), eval_prompts="1", criteria="RE", tries=3, sampling=sp,
                    cache=cache)
        assert run3.n_sent == 3
        assert plan(st, backend(srv), eval_prompts="1-4", criteria="RE,SU", tries=2, sampling=sp,
                    cache=cache).n_to_send == 0


def test_rate_limit_retry_after_is_honoured(tmp_path):
    with StubServer(Script(rate_limit_first=2, retry_after="0.3")) as srv:
        t0 = time.perf_counter()
        run = rate(make_stories(1), backend(srv), eval_prompts="1", criteria="RE", tries=1,
                   cache=tmp_path / "c.sqlite")
        elapsed = time.perf_counter() - t0
    assert run.ratings["status"].tolist() == ["ok"]
    assert elapsed >= 0.6  # two waits of Retry-After 0.3 s (backoff_base would give < 0.03 s)
    row = AnswerCache(tmp_path / "c.sqlite").to_frame().iloc[0]
    assert row["attempts"] == 3


def test_500_malformed_and_slow_answers_are_retried(tmp_path):
    script = Script(error_500_first=1, malformed_first=3, slow_first=1, slow_latency=1.5)
    with StubServer(script) as srv:
        run = rate(make_stories(2), backend(srv, timeout=0.4, max_retries=6), eval_prompts="1",
                   criteria="RE,CH", tries=1, cache=tmp_path / "c.sqlite")
        assert (run.ratings["status"] == "ok").all()
        # 1 x 500, 3 malformed bodies, 1 timeout, then the answer
        assert set(srv.state.received.values()) == {6}
        assert set(srv.state.answered.values()) <= {1, 2}  # the timed-out answer may complete
    frame = AnswerCache(tmp_path / "c.sqlite").to_frame()
    assert set(frame["attempts"]) == {6}


def test_exhausted_retries_are_failures_not_ratings(tmp_path, caplog):
    cache = tmp_path / "c.sqlite"
    with StubServer(Script(status_override=503)) as srv:
        with caplog.at_level(logging.INFO, logger="storyeval.llm"):
            run = rate(make_stories(1), backend(srv, max_retries=2), eval_prompts="1",
                       criteria="RE,CH", tries=1, cache=cache)
        assert run.n_request_failures == 2 and set(srv.state.received.values()) == {3}
    r = run.ratings
    assert r["status"].tolist() == ["error", "error"] and r["rating"].isna().all()
    assert r["error"].str.contains("HTTP 503").all()
    assert run.failure_rates()["n_error"].tolist() == [1, 1]
    assert "retrying" in caplog.text
    # failures are not cached: a later run sends them again
    with StubServer(Script()) as srv:
        run = rate(make_stories(1), backend(srv), eval_prompts="1", criteria="RE,CH", tries=1,
                   cache=cache)
        assert run.n_sent == 2 and (run.ratings["status"] == "ok").all()


def test_client_errors_are_not_retried_and_auth_errors_stop(tmp_path):
    # 400 on every request (issue 37): the first 8 requests all refused and none answered: the
    # server refuses the requests themselves; stop, each request sent once
    with StubServer(Script(status_override=400)) as srv, \
            pytest.raises(BackendError, match="refused each of the first 8.*HTTP 400.*no retry"):
        rate(make_stories(12), backend(srv), eval_prompts="1", criteria="RE", tries=1)
    assert set(srv.state.received.values()) == {1} and len(srv.state.received) <= 12
    # another 4xx fails that request only, without retries
    with StubServer(Script(status_override=422)) as srv:
        run = rate(make_stories(1), backend(srv), eval_prompts="1", criteria="RE", tries=1)
        assert run.ratings["status"].tolist() == ["error"]
        assert set(srv.state.received.values()) == {1}
    with StubServer(Script(status_override=404)) as srv, \
            pytest.raises(BackendError, match="404"):
        rate(make_stories(2), backend(srv), eval_prompts="1", criteria="RE", tries=1)


def test_canary_key_never_leaks(tmp_path, monkeypatch, caplog):
    """The key is sent to the server, and appears nowhere else, even if the server echoes it."""
    monkeypatch.setenv("STORYEVAL_TEST_KEY", CANARY)
    cache = tmp_path / "c.sqlite"
    texts = []
    with caplog.at_level(logging.DEBUG):
        with StubServer(Script(require_key=CANARY, echo_auth=True, error_500_first=1)) as srv:
            run = rate(make_stories(2), backend(srv, api_key_env="STORYEVAL_TEST_KEY"),
                       eval_prompts="1,2", criteria="RE", tries=2, cache=cache)
            assert set(srv.state.auth_headers) == {f"Bearer {CANARY}"}
            assert (run.ratings["status"] == "ok").all()
            texts.append(run.ratings.to_csv())
            texts.append(repr(run.settings))
        # a wrong key: 401 whose body echoes the key
        with StubServer(Script(require_key="another-key", echo_auth=True)) as srv:
            with pytest.raises(BackendError) as err:
                rate(make_stories(1), backend(srv, api_key_env="STORYEVAL_TEST_KEY"),
                     eval_prompts="1", criteria="CH", tries=1, cache=cache)
            texts.append(str(err.value))
            assert "401" in str(err.value)  # the echo is past the 300 characters kept
        # 500s echoing the key until retries run out: the error column
        with StubServer(Script(status_override=500, echo_auth=True)) as srv:
            run = rate(make_stories(1), backend(srv, api_key_env="STORYEVAL_TEST_KEY",
                                                max_retries=1),
                       eval_prompts="1", criteria="EG", tries=1, cache=cache)
            assert run.ratings["status"].tolist() == ["error"]
            texts.append(run.ratings.to_csv())
    texts.append(caplog.text)
    for f in tmp_path.iterdir():  # database, WAL and shared-memory files
        texts.append(f.read_bytes().decode("latin-1"))
    assert any("you sent" in t for t in texts)  # the echo happened and was redacted
    for t in texts:
        assert CANARY not in t


SIGKILL_DRIVER = r"""
import sys
from storyeval.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _stored(db: Path) -> dict[str, str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return dict(con.execute("SELECT key, raw FROM answers").fetchall())
    except sqlite3.OperationalError:  # table not created yet
        return {}
    finally:
        con.close()


def test_sigkill_mid_run_loses_nothing_and_repeats_nothing(tmp_path):
    stories = make_stories(10)
    src = tmp_path / "stories.csv"
    stories.to_csv(src, index=False)
    db = tmp_path / "cache.sqlite"
    n_total = 10 * 6 * 3
    with StubServer(Script(latency=0.05)) as srv:
        cmd = [sys.executable, "-c", SIGKILL_DRIVER, "rate", "--backend", "openai",
               "--base-url", srv.base_url, "--model", "stub-model", "--stories", str(src),
               "--eval-prompts", "1", "--criteria", "all", "--tries", "3", "--cache", str(db),
               "--concurrency", "4", "--no-progress", "--api-key-env", "STORYEVAL_TEST_KEY"]
        env = {**os.environ, "STORYEVAL_TEST_KEY": CANARY}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if db.exists() and len(_stored(db)) >= 40:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        time.sleep(0.2)  # let requests in flight at the kill reach the server
        before = _stored(db)
        received_before = dict(srv.state.received)
        assert 40 <= len(before) < n_total, "the kill must happen mid-run"

        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert res.returncode == 0, res.stderr
        after = _stored(db)
    assert len(after) == n_total
    # no completed answer lost or changed
    assert all(after[k] == v for k, v in before.items())
    # no request whose answer was stored was sent again
    assert all(srv.state.received[k] == received_before[k] == 1 for k in before)
    # only requests in flight at the kill (at most --concurrency) or whose answer was awaiting
    # the stray-byte check of its kept-alive connection (at most --concurrency more, issue 37)
    # were sent twice
    assert sum(c > 1 for c in srv.state.received.values()) <= 2 * 4
    for text in (out.decode(), err.decode(), res.stdout, res.stderr,
                 db.read_bytes().decode("latin-1")):
        assert CANARY not in text


def test_retry_after_parsing_and_backoff():
    from datetime import datetime, timedelta
    from email.utils import format_datetime

    from storyeval.llm.backends import _retry_after_seconds

    assert _retry_after_seconds("2.5") == 2.5 and _retry_after_seconds("-3") == 0.0
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert 25 < _retry_after_seconds(when) <= 30
    assert _retry_after_seconds("soon") is None and _retry_after_seconds(None) is None
    b = OpenAIBackend("m", backoff_base=0.5, backoff_max=4.0, random_state=1)
    delays = [b._backoff(a, None) for a in (1, 2, 3, 4, 10)]
    assert all(0 <= d <= c for d, c in zip(delays, (0.5, 1.0, 2.0, 4.0, 4.0)))
    assert 3.0 <= b._backoff(1, 3.0) <= 3.3  # Retry-After plus at most 10% jitter
