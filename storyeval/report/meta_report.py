"""Render and write the results of [`meta_evaluate`][storyeval.meta.pipeline.meta_evaluate].

Tables are shown as grids (one row per rater, one column per criterion, plus the mean), the
paper's layout; the files written with ``--out`` keep the tidy long tables at full precision.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from storyeval.meta.answer import TEST_LABELS
from storyeval.meta.pipeline import MetaResult
from storyeval.report.present import current_width, wrap_lines, wrap_text
from storyeval.report.tables import count, fixed, format_table, interval_text

if TYPE_CHECKING:
    pass

BASELINE_LABELS = {"upper_bound": "Human (upper bound)", "leave_one_out": "Human (leave-one-out)"}
SHORT_COEFFICIENT = {"kendall_b": "Kendall tau-b", "kendall_c": "Kendall tau-c",
                     "pearson": "Pearson r", "spearman": "Spearman rho"}
# All-pairs comparison matrices: render() lists a larger matrix's smallest p-values instead (a
# wider grid does not fit a terminal or a page), write_report() draws no heatmap of a larger one
# (its cells become unreadable).
MATRIX_SHOWN_MAX = 30
MATRIX_FIGURE_MAX = 60
SMALLEST_SHOWN = 20
SIGNIFICANCE = 0.05  # only for counting "adjusted p below 0.05" in the long tables' titles


def correlation_grid(result: MetaResult, level: str, *, with_mean: bool = True,
                     with_baseline: bool = True) -> pd.DataFrame:
    """Raters x criteria at ``level``, the human baseline rows first, then a ``Mean`` column
    (mean over the criteria; for |tau| comparisons use the signed values shown)."""
    grid = result.correlation_grid(level)
    ids = list(grid.attrs["ids"])
    if with_baseline and not result.baseline.empty:
        base = result.baseline[result.baseline["level"] == level]
        rows = base.pivot(index="variant", columns="criterion", values="value")
        rows = rows.reindex(index=[v for v in BASELINE_LABELS if v in rows.index])
        ids = [f"human_baseline:{v}" for v in rows.index] + ids
        grid = pd.concat([rows.rename(index=BASELINE_LABELS).reindex(columns=grid.columns),
                          grid])
    if with_mean:
        grid["Mean"] = grid.mean(axis=1, skipna=False)
    grid.index.name = "measure"
    grid.attrs["ids"] = ids
    return grid


def level_caption(result: MetaResult, level: str) -> str:
    """A one-line description of what a level's numbers are."""
    s = result.settings
    coef = SHORT_COEFFICIENT[s["coefficient"]]
    if level == "overall":
        what = f"{s['n_stories']} stories pooled"
    elif level == "system":
        what = f"means of {count(s['n_systems'], 'system')}"
    elif level == "within":
        what = (f"within each of {count(s['n_systems'], 'system')} across its stories, averaged "
                "over systems")
    else:
        what = (f"within each prompt across {count(s['n_systems'], 'system')}, averaged over "
                "prompts")
    return f"{coef} with human criteria, {level} level ({what})"


def _per_level(value, level: str):
    """A setting that is one value, or one per level."""
    return value.get(level, "") if isinstance(value, dict) else value


def level_test(result: MetaResult, level: str) -> str:
    """The name of the comparison test run at ``level`` ("paper" for results made before tests
    were named)."""
    return _per_level(result.settings["comparisons"].get("test", "paper"), level)


def comparison_caption(result: MetaResult, level: str, criterion: str | None = None) -> str:
    """What a comparison table holds: the test and its p-value, its adjustment and family (with
    the family sizes), the comparison and the level; with ``criterion``, the all-pairs matrix
    layout."""
    w = result.settings["comparisons"]
    label = TEST_LABELS[level_test(result, level)]
    what = (f"{w['adjustment'].upper()}-adjusted {label} p" if w["adjustment"] != "none"
            else f"{label} p (not adjusted)")
    text = (f"{what} ({_per_level(w['p_value'], level)}, "
            f"{family_text(result, level, criterion)}), {w['comparison']}, {level} level")
    if criterion is not None:
        text += (f", {criterion}; cell (row, column): row measure tested against column "
                 "measure, each pair once (upper triangle; lower triangle and diagonal blank)")
    return text + "".join(_row_notes(result, level, criterion))


