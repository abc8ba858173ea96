"""Min-K% / Min-K%++: hand computations from the logits, a real membership signal from a tiny
GPT-2 trained on known members, and the evaluation statistics against scikit-learn."""

from __future__ import annotations

import json
import math
import os

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE",
             "HF_EVALUATE_OFFLINE"):
    os.environ.setdefault(_var, "1")

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

from storyeval.contamination import (
    calibrate_threshold,
    contamination_rate,
    evaluate_membership,
    load_causal_lm,
    min_k_plus_plus,
    min_k_prob,
    n_lowest,
    plot_membership,
    resolve_device,
    roc_auc,
    roc_points,
    score_texts,
    token_statistics,
    tpr_at_fpr,
    train_tiny_causal_lm,
)
from storyeval.data import load_hanna_stories
from storyeval.exceptions import InputError, UndefinedStatisticWarning

N_MEMBERS = 24
CONTEXT = 64


@pytest.fixture(scope="module")
def corpus():
    """First 40 words of the 96 HANNA human stories: 24 members, 24 held-out non-members."""
    human = load_hanna_stories().query("system == 'Human'")["story"].tolist()
    texts = [" ".join(t.split()[:40]) for t in human]
    return texts[:N_MEMBERS], texts[N_MEMBERS:2 * N_MEMBERS]


@pytest.fixture(scope="module")
def tiny_lm(corpus):
    members, nonmembers = corpus
    # 400 steps: after 150 the AUC still ranged 0.63-0.87 over seeds 0-2 of the initial
    # weights; after 400 it is at least 0.9 for each of them.
    return train_tiny_causal_lm(members, steps=400, batch_size=8, context=CONTEXT,
                                vocab_size=300, tokenizer_texts=members + nonmembers,
                                random_state=0, show_progress=False)


def _logits(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids])).logits[0].double().numpy()


def _log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def test_members_separate_from_heldout(corpus, tiny_lm):
    members, nonmembers = corpus
    model, tok = tiny_lm
    table = score_texts(members + nonmembers, model, tok, k=0.2, show_progress=False)
    assert (table["reason"] == "").all()
    y = np.r_[np.ones(N_MEMBERS), np.zeros(N_MEMBERS)]
    for col in ("min_k", "min_k_pp"):
        res = evaluate_membership(table[col], y, n_resamples=500, random_state=1)
        # a real signal: the model was trained on the members only (about 0.9 observed)
        assert res.auc > 0.75, (col, res.auc)
        assert res.auc_ci[0] > 0.6, (col, res.auc_ci)
        assert res.auc == pytest.approx(sklearn_metrics.roc_auc_score(y, table[col]), abs=1e-12)


def test_scores_equal_hand_computation_from_logits(corpus, tiny_lm):
    model, tok = tiny_lm
    text = " ".join(corpus[1][0].split()[:12])  # fits in one window
    ids = tok(text, add_special_tokens=False)["input_ids"]
    full = [tok.bos_token_id] + ids  # BOS policy "auto": BOS prepended, every token scored
    assert len(full) <= CONTEXT
    logp = _log_softmax(_logits(model, full))[:-1]  # row t predicts full[t + 1]
    chosen = logp[np.arange(len(ids)), ids]
    p = np.exp(logp)
    mu = (p * logp).sum(-1)
    sigma = np.sqrt((p * logp ** 2).sum(-1) - mu ** 2)  # the spec's formula, in float64
    m = math.floor(0.2 * len(ids))
    expected_mink = np.sort(chosen)[:m].mean()
    expected_pp = np.sort((chosen - mu) / sigma)[:m].mean()

    stats = token_statistics([text], model, tok, bos="auto", show_progress=False)[0]
    assert stats.bos_prepended and stats.n_tokens == len(ids)
    np.testing.assert_array_equal(stats.token_ids, ids)
    np.testing.assert_allclose(stats.logprob, chosen, atol=2e-5)
    np.testing.assert_allclose(stats.mu, mu, atol=2e-5)
    np.testing.assert_allclose(stats.sigma, sigma, atol=2e-5)
    row = score_texts([text], model, tok, k=0.2, bos="auto", count_rule="floor_eps",
                      show_progress=False).iloc[0]
    assert row["n_lowest"] == m
    assert row["min_k"] == pytest.approx(expected_mink, abs=2e-5)
    assert row["min_k_pp"] == pytest.approx(expected_pp, abs=2e-4)
    assert row["mean_logprob"] == pytest.approx(chosen.mean(), abs=2e-5)


