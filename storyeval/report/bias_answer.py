"""The answer that ``storyeval bias`` and ``storyeval pairwise bias`` open with: per rater (or
judge), which of its biases are significant, in which direction, on which criteria.

Read from the battery's tables only (their ``pvalue`` column, or an adjusted one where the table
has it): the answer never tests again.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from storyeval.report.present import fixed, interval_text, p_clause

__all__ = ["BIAS_LABELS", "bias_answer", "bias_answer_caption", "bias_answer_lines"]

#: The short name of each table's bias in the answer's columns.
BIAS_LABELS = {"self_preference": "self-preference", "leniency": "leniency",
               "residual_length": "residual vs length", "position": "position",
               "length": "length preference", "lc_win_rate": "length-controlled win rate",
               "length_balanced": "length-balanced accuracy",
               "eval_prompts": "Eval-Prompt B - A"}
_WHO = ("rater", "judge")
_WHERE = ("criterion", "dimension", "human")
_ADJUSTED = ("pvalue_bh", "p_adjusted", "pvalue_adjusted")


def _p_column(table: pd.DataFrame) -> str | None:
    for name in (*_ADJUSTED, "pvalue"):
        if name in table.columns:
            return name
    return None


def _cell(rows: pd.DataFrame, p_col: str, where: str | None, alpha: float, digits: int,
          short: Mapping[str, str]) -> str:
    """"k of n (criterion +0.31, ...)" (the significant ones, most significant first), or
    "none of n"; a single test without a criterion is the estimate, its interval and p."""
    p = rows[p_col].to_numpy(dtype=float)
    sig = rows[p <= alpha].sort_values(p_col, kind="stable")
    n = len(rows)
    if n == 1 and where is None:
        row = rows.iloc[0]
        text = f"{fixed(row['estimate'], digits)} {interval_text(row['ci_low'], row['ci_high'], digits)}"
        return (f"yes: {text}, {p_clause(row[p_col])}" if len(sig)
                else f"no: {text}, {p_clause(row[p_col])}")
    if sig.empty:
        return f"none of {n}"
    named = [(short.get(str(r[where]), str(r[where])) if where else "")
             + f" {float(r['estimate']):+.{digits}f}"
             for _, r in sig.iterrows()]
    return f"{len(sig)} of {n} (" + ", ".join(t.strip() for t in named) + ")"


def bias_answer(tables: Mapping[str, pd.DataFrame], *, names: Mapping[str, str] | None = None,
                alpha: float = 0.05, digits: int = 2,
                short: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per rater (judge): for each bias that was tested, how many of its tests are
    significant at ``alpha`` and which (criterion and signed estimate, most significant
    first). ``names`` maps a measure to the rater it belongs to (an LLM's criterion-specific
    ratings to its rater group, a metric's identifier to its display name); ``short`` maps a
    criterion to the code the cells name it by (``RE`` for Relevance).

    Tables without p-values (scale use, MAE) are not part of the answer; a table whose rows
    name no rater is one row ``all``."""
    names, short = dict(names or {}), dict(short or {})
    cells: dict[tuple[str, str], str] = {}
    order: list[str] = []
    columns: list[str] = []
    for name, table in tables.items():
        p_col = _p_column(table)
        if p_col is None or table.empty:
            continue
        tested = table[np.isfinite(table[p_col].to_numpy(dtype=float))]
        if tested.empty:
            continue
        who = next((c for c in _WHO if c in tested.columns), None)
        where = next((c for c in _WHERE if c in tested.columns), None)
        raters = (tested[who].astype(str).map(lambda m: names.get(m, m)) if who
                  else pd.Series("all", index=tested.index))
        estimands = (list(dict.fromkeys(tested["estimand"])) if "estimand" in tested.columns
                     else [None])
        for estimand in estimands:
            part = tested if estimand is None else tested[tested["estimand"] == estimand]
            label = BIAS_LABELS.get(name, name) + (
                f" ({estimand})" if estimand is not None and len(estimands) > 1 else "")
            if label not in columns:
                columns.append(label)
            for rater, rows in part.groupby(raters.loc[part.index], sort=False):
                if rater not in order:
                    order.append(rater)
                cells[(rater, label)] = _cell(rows, p_col, where, alpha, digits, short)
    out = pd.DataFrame([{"rater": r, **{c: cells.get((r, c), "") for c in columns}}
                        for r in order], columns=["rater", *columns])
    return out


def bias_answer_caption(tables: Mapping[str, pd.DataFrame], alpha: float = 0.05) -> str:
    """What the answer's cells mean, with the p-values they read."""
    adjusted = any(_p_column(t) in _ADJUSTED for t in tables.values() if _p_column(t))
    which = "adjusted p-values where the table has them, else unadjusted" if adjusted \
        else "unadjusted p-values, one per test"
    return (f"per rater, each bias tested: how many of its tests (one per criterion) are "
            f"significant at {alpha:g} ({which}: with many tests a few are expected by chance), "
            "and which, most significant first, with the signed estimate (leniency: rater "
            "minus human mean; self-preference: own-minus-other gap of the rater minus the "
            "reference's; residual vs length: Pearson r); the tables below hold every "
            "interval and p-value")


def bias_answer_lines(answer: pd.DataFrame) -> list[str]:
    """The answer as one line per rater for a terminal: ``rater: bias: cell; bias: cell``."""
    biases = [c for c in answer.columns if c != "rater"]
    return [f"{row['rater']}: " + "; ".join(f"{b} {row[b]}" for b in biases if row[b])
            for _, row in answer.iterrows()]