def _row_notes(result: MetaResult, level: str, criterion: str | None,
               mark: bool = False) -> list[str]:
    """The validity notes of a level's comparison rows (e.g. few systems), for every caption
    the rows appear under, and with ``mark`` the legend of the disagreement mark (the cells of
    the effect tables carry it)."""
    rows = result.comparisons
    if rows.empty or "level" not in rows:
        return []
    rows = result.comparison_rows(level, criterion)
    notes = rows.get("note", pd.Series(dtype=object)).fillna("").unique()
    out = [f"; note: {note}" for note in dict.fromkeys(notes) if note]
    if mark and disagreeing_rows(rows).any():
        out.append(f"; {DISAGREE_MARK}: the interval (per comparison, not adjusted) and the "
                   "adjusted p disagree at 0.05")
    return out


def family_text(result: MetaResult, level: str | None = None,
                criterion: str | None = None) -> str:
    """The adjustment family and its size, e.g. ``"family 'paper': 24 families of m = 6
    tests"`` (at ``level``; every tested level when None), with a warning in words when every
    family holds one test (adjusting then changes nothing). The comparisons without a p-value
    are counted where the text is read: at ``level`` and, for one matrix, ``criterion``."""
    w = result.settings["comparisons"]
    text = f"family {w['family']!r}"
    sizes = result.family_sizes()
    if level is not None:
        sizes = {lev: size for lev, size in sizes.items() if lev == level}
    if w["adjustment"] == "none" or not sizes:
        return text
    parts = [_sizes_text(size) + ("" if level is not None else f" ({lev} level)")
             for lev, size in sizes.items()]
    text += ": " + ", ".join(parts)
    untested = _untested(result, level, criterion)
    if untested:
        where = f" of {criterion}" if criterion is not None else ""
        text += (f"; {count(untested, 'comparison')}{where} without a p-value left out of "
                 "the adjustment")
    if max(size["m_max"] for size in sizes.values()) == 1:
        text += ("; m = 1: the adjustment changes nothing; choose --family "
                 "criterion/level/all")
    return text


def _untested(result: MetaResult, level: str | None, criterion: str | None = None) -> int:
    """Comparisons (at ``level``, or all; of ``criterion``, or all) whose p-value is
    undefined: not adjusted, not in m."""
    tests = result.comparisons
    if level is not None:
        tests = result.comparison_rows(level, criterion)
    elif criterion is not None:
        tests = tests[tests["criterion"] == criterion]
    return int(tests["p"].isna().sum())


def _sizes_text(size: dict[str, int]) -> str:
    """"24 families of m = 6 tests", "1 family of m = 2-5 tests"."""
    n = size["n_families"]
    m = (str(size["m_min"]) if size["m_min"] == size["m_max"]
         else f"{size['m_min']}-{size['m_max']}")
    return (f"{n} {'family' if n == 1 else 'families'} of m = {m} "
            f"{'test' if m == '1' else 'tests'}")


def _stories_text(settings: dict) -> str:
    """What was excluded: only a dataset with a reference system (HANNA: 'Human') has stories
    that are the references of reference-based metrics."""
    system = settings.get("reference_system")
    if system is None:
        return ""
    if settings["include_human_stories"]:
        return f"; stories of {system!r} included"
    return f"; stories of {system!r} excluded (they are the references)"