def test_sliding_window_scores_each_token_once_with_its_window(corpus, tiny_lm):
    model, tok = tiny_lm
    text = corpus[0][3]
    full = [tok.bos_token_id] + tok(text, add_special_tokens=False)["input_ids"]
    assert len(full) > 2 * CONTEXT  # needs at least three windows
    stride = 24
    stats = token_statistics([text], model, tok, bos="auto", stride=stride,
                             show_progress=False)[0]
    assert stats.n_tokens == len(full) - 1
    # by hand: target t is scored in the first window [b, b + CONTEXT) holding it
    expected = np.empty(len(full) - 1)
    done = 1
    begin = 0
    while done < len(full):
        end = min(begin + CONTEXT, len(full))
        logp = _log_softmax(_logits(model, full[begin:end]))
        for t in range(max(done, begin + 1), end):
            expected[t - 1] = logp[t - begin - 1, full[t]]
        done = end
        begin += stride
    np.testing.assert_allclose(stats.logprob, expected, atol=2e-5)


def test_batching_and_padding_do_not_change_scores(corpus, tiny_lm):
    model, tok = tiny_lm
    texts = [corpus[0][0], "A short one here, just a few words long now.", corpus[1][5],
             corpus[1][2][:60]]
    one = score_texts(texts, model, tok, batch_size=1, show_progress=False)
    many = score_texts(texts, model, tok, batch_size=8, show_progress=False)
    np.testing.assert_allclose(one[["min_k", "min_k_pp"]], many[["min_k", "min_k_pp"]],
                               atol=1e-5)


