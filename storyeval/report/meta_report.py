"""Render and write the results of :func:`storyeval.meta.meta_evaluate`.

Tables are shown as grids (one row per rater, one column per criterion, plus the mean), the
paper's layout; the files written with ``--out`` keep the tidy long tables at full precision.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from storyeval.meta.pipeline import MetaResult
from storyeval.report.figures import heatmap
from storyeval.report.tables import FILE_SUFFIX, format_table

BASELINE_LABELS = {"upper_bound": "Human (upper bound)", "leave_one_out": "Human (leave-one-out)"}
SHORT_COEFFICIENT = {"kendall_b": "Kendall tau-b", "kendall_c": "Kendall tau-c",
                     "pearson": "Pearson r", "spearman": "Spearman rho"}


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
        what = f"means of {s['n_systems']} systems"
    else:
        what = f"within each prompt across {s['n_systems']} systems, averaged over prompts"
    return f"{coef} with human criteria, {level} level ({what})"


def williams_caption(result: MetaResult, level: str) -> str:
    w = result.settings["williams"]
    return (f"{w['adjustment'].upper()}-adjusted Williams p ({w['p_value']}, family "
            f"{w['family']!r}), {w['comparison']}, {level} level")


def settings_lines(result: MetaResult) -> list[str]:
    """The conventions that produced the numbers, one per line."""
    s, w = result.settings, result.settings["williams"]
    human = "included" if s["include_human_stories"] else "excluded (they are the references)"
    own = "their own criterion" if s["llm_criteria"] == "matched" else "every criterion"
    lines = [
        (f"dataset: {s['dataset']}; {s['n_systems']} systems, {s['n_stories']} stories; "
         f"human-written stories {human}"),
        (f"coefficient: {s['coefficient_description']}; levels: {', '.join(s['levels'])}; "
         f"nan_policy: {s['nan_policy']}; system means tie within relative "
         f"{s.get('tie_rtol', 0):g}"),
        f"measures: {s['measures']}; LLM ratings correlated with {own}",
    ]
    if w["comparison"] != "none":
        where = ", ".join(w["levels"]) or "none of the requested levels"
        lines.append(
            f"Williams tests ({where} level; prompt-level values are averages of per-prompt "
            f"correlations and are not tested): {w['comparison']}; {w['p_value']}; "
            f"run in the direction of "
            f"{'the larger |r|' if w['direction'] == 'larger' else 'a > b'}; sign convention "
            f"{w['sign_convention']!r}; {w['adjustment'].upper()} over family {w['family']!r}")
        if w["note"]:
            lines.append(f"note: {w['note']}")
    if "bootstrap" in s:
        b = s["bootstrap"]
        lines.append(f"bootstrap: {b['ci_method']} {b['confidence_level']:.0%} intervals [low, "
                     f"high] from {b['n_resamples']} resamples of {b['resample_by']} (the same "
                     f"resamples for every measure), seed {b['random_state']}")
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


def render(result: MetaResult, fmt: str = "table", *, digits: int = 3) -> str:
    """The whole result as text in ``fmt`` (grids for table/md/latex; tidy tables for csv/json)."""
    if fmt == "csv":
        return format_table(result.correlations, "csv")
    if fmt == "json":
        return to_json(result)
    parts = []
    comment = {"table": "# ", "md": "> ", "latex": "% "}[fmt]
    parts.append("\n".join(comment + line for line in settings_lines(result)) + "\n")
    for level in result.settings["levels"]:
        grid = correlation_grid(result, level)
        if "ci_low" in result.correlations.columns:
            grid = _with_intervals(result, level, grid, digits)
        parts.append(_titled(level_caption(result, level), grid.reset_index(), fmt, digits))
        notes = [*undefined_lines(result, level)]
        if not result.chance.empty:
            notes.append(chance_line(result, level, digits))
        if notes:
            parts.append("\n".join(comment + line for line in notes) + "\n")
    for level in result.settings["williams"]["levels"]:
        grid = result.williams_grid(level).reset_index()
        if len(grid):
            parts.append(_titled(williams_caption(result, level), grid, fmt, digits))
        if "perm_p_adjusted" in result.williams.columns:
            perm = result.williams_grid(level, column="perm_p_adjusted").reset_index()
            parts.append(_titled(permutation_caption(result, level), perm, fmt, digits))
    return "\n".join(parts)


def _with_intervals(result: MetaResult, level: str, grid: pd.DataFrame,
                    digits: int) -> pd.DataFrame:
    """Grid cells as "value [low, high]" strings (the Mean column keeps its value)."""
    rows = result.correlations[result.correlations["level"] == level]
    keys = result._row_keys(rows)
    cells = {(key, crit): f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
             for key, crit, v, lo, hi in zip(keys, rows["criterion"], rows["value"],
                                             rows["ci_low"], rows["ci_high"])}
    if "ci_low" in result.baseline.columns:
        base = result.baseline[result.baseline["level"] == level]
        cells.update({(f"human_baseline:{var}", crit):
                      f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"
                      for var, crit, v, lo, hi in zip(base["variant"], base["criterion"],
                                                      base["value"], base["ci_low"],
                                                      base["ci_high"])})
    text = grid.map(lambda v: "" if pd.isna(v) else f"{v:.{digits}f}").astype(object)
    position = {key: i for i, key in enumerate(grid.attrs["ids"])}
    for (key, crit), cell in cells.items():
        if key in position and crit in text.columns:
            text.iloc[position[key], text.columns.get_loc(crit)] = cell
    return text


def undefined_lines(result: MetaResult, level: str) -> list[str]:
    """Why cells of a level's grid are blank (NaN), or were averaged over fewer prompts."""
    rows = result.correlations[(result.correlations["level"] == level)
                               & (result.correlations["reason"] != "")]
    return [f"{count} value(s): {reason}"
            for reason, count in rows["reason"].value_counts(sort=False).items()]


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
    w = result.settings["williams"]
    return (f"{w['adjustment'].upper()}-adjusted paired permutation p ({p['alternative']}, "
            f"{p['n_permutations']} permutations, unit {p['unit'].get(level, '?')}), "
            f"{level} level")


def _titled(title: str, table: pd.DataFrame, fmt: str, digits: int) -> str:
    if fmt == "latex":
        return format_table(table, "latex", digits=digits, caption=title)
    heading = f"## {title}\n\n" if fmt == "md" else f"{title}\n"
    return heading + format_table(table, fmt, digits=digits)


def to_json(result: MetaResult) -> str:
    """Settings and the three tidy tables as one JSON document (full precision, NaN as null)."""
    doc = {"settings": result.settings}
    for name in ("correlations", "baseline", "williams"):
        doc[name] = json.loads(format_table(getattr(result, name), "json"))
    return json.dumps(doc, ensure_ascii=False, indent=1)


def write_report(result: MetaResult, out_dir: str | Path, *, figures: bool = True,
                 digits: int = 3) -> list[Path]:
    """Write tidy CSVs, grids in Markdown/LaTeX/CSV, settings and the figures to ``out_dir``.

    Files: ``correlations.csv`` (measure, criterion, level, coefficient, value, n, ...),
    ``baseline.csv``, ``williams.csv``, ``settings.json``, ``correlations_{level}.{md,tex,csv}``,
    ``williams_{level}.{md,tex,csv}``, and with ``figures`` ``kendall_{level}.png/.pdf`` (named
    after the coefficient) and ``williams_{level}.png/.pdf``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []

    def save(name: str, text: str) -> None:
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)

    save("correlations.csv", format_table(result.correlations, "csv"))
    save("baseline.csv", format_table(result.baseline, "csv"))
    save("williams.csv", format_table(result.williams, "csv"))
    if not result.chance.empty:
        save("chance.csv", format_table(result.chance, "csv"))
    save("settings.json", json.dumps(result.settings, ensure_ascii=False, indent=1))
    coef = result.settings["coefficient"].split("_")[0]
    for level in result.settings["levels"]:
        grid = correlation_grid(result, level)
        _save_grid(save, f"correlations_{level}", grid, level_caption(result, level), digits)
        if figures:
            written += heatmap(grid, out / f"{coef}_{level}", title=level_caption(result, level),
                               colorbar_label=SHORT_COEFFICIENT[result.settings["coefficient"]])
    for level in result.settings["williams"]["levels"]:
        grid = result.williams_grid(level)
        if grid.empty:
            continue
        _save_grid(save, f"williams_{level}", grid, williams_caption(result, level), digits)
        if figures:
            # the paper's direction rule tests whichever of the two correlates better: mark the
            # cells where that is the compared measure, not the reference
            swapped = result.williams_grid(level, column="swapped").reindex(
                index=grid.index, columns=grid.columns).fillna(False).astype(bool)
            written += heatmap(grid, out / f"williams_{level}",
                               title=williams_caption(result, level)
                               + "; * the compared measure has the larger |r|",
                               cmap="viridis", vmin=0.0, vmax=1.0, colorbar_label="adjusted p",
                               marks=swapped)
    return written


def _save_grid(save, stem: str, grid: pd.DataFrame, caption: str, digits: int) -> None:
    table = grid.reset_index()
    table.insert(1, "id", grid.attrs.get("ids", list(grid.index)))  # the data's identifiers
    for fmt in ("md", "latex", "csv"):
        text = format_table(table, fmt, digits=digits, caption=caption if fmt == "latex" else None)
        if fmt == "md":
            text = f"{caption}\n\n{text}"
        save(f"{stem}.{FILE_SUFFIX[fmt]}", text)