def settings_lines(result: MetaResult) -> list[str]:
    """The conventions that produced the numbers, one per line."""
    s, w = result.settings, result.settings["comparisons"]
    own = "their own criterion" if s["llm_criteria"] == "matched" else "every criterion"
    lines = [
        (f"dataset: {s['dataset']}; {count(s['n_systems'], 'system')}, "
         f"{count(s['n_stories'], 'story', 'stories')}"
         f"{_stories_text(s)}"),
        # what the reader decided about the data (e.g. how human scores were formed)
        *(f"data: {note}" for note in s.get("dataset_notes", ())),
        (f"coefficient: {s['coefficient_description']}; levels: {', '.join(s['levels'])}; "
         f"nan_policy: {s['nan_policy']}; system means tie within relative "
         f"{s.get('tie_rtol', 0):g}"),
        f"measures: {s['measures']}"
        + (f"; LLM ratings correlated with {own}" if s.get("llm_ratings", 1) else ""),
        *(f"{level} level skipped: {reason}"
          for level, reason in (s.get("skipped_levels") or {}).items()),
    ]
    if s.get("baseline_nan_policy") == "omit" and s["nan_policy"] == "raise":
        lines.append("human baseline: not every annotator rated every story, so each "
                     "annotator's correlation uses the stories they rated (pairwise deletion)")
    if w["comparison"] != "none":
        where = ", ".join(w["levels"]) or "none of the requested levels"
        tests = {level_test(result, lev) for lev in w["levels"]}
        kind = "Williams tests" if tests <= {"paper", "williams"} else "comparison tests"
        lines.append(
            f"{kind} ({where} level): {w['comparison']}; sign convention "
            f"{w['sign_convention']!r}; {_adjustment_text(result)}")
        lines += comparison_lines(result)
        if w["note"]:
            lines.append(f"note: {w['note']}")
    if "bootstrap" in s:
        b = s["bootstrap"]
        lines.append(f"bootstrap: {b['ci_method']} {b['confidence_level']:.0%} intervals [low, "
                     f"high] from {b['n_resamples']} resamples of {b['resample_by']} (the same "
                     f"resamples for every measure), seed {b['random_state']}")
        if "n_clusters" in b:
            lines.append(_clusters_line(b))
    if "permutation" in s:
        p = s["permutation"]
        units = ", ".join(f"{lev}: {unit}" for lev, unit in p["unit"].items())
        lines.append(f"permutation tests: {p['alternative']}, {p['n_permutations']} "
                     f"permutations swapping the two measures' standardised scores per {units}; "
                     f"p = (1 + #extreme) / (1 + N); seed {p['random_state']}")
    if "chance" in s:
        c = s["chance"]
        lines.append(f"chance: the {c['confidence_level']:.0%} band of |coefficient| of "
                     f"{c['n_draws']} random measures per criterion and level (column "
                     f"chance_abs_high), seed {c['random_state']}")
    return lines


def comparison_lines(result: MetaResult) -> list[str]:
    """Per tested level: the test, its sidedness and direction, its measured level (the paper's
    convention and the calibrated defaults) and how the difference's interval is computed."""
    w = result.settings["comparisons"]
    lines = []
    for level in w["levels"]:
        test = level_test(result, level)
        direction = _per_level(w["direction"], level)
        where = ("the direction of the larger |r| (chosen after seeing the data)"
                 if direction == "larger" else "a fixed direction (a vs b)")
        line = (f"{level} level: test {test!r}: "
                f"{w.get('test_description', {}).get(level, 'Williams t')}; "
                f"{_per_level(w['p_value'], level)}")
        if test == "williams":
            line += f", in {where}"
        measured = w.get("measured_level", {}).get(level, "")
        if measured:
            line += f"; {measured}"
        if test == "paper":
            line += ("; the paper's convention, kept for the reproduction: for your own "
                     "comparisons use --test auto (calibrated, two-sided)")
        lines.append(line)
    if "effect_size" in w and not result.comparisons.empty and "ci_method" in result.comparisons:
        methods = result.comparisons.groupby("level", sort=False)["ci_method"].first()
        cl = w["effect_size"]["confidence_level"]
        if w["sign_convention"] == "paper":
            delta = "|r(h,a)| - |r(h,b)| (signed r under sign convention 'raw')"
        else:
            lower = w.get("lower_is_better") or []
            delta = "r(h,a) - r(h,b)" + (
                f" (declared lower-is-better, so negated: {', '.join(lower)})" if lower else
                " (signed correlations; declare lower-is-better measures with "
                "--lower-is-better)")
        lines.append(f"effect size: delta = {delta} with a {cl:.0%} interval: "
                     + "; ".join(f"{lev}: {m}" for lev, m in methods.items()))
    seeded = random_procedures(result)
    if seeded:
        seed = w.get("effect_size", {}).get("random_state")
        lines.append(f"seed {seed}: the random procedures of the comparisons "
                     f"({'; '.join(seeded)}) drew from it (--seed; the same seed, the same "
                     "numbers)")
    return lines


#: Comparison tests whose p-value is a Monte Carlo estimate (they draw from the seed).
RANDOM_TESTS = ("permutation", "permutation-random", "permutation-midp", "bootstrap")


def random_procedures(result: MetaResult) -> list[str]:
    """The comparisons' random procedures, "level: what" (a resampling test, or an interval by
    resampling), for the line that prints their seed."""
    w = result.settings["comparisons"]
    out = []
    methods = (result.comparisons.groupby("level", sort=False)["ci_method"].first()
               if "ci_method" in result.comparisons and not result.comparisons.empty
               else pd.Series(dtype=object))
    for level in w["levels"]:
        what = []
        test = level_test(result, level)
        if test in RANDOM_TESTS:
            what.append(f"{test} test")
        method = str(methods.get(level, "") or "")
        if test not in RANDOM_TESTS and any(k in method.lower()
                                            for k in ("bootstrap", "permutation", "resampl")):
            what.append(f"{method.split(':')[0].split(' (')[0]} interval")
        if what:
            out.append(f"{level}: {', '.join(what)}")
    return out


