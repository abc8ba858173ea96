"""Reliability of LLM rating runs (issue 16): no key leaks, atomic outputs, one payment per
answer under concurrent runs and SIGKILL, fault injection, clear errors, one HTTP client.
(The documented rate-then-meta flow is run in tests/test_cli_rate.py.)

Everything runs offline against the scripted OpenAI-compatible server on 127.0.0.1
(tests/_openai_stub_server.py); no test measures time.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import sqlite3
import ssl
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer, default_answer

from storyeval.cli import main
from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.llm import AnswerCache, OpenAIBackend, SamplingParams, parse_rating, rate
from storyeval.llm.backends import Answer, Backend

CANARY = "sk-canary-4e1d77b0c2-NEVER-STORE-ME"
STUB_ENV = "STORYEVAL_RELIABILITY_KEY"


def make_stories(n: int, *, with_reference: bool = True) -> pd.DataFrame:
    df = pd.DataFrame({
        "story_id": [f"Sys{i % 3}/{i}" for i in range(n)],
        "system": [f"Sys{i % 3}" for i in range(n)],
        "prompt_id": list(range(n)),
        "prompt": [f"Write about lighthouse {i}." for i in range(n)],
        "story": [f"Story {i}: the keeper {'waited ' * (i % 7 + 1)}for the ship." for i in range(n)],
    })
    if with_reference:
        df["reference"] = [f"Human story {i}." for i in range(n)]
    return df


def backend(srv, **kw) -> OpenAIBackend:
    opts = {"base_url": srv.base_url, "api_key_env": None, "concurrency": 4,
            "backoff_base": 0.01, "timeout": 5.0, "random_state": 0}
    opts.update(kw)
    return OpenAIBackend("stub-model", **opts)


def expected_rating(key: str) -> float:
    return parse_rating(default_answer({}, key)).rating


def stored(db: Path) -> dict[str, str]:
    """key -> raw of a cache, read-only (a killed writer may have left a WAL)."""
    if not db.exists():
        return {}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return dict(con.execute("SELECT key, raw FROM answers").fetchall())
    except sqlite3.OperationalError:  # schema not created yet
        return {}
    finally:
        con.close()


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "storyeval", *args]


def sub_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "STORYEVAL_NO_PROGRESS": "1", **extra}
    env.pop(STUB_ENV, None)
    env.update(extra)
    return env


def all_text(paths, *extra: str) -> list[tuple[str, str]]:
    out = [(f"extra[{i}]", t) for i, t in enumerate(extra)]
    for base in paths:
        for p in Path(base).rglob("*"):
            if p.is_file():
                out.append((str(p), p.read_bytes().decode("latin-1")))
    return out


def assert_no_fragment(texts, secret: str, width: int = 12) -> None:
    """Neither the secret nor any ``width``-character piece of it appears anywhere."""
    frags = {secret[i:i + width] for i in range(len(secret) - width + 1)}
    for name, text in texts:
        hits = [f for f in frags if f in text]
        assert not hits, f"{name} holds a piece of the key: {sorted(hits)[:3]}"


# ---------------------------------------------------------------------------------------------
# 1. API keys
# ---------------------------------------------------------------------------------------------

def test_api_key_env_given_a_key_is_refused_without_echoing_it(tmp_path, capsys):
    with pytest.raises(InputError) as err:
        OpenAIBackend("m", api_key_env=CANARY)
    msg = str(err.value)
    assert "looks like an API key" in msg and f"{len(CANARY)} characters" in msg
    assert "sk-" in msg and CANARY not in msg and CANARY[3:12] not in msg
    stories = tmp_path / "s.csv"
    make_stories(2).to_csv(stories, index=False)
    out = tmp_path / "run"
    with StubServer(Script()) as srv:
        code = main(["rate", "--base-url", srv.base_url, "--model", "m", "--stories", str(stories),
                     "--eval-prompts", "1", "--criteria", "RE", "--tries", "1", "--cache",
                     str(tmp_path / "c.sqlite"), "--out", str(out), "--no-progress",
                     "--api-key-env", CANARY])
        assert sum(srv.state.received.values()) == 0
    captured = capsys.readouterr()
    assert code == 2 and "looks like an API key" in captured.err
    assert_no_fragment(all_text([tmp_path], captured.out, captured.err), CANARY)
    assert not out.exists()


def test_variable_names_pass_and_keys_do_not():
    from storyeval.llm.backends import _Redactor, check_api_key_env

    for name in ("OPENAI_API_KEY", "MY_KEY", "openai_api_key", "hf_token", "VLLM_KEY_2"):
        assert check_api_key_env(name) == name
    for key in (CANARY, "hf_" + "aB3dE5" * 6, "AIzaSyD" + "x1" * 16, "3f9c2a7b" * 5,
                "abcdef0123456789abcdef0123"):
        with pytest.raises(InputError, match="looks like an API key") as err:
            check_api_key_env(key)
        assert key[3:] not in str(err.value)
    redact = _Redactor(CANARY)
    prose = "A basic structure; the bearer of bad news. Rating: 4"
    assert redact(prose) == prose
    assert redact(f"key {CANARY[:20]}... and ...{CANARY[-16:]}") == "key ***... and ...***"
    assert redact.clip("x" * 290 + CANARY, 300) == "x" * 290 + "***"
    assert redact("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload") == \
        "Authorization: Bearer ***"


def test_unset_key_variable_is_an_error_unless_declared_keyless(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("STORYEVAL_UNSET_VAR", raising=False)
    st = make_stories(1)
    # a remote server: refused before any request (no server needed)
    remote = OpenAIBackend("m", base_url="http://api.example.invalid/v1",
                           api_key_env="STORYEVAL_UNSET_VAR", max_retries=0)
    with pytest.raises(InputError, match="STORYEVAL_UNSET_VAR.*not set.*--no-api-key"):
        rate(st, remote, eval_prompts="1", criteria="RE", tries=1)
    with StubServer(Script()) as srv:
        # the local server: no key sent, and a warning says so
        with caplog.at_level(logging.WARNING, logger="storyeval.llm"):
            run = rate(st, backend(srv, api_key_env="STORYEVAL_UNSET_VAR"), eval_prompts="1",
                       criteria="RE", tries=1)
        assert run.ratings["status"].tolist() == ["ok"]
        assert "STORYEVAL_UNSET_VAR is not set" in caplog.text
        caplog.clear()
        # declared keyless: no warning, no header
        with caplog.at_level(logging.WARNING, logger="storyeval.llm"):
            rate(st, backend(srv), eval_prompts="1", criteria="CH", tries=1)
        assert caplog.text == ""
        assert set(srv.state.auth_headers) == {""}
    # the command line: --no-api-key, and the unset variable for a remote server is exit 2
    stories = tmp_path / "s.csv"
    st.to_csv(stories, index=False)
    args = ["rate", "--model", "m", "--stories", str(stories), "--eval-prompts", "1",
            "--criteria", "RE", "--tries", "1", "--cache", str(tmp_path / "c.sqlite"),
            "--no-progress"]
    assert main([*args, "--base-url", "http://api.example.invalid/v1", "--api-key-env",
                 "STORYEVAL_UNSET_VAR"]) == 2
    with StubServer(Script()) as srv:
        assert main([*args, "--base-url", srv.base_url, "--no-api-key"]) == 0


def test_usage_and_finish_reason_are_typed(tmp_path):
    usage = {"prompt_tokens": "12", "completion_tokens": "many", "total_tokens": 3.5}
    cache = tmp_path / "c.sqlite"
    with StubServer(Script(usage=usage, finish_reason={"type": "stop"})) as srv:
        rate(make_stories(1), backend(srv), eval_prompts="1", criteria="RE", tries=1, cache=cache)
    with StubServer(Script(usage={"prompt_tokens": 7.0, "completion_tokens": True},
                           finish_reason="length")) as srv:
        rate(make_stories(1), backend(srv), eval_prompts="1", criteria="CH", tries=1, cache=cache)
    con = sqlite3.connect(cache)
    rows = con.execute("SELECT typeof(prompt_tokens), prompt_tokens, typeof(completion_tokens), "
                       "typeof(finish_reason), finish_reason FROM answers ORDER BY created").fetchall()
    con.close()
    assert rows[0] == ("integer", 12, "null", "null", None)
    assert rows[1] == ("integer", 7, "null", "text", "length")


def test_canary_key_echoed_everywhere_reaches_no_file_or_message(tmp_path, monkeypatch,
                                                                 capsys):
    """A server (or proxy) that sends the Authorization header back in answers, finish_reason,
    usage, error bodies (past 300 characters) and malformed bodies (past 80): the key is
    nowhere in the cache, the outputs, the -v log or the messages."""
    stories = tmp_path / "s.csv"
    make_stories(3).to_csv(stories, index=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv(STUB_ENV, CANARY)
    base = ["rate", "--model", "stub", "--stories", str(stories), "--cache",
            str(work / "cache.sqlite"), "--api-key-env", STUB_ENV, "--no-progress", "-v",
            "--max-retries", "2", "--tries", "1"]
    scripts = [  # (script, extra args)
        (Script(require_key=CANARY, echo_auth=True, error_500_first=1, malformed_first=1),
         ["--eval-prompts", "1,2", "--criteria", "RE,CH", "--out", str(work / "ok")]),
        (Script(echo_auth=True, malformed_first=5),
         ["--eval-prompts", "3", "--criteria", "RE", "--out", str(work / "malformed")]),
        (Script(echo_auth=True, status_override=500),
         ["--eval-prompts", "3", "--criteria", "CH", "--out", str(work / "e500")]),
        (Script(echo_auth=True, status_override=400),
         ["--eval-prompts", "3", "--criteria", "EG", "--out", str(work / "e400")]),
        (Script(echo_auth=True, require_key="another-key"),
         ["--eval-prompts", "3", "--criteria", "SU", "--out", str(work / "e401")]),
    ]
    codes, texts = [], []
    for script, extra in scripts:
        with StubServer(script) as srv:
            codes.append(main([*base, "--base-url", srv.base_url, *extra]))
            assert set(srv.state.auth_headers) == {f"Bearer {CANARY}"}
        captured = capsys.readouterr()
        texts += [("stdout", captured.out), ("stderr", captured.err)]
    assert codes == [0, 1, 1, 1, 1], texts
    joined = "\n".join(t for _, t in texts)
    assert "retrying" in joined and "401" in joined  # the -v log and the error were written
    ratings = pd.read_csv(work / "ok" / "ratings.csv")
    assert (ratings["status"] == "ok").all()
    assert ratings["explanation"].str.contains("you sent").all()  # echoed, then redacted
    assert (pd.read_csv(work / "e500" / "ratings.csv")["error"].str.contains("HTTP 500")).all()
    assert (pd.read_csv(work / "malformed" / "ratings.csv")["error"]
            .str.contains("malformed answer")).all()
    assert_no_fragment(all_text([tmp_path]) + texts, CANARY)


# ---------------------------------------------------------------------------------------------
# 3. rate --out: previous runs, atomic files
# ---------------------------------------------------------------------------------------------

OUTPUTS = ("ratings.csv", "scores.csv", "failures.csv", "failed_requests.csv", "cost.csv",
           "judge_systems.csv",
           "consistency.csv", "settings.json")


def test_out_refuses_an_earlier_run_then_replaces_it_with_overwrite(tmp_path, capsys):
    stories = tmp_path / "s.csv"
    make_stories(4).to_csv(stories, index=False)
    out = tmp_path / "run"
    with StubServer(Script()) as srv:
        args = ["rate", "--base-url", srv.base_url, "--model", "stub", "--stories", str(stories),
                "--cache", str(tmp_path / "c.sqlite"), "--no-progress", "--no-api-key",
                "--eval-prompts", "1", "--criteria", "RE", "--out", str(out)]
        assert main([*args, "--tries", "2"]) == 0
        assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) \
            == sorted(OUTPUTS)
        before = {n: (out / n).read_bytes() for n in OUTPUTS}
        (out / "notes.txt").write_text("mine")
        capsys.readouterr()
        n_before = sum(srv.state.received.values())
        # a new run into the same folder is refused before anything is sent
        assert main([*args, "--tries", "1"]) == 2
        err = capsys.readouterr().err
        assert "--overwrite" in err and "not empty" in err
        assert sum(srv.state.received.values()) == n_before
        assert {n: (out / n).read_bytes() for n in OUTPUTS} == before
        # --overwrite replaces the outputs; consistency.csv (not written with 1 try) is removed
        assert main([*args, "--tries", "1", "--overwrite"]) == 0
    names = sorted(p.name for p in out.iterdir() if not p.name.startswith(".storyeval"))
    assert names == sorted(set(OUTPUTS) - {"consistency.csv"} | {"notes.txt"})
    settings = json.loads((out / "settings.json").read_text())
    files = settings["files"]
    assert set(files) == set(OUTPUTS) - {"consistency.csv", "settings.json"}
    assert files["ratings.csv"]["rows"] == len(pd.read_csv(out / "ratings.csv")) == 4
    import hashlib

    assert files["scores.csv"]["sha256"] == hashlib.sha256(
        (out / "scores.csv").read_bytes()).hexdigest()


class InstantBackend(Backend):
    """Answers at once without HTTP, with the keys of ``--backend openai --model stub``."""

    kind = "openai"

    def run(self, requests, on_answer, on_failure, *, show_progress=None):
        for r in requests:
            on_answer(r, Answer(text=default_answer({}, r.key), finish_reason="stop"))


def test_kill_while_writing_outputs_leaves_whole_files(tmp_path):
    """SIGKILL while `rate --out` replaces an earlier run's files: every file left is whole,
    either the earlier run's or the new run's; settings.json is only there with a complete
    set; the next run cleans up."""
    import shutil

    st = make_stories(80)
    stories = tmp_path / "s.csv"
    st.to_csv(stories, index=False)
    cache = tmp_path / "c.sqlite"
    rate(st, InstantBackend("stub"), eval_prompts="1-4", criteria="all", tries=3,
         sampling=SamplingParams(), cache=cache, show_progress=False)
    common = ["rate", "--model", "stub", "--stories", str(stories), "--cache", str(cache),
              "--cache-only", "--no-progress", "--tries", "3"]
    old_args = [*common, "--model-name", "Old"]  # every file names the model
    new_args = [*common, "--model-name", "New", "--parser", "first_number"]
    ref_old, ref_new = tmp_path / "ref_old", tmp_path / "ref_new"
    assert main([*old_args, "--out", str(ref_old)]) == 0
    assert main([*new_args, "--out", str(ref_new)]) == 0
    versions = {n: {(ref_old / n).read_bytes(), (ref_new / n).read_bytes()}
                for n in OUTPUTS if n != "settings.json"}
    # (no request failed in either run: their failed_requests.csv are the same empty table)
    assert all(len(v) == 2 for n, v in versions.items() if n != "failed_requests.csv")
    hit_mid_write = 0
    # kill points: while the new files are staged; as the files are moved into place (the old
    # settings.json is removed just before), at once and a few milliseconds later
    for i, (wait_for, delay) in enumerate((("staging", 0.02), ("commit", 0.0),
                                           ("commit", 0.004))):
        out = tmp_path / f"out{i}"
        shutil.copytree(ref_old, out)  # the earlier run, with its manifest
        proc = subprocess.Popen(cli(*new_args, "--out", str(out), "--overwrite"), env=sub_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if wait_for == "staging" and any(p.name.startswith(".storyeval-tmp-")
                                             for p in out.iterdir()):
                break
            if wait_for == "commit" and not (out / "settings.json").exists():
                break
            time.sleep(0.0002)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        left = {p.name for p in out.iterdir()}
        hit_mid_write += "settings.json" not in left
        for name in left:
            if name.startswith("."):  # the staging folder and the manifest
                continue
            assert name in OUTPUTS, name
            if name != "settings.json":
                assert (out / name).read_bytes() in versions[name], name
        if "settings.json" in left:  # a complete set, all from one run
            settings = json.loads((out / "settings.json").read_text())
            ref = ref_new if settings["settings"]["model_name"] == "New" else ref_old
            for name in settings["files"]:
                assert (out / name).read_bytes() == (ref / name).read_bytes(), name
    # the next run cleans up the leftovers of the killed one
    assert main([*new_args, "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) \
        == sorted(OUTPUTS)
    assert not list(out.glob(".storyeval-tmp-*"))
    print(f"{hit_mid_write} of 3 kills landed while the outputs were being replaced")


# ---------------------------------------------------------------------------------------------
# 4. Concurrent runs on one cache
# ---------------------------------------------------------------------------------------------

def test_two_concurrent_identical_runs_pay_once_and_match_the_cache(tmp_path):
    stories = tmp_path / "s.csv"
    make_stories(30).to_csv(stories, index=False)
    cache = tmp_path / "c.sqlite"
    n_items = 30 * 2 * 2
    with StubServer(Script(latency=0.02)) as srv:
        args = ["rate", "--base-url", srv.base_url, "--model", "stub", "--stories", str(stories),
                "--cache", str(cache), "--no-progress", "--no-api-key", "--eval-prompts", "1",
                "--criteria", "RE,CH", "--tries", "2", "--concurrency", "8"]
        procs = [subprocess.Popen(cli(*args, "--out", str(tmp_path / f"run{i}")), env=sub_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for i in range(2)]
        results = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], results
        paid = sum(srv.state.received.values())
    assert paid == n_items, f"{paid} requests paid for {n_items} answers"
    assert main(["rate", "--model", "stub", "--stories", str(stories), "--cache", str(cache),
                 "--cache-only", "--no-progress", "--eval-prompts", "1", "--criteria", "RE,CH",
                 "--tries", "2", "--out", str(tmp_path / "replay")]) == 0
    keep = stored(cache)
    replay = pd.read_csv(tmp_path / "replay" / "ratings.csv")
    assert len(replay) == n_items and (replay["status"] == "ok").all()
    assert replay["rating"].tolist() == [parse_rating(keep[k]).rating for k in replay["key"]]
    for i in range(2):
        for name in ("ratings.csv", "scores.csv"):
            assert (tmp_path / f"run{i}" / name).read_bytes() == \
                (tmp_path / "replay" / name).read_bytes(), (i, name)


def test_stored_answer_wins_over_a_later_answer_for_the_same_key(tmp_path):
    """Another process stored an answer for a key while this run was asking for it: the
    stored one is kept and is the one in this run's output."""
    cache = tmp_path / "c.sqlite"

    class Racing(Backend):
        kind = "openai"

        def run(self, requests, on_answer, on_failure, *, show_progress=None):
            other = AnswerCache(cache)
            for r in requests:  # the other process is faster
                other.put(key=r.key, backend="openai", model="stub", messages_sha="x",
                          sampling={}, try_index=r.try_index, seed=r.seed, raw="2 - theirs")
            other.close()
            for r in requests:
                on_answer(r, Answer(text="5 - mine"))

    run = rate(make_stories(2), Racing("stub"), eval_prompts="1", criteria="RE", tries=2,
               cache=cache)
    assert run.ratings["rating"].tolist() == [2.0] * 4
    assert set(stored(cache).values()) == {"2 - theirs"}