def test_checkpoint_persists_and_resumes(corpus, tiny_lm, tmp_path):
    model, tok = tiny_lm
    texts = corpus[0][:5]
    ids = [f"t{i}" for i in range(5)]
    plain = score_texts(texts, model, tok, ids=ids, show_progress=False)
    path = tmp_path / "ck.jsonl"
    first = score_texts(texts[:3], model, tok, ids=ids[:3], checkpoint=path, checkpoint_every=2,
                        show_progress=False)
    assert len(path.read_text().splitlines()) == 1 + 3  # settings line + one line per text
    # mark a stored row: a resumed run must reuse it instead of scoring the text again
    lines = path.read_text().splitlines()
    row = json.loads(lines[1])
    row["min_k"] = 123.0
    lines[1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    resumed = score_texts(texts, model, tok, ids=ids, checkpoint=path, checkpoint_every=2,
                          show_progress=False)
    assert resumed.loc[0, "min_k"] == 123.0
    np.testing.assert_allclose(resumed["min_k"][1:], plain["min_k"][1:], atol=1e-6)
    np.testing.assert_allclose(first["min_k_pp"], plain["min_k_pp"][:3], atol=1e-6)
    assert len(path.read_text().splitlines()) == 1 + 5
    with pytest.raises(InputError, match="other settings"):
        score_texts(texts, model, tok, ids=ids, k=0.5, checkpoint=path, show_progress=False)
    with pytest.raises(InputError, match="unique"):
        score_texts(texts[:2], model, tok, ids=["a", "a"], checkpoint=tmp_path / "x.jsonl")


def test_default_conventions_equal_the_reference_code(corpus, tiny_lm):
    """Shi et al. (2024) / Min-K%++ reference code, written out: ids = tokenizer.encode(text);
    log-probs of ids[1:] from one forward pass; k_length = int(len(all_prob) * ratio);
    mean of np.sort(all_prob)[:k_length]."""
    model, tok = tiny_lm
    for n_words in (8, 16):
        text = " ".join(corpus[1][0].split()[:n_words])
        ids = tok.encode(text)  # GPT-2-style: no BOS added, the first token is context only
        assert len(ids) <= CONTEXT  # one window, as the reference code
        logp = _log_softmax(_logits(model, ids))
        all_prob = np.array([logp[i, t] for i, t in enumerate(ids[1:])])
        p = np.exp(logp[:-1])
        mu = (p * logp[:-1]).sum(-1)
        sigma = np.sqrt((p * logp[:-1] ** 2).sum(-1) - mu ** 2)
        for ratio in (0.1, 0.2, 0.3, 0.5, 0.6):
            k_length = int(len(all_prob) * ratio)
            row = score_texts([text], model, tok, k=ratio, show_progress=False)
            assert row.attrs["conventions"] == {"k": ratio, "count_rule": "reference",
                                                "bos": "reference"}
            row = row.iloc[0]
            assert row["n_tokens"] == len(ids) - 1 and not row["bos"]
            assert row["n_lowest"] == k_length
            assert row["min_k"] == pytest.approx(np.mean(np.sort(all_prob)[:k_length]),
                                                 abs=2e-5)
            z = (all_prob - mu) / sigma
            assert row["min_k_pp"] == pytest.approx(np.mean(np.sort(z)[:k_length]), abs=2e-4)


class _BosAddingTokenizer:
    """A LLaMA-style view of the tiny tokenizer: add_special_tokens=True prepends BOS."""

    def __init__(self, tok):
        self._tok = tok
        self.bos_token_id = tok.bos_token_id

    def __call__(self, text, add_special_tokens=True, **kwargs):
        ids = self._tok(text, add_special_tokens=False, **kwargs)["input_ids"]
        return {"input_ids": ([self.bos_token_id] if add_special_tokens else []) + ids}


def test_bos_policy(corpus, tiny_lm):
    model, tok = tiny_lm
    text = corpus[0][1]
    with_bos = token_statistics([text], model, tok, bos="auto", show_progress=False)[0]
    without = token_statistics([text], model, tok, bos="never", show_progress=False)[0]
    assert with_bos.bos_prepended and not without.bos_prepended
    assert without.n_tokens == with_bos.n_tokens - 1  # the first token is context only
    np.testing.assert_array_equal(without.token_ids, with_bos.token_ids[1:])
    # "reference": the tokenizer's own special tokens; this GPT-2-style one adds none
    ref = token_statistics([text], model, tok, show_progress=False)[0]
    assert not ref.bos_prepended
    np.testing.assert_array_equal(ref.token_ids, without.token_ids)
    np.testing.assert_array_equal(ref.logprob, without.logprob)
    # a tokenizer that adds BOS itself: "reference" scores every text token, like "auto"
    llama_like = _BosAddingTokenizer(tok)
    ref2 = token_statistics([text], model, llama_like, max_length=CONTEXT,
                            show_progress=False)[0]
    assert ref2.bos_prepended
    np.testing.assert_array_equal(ref2.token_ids, with_bos.token_ids)
    np.testing.assert_allclose(ref2.logprob, with_bos.logprob, atol=1e-6)
    with pytest.raises(InputError, match="bos"):
        token_statistics([text], model, tok, bos="sometimes")


def test_too_short_text_has_a_reason_not_a_score(tiny_lm):
    model, tok = tiny_lm
    with pytest.warns(UndefinedStatisticWarning, match="1 of 2"):
        table = score_texts(["Hi there", "Once upon a time there was a small town by a river."],
                            model, tok, k=0.2, show_progress=False)
    short = table.iloc[0]
    assert short["n_tokens"] < 5 and short["n_lowest"] == 0
    assert math.isnan(short["min_k"]) and math.isnan(short["min_k_pp"])
    assert "too short for k=0.2" in short["reason"] and "at least 5 needed" in short["reason"]
    assert table.iloc[1]["reason"] == "" and np.isfinite(table.iloc[1]["min_k"])


def test_min_k_prob_and_plus_plus_by_hand():
    # lowest 2 of 5 (k=0.4): -5 and -2 -> -3.5
    assert min_k_prob([-1.0, -5.0, -0.5, -2.0, -0.1], k=0.4) == pytest.approx(-3.5)
    # k = 1: plain mean log-probability
    assert min_k_prob([-1.0, -2.0, -3.0], k=1.0) == pytest.approx(-2.0)
    # z = (1, -2, 0.5); lowest 1 of 3 at k=0.34 -> -2
    assert min_k_plus_plus([-1.0, -3.0, 0.0], [-2.0, -2.0, -1.0], [1.0, 0.5, 2.0],
                           k=0.34) == pytest.approx(-2.0)
    # count rule: 0.29 * 100 = 28.999999999999996 in floating point
    assert n_lowest(100, 0.29) == 28 == int(100 * 0.29)  # reference code: int(n * k)
    assert n_lowest(100, 0.29, count_rule="floor_eps") == 29
    assert n_lowest(4, 0.2) == 0 and n_lowest(5, 0.2) == 1
    with pytest.raises(InputError, match="count_rule"):
        n_lowest(10, 0.2, count_rule="round")
    with pytest.warns(UndefinedStatisticWarning, match="too short"):
        assert math.isnan(min_k_prob([-1.0, -2.0], k=0.2))
    for bad in (0, 1.5, -0.1):
        with pytest.raises(InputError, match="k must be"):
            min_k_prob([-1.0], k=bad)
    with pytest.raises(InputError, match="sigma"):
        min_k_plus_plus([-1.0, -2.0], [-1.0, -1.0], [1.0, 0.0], k=0.5)


def test_count_rule_on_a_hand_worked_vector():
    # n = 50, k = 0.58: k * n = 28.999999999999996, so int(n * k) = 28 but floor(k n + 1e-9)
    # = 29. Log-probs -1, -2, ..., -50: the 28 lowest are -50..-23 (mean -36.5), the 29
    # lowest -50..-22 (mean -36.0).
    lp = -np.arange(1.0, 51.0)
    assert 50 * 0.58 < 29
    assert min_k_prob(lp, k=0.58) == -36.5
    assert min_k_prob(lp, k=0.58, count_rule="reference") == -36.5
    assert min_k_prob(lp, k=0.58, count_rule="floor_eps") == -36.0
    mu, sigma = np.zeros(50), np.full(50, 2.0)
    assert min_k_plus_plus(lp, mu, sigma, k=0.58) == -18.25
    assert min_k_plus_plus(lp, mu, sigma, k=0.58, count_rule="floor_eps") == -18.0
    # a count of 0 (as the reference's np.mean of an empty slice) is NaN, for both rules
    for rule in ("reference", "floor_eps"):
        with pytest.warns(UndefinedStatisticWarning, match="at least 5 needed"):
            assert math.isnan(min_k_prob([-1.0] * 4, k=0.2, count_rule=rule))


def test_tpr_at_fpr_strictness_on_a_tiny_example():
    # members 0.9, 0.3; non-members 0.8, 0.1. Thresholds: above 0.8 -> FPR 0, TPR 0.5;
    # above 0.3 -> FPR 0.5, TPR 0.5; above 0.1 -> FPR 0.5, TPR 1.
    s, y = [0.9, 0.8, 0.3, 0.1], [1, 0, 1, 0]
    assert tpr_at_fpr(s, y, fpr=0.5) == 0.5  # default "<": FPR 0.5 is not < 0.5
    assert tpr_at_fpr(s, y, fpr=0.5, comparison="<") == 0.5
    assert tpr_at_fpr(s, y, fpr=0.5, comparison="<=") == 1.0
    assert tpr_at_fpr(s, y, fpr=0.6) == 1.0
    with pytest.warns(UndefinedStatisticWarning, match="no threshold"):
        assert math.isnan(tpr_at_fpr(s, y, fpr=0.0))
    assert tpr_at_fpr(s, y, fpr=0.0, comparison="<=") == 0.5
    with pytest.raises(InputError, match="comparison"):
        tpr_at_fpr(s, y, fpr=0.5, comparison="=")
    ev = evaluate_membership(s, y, fprs=(0.5,), n_resamples=20)
    assert ev.fpr_comparison == "<" and ev.tpr[0.5] == 0.5
    assert set(ev.to_frame().dropna(subset=["fpr_comparison"])["fpr_comparison"]) == {"<"}
    ev2 = evaluate_membership(s, y, fprs=(0.5,), n_resamples=20, fpr_comparison="<=")
    assert ev2.fpr_comparison == "<=" and ev2.tpr[0.5] == 1.0


def test_auc_and_tpr_match_sklearn():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    s = np.round(rng.normal(size=300) + 0.8 * y, 1)  # rounding makes ties
    assert roc_auc(s, y) == pytest.approx(sklearn_metrics.roc_auc_score(y, s), abs=1e-12)
    fpr, tpr, _ = sklearn_metrics.roc_curve(y, s)
    for target in (0.0, 0.001, 0.01, 0.05, 0.2, 0.5):
        expected = tpr[fpr <= target + 1e-12].max()
        assert tpr_at_fpr(s, y, fpr=target, comparison="<=") == pytest.approx(
            expected, abs=1e-12), target
    n0 = int((y == 0).sum())
    for target in (0.001, 0.01, 0.05, 0.2, 0.5, 3 / n0, 10 / n0):
        # Shi et al.'s evaluation: tpr[np.where(fpr < target)[0][-1]]
        expected = tpr[np.where(fpr < target)[0][-1]]
        assert tpr_at_fpr(s, y, fpr=target) == pytest.approx(expected, abs=1e-12), target


def test_roc_points_match_sklearn_and_plot():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 120)
    s = np.round(rng.normal(size=120) + y, 1)
    fpr, tpr = roc_points(s, y)
    ref_fpr, ref_tpr, _ = sklearn_metrics.roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, ref_fpr, atol=1e-12)
    np.testing.assert_allclose(tpr, ref_tpr, atol=1e-12)
    fig = plot_membership({"a": s, "b": -s}, y.astype(bool), title="t")
    assert len(fig.axes) == 3
    assert "AUC" in fig.axes[0].get_legend().get_texts()[0].get_text()