def _clusters_line(b: dict) -> str:
    """How many clusters the bootstrap resampled, and whether that is too few for its intervals."""
    counts = " and ".join(f"{n} {unit}" for unit, n in b["n_clusters"].items())
    line = f"bootstrap clusters: {counts} resampled"
    if b.get("few_clusters"):
        alternative = ("" if b["ci_method"] == "expanded" else
                       "; the expanded interval (--ci-method expanded) covers better")
        line += (f"; fewer than 20, so {b['ci_method']} intervals tend to be too short (they "
                 f"contain the true value less often than {b['confidence_level']:.0%}; see "
                 f"the Resampling docs page){alternative}")
    return line


def _adjustment_text(result: MetaResult) -> str:
    w = result.settings["comparisons"]
    if w["adjustment"] == "none":
        return "p-values not adjusted for multiple comparisons"
    return f"{w['adjustment'].upper()} over {family_text(result)}"


def render(result: MetaResult, fmt: str = "table", *, digits: int = 3) -> str:
    """The whole result as text in ``fmt`` (grids for table/md/latex; tidy tables for csv/json).

    Correlations are one grid per level (raters x criteria). comparison tests against a reference
    rater are one grid per level (compared raters x criteria); tests of all pairs are one
    measure x measure matrix of adjusted p per level and criterion (upper triangle, see
    [`MetaResult.comparison_matrix`][]), except that a matrix of more than
    `MATRIX_SHOWN_MAX` measures is listed as its `SMALLEST_SHOWN` smallest adjusted
    p-values (`smallest_pairs`;
    [`write_report`][storyeval.report.meta_files.write_report] writes every matrix in full).
    Undefined values are blank, with the reason listed below their table. Warns
    ([`SingleTestFamilyWarning`][storyeval.compare.multitest.SingleTestFamilyWarning], once per
    result) when every comparison family holds a single test.
    """
    result.warn_single_test_families()
    if fmt == "csv":
        return format_table(result.correlations, "csv")
    if fmt == "json":
        return to_json(result)
    comment = {"table": "# ", "md": "> ", "latex": "% "}[fmt]
    width = current_width() if fmt == "table" else None

    def notes(lines: list[str]) -> list[str]:
        return ["\n".join(wrap_lines(lines, width, prefix=comment)) + "\n"] if lines else []

    parts = notes(settings_lines(result))
    for level in result.settings["levels"]:
        grid = correlation_grid(result, level)
        lines = [*undefined_lines(result, level), *baseline_lines(result, level)]
        if "ci_low" in result.correlations.columns:
            lines += interval_lines(result, level)
            grid = with_intervals(result, level, grid, digits)
        parts.append(_titled(level_caption(result, level), grid.reset_index(), fmt, digits))
        if not result.chance.empty:
            lines.append(chance_line(result, level, digits))
        parts += notes(lines)
    for level in result.settings["comparisons"]["levels"]:
        if result.comparisons_all_pairs():
            parts += _pair_tables(result, level, fmt, digits)
        else:
            parts += _reference_tables(result, level, fmt, digits)
        parts += notes(comparison_undefined_lines(result, level))
    return "\n".join(parts)


def _reference_tables(result: MetaResult, level: str, fmt: str, digits: int) -> list[str]:
    """The grids of tests against a reference rater: adjusted comparison p, permutation p."""
    parts = []
    grid = _journal(result.comparison_grid(level)).reset_index()
    if len(grid):
        parts.append(_titled(comparison_caption(result, level), grid, fmt, digits))
    effect = effect_grid(result, level, digits)
    if effect is not None and len(effect):
        parts.append(_titled(effect_caption(result, level), effect.reset_index(), fmt, digits))
    if "perm_p_adjusted" in result.comparisons.columns:
        perm = _journal(result.comparison_grid(level, column="perm_p_adjusted")).reset_index()
        parts.append(_titled(permutation_caption(result, level), perm, fmt, digits))
    return parts


