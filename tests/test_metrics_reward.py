"""Bradley-Terry reward models (``rm:PATH``) against a plain transformers loop on a random
Llama classifier built here (no hub access)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from _tiny_models import CORPUS, save_tiny_llama  # noqa: E402

from storyeval.exceptions import InputError  # noqa: E402
from storyeval.metrics import get_metric, resolve_metrics, score  # noqa: E402
from storyeval.metrics.reward import RewardModelMetric  # noqa: E402


@pytest.fixture(scope="module")
def rm_folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("rm")
    return {"chat": save_tiny_llama(base / "rm-chat", chat=True, seed=1),
            "plain": save_tiny_llama(base / "rm-plain", chat=False, seed=2)}


def _stories():
    # different lengths, so batches pad; one story without a prompt
    prompts = ["Write about the sea.", "A dragon wakes.", None, "A letter arrives.",
               "The robot paints."]
    return pd.DataFrame({"story_id": [f"S/{i}" for i in range(5)],
                         "prompt": prompts,
                         "story": [CORPUS[i] * (1 + i % 3) for i in range(5)]})


def _plain_loop(folder, prompts, stories):
    """One story at a time, no padding: what a user would write with transformers alone."""
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    out = []
    for p, s in zip(prompts, stories):
        p = None if pd.isna(p) else p  # pandas may hold a missing prompt as NaN
        if tok.chat_template:
            msgs = ([] if p is None else [{"role": "user", "content": p}]) + [
                {"role": "assistant", "content": s}]
            enc = tok(tok.apply_chat_template(msgs, tokenize=False), add_special_tokens=False,
                      return_tensors="pt")
        else:
            enc = tok(s if p is None else p + "\n\n" + s, return_tensors="pt")
        with torch.no_grad():
            out.append(float(model(**enc).logits[0, 0]))
    return np.array(out)


@pytest.mark.parametrize("kind", ["chat", "plain"])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_rm_equals_a_plain_loop(rm_folders, kind, batch_size):
    folder = rm_folders[kind]
    df = _stories()
    table = score(df, [RewardModelMetric(model=str(folder), device="cpu",
                                         batch_size=batch_size)], show_progress=False)
    expected = _plain_loop(folder, df["prompt"].tolist(), df["story"].tolist())
    assert table["measure"].unique().tolist() == [f"RM (rm-{kind})"]
    np.testing.assert_allclose(table["value"].to_numpy(), expected, rtol=1e-5, atol=1e-5)
    assert np.ptp(expected) > 1e-3  # the stories get different rewards: the check can fail


def test_rm_prompt_changes_the_score_and_the_cache_key(rm_folders, tmp_path):
    folder = str(rm_folders["chat"])
    df = _stories().iloc[:2].copy()
    a = score(df, f"rm:{folder}", cache=tmp_path / "c", show_progress=False)
    df2 = df.assign(prompt=["Something else entirely.", "Another prompt."])
    b = score(df2, f"rm:{folder}", cache=tmp_path / "c", show_progress=False)
    assert not np.allclose(a["value"], b["value"])
    np.testing.assert_allclose(b["value"], _plain_loop(folder, df2["prompt"], df2["story"]),
                               rtol=1e-5, atol=1e-5)


def test_rm_registry_keeps_the_path_case(tmp_path):
    assert resolve_metrics("rm:/Some/Path,bleu") == ["rm:/Some/Path", "bleu"]
    assert get_metric("rm:/Some/Path").model == "/Some/Path"
    with pytest.raises(InputError, match="reward model's folder"):
        get_metric("rm:")


def test_rm_refuses_a_classifier_with_two_labels(tmp_path):
    folder = tmp_path / "two"
    save_tiny_llama(folder, chat=False)
    cfg = transformers.AutoConfig.from_pretrained(folder)
    cfg.num_labels = 2
    model = transformers.AutoModelForSequenceClassification.from_config(cfg)
    model.save_pretrained(folder)
    with pytest.raises(InputError, match="2 outputs"):
        RewardModelMetric(model=str(folder), device="cpu").rewards([None], ["a story"])


def test_rm_missing_folder_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="could not load"):
        RewardModelMetric(model=str(tmp_path / "nope"), device="cpu").rewards([None], ["x"])


def test_cli_score_rm(rm_folders, tmp_path):
    from storyeval.cli import main

    df = _stories()
    src = tmp_path / "stories.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "scores.csv"
    folder = rm_folders["chat"]
    assert main(["score", "--input", str(src), "--metrics", f"rm:{folder}", "--device", "cpu",
                 "--batch-size", "2", "--out", str(out), "--no-progress"]) == 0
    got = pd.read_csv(out)
    np.testing.assert_allclose(got["value"], _plain_loop(folder, df["prompt"].tolist(),
                                                         df["story"].tolist()),
                               rtol=1e-5, atol=1e-5)