# ---------------------------------------------------------------------------------------------
# 6. Clear errors and honest numbers
# ---------------------------------------------------------------------------------------------

def test_zero_byte_cache_is_an_error_not_a_new_cache(tmp_path):
    empty = tmp_path / "c.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty.*0 bytes"):
        AnswerCache(empty)
    assert empty.stat().st_size == 0
    # a new cache is created whole: there is never a 0-byte cache file
    fresh = tmp_path / "new" / "c.sqlite"
    AnswerCache(fresh).close()
    assert fresh.stat().st_size > 0
    AnswerCache(fresh).close()


def test_empty_answers_are_not_cached_and_are_asked_again(tmp_path):
    cache = tmp_path / "c.sqlite"
    st = make_stories(2)
    with StubServer(Script(empty_first=1)) as srv:
        run = rate(st, backend(srv), eval_prompts="1", criteria="RE", tries=1, cache=cache)
        assert run.ratings["status"].tolist() == ["error", "error"]
        assert run.ratings["error"].str.contains("empty answer").all()
        assert run.n_request_failures == 2 and stored(cache) == {}
        run = rate(st, backend(srv), eval_prompts="1", criteria="RE", tries=1, cache=cache)
        assert run.n_sent == 2 and (run.ratings["status"] == "ok").all()
    # an empty answer stored by an older storyeval is asked again and replaced
    k = run.ratings["key"][0]
    con = sqlite3.connect(cache)
    con.execute("UPDATE answers SET raw = '  ', status = 'no_number', rating = NULL WHERE key = ?",
                (k,))
    con.commit()
    con.close()
    with StubServer(Script()) as srv:
        run = rate(st, backend(srv), eval_prompts="1", criteria="RE", tries=1, cache=cache)
        assert run.n_sent == 1 and (run.ratings["status"] == "ok").all()
    assert stored(cache)[k] == default_answer({}, k)