def _pair_tables(result: MetaResult, level: str, fmt: str, digits: int) -> list[str]:
    """All-pairs tests: per criterion, the matrix of adjusted p (and permutation p), or the
    smallest p-values of a matrix too large to show."""
    parts = []
    for criterion in tested_criteria(result, level):
        size = _matrix_size(result, level, criterion)
        if size > MATRIX_SHOWN_MAX:  # the matrix is not built: only its size is printed
            table = smallest_pairs(result, level, criterion)
            parts.append(_titled(_smallest_caption(result, level, criterion, size),
                                 table, fmt, digits))
            continue
        matrix = result.comparison_matrix(level, criterion)
        caption = comparison_caption(result, level, criterion)
        parts.append(_titled(caption, _journal(matrix).reset_index(), fmt, digits))
        effect = effect_matrix(result, level, criterion, digits)
        if effect is not None:
            parts.append(_titled(effect_caption(result, level, criterion),
                                 effect.reset_index(), fmt, digits))
        if "perm_p_adjusted" in result.comparisons.columns:
            perm = result.comparison_matrix(level, criterion, column="perm_p_adjusted")
            parts.append(_titled(f"{permutation_caption(result, level)}, {criterion}",
                                 _journal(perm).reset_index(), fmt, digits))
    return parts


def _matrix_size(result: MetaResult, level: str, criterion: str) -> int:
    """The number of measures of `MetaResult.comparison_matrix` (rows and columns)."""
    rows = result.comparison_rows(level, criterion)
    key_a, key_b = result._pair_keys()
    return len(pd.unique(np.concatenate([rows[key_a].to_numpy(dtype=object),
                                         rows[key_b].to_numpy(dtype=object)])))


def _journal(grid: pd.DataFrame) -> pd.DataFrame:
    """A grid of p-values as a journal prints them (`storyeval.report.present.p_text`:
    "< 0.001", three significant digits), for reading; the CSV files keep full precision."""
    from storyeval.report.present import p_text

    values = grid.to_numpy(dtype=float)  # cell by cell on one array (DataFrame.map goes by
    text = np.array([p_text(v) for v in values.ravel()], dtype=object)  # column: slow)
    out = pd.DataFrame(text.reshape(values.shape), index=grid.index, columns=grid.columns)
    out.attrs = dict(grid.attrs)
    return out


def tested_criteria(result: MetaResult, level: str) -> list[str]:
    """The criteria with comparison tests at ``level``, in the order of the settings."""
    tested = result.comparisons.loc[result.comparisons["level"] == level, "criterion"].unique()
    known = [c for c in result.settings["criteria"] if c in set(tested)]
    return known + [c for c in tested if c not in set(known)]


def smallest_pairs(result: MetaResult, level: str, criterion: str, *,
                   n: int = SMALLEST_SHOWN) -> pd.DataFrame:
    """The ``n`` all-pairs comparison tests of ``criterion`` at ``level`` with the smallest
    adjusted p (undefined tests last): labels of both measures, their correlations with the
    criterion, ``n``, ``p``, ``p_adjusted`` (and ``perm_p_adjusted`` when present)."""
    rows = result.comparison_rows(level, criterion)
    rows = rows.sort_values(["p_adjusted", "p"], kind="stable", na_position="last").head(n)
    labels = result.catalogue_labels()
    key_a, key_b = result._pair_keys()
    numbers = [c for c in ("r_a", "r_b", "n", "delta", "ci_low", "ci_high", "p", "p_adjusted",
                           "perm_p_adjusted")
               if c in rows.columns]
    table = rows.loc[:, numbers].reset_index(drop=True)
    table.insert(0, "measure b", rows[key_b].map(lambda k: labels.get(k, k)).to_numpy())
    table.insert(0, "measure a", rows[key_a].map(lambda k: labels.get(k, k)).to_numpy())
    return table


def effect_caption(result: MetaResult, level: str, criterion: str | None = None) -> str:
    """What an effect-size table holds (of one ``criterion`` when given), with the rows'
    validity notes and the legend of the disagreement mark."""
    will = result.comparisons
    rows = will[will["level"] == level]
    method = rows["ci_method"].iloc[0] if "ci_method" in rows and len(rows) else ""
    cl = result.settings["comparisons"].get("effect_size", {}).get("confidence_level", 0.95)
    delta = ("|r(h,a)| - |r(h,b)|"
             if result.settings["comparisons"].get("sign_convention", "paper") == "paper"
             else "r(h,a) - r(h,b)")
    return (f"difference of correlations with the human criterion, delta = {delta} "
            f"[{cl:.0%} CI, per comparison (not adjusted for multiplicity): {method}], "
            f"{result.settings['comparisons']['comparison']}, "
            f"{level} level" + (f", {criterion}" if criterion is not None else "")
            + "".join(_row_notes(result, level, criterion, mark=True)))


