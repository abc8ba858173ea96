"""The paper's figures: correlation heatmaps and the Williams adjusted-p heatmap.

Matplotlib is used with the non-interactive Agg backend; each figure is written as PNG by
default, and in any of `FIGURE_FORMATS` on request (``--figure-format png,pdf``). A report's
heatmaps can be drawn by worker processes (`FigureWorkers`) while the tables are written.

Drawing the value of every cell is what costs time in a large heatmap (HANNA's 192-row grids:
about 1,000 texts per figure, each laid out and rasterised once per format). The cell texts
are kept out of the constrained layout (they lie inside the axes and cannot change it, but
the layout engine would measure each of them again), and each format is a separate save.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from storyeval._figure_io import _pyplot, save_figure  # noqa: F401 (re-exported)
from storyeval.exceptions import InputError
from storyeval.report.tables import fixed

FIGURE_FORMATS: tuple[str, ...] = ("png", "pdf", "svg")
DEFAULT_FIGURE_FORMATS: tuple[str, ...] = ("png",)


def check_figure_formats(formats: str | Sequence[str]) -> tuple[str, ...]:
    """``formats`` as a tuple of known formats (``"png,pdf"`` or ``["png", "pdf"]``), in the
    order given and without repeats; an `InputError` names an unknown one."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    out = tuple(dict.fromkeys(str(f).strip().lower().lstrip(".") for f in items if str(f).strip()))
    unknown = [f for f in out if f not in FIGURE_FORMATS]
    if unknown or not out:
        raise InputError(f"figure format(s) {unknown or formats!r} not supported; choose from "
                         f"{', '.join(FIGURE_FORMATS)} (comma-separated)")
    return out


ANNOTATE_MAX_CELLS = 400
"""A heatmap with more cells than this has no value written in its cells (the values are in
the tables written beside it): at HANNA's 192 x 6, the cell texts cost 3x the rest of the
figure, and the paper's figures of that size are read by colour."""


def heatmap(
    matrix: pd.DataFrame,
    path_stem: str | Path | None = None,
    *,
    title: str = "",
    cmap: str = "RdBu_r",
    vmin: float = -1.0,
    vmax: float = 1.0,
    colorbar_label: str = "",
    digits: int = 2,
    marks: pd.DataFrame | None = None,
    formats: Sequence[str] = DEFAULT_FIGURE_FORMATS,
    annotate: bool | None = None,
    pvalues: bool = False,
    marks_label: str = "",
) -> Any:
    """Draw ``matrix`` (rows x columns, floats, NaN left blank) and save ``path_stem`` in each
    of ``formats`` (default PNG); return the paths. Without ``path_stem`` nothing is written:
    the matplotlib ``Figure`` is returned (a notebook shows it as the cell's value;
    ``fig.savefig(path)`` writes it).

    The cells show their values (``digits`` decimals) when ``annotate`` is True, or by default
    when the grid has at most `ANNOTATE_MAX_CELLS` cells. ``marks`` (same shape, booleans)
    appends a ``*`` to the marked cells' values; in a grid without values, marked cells get a
    dot. ``marks_label`` says what a mark means: the title ends with it, after the mark that is
    drawn (``*`` or ``•``), when a cell is marked.

    ``pvalues``: the cells are p-values, drawn on the stepped scale `P_BOUNDARIES` (a break at
    0.05: blues below, light colours above; ``cmap``, ``vmin`` and ``vmax`` are not used) and
    written as `storyeval.report.present.p_text` prints them."""
    formats = check_figure_formats(formats)
    if annotate is None:
        annotate = matrix.size <= ANNOTATE_MAX_CELLS
    import matplotlib

    # names are drawn as plain text: a '$' in a measure name never starts matplotlib's math
    # mode (an invalid expression would fail the whole report)
    with matplotlib.rc_context({"text.parse_math": False}):
        from matplotlib.figure import Figure  # no pyplot: no global figure registry to clean up

        values = matrix.to_numpy(dtype=float)
        marked = (np.zeros(values.shape, bool) if marks is None
                  else marks.to_numpy(dtype=bool, na_value=False))
        if marks_label and (marked & np.isfinite(values)).any():
            title = f"{title}; {'*' if annotate else '•'} {marks_label}"
        layout = _Layout.of(matrix, title, annotate)
        fig = Figure(figsize=(layout.width, layout.height))
        ax, cax = layout.axes(fig)
        scale: dict[str, Any] = (p_value_scale() if pvalues
                                 else {"cmap": cmap, "vmin": vmin, "vmax": vmax})
        image = ax.imshow(np.ma.masked_invalid(values), aspect="auto",
                          interpolation="nearest", **scale)
        ax.set_xticks(range(matrix.shape[1]), [str(c) for c in matrix.columns], rotation=45,
                      ha="right", rotation_mode="anchor", fontsize=8)
        _row_labels(ax, [str(r) for r in matrix.index])
        if annotate:
            _write_values(ax, image, values, marked, digits, pvalues=pvalues)
        elif marked.any():
            rows, cols = np.nonzero(marked & np.isfinite(values))
            ax.scatter(cols, rows, s=4, c="black", marker="o", linewidths=0)
        fig.suptitle(layout.title, fontsize=9, x=0.5, y=1 - 0.08 / layout.height, va="top")
        bar = fig.colorbar(image, cax=cax, label=colorbar_label)
        if pvalues:
            bar.set_ticks(P_BOUNDARIES, labels=[f"{b:g}" for b in P_BOUNDARIES], fontsize=7)
        if path_stem is None:  # a notebook: the figure itself, shown as PNG, nothing written
            fig._repr_png_ = lambda: _png_bytes(fig, layout.dpi)  # type: ignore[attr-defined]
            return fig
        stem = Path(path_stem)
        paths = [stem.with_suffix(f".{fmt}") for fmt in formats]
        for path in paths:
            save_figure(fig, path, dpi=layout.dpi)
    return paths


