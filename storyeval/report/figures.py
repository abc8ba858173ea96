"""The paper's figures: correlation heatmaps and the Williams adjusted-p heatmap.

Matplotlib is used with the non-interactive Agg backend; each figure is written as PNG and PDF.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def heatmap(
    matrix: pd.DataFrame,
    path_stem: str | Path,
    *,
    title: str,
    cmap: str = "RdBu_r",
    vmin: float = -1.0,
    vmax: float = 1.0,
    colorbar_label: str = "",
    digits: int = 2,
    marks: pd.DataFrame | None = None,
) -> list[Path]:
    """Draw ``matrix`` (rows x columns, floats, NaN left blank) with its values written in the
    cells; save ``path_stem``.png and .pdf and return both paths. ``marks`` (same shape,
    booleans) appends a ``*`` to the marked cells' values (explain it in the title)."""
    plt = _pyplot()
    n_rows, n_cols = matrix.shape
    width = max(4.0, 1.1 + 0.62 * n_cols + 0.075 * max(len(str(r)) for r in matrix.index))
    height = max(2.5, 1.2 + 0.26 * n_rows)
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    values = matrix.to_numpy(dtype=float)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=vmin, vmax=vmax,
                      aspect="auto", interpolation="nearest")
    ax.set_xticks(range(n_cols), [str(c) for c in matrix.columns], rotation=45, ha="right",
                  fontsize=8)
    ax.set_yticks(range(n_rows), [str(r) for r in matrix.index], fontsize=7)
    for (i, j), value in np.ndenumerate(values):
        if np.isfinite(value):
            red, green, blue, _ = image.cmap(image.norm(value))
            luminance = 0.299 * red + 0.587 * green + 0.114 * blue  # readable on any colormap
            star = "*" if marks is not None and bool(marks.iat[i, j]) else ""
            ax.text(j, i, f"{value:.{digits}f}{star}", ha="center", va="center", fontsize=6,
                    color="black" if luminance > 0.5 else "white")
    ax.set_title(textwrap.fill(title, width=max(40, int(width * 11))), fontsize=9)
    fig.colorbar(image, ax=ax, label=colorbar_label, shrink=0.6)
    stem = Path(path_stem)
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    try:
        for path in paths:
            save_figure(fig, path, dpi=150)
    finally:
        plt.close(fig)
    return paths


def save_figure(fig: Figure, path: str | Path, **kwargs: object) -> Path:
    """``fig.savefig(path)`` through a temporary file replaced atomically (the format follows
    the suffix of ``path``): an interrupted save leaves the previous file intact."""
    from storyeval._atomic import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or None, **kwargs)
    return path
