"""HTML report of a leaderboard: the table with rank intervals and groups, a forest plot of the
strengths with their intervals (strongest first, drawn as SVG without a plotting library), the
pairwise tests, and the CSV files, written together into one folder."""

from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from storyeval._atomic import OutputFolder
from storyeval._csv import csv_text
from storyeval.pairwise.leaderboard import Leaderboard
from storyeval.report.html_report import INDEX, Block, Page, render_page, versions

__all__ = ["forest_plot_svg", "write_leaderboard_report"]


def forest_plot_svg(table: pd.DataFrame, *, value: str = "log_strength", low: str = "ci_low",
                    high: str = "ci_high", label: str = "item",
                    xlabel: str = "log-strength (centred)") -> str:
    """A forest plot (point and interval per row, rows in the table's order) as SVG text."""
    n = len(table)
    row_h, left, right, top = 22, 190, 30, 20
    width = 720
    height = top + row_h * n + 45
    vals = pd.concat([table[value], table[low], table[high]]).astype(float)
    vals = vals[vals.map(math.isfinite)]
    lo, hi = (float(vals.min()), float(vals.max())) if len(vals) else (-1.0, 1.0)
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1
    pad = 0.05 * (hi - lo)
    lo, hi = lo - pad, hi + pad

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (width - left - right)

    esc = html.escape
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' font-family='sans-serif' font-size='12'>",
           f"<rect width='{width}' height='{height}' fill='white'/>"]
    if lo < 0 < hi:
        out.append(f"<line x1='{x(0):.1f}' y1='{top - 5}' x2='{x(0):.1f}' "
                   f"y2='{top + row_h * n}' stroke='#999' stroke-dasharray='4 3'/>")
    for k, row in enumerate(table.itertuples(index=False)):
        y = top + row_h * k + row_h / 2
        rec = row._asdict()
        out.append(f"<text x='{left - 8}' y='{y + 4:.1f}' text-anchor='end'>"
                   f"{esc(str(rec[label]))}</text>")
        a, b, v = (float(rec[low]), float(rec[high]), float(rec[value]))
        if math.isfinite(a) and math.isfinite(b):
            out.append(f"<line x1='{x(a):.1f}' y1='{y:.1f}' x2='{x(b):.1f}' y2='{y:.1f}' "
                       "stroke='#1f77b4' stroke-width='2'/>")
        if math.isfinite(v):
            out.append(f"<circle cx='{x(v):.1f}' cy='{y:.1f}' r='4' fill='#1f77b4'/>")
    axis_y = top + row_h * n + 5
    out.append(f"<line x1='{left}' y1='{axis_y}' x2='{width - right}' y2='{axis_y}' "
               "stroke='#333'/>")
    for k in range(5):
        v = lo + (hi - lo) * k / 4
        out.append(f"<text x='{x(v):.1f}' y='{axis_y + 15}' text-anchor='middle'>{v:.2f}</text>")
    out.append(f"<text x='{(left + width - right) / 2:.1f}' y='{axis_y + 33}' "
               f"text-anchor='middle'>{esc(xlabel)}</text></svg>")
    return "\n".join(out) + "\n"


def write_leaderboard_report(board: Leaderboard, out: str | Path, *, overwrite: bool = False,
                             digits: int = 3, source: str = "") -> list[Path]:
    """Write ``index.html``, ``leaderboard.csv``, ``pairs.csv`` and ``forest.svg`` to ``out``.

    Returns the written paths. The folder is written atomically (all files or none).
    """
    st = board.settings
    level = st.get("confidence_level", 0.95)
    facts = [("source", source or "verdicts"),
             ("model", f"Bradley-Terry, ties: {st.get('ties')}"),
             ("intervals", f"{level:g} percentile bootstrap, {st.get('n_resamples')} resamples "
                           f"of {st.get('resample')}s, seed {st.get('seed')}"),
             ("ranks", "rank = point estimate; rank interval = percentile interval of the "
                       "bootstrap ranks; CI-aware rank = 1 + number of items whose interval "
                       "lies wholly above"),
             ("groups", f"paired bootstrap tests of every pair, Benjamini-Hochberg at "
                        f"{st.get('alpha')}; a new group starts at the first item significantly "
                        "weaker than its group's leader"),
             ("versions", versions())]
    files = ["leaderboard.csv", "pairs.csv", "forest.svg"]
    page = Page("Leaderboard", facts, [
        Block("heading", "Strengths (strongest first)"),
        Block("figure", f"log-strengths with their {level:g} intervals", items=("forest.svg",)),
        Block("table", "leaderboard", table=board.table),
        Block("heading", "Pairwise tests"),
        Block("table", "paired bootstrap test of equal strengths, BH-adjusted",
              table=board.pairs.head(200)),
    ], files=files)
    with OutputFolder(out, overwrite=overwrite, command="pairwise strengths") as folder:
        written = [folder.write_text("leaderboard.csv", csv_text(board.table)),
                   folder.write_text("pairs.csv", csv_text(board.pairs)),
                   folder.write_text("forest.svg", forest_plot_svg(board.table)),
                   folder.write_text(INDEX, render_page(page, digits=digits))]
    return written
