"""2-D projections of explanation embeddings (UMAP, or PCA as a fast fallback) and their plot."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from storyeval._optional import import_optional
from storyeval.data.criteria import CRITERIA
from storyeval.exceptions import InputError

__all__ = ["CRITERION_COLOURS", "plot_projection", "project_2d"]

# Fixed colours so that every figure colours a criterion the same way (tab10 hues).
CRITERION_COLOURS: dict[str, str] = {
    "Relevance": "#1f77b4",
    "Coherence": "#ff7f0e",
    "Empathy": "#2ca02c",
    "Surprise": "#d62728",
    "Engagement": "#9467bd",
    "Complexity": "#8c564b",
    "unknown": "#7f7f7f",
}
_EXTRA = ["#e377c2", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a"]


def project_2d(
    embeddings: np.ndarray,
    *,
    method: str = "umap",
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    metric: str = "cosine",
    random_state: int | None = 0,
) -> np.ndarray:
    """Project embeddings to 2-D.

    Parameters
    ----------
    embeddings : array-like, shape (n, dim)
    method : {"umap", "pca"}, default "umap"
        UMAP (McInnes et al. 2018) with the given neighbourhood settings; PCA is linear and
        deterministic, without numba's compile time.
    n_neighbors : int, default 15
        UMAP neighbourhood size (capped at ``n - 1``).
    min_dist : float, default 0.1
    metric : str, default "cosine"
    random_state : int or None, default 0
        UMAP seed; a seed makes UMAP deterministic (and single-threaded).

    Returns
    -------
    numpy.ndarray, shape (n, 2)

    References
    ----------
    1. McInnes, L., Healy, J., & Melville, J. (2018). UMAP: Uniform Manifold Approximation
       and Projection for Dimension Reduction. arXiv:1802.03426.

    Examples
    --------
    >>> project_2d(np.eye(5), method="pca").shape
    (5, 2)

    Validated in the tests: the same seed gives the same coordinates.
    """
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 3:
        raise InputError(f"embeddings must have shape (n >= 3, dim), got {x.shape}")
    if method == "pca":
        centred = x - x.mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        coords = centred @ vt[:2].T
        # fix the sign of each axis (largest loading positive) for reproducibility
        signs = np.sign(vt[:2][np.arange(2), np.abs(vt[:2]).argmax(axis=1)])
        return coords * signs
    if method != "umap":
        raise InputError(f"method must be 'umap' or 'pca', got {method!r}")
    umap = import_optional("umap", extra="explain", purpose="the UMAP projection")
    reducer = umap.UMAP(n_components=2, n_neighbors=min(n_neighbors, x.shape[0] - 1),
                        min_dist=min_dist, metric=metric, random_state=random_state,
                        n_jobs=1 if random_state is not None else -1)
    return np.asarray(reducer.fit_transform(x), dtype=float)


def plot_projection(coords: np.ndarray, labels: Sequence[str], *, title: str | None = None,
                    ax=None, legend_title: str = "criterion"):
    """Scatter plot of 2-D coordinates coloured by criterion; returns the matplotlib figure.

    Criteria keep fixed colours (`CRITERION_COLOURS`), listed in the legend in the
    order of `storyeval.data.criteria.CRITERIA` with their counts; ``"unknown"`` is grey.
    """
    if ax is None:
        from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

        fig = Figure(figsize=(7.6, 5.2), layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    xy = np.asarray(coords, dtype=float)
    lab = np.asarray([str(v) for v in labels], dtype=object)
    if xy.shape != (lab.shape[0], 2):
        raise InputError(f"coords must have shape ({lab.shape[0]}, 2), got {xy.shape}")
    present = list(dict.fromkeys(lab.tolist()))
    order = [c for c in CRITERIA if c in present] + sorted(
        c for c in present if c not in CRITERIA and c != "unknown") + (
        ["unknown"] if "unknown" in present else [])
    extra = iter(_EXTRA * 10)
    for name in order:
        sel = lab == name
        colour = CRITERION_COLOURS.get(name) or next(extra)
        ax.scatter(xy[sel, 0], xy[sel, 1], s=22, color=colour, alpha=0.85,
                   marker="x" if name == "unknown" else "o", linewidths=1.2 if name == "unknown"
                   else 0.4, edgecolors="white" if name != "unknown" else None,
                   label=f"{name} ({int(sel.sum())})")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel("dimension 1")
    ax.set_ylabel("dimension 2")
    if title:
        ax.set_title(title, fontsize=10)
    # outside the axes, so that no point is hidden behind it
    ax.legend(title=legend_title, fontsize=8, title_fontsize=8, loc="upper left",
              bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig
