"""Drawing and saving a matplotlib figure: the two primitives every figure of storyeval uses.

Below every package (``storyeval.power`` draws its power curve, ``storyeval.report`` its
heatmaps), so that no package has to import ``storyeval.report`` from below it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Figure, path: str | Path, **kwargs: Any) -> Path:
    """``fig.savefig(path)`` through a temporary file replaced atomically (the format follows
    the suffix of ``path``): an interrupted save leaves the previous file intact."""
    from storyeval._atomic import atomic_path

    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip(".") or None, **kwargs)
    return path
