"""Prompt clustering with representatives (storyeval.explain.cluster, `storyeval cluster`):
the silhouette equals scikit-learn's, k-means reaches scikit-learn's inertia and its fixed
point, separated clusters with known labels are recovered with the right k, representatives
are the rows nearest each centroid (scipy's cdist), and UMAP runs once (seeded)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import cdist

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.explain.cluster import cluster_embeddings, kmeans

metrics = pytest.importorskip("sklearn.metrics")
sk_cluster = pytest.importorskip("sklearn.cluster")


def _blobs(seed, k=4, per=12, dim=6, spread=0.08):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, dim)) * 3
    truth = np.repeat(np.arange(k), per)
    perm = rng.permutation(len(truth))
    return centres[truth[perm]] + spread * rng.normal(size=(len(truth), dim)), truth[perm]


def test_recovers_known_clusters_and_silhouette_matches_sklearn():
    x, truth = _blobs(1)
    res = cluster_embeddings(x, k=range(2, 9), reduce_to=None)
    assert res.k == 4
    assert metrics.adjusted_rand_score(truth, res.labels) == 1.0
    # the chosen row's silhouette is sklearn's for the returned labels
    chosen = float(res.silhouettes.loc[res.silhouettes["chosen"], "silhouette"].iloc[0])
    assert chosen == pytest.approx(metrics.silhouette_score(res.coordinates, res.labels),
                                   abs=1e-8)
    assert chosen == res.silhouettes["silhouette"].max()


def test_each_silhouette_row_matches_sklearn():
    x, _ = _blobs(2, k=3, spread=0.5)
    res = cluster_embeddings(x, k=[2, 3, 4, 5], reduce_to=None, random_state=3)
    rng = np.random.default_rng(3)
    for kk, score in zip(res.silhouettes["k"], res.silhouettes["silhouette"]):
        labels = kmeans(res.coordinates, int(kk), rng=rng)  # the same draws, in the same order
        assert score == pytest.approx(metrics.silhouette_score(res.coordinates, labels),
                                      abs=1e-8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kmeans_fixed_point_and_inertia(seed):
    x, _ = _blobs(seed, k=5, spread=0.9)
    labels = kmeans(x, 5, n_init=10, rng=np.random.default_rng(seed))
    centres = np.array([x[labels == c].mean(axis=0) for c in range(5)])
    # Lloyd's fixed point: every row is nearest its own cluster's mean
    assert (cdist(x, centres).argmin(axis=1) == labels).all()
    inertia = ((x - centres[labels]) ** 2).sum()
    ref = sk_cluster.KMeans(n_clusters=5, n_init=10, random_state=seed).fit(x).inertia_
    assert inertia <= ref * (1 + 1e-6)


def test_representatives_are_nearest_to_centroids():
    x, _ = _blobs(4, k=3, spread=0.6)
    res = cluster_embeddings(x, k=3, reduce_to=None, per_cluster=2)
    c = res.coordinates
    for cl in range(3):
        members = np.flatnonzero(res.labels == cl)
        centre = c[members].mean(axis=0)
        d = cdist(c[members], centre[None, :])[:, 0]
        expected = members[np.argsort(d, kind="stable")[:2]].tolist()
        got = res.representatives.query("cluster == @cl").sort_values("rank")
        assert got["row"].tolist() == expected
        assert got["distance"].to_numpy() == pytest.approx(np.sort(d)[:2])
        assert (got["size"] == len(members)).all()
    # clusters are numbered by first appearance
    assert res.labels[0] == 0


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 1000), st.permutations(range(6)))
def test_invariants(seed, dims):
    x, _ = _blobs(seed, k=3, per=8, dim=6, spread=0.05)
    res = cluster_embeddings(x, k=range(2, 6), reduce_to=None, random_state=seed)
    # scaling rows (cosine geometry) and permuting dimensions give the same partition
    scaled = cluster_embeddings(x[:, list(dims)] * 7.0, k=range(2, 6), reduce_to=None,
                                random_state=seed)
    assert scaled.k == res.k
    assert metrics.adjusted_rand_score(res.labels, scaled.labels) == 1.0
    assert res.representatives["size"].sum() == len(x)


def test_input_errors():
    with pytest.raises(InputError, match="k: 1 clusters"):
        cluster_embeddings(np.eye(4), k=1, reduce_to=None)
    with pytest.raises(InputError, match="shape"):
        cluster_embeddings(np.eye(2), reduce_to=None)
    with pytest.raises(InputError, match="row 2"):
        cluster_embeddings(np.array([[1.0, 0], [0, 0], [0, 1.0]]), k=2, reduce_to=None)


def _files(tmp_path, seed=7):
    x, _ = _blobs(seed, k=3, per=6, dim=4, spread=0.05)
    ids = [f"p{i}" for i in range(len(x))]
    pd.DataFrame({"prompt_id": ids, "prompt": [f"prompt {i}" for i in ids]}).to_csv(
        tmp_path / "prompts.csv", index=False)
    pd.DataFrame(x, columns=[f"e{j}" for j in range(4)]).assign(prompt_id=ids).to_csv(
        tmp_path / "emb.csv", index=False)
    return tmp_path / "prompts.csv", tmp_path / "emb.csv"


@pytest.mark.slow  # UMAP's numba compilation: seconds warm, minutes on a first, busy run
def test_cli_with_umap(tmp_path, capsys):
    pytest.importorskip("umap")
    prompts, emb = _files(tmp_path)
    argv = ["cluster", "--stories", str(prompts), "--embeddings", str(emb), "--k", "2-5",
            "--reduce", "2", "--neighbors", "5", "--per-cluster", "2", "--out",
            str(tmp_path / "out")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "3 clusters" in out and "seed 0" in out and "umap: 2 components" in out
    reps = pd.read_csv(tmp_path / "out" / "representatives.csv")
    assert len(reps) == 6 and set(reps["rank"]) == {1, 2}
    clusters = pd.read_csv(tmp_path / "out" / "clusters.csv")
    assert clusters["cluster"].nunique() == 3
    sil = pd.read_csv(tmp_path / "out" / "silhouette.csv")
    assert sil["k"].tolist() == [2, 3, 4, 5] and sil["chosen"].sum() == 1


@pytest.mark.parametrize("damage", ["empty", "header", "duplicate", "missing_emb", "nan_emb",
                                    "bad_k"])
def test_cli_damaged(tmp_path, capsys, damage):
    prompts, emb = _files(tmp_path)
    target = emb if damage.endswith("emb") else prompts
    text = target.read_text()
    lines = text.splitlines()
    k = "2-5"
    if damage == "empty":
        target.write_text("")
    elif damage == "header":
        target.write_text(lines[0] + "\n")
    elif damage == "duplicate":
        target.write_text(text + lines[2] + "\n")
    elif damage == "missing_emb":
        target.write_text("\n".join(lines[:-1]) + "\n")
    elif damage == "nan_emb":
        target.write_text(text.replace(lines[3].split(",")[0], "nan", 1))
    elif damage == "bad_k":
        k = "two"
    rc = main(["cluster", "--stories", str(prompts), "--embeddings", str(emb), "--k", k,
               "--reduce", "none", "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "out").exists()
