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
from storyeval.report.present import fixed, interval_text, join_intervals, p_clause

__all__ = ["forest_plot_svg", "leaderboard_answer", "nice_ticks", "pairs_by_p",
           "write_leaderboard_report"]


def nice_ticks(lo: float, hi: float, *, target: int = 5) -> tuple[list[float], int]:
    """Round tick positions within ``[lo, hi]``: steps of 1, 2, 2.5 or 5 times a power of ten,
    the step whose count of ticks (at least 3) is closest to ``target``; and the decimals that
    print them exactly."""
    span = hi - lo if hi > lo else 1.0
    power = math.floor(math.log10(span / max(target - 1, 1)))
    best: tuple[float, float, list[float]] | None = None
    for exponent in (power - 1, power, power + 1):
        for mantissa in (1, 2, 2.5, 5):
            step = mantissa * 10.0 ** exponent
            first = math.ceil(lo / step - 1e-9)
            ticks = [round((first + k) * step, 12) for k in range(int((hi - lo) / step) + 2)
                     if (first + k) * step <= hi + 1e-9 * step]
            if len(ticks) < 3:
                continue
            score = abs(len(ticks) - target)
            if best is None or score < best[0]:
                best = (score, step, ticks)
    assert best is not None  # a step of a tenth of the span always gives at least 3
    step, ticks = best[1], best[2]
    exponent = math.floor(math.log10(step) + 1e-12)
    decimals = max(0, -exponent)
    if abs(step / 10.0 ** exponent - 2.5) < 1e-9:
        decimals += 1
    return ticks, decimals


#: Fill of the band behind each significance group's rows (alternating) and its ink.
_BANDS = ("#e6f0fa", "#ffffff")
_INK = ("#1f5fa8", "#b35900", "#2e7d32", "#7b3fa0", "#a02c2c", "#555555")


def forest_plot_svg(table: pd.DataFrame, *, value: str = "log_strength", low: str = "ci_low",
                    high: str = "ci_high", label: str = "item",
                    xlabel: str = "log-strength (centred)", group: str | None = "group") -> str:
    """A forest plot (point and interval per row, rows in the table's order) as SVG text:
    round axis ticks, each significance group (``group`` column) on its own band with its
    number at the right, labels at 14 px of a 480-px-wide drawing (about 11 px on a 400 px
    phone, where it is scaled to the page)."""
    n = len(table)
    font, row_h, top, width = 14, 26, 26, 480
    names = [str(v) for v in table[label]]
    shown = [t if len(t) <= 22 else t[:21] + "\u2026" for t in names]
    left = 12 + int(0.6 * font * max([len(t) for t in shown] + [4]))
    right = 46
    height = top + row_h * n + 52
    vals = pd.concat([table[value], table[low], table[high]]).astype(float)
    vals = vals[vals.map(math.isfinite)]
    lo, hi = (float(vals.min()), float(vals.max())) if len(vals) else (-1.0, 1.0)
    if hi - lo < 1e-12:
        lo, hi = lo - 1, hi + 1
    pad = 0.05 * (hi - lo)
    lo, hi = lo - pad, hi + pad
    ticks, decimals = nice_ticks(lo, hi)

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * (width - left - right)

    esc = html.escape
    groups = (list(table[group]) if group is not None and group in table.columns
              else [pd.NA] * n)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
           f"viewBox='0 0 {width} {height}' font-family='sans-serif' font-size='{font}' "
           "role='img'>",
           f"<rect width='{width}' height='{height}' fill='white'/>"]
    known = [g for g in groups if not pd.isna(g)]
    if known:
        out.append(f"<text x='{width - right / 2:.1f}' y='{top - 8}' text-anchor='middle' "
                   f"font-size='{font - 2}' fill='#444'>group</text>")
    for k, g in enumerate(groups):  # the bands first, under everything
        if pd.isna(g):
            continue
        out.append(f"<rect x='0' y='{top + row_h * k}' width='{width}' height='{row_h}' "
                   f"fill='{_BANDS[(int(g) - 1) % 2]}'/>")
    for t in ticks:  # light grid lines at the ticks
        out.append(f"<line x1='{x(t):.1f}' y1='{top}' x2='{x(t):.1f}' y2='{top + row_h * n}' "
                   "stroke='#ddd'/>")
    if lo < 0 < hi:
        out.append(f"<line x1='{x(0):.1f}' y1='{top - 4}' x2='{x(0):.1f}' "
                   f"y2='{top + row_h * n}' stroke='#888' stroke-dasharray='4 3'/>")
    for k, rec in enumerate(table.to_dict("records")):
        y = top + row_h * k + row_h / 2
        g = groups[k]
        ink = _INK[(int(g) - 1) % len(_INK)] if not pd.isna(g) else _INK[0]
        out.append(f"<text x='{left - 8}' y='{y + font / 3:.1f}' text-anchor='end'>"
                   f"<title>{esc(names[k])}</title>{esc(shown[k])}</text>")
        a, b, v = (float(rec[low]), float(rec[high]), float(rec[value]))
        if math.isfinite(a) and math.isfinite(b):
            out.append(f"<line x1='{x(a):.1f}' y1='{y:.1f}' x2='{x(b):.1f}' y2='{y:.1f}' "
                       f"stroke='{ink}' stroke-width='2.5'/>")
        if math.isfinite(v):
            out.append(f"<circle cx='{x(v):.1f}' cy='{y:.1f}' r='5' fill='{ink}'/>")
        if not pd.isna(g):
            out.append(f"<text x='{width - right / 2:.1f}' y='{y + font / 3:.1f}' "
                       f"text-anchor='middle' fill='{ink}' font-weight='bold'>{int(g)}</text>")
    axis_y = top + row_h * n + 4
    out.append(f"<line x1='{left}' y1='{axis_y}' x2='{width - right}' y2='{axis_y}' "
               "stroke='#333'/>")
    for t in ticks:
        out.append(f"<line x1='{x(t):.1f}' y1='{axis_y}' x2='{x(t):.1f}' y2='{axis_y + 5}' "
                   "stroke='#333'/>")
        out.append(f"<text x='{x(t):.1f}' y='{axis_y + 20}' text-anchor='middle'>"
                   f"{fixed(t, decimals)}</text>")
    out.append(f"<text x='{(left + width - right) / 2:.1f}' y='{axis_y + 42}' "
               f"text-anchor='middle'>{esc(xlabel)}</text></svg>")
    return "\n".join(out) + "\n"


