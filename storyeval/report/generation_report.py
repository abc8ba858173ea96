"""Figures and HTML sections of the generation statistics and robustness suites (a small module
of its own; the main HTML report is `storyeval.report.html_report`)."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from storyeval._figure_io import _pyplot, save_figure

__all__ = ["plot_over_time", "robustness_html", "table_html"]


def plot_over_time(table: pd.DataFrame, path: str | Path, *, group: str, time: str,
                   value: str = "mean", sd: str | None = "sd") -> Path:
    """One panel per statistic: ``value`` over ``time``, one line per ``group``, with +- ``sd``
    error bars when that column exists (the SD across runs)."""
    plt = _pyplot()
    stats_ = sorted(table["statistic"].unique())
    fig, axes = plt.subplots(1, len(stats_), figsize=(3.6 * len(stats_), 3.2), squeeze=False)
    for ax, st in zip(axes[0], stats_):
        sub = table[table["statistic"] == st]
        for g, rows in sub.groupby(group, sort=True):
            rows = rows.sort_values(time)
            err = rows[sd] if sd and sd in rows.columns else None
            ax.errorbar(rows[time].astype(str), rows[value], yerr=err, marker="o", capsize=3,
                        label=str(g))
        ax.set_title(st)
        ax.set_xlabel(time)
    axes[0][0].legend(fontsize="small")
    fig.tight_layout()
    out = save_figure(fig, path, dpi=120)
    plt.close(fig)
    return out


def table_html(table: pd.DataFrame, *, digits: int = 3) -> str:
    """An escaped HTML table (numbers shown with ``digits`` decimals, p-values as
    `storyeval.report.present.p_text` prints them; the CSV keeps all)."""
    from storyeval.report.present import fixed, is_p_column, p_text

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
    pcols = [is_p_column(c) for c in table.columns]
    body = []
    for rec in table.itertuples(index=False):
        cells = []
        for v, is_p in zip(rec, pcols):
            text = ((p_text(v) if is_p else fixed(v, digits)) if isinstance(v, float)
                    else str(v))
            cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def robustness_html(table: pd.DataFrame, *, title: str = "Robustness to perturbations") -> str:
    """A self-contained HTML section: what the columns mean, then the robustness table."""
    note = ("Discrimination: share of (original, perturbed) pairs where the original is "
            "preferred; ties count 0.5. Interval: prompt-clustered CR1 standard error, normal "
            "95%. Mean change: perturbed minus original score; p: two-sided cluster t test of "
            "zero mean change (G - 1 df).")
    return (f"<section class='robustness'><h2>{html.escape(title)}</h2>"
            f"<p>{html.escape(note)}</p>{table_html(table)}</section>")