def _png_bytes(fig, dpi: float) -> bytes:
    """The figure as PNG bytes (how a notebook shows a figure made without pyplot)."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _row_labels(ax, labels: list[str]) -> None:
    """One text per row at the left of the axes, in place of y tick labels: the same look, and
    half the time of a 192-row grid's figure (a tick is an object with lines and a label that
    the axis measures and draws separately)."""
    from matplotlib.transforms import ScaledTranslation, blended_transform_factory

    ax.set_yticks([])
    # x in axes fractions, y in rows, shifted 4 points to the left of the axes
    where = blended_transform_factory(ax.transAxes, ax.transData) + ScaledTranslation(
        -4 / 72, 0, ax.figure.dpi_scale_trans)
    for row, label in enumerate(labels):
        ax.text(0, row, label, transform=where, ha="right", va="center", fontsize=7,
                in_layout=False)


#: The steps of the colour scale of p-value heatmaps: a break at 0.05 (and at 0.001, 0.01, 0.1,
#: 0.5), so that p = 0.013 and p = 0.075 never share a colour.
P_BOUNDARIES = (0.0, 0.001, 0.01, 0.05, 0.1, 0.5, 1.0)
#: Their colours: three blues below 0.05 (darker: smaller p), light colours above.
_P_COLOURS = ("#08306b", "#2171b5", "#6baed6", "#fdd49e", "#f7f7f7", "#ffffff")


def p_value_scale() -> dict[str, Any]:
    """``cmap`` and ``norm`` of a p-value heatmap (`P_BOUNDARIES`, `_P_COLOURS`): a
    ``BoundaryNorm`` with its break at 0.05."""
    from matplotlib.colors import BoundaryNorm, ListedColormap

    cmap = ListedColormap(list(_P_COLOURS), name="storyeval_p").with_extremes(bad="white")
    return {"cmap": cmap, "norm": BoundaryNorm(list(P_BOUNDARIES), cmap.N)}


def _write_values(ax, image, values: np.ndarray, marked: np.ndarray, digits: int, *,
                  pvalues: bool = False) -> None:
    """The value of every defined cell, in black or white by the luminance of its colour
    (p-values as `storyeval.report.present.p_text` prints them)."""
    from storyeval.report.present import p_text

    rgba = image.cmap(image.norm(values))
    luminance = rgba[..., :3] @ np.array([0.299, 0.587, 0.114])  # readable on any colormap
    for i, j in zip(*np.nonzero(np.isfinite(values))):
        star = "*" if marked[i, j] else ""
        # in_layout=False: the texts lie inside the axes; nothing needs to measure them
        shown = p_text(values[i, j]) if pvalues else fixed(values[i, j], digits)
        ax.text(j, i, f"{shown}{star}", ha="center", va="center",
                fontsize=6, color="black" if luminance[i, j] > 0.5 else "white",
                in_layout=False)


class _Layout:
    """Figure size and margins (inches) computed from the labels, instead of a layout engine
    that measures every tick label (seconds for a 192-row grid)."""

    _CHAR_IN = {7: 0.056, 8: 0.064}  # mean width of a character of DejaVu Sans at 7 / 8 pt
    _MAX_PIXELS = 6000  # the longer side of a PNG, at most (dpi lowered for very tall grids)

    def __init__(self, n_rows: int, n_cols: int, row_label: int, col_label: int,
                 title: str, annotate: bool) -> None:
        self.left = 0.25 + self._CHAR_IN[7] * row_label
        self.bottom = 0.3 + 0.71 * self._CHAR_IN[8] * col_label
        cell_w, cell_h = (0.62, 0.26) if annotate else (0.45, 0.16)
        self.plot_w = max(2.0, cell_w * n_cols)
        self.plot_h = max(1.2, cell_h * n_rows)
        self.right = 1.1  # colour bar and its label
        self.width = max(4.0, self.left + self.plot_w + self.right)
        self.title = textwrap.fill(title, width=max(40, int(self.width * 11)))
        self.top = 0.25 + 0.17 * (self.title.count("\n") + 1)
        self.height = self.bottom + self.plot_h + self.top
        self.dpi = min(150.0, self._MAX_PIXELS / max(self.width, self.height))

    @classmethod
    def of(cls, matrix: pd.DataFrame, title: str, annotate: bool) -> _Layout:
        longest = lambda labels: max((len(str(x)) for x in labels), default=1)
        return cls(*matrix.shape, longest(matrix.index), longest(matrix.columns), title,
                   annotate)

    def axes(self, fig):
        """The heatmap's axes and the colour bar's axes, placed in figure fractions."""
        W, H = self.width, self.height
        ax = fig.add_axes((self.left / W, self.bottom / H, self.plot_w / W, self.plot_h / H))
        bar_h = min(self.plot_h, max(1.0, 0.6 * self.plot_h))
        cax = fig.add_axes(((self.left + self.plot_w + 0.15) / W,
                            (self.bottom + (self.plot_h - bar_h) / 2) / H, 0.15 / W, bar_h / H))
        return ax, cax


def _import_extensions_here() -> None:
    """Import, in the calling thread, every extension module that starting the workers needs.

    The workers start on a background thread. Importing an extension module there calls
    ``dlopen`` while holding the GIL, and that deadlocks against a thread inside
    ``dl_iterate_phdr`` that waits for the GIL (threadpoolctl's scan of the loaded BLAS
    libraries, which the Kendall kernels run): seen in CI on Python 3.10, a run that hung in
    `storyeval meta --out`. With these loaded first, the background thread loads no library.
    """
    import _multiprocessing  # noqa: F401
    import _posixsubprocess  # noqa: F401
    import concurrent.futures.process  # noqa: F401
    import multiprocessing.connection  # noqa: F401
    import multiprocessing.forkserver  # noqa: F401
    import multiprocessing.popen_forkserver  # noqa: F401
    import multiprocessing.queues  # noqa: F401
    import multiprocessing.resource_tracker  # noqa: F401
    import multiprocessing.synchronize  # noqa: F401

    import storyeval.report._lifeline  # noqa: F401


class FigureWorkers:
    """Worker processes that draw the heatmaps of a report in parallel with each other and with
    the rest of the run: a report's four heatmaps on two cores take about half the time, and
    workers started before the computation load matplotlib meanwhile.

    The workers are forked from a forkserver that has loaded matplotlib (it is single-threaded,
    so forking it is safe, unlike forking this process, whose BLAS and numba threads may run).
    Use `start`, which returns None where no workers can help (one core, no forkserver on the
    platform, or ``STORYEVAL_FIGURE_WORKERS=0``); `submit` takes `heatmap`'s arguments. As
    with any multiprocessing, a script that uses workers guards its entry point with
    ``if __name__ == "__main__":`` (the workers import the main module). The forkserver and
    the workers die with this process whatever ends it, SIGKILL included (Linux: the kernel's
    parent-death signal; elsewhere, and as a second line, a thread that checks the parent
    every 0.2 s; `storyeval.report._lifeline`).

    Example (what ``storyeval meta --out D`` does)::

        with FigureWorkers.start() or contextlib.nullcontext() as workers:
            write_report(result, "D", figure_workers=workers)
    """

    def __init__(self, workers: int) -> None:
        import os
        import threading

        _import_extensions_here()
        self._pool = None
        # the forkserver's guard arms only a child of the process named here (set before the
        # thread starts: changing the environment while other threads run is unsafe)
        os.environ["STORYEVAL_FORKSERVER_PARENT"] = str(os.getpid())
        # starting the forkserver waits for its imports: a thread waits, the caller goes on
        self._starting = threading.Thread(target=self._start, args=(workers,), daemon=True)
        self._starting.start()

    def _start(self, workers: int) -> None:
        import multiprocessing
        import os
        from concurrent.futures import ProcessPoolExecutor

        from storyeval.report._lifeline import guard_worker

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__, "matplotlib.figure",
                                        "matplotlib.backends.backend_agg",
                                        "storyeval.report._forkserver_guard"])
        # the forkserver and every worker die with this process, even on SIGKILL
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                   initializer=guard_worker, initargs=(os.getpid(),))
        for _ in range(workers):  # every worker now, not at the first figure
            pool.submit(int)
        self._pool = pool

    @classmethod
    def start(cls) -> FigureWorkers | None:
        """Workers for this machine, or None (see the class doc)."""
        import multiprocessing
        import os

        wanted = os.environ.get("STORYEVAL_FIGURE_WORKERS", "").strip()
        if wanted and not wanted.isdigit():
            raise InputError(f"STORYEVAL_FIGURE_WORKERS must be a whole number of worker "
                             f"processes (0: draw in this process), not {wanted!r}")
        workers = int(wanted) if wanted else min(2, os.cpu_count() or 1)
        if workers < 1 or (not wanted and workers < 2):
            return None
        if "forkserver" not in multiprocessing.get_all_start_methods():
            return None
        return cls(workers)

    def submit(self, *args: object, **kwargs: object):
        """`heatmap` in a worker; a future of its paths."""
        self._starting.join()
        if self._pool is None:
            raise RuntimeError("the figure workers could not start")
        return self._pool.submit(heatmap, *args, **kwargs)

    def close(self) -> None:
        self._starting.join()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> FigureWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def cluster_figure(average: pd.DataFrame, level: str, path_stem, *,
                   formats: Sequence[str] = ("png",)) -> list:
    """Heatmap of cluster ranks (rows x criteria) at ``level`` from an `average_ranks` table
    (its name column may be ``measure`` or ``rater``), rows by average rank."""
    part = average[average["level"] == level].drop(columns=["level"])
    name = part.columns[0]
    matrix = part.set_index(name).drop(columns=["average_rank"]).astype(float)
    top = float(np.nanmax(matrix.to_numpy())) if matrix.size else 1.0
    return heatmap(matrix, path_stem, cmap="viridis_r", vmin=1.0, vmax=max(top, 2.0),
                   title=f"Significance clusters ({level} level; 1 = top group)",
                   colorbar_label="cluster rank", digits=0, formats=formats)
