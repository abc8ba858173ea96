"""Heatmaps: formats, when cells show their values, and a layout that keeps every label."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.exceptions import InputError
from storyeval.report import figures


def _grid(n_rows: int, n_cols: int = 6) -> pd.DataFrame:
    g = np.random.default_rng(n_rows)
    return pd.DataFrame(g.uniform(-1, 1, (n_rows, n_cols)),
                        index=[f"a rather long measure name {i}" for i in range(n_rows)],
                        columns=[f"criterion {j}" for j in range(n_cols)])


def test_formats_are_checked_and_ordered():
    assert figures.check_figure_formats("PDF, png,pdf") == ("pdf", "png")
    assert figures.check_figure_formats([".svg"]) == ("svg",)
    for bad in ("gif", "", "png,jpeg"):
        with pytest.raises(InputError, match="figure format"):
            figures.check_figure_formats(bad)


def test_values_written_only_in_grids_small_enough_to_read(tmp_path, monkeypatch):
    calls = []
    original = figures._write_values
    monkeypatch.setattr(figures, "_write_values",
                        lambda *a, **k: (calls.append(a[2].shape), original(*a, **k)))
    figures.heatmap(_grid(10), tmp_path / "small", title="t")
    figures.heatmap(_grid(192), tmp_path / "large", title="t")
    figures.heatmap(_grid(80), tmp_path / "forced", title="t", annotate=True)
    assert calls == [(10, 6), (80, 6)]
    assert 10 * 6 <= figures.ANNOTATE_MAX_CELLS < 192 * 6


def test_layout_keeps_labels_inside_the_figure(tmp_path):
    plt = figures._pyplot()
    grid = _grid(40)
    layout = figures._Layout.of(grid, "a title " * 30, annotate=True)
    fig = plt.figure(figsize=(layout.width, layout.height))
    ax, _ = layout.axes(fig)
    ax.imshow(grid.to_numpy(), aspect="auto")
    ax.set_xticks(range(6), list(grid.columns), rotation=45, ha="right", rotation_mode="anchor",
                  fontsize=8)
    ax.set_yticks(range(40), list(grid.index), fontsize=7)
    fig.canvas.draw()
    box = ax.get_tightbbox(fig.canvas.get_renderer())
    assert box.x0 >= 0 and box.y0 >= 0  # no tick label cut at the left or the bottom
    plt.close(fig)
    # a very tall grid stays within the pixel budget
    tall = figures._Layout.of(_grid(2000, 2), "t", annotate=False)
    assert max(tall.width, tall.height) * tall.dpi <= 6000 + 1e-6


def test_marks_without_values_are_dots(tmp_path):
    grid = _grid(192)
    marks = pd.DataFrame(False, index=grid.index, columns=grid.columns)
    marks.iloc[3, 2] = True
    (png,) = figures.heatmap(grid, tmp_path / "marked", title="t", marks=marks)
    assert png.stat().st_size > 1000


def test_workers_draw_the_same_files_as_the_caller(tmp_path, monkeypatch):
    """Figures drawn by worker processes are the files drawn in-process, byte for byte, and
    they are published with the rest of the report."""
    import filecmp

    from storyeval.meta.pipeline import meta_evaluate
    from storyeval.report.figures import FigureWorkers
    from storyeval.report.meta_files import write_report

    result = meta_evaluate(measures="BLEU,chrF,Text length", levels=["overall", "system"])
    here = write_report(result, tmp_path / "here")
    with FigureWorkers(2) as workers:
        there = write_report(result, tmp_path / "there", figure_workers=workers)
    assert sorted(p.name for p in here) == sorted(p.name for p in there)
    pngs = [p.name for p in here if p.suffix == ".png"]
    assert pngs
    for name in pngs:
        assert filecmp.cmp(tmp_path / "here" / name, tmp_path / "there" / name, shallow=False)
    monkeypatch.setenv("STORYEVAL_FIGURE_WORKERS", "0")
    assert FigureWorkers.start() is None
    monkeypatch.setenv("STORYEVAL_FIGURE_WORKERS", "two")
    with pytest.raises(InputError, match="STORYEVAL_FIGURE_WORKERS"):
        FigureWorkers.start()


def test_p_value_heatmaps_break_at_0_05_and_name_the_mark_they_draw(tmp_path):
    # issue 53: p 0.013 and 0.075 never share a colour; the legend names the mark drawn
    scale = figures.p_value_scale()
    colour = [scale["cmap"](scale["norm"](p)) for p in (0.0004, 0.013, 0.049, 0.051, 0.075, 1)]
    assert colour[1] != colour[4] and colour[2] != colour[3] and colour[3] == colour[4]
    assert 0.05 in figures.P_BOUNDARIES
    small = pd.DataFrame([[0.013, 0.075], [0.0004, 1.0]], index=["a", "b"], columns=["x", "y"])
    marks = small < 0.05
    fig = figures.heatmap(small, title="p", pvalues=True, marks=marks, marks_label="m")
    assert fig._suptitle.get_text() == "p; * m"  # values written: the mark is a star
    assert {t.get_text() for t in fig.axes[0].texts} >= {"0.0130*", "< 0.001*", "1.00"}
    big = pd.DataFrame(np.linspace(0, 1, 192 * 6).reshape(192, 6))
    fig = figures.heatmap(big, title="p", pvalues=True, marks=big < 0.05, marks_label="m")
    assert fig._suptitle.get_text() == "p; • m"  # no values: the mark is a dot
    fig = figures.heatmap(small, title="p", pvalues=True, marks=small > 2, marks_label="m")
    assert fig._suptitle.get_text() == "p"  # nothing marked: no legend