def _tries_table(y: np.ndarray) -> pd.DataFrame:
    n, k = y.shape
    return pd.DataFrame({
        "story_id": np.repeat([f"S/{i}" for i in range(n)], k), "system": "S",
        "prompt_id": np.repeat(np.arange(n), k), "model": "M", "eval_prompt": 1,
        "criterion": "Relevance", "code": "RE", "try": np.tile(np.arange(k), n),
        "rating": y.ravel().astype(float), "status": "ok"})


def test_consistency_icc_with_a_negative_denominator_is_nan_with_a_reason():
    from storyeval.agreement.icc import icc2k_many
    from storyeval.llm.outputs import self_consistency

    # MSE > n * MSR + MSC: tries disagree far more than stories differ (ICC(2,k) was 17)
    y = np.array([[1, 5, 3], [2, 4, 3], [2, 2, 4], [3, 3, 2], [4, 2, 2]], dtype=float)
    with pytest.warns(UndefinedStatisticWarning, match="negative denominator"):
        res = self_consistency(_tries_table(y)).iloc[0]
    assert np.isnan(res["icc2k"]) and np.isnan(res["ci_low"]) and np.isnan(res["ci_high"])
    assert "negative" in res["reason"]
    # small tables of 1-5 ratings: never an ICC(2,k) above 1, never an inverted interval
    # (ICC(2,k) = 5.25 and -39 with inverted intervals before the fix)
    rng = np.random.default_rng(3)
    for n, k in ((2, 3), (3, 3), (5, 3), (5, 2), (4, 5)):
        tables = rng.integers(1, 6, size=(3000, n, k)).astype(float)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = icc2k_many(tables)
        ok = out["icc2k"].notna()
        assert (out.loc[ok, "icc2k"] <= 1 + 1e-12).all()
        assert (out.loc[~ok, "reason"] != "").all()
        lo, hi = out["ci_low"], out["ci_high"]
        both = lo.notna() & hi.notna()
        assert (lo[both] <= hi[both] + 1e-9).all() and (hi[both] <= 1 + 1e-12).all()