def test_evaluate_membership_bootstrap_is_seeded():
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(40), np.zeros(60)]
    s = rng.normal(size=100) + y
    a = evaluate_membership(s, y, n_resamples=300, random_state=5)
    b = evaluate_membership(s, y, n_resamples=300, random_state=5)
    c = evaluate_membership(s, y, n_resamples=300, random_state=6)
    assert a.auc_ci == b.auc_ci and a.tpr_ci == b.tpr_ci
    assert a.auc_ci != c.auc_ci
    assert a.auc_ci[0] <= a.auc <= a.auc_ci[1]
    assert set(a.tpr) == {0.001, 0.01, 0.05}
    assert any("resolution 1/60" in n for n in a.notes)  # 0.001 and 0.01 < 1/60
    frame = a.to_frame()
    assert list(frame["statistic"]) == ["roc_auc", "tpr@0.001fpr", "tpr@0.01fpr", "tpr@0.05fpr"]
    with pytest.raises(InputError, match="NaN"):
        evaluate_membership([0.1, np.nan], [1, 0])
    with pytest.raises(InputError, match="0/1"):
        evaluate_membership([0.1, 0.2], [1, 2])
    with pytest.warns(UndefinedStatisticWarning):
        assert math.isnan(roc_auc([0.1, 0.2], [1, 1]))


