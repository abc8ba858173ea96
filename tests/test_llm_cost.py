"""Tokens, wall time and cost of `rate` and `pairwise judge` runs (storyeval.llm.cost), against
the local OpenAI-compatible test server on 127.0.0.1 (tests/_openai_stub_server.py) scripted
to report a usage that depends on the request (so sums are checked by hand), no usage at all,
and batch results."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.llm import OpenAIBackend, rate
from storyeval.llm.cost import NO_ANSWER, NO_USAGE, Prices, cost_table, parse_prices


def stories(n: int = 4) -> pd.DataFrame:
    return pd.DataFrame({
        "story_id": [f"S{i % 2}/{i}" for i in range(n)],
        "system": [f"S{i % 2}" for i in range(n)],
        "prompt_id": list(range(n)),
        "prompt": [f"Write about door {i}." for i in range(n)],
        "story": [f"Story {i}: " + "word " * (5 * i + 3) for i in range(n)],
    })


def usage_by_length(payload: dict) -> dict:
    """A usage that depends on the request: prompt tokens = characters of the messages // 4,
    completion tokens = 7 + seed."""
    chars = sum(len(m["content"]) for m in payload["messages"])
    return {"prompt_tokens": chars // 4, "completion_tokens": 7 + int(payload.get("seed", 0))}


def backend(srv, **kw) -> OpenAIBackend:
    return OpenAIBackend("stub", base_url=srv.base_url, api_key_env=None, concurrency=4,
                         backoff_base=0.01, timeout=5.0, random_state=0, **kw)


def test_rate_records_usage_and_the_cost_equals_the_hand_sum(tmp_path):
    st = stories(4)
    with StubServer(Script(usage_fn=usage_by_length)) as srv:
        run = rate(st, backend(srv), eval_prompts="1", criteria="RE,CH", tries=2,
                   cache=tmp_path / "c.sqlite")
        payloads = list(srv.state.payloads)
    r = run.ratings
    assert {"prompt_tokens", "completion_tokens", "usage_note", "wall_s"} <= set(r.columns)
    assert (r["usage_note"] == "").all() and (r["wall_s"] > 0).all()
    # by hand from what the server received: 4 stories x 2 criteria x 2 tries = 16 requests
    assert len(payloads) == 16
    want_pt = sum(usage_by_length(p)["prompt_tokens"] for p in payloads)
    want_ct = sum(usage_by_length(p)["completion_tokens"] for p in payloads)
    assert r["prompt_tokens"].sum() == want_pt and r["completion_tokens"].sum() == want_ct
    assert set(r["completion_tokens"]) == {7.0, 8.0}  # seed 0 and 1 for the two tries
    prices = Prices(prompt=0.5, completion=1.5)
    table = cost_table(r, unit=["story_id"], by="model", prices=prices)
    row = table.iloc[0]
    want = (want_pt * 0.5 + want_ct * 1.5) / 1e6
    assert row["n_items"] == 4 and row["n_judgments"] == 16 and row["n_with_usage"] == 16
    assert math.isclose(row["cost"], want, rel_tol=1e-12)
    assert math.isclose(row["cost_per_item"], want / 4, rel_tol=1e-12)
    assert math.isclose(row["cost_per_1000_judgments"], 1000 * want / 16, rel_tol=1e-12)
    assert math.isclose(row["wall_s_total"], r["wall_s"].sum(), rel_tol=1e-12)
    assert row["note"] == ""


def test_no_usage_field_is_nan_with_a_reason_and_the_cost_extrapolates(tmp_path):
    # the server omits usage for the requests of story 0 only
    def partial(payload):
        return None if "Story 0:" in payload["messages"][-1]["content"] else \
            {"prompt_tokens": 100, "completion_tokens": 10}

    with StubServer(Script(usage_fn=partial)) as srv:
        run = rate(stories(2), backend(srv), eval_prompts="1", criteria="RE", tries=1,
                   cache=tmp_path / "c.sqlite")
    r = run.ratings.set_index("story_id")
    assert math.isnan(r.loc["S0/0", "prompt_tokens"]) and r.loc["S0/0", "usage_note"] == NO_USAGE
    assert r.loc["S1/1", "prompt_tokens"] == 100 and r.loc["S1/1", "usage_note"] == ""
    row = cost_table(run.ratings, unit=["story_id"], by="model",
                     prices=Prices(1.0, 2.0)).iloc[0]
    assert row["n_answered"] == 2 and row["n_with_usage"] == 1
    assert math.isclose(row["cost"], 120 / 1e6)  # the one answer with usage
    assert math.isclose(row["cost_per_item"], 120 / 1e6)  # its mean x 2 answers / 2 stories
    assert "1 of 2 answers without usage" in row["note"]


def test_failed_requests_have_no_usage_and_cost_nothing(tmp_path):
    with StubServer(Script(status_override=400)) as srv:
        run = rate(stories(2), backend(srv, max_retries=0), eval_prompts="1", criteria="RE",
                   tries=1, cache=tmp_path / "c.sqlite")
    r = run.ratings
    assert (r["status"] == "error").all() and (r["usage_note"] == NO_ANSWER).all()
    assert r[["prompt_tokens", "completion_tokens", "wall_s"]].isna().all().all()
    row = cost_table(r, unit=["story_id"], by="model", prices=Prices(1, 1)).iloc[0]
    assert row["n_judgments"] == 2 and row["n_answered"] == 0 and math.isnan(row["cost"])
    assert "no answer" in row["note"]


def test_rows_sharing_a_request_are_counted_once():
    frame = pd.DataFrame({
        "key": ["k1", "k1", "k2", None], "pair": ["p", "p", "q", "q"], "judge": "J",
        "prompt_tokens": [10.0, 10.0, 20.0, np.nan], "completion_tokens": [1.0, 1.0, 2.0, np.nan],
        "usage_note": ["", "", "", NO_ANSWER], "wall_s": [0.5, 0.5, 1.5, np.nan]})
    row = cost_table(frame, unit=["pair"], by="judge", prices=Prices(1e6, 1e6)).iloc[0]
    # k1 (two dimensions of one answer) once: 11 + 22 = 33 per the 1e6-token price of 1e6
    assert row["n_judgments"] == 2 and row["prompt_tokens"] == 30
    assert row["cost"] == 33 and row["cost_per_1000_judgments"] == 16500
    assert row["wall_s_total"] == 2.0 and row["wall_s_median"] == 1.0
    # without wall_s (a table read back from a file) the wall columns are NaN, not an error
    row = cost_table(frame.drop(columns="wall_s"), unit=["pair"], by="judge").iloc[0]
    assert row["n_with_wall"] == 0 and math.isnan(row["wall_s_total"]) and math.isnan(row["cost"])


@pytest.mark.parametrize("spec, message", [
    ("prompt=0.5", "no 'completion' price"),
    ("prompt=x,completion=1", "is not a number"),
    ("prompt=-1,completion=1", "must be a finite number >= 0"),
    ("prompt=1,completion=1,prompt=2", "given twice"),
    ("tokens=1,completion=1", "cannot read"),
    ("prompt=inf,completion=1", "must be a finite number"),
])
def test_bad_price_specs_are_one_line_errors(spec, message):
    with pytest.raises(InputError, match=message):
        parse_prices(spec)


def test_price_files(tmp_path):
    f = tmp_path / "p.json"
    f.write_text(json.dumps({"stub": {"prompt": 2, "completion": 4, "currency": "EUR"},
                             "*": {"prompt": 1, "completion": 1}}))
    table = parse_prices(str(f))
    assert table["stub"] == Prices(2, 4, "EUR") and table["*"] == Prices(1, 1)
    f.write_text(json.dumps({"prompt": 3, "completion": 5}))
    assert parse_prices(f) == Prices(3, 5)
    for text, message in (("", "the file is empty"), ('{"prompt": 1,', "not JSON"),
                          ('{"prompt": 1, "completion": "a"}', "finite number"),
                          ('{"m": {"prompt": 1}}', "entry 'm'.*no 'completion'"),
                          ('[1, 2]', "expected a price object"),
                          ('{"prompt": 1, "completion": 1, "extra": 2}', "unknown field")):
        f.write_text(text)
        with pytest.raises(InputError, match=message):
            parse_prices(f)
    with pytest.raises(InputError, match="neither prompt=X"):
        parse_prices(tmp_path / "missing.json")
    frame = pd.DataFrame({"key": ["a"], "s": ["x"], "judge": ["other"], "prompt_tokens": [1.0],
                          "completion_tokens": [1.0], "usage_note": [""]})
    with pytest.raises(InputError, match="no price for 'other'"):
        cost_table(frame, unit=["s"], by="judge", prices={"stub": Prices(1, 1)})


def _rate_cli(srv, src, tmp_path, *extra):
    return ["rate", "--model", "stub", "--base-url", srv.base_url, "--stories", str(src),
            "--eval-prompts", "1", "--criteria", "RE", "--tries", "1", "--no-api-key",
            "--no-progress", "--cache", str(tmp_path / "c.sqlite"), *extra]


def test_cli_rate_prints_and_writes_the_cost(tmp_path, capsys):
    src = tmp_path / "s.csv"
    stories(4).to_csv(src, index=False)
    with StubServer(Script(usage={"prompt_tokens": 1000, "completion_tokens": 100})) as srv:
        assert main(_rate_cli(srv, src, tmp_path, "--price", "prompt=0.5,completion=1.5",
                              "--out", str(tmp_path / "out"))) == 0
        printed = " ".join(capsys.readouterr().out.split())  # lines wrapped at 120 columns
        # 4 requests x (1000 x 0.5 + 100 x 1.5) / 1e6 = 0.0026
        assert "usage of stub: 4 of 4 judgments answered; prompt tokens 4,000 (1000.0 per " \
               "judgment), completion tokens 400 (100.0)" in printed
        assert "0.0026 USD in all, 0.00065 per story, 0.65 per 1,000 judgments" in printed
        cost = pd.read_csv(tmp_path / "out" / "cost.csv")
        assert cost["cost"].tolist() == pytest.approx([0.0026], rel=1e-12)
        assert "wall_s_total" not in cost.columns  # the file is the same bytes in every run
        ratings = pd.read_csv(tmp_path / "out" / "ratings.csv")
        assert ratings["prompt_tokens"].tolist() == [1000] * 4 and "wall_s" not in ratings
        settings = json.loads((tmp_path / "out" / "settings.json").read_text())
        assert settings["cost"][0]["wall_s_per_judgment"] > 0
        # a bad price is refused before anything is sent
        n = sum(srv.state.received.values())
        assert main(_rate_cli(srv, src, tmp_path, "--price", "prompt=1", "--limit", "1")) == 2
        assert "no 'completion' price" in capsys.readouterr().err
        assert sum(srv.state.received.values()) == n


def test_cli_rate_batch_results_have_tokens_but_no_wall_time(tmp_path, capsys):
    src = tmp_path / "s.csv"
    stories(3).to_csv(src, index=False)
    common = ["rate", "--model", "stub", "--stories", str(src), "--eval-prompts", "1",
              "--criteria", "RE", "--tries", "1", "--no-api-key", "--no-progress",
              "--cache", str(tmp_path / "c.sqlite")]
    assert main([*common, "--batch-out", str(tmp_path / "in.jsonl")]) == 0
    out = []
    for i, line in enumerate(map(json.loads, (tmp_path / "in.jsonl").read_text().splitlines())):
        body = {"id": f"x{i}", "model": "stub", "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "3 - fine."}}]}
        if i:  # the first result carries no usage
            body["usage"] = {"prompt_tokens": 50 + i, "completion_tokens": 4}
        out.append({"custom_id": line["custom_id"], "response": {"status_code": 200,
                                                                 "body": body}})
    (tmp_path / "out.jsonl").write_text("".join(json.dumps(o) + "\n" for o in out))
    capsys.readouterr()
    assert main([*common, "--batch-in", str(tmp_path / "out.jsonl"), "--json",
                 "--price", "prompt=1,completion=1"]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"][0]
    assert cost["n_answered"] == 3 and cost["n_with_usage"] == 2 and cost["n_with_wall"] == 0
    assert cost["prompt_tokens"] == 51 + 52 and cost["cost"] == pytest.approx(111 / 1e6)
    assert "1 of 3 answers without usage" in cost["note"]


def test_cli_pairwise_judge_writes_a_cost_file(tmp_path, capsys):
    st = stories(4).assign(prompt_id=[0, 0, 1, 1])
    src = tmp_path / "s.csv"
    st.to_csv(src, index=False)
    answer = "Assessment.\nPlot: A\nCreativity: B\nDevelopment: A\nLanguage Use: A\nOverall: A\n"
    price = tmp_path / "price.json"
    price.write_text(json.dumps({"*": {"prompt": 2, "completion": 10}}))
    with StubServer(Script(answer=lambda p, k: answer,
                           usage={"prompt_tokens": 300, "completion_tokens": 30})) as srv:
        argv = ["pairwise", "judge", "--model", "stub", "--base-url", srv.base_url,
                "--stories", str(src), "--cache", str(tmp_path / "c.sqlite"), "--no-api-key",
                "--no-progress", "--out", str(tmp_path / "v.csv"), "--price", str(price)]
        assert main(argv) == 0
    printed = " ".join(capsys.readouterr().out.split())
    # 2 pairs x 2 orders = 4 requests of 300 x 2 + 30 x 10 = 900 per 1e6: 0.0036 in all
    assert "0.0036 USD in all, 0.0018 per pair, 0.9 per 1,000 judgments" in printed
    cost = pd.read_csv(tmp_path / "v.cost.csv")
    assert cost[["n_items", "n_judgments", "prompt_tokens"]].values.tolist() == [[2, 4, 1200]]
    verdicts = pd.read_csv(tmp_path / "v.csv")
    assert len(verdicts) == 4 * 5 and (verdicts["prompt_tokens"] == 300).all()
    assert "wall_s" not in verdicts.columns


def test_merged_rate_shards_are_priced_as_one_run(tmp_path, capsys):
    src = tmp_path / "s.csv"
    stories(6).to_csv(src, index=False)
    price = ["--price", "prompt=3,completion=7"]
    with StubServer(Script(usage_fn=usage_by_length)) as srv:
        def argv(cache, *extra):
            return ["rate", "--model", "stub", "--base-url", srv.base_url, "--stories",
                    str(src), "--eval-prompts", "1", "--criteria", "RE", "--tries", "1",
                    "--no-api-key", "--no-progress", "--cache", str(tmp_path / cache), *price,
                    *extra]
        assert main(argv("one.sqlite", "--out", str(tmp_path / "one"))) == 0
        for k in (1, 2):
            assert main(argv(f"c{k}.sqlite", "--shard", f"{k}/2", "--out",
                             str(tmp_path / f"part{k}"))) == 0
    assert main(["merge", str(tmp_path / "part1"), str(tmp_path / "part2"), "--out",
                 str(tmp_path / "merged")]) == 0
    one = (tmp_path / "one" / "cost.csv").read_bytes()
    assert (tmp_path / "merged" / "cost.csv").read_bytes() == one
    assert pd.read_csv(tmp_path / "one" / "cost.csv")["price_prompt"].tolist() == [3.0]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 1000), repeat=st.integers(1, 4))
def test_cost_is_a_function_of_the_requests(seed, repeat):
    rng = np.random.default_rng(seed)
    n = 12
    frame = pd.DataFrame({"key": [f"k{i}" for i in range(n)], "item": rng.integers(0, 5, n),
                          "judge": "J", "prompt_tokens": rng.integers(1, 500, n).astype(float),
                          "completion_tokens": rng.integers(1, 50, n).astype(float),
                          "usage_note": ""})
    base = cost_table(frame, unit=["item"], by="judge", prices=Prices(1.5, 4.0))
    # reordered rows, each request's row repeated (dimensions sharing an answer): the same
    shuffled = frame.iloc[rng.permutation(n)].loc[lambda d: d.index.repeat(repeat)]
    again = cost_table(shuffled, unit=["item"], by="judge", prices=Prices(1.5, 4.0))
    pd.testing.assert_frame_equal(again, base, check_exact=False, rtol=1e-12)
    # doubling both prices doubles every cost
    double = cost_table(frame, unit=["item"], by="judge", prices=Prices(3.0, 8.0))
    assert double["cost"].iloc[0] == pytest.approx(2 * base["cost"].iloc[0])


def test_dry_run_prints_the_most_the_requests_can_cost(tmp_path, capsys):
    from storyeval.llm import plan

    src = tmp_path / "s.csv"
    stories(3).to_csv(src, index=False)
    with StubServer(Script()) as srv:
        assert main(_rate_cli(srv, src, tmp_path, "--dry-run", "--max-tokens", "50",
                              "--price", "prompt=2,completion=8")) == 0
        printed = " ".join(capsys.readouterr().out.split())
        p = plan(stories(3), backend(srv), eval_prompts="1", criteria="RE", tries=1)
    most = (p.est_prompt_tokens * 2 + 3 * 50 * 8) / 1e6
    assert f"at most {most:.4g} USD" in printed and srv.state.received == {}
