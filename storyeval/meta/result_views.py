"""Notebook views of a `MetaResult`: a short ``repr``, a text summary, one tidy table and an
HTML rendering (``_repr_html_``), built from the result's three tables and its settings.

Kept apart from the pipeline: they only read a finished result.
"""

from __future__ import annotations

import html
from typing import Protocol

import numpy as np
import pandas as pd

from storyeval.meta.decisions import ResultLike


class MetaResult(ResultLike, Protocol):
    """What these views read of a `storyeval.meta.pipeline.MetaResult` (a protocol, because
    that module imports this one for the result's methods)."""

    def correlation_grid(self, level: str) -> pd.DataFrame: ...

__all__ = ["TIDY_COLUMNS", "result_html", "result_repr", "result_summary", "tidy_frame"]

#: Columns of `MetaResult.to_frame`: one number per row.
TIDY_COLUMNS = ("table", "level", "criterion", "measure", "other", "quantity", "value", "n",
                "reason", "measure_name", "other_name")
_BASELINE_LABEL = "human baseline"
#: The human baselines of `summary()`, named (`storyeval.meta.baseline`): each annotator against
#: the mean of all (an upper bound) and against the mean of the others (leave-one-out).
_BASELINE_NAMES = {"upper_bound": "upper bound", "leave_one_out": "leave-one-out"}


def result_repr(result: MetaResult) -> str:
    """One line: what was correlated and what the result holds (never the tables)."""
    s = result.settings
    levels = ", ".join(s.get("levels", []))
    n_measures = result.correlations["measure"].nunique() if len(result.correlations) else 0
    return (f"<MetaResult {s.get('dataset', '?')!r}: {s.get('n_systems', '?')} systems, "
            f"{s.get('n_stories', '?')} stories; {n_measures} measures x "
            f"{len(s.get('criteria', []))} criteria; {s.get('coefficient', '?')} at {levels}; "
            f"{len(result.comparisons)} comparison tests. "
            ".summary(), .to_frame(), .correlations, .baseline, .comparisons>")


def tidy_frame(result: MetaResult) -> pd.DataFrame:
    """Every number of the result as one row (`TIDY_COLUMNS`; ``measure`` and ``other`` are the
    identifiers as in the data, ``measure_name`` and ``other_name`` their display names, as the
    tables and figures print them): correlations (quantity: the
    coefficient, and ``ci_low`` / ``ci_high`` when intervals were computed), the human baseline
    (measure ``"human baseline"``, other: the variant) and the comparison tests (measure: the
    compared measure ``measure_a``, other: ``measure_b``; quantities ``r_a``, ``r_b``, ``t``,
    ``p``, ``p_adjusted``)."""
    parts = [_tidy_correlations(result.correlations), _tidy_baseline(result.baseline),
             _tidy_comparisons(result.comparisons)]
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=list(TIDY_COLUMNS))
    out = pd.concat(parts, ignore_index=True)
    names = _display_names(result)
    out["measure_name"] = out["measure"].map(lambda m: names.get(m, m))
    out["other_name"] = out["other"].map(lambda m: names.get(m, m))
    out["n"] = out["n"].astype("Int64")
    out["reason"] = out["reason"].fillna("").astype(str)
    return out.loc[:, list(TIDY_COLUMNS)]


def _display_names(result: MetaResult) -> dict[str, str]:
    """Display name of every measure identifier of the result (``BLEU`` for HANNA's
    ``BLEU Ξ§``); identifiers without one map to themselves."""
    corr = result.correlations
    if corr.empty or "display_name" not in corr.columns:
        return {}
    rows = corr.drop_duplicates("measure")
    return {m: (d if isinstance(d, str) and d else m)
            for m, d in zip(rows["measure"], rows["display_name"])}


def _melt(frame: pd.DataFrame, table: str, measure: pd.Series | str, other: pd.Series | str,
          quantities: dict[str, str]) -> pd.DataFrame:
    """One row per (row of ``frame``, quantity): ``quantities`` maps a column of ``frame``
    to the quantity's name (a column name, or ``"@coefficient"`` for the row's coefficient)."""
    rows = []
    for column, name in quantities.items():
        if column not in frame.columns:
            continue
        rows.append(pd.DataFrame({
            "table": table, "level": frame["level"].to_numpy(),
            "criterion": frame["criterion"].to_numpy(),
            "measure": measure if isinstance(measure, str) else measure.to_numpy(),
            "other": other if isinstance(other, str) else other.to_numpy(),
            "quantity": (frame["coefficient"].to_numpy() if name == "@coefficient" else name),
            "value": frame[column].to_numpy(dtype=float),
            "n": frame["n"].to_numpy() if "n" in frame.columns else np.nan,
            "reason": frame["reason"].to_numpy() if "reason" in frame.columns else "",
        }))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def _tidy_correlations(corr: pd.DataFrame) -> pd.DataFrame:
    if corr.empty:
        return pd.DataFrame()
    return _melt(corr, "correlation", corr["measure"], "",
                 {"value": "@coefficient", "ci_low": "ci_low", "ci_high": "ci_high"})


def _tidy_baseline(base: pd.DataFrame) -> pd.DataFrame:
    if base.empty:
        return pd.DataFrame()
    return _melt(base, "baseline", _BASELINE_LABEL, base["variant"],
                 {"value": "@coefficient", "ci_low": "ci_low", "ci_high": "ci_high"})