def test_calibrated_threshold_and_contamination_rate_by_counting():
    rng = np.random.default_rng(1)
    neg = rng.normal(size=200)
    for fpr in (0.0, 0.01, 0.05, 0.1):
        tau = calibrate_threshold(neg, fpr=fpr)
        assert (neg > tau).sum() == math.floor(fpr * 200 + 1e-9)  # no ties here
    target = np.r_[rng.normal(size=50), rng.normal(size=50) + 3]
    res = contamination_rate(target, neg, fpr=0.05, n_resamples=400, random_state=0)
    tau = calibrate_threshold(neg, fpr=0.05)
    assert res.threshold == tau
    assert res.n_flagged == int((target > tau).sum())
    assert res.rate == pytest.approx(res.n_flagged / 100)
    assert res.calibration_fpr == pytest.approx(10 / 200)
    assert res.ci[0] <= res.rate <= res.ci[1]
    assert 0.45 < res.rate < 0.65  # half the texts are shifted by 3 sd, plus ~5% false flags


def test_load_saved_model_and_offline_error(tmp_path, corpus, tiny_lm, monkeypatch):
    model, tok = tiny_lm
    model.save_pretrained(tmp_path / "lm")
    tok.save_pretrained(tmp_path / "lm")
    loaded, loaded_tok = load_causal_lm(tmp_path / "lm", device="cpu")
    a = score_texts(corpus[0][:3], model, tok, show_progress=False)
    b = score_texts(corpus[0][:3], loaded, loaded_tok, show_progress=False)
    np.testing.assert_allclose(a[["min_k", "min_k_pp"]], b[["min_k", "min_k_pp"]], atol=1e-6)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match="could not load a causal LM.*not a local folder"):
        load_causal_lm("no-such-org/no-such-model")
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(InputError, match="device"):
        resolve_device("nonsense-device")


