"""BERTScore wrapper against bert-score called directly (offline MiniLM backbone)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from _tiny_models import CORPUS as TINY_CORPUS
from _tiny_models import save_tiny_roberta

from storyeval.exceptions import InputError
from storyeval.metrics import score
from storyeval.metrics.bertscore import (
    BertScoreMetric,
    TruncationWarning,
    default_model_path,
    read_baseline,
    write_baseline,
)

bert_score = pytest.importorskip("bert_score")

CANDS = ["The cat sat on the mat.", "A man walked his dog in the park at night.",
         "Nobody came to the party, so she ate the cake alone."]
REFS = ["A cat was sitting on a mat.", "At night, the dog was walked by a man.",
        "She had a party; no one came and she ate all the cake."]
LONG_A = " ".join(["The old sailor told stories about the sea and the whales he had seen."] * 45)
LONG_B = " ".join(["A young girl listened to the stories every night by the warm fire."] * 42)


@pytest.fixture(scope="module")
def reference_scorer():
    """bert-score's own scorer on the same backbone (loaded once per module)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bert_score.BERTScorer(model_type=default_model_path(), num_layers=6, lang="en")


@pytest.fixture(scope="module")
def chunked():
    return BertScoreMetric()


@pytest.fixture(scope="module")
def truncating():
    return BertScoreMetric(long_texts="truncate")


def _direct(scorer, cands, refs):
    p, r, f = scorer.score(cands, refs)
    return np.column_stack([p.numpy(), r.numpy(), f.numpy()])


def test_short_texts_equal_bert_score_in_both_modes(reference_scorer, chunked, truncating):
    # source: bert_score.BERTScorer(model_type=<MiniLM path>, num_layers=6).score(cands, refs)
    want = _direct(reference_scorer, CANDS, REFS)
    np.testing.assert_allclose(chunked.score_pairs(CANDS, REFS), want, atol=1e-6)
    np.testing.assert_allclose(truncating.score_pairs(CANDS, REFS), want, atol=1e-6)


def test_truncation_equals_bert_score_with_a_warning_and_count(reference_scorer, truncating):
    # bert-score silently cuts at 512 word pieces: truncate mode reproduces it and says so
    want = _direct(reference_scorer, [LONG_A], [LONG_B])
    before = truncating.n_truncated_
    with pytest.warns(TruncationWarning, match="2 text\\(s\\) longer than the 510-token window"):
        got = truncating.score_pairs([LONG_A], [LONG_B])
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert truncating.n_truncated_ == before + 2