def _tidy_comparisons(will: pd.DataFrame) -> pd.DataFrame:
    if will.empty:
        return pd.DataFrame()
    return _melt(will, "comparisons", will["measure_a"], will["measure_b"],
                 {"r_a": "r_a", "r_b": "r_b", "t": "t", "p": "p", "p_adjusted": "p_adjusted"})


def result_summary(result: MetaResult, *, alpha: float = 0.05) -> str:
    """A few lines: the data and settings, then per level and criterion the best measure,
    the human baselines by name (upper bound: each annotator against the mean of all
    annotators; leave-one-out: against the mean of the others) and how many comparison tests (the ``comparisons`` table: Williams' t on
    HANNA, the calibrated tests on other data) are significant after adjustment."""
    s = result.settings
    lines = [f"Meta-evaluation of {s.get('dataset', '?')!r}: {s.get('n_systems', '?')} systems, "
             f"{s.get('n_stories', '?')} stories, "
             f"{result.correlations['measure'].nunique()} measures, "
             f"criteria {', '.join(s.get('criteria', []))}",
             f"coefficient: {s.get('coefficient_description', s.get('coefficient', '?'))}"]
    will = s.get("comparisons", {})
    if will and len(result.comparisons):
        tests = will.get("test", {})
        named = ", ".join(f"{lvl} {test}" for lvl, test in tests.items()) \
            if isinstance(tests, dict) else str(tests)
        lines.append(f"comparison tests ({named}): {will.get('comparison', '')}; "
                     f"{will.get('adjustment', '').upper()} adjustment, family "
                     f"{will.get('family', '')}; significant at {alpha:g} after adjustment")
    for level in s.get("levels", []):
        lines.append(f"{level} level:")
        lines += [f"  {line}" for line in _level_lines(result, level, alpha)]
    return "\n".join(lines)


def _level_lines(result: MetaResult, level: str, alpha: float) -> list[str]:
    corr = result.correlations[result.correlations["level"] == level]
    base = result.baseline
    base = base[base["level"] == level] if len(base) else base
    will = result.comparisons
    will = will[will["level"] == level] if len(will) else will
    lines = []
    for crit in result.settings.get("criteria", []):
        rows = corr[(corr["criterion"] == crit) & corr["value"].notna()]
        if rows.empty:
            lines.append(f"{crit}: no defined correlation")
            continue
        best = rows.loc[rows["value"].abs().idxmax()]
        text = f"{crit}: largest |r| {best['display_name']} {best['value']:.3f} (n={best['n']})"
        human = base[base["criterion"] == crit] if len(base) else base
        named = []
        for variant, name in _BASELINE_NAMES.items():
            rows = human[human["variant"] == variant] if len(human) else human
            if len(rows) and np.isfinite(rows["value"].iloc[0]):
                named.append(f"{name} {rows['value'].iloc[0]:.3f}")
        if named:
            text += f"; human baselines: {', '.join(named)}"
        tests = will[will["criterion"] == crit] if len(will) else will
        if len(tests):
            sig = int((tests["p_adjusted"] < alpha).sum())
            text += f"; {sig} of {len(tests)} tests significant"
        lines.append(text)
    return lines


def result_html(result: MetaResult, *, digits: int = 3) -> str:
    """An HTML fragment for notebooks that opens with the answer (`storyeval.meta.answer`:
    per level and criterion the best measure, its interval, the test against the next one, its
    top group, as ``index.html`` does), then the facts and, folded (``<details>``), per level
    the correlation grid (measures x criteria) with the human baseline row. No scripts, no
    external files."""
    from storyeval.meta.answer import answer_notes, answer_table

    s = result.settings
    parts = ["<div class='storyeval-meta-result'>",
             f"<p><b>MetaResult</b> {html.escape(str(s.get('dataset', '?')))}: "
             f"{s.get('n_systems', '?')} systems, {s.get('n_stories', '?')} stories; "
             f"{html.escape(str(s.get('coefficient_description', '')))}</p>"]
    answer = answer_table(result, digits=digits)
    if len(answer):
        parts.append("<p><b>Answer: which measure agrees best with the humans</b></p>")
        parts.append(answer.to_html(index=False, border=0, escape=True))
        notes = answer_notes(result)
        parts.append("<details><summary>what the answer reads</summary><ul>"
                     + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul></details>")
    for level in s.get("levels", []):
        grid = result.correlation_grid(level)
        base = result.baseline
        if len(base):
            row = base[(base["level"] == level) & (base["variant"] == "upper_bound")]
            if len(row):
                human = row.set_index("criterion")["value"].reindex(grid.columns)
                grid = pd.concat([grid, human.to_frame(_BASELINE_LABEL).T])
        parts.append(f"<details><summary><b>{html.escape(level)} level</b>: correlations of "
                     f"{len(grid)} rows x {grid.shape[1]} criteria</summary>")
        parts.append(grid.round(digits).to_html(na_rep="", border=0))
        parts.append("</details>")
    parts.append("<p><small>.summary() for the best measures and tests; .to_frame() for every "
                 "number as a tidy table.</small></p></div>")
    return "\n".join(parts)
