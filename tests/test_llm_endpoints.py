"""Endpoints (issue 28): errors no retry can fix stop at once with one line (TLS, DNS, 3xx,
401/403/404; a 4xx about one request fails that request only), reasons are printed, --base-url with a query string or credentials, the CA
options, several servers sharing one run and one cache, and OpenAI batch files whose round trip
gives the online run's ratings byte for byte. Offline: local servers on 127.0.0.1 only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer, default_answer, make_certificate

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.llm import AnswerCache, OpenAIBackend, rate
from storyeval.llm.backends import BackendError

SECRET = "sk-test-9f8e7d6c5b4a39281706-SECRET"


def stories(n: int) -> pd.DataFrame:
    return pd.DataFrame({"story_id": [f"S{i}" for i in range(n)],
                         "system": [f"Sys{i % 2}" for i in range(n)], "prompt_id": range(n),
                         "prompt": [f"Prompt {i}." for i in range(n)],
                         "story": [f"Story number {i} about a lighthouse." for i in range(n)]})


def backend(urls, **kw) -> OpenAIBackend:
    opts = {"api_key_env": None, "concurrency": 2, "backoff_base": 0.001, "timeout": 5.0,
            "random_state": 0}
    opts.update(kw)
    return OpenAIBackend("stub", base_url=urls, **opts)


# ---------------------------------------------------------------------------------------------
# TLS
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    try:
        return make_certificate(tmp_path_factory.mktemp("tls"))
    except FileNotFoundError:
        pytest.skip("openssl is not installed")


def test_an_untrusted_certificate_stops_at_once_and_the_ca_options_fix_it(certificate,
                                                                          monkeypatch):
    folder, ctx = certificate
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with StubServer(Script(), ssl_context=ctx) as srv:
        assert srv.base_url.startswith("https://")
        with pytest.raises(BackendError, match="TLS certificate verification failed.*"
                                               "--ca-bundle.*no retry can fix") as err:
            rate(stories(6), backend(srv.base_url, max_retries=50, backoff_base=5.0),
                 eval_prompts="1", criteria="RE", tries=1)
        assert "\n" not in str(err.value)
        assert sum(srv.state.received.values()) == 0
        ok = rate(stories(3), backend(srv.base_url, ca_bundle=folder / "cert.pem"),
                  eval_prompts="1", criteria="RE", tries=1)
        assert (ok.ratings["status"] == "ok").all()
        monkeypatch.setenv("SSL_CERT_FILE", str(folder / "cert.pem"))
        ok = rate(stories(3), backend(srv.base_url), eval_prompts="1", criteria="RE", tries=1)
        assert (ok.ratings["status"] == "ok").all()
        monkeypatch.delenv("SSL_CERT_FILE")
        monkeypatch.setenv("SSL_CERT_DIR", str(folder / "certs"))
        ok = rate(stories(3), backend(srv.base_url), eval_prompts="1", criteria="RE", tries=1)
        assert (ok.ratings["status"] == "ok").all()
    with pytest.raises(InputError, match="--ca-bundle"):
        backend("https://127.0.0.1:1/v1", ca_bundle=folder / "missing.pem")


# ---------------------------------------------------------------------------------------------
# Errors no retry can fix; reasons printed
# ---------------------------------------------------------------------------------------------

def test_unresolvable_host_stops_at_once():
    with pytest.raises(BackendError, match="cannot resolve host.*no retry can fix"):
        rate(stories(4), backend("http://no-such-host.invalid/v1", max_retries=50,
                                 backoff_base=5.0), eval_prompts="1", criteria="RE", tries=1)


@pytest.mark.parametrize("status", [301, 401, 403, 404])
def test_fatal_statuses_stop_the_cli_with_one_line(tmp_path, capsys, status):
    src = tmp_path / "s.csv"
    stories(4).to_csv(src, index=False)
    script = Script(status_override=status,
                    override_headers={"Location": "https://elsewhere.example/v1?key=" + SECRET})
    with StubServer(script) as srv:
        code = main(["rate", "--base-url", srv.base_url, "--model", "m", "--stories", str(src),
                     "--eval-prompts", "1", "--criteria", "RE", "--tries", "1", "--no-api-key",
                     "--cache", str(tmp_path / "c.sqlite"), "--no-progress",
                     "--max-retries", "20"])
        assert set(srv.state.received.values()) == {1}  # in flight at once; never retried
    err = capsys.readouterr().err
    assert code == 1
    line = next(x for x in err.splitlines() if "error:" in x)
    assert f"HTTP {status}" in line and "no retry can fix" in line or "redirects to" in line
    assert SECRET not in err
    if status == 301:
        assert "redirects to https://elsewhere.example/v1?key=***" in line


def test_other_client_errors_fail_their_request_and_print_the_reason(tmp_path, capsys):
    src = tmp_path / "s.csv"
    stories(3).to_csv(src, index=False)
    with StubServer(Script(status_override=422)) as srv:
        code = main(["rate", "--base-url", srv.base_url, "--model", "m", "--stories", str(src),
                     "--eval-prompts", "1", "--criteria", "RE", "--tries", "1", "--no-api-key",
                     "--cache", str(tmp_path / "c.sqlite"), "--no-progress"])
    err = capsys.readouterr().err
    # the reason once as a warning, then each failed item named with it (issue 37)
    assert code == 1 and err.count("further HTTP 422 answers") == 1 and "scripted error" in err
    assert err.count("failed: story S") == 3 and err.count("HTTP 422 from") == 4


# ---------------------------------------------------------------------------------------------
# --base-url with a query string or credentials
# ---------------------------------------------------------------------------------------------

def test_query_string_goes_after_the_path():
    with StubServer(Script()) as srv:
        run = rate(stories(2), backend(srv.base_url + "?api-version=2024-06-01"),
                   eval_prompts="1", criteria="RE", tries=1)
        assert (run.ratings["status"] == "ok").all()
        assert set(srv.state.paths) == {"/v1/chat/completions?api-version=2024-06-01"}
        assert "***" in json.dumps(backend(srv.base_url + "?key=abc").describe())


@pytest.mark.parametrize("status", [400, 422])
def test_a_key_in_the_query_string_is_redacted_from_echoed_errors(status):
    with StubServer(Script(status_override=status, echo_path=True)) as srv:
        be = backend(srv.base_url + "?api-key=" + SECRET)
        if status == 400:  # refused on every request: the run stops after the first 8
            with pytest.raises(BackendError) as err:
                rate(stories(10), be, eval_prompts="1", criteria="RE", tries=1)
            text = str(err.value)
        else:
            run = rate(stories(2), be, eval_prompts="1", criteria="RE", tries=1)
            text = " ".join(run.ratings["error"])
        assert srv.state.paths[0].endswith("?api-key=" + SECRET)  # sent as given
    assert "scripted error at /v1/chat/completions?api-key=***" in text
    assert SECRET not in text and SECRET[5:20] not in text


def test_credentials_in_the_url_are_refused_without_echo(tmp_path, capsys):
    with pytest.raises(InputError, match="user name or password.*--api-key-env") as err:
        backend(f"http://user:{SECRET}@127.0.0.1:8000/v1")
    assert SECRET not in str(err.value) and "user:" not in str(err.value).replace("user:key", "")
    src = tmp_path / "s.csv"
    stories(2).to_csv(src, index=False)
    code = main(["rate", "--base-url", f"https://{SECRET}@api.example/v1", "--model", "m",
                 "--stories", str(src), "--no-api-key", "--cache", str(tmp_path / "c.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and "user name or password" in err and SECRET[5:20] not in err


# ---------------------------------------------------------------------------------------------
# Several servers, one cache
# ---------------------------------------------------------------------------------------------

def test_requests_spread_over_servers_and_retries_move_to_the_next(tmp_path):
    cache = tmp_path / "c.sqlite"
    with StubServer(Script(latency=0.01)) as a, StubServer(Script(latency=0.01)) as b:
        run = rate(stories(20), backend([a.base_url, b.base_url], concurrency=[2, 3]),
                   eval_prompts="1", criteria="RE,CH", tries=1, cache=cache)
        na, nb = sum(a.state.received.values()), sum(b.state.received.values())
    assert (run.ratings["status"] == "ok").all() and na + nb == 40
    assert min(na, nb) >= 8  # both servers did a real share
    # a server failing every request: its requests are retried on the other, all answered once
    with StubServer(Script(status_override=503)) as bad, StubServer(Script()) as good:
        run = rate(stories(10), backend([bad.base_url, good.base_url]), eval_prompts="1,2",
                   criteria="RE", tries=1, cache=cache)
        assert (run.ratings["status"] == "ok").all()
        assert sum(bad.state.received.values()) >= 1
        assert set(good.state.answered.values()) == {1}
    # one cache: the first 40 answers are not asked again, whichever server gave them
    with StubServer(Script()) as c:
        again = rate(stories(20), backend(c.base_url), eval_prompts="1", criteria="RE,CH",
                     tries=1, cache=cache)
        assert again.n_sent == 0 and sum(c.state.received.values()) == 0


def test_concurrency_per_server_is_checked():
    with pytest.raises(InputError, match="one per server"):
        backend(["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"], concurrency=[1, 2, 3])
    with pytest.raises(InputError, match="twice"):
        backend(["http://127.0.0.1:1/v1", "http://127.0.0.1:1/v1"])


# ---------------------------------------------------------------------------------------------
# Batch files
# ---------------------------------------------------------------------------------------------

def fake_run_batch(src: Path, dst: Path, *, fail: set[str] = frozenset()) -> None:
    """What `vllm run-batch` / the OpenAI Batch API do with the file, answering as the stub
    server does (its answer depends on the request key only), in a shuffled order."""
    lines = [json.loads(x) for x in src.read_text().splitlines()]
    out = []
    for i, line in enumerate(reversed(lines)):
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        key, body = line["custom_id"], line["body"]
        if key in fail:
            resp = {"status_code": 500, "request_id": f"r{i}",
                    "body": {"error": {"message": "engine died"}}}
        else:
            text = default_answer(body, key)
            resp = {"status_code": 200, "request_id": f"r{i}", "body": {
                "id": f"cmpl-{i}", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}}
        out.append({"id": f"batch_req_{i}", "custom_id": key, "response": resp, "error": None})
    dst.write_text("".join(json.dumps(o) + "\n" for o in out))


def test_batch_round_trip_gives_the_online_ratings_byte_for_byte(tmp_path, capsys):
    src = tmp_path / "s.csv"
    stories(8).to_csv(src, index=False)
    common = ["rate", "--model", "stub", "--stories", str(src), "--eval-prompts", "1,3",
              "--criteria", "RE,SU", "--tries", "2", "--no-api-key", "--no-progress"]
    with StubServer(Script()) as srv:
        assert main([*common, "--base-url", srv.base_url, "--cache", str(tmp_path / "on.sqlite"),
                     "--out", str(tmp_path / "online")]) == 0
        online_payloads = {json.dumps(p, sort_keys=True) for p in srv.state.payloads}
    batch_in, batch_out = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    offline = [*common, "--cache", str(tmp_path / "off.sqlite")]
    assert main([*offline, "--batch-out", str(batch_in)]) == 0
    lines = [json.loads(x) for x in batch_in.read_text().splitlines()]
    assert len(lines) == 64
    assert {json.dumps(x["body"], sort_keys=True) for x in lines} == online_payloads
    online = pd.read_csv(tmp_path / "online" / "ratings.csv")
    assert {x["custom_id"] for x in lines} == set(online["key"])  # the same cache keys
    fake_run_batch(batch_in, batch_out)
    assert main([*offline, "--batch-in", str(batch_out), "--out", str(tmp_path / "batch")]) == 0
    assert (tmp_path / "batch" / "ratings.csv").read_bytes() == \
        (tmp_path / "online" / "ratings.csv").read_bytes()
    # nothing is left to export
    assert main([*offline, "--batch-out", str(tmp_path / "again.jsonl")]) == 0
    assert not (tmp_path / "again.jsonl").exists() or \
        (tmp_path / "again.jsonl").read_text() == ""


def test_batch_results_with_errors_and_bad_lines(tmp_path):
    be_out = backend("http://127.0.0.1:1/v1", batch_out=tmp_path / "in.jsonl")
    run = rate(stories(3), be_out, eval_prompts="1", criteria="RE", tries=1)
    assert (run.ratings["status"] == "missing").all()
    keys = run.ratings["key"].tolist()
    fake_run_batch(tmp_path / "in.jsonl", tmp_path / "out.jsonl", fail={keys[0]})
    cache = AnswerCache(tmp_path / "c.sqlite")
    run = rate(stories(3), backend("http://127.0.0.1:1/v1", batch_in=tmp_path / "out.jsonl"),
               eval_prompts="1", criteria="RE", tries=1, cache=cache)
    assert run.ratings["status"].tolist() == ["error", "ok", "ok"]
    assert "HTTP 500: engine died" in run.ratings["error"].iloc[0]
    (tmp_path / "bad.jsonl").write_text('{"custom_id": "x"}\nnot json\n')
    with pytest.raises(InputError, match="line 2: not a batch result"):
        rate(stories(3), backend("http://127.0.0.1:1/v1", batch_in=tmp_path / "bad.jsonl"),
             eval_prompts="1", criteria="RE", tries=1, cache=cache)
    with pytest.raises(InputError, match="cannot be combined"):
        backend("http://127.0.0.1:1/v1", batch_in="a", batch_out="b")
