"""Generative reward models against a plain transformers loop on a random Llama built here."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from _tiny_models import CORPUS, save_tiny_llama  # noqa: E402

from storyeval.exceptions import InputError  # noqa: E402
from storyeval.pairwise.genrm import (  # noqa: E402
    ANSWER_CUE,
    DIRECT_TEMPLATE,
    REASONING_TEMPLATE,
    GenerativeRewardModel,
    genrm_accuracy,
)


@pytest.fixture(scope="module")
def lm_folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("genrm")
    return {"chat": save_tiny_llama(base / "lm-chat", head="causal", chat=True, seed=3),
            "plain": save_tiny_llama(base / "lm-plain", head="causal", chat=False, seed=4)}


def _pairs(n=4):
    return pd.DataFrame({"story_a": [f"x/{i}" for i in range(n)],
                         "story_b": [f"y/{i}" for i in range(n)],
                         "prompt_id": [i // 2 for i in range(n)],
                         "prompt": [CORPUS[i] for i in range(n)],
                         "text_a": [CORPUS[i + 1] * (1 + i % 2) for i in range(n)],
                         "text_b": [CORPUS[i + 4] for i in range(n)]})


@functools.lru_cache(maxsize=4)
def _load(folder):
    return (transformers.AutoTokenizer.from_pretrained(folder),
            transformers.AutoModelForCausalLM.from_pretrained(folder).eval())


def _loop(folder, prompt, first, second, *, reasoning, choices, max_new=6):
    """One request at a time, no padding; model.generate for the reasoning."""
    tok, model = _load(folder)
    body = (REASONING_TEMPLATE if reasoning else DIRECT_TEMPLATE).format(
        prompt=prompt, first=first, second=second)
    if tok.chat_template:
        text = tok.apply_chat_template([{"role": "user", "content": body}], tokenize=False,
                                       add_generation_prompt=True)
        special = False
    else:
        text, special = body + "\n", True
    enc = tok(text, add_special_tokens=special, return_tensors="pt")
    with torch.no_grad():
        if reasoning:
            gen = model.generate(**enc, max_new_tokens=max_new, do_sample=False,
                                 pad_token_id=tok.pad_token_id)[0, enc["input_ids"].shape[1]:]
            gen = gen.tolist()
            if tok.eos_token_id in gen:
                gen = gen[:gen.index(tok.eos_token_id)]
            reason = tok.decode(gen, skip_special_tokens=True).split("Answer:")[0].rstrip()
            enc = tok(text + reason + ANSWER_CUE, add_special_tokens=special,
                      return_tensors="pt")
        logits = model(**enc).logits[0, -1].double()
    logp = torch.log_softmax(logits, -1)
    ids = [tok(c, add_special_tokens=False)["input_ids"][0] for c in choices]
    return logp[ids].numpy()


@pytest.mark.parametrize("kind,reasoning", [("chat", False), ("plain", False), ("chat", True)])
def test_genrm_equals_a_plain_loop(lm_folders, kind, reasoning):
    folder = lm_folders[kind]
    choices = ("A", "B")
    g = GenerativeRewardModel(model=str(folder), device="cpu", batch_size=3,
                              reasoning=reasoning, max_new_tokens=6, choices=choices)
    pairs = _pairs()
    v = g.judge(pairs)
    assert len(v) == 8 and v["order"].tolist() == ["AB"] * 4 + ["BA"] * 4
    firsts = pairs["text_a"].tolist() + pairs["text_b"].tolist()
    seconds = pairs["text_b"].tolist() + pairs["text_a"].tolist()
    expected = np.array([_loop(folder, p, f, s, reasoning=reasoning, choices=choices)
                         for p, f, s in zip(pairs["prompt"].tolist() * 2, firsts, seconds)])
    got = v[["logp_first", "logp_second"]].to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    p_first = np.exp(expected[:, 0]) / np.exp(expected).sum(axis=1)
    p_a = np.concatenate([p_first[:4], 1 - p_first[4:]])
    np.testing.assert_allclose(v["p_story_a_pair"].to_numpy()[:4],
                               (p_a[:4] + p_a[4:]) / 2, atol=1e-6)
    assert set(v["verdict"]) <= {"A", "B", "same"}
    if reasoning:
        assert (v["reasoning"].str.len() >= 0).all()


def test_genrm_swapping_the_stories_mirrors_the_probability(lm_folders):
    g = GenerativeRewardModel(model=str(lm_folders["chat"]), device="cpu", choices=("A", "B"))
    pairs = _pairs(2)
    swapped = pairs.rename(columns={"story_a": "story_b", "story_b": "story_a",
                                    "text_a": "text_b", "text_b": "text_a"})
    p = g.judge(pairs)["p_story_a_pair"].to_numpy()[:2]
    q = g.judge(swapped)["p_story_a_pair"].to_numpy()[:2]
    np.testing.assert_allclose(p, 1 - q, atol=1e-12)


def test_genrm_accuracy_counts_pairs(lm_folders):
    g = GenerativeRewardModel(model=str(lm_folders["chat"]), device="cpu", choices=("A", "B"))
    v = g.judge(_pairs(4))
    p = v["p_story_a_pair"].to_numpy()[:4]
    winners = np.array(["a", "b", "a", "b"])
    res = genrm_accuracy(v, winners, interval="auto")
    expected = np.mean(np.where(winners == "a", p > 0.5, p < 0.5))
    assert res.statistic == pytest.approx(expected)
    assert res.n == 4 and res.n_clusters == 2


def test_genrm_multi_token_choice_is_refused(lm_folders):
    g = GenerativeRewardModel(model=str(lm_folders["chat"]), device="cpu",
                              choices=("story one", "B"))
    with pytest.raises(InputError, match="tokens for this tokenizer"):
        g.judge(_pairs(1))


def test_genrm_template_needs_placeholders():
    with pytest.raises(InputError, match="placeholder"):
        GenerativeRewardModel(model="m", template="{prompt} {first}")


def test_cli_genrm_on_a_litbench_pair_file(lm_folders, tmp_path, capsys):
    import json

    from storyeval.cli import main

    pairs = pd.DataFrame({"prompt": [CORPUS[i] for i in range(4)],
                          "chosen_story": [CORPUS[i + 1] for i in range(4)],
                          "rejected_story": [CORPUS[i + 5] for i in range(4)]})
    src = tmp_path / "pairs.csv"
    pairs.to_csv(src, index=False)
    out = tmp_path / "verdicts.csv"
    assert main(["pairwise", "genrm", "--pairs", str(src), "--model", str(lm_folders["chat"]),
                 "--device", "cpu", "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    v = pd.read_csv(out)
    assert len(v) == 8 and summary["pairs"] == 4
    p = v["p_story_a_pair"].to_numpy()[:4]  # story_a is the chosen story in both orders
    assert summary["accuracy"] == pytest.approx(np.mean(p > 0.5))
    assert v["story_a"].iloc[0] == "chosen-0/0"
    # the verdict file is a verdict table the other actions read
    from storyeval.pairwise import read_verdicts

    assert len(read_verdicts(out)) == 8
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt,chosen_story\nx,y\n")
    assert main(["pairwise", "genrm", "--pairs", str(bad), "--model", "m",
                 "--out", str(tmp_path / "v2.csv")]) == 2
