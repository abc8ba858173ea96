"""``index.html`` of an ``--out`` folder: one self-contained page that ties the files together.

The page has no scripts and loads nothing from the network: its style is inline and its
figures are the folder's own image files, referenced by relative paths (the page and the
figures move together). It opens with the answer (`storyeval.report.answer`: per criterion and
level the best measure, its interval, its significance group and the tests' measured levels),
then the header facts (data, test, family, seed, versions), every table with its caption
(p-values as a journal prints them: `storyeval.report.present.p_text`; correlations with
their bootstrap intervals when the run computed them), the figures and the warnings of the
run, and links to every file. A viewport tag and a fluid layout keep it readable from a
400 px phone to a 1400 px screen (tests/test_html_report.py checks both in Chromium).
"""

from __future__ import annotations

import html
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from storyeval.meta.pipeline import MetaResult

__all__ = ["Block", "Page", "meta_page", "render_page", "versions"]

INDEX = "index.html"
#: Tables longer than this are folded under their caption (``<details>``) on a page of tables.
COLLAPSE_ROWS = 20
_IMAGE_FORMATS = ("png", "svg")

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 80em; padding: 0 1em;
       color: #222; line-height: 1.4; overflow-wrap: anywhere; }
section.answer { background: #f3f8ff; border: 1px solid #c9dcf2; padding: 0.2em 1em 0.6em; }
section.answer h2 { margin-top: 0.6em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: right;
         overflow-wrap: normal; word-break: normal; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
.scroll { overflow-x: auto; max-width: 100%; }
.caption { font-size: 0.9em; color: #444; margin: 0.3em 0; }
dl.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.2em 1em; }
@media (max-width: 600px) { dl.facts { grid-template-columns: minmax(0, 1fr); }
  dl.facts dd { margin-bottom: 0.4em; } body { margin: 1em auto; padding: 0 0.5em; } }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figure.svg svg { width: 100%; max-width: 36em; height: auto; display: block; }
details { margin: 0.5em 0; } details > summary { cursor: pointer; }
section.answer p.lead { font-size: 1.05em; }
.warnings li { color: #8a4b00; }
table.answer th, table.answer td { text-align: left; vertical-align: top; }
table.answer td.num, td.p { white-space: nowrap; }
@media (max-width: 600px) {
  table.answer, table.answer tbody, table.answer tr, table.answer td { display: block; }
  table.answer thead { display: none; }
  table.answer tr { border: 1px solid #c9dcf2; margin: 0 0 0.8em; background: #fff; }
  table.answer td { border: 0; border-bottom: 1px solid #eee; white-space: normal; }
  table.answer td::before { content: attr(data-label) ": "; font-weight: 600; } }
"""


@dataclass(frozen=True)
class Block:
    """One element of the page: ``kind`` is "heading", "table", "figure", "svg" (inline SVG
    text in ``items[0]``), "link", "text", "lead" (an answer in words) or "list"."""

    kind: str
    text: str = ""
    table: pd.DataFrame | None = None
    items: tuple[str, ...] = ()
    #: the table's numbers are p-values (shown as `storyeval.report.present.p_text` prints them)
    pvalues: bool = False
    #: whether the table's index is shown (its first column)
    index: bool = True
    #: a long table folded under its caption (``<details>``: one click opens it)
    collapsed: bool = False


@dataclass
class Page:
    title: str
    facts: list[tuple[str, str]]
    blocks: list[Block] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    #: what the page opens with, before the facts (the answer to the page's question)
    answer: list[Block] = field(default_factory=list)


def versions() -> str:
    """The versions that produced the files: storyeval, Python and the numerical libraries."""
    import numpy
    import scipy

    from storyeval._version import __version__

    return (f"storyeval {__version__}, Python {platform.python_version()}, numpy "
            f"{numpy.__version__}, scipy {scipy.__version__}, pandas {pd.__version__}")


def table_html(table: pd.DataFrame, digits: int, *, pvalues: bool = False,
               index: bool = True) -> str:
    """A table as HTML, numbers rounded to ``digits`` (p-values, with ``pvalues`` or in a
    column whose name starts with "p" and holds p-values, as `storyeval.report.present.p_text` prints them),
    missing values blank."""
    text = _strings(table, digits, pvalues).to_html(na_rep="", border=0, escape=True,
                                                    index=index)
    # "< 0.001" stays on one line however narrow its column
    return text.replace("<td>&lt; 0.001</td>", "<td class='p'>&lt; 0.001</td>")


def render_page(page: Page, *, digits: int = 3) -> str:
    """The page as one HTML document."""
    esc = html.escape
    out = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
           "<meta name='viewport' content='width=device-width, initial-scale=1'>",
           f"<title>{esc(page.title)}</title>", f"<style>{_STYLE}</style></head><body>",
           f"<h1>{esc(page.title)}</h1>"]
    if page.answer:
        out.append("<section class='answer' id='answer'>")
        out += [_answer_html(block, digits) if block.kind == "table" and block.table is not None
                else _block_html(block, digits) for block in page.answer]
        out.append("</section>")
    out.append("<dl class='facts'>")
    out += [f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in page.facts]
    out.append("</dl>")
    if page.warnings:
        out.append("<h2 id='warnings'>Warnings</h2><ul class='warnings'>")
        out += [f"<li>{esc(w)}</li>" for w in page.warnings]
        out.append("</ul>")
    for block in page.blocks:
        out.append(_block_html(block, digits))
    if page.files:
        out.append("<h2 id='files'>Files</h2><ul>")
        out += [f"<li><a href='{esc(name)}'>{esc(name)}</a></li>" for name in page.files]
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _block_html(block: Block, digits: int) -> str:
    esc = html.escape
    if block.kind == "heading":
        return f"<h2>{esc(block.text)}</h2>"
    if block.kind == "table" and block.table is not None:
        table = (f"<div class='scroll'>"
                 f"{table_html(block.table, digits, pvalues=block.pvalues, index=block.index)}"
                 "</div>")
        if block.collapsed:
            rows = len(block.table)
            what = f"{esc(block.text)} ({rows} rows)" if block.text else f"{rows} rows"
            return (f"<details><summary class='caption'>{what}: click to open</summary>"
                    f"{table}</details>")
        return f"<p class='caption'>{esc(block.text)}</p>{table}"
    if block.kind == "svg":  # an inline figure (its text is page text: it scales and reads)
        return (f"<figure class='svg'>{block.items[0]}"
                f"<figcaption class='caption'>{esc(block.text)}</figcaption></figure>")
    if block.kind == "figure":
        name, caption = block.items[0], block.text
        return (f"<figure><img src='{esc(name)}' alt='{esc(caption)}'>"
                f"<figcaption class='caption'>{esc(caption)}</figcaption></figure>")
    if block.kind == "link":
        return f"<p><a href='{esc(block.items[0])}'>{esc(block.text)}</a></p>"
    if block.kind == "list":
        return "<ul>" + "".join(f"<li>{esc(i)}</li>" for i in block.items) + "</ul>"
    if block.kind == "lead":  # an answer in words
        return f"<p class='lead'>{esc(block.text)}</p>"
    return f"<p>{esc(block.text)}</p>"


def _answer_html(block: Block, digits: int) -> str:
    """An answer table: text cells left-aligned, each cell labelled with its column
    (``data-label``) so that below 600 px every row stacks into a card of "column: value" lines
    instead of squeezing nine columns into a phone's width; above, a table whose words never
    break (it scrolls inside its box when wider than the page)."""
    import re

    esc = html.escape
    assert block.table is not None
    shown = _strings(block.table, digits, block.pvalues)
    head = "".join(f"<th>{esc(str(c))}</th>" for c in shown.columns)
    numeric = re.compile(r"^[-<>= .0-9\[\],]+$")
    rows = []
    for values in shown.itertuples(index=False):
        num = " class='num'"
        cells = "".join(
            f"<td data-label='{esc(str(c))}'{num if numeric.match(str(v)) else ''}>"
            f"{esc(str(v))}</td>" for c, v in zip(shown.columns, values))
        rows.append(f"<tr>{cells}</tr>")
    caption = f"<p class='caption'>{esc(block.text)}</p>" if block.text else ""
    return (f"{caption}<div class='scroll'><table class='answer'><thead><tr>{head}</tr>"
            f"</thead><tbody>{''.join(rows)}</tbody></table></div>")


def _strings(table: pd.DataFrame, digits: int, pvalues: bool) -> pd.DataFrame:
    """The cells as `table_html` prints them (p-values as a journal does, missing blank)."""
    from storyeval.report.present import fixed, is_p_column, p_text

    shown = table.copy()
    for column in shown.columns:
        if pd.api.types.is_float_dtype(shown[column]):
            if pvalues or is_p_column(column):
                shown[column] = shown[column].map(p_text)
            else:
                shown[column] = shown[column].map(
                    lambda v: "" if pd.isna(v) else fixed(v, digits))
    return shown.astype(object).where(shown.notna(), "")


def image_name(stem: str, formats: Sequence[str]) -> str | None:
    """The file a page shows for a figure drawn in ``formats`` (PNG or SVG), if any."""
    fmt = next((f for f in formats if f in _IMAGE_FORMATS), None)
    return None if fmt is None else f"{stem}.{fmt}"


def meta_page(result: MetaResult, *, figures: dict[str, str], files: Sequence[str],
              warnings: Sequence[str] = (), digits: int = 3,
              extra_tables: Sequence[tuple[str, pd.DataFrame]] = ()) -> Page:
    """The page of `storyeval meta --out`: facts, per level the correlation grid (and its
    heatmap), the baseline and undefined-value notes, the comparison tables (and heatmaps),
    the warnings. ``figures`` maps a table's file stem to its image file name."""
    from storyeval.report import meta_report as mr

    s = result.settings
    will = s.get("comparisons", {})
    effect = will.get("effect_size", {})
    from storyeval.report.tables import count

    facts = [("data", f"{s.get('dataset')}: {count(s.get('n_systems'), 'system')}, "
                      f"{count(s.get('n_stories'), 'story', 'stories')}"
                      + "".join(f"; {n}" for n in s.get("dataset_notes", []))),
             ("measures", f"{s.get('measures')} (criteria: {', '.join(s.get('criteria', []))})"),
             ("coefficient", str(s.get("coefficient_description", s.get("coefficient"))))]
    if will:
        tests = will.get("test_description", {})
        measured = will.get("measured_level") or {}
        facts += [("test", "; ".join(f"{lev}: {text}" for lev, text in tests.items())
                   if isinstance(tests, dict) else str(tests)),
                  ("measured level", "; ".join(
                      f"{lev}: {text or 'not simulated for this test'}"
                      for lev, text in measured.items()) or "none"),
                  ("comparison", str(will.get("comparison", ""))),
                  ("family", f"{str(will.get('adjustment', '')).upper()} adjustment, "
                             f"{mr.family_text(result)}")]
    facts += [("seed", str(effect.get("random_state", "none"))), ("versions", versions())]
    blocks: list[Block] = []
    with_ci = "ci_low" in result.correlations.columns
    for level in s.get("levels", []):
        blocks.append(Block("heading", f"{level.capitalize()} level"))
        stem = f"correlations_{level}"
        grid = mr.correlation_grid(result, level)
        caption = mr.level_caption(result, level)
        if with_ci:  # the intervals the run computed, in the cells: "r [low, high]"
            grid = mr.with_intervals(result, level, grid, digits)
            caption += f"; cells: value [{_ci_text(result)}]"
        blocks.append(Block("table", caption, grid))
        blocks += _figure(figures, stem)
        notes = mr.undefined_lines(result, level) + mr.baseline_lines(result, level)
        if "ci_low" in result.correlations.columns:
            notes += mr.interval_lines(result, level)
        if not result.chance.empty and level in set(result.chance["level"]):
            notes.append(mr.chance_line(result, level, digits))
        if notes:
            blocks.append(Block("list", items=tuple(notes)))
        if level in will.get("levels", []):
            blocks += _comparison_blocks(result, level, figures, digits)
    if extra_tables:  # the --clusters / --length tables of the same run
        blocks.append(Block("heading", "Clusters and other tables of this run"))
        for title, table in extra_tables:
            blocks.append(Block("table", title, table, index=False))
        blocks += _figure(figures, "clusters_overall") + _figure(figures, "clusters_system")
    return Page(title=f"storyeval meta: {s.get('dataset')}", facts=facts, blocks=blocks,
                warnings=list(dict.fromkeys(warnings)), files=list(files),
                answer=_answer_blocks(result, digits))


def _ci_text(result: MetaResult) -> str:
    b = result.settings.get("bootstrap", {})
    return (f"{b.get('confidence_level', 0.95):g} bootstrap interval, "
            f"{b.get('ci_method', 'percentile')}, {b.get('n_resamples', '?')} resamples of "
            f"{b.get('resample_by', 'prompts')}, seed {b.get('random_state', '?')}")


def _answer_blocks(result: MetaResult, digits: int) -> list[Block]:
    """The answer: which measure agrees best with the humans, per criterion and level."""
    from storyeval.report.answer import answer_notes, answer_table

    table = answer_table(result, digits=digits)
    if table.empty:
        return []
    return [Block("heading", "Answer: which measure agrees best with the humans"),
            Block("table", "per criterion and level, the measure with the largest "
                           "correlation (oriented as the tests were), its interval, whether it "
                           "is significantly better than the next one, and its top group",
                  table, index=False),
            Block("list", items=tuple(answer_notes(result)))]


def _figure(figures: dict[str, str], stem: str) -> list[Block]:
    name = figures.get(stem)
    if name is None:
        return []
    if name.rsplit(".", 1)[-1] not in _IMAGE_FORMATS:  # a PDF: linked, not shown
        return [Block("link", f"figure: {name}", items=(name,))]
    return [Block("figure", f"figure: {name}", items=(name,))]


def _comparison_blocks(result: MetaResult, level: str, figures: dict[str, str],
                       digits: int = 3) -> list[Block]:
    from storyeval.report import meta_report as mr

    blocks: list[Block] = []
    if result.comparisons_all_pairs():
        for criterion, slug in mr._slugs(mr.tested_criteria(result, level)).items():
            stem = f"comparisons_{level}_{slug}"
            blocks.append(Block("table", mr.comparison_caption(result, level, criterion),
                                result.comparison_matrix(level, criterion), pvalues=True))
            blocks += _figure(figures, stem)
            effect = mr.effect_matrix(result, level, criterion, digits)
            if effect is not None and len(effect):  # the effect sizes beside their p-values
                blocks.append(Block("table", mr.effect_caption(result, level, criterion),
                                    effect))
        blocks += [Block("list", items=tuple(lines))
                   for lines in [mr.comparison_undefined_lines(result, level)] if lines]
        return blocks
    grid = result.comparison_grid(level)
    if grid.empty:
        return blocks
    blocks.append(Block("table", mr.comparison_caption(result, level), grid, pvalues=True))
    blocks += _figure(figures, f"comparisons_{level}")
    effect = mr.effect_grid(result, level, digits)
    if effect is not None and len(effect):
        blocks.append(Block("table", mr.effect_caption(result, level), effect))
    blocks += [Block("list", items=tuple(lines))
               for lines in [mr.comparison_undefined_lines(result, level)] if lines]
    return blocks


def tables_page(title: str, facts: list[tuple[str, str]], tables: dict[str, pd.DataFrame],
                *, notes: Sequence[str] = (), files: Sequence[str] = (),
                digits: int = 3, answer: pd.DataFrame | None = None,
                answer_caption: str = "", lead: Sequence[str] = ()) -> Page:
    """A page of named tables (e.g. `storyeval agreement --out`), after the ``notes``; with
    ``answer``, the page opens with it (the rows that answer the command's question, under
    ``answer_caption``, after the sentences of ``lead``)."""
    blocks = [Block("heading", "Notes"), Block("list", items=tuple(notes))] if notes else []
    for name, table in tables.items():  # a long table folded: the answer above says it
        blocks += [Block("heading", name), Block("table", "", table, index=False,
                                                 collapsed=len(table) > COLLAPSE_ROWS)]
    facts = [*facts, ("versions", versions())]
    opening = ([Block("heading", "Answer"), *[Block("lead", line) for line in lead],
                Block("table", answer_caption, answer, index=False)]
               if answer is not None and len(answer) else [])
    return Page(title=title, facts=facts, blocks=blocks, files=list(files), answer=opening)
