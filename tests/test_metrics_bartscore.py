"""BARTScore on a tiny random BART with a tokenizer trained on the fly (no download)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.exceptions import InputError
from storyeval.metrics import score
from storyeval.metrics.bartscore import BartScoreMetric
from storyeval.metrics.bertscore import TruncationWarning

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from _tiny_models import CORPUS, save_tiny_bart, tiny_bart, train_copy, train_tokenizer


@pytest.fixture(scope="module")
def tiny():
    tok = train_tokenizer()
    return tok, tiny_bart(tok, seed=0)


def _hand_loglik(model, tok, src, tgt):
    """Mean log p(y_t | y_<t, x) computed from the logits with NumPy: decoder inputs are the
    target shifted right after the decoder start token (BART's teacher forcing)."""
    x = tok(src, return_tensors="pt")
    y = tok(tgt, return_tensors="pt")["input_ids"]
    dec = torch.cat([torch.tensor([[model.config.decoder_start_token_id]]), y[:, :-1]], dim=1)
    with torch.no_grad():
        logits = model(input_ids=x["input_ids"], attention_mask=x["attention_mask"],
                       decoder_input_ids=dec).logits[0].double().numpy()
    logz = np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1)) + logits.max(1)
    ids = y[0].numpy()
    return float(np.mean(logits[np.arange(len(ids)), ids] - logz))