# ---------------------------------------------------------------------------------------------
# 7. One HTTP client and one SSL context for all workers
# ---------------------------------------------------------------------------------------------

def test_one_client_one_ssl_context_and_at_most_concurrency_connections(monkeypatch):
    import httpx

    clients, contexts = [], []
    real_init = httpx.AsyncClient.__init__

    def counting_init(self, *a, **kw):
        clients.append(1)
        real_init(self, *a, **kw)

    real_load = ssl.SSLContext.load_verify_locations

    def counting_load(self, *a, **kw):
        contexts.append(1)
        return real_load(self, *a, **kw)

    monkeypatch.setattr(httpx.AsyncClient, "__init__", counting_init)
    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting_load)
    with StubServer(Script(latency=0.01, echo_request_id=True)) as srv:
        run = rate(make_stories(20), backend(srv, concurrency=32), eval_prompts="1",
                   criteria="RE,CH", tries=2)
        assert (run.ratings["status"] == "ok").all()
        # the first wave has connections of its own, until the server is seen to echo the
        # nonce; then kept-alive ones: never more than 32 open at once
        assert srv.state.max_open <= 32 and srv.state.connections <= 64
    assert len(clients) <= 1 and len(contexts) <= 1  # 32 and 32 before (one per worker)


class RawServer:
    """A TCP server on 127.0.0.1 that answers the n-th request with ``responses[n]`` (raw
    bytes, repeating the last), then closes the connection if ``close_after`` is set or the
    response is HTTP/1.0 or says ``Connection: close``."""

    def __init__(self, responses: list[bytes], *, close_after: bool = False,
                 drop_second: bool = False) -> None:
        import socket
        import threading

        self.responses, self.close_after, self.drop_second = responses, close_after, drop_second
        self.count = self.dropped = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        import threading

        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn) -> None:
        buf = b""
        served = 0
        with conn:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
                while len(buf) < length:
                    buf += conn.recv(65536)
                buf = buf[length:]
                if self.drop_second and served == 1:  # closed as a kept-alive request came
                    self.dropped += 1
                    return
                served += 1
                i, self.count = self.count, self.count + 1
                response = self.responses[min(i, len(self.responses) - 1)]
                nonce = re.search(rb"(?i)x-request-id: *(\S+)", head)
                if nonce:  # echoed in the id, as vLLM does (the placeholder has its length)
                    response = response.replace(NONCE, nonce.group(1))
                conn.sendall(response)
                if (self.close_after or response.startswith(b"HTTP/1.0")
                        or b"Connection: close" in response
                        or b"connection: close" in head.lower()):
                    return

    def close(self) -> None:
        self.sock.close()


