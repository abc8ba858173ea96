"""Clustering texts by their embeddings, with representatives (the character-simulation paper's
prompt selection: sentence embeddings -> UMAP -> k-means, the number of clusters chosen by
fit, representative prompts taken from every cluster).

`cluster_embeddings` reduces the embeddings with UMAP (or not), runs k-means for each candidate
number of clusters, keeps the one with the highest mean silhouette, and names the rows closest
to each cluster's centroid as its representatives.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from storyeval._optional import import_optional
from storyeval._progress import progress
from storyeval.exceptions import InputError
from storyeval.explain.separation import silhouette_samples_precomputed

__all__ = ["ClusterResult", "cluster_embeddings", "kmeans"]


@dataclass(frozen=True)
class ClusterResult:
    """The result of `cluster_embeddings`.

    Attributes
    ----------
    labels : numpy.ndarray of int, shape (n,)
        Cluster of each row, numbered 0..k-1 by first appearance in the input.
    k : int
        The number of clusters chosen.
    silhouettes : DataFrame
        ``k, silhouette`` (mean silhouette of the k-means clustering with k clusters), one row
        per candidate, ``chosen`` marking the highest (the smaller k on a tie).
    representatives : DataFrame
        ``cluster, rank, row, distance, size``: the ``per_cluster`` rows closest to each
        centroid (Euclidean distance in the clustered space), rank 1 the closest.
    coordinates : numpy.ndarray, shape (n, d)
        The space k-means ran in (the UMAP coordinates, or the unit-length embeddings).
    reduction : str
        How that space was made (``"umap: 5 components, 15 neighbours, cosine"`` or ``"none"``).
    random_state : int
    """

    labels: np.ndarray
    k: int
    silhouettes: pd.DataFrame
    representatives: pd.DataFrame
    coordinates: np.ndarray
    reduction: str
    random_state: int

    def summary(self) -> str:
        best = float(self.silhouettes.loc[self.silhouettes["chosen"], "silhouette"].iloc[0])
        ks = self.silhouettes["k"]
        return (f"{len(self.labels)} rows in {self.k} clusters (k-means, k = {ks.min()}-"
                f"{ks.max()} tried, highest mean silhouette {best:.3f}); reduction: "
                f"{self.reduction}; seed {self.random_state}")


def _candidates(k: int | Sequence[int], n: int) -> list[int]:
    ks = [k] if isinstance(k, (int, np.integer)) else list(k)
    if not ks:
        raise InputError("k: no candidate number of clusters")
    for v in ks:
        if isinstance(v, bool) or int(v) != v or not 2 <= int(v) <= n - 1:
            raise InputError(f"k: {v!r} clusters of {n} rows; each candidate must be an "
                             f"integer from 2 to {n - 1} (the silhouette needs 2 <= k < n)")
    return sorted({int(v) for v in ks})


def _reduce(x: np.ndarray, components: int | None, n_neighbors: int,
            random_state: int) -> tuple[np.ndarray, str]:
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    if components is None or components >= x.shape[1]:
        return unit, "none (unit-length embeddings)"
    if components < 1:
        raise InputError(f"reduce_to must be >= 1 or None, got {components}")
    umap = import_optional("umap", extra="explain", purpose="the UMAP reduction")
    neighbours = min(int(n_neighbors), x.shape[0] - 1)
    # a seed makes UMAP deterministic (and single-threaded)
    reducer = umap.UMAP(n_components=int(components), n_neighbors=neighbours, min_dist=0.0,
                        metric="cosine", random_state=random_state, n_jobs=1)
    coords = np.asarray(reducer.fit_transform(x), dtype=np.float64)
    return coords, f"umap: {components} components, {neighbours} neighbours, cosine, min_dist 0"


def cluster_embeddings(embeddings: np.ndarray, *, k: int | Sequence[int] = range(2, 16),
                       reduce_to: int | None = 5, n_neighbors: int = 15,
                       per_cluster: int = 1, n_init: int = 10,
                       random_state: int = 0,
                       show_progress: bool | None = None) -> ClusterResult:
    """Cluster rows by their embeddings and pick each cluster's representatives.

    Parameters
    ----------
    embeddings : array, shape (n, dim)
        One embedding per row (sentence embeddings of prompts, e.g. `embed_texts`).
    k : int or sequence of int, default 2..15
        The numbers of clusters to try; the one with the highest mean silhouette is kept.
    reduce_to : int or None, default 5
        UMAP components before k-means (cosine metric, ``min_dist`` 0, as for clustering);
        None: k-means on the unit-length embeddings.
    n_neighbors : int, default 15
        UMAP neighbourhood (capped at n - 1).
    per_cluster : int, default 1
        Representatives per cluster (the paper took 28 prompts from 14 clusters: 2).
    n_init : int, default 10
        k-means restarts (the lowest inertia is kept).
    random_state : int, default 0
        Seed of UMAP and k-means.
    show_progress : bool, optional
        A bar over the candidate k on standard error (None: on a terminal only, and not under
        ``STORYEVAL_NO_PROGRESS=1``).

    Returns
    -------
    ClusterResult

    Notes
    -----
    Silhouette of row i: ``(b_i - a_i) / max(a_i, b_i)``, with ``a_i`` the mean distance to
    the other rows of its cluster and ``b_i`` the lowest mean distance to another cluster's
    rows (Euclidean, in the clustered space; a row alone in its cluster: 0). The mean over rows
    chooses k. Representatives: the rows with the smallest distance to their cluster's mean.

    References
    ----------
    1. McInnes, L., Healy, J., Melville, J. (2018). UMAP. arXiv:1802.03426.
    2. Rousseeuw, P. J. (1987). Silhouettes. J. Comput. Appl. Math. 20, 53-65.

    Validated against scikit-learn's ``silhouette_score`` and ``KMeans`` (inertia), and
    against a check of the k-means fixed point (each row nearest its own centroid, each centroid its rows' mean) on
    separated clusters with known labels (tests/test_explain_cluster.py).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.vstack([rng.normal(c, 0.05, (10, 3)) for c in np.eye(3)])
    >>> res = cluster_embeddings(x, k=range(2, 6), reduce_to=None)
    >>> res.k, res.representatives["size"].tolist()
    (3, [10, 10, 10])
    """
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 3 or x.shape[1] < 1:
        raise InputError(f"embeddings must have shape (n >= 3, dim), got {x.shape}")
    finite = np.asarray(np.isfinite(x).all(axis=1), dtype=bool)
    norms = np.linalg.norm(np.where(finite[:, None], x, 0.0), axis=1)
    bad = np.asarray(~finite | (norms == 0), dtype=bool)
    if bad.any():
        raise InputError(f"embeddings: row {int(np.flatnonzero(bad)[0]) + 1} is not finite or "
                         "all zeros")
    if int(per_cluster) < 1:
        raise InputError(f"per_cluster must be >= 1, got {per_cluster}")
    ks = _candidates(k, x.shape[0])
    coords, how = _reduce(x, reduce_to, n_neighbors, int(random_state))
    dist = np.sqrt(np.maximum(
        (coords ** 2).sum(1)[:, None] + (coords ** 2).sum(1)[None, :] - 2 * coords @ coords.T,
        0.0))
    if int(n_init) < 1:
        raise InputError(f"n_init must be >= 1, got {n_init}")
    rng = np.random.default_rng(int(random_state))
    fits, scores = {}, []
    for kk in progress(ks, total=len(ks), desc="k-means and silhouette", unit="k",
                       show=show_progress):
        labels = kmeans(coords, kk, n_init=int(n_init), rng=rng)
        fits[kk] = labels
        scores.append(float(silhouette_samples_precomputed(dist, labels.tolist()).mean()))
    best = ks[int(np.argmax(scores))]  # argmax: the first (smaller k) on a tie
    labels = _renumber(fits[best])
    table = pd.DataFrame({"k": ks, "silhouette": scores})
    table["chosen"] = table["k"] == best
    reps = _representatives(coords, labels, int(per_cluster))
    return ClusterResult(labels=labels, k=best, silhouettes=table, representatives=reps,
                         coordinates=coords, reduction=how, random_state=int(random_state))


def kmeans(x: np.ndarray, k: int, *, n_init: int = 10, rng: np.random.Generator | None = None,
           max_iter: int = 300) -> np.ndarray:
    """Labels of Lloyd's k-means with k-means++ starts; the lowest inertia of ``n_init``
    starts is kept.

    Notes
    -----
    k-means++ (Arthur and Vassilvitskii 2007): the first centre uniformly, each next one with
    probability proportional to the squared distance to the nearest chosen centre. Lloyd's
    iterations (assign to the nearest centre, move each centre to its rows' mean) stop when no
    row changes cluster; an emptied cluster takes the row farthest from its centre.
    Deterministic given ``rng``. Implemented here (no scikit-learn at run time: its OpenMP
    k-means stalls on an oversubscribed machine).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    n = len(x)
    sq = (x ** 2).sum(axis=1)
    best, best_inertia = np.zeros(n, dtype=np.int64), np.inf
    for _ in range(n_init):
        centres = _plus_plus(x, sq, k, rng)
        labels = np.full(n, -1, dtype=np.int64)
        for _ in range(max_iter):
            d2 = np.maximum(sq[:, None] + (centres ** 2).sum(1)[None, :] - 2 * x @ centres.T,
                            0.0)
            new = d2.argmin(axis=1)
            counts = np.bincount(new, minlength=k)
            if (counts == 0).any():  # refill an empty cluster with the worst-fitted row
                far = d2[np.arange(n), new].argmax()
                new[far] = int(np.flatnonzero(counts == 0)[0])
                counts = np.bincount(new, minlength=k)
            if (new == labels).all():
                break
            labels = new
            centres = np.zeros((k, x.shape[1]))
            np.add.at(centres, labels, x)
            centres /= counts[:, None]
        inertia = float(((x - centres[labels]) ** 2).sum())
        if inertia < best_inertia - 1e-12:
            best, best_inertia = labels.copy(), inertia
    return best


def _plus_plus(x: np.ndarray, sq: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    centres = [x[rng.integers(len(x))]]
    d2 = np.maximum(sq + (centres[0] ** 2).sum() - 2 * x @ centres[0], 0.0)
    for _ in range(1, k):
        total = d2.sum()
        i = rng.choice(len(x), p=d2 / total) if total > 0 else rng.integers(len(x))
        centres.append(x[i])
        d2 = np.minimum(d2, np.maximum(sq + (x[i] ** 2).sum() - 2 * x @ x[i], 0.0))
    return np.array(centres)


def _renumber(labels: np.ndarray) -> np.ndarray:
    """Clusters numbered by the first row of each (stable under k-means' own numbering)."""
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(np.argsort(first))
    _, codes = np.unique(labels, return_inverse=True)
    return order[codes].astype(np.int64)


def _representatives(coords: np.ndarray, labels: np.ndarray, per: int) -> pd.DataFrame:
    k = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=k)
    centroids = np.zeros((k, coords.shape[1]))
    np.add.at(centroids, labels, coords)
    centroids /= sizes[:, None]
    d = np.linalg.norm(coords - centroids[labels], axis=1)
    order = np.lexsort((np.arange(len(labels)), d, labels))  # by cluster, then distance, row
    ranks = np.empty(len(labels), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    ranks[order] = np.arange(len(labels)) - np.repeat(starts, sizes)
    pick = order[ranks[order] < per]
    return pd.DataFrame({"cluster": labels[pick], "rank": ranks[pick] + 1, "row": pick,
                         "distance": d[pick], "size": sizes[labels[pick]]})
