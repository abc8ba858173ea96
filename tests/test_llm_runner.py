"""Runner bookkeeping: re-parsing without requests, stories without a reference, validation."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer

from storyeval.exceptions import InputError, StoryevalWarning
from storyeval.llm import OpenAIBackend, load_stories, rate
from storyeval.llm.extract import PARSER_VERSION
from storyeval.llm.runner import parse_range


def _stories(n=2, reference=True):
    df = pd.DataFrame({"story_id": [f"A/{i}" for i in range(n)], "system": "A",
                       "prompt_id": range(n), "prompt": [f"P{i}" for i in range(n)],
                       "story": [f"S{i}" for i in range(n)]})
    if reference:
        df["reference"] = [f"H{i}" for i in range(n)]
    return df


def _backend(srv):
    return OpenAIBackend("m", base_url=srv.base_url, api_key_env=None, backoff_base=0.01)


def test_new_parser_version_reparses_stored_answers_without_requests(tmp_path):
    db = tmp_path / "c.sqlite"
    with StubServer(Script()) as srv:
        first = rate(_stories(), _backend(srv), eval_prompts="1", criteria="RE,CH", tries=2,
                     cache=db)
        con = sqlite3.connect(db)
        con.execute("UPDATE answers SET parser_version='old-0', rating=NULL, status=NULL, "
                    "explanation=NULL")
        con.commit()
        con.close()
        again = rate(_stories(), _backend(srv), eval_prompts="1", criteria="RE,CH", tries=2,
                     cache=db)
        assert again.n_sent == 0 and sum(srv.state.received.values()) == 8
    pd.testing.assert_frame_equal(again.ratings, first.ratings)
    con = sqlite3.connect(db)
    assert {r[0] for r in con.execute("SELECT parser_version FROM answers")} == {PARSER_VERSION}


def test_missing_reference_is_a_counted_status_not_a_request(tmp_path):
    st = _stories(3)
    st.loc[1, "reference"] = None
    with StubServer(Script()) as srv:
        with pytest.warns(StoryevalWarning, match="no 'reference'"):
            run = rate(st, _backend(srv), eval_prompts="1,4", criteria="RE", tries=2)
        assert sum(srv.state.received.values()) == 3 * 2 + 2 * 2
    r = run.ratings
    noref = r[r["status"] == "no_reference"]
    assert set(noref["story_id"]) == {"A/1"} and set(noref["eval_prompt"]) == {4}
    assert noref["key"].isna().all()
    f = run.failure_rates().set_index("eval_prompt")
    assert f.loc[4, "n_no_reference"] == 2 and f.loc[1, "n_no_reference"] == 0
    with pytest.raises(InputError, match="reference"):
        rate(_stories(reference=False), OpenAIBackend("m"), eval_prompts="4", criteria="RE")


def test_cache_only_marks_missing(tmp_path):
    run = rate(_stories(), OpenAIBackend("m", base_url="http://127.0.0.1:9/v1"),
               eval_prompts="1", criteria="RE", tries=1, cache=tmp_path / "c.sqlite",
               cache_only=True)
    assert run.ratings["status"].tolist() == ["missing", "missing"] and run.n_sent == 0


def test_hanna_stories():
    st = load_stories("hanna")
    assert len(st) == 672 and st["story_id"].is_unique
    assert st.groupby("system").size().eq(96).all()
    human = st[st["system"] == "Human"]
    assert human["reference"].isna().all()
    assert st.loc[st["system"] != "Human", "reference"].notna().all()


@pytest.mark.parametrize("change, match", [
    (lambda d: d.drop(columns="story"), "missing column"),
    (lambda d: d.assign(story_id="same"), "repeats"),
    (lambda d: d.assign(prompt_id=["x", "y"]), "prompt_id"),
    (lambda d: d.assign(story=["ok", "  "]), "empty in row 1"),
])
def test_bad_stories(change, match):
    with pytest.raises(InputError, match=match):
        rate(change(_stories()), OpenAIBackend("m"), eval_prompts="1", criteria="RE")


def test_arguments():
    assert parse_range("1-3,4") == (1, 2, 3, 4) and parse_range([3, 1]) == (1, 3)
    for bad in ("", "3-1", "a"):
        with pytest.raises(InputError):
            parse_range(bad)
    with pytest.raises(InputError, match="tries"):
        rate(_stories(), OpenAIBackend("m"), tries=0)
    with pytest.raises(InputError, match="base_url"):
        OpenAIBackend("m", base_url="localhost:8000")
    with pytest.raises(InputError, match="backend"):
        rate(_stories(), "openai")  # type: ignore[arg-type]


def test_vllm_backend_without_vllm_says_what_to_do():
    import importlib.util

    from storyeval.exceptions import MissingDependencyError
    from storyeval.llm import VLLMBackend

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    with pytest.raises(MissingDependencyError, match="pip install vllm"):
        rate(_stories(), VLLMBackend("some/model"), eval_prompts="1", criteria="RE", tries=1)


def test_vllm_backend_contract_with_a_recording_engine(monkeypatch, tmp_path):
    """VLLMBackend's calls follow vLLM's documented offline API (LLM(model=...),
    SamplingParams(temperature, top_p, max_tokens, seed), LLM.chat(conversations, params,
    use_tqdm=False)); a recording stand-in for the module checks chunking and per-try seeds."""
    import types

    from storyeval.llm import SamplingParams, VLLMBackend

    calls = []

    class FakeParams:
        def __init__(self, **kw):
            self.kw = kw

    class FakeLLM:
        def __init__(self, model, **kw):
            calls.append(("init", model, kw))

        def chat(self, conversations, params, use_tqdm=True):
            calls.append(("chat", len(conversations), [p.kw["seed"] for p in params], use_tqdm))
            out = []
            for conv in conversations:
                comp = types.SimpleNamespace(text=" 4 \u2014 fine", finish_reason="stop",
                                             token_ids=[1, 2, 3])
                out.append(types.SimpleNamespace(outputs=[comp], prompt_token_ids=[0] * 7))
            return out

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=FakeLLM,
                                                                   SamplingParams=FakeParams))
    b = VLLMBackend("org/model", chunk_size=5, engine_kwargs={"tensor_parallel_size": 2})
    run = rate(_stories(3), b, eval_prompts="1", criteria="RE,CH", tries=2,
               sampling=SamplingParams(seed=100), cache=tmp_path / "c.sqlite")
    assert (run.ratings["rating"] == 4).all() and run.n_answered == 12
    assert calls[0] == ("init", "org/model", {"tensor_parallel_size": 2})
    chats = [c for c in calls if c[0] == "chat"]
    assert [c[1] for c in chats] == [5, 5, 2] and all(c[3] is False for c in chats)
    assert sorted(s for c in chats for s in c[2]) == [100] * 6 + [101] * 6
