"""Generation-side statistics against hand-computed values, Counter and NumPy references."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import pytest

from storyeval.data.hanna import load_hanna_stories
from storyeval.exceptions import InputError
from storyeval.generation import (
    NgramIndex,
    diversity_table,
    group_similarity,
    log_odds_keyness,
    novelty_n,
    set_distinct_n,
    words,
)
from storyeval.generation.lexical import run_spread
from storyeval.generation.similarity import in_out_means


def test_distinct_hand_computed():
    # a b a b | a b c: unigrams 7 occurrences, 3 distinct; bigrams ab ba ab | ab bc: 5, 3 distinct
    assert set_distinct_n(["a b a b", "a b c"], 1) == pytest.approx(3 / 7, abs=1e-12)
    assert set_distinct_n(["a b a b", "a b c"], 2) == pytest.approx(3 / 5, abs=1e-12)
    assert math.isnan(set_distinct_n([""], 1))


def test_novelty_toy_zero_one_and_partial():
    texts = ["The cat sat on the mat.", "A dog ran."]
    with NgramIndex(orders=(1, 2)) as full:
        full.add_texts(texts)
        assert novelty_n(texts, full, 1) == 0.0
        assert novelty_n(texts, full, 2) == 0.0
    with NgramIndex(orders=(1, 2)) as empty:
        assert novelty_n(texts, empty, 1) == 1.0
        assert novelty_n(texts, empty, 2) == 1.0
    with NgramIndex(orders=(1, 2), chunk_ngrams=2) as part:  # many small runs on disk
        part.add_texts(["the cat", "ran fast"])
        # unigrams: the cat sat on the mat a dog ran -> novel: sat on mat a dog = 5 of 9
        assert novelty_n(texts, part, 1) == pytest.approx(5 / 9, abs=1e-12)
        # bigrams: the-cat is known; 5 + 2 = 7 bigrams, 6 novel
        assert novelty_n(texts, part, 2) == pytest.approx(6 / 7, abs=1e-12)
        assert len(list(part.folder.glob("*.npy"))) > 2


def test_hanna_llm_novelty_equals_counter():
    stories = load_hanna_stories()
    human = stories.loc[stories.system == "Human", "story"].tolist()
    llm = stories.loc[stories.system != "Human", "story"].tolist()
    assert len(llm) == 576 and len(human) == 96
    with NgramIndex(orders=(1, 2), chunk_ngrams=5000) as idx:
        idx.add_texts(human)
        for n in (1, 2):
            corpus = set()
            for t in human:
                w = words(t)
                corpus.update(zip(*(w[i:] for i in range(n))))
            occ: Counter = Counter()
            for t in llm:
                w = words(t)
                occ.update(zip(*(w[i:] for i in range(n))))
            novel = sum(c for g, c in occ.items() if g not in corpus)
            assert novelty_n(llm, idx, n) == novel / sum(occ.values())


def test_index_rejects_bad_input(tmp_path):
    with pytest.raises(InputError, match="orders"):
        NgramIndex(orders=())
    with NgramIndex() as idx, pytest.raises(InputError, match="missing.txt"):
        idx.add_file(tmp_path / "missing.txt")


def test_index_streams_file(tmp_path):
    f = tmp_path / "corpus.txt"
    f.write_text("the cat sat\nthe dog\n", encoding="utf-8")
    with NgramIndex(orders=(2,)) as idx:
        idx.add_file(f)
        assert idx.contains(2, [("cat", "sat"), ("sat", "the")]).tolist() == [True, False]
        assert idx.n_tokens == 5


def test_similarity_equals_numpy():
    rng = np.random.default_rng(1)
    emb = rng.normal(size=(30, 8))
    groups = np.repeat(["a", "b", "c"], [8, 10, 12])
    res = group_similarity(emb, groups, n_permutations=49, random_state=0)
    u = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    cos = u @ u.T
    for g, row in res.set_index("group").iterrows():
        m = groups == g
        block = cos[np.ix_(m, m)]
        k = int(m.sum())
        inn = (block.sum() - np.trace(block)) / (k * (k - 1))
        out = cos[np.ix_(m, ~m)].mean()
        assert row.in_group == pytest.approx(inn, abs=1e-12)
        assert row.out_group == pytest.approx(out, abs=1e-12)
        assert 0 < row.p_value <= 1
    again = group_similarity(emb, groups, n_permutations=49, random_state=0)
    assert again.equals(res)


def test_similarity_detects_clusters():
    rng = np.random.default_rng(2)
    centres = np.repeat(np.eye(4)[:2] * 5, 15, axis=0)
    emb = centres + rng.normal(size=(30, 4))
    res = group_similarity(emb, np.repeat([0, 1], 15), n_permutations=199)
    assert (res.p_value <= 0.01).all()
    assert (res.in_group > res.out_group).all()


def test_in_out_singleton_group_is_nan():
    u = np.eye(3)
    inn, out = in_out_means(u, np.array([0, 1, 1]), 2)
    assert math.isnan(inn[0]) and inn[1] == 0.0


def test_keyness_hand_computed():
    # a: "x x y" ; b: "y z"; prior = both: x2 y2 z1, a0 = 5, alpha = counts
    res = log_odds_keyness(["x x y"], ["y z"]).set_index("word")
    na, nb, a0 = 3, 2, 5
    ax = 2.0
    d = math.log((2 + ax) / (na + a0 - 2 - ax)) - math.log((0 + ax) / (nb + a0 - 0 - ax))
    sd = math.sqrt(1 / (2 + ax) + 1 / (0 + ax))
    assert res.loc["x", "delta"] == pytest.approx(d, abs=1e-12)
    assert res.loc["x", "z"] == pytest.approx(d / sd, abs=1e-12)
    assert res.index[0] == "x"


def test_diversity_table_and_run_sd():
    import pandas as pd

    df = pd.DataFrame({"story": ["a b", "a a", "b c", "c c"], "group": ["g", "g", "g", "g"],
                       "run": [0, 0, 1, 1]})
    with NgramIndex(orders=(1,)) as idx:
        idx.add_texts(["a"])
        tab = diversity_table(df, by=("group", "run"), orders=(1,), index=idx)
    d = tab[tab.statistic == "distinct_1"].value.to_numpy()
    assert d.tolist() == [2 / 4, 2 / 4]
    nov = tab[tab.statistic == "novelty_1"].value.to_numpy()
    assert nov.tolist() == [1 / 4, 1.0]
    spread = run_spread(tab, run="run").set_index("statistic")
    assert spread.loc["novelty_1", "sd"] == pytest.approx(np.std([0.25, 1.0], ddof=1), abs=1e-12)
    with pytest.raises(InputError, match="missing column"):
        diversity_table(df, by=("nope",))
    with pytest.raises(InputError, match="no story"):
        diversity_table(df.iloc[:0], by=("group",))


def test_words_is_the_regex_tokenizer():
    assert words("I don't know, Ian...") == ["i", "do", "n't", "know", "ian"]
    assert not any(re.fullmatch(r"\W+", w) for w in words("Hi! -- there."))


def test_index_streams_1e6_tokens_within_bound():
    """10^6 corpus tokens with runs of 2^15 hashes: the traced peak stays within the stated
    working bound (24 bytes x chunk per order) plus a fixed allowance for one text's arrays."""
    import tracemalloc

    rng = np.random.default_rng(0)
    vocab = np.array([f"w{i}" for i in range(2000)])
    lines = [" ".join(vocab[rng.integers(0, 2000, 1000)]) for _ in range(1000)]
    chunk = 2 ** 15
    with NgramIndex(orders=(1, 2), chunk_ngrams=chunk) as idx:
        tracemalloc.start()
        idx.add_texts(lines)
        idx.finish()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert idx.n_tokens == 10 ** 6
        assert len(list(idx.folder.glob("*.npy"))) >= 2 * (10 ** 6 // chunk)
        assert peak < 24 * chunk * 2 + 4 * 2 ** 20
        probe = [" ".join(lines[3].split()[:50])]
        assert novelty_n(probe, idx, 2) == 0.0


def test_cli_diversity_time_run_embeddings(tmp_path):
    import pandas as pd

    from storyeval.cli import main

    rng = np.random.default_rng(0)
    st = load_hanna_stories()
    st = st[st.system.isin(["Llama-7b", "Mistral-7b"]) & (st.prompt_id < 24)].reset_index(drop=True)
    st["iteration"] = st.prompt_id % 3
    st["run"] = st.prompt_id % 2
    st.to_csv(tmp_path / "st.csv", index=False)
    emb = pd.DataFrame(rng.normal(size=(len(st), 4)), columns=list("abcd"))
    emb.insert(0, "story_id", st.story_id)
    emb.to_csv(tmp_path / "emb.csv", index=False)
    (tmp_path / "corpus.txt").write_text("\n".join(st.story.head(5)), encoding="utf-8")
    assert main(["diversity", "--stories", str(tmp_path / "st.csv"), "--group", "system",
                 "--time", "iteration", "--run", "run", "--corpus", str(tmp_path / "corpus.txt"),
                 "--embeddings", str(tmp_path / "emb.csv"), "--permutations", "19",
                 "--out", str(tmp_path / "out")]) == 0
    out = tmp_path / "out"
    for name in ("diversity.csv", "spread.csv", "similarity.csv", "keyness.csv",
                 "over_time.png"):
        assert (out / name).exists(), name
    spread = pd.read_csv(out / "spread.csv")
    assert (spread.n_runs == 2).all() and spread.sd.notna().all()
    sim = pd.read_csv(out / "similarity.csv")
    assert len(sim) == 2 * 3 * 2 and (sim.seed == 0).all()
