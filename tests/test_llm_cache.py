"""The answer cache (storyeval.llm.cache)."""

from __future__ import annotations

import sqlite3

import pytest

from storyeval.exceptions import InputError
from storyeval.llm.cache import AnswerCache, messages_digest, request_key

MSGS = [{"role": "user", "content": "Rate it. Rating:"}]


def _key(**kw):
    base = {"backend": "openai", "model": "m", "messages_sha": messages_digest(MSGS),
                "sampling": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 16}, "try_index": 0, "seed": 0}
    base.update(kw)
    return request_key(**base)


def test_key_depends_on_every_part():
    k = _key()
    assert len(k) == 64 and k == _key()
    others = [_key(backend="hf"), _key(model="m2"), _key(try_index=1), _key(seed=1),
              _key(seed=None), _key(sampling={"temperature": 0.0, "top_p": 1.0, "max_tokens": 16}),
              _key(messages_sha=messages_digest([{"role": "user", "content": "Rate it! Rating:"}]))]
    assert len({k, *others}) == len(others) + 1
    # role/content boundaries are unambiguous
    assert messages_digest([{"role": "ab", "content": "c"}]) != \
        messages_digest([{"role": "a", "content": "bc"}])


def test_put_get_and_first_answer_wins(tmp_path):
    path = tmp_path / "sub" / "c.sqlite"
    with AnswerCache(path) as c:
        assert c.put(key="k1", backend="openai", model="m", messages_sha="s", sampling={},
                     try_index=0, seed=0, raw="4 - ok", parser_version="v", rating=4.0,
                     status="ok", explanation="ok")
        assert not c.put(key="k1", backend="openai", model="m", messages_sha="s", sampling={},
                         try_index=0, seed=0, raw="other")
        assert len(c) == 1 and c.keys() == {"k1"}
    with AnswerCache(path) as c:  # persisted
        got = c.get_many(["k1", "nope"])
        assert got == {"k1": {"raw": "4 - ok", "parser_version": "v", "rating": 4.0,
                              "status": "ok", "explanation": "ok"}}
        c.update_parsed([("k1", None, "no_number", "x")], "v2")
        assert c.get_many(["k1"])["k1"]["parser_version"] == "v2"
        assert c.to_frame().loc[0, "status"] == "no_number"
        with pytest.raises(InputError, match="unknown cache column"):
            c.get_many(["k1"], columns=("api_key",))
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_many_keys_beyond_sqlite_parameter_limit():
    c = AnswerCache(":memory:")
    for i in range(2500):
        c.put(key=f"k{i}", backend="b", model="m", messages_sha="s", sampling={}, try_index=0,
              seed=None, raw=str(i % 5 + 1))
    got = c.get_many([f"k{i}" for i in range(0, 3000, 2)])
    assert len(got) == 1250 and got["k2498"]["raw"] == "4"


def test_bad_files(tmp_path):
    with pytest.raises(InputError, match="directory"):
        AnswerCache(tmp_path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match="not a storyeval answer cache"):
        AnswerCache(junk)
    with pytest.raises(InputError, match="synchronous"):
        AnswerCache(tmp_path / "x.sqlite", synchronous="OFF")