def leaderboard_answer(board: Leaderboard, *, digits: int = 3) -> list[str]:
    """The leaderboard's answer in words: which items share the top (significance group 1,
    the items not significantly weaker than the strongest one), each with its log-strength
    and interval, and the test that separates the top group from the next item. Without
    tests (no resamples), the strongest item by its point estimate, said to be untested."""
    table, st = board.table, board.settings
    if table.empty:
        return ["no items"]
    level = st.get("confidence_level", 0.95)
    alpha = st.get("alpha", 0.05)

    def item(row) -> str:
        ci = interval_text(row["ci_low"], row["ci_high"], digits)
        return f"{row['item']} {fixed(row['log_strength'], digits)}" + (f" {ci}" if ci else "")

    rows = table.to_dict("records")
    where = f" on {rows[0]['dimension']}" if "dimension" in table.columns else ""
    if table["group"].isna().all():
        return [f"Strongest{where} by its point estimate: {item(rows[0])} (log-strength); "
                "not tested: no bootstrap resamples (--resamples > 0 gives intervals and "
                "significance groups)"]
    top = [r for r in rows if r["group"] == 1]
    rest = [r for r in rows if r["group"] != 1]
    lead = rows[0]
    if len(top) == len(rows):
        return [f"All {len(rows)} items tied at the top{where}: none is significantly weaker "
                f"than {lead['item']} (paired bootstrap tests, BH at {alpha:g}): "
                + "; ".join(item(r) for r in top)]
    nxt = rest[0]
    p = _pair_p(board.pairs, lead["item"], nxt["item"])
    sep = (f"{nxt['item']} ({fixed(nxt['log_strength'], digits)}) is the first item "
           f"significantly weaker than {lead['item']} ({p_clause(p)}, BH-adjusted)")
    if len(top) == 1:
        head = f"{lead['item']} is the strongest{where}: {item(lead)}"
    else:
        head = (f"Tied at the top{where} ({len(top)} items, none significantly weaker than "
                f"{lead['item']}): " + "; ".join(item(r) for r in top))
    return [head, f"{sep}; log-strengths with their {level:g} bootstrap intervals over "
                  f"{st.get('resample')}s; groups: paired bootstrap tests, BH at {alpha:g}"]


def _pair_p(pairs: pd.DataFrame, a: str, b: str) -> float:
    hit = pairs[((pairs["item_a"] == a) & (pairs["item_b"] == b))
                | ((pairs["item_a"] == b) & (pairs["item_b"] == a))]
    return float(hit["pvalue_bh"].iloc[0]) if len(hit) else float("nan")


def pairs_by_p(pairs: pd.DataFrame) -> pd.DataFrame:
    """The pairwise tests, most significant first (adjusted p, then raw p, then names)."""
    if pairs.empty:
        return pairs
    return pairs.sort_values(["pvalue_bh", "pvalue", "item_a", "item_b"],
                             kind="stable").reset_index(drop=True)


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
    forest = forest_plot_svg(board.table)
    pairs = pairs_by_p(board.pairs)
    answer = [Block("heading", "Answer: which items lead"),
              *[Block("lead", line) for line in leaderboard_answer(board, digits=digits)],
              Block("svg", f"log-strengths with their {level:g} intervals, strongest first; "
                           "bands and numbers: significance groups", items=(forest,))]
    page = Page("Leaderboard", facts, [
        Block("heading", "Leaderboard"),
        Block("table", "strengths, intervals, ranks and groups (all columns in "
                       "leaderboard.csv)", table=join_intervals(board.table, digits),
              index=False),
        Block("heading", "Pairwise tests"),
        Block("table", f"paired bootstrap test of equal strengths, BH-adjusted, most "
                       f"significant first ({len(pairs)} pairs; all in pairs.csv)",
              table=pairs.head(200), index=False, collapsed=len(pairs) > 15),
    ], files=files, answer=answer)
    with OutputFolder(out, overwrite=overwrite, command="pairwise strengths") as folder:
        written = [folder.write_text("leaderboard.csv", csv_text(board.table)),
                   folder.write_text("pairs.csv", csv_text(board.pairs)),
                   folder.write_text("forest.svg", forest),
                   folder.write_text(INDEX, render_page(page, digits=digits))]
    return written
