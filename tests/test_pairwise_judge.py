"""Side-by-side judging through the LLM backends: a local OpenAI-compatible server on 127.0.0.1
(tests/_openai_stub_server.py) answers with scripted verdicts that depend on which story is shown
first, so the tests check that both orders are sent, the position answer is turned into the
story convention, the cache stops re-requests, malformed answers are failures, and the verdicts
feed win matrices, Bradley-Terry and position consistency."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.llm import AnswerCache, OpenAIBackend, SamplingParams, request_key
from storyeval.llm.cache import messages_digest
from storyeval.pairwise import (
    fit_bradley_terry,
    judge_pairs,
    make_pairs,
    plan_judging,
    position_consistency,
    side_by_side_messages,
    win_matrix,
)
from storyeval.pairwise.bradley_terry import bradley_terry

SYSTEMS = ["S0", "S1", "S2", "S3"]   # true quality S0 < S1 < S2 < S3
N_PROMPTS = 6
DIMS = ["Plot", "Creativity", "Development", "Language Use", "Overall"]


def _stories(n_prompts=N_PROMPTS, systems=SYSTEMS):
    rows = [(f"{s}/{p}", s, p, f"Write about thing {p}.",
             f"A tale by {s} for prompt {p}. quality={int(s[1:])}.")
            for p in range(n_prompts) for s in systems]
    return pd.DataFrame(rows, columns=["story_id", "system", "prompt_id", "prompt", "story"])


def _shown(content: str) -> tuple[str, str, int]:
    """(system shown first, system shown second, prompt id) from a rendered request."""
    first = re.search(r"\[Story A\]\nA tale by (S\d) for prompt (\d+)", content)
    second = re.search(r"\[Story B\]\nA tale by (S\d) for prompt \d+", content)
    return first.group(1), second.group(1), int(first.group(2))


def scripted_judge(payload, key) -> str:
    """Answers by position ("A" = shown first):

    - Plot: the better story (consistent across orders);
    - Creativity: the better story, except on prompts 0 and 3 where the worse one wins (so the
      Bradley-Terry MLE exists);
    - Development: "Same";
    - Language Use: always the story shown first (maximal position bias);
    - Overall: the better story, but the line is missing when S0 is shown first against S3
      (a partial answer), and the whole answer is unreadable when S1 is first against S2.
    """
    a, b, p = _shown(payload["messages"][0]["content"])
    if (a, b) == ("S1", "S2"):
        return "I would rather not choose between these stories."
    qa, qb = int(a[1:]), int(b[1:])
    better = "A" if qa > qb else "B"
    worse = "B" if better == "A" else "A"
    lines = [f"Plot: {better}", f"Creativity: {worse if p in (0, 3) else better}",
             "Development: Same", "Language Use: A"]
    if (a, b) != ("S0", "S3"):
        lines.append(f"Overall: {better}")
    return ("Story A is ... and Story B is ...\n\nBased on my assessment, the better story for "
            "each dimension is:\n" + "\n".join(lines) + "\n")


def _backend(srv, **kw):
    return OpenAIBackend("stub", base_url=srv.base_url, api_key_env=None,
                         concurrency=4, random_state=0, **kw)


@pytest.fixture
def pairs():
    return make_pairs(_stories())


def test_make_pairs_all_system_pairs_per_prompt():
    p = make_pairs(_stories())
    assert len(p) == N_PROMPTS * 6
    assert list(p.columns) == ["prompt_id", "prompt", "story_a", "system_a", "text_a",
                               "story_b", "system_b", "text_b"]
    first = p[p["prompt_id"] == 0]
    assert list(zip(first["system_a"], first["system_b"])) == [
        ("S0", "S1"), ("S0", "S2"), ("S0", "S3"), ("S1", "S2"), ("S1", "S3"), ("S2", "S3")]
    assert all(f"by {s} " in t for s, t in zip(p["system_a"], p["text_a"]))
    assert all(f"by {s} " in t for s, t in zip(p["system_b"], p["text_b"]))
    sel = make_pairs(_stories(), systems=["S3", "S1"], limit=2)
    assert sel[["story_a", "story_b"]].values.tolist() == [["S1/0", "S3/0"], ["S1/1", "S3/1"]]
    with pytest.raises(InputError, match="unknown system"):
        make_pairs(_stories(), systems=["S9"])
    with pytest.raises(InputError, match="no pair"):
        make_pairs(_stories(), systems=["S1"])
    dup = pd.concat([_stories(1), _stories(1).assign(story_id=lambda d: d.story_id + "x")])
    with pytest.raises(InputError, match="several stories"):
        make_pairs(dup)


def test_make_pairs_on_hanna():
    from storyeval.data import load_hanna_stories

    p = make_pairs(load_hanna_stories())
    # 7 systems with released texts (Human + 6 LLMs) x 96 prompts
    assert len(p) == 96 * 21
    assert p.groupby("prompt_id").size().eq(21).all()
    assert (p["story_a"] != p["story_b"]).all()


def test_both_orders_sent_and_verdicts_in_story_convention(pairs, tmp_path):
    with StubServer(Script(answer=scripted_judge)) as srv:
        run = judge_pairs(pairs, _backend(srv), cache=tmp_path / "c.sqlite")
        seen = [_shown(pl["messages"][0]["content"]) for pl in srv.state.payloads]
        assert all(v == 1 for v in srv.state.received.values())
    assert run.n_sent == run.n_answered == len(pairs) * 2 == len(seen)
    # every pair shown once each way round
    shown = {(p, a, b) for a, b, p in seen}
    for p, sa, sb in zip(pairs["prompt_id"], pairs["system_a"], pairs["system_b"]):
        assert (p, sa, sb) in shown and (p, sb, sa) in shown
    j = run.judgments
    assert len(j) == len(pairs) * 2 * len(DIMS)
    assert j["dimension"].unique().tolist() == DIMS
    v = run.verdicts
    # Plot names the better story in the story convention, whatever the order
    plot = v[v["dimension"] == "Plot"]
    better = np.where(plot["system_a"].str[1:].astype(int) > plot["system_b"].str[1:].astype(int),
                      plot["story_a"], plot["story_b"])
    assert (plot["winner"].to_numpy() == better).all()
    assert set(plot["order"]) == {"AB", "BA"}
    # Language Use: the story shown first always wins
    lu = v[v["dimension"] == "Language Use"]
    first = np.where(lu["order"] == "AB", lu["story_a"], lu["story_b"])
    assert (lu["winner"].to_numpy() == first).all()
    assert (v.loc[v["dimension"] == "Development", "verdict"] == "same").all()
    assert set(v["judge"]) == {"stub"} and set(v["status"]) == {"ok"}


def test_malformed_and_partial_answers_are_failures_with_raw_text(pairs):
    with StubServer(Script(answer=scripted_judge)) as srv:
        run = judge_pairs(pairs, _backend(srv))
    j = run.judgments
    shown_first = np.where(j["order"] == "AB", j["system_a"], j["system_b"])
    shown_second = np.where(j["order"] == "AB", j["system_b"], j["system_a"])
    refused = (shown_first == "S1") & (shown_second == "S2")
    partial = (shown_first == "S0") & (shown_second == "S3") & (j["dimension"] == "Overall")
    assert (j.loc[refused, "status"] == "unparsed").all()
    assert j.loc[refused, "verdict"].isna().all()
    assert j.loc[refused, "raw"].str.startswith("I would rather not").all()
    assert (j.loc[partial, "status"] == "unparsed").all()
    assert (j.loc[~refused & ~partial, "status"] == "ok").all()
    assert refused.sum() == N_PROMPTS * len(DIMS) and partial.sum() == N_PROMPTS
    f = run.failures().set_index("dimension")
    assert f.loc["Overall", "n_unparsed"] == 2 * N_PROMPTS
    assert f.loc["Plot", "n_unparsed"] == N_PROMPTS
    assert f.loc["Plot", "failure_rate"] == pytest.approx(N_PROMPTS / (len(pairs) * 2))
    # failures never become verdicts
    assert len(run.verdicts) == (~refused & ~partial).sum()


def test_cache_prevents_rerequests_and_resumes(pairs, tmp_path):
    cache = tmp_path / "answers.sqlite"
    part = pairs[pairs["prompt_id"] < 2]
    with StubServer(Script(answer=scripted_judge)) as srv:
        first = judge_pairs(part, _backend(srv), cache=cache)
        assert first.n_sent == len(part) * 2
        n_before = sum(srv.state.received.values())
        # a larger run resumes: only the new pairs are sent
        plan = plan_judging(pairs, _backend(srv), cache=cache)
        assert (plan.n_requests, plan.n_cached, plan.n_to_send) == (
            len(pairs) * 2, len(part) * 2, (len(pairs) - len(part)) * 2)
        full = judge_pairs(pairs, _backend(srv), cache=cache)
        assert full.n_sent == (len(pairs) - len(part)) * 2
        assert sum(srv.state.received.values()) == n_before + full.n_sent
        # a rerun sends nothing and gives the same table
        again = judge_pairs(pairs, _backend(srv), cache=cache)
        assert again.n_sent == 0 and again.plan.n_cached == len(pairs) * 2
        assert max(srv.state.received.values()) == 1
    pd.testing.assert_frame_equal(again.judgments, full.judgments)
    # cache-only reads the stored answers without a server
    offline = judge_pairs(pairs, OpenAIBackend("stub", base_url="http://127.0.0.1:9/v1"),
                          cache=cache, cache_only=True)
    pd.testing.assert_frame_equal(offline.judgments, full.judgments)
    with AnswerCache(cache) as c:
        stored = c.to_frame()
    assert len(stored) == len(pairs) * 2
    assert set(stored["parser_version"]) == {"side_by_side-1"}
    assert set(stored["status"]) == {"ok", "partial", "unparsed"}


def test_key_is_the_raters_request_key(pairs, tmp_path):
    row = pairs.iloc[0]
    with StubServer(Script(answer=scripted_judge)) as srv:
        run = judge_pairs(pairs.iloc[:1], _backend(srv), tries=2,
                          sampling=SamplingParams(temperature=0.3, max_tokens=900, seed=7))
        received = set(srv.state.received)
    msgs = side_by_side_messages(row["prompt"], row["text_b"], row["text_a"])  # order BA
    sp = SamplingParams(temperature=0.3, max_tokens=900, seed=7)
    expected = request_key(backend="openai", model="stub", messages_sha=messages_digest(msgs),
                           sampling=sp.for_key(), try_index=1, seed=8)
    j = run.judgments
    got = j.loc[(j["order"] == "BA") & (j["try"] == 1), "key"].unique().tolist()
    assert got == [expected] and expected in received
    assert len(received) == 4  # 2 orders x 2 tries
    assert set(j["judge"]) == {"stub try0", "stub try1"}  # tries stay distinct judgments
    run.verdicts  # noqa: B018 - validates (no duplicate judgment)


def test_request_errors_are_failures_and_retried_on_rerun(pairs, tmp_path):
    cache = tmp_path / "c.sqlite"
    part = pairs.iloc[:3]
    with StubServer(Script(answer=scripted_judge, error_500_first=1)) as srv:
        run = judge_pairs(part, _backend(srv, max_retries=0), cache=cache)
        assert run.n_request_failures == 6 and run.n_answered == 0
        assert set(run.judgments["status"]) == {"error"}
        assert run.judgments["error"].str.contains("HTTP 500").all()
        with pytest.raises(InputError, match="no usable verdict"):
            run.verdicts  # noqa: B018
        again = judge_pairs(part, _backend(srv, max_retries=0), cache=cache)
    assert again.n_sent == 6 and again.n_request_failures == 0
    assert "error" not in set(again.judgments["status"])


def test_verdicts_feed_win_matrix_bradley_terry_and_consistency(pairs):
    with StubServer(Script(answer=scripted_judge)) as srv:
        v = judge_pairs(pairs, _backend(srv)).verdicts
    # Plot: the better system wins both orders of every prompt
    m = win_matrix(v, dimension="Plot")
    q = np.arange(4)
    expected = np.where(q[:, None] > q[None, :], 2 * N_PROMPTS, 0)
    np.fill_diagonal(expected, 0)
    # the S1-vs-S2 pair is unreadable when S1 is shown first: one verdict per prompt is missing
    expected[2, 1] = N_PROMPTS
    np.testing.assert_array_equal(m.wins, expected)
    assert m.items == SYSTEMS
    # Creativity: reversed on 2 of 6 prompts, so the MLE exists and equals the fit on the
    # scripted counts (better wins 4 prompts x 2 orders, worse wins 2 x 2)
    w = np.where(q[:, None] > q[None, :], 8, np.where(q[:, None] < q[None, :], 4, 0))
    w[2, 1] -= 4   # S1 first vs S2: unreadable on the 4 normal prompts
    w[1, 2] -= 2   # ... and on the 2 reversed prompts
    ref = fit_bradley_terry(w)
    bt = bradley_terry(v, dimension="Creativity", n_resamples=0)
    np.testing.assert_allclose(bt["log_strength"], ref.log_strength, atol=1e-6)
    assert bt["rank"].tolist() == [4, 3, 2, 1]
    # position bias: Plot consistent, Language Use always the first story
    pc = position_consistency(v).set_index("dimension")
    assert pc.loc["Plot", "consistency"] == 1.0
    # complete pairs: one first-position win in two; S1-vs-S2 (only S2 first, S2 wins): one
    n_full = len(pairs) - N_PROMPTS
    assert pc.loc["Plot", "first_position_win_rate"] == pytest.approx(
        (n_full + N_PROMPTS) / (2 * n_full + N_PROMPTS))
    assert pc.loc["Language Use", "consistency"] == 0.0
    assert pc.loc["Language Use", "first_position_win_rate"] == 1.0
    assert pc.loc["Development", "tie_rate"] == 1.0
    # pairs with only one readable order are not "judged in both orders"
    assert pc.loc["Plot", "n_pairs_both_orders"] == len(pairs) - N_PROMPTS


def test_one_order_dimension_subset_and_bad_input(pairs):
    with StubServer(Script(answer=scripted_judge)) as srv:
        run = judge_pairs(pairs.iloc[:2], _backend(srv), dimensions="Plot,Language Use",
                          overall=False, both_orders=False)
        assert sum(srv.state.received.values()) == 2
        content = srv.state.payloads[0]["messages"][0]["content"]
    assert "Creativity: [A or B or Same]" not in content and "Overall:" not in content
    assert set(run.judgments["order"]) == {"AB"}
    assert run.judgments["dimension"].unique().tolist() == ["Plot", "Language Use"]
    b = OpenAIBackend("stub")
    with pytest.raises(InputError, match="unknown dimension"):
        plan_judging(pairs, b, dimensions=["Plot", "Pacing"])
    with pytest.raises(InputError, match="missing column"):
        plan_judging(pairs.drop(columns="text_b"), b)
    with pytest.raises(InputError, match="repeats the pair"):
        swapped = pairs.iloc[:1].rename(columns={"story_a": "story_b", "story_b": "story_a",
                                                 "text_a": "text_b", "text_b": "text_a"})
        plan_judging(pd.concat([pairs.iloc[:1], swapped]), b)
    with pytest.raises(InputError, match="tries"):
        plan_judging(pairs, b, tries=0)
    with pytest.raises(InputError, match="non-empty text"):
        plan_judging(pairs.assign(text_a=" "), b)


def test_api_key_stays_out_of_cache_and_output(pairs, tmp_path, monkeypatch):
    canary = "sk-canary-pairwise-123456"
    monkeypatch.setenv("PAIRWISE_TEST_KEY", canary)
    cache = tmp_path / "c.sqlite"
    with StubServer(Script(answer=scripted_judge, require_key=canary, echo_auth=True)) as srv:
        b = OpenAIBackend("stub", base_url=srv.base_url, api_key_env="PAIRWISE_TEST_KEY")
        run = judge_pairs(pairs.iloc[:2], b, cache=cache)
        assert srv.state.auth_headers[0] == f"Bearer {canary}"
    assert run.n_answered == 4
    assert canary not in run.judgments.to_csv() and canary not in json.dumps(run.settings)
    for f in tmp_path.iterdir():
        assert canary.encode() not in f.read_bytes()


# --- CLI ------------------------------------------------------------------------------------

def _cli(srv, stories, tmp_path, *extra):
    return ["pairwise", "judge", "--backend", "openai", "--base-url", srv.base_url, "--model",
            "stub", "--stories", str(stories), "--cache", str(tmp_path / "cache.sqlite"),
            "--no-api-key", "--no-progress", *extra]


def test_cli_judge_then_strengths(tmp_path, capsys):
    stories = tmp_path / "stories.csv"
    _stories().to_csv(stories, index=False)
    out = tmp_path / "verdicts.csv"
    with StubServer(Script(answer=scripted_judge)) as srv:
        assert main(_cli(srv, stories, tmp_path, "--dry-run")) == 0
        assert "36 pairs x 2 order(s) x 1 tries = 72 requests" in capsys.readouterr().out
        assert not (tmp_path / "cache.sqlite").exists()  # a dry run creates no cache
        assert main(_cli(srv, stories, tmp_path, "--out", str(out))) == 0
        printed = capsys.readouterr().out
        assert "72 requests, 0 from the cache, 72 sent, 72 answered, 0 failed" in printed
        assert main(_cli(srv, stories, tmp_path, "--out", str(out), "--json")) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["sent"] == 0 and summary["plan"]["n_cached"] == 72
        assert sum(srv.state.received.values()) == 72
    v = pd.read_csv(out)
    assert set(v["status"]) == {"ok"} and {"raw", "order", "verdict"} <= set(v.columns)
    fails = pd.read_csv(tmp_path / "verdicts.failures.csv")
    assert set(fails["status"]) == {"unparsed"} and len(fails) == N_PROMPTS * (len(DIMS) + 1)
    assert main(["pairwise", "strengths", str(out), "--dimension", "Creativity",
                 "--resamples", "0", "--format", "json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert [r["item"] for r in sorted(res, key=lambda r: r["rank"])] == SYSTEMS[::-1]
    assert main(["pairwise", "consistency", str(out), "--format", "csv"]) == 0
    assert "Language Use" in capsys.readouterr().out


def test_cli_systems_limit_and_errors(tmp_path, capsys):
    stories = tmp_path / "stories.csv"
    _stories().to_csv(stories, index=False)
    with StubServer(Script(answer=scripted_judge)) as srv:
        assert main(_cli(srv, stories, tmp_path, "--systems", "S0,S3", "--limit", "2",
                         "--dimensions", "Plot", "--no-overall", "--dry-run", "--json")) == 0
        plan = json.loads(capsys.readouterr().out)
        assert plan["n_pairs"] == 2 and plan["n_requests"] == 4
        assert plan["dimensions"] == ["Plot"]
        assert main(_cli(srv, stories, tmp_path, "--systems", "S9", "--dry-run")) == 2
        assert main(_cli(srv, stories, tmp_path)) == 2  # --out is required to run
        assert main(_cli(srv, stories, tmp_path, "--dimensions", "Pace", "--dry-run")) == 2
    with StubServer(Script(status_override=503)) as srv:
        code = main(_cli(srv, stories, tmp_path, "--limit", "1", "--max-retries", "0",
                         "--out", str(tmp_path / "v.csv")))
    assert code == 1
    assert "12 failed" in capsys.readouterr().out


def test_cli_subprocess_on_hanna(tmp_path):
    out = tmp_path / "hanna_verdicts.csv"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with StubServer(Script(answer=lambda payload, key: (
            "Based on my assessment, the better story for each dimension is:\n"
            "Plot: A\nCreativity: B\nDevelopment: Same\nLanguage Use: A\nOverall: A\n"))) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "storyeval", "pairwise", "judge", "--dataset", "hanna",
             "--systems", "Human,Llama-7b,Mistral-7b", "--limit", "2", "--backend", "openai",
             "--base-url", srv.base_url, "--model", "stub", "--cache",
             str(tmp_path / "c.sqlite"), "--out", str(out), "--no-progress",
             "--no-api-key"],
            check=False, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert sum(srv.state.received.values()) == 2 * 3 * 2
    v = pd.read_csv(out)
    assert len(v) == 2 * 3 * 2 * 5
    assert set(v["system_a"]) | set(v["system_b"]) == {"Human", "Llama-7b", "Mistral-7b"}
    # "Plot: A" names the story shown first: story_a in order AB, story_b in order BA
    plot = v[v["dimension"] == "Plot"]
    assert (plot["verdict"] == np.where(plot["order"] == "AB", "A", "B")).all()


def test_cli_hf_backend_tiny_model(tmp_path, capsys):
    """The transformers backend end to end on a tiny random GPT-2 built here (no download): its
    answers are noise, so they must come back as recorded failures (or, by chance, verdicts),
    each stored once in the cache."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    import torch

    corpus = ["Plot: A. Overall: B. Same story, better plot.", "A tale by S0 for prompt 1."] * 20
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.train_from_iterator(corpus, tokenizers.trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<unk>", "<eos>"],
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet()))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>",
                                                unk_token="<unk>")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=len(fast), n_positions=1024, n_embd=32, n_layer=1,
                                  n_head=2, bos_token_id=fast.eos_token_id,
                                  eos_token_id=fast.eos_token_id)
    model_dir = tmp_path / "tiny-judge"
    transformers.GPT2LMHeadModel(cfg).save_pretrained(model_dir)
    fast.save_pretrained(model_dir)
    template = tmp_path / "short.txt"
    template.write_text("$dimensions\n$answer_lines\nP: $prompt\nA: $story_a\nB: $story_b\n")
    dims = tmp_path / "dims.json"
    dims.write_text(json.dumps({"dimensions": [{"name": "Plot", "description": "the plot"}],
                                "overall": "Overall"}))
    stories = tmp_path / "stories.csv"
    _stories(2, ["S0", "S1", "S2"]).to_csv(stories, index=False)
    args = ["pairwise", "judge", "--backend", "hf", "--model", str(model_dir), "--device", "cpu",
            "--stories", str(stories), "--template", str(template), "--dimensions-file",
            str(dims), "--max-tokens", "6", "--temperature", "1.0", "--cache",
            str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "v.csv"), "--no-progress",
            "--json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["answered"] == 12 and summary["request_failures"] == 0
    assert summary["settings"]["judge"] == "tiny-judge"
    assert set(summary["statuses"]) <= {"ok", "unparsed"}
    assert sum(summary["statuses"].values()) == 12 * 2  # Plot + Overall per answer
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["sent"] == 0
    fails = pd.read_csv(tmp_path / "v.failures.csv")
    assert len(fails) == summary["statuses"].get("unparsed", 0)
    assert {"raw", "error", "status"} <= set(fails.columns)