DISAGREE_MARK = "\u2020"  # dagger


def _delta_cells(rows: pd.DataFrame, digits: int) -> list[str]:
    cells = _interval_cells(rows["delta"], rows["ci_low"], rows["ci_high"], digits)
    marked = disagreeing_rows(rows)
    return [f"{c} {DISAGREE_MARK}" if m and c else c for c, m in zip(cells, marked)]


def disagreeing_rows(rows: pd.DataFrame) -> np.ndarray:
    """Rows whose interval excludes 0 while the printed (adjusted) p is not below 0.05, or the
    reverse: the interval is per comparison (unadjusted), and for some tests (the paper's
    Williams t) another procedure's, so the row says which level each refers to."""
    if "ci_low" not in rows or rows.empty:
        return np.zeros(len(rows), dtype=bool)
    p = rows["p_adjusted"] if "p_adjusted" in rows else rows.get("p")
    if p is None:
        return np.zeros(len(rows), dtype=bool)
    p = p.to_numpy(dtype=float)
    low, high = rows["ci_low"].to_numpy(dtype=float), rows["ci_high"].to_numpy(dtype=float)
    defined = np.isfinite(p) & np.isfinite(low) & np.isfinite(high)
    return defined & (((low > 0) | (high < 0)) != (p < SIGNIFICANCE))


def effect_grid(result: MetaResult, level: str, digits: int = 3) -> pd.DataFrame | None:
    """Compared raters x criteria of "delta [low, high]" cells (tests against a reference)."""
    will = result.comparisons
    if "delta" not in will.columns or will.empty:
        return None
    rows = will[will["level"] == level]
    key = result._pair_keys()[1]
    cells = rows.assign(_cell=_delta_cells(rows, digits))
    grid = cells.pivot(index=key, columns="criterion", values="_cell")
    grid = grid.reindex(index=list(dict.fromkeys(rows[key])),
                        columns=[c for c in result.settings["criteria"]
                                 if c in set(rows["criterion"])])
    return result._labelled(grid.fillna(""), "compared with")


def effect_matrix(result: MetaResult, level: str, criterion: str,
                  digits: int = 3) -> pd.DataFrame | None:
    """All pairs: the measure x measure matrix of "delta [low, hi]" cells of one criterion,
    laid out as [`MetaResult.comparison_matrix`][]."""
    will = result.comparisons
    if "delta" not in will.columns or will.empty:
        return None
    matrix = result.comparison_matrix(level, criterion)
    rows = result.comparison_rows(level, criterion)
    key_a, key_b = result._pair_keys()
    where = pd.Index(matrix.attrs["ids"])
    cells = np.full(matrix.shape, "", dtype=object)
    cells[where.get_indexer(rows[key_a]), where.get_indexer(rows[key_b])] = np.asarray(
        _delta_cells(rows, digits), dtype=object)
    text = pd.DataFrame(cells, index=matrix.index, columns=matrix.columns)
    text.attrs["ids"] = matrix.attrs["ids"]
    return text


def _smallest_caption(result: MetaResult, level: str, criterion: str, size: int) -> str:
    rows = result.comparison_rows(level, criterion)
    below = int((rows["p_adjusted"] < SIGNIFICANCE).sum())
    shown = min(SMALLEST_SHOWN, len(rows))
    return (f"{comparison_caption(result, level)}, {criterion}: the {shown} smallest adjusted p "
            f"of {len(rows)} pairs of {size} measures ({below} below {SIGNIFICANCE:g}); the "
            f"matrix has more than {MATRIX_SHOWN_MAX} measures: --out writes it in full")


def with_intervals(result: MetaResult, level: str, grid: pd.DataFrame,
                   digits: int) -> pd.DataFrame:
    """Grid cells as "value [low, high]" strings (the Mean column keeps its value); an undefined
    value is blank and an undefined interval left out (`interval_lines` says why)."""
    rows = result.correlations[result.correlations["level"] == level]
    keys = list(result._row_keys(rows))
    cells = dict(zip(zip(keys, rows["criterion"]),
                     _interval_cells(rows["value"], rows["ci_low"], rows["ci_high"], digits)))
    if "ci_low" in result.baseline.columns:
        base = result.baseline[result.baseline["level"] == level]
        ids = [f"human_baseline:{var}" for var in base["variant"]]
        cells.update(zip(zip(ids, base["criterion"]),
                         _interval_cells(base["value"], base["ci_low"], base["ci_high"],
                                         digits)))
    text = grid.map(lambda v: "" if pd.isna(v) else fixed(v, digits)).astype(object)
    position = {key: i for i, key in enumerate(grid.attrs["ids"])}
    for (key, crit), cell in cells.items():
        if key in position and crit in text.columns:
            text.iloc[position[key], text.columns.get_loc(crit)] = cell
    return text