#: stands for the request's nonce (X-Request-Id, 22 characters) in a RawServer response
NONCE = b"NONCE-PLACEHOLDER-0022"


def _completion(text: str, *, echo: bool = False) -> bytes:
    return json.dumps({"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 1},
                       **({"id": f"chatcmpl-{NONCE.decode()}"} if echo else {})}).encode()


def test_http_client_reads_every_framing_and_survives_closed_connections():
    import gzip

    body = _completion("4 - Good.")
    half = len(body) // 2
    responses = [
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
        % (len(body), body),
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"%x;ext=1\r\n%s\r\n%x\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n"
        % (half, body[:half], len(body) - half, body[half:]),
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
        % (len(gzip.compress(body)), gzip.compress(body)),
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s"
        % (len(body), body),
        b"HTTP/1.0 200 OK\r\n\r\n%s" % body,  # delimited by the end of the connection
    ]
    srv = RawServer(responses)
    try:
        run = rate(make_stories(5), OpenAIBackend("m", base_url=f"http://127.0.0.1:{srv.port}/v1",
                                                  api_key_env=None, concurrency=1,
                                                  max_retries=0, timeout=10),
                   eval_prompts="1", criteria="RE", tries=1)
    finally:
        srv.close()
    assert run.n_request_failures == 0 and run.ratings["rating"].tolist() == [4.0] * 5
    # servers that close kept-alive connections: after answering, without saying so (the
    # connection is found closed), or as the next request arrives (no response: the request
    # goes out again on a new connection, without counting as a failed attempt); their answers
    # echo the nonce, so connections are kept alive
    echoed = _completion("4 - Good.", echo=True)
    for options in ({"close_after": True}, {"drop_second": True}):
        srv = RawServer([b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(echoed), echoed)], **options)
        try:
            cache = AnswerCache(":memory:")
            run = rate(make_stories(6),
                       OpenAIBackend("m", base_url=f"http://127.0.0.1:{srv.port}/v1",
                                     api_key_env=None, concurrency=2, max_retries=0, timeout=10),
                       eval_prompts="1", criteria="RE", tries=1, cache=cache)
        finally:
            srv.close()
        assert run.n_request_failures == 0 and srv.count == 6, options
        assert set(cache.to_frame()["attempts"]) == {1}
        if "drop_second" in options:
            assert srv.dropped >= 1