def test_batch_files_round_trip_gives_the_online_verdicts(pairs, tmp_path):
    """--batch-out / --batch-in (issue 28): the same cache keys and verdicts as online."""
    with StubServer(Script(answer=scripted_judge)) as srv:
        online = judge_pairs(pairs, _backend(srv), cache=tmp_path / "on.sqlite")
    out = judge_pairs(pairs, OpenAIBackend("stub", base_url="http://127.0.0.1:9/v1",
                                           api_key_env=None, batch_out=tmp_path / "in.jsonl"),
                      cache=tmp_path / "off.sqlite")
    assert (out.judgments["status"] == "missing").all()
    results = []
    for line in (tmp_path / "in.jsonl").read_text().splitlines():
        req = json.loads(line)
        text = scripted_judge(req["body"], req["custom_id"])
        results.append({"custom_id": req["custom_id"], "error": None, "response": {
            "status_code": 200, "body": {"choices": [{"index": 0, "finish_reason": "stop",
                                                      "message": {"content": text}}]}}})
    (tmp_path / "out.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    back = judge_pairs(pairs, OpenAIBackend("stub", base_url="http://127.0.0.1:9/v1",
                                            api_key_env=None, batch_in=tmp_path / "out.jsonl"),
                       cache=tmp_path / "off.sqlite")
    # these batch results carry no usage: the verdicts are the same, the cost unknown
    usage = ["prompt_tokens", "completion_tokens", "usage_note", "wall_s"]
    pd.testing.assert_frame_equal(back.verdicts.drop(columns=usage),
                                  online.verdicts.drop(columns=usage))
    assert back.verdicts["prompt_tokens"].isna().all() and back.verdicts["wall_s"].isna().all()
    assert back.verdicts["usage_note"].str.contains("no usage").all()
    assert set(back.judgments["key"]) == set(online.judgments["key"])
