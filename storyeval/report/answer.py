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
from storyeval.report.tables import journal_p

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


def _beats(row: pd.DataFrame, winner: str, alpha: float) -> bool | None:
    """Whether the test row says ``winner`` is significantly better (adjusted p); None when
    the pair was not tested or its p-value is undefined."""
    from storyeval.compare.clusters import tested_better

    if row.empty or pd.isna(row["p_adjusted"].iloc[0]):
        return None
    favoured = tested_better(row)[0]
    return bool(row["p_adjusted"].iloc[0] <= alpha and favoured in (None, winner))


def _cell(value: float, low: float | None, high: float | None, digits: int) -> str:
    text = f"{value:.{digits}f}"
    if low is not None and high is not None and pd.notna(low) and pd.notna(high):
        text += f" [{low:.{digits}f}, {high:.{digits}f}]"
    return text


def answer_table(result: MetaResult, *, alpha: float = 0.05, digits: int = 3) -> pd.DataFrame:
    """One row per level and criterion (`ANSWER_COLUMNS`, text cells for reading).

    ``best measure``: the largest correlation as the tests oriented it (signed; a measure
    declared lower-is-better by its negated correlation; under the paper's convention by |r|;
    ties listed together, "a = b", and compared with the next measure each: "yes" only when
    every one of them is significantly better, "p vs next" the largest of their p-values). ``correlation``: its value with its bootstrap interval when the
    run computed one (``--ci bootstrap``). ``better than next?``: whether the comparison with
    the next measure is significant in the best one's favour at ``alpha`` (adjusted p, the
    comparison table's ``p_adjusted``). ``top group``: the measures whose comparison with the
    best is not significant (they cannot be told apart from it). ``test``: the test of the
    comparisons at that level. Levels without tests (prompt) say "not tested"."""
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
            best = rows.iloc[0]
            ties = [labels[m] for m, v in zip(rows["measure"], oriented)
                    if np.isclose(v, oriented[0], rtol=1e-12, atol=1e-15)]
            name = " = ".join(ties) + (" (lower is better)" if best["measure"] in lower else "")
            value = _cell(best["value"], best.get("ci_low") if has_ci else None,
                          best.get("ci_high") if has_ci else None, digits)
            row = {"level": level, "criterion": criterion, "best measure": name,
                   "correlation": value, "next measure": "", "better than next?": "",
                   "p vs next": "", "top group": "", "test": test_name or "not tested"}
            if len(rows) > 1:
                row["next measure"] = labels[rows["measure"].iloc[len(ties) if len(ties) <
                                                                 len(rows) else 1]]
            if tested and len(rows) > 1:
                row.update(_decisions(tests[(tests["level"] == level)
                                            & (tests["criterion"] == criterion)],
                                      rows, labels, len(ties), alpha))
            elif len(rows) > 1:
                row["better than next?"] = "not tested"
            out.append(row)
    return pd.DataFrame(out, columns=ANSWER_COLUMNS)


def _decisions(tests: pd.DataFrame, rows: pd.DataFrame, labels: dict[str, str], n_ties: int,
               alpha: float) -> dict[str, str]:
    best = rows["measure"].iloc[0]
    if n_ties >= len(rows):
        return {"better than next?": "no (all tied)"}
    nxt = rows["measure"].iloc[n_ties]
    # every measure tied for best against the next one: better only if each of them is
    verdicts, ps = [], []
    for m in rows["measure"].iloc[:n_ties]:
        pair = _pair_rows(tests, m, nxt)
        verdicts.append(_beats(pair, m, alpha))
        ps.append(pair["p_adjusted"].iloc[0] if not pair.empty else float("nan"))
    beats = None if None in verdicts else all(verdicts)
    decided = {None: "not tested", True: "yes", False: "no"}[beats]
    p_next = journal_p(max(ps)) if not any(pd.isna(ps)) else ""
    group, untested = [], 0
    for k, m in enumerate(rows["measure"]):
        if k < n_ties:
            group.append(labels[m])
            continue
        verdict = _beats(_pair_rows(tests, best, m), best, alpha)
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
    notes = [f"better than next? / top group: the comparison table's adjusted p-values "
             f"({str(chosen.get('adjustment', 'bh')).upper()}, family "
             f"{chosen.get('family', '?')!r}) at {alpha:g}; the top group holds the measures "
             "not significantly below the best one"]
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