def test_behind_a_socks_proxy_requests_go_through_httpx_and_need_the_echo(monkeypatch):
    """A proxy the own client does not speak goes through httpx; only answers that echo their
    nonce can be verified there."""
    from storyeval.llm import _http, openai_backend

    with StubServer(Script(error_500_first=1, echo_request_id=True)) as srv:
        monkeypatch.setattr(openai_backend, "_proxy_for", lambda url: "socks5://127.0.0.1:1")
        monkeypatch.setattr(_http._HttpxSender, "__init__", _direct_httpx)
        run = rate(make_stories(3), backend(srv), eval_prompts="1", criteria="RE,CH", tries=1)
    assert run.n_request_failures == 0
    assert run.ratings["rating"].tolist() == [expected_rating(k) for k in run.ratings["key"]]
    with StubServer(Script()) as srv:
        run = rate(make_stories(2), backend(srv, max_retries=1), eval_prompts="1",
                   criteria="RE", tries=1)
    assert run.n_request_failures == 2
    assert run.ratings["error"].str.contains("nothing shows").all()


def _direct_httpx(self, max_connections, timeout, connect_timeout, headers, ssl_context=None,
                  **_):
    import httpx

    self._client = httpx.AsyncClient(headers={**headers, "Connection": "close"}, trust_env=False,
                                     timeout=httpx.Timeout(timeout, connect=connect_timeout))


