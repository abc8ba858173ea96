"""The answer a meta-evaluation opens with (the report, the terminal and the notebook view): per criterion and level, the measure that
agrees best with the humans, its interval, its significance group, whether it is
significantly better than the next measure, and the test that said so with its measured level.

The numbers come from the result (its correlations, their bootstrap intervals when computed,
the p-values of its comparison table); what the run did not compute and the answer needs (an
interval for the best measure, the test of the best against the next measure in a reference
design) is computed once by `storyeval.meta.answer_extras` and marked as the answer's own.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from storyeval._format import fixed, p_text
from storyeval.meta.decisions import DECISION_P
from storyeval.meta.decisions import ResultLike as MetaResult

__all__ = ["ANSWER_COLUMNS", "TEST_LABELS", "answer_lines", "answer_notes", "answer_table"]

#: Short names of the comparison tests, as the answer and the report's captions print them.
TEST_LABELS = {"paper": "Williams", "williams": "Williams", "ustat": "U-statistic z-test",
               "jackknife": "jackknife z-test", "bootstrap": "paired bootstrap",
               "permutation": "paired permutation", "permutation-random": "paired permutation "
               "(random tie-breaking)", "permutation-midp": "paired permutation (mid-p)",
               "prompt-t": "paired t over prompts",
               "prompt-jackknife": "jackknife t over prompts"}

ANSWER_COLUMNS = ["level", "criterion", "best measure", "correlation", "next measure",
                  "better than next?", "p vs next", "top group", "test"]


def _oriented(rows: pd.DataFrame, convention: str, lower: set[str]) -> np.ndarray:
    values = rows["value"].to_numpy(dtype=float)
    if convention == "paper":
        return np.abs(values)
    return np.where(rows["measure"].isin(lower).to_numpy(), -values, values)


class _PairTests:
    """The first test row of each unordered pair of measures, its p-value and the measure a
    one-sided test put forward, found by a dictionary built once per table (a boolean mask
    over the whole table per pair took 4 s of HANNA's default answer)."""

    def __init__(self, tests: pd.DataFrame, p_column: str) -> None:
        from storyeval.compare.clusters import tested_better

        self.p = tests[p_column].to_numpy(dtype=float)
        self.favoured = tested_better(tests)
        self.where: dict[tuple[str, str], int] = {}
        for k, (a, b) in enumerate(zip(tests["measure_a"], tests["measure_b"])):
            self.where.setdefault((a, b), k)

    def row(self, a: str, b: str) -> int | None:
        """The pair's first row (in table order), either orientation; None if untested."""
        found = [k for k in (self.where.get((a, b)), self.where.get((b, a))) if k is not None]
        return min(found) if found else None

    def pvalue(self, a: str, b: str) -> float:
        k = self.row(a, b)
        return float("nan") if k is None else float(self.p[k])

    def beats(self, winner: str, other: str, alpha: float) -> bool | None:
        """Whether the pair's test says ``winner`` is significantly better; None when the pair
        was not tested or its p-value is undefined."""
        k = self.row(winner, other)
        if k is None or np.isnan(self.p[k]):
            return None
        return bool(self.p[k] <= alpha and self.favoured[k] in (None, winner))


def _number(value: float, digits: int) -> str:
    return fixed(value, digits)  # no "-0.000"


def _cell(row: pd.Series, oriented: float, flipped: bool, ends: tuple, digits: int,
          convention: str) -> str:
    """The oriented correlation (as the tests ranked it) with its interval ``ends`` (the run's,
    or the answer's own bootstrap), oriented the same way; a flipped sign says so with the raw
    value: "0.718 [0.61, 0.80] (r = -0.718)"."""
    text = _number(oriented, digits)
    low, high = ends
    if low is not None and high is not None and pd.notna(low) and pd.notna(high):
        if flipped:
            low, high = -high, -low
        text += f" [{_number(low, digits)}, {_number(high, digits)}]"
    if flipped:
        raw = "|r|" if convention == "paper" else "lower is better"
        text += f" (r = {_number(row['value'], digits)}; {raw})"
    return text


def answer_table(result: MetaResult, *, alpha: float = 0.05, digits: int = 3,
                 p_column: str | None = None, extras: bool = True) -> pd.DataFrame:
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
    ``clusters.csv`` reads: one run, one set of p-values).

    With ``extras`` (default), what the run did not compute is computed for the answer
    (`storyeval.meta.answer_extras`, once per result): a bootstrap interval of each best
    measure's correlation when the run has none (1,000 resamples of prompts, the run's seed),
    and the best-against-next test where the run did not compare that pair (a reference
    design): the run's test on the two measures alone, its p unadjusted, marked "(own
    test)"."""
    p_column = p_column or DECISION_P
    # a run prints its answer and renders its report from one result: made once per options
    key = (alpha, digits, p_column, extras)
    cache = getattr(result, "_answers", None)
    made = cache.get(key) if cache is not None else None
    if made is not None and made[0] is result.comparisons and made[1] is result.correlations:
        return made[2].copy()
    table = _answer_table(result, alpha, digits, p_column, extras)
    if cache is not None:
        cache[key] = (result.comparisons, result.correlations, table)
    return table.copy()