def test_initial_weights_are_drawn_by_storyeval_alone(corpus):
    """The tiny GPT-2's initial weights depend on ``random_state`` only: not on torch's global
    seed, nor on the initialiser of the installed transformers release (which changed between
    5.x releases and with it every number of the contamination demo)."""
    members, _ = corpus
    def initial(torch_seed, random_state):
        torch.manual_seed(torch_seed)
        model, _ = train_tiny_causal_lm(members, steps=0, context=CONTEXT, vocab_size=300,
                                        random_state=random_state, show_progress=False)
        return {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    first, second, other = initial(1, 7), initial(2, 7), initial(1, 8)
    assert first.keys() == second.keys()
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)
    assert not np.array_equal(first["transformer.wte.weight"], other["transformer.wte.weight"])
    # GPT-2's scheme: N(0, 0.02), residual projections scaled by 1/sqrt(2 n_layer), unit norms
    assert np.std(first["transformer.wte.weight"]) == pytest.approx(0.02, rel=0.05)
    assert np.std(first["transformer.h.0.mlp.c_proj.weight"]) == pytest.approx(0.01, rel=0.05)
    np.testing.assert_array_equal(first["transformer.ln_f.weight"], 1.0)
    np.testing.assert_array_equal(first["transformer.h.1.attn.c_attn.bias"], 0.0)


def test_float64_training_keeps_float64_through_scoring(corpus):
    """``dtype="float64"`` trains and scores in float64 (no silent cast to float32 in the
    statistics), and the float32 default's initial weights are the float64 ones rounded."""
    members, _ = corpus
    wide, tok = train_tiny_causal_lm(members[:4], steps=2, context=CONTEXT, vocab_size=300,
                                     dtype="float64", show_progress=False)
    narrow, _ = train_tiny_causal_lm(members[:4], steps=0, context=CONTEXT, vocab_size=300,
                                     show_progress=False)
    assert {p.dtype for p in wide.parameters()} == {torch.float64}
    assert {p.dtype for p in narrow.parameters()} == {torch.float32}
    short = " ".join(members[0].split()[:10])  # inside one context window
    stats = token_statistics([short], wide, tok, bos="never", show_progress=False)[0]
    ids = torch.tensor([tok(short, add_special_tokens=False)["input_ids"]])
    np.testing.assert_array_equal(stats.token_ids, ids[0, 1:].numpy())
    with torch.no_grad():  # the reference: log-softmax of the float64 logits, in float64
        logp = torch.log_softmax(wide(input_ids=ids).logits[0, :-1], dim=-1)
    expected = logp.gather(-1, ids[0, 1:, None])[:, 0].numpy()
    # a cast to float32 inside the statistics would leave errors near 1e-7
    np.testing.assert_allclose(stats.logprob, expected, rtol=0, atol=1e-12)
    with pytest.raises(InputError, match="dtype"):
        train_tiny_causal_lm(members[:4], steps=1, dtype="float16")