def test_loglik_equals_hand_computation_from_logits(tiny):
    tok, model = tiny
    m = BartScoreMetric.from_model(model, tok, label="tiny", batch_size=3)
    src = [CORPUS[0], CORPUS[1], "Short."]
    tgt = [CORPUS[2], "A much longer target sentence about dragons and the sea.", CORPUS[3]]
    got = m.loglik(src, tgt)  # batched: padding must not change the values
    want = [_hand_loglik(model, tok, s, t) for s, t in zip(src, tgt)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    # and the HF loss (mean token cross-entropy) of one unpadded pair is its negative
    x, y = tok(src[0], return_tensors="pt"), tok(tgt[0], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        loss = model(input_ids=x["input_ids"], labels=y).loss.item()
    assert got[0] == pytest.approx(-loss, abs=1e-5)
    assert np.all(got < 0)


def test_copied_target_beats_shuffled_after_training():
    tok = train_tokenizer()
    model = train_copy(tiny_bart(tok, seed=1), tok, steps=25, seed=1)
    m = BartScoreMetric.from_model(model, tok, label="tiny-copy", batch_size=5)
    rng = np.random.default_rng(0)
    shuffled = [" ".join(rng.permutation(t.split())) for t in CORPUS]
    copy = m.loglik(CORPUS, CORPUS)
    shuf = m.loglik(CORPUS, shuffled)
    assert np.all(copy > shuf)


def test_directions_and_combinations_through_score(tmp_path):
    folder = save_tiny_bart(tmp_path / "tiny-bart", seed=2)
    df = pd.DataFrame({
        "story_id": ["a", "b", "c"],
        "story": [CORPUS[0], CORPUS[1], CORPUS[2]],
        "reference": [CORPUS[3], None, CORPUS[4]],
        "prompt": [CORPUS[5], CORPUS[6], CORPUS[7]],
    })
    out, cat = score(df, "bartscore", options={"bartscore": {"model": str(folder)}},
                     cache=tmp_path / "cache", show_progress=False, return_catalogue=True)
    wide = out.pivot(index="story_id", columns="measure", values="value")
    name = "BARTScore {} (tiny-bart)".format
    assert set(wide.columns) == {name(d) for d in ("ref->story", "story->ref", "prompt->story",
                                                   "story->prompt", "ref<->story",
                                                   "prompt<->story")}
    tok = train_tokenizer()
    model = tiny_bart(tok, seed=2)  # the same weights as the saved folder
    assert wide.loc["a", name("ref->story")] == pytest.approx(
        _hand_loglik(model, tok, CORPUS[3], CORPUS[0]), abs=1e-6)
    assert wide.loc["c", name("story->prompt")] == pytest.approx(
        _hand_loglik(model, tok, CORPUS[2], CORPUS[7]), abs=1e-6)
    # F (Yuan et al.): the arithmetic mean of precision (r -> h) and recall (h -> r)
    assert wide.loc["a", name("ref<->story")] == pytest.approx(
        (_hand_loglik(model, tok, CORPUS[3], CORPUS[0])
         + _hand_loglik(model, tok, CORPUS[0], CORPUS[3])) / 2, abs=1e-6)
    np.testing.assert_allclose(
        wide[name("ref<->story")], (wide[name("ref->story")] + wide[name("story->ref")]) / 2)
    assert np.isnan(wide.loc["b", name("ref->story")])
    assert not np.isnan(wide.loc["b", name("prompt->story")])
    reasons = out.set_index(["story_id", "measure"])["reason"]
    assert reasons[("b", name("story->ref"))] == "no reference"
    cat = cat.set_index("measure")
    assert cat.loc[name("prompt->story"), "reference"] == "reference-free"
    assert cat.loc[name("ref->story"), "family"] == "model-based"
    # a second run is served by the cache
    assert len(list((tmp_path / "cache").glob("bartscore-*.sqlite"))) == 1
    again = score(df, "bartscore", options={"bartscore": {"model": str(folder)}},
                  cache=tmp_path / "cache", show_progress=False)
    pd.testing.assert_frame_equal(out, again)


def test_truncation_warns_with_count(tiny):
    tok, model = tiny
    m = BartScoreMetric.from_model(model, tok, label="tiny", max_length=8)
    with pytest.warns(TruncationWarning, match="2 text\\(s\\) longer than 8 tokens"):
        m.loglik([CORPUS[0], "Hi."], [CORPUS[1], "Yo."])
    assert m.n_truncated_ == 2


def test_default_model_error_is_clear_offline():
    with pytest.raises(InputError, match="could not load the seq2seq model "
                                         "'facebook/bart-large-cnn'.*--bartscore-model PATH"):
        BartScoreMetric(directions=["ref->story"]).loglik(["a"], ["b"])


def test_options_validation():
    with pytest.raises(InputError, match="directions"):
        BartScoreMetric(directions=["story->story"])
    m = BartScoreMetric()
    assert [x.name for x in m.measures(has_reference=False)] == [
        "BARTScore prompt->story (bart-large-cnn)", "BARTScore story->prompt (bart-large-cnn)",
        "BARTScore prompt<->story (bart-large-cnn)"]


def test_batching_and_repeated_pairs_do_not_change_the_values(tiny):
    tok, model = tiny
    src = [CORPUS[0], CORPUS[1], "Short.", CORPUS[0], CORPUS[4]]
    tgt = [CORPUS[2], CORPUS[3], CORPUS[5], CORPUS[2], "Tiny."]
    runs = [BartScoreMetric.from_model(model, tok, label="tiny", batch_size=bs).loglik(src, tgt)
            for bs in (1, 2, 5)]
    for got in runs[1:]:
        np.testing.assert_allclose(got, runs[0], rtol=0, atol=1e-6)
    assert runs[0][0] == runs[0][3]  # a repeated pair: computed once, the same value
    want = [_hand_loglik(model, tok, s, t) for s, t in zip(src, tgt)]
    np.testing.assert_allclose(runs[0], want, rtol=0, atol=1e-6)


def test_texts_longer_than_the_model_context_are_truncated_with_a_warning(tiny):
    # the tiny BART has 128 positions (and its tokenizer model_max_length 128): without
    # max_length, longer texts are cut to the model's limit, never an index error
    tok, model = tiny
    m = BartScoreMetric.from_model(model, tok, label="tiny")
    long = " ".join(CORPUS * 2)
    assert len(tok(long)["input_ids"]) > 128
    with pytest.warns(TruncationWarning, match="1 text\\(s\\) longer than 128 tokens.*"
                                               "starting 'The old sailor"):
        got = m.loglik([long, CORPUS[1]], [CORPUS[2], CORPUS[3]])
    assert np.isfinite(got).all() and m.n_truncated_ == 1
    cut = tok.decode(tok(long, max_length=128, truncation=True)["input_ids"],
                     skip_special_tokens=True)
    np.testing.assert_allclose(got[0], _hand_loglik(model, tok, cut, CORPUS[2]), atol=1e-5)


def test_dtype_option(tmp_path):
    folder = save_tiny_bart(tmp_path / "bart")
    base = BartScoreMetric(model=str(folder), device="cpu")
    half = BartScoreMetric(model=str(folder), device="cpu", dtype="bfloat16")
    assert BartScoreMetric(model=str(folder), dtype="float32").config() == base.config()
    assert half.config()["dtype"] == "bfloat16" and half.config_key() != base.config_key()
    assert half.measures()[0].variant.endswith("model in bfloat16")
    a, b = base.loglik(CORPUS[:4], CORPUS[4:8]), half.loglik(CORPUS[:4], CORPUS[4:8])
    assert 0 < np.abs(a - b).max() < 0.1
    with pytest.raises(InputError, match="dtype"):
        BartScoreMetric(dtype="int4")