def _answer_table(result: MetaResult, alpha: float, digits: int, p_column: str,
                  extras: bool) -> pd.DataFrame:
    s = result.settings
    chosen = s.get("comparisons", {})
    convention = chosen.get("sign_convention", "raw")
    lower = set(chosen.get("lower_is_better") or ())
    has_ci = "ci_low" in result.correlations.columns
    labels = {m: d for m, d in zip(result.correlations["measure"],
                                   result.correlations["display_name"])}
    ranked = _ranked(result, convention, lower)
    more = _extras(result, ranked, intervals=not has_ci) if extras else None
    tests = result.comparisons
    if more is not None and len(more.tests):
        tests = pd.concat([tests, more.tests], ignore_index=True)
    tests = _plain_text(tests)
    by_group = (tests.groupby(["level", "criterion"], sort=False).indices if len(tests)
                else {})
    own = set() if more is None or more.tests.empty else set(
        zip(more.tests["level"], more.tests["criterion"]))
    ends = _interval_ends(result, more)
    out = []
    for level in s.get("levels", []):
        test_name = chosen.get("test", {})
        test_name = test_name.get(level, "") if isinstance(test_name, dict) else test_name
        label = TEST_LABELS.get(test_name, test_name)
        test_name = f"{test_name} ({label})" if label and label != test_name else test_name
        tested = level in chosen.get("levels", []) and not tests.empty
        for criterion in s.get("criteria", []):
            if (level, criterion) not in ranked:
                continue
            rows, oriented = ranked[(level, criterion)]
            n_ties = int(np.isclose(oriented, oriented[0], rtol=1e-12, atol=1e-15).sum())
            flipped = [(m in lower) if convention == "raw" else v < 0
                       for m, v in zip(rows["measure"], rows["value"])]
            names = [labels[m] + (" (lower is better)" if m in lower else "")
                     for m in rows["measure"].iloc[:n_ties]]
            cells = [_cell(rows.iloc[k], oriented[k], flipped[k],
                           ends.get((level, criterion, rows["measure"].iloc[k]), (None, None)),
                           digits, convention)
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
                part = tests.iloc[by_group.get((level, criterion), [])]
                row.update(_decisions(part, rows, labels, n_ties, alpha, p_column))
                if (level, criterion) in own and row["better than next?"] in ("yes", "no"):
                    row["better than next?"] += " (own test)"
                group = _first_cluster(result, part, rows, level, criterion, alpha, p_column)
                if group is not None:
                    row["top group"] = ", ".join(labels[m] for m in group)
            elif len(rows) > 1:
                row["better than next?"] = "not tested"
            out.append(row)
    return pd.DataFrame(out, columns=ANSWER_COLUMNS)


def _plain_text(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its text columns as Python objects: the answer reads them cell by cell
    (dictionaries of pairs), and iterating pandas' Arrow strings costs microseconds a cell
    (a third of a second on 7,560 comparisons)."""
    text = [c for c in table.columns if pd.api.types.is_string_dtype(table[c].dtype)
            and table[c].dtype != object]
    return table.astype({c: object for c in text}) if text else table


def _ranked(result: MetaResult, convention: str, lower: set[str]
            ) -> dict[tuple[str, str], tuple[pd.DataFrame, np.ndarray]]:
    """Per (level, criterion), the measures with a defined correlation, best first (as the
    tests oriented them; ties by name), and their oriented values."""
    out = {}
    corr = result.correlations
    for (level, criterion), rows in corr.groupby(["level", "criterion"], sort=False):
        oriented = _oriented(rows, convention, lower)
        keep = np.isfinite(oriented)
        if not keep.any():
            continue
        rows, oriented = rows[keep], oriented[keep]
        order = np.lexsort((rows["measure"].astype(str).to_numpy(), -oriented))
        out[(level, criterion)] = (rows.iloc[order], oriented[order])
    return out


def _extras(result: MetaResult, ranked: dict, *, intervals: bool):
    """The answer's own intervals and best-against-next tests (`storyeval.meta.answer_extras`),
    computed once per result."""
    from storyeval.meta.answer_extras import answer_extras

    if result._answer_extras is None:
        rows = []
        for (level, criterion), (frame, oriented) in ranked.items():
            n_ties = int(np.isclose(oriented, oriented[0], rtol=1e-12, atol=1e-15).sum())
            measures = list(frame["measure"])
            nxt = measures[n_ties] if len(measures) > n_ties else None
            rows += [(level, criterion, m, nxt) for m in measures[:n_ties]]
        result._answer_extras = answer_extras(result, rows, intervals=intervals)
    return result._answer_extras


def _interval_ends(result: MetaResult, more) -> dict[tuple[str, str, str], tuple]:
    """(level, criterion, measure) -> (ci_low, ci_high): the run's intervals, else the
    answer's own."""
    corr = result.correlations
    if "ci_low" in corr.columns:
        frame = corr
    elif more is not None and len(more.intervals):
        frame = more.intervals
    else:
        return {}
    return {(lv, c, m): (lo, hi) for lv, c, m, lo, hi in zip(
        frame["level"], frame["criterion"], frame["measure"], frame["ci_low"],
        frame["ci_high"])}


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
    pairs = _PairTests(tests, p_column)
    for m in rows["measure"].iloc[:n_ties]:
        verdicts.append(pairs.beats(m, nxt, alpha))
        ps.append(pairs.pvalue(m, nxt))
    beats = None if None in verdicts else all(verdicts)
    decided = {None: "not tested", True: "yes", False: "no"}[beats]
    p_next = p_text(max(ps)) if not any(pd.isna(ps)) else ""
    group, untested = [], 0
    for k, m in enumerate(rows["measure"]):
        if k < n_ties:
            group.append(labels[m])
            continue
        verdict = pairs.beats(best, m, alpha)
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
    more = result._answer_extras
    if "ci_low" in result.correlations.columns:
        b = result.settings.get("bootstrap", {})
        notes.append(f"intervals: {b.get('confidence_level', 0.95):g} bootstrap "
                     f"({b.get('ci_method', 'percentile')}, {b.get('n_resamples', '?')} "
                     f"resamples of {b.get('resample_by', 'prompts')}, seed "
                     f"{b.get('random_state', '?')})")
    elif more is not None and len(more.intervals):
        b = more.settings
        notes.append(f"intervals: the answer's own, {b['confidence_level']:g} percentile "
                     f"bootstrap ({b['n_resamples']} resamples of prompts, seed "
                     f"{b['random_state']}) of the best and the next measures; the grids have "
                     "none (--ci bootstrap adds them to every correlation)")
    else:
        notes.append("no intervals: run with --ci bootstrap to add them")
    if more is not None and len(more.tests):
        notes.append("(own test): the run compared every measure with its reference only, so "
                     "the answer tested the best against the next measure itself, with the "
                     "level's test on these two measures, unadjusted (a family of one)")
    if more is not None:
        notes += list(more.reasons)
    descriptions = chosen.get("test_description", {})
    measured = {} if chosen.get("comparison") == "none" else chosen.get("measured_level") or {}
    for level, text in measured.items():
        what = descriptions.get(level, "") if isinstance(descriptions, dict) else ""
        line = f"{level} level test: {what}" if what else f"{level} level test"
        notes.append(f"{line}; {text}" if text else
                     f"{line}; measured level: not simulated for this test")
    return notes


def answer_lines(table: pd.DataFrame) -> list[str]:
    """The answer table as one sentence-like line per row, for a terminal: ``overall,
    Relevance: SUPERT-SS 0.264 [0.204, 0.322]; better than SUPERT-PS? no (own test), p =
    0.497``."""
    out = []
    for row in table.to_dict("records"):
        line = f"{row['level']}, {row['criterion']}: {row['best measure']}"
        if not str(row["best measure"]).startswith("tied: "):
            line += f" {row['correlation']}"
        else:
            line += f" ({row['correlation']})"
        if row["next measure"]:
            verdict = row["better than next?"] or "not tested"
            p = f", p {row['p vs next']}" if str(row["p vs next"]).startswith("<") else (
                f", p = {row['p vs next']}" if row["p vs next"] else "")
            line += f"; better than {row['next measure']}? {verdict}{p}"
        out.append(line)
    return out