# ---------------------------------------------------------------------------------------------
# Fault injection and SIGKILL
# ---------------------------------------------------------------------------------------------

def test_fault_injection_20_percent_every_answer_right_none_repeated(tmp_path):
    cache = tmp_path / "c.sqlite"
    st = make_stories(15)
    script = Script(fault_rate=0.2, retry_after="0.01", slow_latency=1.0, fault_seed=5)
    with StubServer(script) as srv:
        run = rate(st, backend(srv, timeout=0.3, max_retries=10, concurrency=8),
                   eval_prompts="1,2", criteria="RE,CH", tries=2, cache=cache)
        faults = dict(srv.state.faults)
        received = dict(srv.state.received)
    r = run.ratings
    assert len(r) == 120 and run.n_request_failures == 0 and (r["status"] == "ok").all()
    assert r["rating"].tolist() == [expected_rating(k) for k in r["key"]]
    assert set(faults) == {"429", "500", "hang", "malformed"}, faults
    assert sum(faults.values()) >= 0.1 * sum(received.values())
    keep = stored(cache)
    assert len(keep) == 120 and all(v == default_answer({}, k) for k, v in keep.items())


def test_sigkill_at_several_points_loses_nothing_and_repays_only_in_flight(tmp_path):
    stories = tmp_path / "s.csv"
    make_stories(12).to_csv(stories, index=False)
    db = tmp_path / "c.sqlite"
    n_total = 12 * 6 * 2
    conc = 4
    with StubServer(Script(latency=0.03)) as srv:
        cmd = cli("rate", "--base-url", srv.base_url, "--model", "stub", "--stories",
                  str(stories), "--eval-prompts", "1", "--criteria", "all", "--tries", "2",
                  "--cache", str(db), "--concurrency", str(conc), "--no-progress",
                  "--no-api-key", "--out", str(tmp_path / "out"), "--overwrite")
        kills = 0
        before: dict[str, str] = {}
        for target in (1, 30, 70, 110):
            proc = subprocess.Popen(cmd, env=sub_env(), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while (time.monotonic() < deadline and proc.poll() is None
                   and len(stored(db)) < target):
                time.sleep(0.005)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            kills += 1
            time.sleep(0.1)  # requests in flight at the kill reach the server
            now = stored(db)
            assert target <= len(now) < n_total, "the kill must happen mid-run"
            assert all(now[k] == v for k, v in before.items()), "a committed answer changed"
            before = now
        res = subprocess.run(cmd, env=sub_env(), capture_output=True, text=True, timeout=120,
                             check=False)
        assert res.returncode == 0, res.stderr
        received = dict(srv.state.received)
    after = stored(db)
    assert len(after) == n_total and all(after[k] == v for k, v in before.items())
    repaid = sum(c - 1 for c in received.values())
    # only requests in flight at a kill: each answer is committed as soon as it is verified
    # (issue 48: no rest before the commit)
    assert repaid <= conc * kills, f"{repaid} requests paid twice"
    ratings = pd.read_csv(tmp_path / "out" / "ratings.csv")
    assert (ratings["status"] == "ok").all()
    assert ratings["rating"].tolist() == [expected_rating(k) for k in ratings["key"]]