def _interval_cells(values: pd.Series, lows: pd.Series, highs: pd.Series,
                    digits: int) -> list[str]:
    """"v [lo, hi]"; "v" when the interval is undefined; "" when the value is."""
    def cell(v: float, lo: float, hi: float) -> str:
        if pd.isna(v):
            return ""
        if pd.isna(lo) or pd.isna(hi):
            return fixed(v, digits)
        return f"{fixed(v, digits)} {interval_text(lo, hi, digits)}"

    return [cell(v, lo, hi) for v, lo, hi in zip(values, lows, highs)]


def undefined_lines(result: MetaResult, level: str) -> list[str]:
    """Why cells of a level's grid are blank (NaN), or were averaged over fewer prompts."""
    rows = result.correlations[(result.correlations["level"] == level)
                               & (result.correlations["reason"] != "")]
    return [f"{count} value(s): {reason}"
            for reason, count in rows["reason"].value_counts(sort=False).items()]


def baseline_lines(result: MetaResult, level: str) -> list[str]:
    """Why human baseline cells of a level's grid are blank, or which annotators a value
    leaves out, from the baseline's ``reason`` (e.g. a leave-one-out baseline needs enough
    annotators; crowd workers who rated one story have no coefficient)."""
    base = result.baseline
    if base.empty or "reason" not in base.columns:
        return []
    rows = base[(base["level"] == level) & (base["reason"].fillna("") != "")]
    labels = rows["variant"].map(BASELINE_LABELS).fillna(rows["variant"])
    counts = rows.groupby([labels.to_numpy(), rows["reason"].to_numpy()], sort=False).size()
    return [f"{label}: {count} value(s): {reason}"
            for (label, reason), count in counts.items()] + above_upper_bound_lines(result, level)


def above_upper_bound_lines(result: MetaResult, level: str) -> list[str]:
    """A note where a measure's |correlation| exceeds the "upper bound" baseline of its
    criterion: that baseline is an annotator's agreement with the mean of all annotators, a
    bound for one annotator, not for a measure (with few systems or prompts a measure can
    reach 1.000 beside it)."""
    base, corr = result.baseline, result.correlations
    if base.empty or corr.empty:
        return []
    bound = base[(base["level"] == level) & (base["variant"] == "upper_bound")]
    bound = bound.set_index("criterion")["value"].astype(float).dropna()
    if bound.empty:
        return []
    rows = corr[(corr["level"] == level) & corr["criterion"].isin(bound.index)]
    limit = rows["criterion"].map(bound).to_numpy(dtype=float)
    above = rows[rows["value"].abs().to_numpy(dtype=float) > limit + 1e-12]
    if above.empty:
        return []
    criteria = ", ".join(dict.fromkeys(above["criterion"]))
    return [f"{BASELINE_LABELS['upper_bound']} is each annotator against the mean of all "
            f"annotators (itself included): a bound for one annotator, not for a measure; "
            f"{above['measure'].nunique()} measure(s) exceed it ({criteria})"]


def interval_lines(result: MetaResult, level: str) -> list[str]:
    """Why a bootstrap interval is left out of a defined value's cell (a reason recorded in the
    baseline's ``reason`` column is listed by `baseline_lines` instead)."""
    undefined = "the coefficient is undefined in every resample (e.g. a measure constant on " \
        "the resampled stories)"
    if result.settings.get("bootstrap", {}).get("ci_method") == "bca":
        undefined += " or the BCa interval is degenerate"
    if result.settings.get("bootstrap", {}).get("reason"):  # a single cluster
        undefined = result.settings["bootstrap"]["reason"]
    corr = result.correlations[result.correlations["level"] == level]
    missing = int((corr["value"].notna() & corr[["ci_low", "ci_high"]].isna().any(axis=1))
                  .sum())
    lines = [f"{missing} interval(s) undefined: {undefined}"] if missing else []
    base = result.baseline
    if "ci_low" in base.columns:
        base = base[(base["level"] == level) & base["value"].notna()
                    & base[["ci_low", "ci_high"]].isna().any(axis=1)
                    & (base["reason"].fillna("") == "")]
        counts = base["variant"].map(BASELINE_LABELS).fillna(base["variant"]).value_counts(
            sort=False)
        lines += [f"{label}: {count} interval(s) undefined: {undefined}"
                  for label, count in counts.items()]
    return lines


