"""Writing the files of ``storyeval meta --out``: tidy CSVs, grids in every format, settings,
the heatmaps and ``index.html``.

The texts and tables themselves come from `storyeval.report.meta_report` and the page from
`storyeval.report.html_report`; this module only stages them in one output folder, published
together (`storyeval._atomic.OutputFolder`), so that both can stay free of each other's imports.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from storyeval.meta.pipeline import MetaResult
from storyeval.report import meta_report
from storyeval.report.figures import (
    DEFAULT_FIGURE_FORMATS,
    FigureWorkers,
    check_figure_formats,
    heatmap,
)
from storyeval.report.meta_report import (
    SHORT_COEFFICIENT,
    _slugs,
    comparison_caption,
    correlation_grid,
    effect_caption,
    effect_grid,
    effect_matrix,
    level_caption,
    report_settings,
    tested_criteria,
)
from storyeval.report.tables import FILE_SUFFIX, check_digits, format_table

if TYPE_CHECKING:
    from storyeval._atomic import OutputFolder

__all__ = ["figure_title", "fitted_limits", "measure_rows", "write_report"]

def write_report(result: MetaResult, out_dir: str | Path, *, figures: bool = True,
                 digits: int = 3, overwrite: bool = False,
                 figure_formats: str | Sequence[str] = DEFAULT_FIGURE_FORMATS,
                 figure_workers: FigureWorkers | None = None,
                 extra: Callable | None = None, warnings: Sequence[str] = (),
                 extra_tables: Sequence[tuple[str, pd.DataFrame]] = ()) -> list[Path]:
    """Write tidy CSVs, grids in Markdown/LaTeX/CSV, settings and the figures to ``out_dir``,
    and ``index.html``, one page that ties them together (header facts, tables, figures and
    ``warnings``, the run's warning messages; `storyeval.report.html_report`).

    Files: ``correlations.csv`` (measure, criterion, level, coefficient, value, n, ...),
    ``baseline.csv``, ``comparisons.csv`` (every test, always), ``settings.json``,
    ``correlations_{level}.{md,tex,csv}`` and, with ``figures``, ``kendall_{level}.png``
    (named after the coefficient; ``figure_formats`` such as ``"png,pdf"`` adds formats).
    comparison tests against a reference rater:
    ``comparisons_{level}.{md,tex,csv}`` and the heatmap ``comparisons_{level}.png``. Tests of
    all pairs: one matrix per level and criterion ([`MetaResult.comparison_matrix`][]),
    ``comparisons_{level}_{criterion}.{md,tex,csv}`` (criterion slug such as ``relevance``), and
    its heatmap when it has at most `MATRIX_FIGURE_MAX` measures (the caption of a larger one
    says why it has none). Every comparison table has its effect sizes beside it:
    ``comparisons_{level}_effect.*`` / ``comparisons_{level}_{criterion}_effect.*``, cells
    "delta [low, high]" (the difference of the two correlations and its interval). Warns like
    [`render`][storyeval.report.meta_report.render]. ``extra(folder, figure_formats)`` stages further files in the same folder
    (the ``--clusters`` / ``--length`` tables of ``storyeval meta``); ``extra_tables``, titled
    tables, are shown in index.html after the levels (the clusters, the length tables).

    ``figure_workers`` (`storyeval.report.figures.FigureWorkers`) draws the heatmaps in
    worker processes while the tables are written; by default they are drawn here.

    The files are staged in a hidden folder and moved into ``out_dir`` together at the end
    (`storyeval._atomic.OutputFolder`): an interrupted run leaves the previous files intact.
    A folder that already holds files is an error unless ``overwrite``; then the files of the
    previous run that this run does not write are removed.
    """
    from storyeval._atomic import OutputFolder

    check_digits(digits)
    formats = check_figure_formats(figure_formats)
    result.warn_single_test_families()
    with OutputFolder(out_dir, overwrite=overwrite, command="meta") as folder:
        pending: list = []
        _write_files(result, folder, formats if figures else (), digits, figure_workers,
                     pending)
        if extra is not None:
            extra(folder, formats if figures else ())
        for future in pending:  # the figures drawn by workers, staged before the move
            for path in future.result():
                folder.file(path.name)
        _write_index(result, folder, formats if figures else (), digits, warnings,
                     extra_tables)
    return folder.published


def _write_index(result: MetaResult, folder: OutputFolder, figure_formats: tuple[str, ...],
                 digits: int, warnings: Sequence[str],
                 extra_tables: Sequence[tuple[str, pd.DataFrame]] = ()) -> None:
    """``index.html``, written last: it links every other file of the run."""
    from storyeval.report.html_report import INDEX, image_name, meta_page, render_page

    files = [n for n in folder.names if n != INDEX]
    figures = {}
    coef = result.settings["coefficient"].split("_")[0]
    for name in files:
        stem = Path(name).stem
        if name == image_name(stem, figure_formats) or (
                image_name(stem, figure_formats) is None and name.endswith(".pdf")):
            figures[stem] = name
            if stem.startswith(f"{coef}_"):  # the heatmap of correlations_{level}
                figures[f"correlations_{stem[len(coef) + 1:]}"] = name
    page = meta_page(result, figures=figures, files=files, warnings=warnings, digits=digits,
                     extra_tables=extra_tables)
    folder.write_text(INDEX, render_page(page, digits=digits))


def _write_files(result: MetaResult, folder: OutputFolder, figure_formats: tuple[str, ...],
                 digits: int, workers: FigureWorkers | None = None,
                 pending: list | None = None) -> None:
    """Stage every file of `write_report` in ``folder`` (an ``OutputFolder``); no figures when
    ``figure_formats`` is empty. With ``workers``, the figures' futures go to ``pending``."""
    figures = bool(figure_formats)

    def save(name: str, text: str) -> None:
        folder.write_text(name, text)

    def draw(grid: pd.DataFrame, stem: str, **kwargs) -> None:
        kwargs["title"] = figure_title(kwargs["title"])
        if workers is not None and pending is not None:
            pending.append(workers.submit(grid, folder.staging / stem, formats=figure_formats,
                                          **kwargs))
            return
        for path in heatmap(grid, folder.staging / stem, formats=figure_formats, **kwargs):
            folder.file(path.name)

    save("correlations.csv", format_table(result.correlations, "csv"))
    save("baseline.csv", format_table(result.baseline, "csv"))
    save("comparisons.csv", format_table(result.comparisons, "csv"))
    if not result.chance.empty:
        save("chance.csv", format_table(result.chance, "csv"))
    save("settings.json", json.dumps(report_settings(result), ensure_ascii=False, indent=1))
    coef = result.settings["coefficient"].split("_")[0]
    for level in result.settings["levels"]:
        grid = correlation_grid(result, level)
        _save_grid(save, f"correlations_{level}", grid, level_caption(result, level), digits)
        if figures:
            low, high = fitted_limits(measure_rows(grid))
            draw(grid, f"{coef}_{level}", title=level_caption(result, level), vmin=low,
                 vmax=high, colorbar_label=SHORT_COEFFICIENT[result.settings["coefficient"]]
                 + (" (scale fitted to the measures' values)" if high < 1 else ""))
    for level in result.settings["comparisons"]["levels"]:
        if result.comparisons_all_pairs():
            _write_matrices(result, level, save, draw if figures else None, digits)
            continue
        grid = result.comparison_grid(level)
        if grid.empty:
            continue
        _save_grid(save, f"comparisons_{level}", grid, comparison_caption(result, level),
                   digits)
        effect = effect_grid(result, level, digits)
        if effect is not None and len(effect):
            _save_grid(save, f"comparisons_{level}_effect", effect,
                       effect_caption(result, level), digits)
        if figures:
            # the paper's direction rule tests whichever of the two correlates better: mark the
            # cells where that is the compared measure, not the reference
            swapped = result.comparison_grid(level, column="swapped").reindex(
                index=grid.index, columns=grid.columns).fillna(False).astype(bool)
            draw(grid, f"comparisons_{level}", title=comparison_caption(result, level),
                 marks_label="the compared measure has the larger |r|", pvalues=True,
                 colorbar_label="adjusted p (steps; break at 0.05)", marks=swapped)


def figure_title(text: str) -> str:
    """A caption as a figure title: TeX-like subscripts in plain text
    (``P(T_{n-3} > t)`` -> ``P(T(n-3) > t)``, a t distribution with n - 3 degrees of freedom)."""
    return re.sub(r"_\{([^}]*)\}", r"(\1)", text)


def measure_rows(grid: pd.DataFrame) -> pd.DataFrame:
    """The rows of a correlation grid that are measures (not the human baseline, whose larger
    values would wash the measures' colours out; its cells saturate instead)."""
    ids = list(grid.attrs.get("ids", grid.index))
    keep = [not str(k).startswith("human_baseline:") for k in ids]
    return grid[keep] if any(keep) else grid


def fitted_limits(grid: pd.DataFrame) -> tuple[float, float]:
    """A colour scale symmetric about 0 fitted to a correlation grid: +-(the largest |value|
    rounded up to a tenth), at least 0.1 and at most 1, so that weak correlations are not
    washed out on a -1..1 scale and 0 stays the neutral colour."""
    values = np.abs(grid.to_numpy(dtype=float))
    largest = float(np.nanmax(values)) if np.isfinite(values).any() else 1.0
    limit = min(1.0, max(0.1, np.ceil(largest * 10 - 1e-9) / 10))
    return -limit, limit


def _write_matrices(result: MetaResult, level: str, save: Callable[[str, str], None],
                    draw: Callable[..., None] | None, digits: int) -> None:
    """The all-pairs matrices of one level: tables through ``save``, heatmaps through
    ``draw`` (None: no figures)."""
    slugs = _slugs(tested_criteria(result, level))
    for criterion, slug in slugs.items():
        matrix = result.comparison_matrix(level, criterion)
        caption = comparison_caption(result, level, criterion)
        stem = f"comparisons_{level}_{slug}"
        if draw is not None and len(matrix) > meta_report.MATRIX_FIGURE_MAX:
            caption += (f" (no heatmap: {len(matrix)} measures, more than "
                        f"{meta_report.MATRIX_FIGURE_MAX})")
        _save_grid(save, stem, matrix, caption, digits)
        effect = effect_matrix(result, level, criterion, digits)
        if effect is not None:
            _save_grid(save, f"{stem}_effect", effect,
                       effect_caption(result, level, criterion), digits)
        if draw is not None and len(matrix) <= meta_report.MATRIX_FIGURE_MAX:
            # as in the reference grid: * where the second measure had the larger |r|
            swapped = result.comparison_matrix(level, criterion, column="swapped")
            draw(matrix, stem, title=caption, marks_label="the column measure has the larger |r|",
                 pvalues=True, colorbar_label="adjusted p (steps; break at 0.05)",
                 marks=swapped.fillna(0.0).astype(bool))


def _save_grid(save, stem: str, grid: pd.DataFrame, caption: str, digits: int) -> None:
    table = grid.reset_index()
    table.insert(1, "id", grid.attrs.get("ids", list(grid.index)))  # the data's identifiers
    for fmt in ("md", "latex", "csv"):
        text = format_table(table, fmt, digits=digits, caption=caption if fmt == "latex" else None)
        if fmt == "md":
            text = f"{caption}\n\n{text}"
        save(f"{stem}.{FILE_SUFFIX[fmt]}", text)
