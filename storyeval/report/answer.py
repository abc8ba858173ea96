"""The answer a meta-evaluation report opens with: per criterion and level, the measure that
agrees best with the humans, its interval, its significance group, whether it is
significantly better than the next measure, and the test that said so with its measured level.

Every number comes from the result itself (its correlations, their bootstrap intervals when
computed, and the p-values of its comparison table): the answer never tests again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from storyeval.report.meta_report import TEST_LABELS
from storyeval.report.present import fixed, p_text

if TYPE_CHECKING:
    from storyeval.meta.pipeline import MetaResult

__all__ = ["ANSWER_COLUMNS", "answer_notes", "answer_table"]

ANSWER_COLUMNS = ["level", "criterion", "best measure", "correlation", "next measure",
                  "better than next?", "p vs next", "top group", "test"]


def _oriented(rows: pd.DataFrame, convention: str, lower: set[str]) -> np.ndarray:
    values = rows["value"].to_numpy(dtype=float)
    if convention == "paper":
        return np.abs(values)
    return np.where(rows["measure"].isin(lower).to_numpy(), -values, values)


def _pair_rows(tests: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    return tests[((tests["measure_a"] == a) & (tests["measure_b"] == b))
                 | ((tests["measure_a"] == b) & (tests["measure_b"] == a))]


def _beats(row: pd.DataFrame, winner: str, alpha: float, p_column: str) -> bool | None:
    """Whether the test row says ``winner`` is significantly better (``p_column``); None when
    the pair was not tested or its p-value is undefined."""
    from storyeval.compare.clusters import tested_better

    if row.empty or pd.isna(row[p_column].iloc[0]):
        return None
    favoured = tested_better(row)[0]
    return bool(row[p_column].iloc[0] <= alpha and favoured in (None, winner))


def _number(value: float, digits: int) -> str:
    return fixed(value, digits)  # no "-0.000"


def _cell(row: pd.Series, oriented: float, flipped: bool, has_ci: bool, digits: int,
          convention: str) -> str:
    """The oriented correlation (as the tests ranked it) with its interval, oriented the same
    way; a flipped sign says so with the raw value: "0.718 [0.61, 0.80] (r = -0.718)"."""
    text = _number(oriented, digits)
    low, high = (row.get("ci_low"), row.get("ci_high")) if has_ci else (None, None)
    if low is not None and high is not None and pd.notna(low) and pd.notna(high):
        if flipped:
            low, high = -high, -low
        text += f" [{_number(low, digits)}, {_number(high, digits)}]"
    if flipped:
        raw = "|r|" if convention == "paper" else "lower is better"
        text += f" (r = {_number(row['value'], digits)}; {raw})"
    return text


def answer_table(result: MetaResult, *, alpha: float = 0.05, digits: int = 3,
                 p_column: str | None = None) -> pd.DataFrame:
    """One row per level and criterion (`ANSWER_COLUMNS`, text cells for reading).

    ``best measure``: the largest correlation as the tests oriented it (signed; a measure
    declared lower-is-better by its negated correlation; under the paper's convention by |r|;
    ties listed together, "tied: a = b", and compared with the next measure each: "yes" only
    when every one of them is significantly better, "p vs next" the largest of their p-values).
    ``correlation``: the oriented value of each best measure (for a flipped sign, the raw r
    beside it) with its bootstrap interval when the run computed one (``--ci bootstrap``).
    ``better than next?``: whether the comparison with the next measure is significant in the
    best one's favour at ``alpha``. ``top group``: the first significance cluster (the WMT
    rule of `storyeval.compare.clusters`, as ``clusters.csv``) when the run compared all pairs,
    else the measures whose comparison with the best is not significant. ``test``: the test of
    the comparisons at that level. Levels without tests (prompt) say "not tested".

    Every decision reads ``p_column`` of the comparison table (default
    `storyeval.meta.wmt.DECISION_P`, the adjusted p that the matrices print and
    ``clusters.csv`` reads: one run, one set of p-values)."""
    from storyeval.meta.wmt import DECISION_P

    p_column = p_column or DECISION_P
    s = result.settings
    chosen = s.get("comparisons", {})
    convention = chosen.get("sign_convention", "raw")
    lower = set(chosen.get("lower_is_better") or ())
    tests = result.comparisons
    has_ci = "ci_low" in result.correlations.columns
    labels = {m: d for m, d in zip(result.correlations["measure"],
                                   result.correlations["display_name"])}
    out = []
    for level in s.get("levels", []):
        test_name = chosen.get("test", {})
        test_name = test_name.get(level, "") if isinstance(test_name, dict) else test_name
        label = TEST_LABELS.get(test_name, test_name)
        test_name = f"{test_name} ({label})" if label and label != test_name else test_name
        tested = level in chosen.get("levels", []) and not tests.empty
        for criterion in s.get("criteria", []):
            rows = result.correlations[(result.correlations["level"] == level)
                                       & (result.correlations["criterion"] == criterion)]
            oriented = _oriented(rows, convention, lower)
            keep = np.isfinite(oriented)
            if not keep.any():
                continue
            rows, oriented = rows[keep], oriented[keep]
            order = np.lexsort((rows["measure"].astype(str).to_numpy(), -oriented))
            rows, oriented = rows.iloc[order], oriented[order]
            n_ties = int(np.isclose(oriented, oriented[0], rtol=1e-12, atol=1e-15).sum())
            flipped = [(m in lower) if convention == "raw" else v < 0
                       for m, v in zip(rows["measure"], rows["value"])]
            names = [labels[m] + (" (lower is better)" if m in lower else "")
                     for m in rows["measure"].iloc[:n_ties]]
            cells = [_cell(rows.iloc[k], oriented[k], flipped[k], has_ci, digits, convention)
                     for k in range(n_ties)]
            if n_ties > 1:
                name = "tied: " + " = ".join(names)
                value = "; ".join(f"{labels[m]}: {c}"
                                  for m, c in zip(rows["measure"].iloc[:n_ties], cells))
            else:
                name, value = names[0], cells[0]
            row = {"level": level, "criterion": criterion, "best measure": name,
                   "correlation": value, "next measure": "", "better than next?": "",
                   "p vs next": "", "top group": "", "test": test_name or "not tested"}
            if len(rows) > n_ties:
                row["next measure"] = labels[rows["measure"].iloc[n_ties]]
            if tested and len(rows) > 1:
                part = tests[(tests["level"] == level) & (tests["criterion"] == criterion)]
                row.update(_decisions(part, rows, labels, n_ties, alpha, p_column))
                group = _first_cluster(result, part, rows, level, criterion, alpha, p_column)
                if group is not None:
                    row["top group"] = ", ".join(labels[m] for m in group)
            elif len(rows) > 1:
                row["better than next?"] = "not tested"
            out.append(row)
    return pd.DataFrame(out, columns=ANSWER_COLUMNS)


def _first_cluster(result: MetaResult, tests: pd.DataFrame, rows: pd.DataFrame, level: str,
                   criterion: str, alpha: float, p_column: str) -> list[str] | None:
    """The measures of significance cluster 1 (`clusters_from_comparisons` on the same
    p-values as clusters.csv), or None when the run did not compare every pair."""
    from storyeval.compare.clusters import clusters_from_comparisons

    names = set(rows["measure"])
    pairs = {frozenset(p) for p in zip(tests["measure_a"], tests["measure_b"])
             if p[0] in names and p[1] in names}
    if len(pairs) < len(names) * (len(names) - 1) // 2:
        return None
    chosen = result.settings.get("comparisons", {})
    table = clusters_from_comparisons(
        rows[["measure", "criterion", "level", "value"]], tests, alpha=alpha,
        sign_convention=chosen.get("sign_convention", "raw"),
        lower_is_better=chosen.get("lower_is_better") or (), p_column=p_column,
        tie_rtol=result.settings.get("tie_rtol", 1e-12), levels=(level,))
    return list(table.loc[table["rank"] == 1, "measure"])


def _decisions(tests: pd.DataFrame, rows: pd.DataFrame, labels: dict[str, str], n_ties: int,
               alpha: float, p_column: str) -> dict[str, str]:
    best = rows["measure"].iloc[0]
    if n_ties >= len(rows):
        return {"better than next?": "no (all tied)",
                "top group": ", ".join(labels[m] for m in rows["measure"])}
    nxt = rows["measure"].iloc[n_ties]
    # every measure tied for best against the next one: better only if each of them is
    verdicts, ps = [], []
    for m in rows["measure"].iloc[:n_ties]:
        pair = _pair_rows(tests, m, nxt)
        verdicts.append(_beats(pair, m, alpha, p_column))
        ps.append(pair[p_column].iloc[0] if not pair.empty else float("nan"))
    beats = None if None in verdicts else all(verdicts)
    decided = {None: "not tested", True: "yes", False: "no"}[beats]
    p_next = p_text(max(ps)) if not any(pd.isna(ps)) else ""
    group, untested = [], 0
    for k, m in enumerate(rows["measure"]):
        if k < n_ties:
            group.append(labels[m])
            continue
        verdict = _beats(_pair_rows(tests, best, m), best, alpha, p_column)
        if verdict is None:
            untested += 1
        elif not verdict:
            group.append(labels[m])
    text = ", ".join(group)
    if untested:
        text += f" ({untested} not compared with it)"
    return {"better than next?": decided, "p vs next": p_next, "top group": text}


def answer_notes(result: MetaResult, *, alpha: float = 0.05) -> list[str]:
    """What the answer's columns mean, and each test's measured type-I error."""
    chosen = result.settings.get("comparisons", {})
    from storyeval.meta.wmt import DECISION_P

    method = str(chosen.get("adjustment", "bh"))
    which = ("unadjusted p-values (--adjust none)" if method == "none" else
             f"{method.upper()}-adjusted p-values (family {chosen.get('family', '?')!r})")
    notes = [f"p vs next, better than next? and top group read the comparison table's {which} "
             f"(column {DECISION_P}) at {alpha:g}, the p-values the matrices below print and "
             "clusters.csv reads (one run, one set of p-values); the top group is significance "
             "cluster 1 (the measures no member of the group is significantly better than; "
             "WMT's rule) when all pairs were compared, else the measures not significantly "
             "below the best one; correlation: each best measure's value oriented as the tests "
             "ranked it (a lower-is-better measure negated, its raw r beside it)"]
    if "ci_low" in result.correlations.columns:
        b = result.settings.get("bootstrap", {})
        notes.append(f"intervals: {b.get('confidence_level', 0.95):g} bootstrap "
                     f"({b.get('ci_method', 'percentile')}, {b.get('n_resamples', '?')} "
                     f"resamples of {b.get('resample_by', 'prompts')}, seed "
                     f"{b.get('random_state', '?')})")
    else:
        notes.append("no intervals: run with --ci bootstrap to add them")
    descriptions = chosen.get("test_description", {})
    for level, text in (chosen.get("measured_level") or {}).items():
        what = descriptions.get(level, "") if isinstance(descriptions, dict) else ""
        line = f"{level} level test: {what}" if what else f"{level} level test"
        notes.append(f"{line}; {text}" if text else
                     f"{line}; measured level: not simulated for this test")
    return notes
