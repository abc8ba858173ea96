"""The transformers backend on a tiny random GPT-2 (built here; no hub access).

Its answers are noise: the test checks that every answer is stored and parsed, and that
failures are counted, not hidden or imputed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.llm import HFBackend, SamplingParams, failure_rates, rate, to_scores
from storyeval.llm.extract import STATUSES

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    corpus = ["Rate the story on a scale from 1 to 5. Rating: 3 because 1 2 4 5 the story.",
              "Prompt: a door. Story: the door opened and nothing happened at all."] * 20
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<unk>", "<eos>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>",
                                                unk_token="<unk>")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=len(fast), n_positions=512, n_embd=32, n_layer=2,
                                  n_head=2, bos_token_id=fast.eos_token_id,
                                  eos_token_id=fast.eos_token_id)
    model = transformers.GPT2LMHeadModel(cfg)
    path = tmp_path_factory.mktemp("tiny-gpt2")
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def _stories(n=3):
    return pd.DataFrame({"story_id": [f"S/{i}" for i in range(n)], "system": "S",
                         "prompt_id": range(n), "prompt": [f"a door {i}" for i in range(n)],
                         "story": [f"the door {i} opened." for i in range(n)]})


def test_hf_backend_counts_failures(tiny_model, tmp_path):
    b = HFBackend(str(tiny_model), batch_size=4, device="cpu")
    sp = SamplingParams(temperature=1.0, max_tokens=6, seed=0)
    run = rate(_stories(3), b, eval_prompts="1,2", criteria="RE,SU", tries=2, sampling=sp,
               cache=tmp_path / "c.sqlite")
    r = run.ratings
    assert len(r) == 3 * 2 * 2 * 2 and run.n_answered == 24
    assert r["model"].unique().tolist() == [tiny_model.name]  # folder name as the label
    assert set(r["status"]) <= set(STATUSES)
    ok = r["status"] == "ok"
    assert r.loc[ok, "rating"].between(1, 5).all() and r.loc[~ok, "rating"].isna().all()
    f = failure_rates(r)
    assert f["n"].sum() == 24
    assert (f["n_ok"] + f[[c for c in f.columns if c.startswith("n_") and c != "n_ok"]]
            .sum(axis=1) == f["n"]).all()
    np.testing.assert_allclose(f["failure_rate"], 1 - f["n_ok"] / f["n"])
    # nothing imputed: a story's score is NaN exactly when none of its tries parsed
    s = to_scores(r, include_avg=False)
    assert ((s["n_ok"] == 0) == s["value"].isna()).all()
    assert (s.loc[s["n_ok"] == 0, "reason"] != "").all()
    # the cache replays without generating
    again = rate(_stories(3), b, eval_prompts="1,2", criteria="RE,SU", tries=2, sampling=sp,
                 cache=tmp_path / "c.sqlite")
    assert again.n_sent == 0
    pd.testing.assert_frame_equal(again.ratings, r)


def test_hf_backend_uses_the_chat_template(tiny_model):
    tok = transformers.AutoTokenizer.from_pretrained(tiny_model)
    tok.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
                         "{% if add_generation_prompt %}<assistant>{% endif %}")
    b = HFBackend(str(tiny_model), tokenizer_obj=tok, device="cpu")
    msgs = ({"role": "user", "content": "Rate it."},)
    assert b._prompt_text(msgs) == "<user>Rate it.<assistant>"
    got = []
    from storyeval.llm.backends import Request

    b.run([Request("k", msgs, SamplingParams(temperature=0.0, max_tokens=3), None, 0)],
          lambda req, ans: got.append(ans), lambda req, msg: None)
    assert len(got) == 1 and got[0].completion_tokens <= 3 and got[0].finish_reason in ("stop", "length")


@pytest.fixture(scope="module")
def short_context_model(tiny_model, tmp_path_factory):
    """The tiny GPT-2 with a context of 64 positions (shorter than any HANNA Eval-Prompt)."""
    tok = transformers.AutoTokenizer.from_pretrained(tiny_model)
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=len(tok), n_positions=64, n_embd=32, n_layer=2,
                                  n_head=2, bos_token_id=tok.eos_token_id,
                                  eos_token_id=tok.eos_token_id)
    path = tmp_path_factory.mktemp("tiny-gpt2-64")
    transformers.GPT2LMHeadModel(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_prompts_longer_than_the_context_fail_by_the_stated_rule(short_context_model):
    from storyeval.llm.backends import Request

    b = HFBackend(str(short_context_model), batch_size=2, device="cpu")
    sp = SamplingParams(temperature=0.0, max_tokens=4)
    short = ({"role": "user", "content": "Rate the story."},)
    long = ({"role": "user", "content": "the door opened and nothing happened. " * 20},)
    reqs = [Request(k, m, sp, None, 0) for k, m in (("a", short), ("b", long), ("c", short))]
    got, failed = {}, {}
    b.run(reqs, lambda r, a: got.__setitem__(r.key, a), lambda r, m: failed.__setitem__(r.key, m))
    assert b.context_length() == 64
    assert set(failed) == {"b"} and "+ max_tokens 4 > its context of 64 positions" in failed["b"]
    n = int(failed["b"].split(" prompt tokens")[0].rsplit(" ", 1)[1])
    assert n + 4 > 64
    # the prompts that fit are generated (or fail as empty answers), never a traceback
    assert {"a", "c"} <= set(got) | set(failed) and "b" not in got


def test_rate_and_pairwise_judge_record_too_long_prompts_as_errors(short_context_model):
    from storyeval.pairwise import judge_pairs, make_pairs

    b = HFBackend(str(short_context_model), batch_size=4, device="cpu")
    sp = SamplingParams(temperature=0.0, max_tokens=4)
    run = rate(_stories(2), b, eval_prompts="1", criteria="RE", tries=1, sampling=sp)
    r = run.ratings
    assert (r["status"] == "error").all() and r["rating"].isna().all()
    assert r["error"].str.contains("context of 64 positions").all()
    assert run.n_request_failures == len(r)
    stories = _stories(2).assign(system=["S", "T"], prompt_id=[0, 0],
                                 story_id=["S/0", "T/0"])
    jr = judge_pairs(make_pairs(stories), b, sampling=sp, both_orders=False)
    j = jr.judgments
    assert (j["status"] == "error").all()
    assert j["error"].str.contains("context of 64 positions").all()