def comparison_undefined_lines(result: MetaResult, level: str) -> list[str]:
    """Why comparison p-values (or intervals of the difference) of a level are blank (NaN), from
    the tests' ``reason``."""
    will = result.comparisons
    rows = will[(will["level"] == level) & (will["reason"].fillna("") != "")]
    label = TEST_LABELS.get(level_test(result, level), "Williams")
    what = "comparison test(s)" if label == "Williams" else f"comparison(s) ({label})"
    lines = []
    for reason, n in rows["reason"].value_counts(sort=False).items():
        if reason.startswith("interval: "):
            lines.append(f"{n} interval(s) of the difference undefined: "
                         f"{reason[len('interval: '):]}")
        else:
            lines.append(f"{n} {what} undefined: {reason}")
    return lines


def chance_line(result: MetaResult, level: str, digits: int = 3) -> str:
    """One line: how large a random measure's |coefficient| gets at this level."""
    rows = result.chance[result.chance["level"] == level]
    conf = result.settings["chance"]["confidence_level"]
    low, high = rows["abs_high"].min(), rows["abs_high"].max()
    return (f"chance: a random measure reaches |{SHORT_COEFFICIENT[result.settings['coefficient']]}"
            f"| up to {low:.{digits}f}-{high:.{digits}f} (by criterion) in {conf:.0%} of "
            f"{result.settings['chance']['n_draws']} draws at the {level} level")


def permutation_caption(result: MetaResult, level: str) -> str:
    p = result.settings["permutation"]
    w = result.settings["comparisons"]
    return (f"{w['adjustment'].upper()}-adjusted paired permutation p ({p['alternative']}, "
            f"{p['n_permutations']} permutations, unit {p['unit'].get(level, '?')}), "
            f"{level} level")


def _titled(title: str, table: pd.DataFrame, fmt: str, digits: int) -> str:
    if fmt == "latex":
        return format_table(table, "latex", digits=digits, caption=title)
    heading = f"## {title}\n\n" if fmt == "md" else wrap_text(f"{title}\n")
    return heading + format_table(table, fmt, digits=digits)


def to_json(result: MetaResult) -> str:
    """Settings and the three tidy tables as one JSON document (full precision, NaN as null).
    The settings gain ``comparisons.family_sizes`` ([`MetaResult.family_sizes`][])."""
    doc = {"settings": report_settings(result)}
    for name in ("correlations", "baseline", "comparisons"):
        doc[name] = json.loads(format_table(getattr(result, name), "json"))
    return json.dumps(doc, ensure_ascii=False, indent=1)


def report_settings(result: MetaResult) -> dict:
    """`MetaResult.settings` with the size of the comparison tests' families, per level
    (``settings["comparisons"]["family_sizes"]``), for settings.json and the JSON output."""
    settings = dict(result.settings)
    if "comparisons" in settings:
        settings["comparisons"] = {**settings["comparisons"],
                                "family_sizes": result.family_sizes()}
    return settings


def _slugs(criteria: list[str]) -> dict[str, str]:
    """File-name slugs of criteria ("Relevance" -> "relevance", "Émotion" -> "emotion"), made
    unique by a suffix; a slug longer than 48 characters is cut to 39 and ends with 8 hex
    digits of the criterion's SHA-256 (file names stay far below the 255 bytes file systems
    allow)."""
    import hashlib
    import unicodedata

    slugs: dict[str, str] = {}
    for criterion in criteria:
        # accents dropped, not the letters they sit on ("Émotion" -> "emotion", not "motion")
        ascii_name = unicodedata.normalize("NFKD", criterion).encode("ascii", "ignore").decode()
        base = re.sub(r"[^0-9a-z]+", "-", ascii_name.lower()).strip("-") or "criterion"
        if len(base) > 48:
            digest = hashlib.sha256(criterion.encode("utf-8")).hexdigest()[:8]
            base = f"{base[:39].rstrip('-')}-{digest}"
        slug, k = base, 1
        while slug in slugs.values():
            k += 1
            slug = f"{base}-{k}"
        slugs[criterion] = slug
    return slugs


