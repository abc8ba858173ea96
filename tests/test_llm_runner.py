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
from storyeval.llm.extract import parser_id
from storyeval.llm.outputs import to_scores
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
    assert {r[0] for r in con.execute("SELECT parser_version FROM answers")} == {parser_id()}
    con.close()


# Answers on which the two parsers disagree, chosen per request from its cache key.
ANSWERS = (
    "The story has 2 characters. I would give it a 4.",  # strict 4, first_number 2
    "I cannot rate this.",                               # no number for both
    "3.5 - between good and fine",                       # strict ambiguous, first_number 3.5
    "7",                                                  # out of range for both
    " 4 \u2014 The ending surprised you.",               # 4 for both
    "Three. The plot is thin.",                          # strict 3, first_number none
    "1. The plot... 2. The ending... Overall 5",         # strict 5, first_number 1
)


def _scripted(payload, key):
    return ANSWERS[int(key[:8], 16) % len(ANSWERS)]


def _paper_value(text):
    # the paper's rule, hand-coded: first number (decimal part kept), none or off 1..5 -> 3
    import re

    m = re.search(r"[0-9]+(?:[.][0-9]+)?", text)
    v = float(m.group()) if m else 3.0
    return v if 1 <= v <= 5 else 3.0


def test_switching_parser_reparses_the_cache_without_requests(tmp_path):
    db = tmp_path / "c.sqlite"
    kw = {"eval_prompts": "1,2", "criteria": "RE,CH,SU", "tries": 3, "cache": db}
    with StubServer(Script(answer=_scripted)) as srv:
        strict = rate(_stories(4), _backend(srv), **kw)
        n = sum(srv.state.received.values())
        assert n == strict.n_sent == 4 * 2 * 3 * 3
        paper = rate(_stories(4), _backend(srv), parser="first_number", **kw)
        assert paper.n_sent == 0 and sum(srv.state.received.values()) == n
        back = rate(_stories(4), _backend(srv), parser="strict", **kw)
        assert back.n_sent == 0 and sum(srv.state.received.values()) == n
    pd.testing.assert_frame_equal(back.ratings, strict.ratings)
    assert set(strict.ratings["parser"]) == {"strict-3"}
    assert set(paper.ratings["parser"]) == {"first_number-3"}
    assert paper.settings["parser"] == "first_number" and paper.settings["parser_id"] == "first_number-3"
    assert strict.settings["parser"] == "strict" and strict.settings["parser_version"] == "3"
    texts = [_scripted(None, k) for k in strict.ratings["key"]]
    assert set(texts) == set(ANSWERS)  # every kind of answer occurs
    # both parsers, per answer, as documented
    want_strict = {ANSWERS[0]: 4.0, ANSWERS[4]: 4.0, ANSWERS[5]: 3.0, ANSWERS[6]: 5.0}
    for t, r, st in zip(texts, strict.ratings["rating"], strict.ratings["status"]):
        if t in want_strict:
            assert (st, r) == ("ok", want_strict[t])
        else:
            assert st != "ok"
    # the paper's rule exactly: first_number + on_unparsed="midpoint", against a hand-coded rule
    for t, r, st in zip(texts, paper.ratings["rating"], paper.ratings["status"]):
        assert (r if st == "ok" else 3.0) == _paper_value(t)
    sc = to_scores(paper.ratings, on_unparsed="midpoint", include_avg=False)
    ref = (paper.ratings.assign(v=[_paper_value(t) for t in texts])
           .groupby(["story_id", "code", "eval_prompt"])["v"].mean())
    got = sc.set_index(["story_id", "measure"])["value"]
    for (sid, code, ep), v in ref.items():
        assert got[(sid, f"m {code} {ep}")] == pytest.approx(v, abs=1e-12)
    assert sc["value"].notna().all()
    # the cache holds the latest parse
    con = sqlite3.connect(db)
    assert {r[0] for r in con.execute("SELECT parser_version FROM answers")} == {"strict-3"}
    con.close()


def test_bad_parser():
    with pytest.raises(InputError, match="parser"):
        rate(_stories(), OpenAIBackend("m"), eval_prompts="1", criteria="RE", parser="last")


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
    (lambda d: d.assign(prompt_id=["x", None]), "prompt_id.* is empty"),
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
