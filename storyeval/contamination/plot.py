"""Figures for membership scores: ROC curves and score distributions of members / non-members."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from storyeval.exceptions import InputError

__all__ = ["plot_membership", "roc_points"]


def roc_points(scores, is_member) -> tuple[np.ndarray, np.ndarray]:
    """Empirical ROC curve ``(fpr, tpr)`` over all thresholds, starting at (0, 0).

    A text is flagged when its score is >= the threshold; tied scores enter together.
    Validated against ``sklearn.metrics.roc_curve`` (same points, without its dropping of
    collinear intermediate points).
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(is_member).astype(bool)
    if s.shape != y.shape or s.ndim != 1:
        raise InputError("scores and is_member must be 1-D of the same length")
    if y.all() or not y.any():
        raise InputError("a ROC curve needs members and non-members")
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last_of_tie = np.r_[np.flatnonzero(np.diff(s) != 0), s.size - 1]
    tp = np.cumsum(y)[last_of_tie]
    fp = np.cumsum(~y)[last_of_tie]
    return np.r_[0.0, fp / (~y).sum()], np.r_[0.0, tp / y.sum()]


def plot_membership(scores: Mapping[str, np.ndarray], is_member, *, title: str | None = None):
    """ROC curves (log-scale FPR) and per-score histograms of members vs non-members.

    Parameters
    ----------
    scores : mapping of name -> array-like, shape (n,)
        e.g. ``{"Min-K% Prob": table.min_k, "Min-K%++": table.min_k_pp}``.
    is_member : array-like of bool, shape (n,)
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    from storyeval.contamination.evaluation import roc_auc

    y = np.asarray(is_member).astype(bool)
    names = list(scores)
    fig = Figure(figsize=(4.0 * (len(names) + 1), 3.6), layout="constrained")
    axes = fig.subplots(1, len(names) + 1)
    roc_ax = axes[0]
    n0 = int((~y).sum())
    for name in names:
        fpr, tpr = roc_points(scores[name], y)
        auc = roc_auc(np.asarray(scores[name], dtype=float), y)
        roc_ax.step(np.maximum(fpr, 0.5 / n0), tpr, where="post", label=f"{name} (AUC {auc:.3f})")
    grid = np.logspace(np.log10(0.5 / n0), 0, 50)
    roc_ax.plot(grid, grid, color="grey", linestyle=":", linewidth=1, label="chance")
    roc_ax.set_xscale("log")
    roc_ax.set_xlim(0.5 / n0, 1)
    ticks = [t for t in (0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0) if t >= 0.5 / n0]
    roc_ax.set_xticks(ticks, [f"{t:.1%}" if t < 0.01 else f"{t:.0%}" for t in ticks])
    roc_ax.minorticks_off()
    roc_ax.set_ylim(0, 1.02)
    roc_ax.set_xlabel(f"false-positive rate (log; 0 drawn at {0.5 / n0:.2%})")
    roc_ax.set_ylabel("true-positive rate")
    roc_ax.legend(fontsize=8, loc="lower right")
    roc_ax.set_title("ROC", fontsize=10)
    for ax, name in zip(axes[1:], names):
        s = np.asarray(scores[name], dtype=float)
        bins = np.histogram_bin_edges(s, bins=20)
        ax.hist(s[~y], bins=bins, alpha=0.6, label=f"non-members ({n0})", color="#1f77b4")
        ax.hist(s[y], bins=bins, alpha=0.6, label=f"members ({int(y.sum())})", color="#d62728")
        ax.set_xlabel(f"{name} (higher: more likely seen)")
        ax.set_ylabel("texts")
        ax.legend(fontsize=8)
        ax.set_title(name, fontsize=10)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