def test_chunking_scores_every_token(chunked):
    tokenizer, _ = chunked._load()
    n_pieces = len(tokenizer.encode(LONG_A, add_special_tokens=False, verbose=False))
    assert n_pieces > 510
    with warnings.catch_warnings():
        warnings.simplefilter("error", TruncationWarning)  # chunk mode never truncates
        (emb, w), = chunked.embed([LONG_A])
    n_windows = -(-n_pieces // 510)
    assert emb.shape[0] == n_pieces + 2 * n_windows  # [CLS] ... [SEP] per window
    assert w.sum() == n_pieces
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    same = chunked.score_pairs([LONG_A], [LONG_A])
    np.testing.assert_allclose(same, 1, atol=1e-5)  # identical texts match token for token
    got = chunked.score_pairs([LONG_A], [LONG_B])
    assert np.all((got > 0) & (got < 1))


def test_rescaling_with_a_baseline_file_equals_bert_score(tmp_path):
    path = tmp_path / "baseline.csv"
    write_baseline(path, [0.3, 0.35, 0.32], num_layers=6)
    np.testing.assert_allclose(read_baseline(path, 6), [0.3, 0.35, 0.32])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = bert_score.BERTScorer(model_type=default_model_path(), num_layers=6, lang="en",
                                       rescale_with_baseline=True, baseline_path=str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torch warning inside bert-score's baseline reader
        want = _direct(scorer, CANDS, REFS)  # source: bert-score's own rescaling
    df = pd.DataFrame({"story_id": list("abc"), "story": CANDS, "reference": REFS})
    out = score(df, "bertscore", options={"bertscore": {"rescale": True,
                                                         "baseline_path": str(path)}},
                show_progress=False)
    wide = out.pivot(index="story_id", columns="measure", values="value")
    lab = "all-MiniLM-L6-v2 L6, chunked"
    got = wide[[f"BERTScore {k} rescaled ({lab})" for k in ("Precision", "Recall", "F1")]]
    np.testing.assert_allclose(got.to_numpy(), want, atol=1e-6)
    assert f"BERTScore F1 ({lab})" in wide.columns


def test_baseline_from_mismatched_pairs(chunked):
    stories = ["A cat slept.", "The ship sank.", "Rain fell all day.", "He won the race."]
    refs = ["The cat was asleep.", "A boat went down.", "It rained all day.", "He came first."]
    m = BertScoreMetric(rescale=True, baseline_pairs=20, random_state=3)
    pairs = m.mismatched_pairs(stories, refs)
    assert len(pairs) == 20
    own = dict(zip(stories, refs))
    assert all(r != own[s] for s, r in pairs)  # never a story's own reference
    assert pairs == BertScoreMetric(baseline_pairs=20, random_state=3).mismatched_pairs(
        stories, refs)  # reproducible
    b = chunked.score_pairs([p[0] for p in pairs], [p[1] for p in pairs]).mean(axis=0)
    raw = chunked.score_pairs(stories, refs)
    vals, measures = m.finalize(raw.copy(), m.measures(),
                                {"stories": stories, "references": refs})
    np.testing.assert_allclose(vals[:, 3:], (raw - b) / (1 - b), atol=1e-6)
    assert m.baseline_source_.startswith("mean of 20 mismatched pairs")
    assert [x.name for x in measures][3].startswith("BERTScore Precision rescaled")
    # matched pairs score above the mismatched baseline on F1
    assert np.all(raw[:, 2] > b[2])


def test_names_config_and_errors(tmp_path):
    m = BertScoreMetric()
    assert [x.name for x in m.measures()] == [
        "BERTScore Precision (all-MiniLM-L6-v2 L6, chunked)",
        "BERTScore Recall (all-MiniLM-L6-v2 L6, chunked)",
        "BERTScore F1 (all-MiniLM-L6-v2 L6, chunked)"]
    assert m.config_key() != BertScoreMetric(long_texts="truncate").config_key()
    with pytest.raises(InputError, match="long_texts"):
        BertScoreMetric(long_texts="split")
    with pytest.raises(InputError, match="could not load the BERTScore model"):
        BertScoreMetric(model=str(tmp_path / "missing"), num_layers=2).score_pairs(["a"], ["b"])
    with pytest.raises(InputError, match="LAYER,P,R,F"):
        (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
        read_baseline(tmp_path / "bad.csv", 6)


def test_idf_from_given_texts_equals_bert_score(reference_scorer):
    # source: bert_score.BERTScorer(..., idf=True, idf_sents=REFS).score(CANDS, REFS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = bert_score.BERTScorer(model_type=default_model_path(), num_layers=6, lang="en",
                                       idf=True, idf_sents=REFS)
        want = _direct(scorer, CANDS, REFS)
    m = BertScoreMetric(idf=True, idf_sents=REFS)
    got = m.score_pairs(CANDS, REFS)
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert np.abs(got - _direct(reference_scorer, CANDS, REFS)).max() > 1e-3  # idf matters
    assert m.label().endswith(", idf") and m.config()["idf"].startswith("3 texts sha256")


def test_idf_from_the_scored_references_equals_bert_score_score(tmp_path):
    # bert_score.score(cands, refs, idf=True) takes the idf from the references it is given,
    # repeats included; score() does the same with the references of the input table
    cands = CANDS + ["The dog ate the cake."]
    refs = REFS + [REFS[2]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p, r, f = bert_score.score(cands, refs, model_type=default_model_path(), num_layers=6,
                                   idf=True, nthreads=0)
    want = np.column_stack([p.numpy(), r.numpy(), f.numpy()])
    df = pd.DataFrame({"story_id": list("abcd"), "story": cands, "reference": refs})
    options = {"bertscore": {"idf": True}}
    out = score(df, "bertscore", options=options, cache=tmp_path, show_progress=False)
    wide = out.pivot(index="story_id", columns="measure", values="value")
    lab = "all-MiniLM-L6-v2 L6, chunked, idf"
    got = wide[[f"BERTScore {k} ({lab})" for k in ("Precision", "Recall", "F1")]]
    np.testing.assert_allclose(got.to_numpy(), want, atol=1e-6)
    # the weights depend on the set of references: another set is another cache entry
    fewer = score(df.head(3), "bertscore", options=options, cache=tmp_path, show_progress=False)
    assert len(list(tmp_path.glob("bertscore-*.sqlite"))) == 2
    assert not np.allclose(fewer["value"].to_numpy(), out["value"].to_numpy()[:9])


def test_idf_and_rescaling_with_a_baseline_file_equal_bert_score(tmp_path):
    path = tmp_path / "baseline.csv"
    write_baseline(path, [0.3, 0.35, 0.32], num_layers=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = bert_score.BERTScorer(model_type=default_model_path(), num_layers=6, lang="en",
                                       idf=True, idf_sents=REFS, rescale_with_baseline=True,
                                       baseline_path=str(path))
        want = _direct(scorer, CANDS, REFS)
    df = pd.DataFrame({"story_id": list("abc"), "story": CANDS, "reference": REFS})
    out = score(df, "bertscore", options={"bertscore": {
        "idf": True, "idf_sents": REFS, "rescale": True, "baseline_path": str(path)}},
        show_progress=False)
    wide = out.pivot(index="story_id", columns="measure", values="value")
    lab = "all-MiniLM-L6-v2 L6, chunked, idf"
    got = wide[[f"BERTScore {k} rescaled ({lab})" for k in ("Precision", "Recall", "F1")]]
    np.testing.assert_allclose(got.to_numpy(), want, atol=1e-6)


def test_chunked_long_texts_follow_the_stated_windowing_rule(chunked):
    # the rule (module docstring): word pieces cut into consecutive 510-piece windows, each
    # encoded alone as [CLS] window [SEP] with bert-score's encoder, matched over all tokens,
    # special tokens weight 0. Recomputed here from bert-score's own bert_encode.
    import torch
    from bert_score.utils import bert_encode

    tokenizer, model = chunked._load()

    def encode(text):
        ids = tokenizer.encode(text.strip(), add_special_tokens=False, verbose=False)
        embs, weights = [], []
        for k in range(0, len(ids), 510):
            window = [tokenizer.cls_token_id, *ids[k:k + 510], tokenizer.sep_token_id]
            x = torch.tensor([window])
            e = bert_encode(model, x, attention_mask=torch.ones_like(x))[0].numpy()
            embs.append(e / np.linalg.norm(e, axis=1, keepdims=True))
            weights.append(np.r_[0.0, np.ones(len(window) - 2), 0.0])
        return np.concatenate(embs), np.concatenate(weights)

    (h, hw), (r, rw) = encode(LONG_A), encode(LONG_B)
    assert len(hw) > 512  # more than one window
    sim = h @ r.T
    p = (sim.max(axis=1) * hw).sum() / hw.sum()
    rec = (sim.max(axis=0) * rw).sum() / rw.sum()
    want = [p, rec, 2 * p * rec / (p + rec)]
    np.testing.assert_allclose(chunked.score_pairs([LONG_A], [LONG_B])[0], want, atol=1e-6)


def test_every_batch_size_with_repeated_texts_gives_equal_results(tmp_path):
    # HANNA's references repeat (one per prompt, six systems): the score loop hands the metric
    # batches of stories whose references are partly in the embedding cache already. A small
    # cache forces evictions between and within calls (the KeyError of issue #30).
    refs = [f"Reference {k}: the lighthouse keeper counted {k + 2} ships." for k in range(6)]
    stories = [f"Story {i}: a fox followed {i % 5} travellers through snow." for i in range(30)]
    df = pd.DataFrame({"story_id": [f"s{i}" for i in range(30)], "story": stories,
                       "reference": [refs[i % 6] for i in range(30)]})
    df.loc[29, "story"] = df.loc[3, "story"]  # a repeated story too
    runs = {}
    for bs in (1, 2, 3, 7, 16, 64, 128):
        opts = {"bertscore": {"batch_size": bs, "embedding_cache_size": 4}}
        out = score(df, "bertscore", options=opts, batch_size=bs, show_progress=False)
        runs[bs] = out.sort_values(["story_id", "measure"])["value"].to_numpy()
    for bs, vals in runs.items():
        np.testing.assert_allclose(vals, runs[1], atol=1e-6, err_msg=f"batch size {bs}")
    assert np.isfinite(runs[1]).all()


# -- byte-level BPE / RoBERTa-type encoders ----------------------------------------------------
# bert-score keys some rules on the model *name* it is given: the default layer
# (model2layers["roberta-large"] = 17) and the shipped rescaling baseline
# (rescale_baseline/en/<name>.tsv). storyeval keys them on the same string, so a folder given
# as "roberta-large" gets both in both packages, and a folder under another name neither.
# Its word-piece weights follow the tokenizer (CLS/SEP ids weigh 0), not the name.

BPE_CANDS = list(TINY_CORPUS[:5]) + ["The dragon counted the ships.", "Snow."]
BPE_REFS = list(TINY_CORPUS[5:]) + ["A fox slept under the old mountain.",
                                     "The travellers built a boat from snow."]
BPE_LONG = " ".join(TINY_CORPUS)  # longer than the tiny model's 64-token window


def _bert_score(model_type, cands, refs, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scorer = bert_score.BERTScorer(model_type=model_type, **kw)
        p, r, f = scorer.score(cands, refs, batch_size=1)
    return np.column_stack([p.numpy(), r.numpy(), f.numpy()])


@pytest.fixture(scope="module")
def bpe_folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("bpe")
    return {"named": save_tiny_roberta(root / "roberta-large", layers=18, hidden=16),
            "roberta": save_tiny_roberta(root / "encoder-a", layers=3),
            "bare": save_tiny_roberta(root / "encoder-b", tokenizer="bare", layers=3)}


@pytest.mark.parametrize("kind", ["roberta", "bare"])
@pytest.mark.parametrize("idf", [False, True])
def test_byte_level_bpe_encoders_equal_bert_score(bpe_folders, kind, idf):
    # source: bert_score.BERTScorer(model_type=<folder>, num_layers=2, idf=...).score(...,
    # batch_size=1); "bare" names no CLS/SEP token, so bert-score weighs <s> and </s> 1
    path = str(bpe_folders[kind])
    kw = {"idf": True, "idf_sents": BPE_REFS} if idf else {}
    want = _bert_score(path, BPE_CANDS, BPE_REFS, num_layers=2, **kw)
    m = BertScoreMetric(model=path, num_layers=2, batch_size=3, **kw)
    np.testing.assert_allclose(m.score_pairs(BPE_CANDS, BPE_REFS), want, atol=1e-6)
    trunc = BertScoreMetric(model=path, num_layers=2, long_texts="truncate", **kw)
    want_long = _bert_score(path, [BPE_LONG], [BPE_REFS[0]], num_layers=2, **kw)
    with pytest.warns(TruncationWarning, match="62-token window"):
        got_long = trunc.score_pairs([BPE_LONG], [BPE_REFS[0]])
    np.testing.assert_allclose(got_long, want_long, atol=1e-6)


def test_bare_bpe_weighs_bos_and_eos_as_bert_score_does(bpe_folders):
    m = BertScoreMetric(model=str(bpe_folders["bare"]), num_layers=2)
    (_, w), = m.embed(["The dragon slept."])
    assert w[0] == 1 and w[-1] == 1  # no CLS/SEP token: bert-score's weight 1
    r = BertScoreMetric(model=str(bpe_folders["roberta"]), num_layers=2)
    (_, w), = r.embed(["The dragon slept."])
    assert w[0] == 0 and w[-1] == 0 and w[1:-1].min() == 1


@pytest.mark.parametrize("idf", [False, True])
def test_name_keyed_rules_follow_the_name_given(bpe_folders, monkeypatch, idf):
    # given as "roberta-large" (a folder of that name in the working directory), both
    # packages take layer 17 and bert-score's shipped roberta-large baseline
    monkeypatch.chdir(bpe_folders["named"].parent)
    kw = {"idf": True, "idf_sents": BPE_REFS} if idf else {}
    want = _bert_score("roberta-large", BPE_CANDS, BPE_REFS, lang="en",
                       rescale_with_baseline=True, **kw)
    raw_want = _bert_score("roberta-large", BPE_CANDS, BPE_REFS, lang="en", **kw)
    m = BertScoreMetric(model="roberta-large", rescale=True, **kw)
    assert m._layers() == 17  # model2layers, not the folder's 18
    raw = m.score_pairs(BPE_CANDS, BPE_REFS)
    np.testing.assert_allclose(raw, raw_want, atol=1e-6)
    vals, _ = m.finalize(raw, m.measures(), {"stories": BPE_CANDS, "references": BPE_REFS})
    assert m.baseline_source_ == "bert-score's shipped baseline roberta-large.tsv"
    # rescaling divides by 1 - b (b about 0.83 at layer 17): the raw tolerance grows with it
    np.testing.assert_allclose(vals[:, 3:], want, atol=1e-6 / (1 - m.baseline_.max()))
    # the same folder under its absolute path: neither rule applies, in either package
    absolute = BertScoreMetric(model=str(bpe_folders["named"]), rescale=True, baseline_pairs=8)
    assert absolute._layers() == 18  # every layer of the config
    absolute.finalize(absolute.score_pairs(BPE_CANDS, BPE_REFS), absolute.measures(),
                      {"stories": BPE_CANDS, "references": BPE_REFS})
    assert absolute.baseline_source_.startswith("mean of 8 mismatched pairs")
    with pytest.raises(KeyError):  # bert-score needs num_layers for an unknown name
        bert_score.BERTScorer(model_type=str(bpe_folders["named"]))


def test_dtype_option_changes_the_key_not_the_float32_numbers(chunked):
    assert BertScoreMetric(dtype="float32").config_key() == chunked.config_key()
    half = BertScoreMetric(dtype="bfloat16")
    assert half.config_key() != chunked.config_key()
    assert "encoder in bfloat16" in half.measures()[0].variant
    got, want = half.score_pairs(CANDS, REFS), chunked.score_pairs(CANDS, REFS)
    assert 0 < np.abs(got - want).max() < 0.05  # reduced precision, same scores roughly
    with pytest.raises(InputError, match="dtype"):
        BertScoreMetric(dtype="int8")
