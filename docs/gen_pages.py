"""Generate every number, table, figure and command output shown on the documentation site.

Usage (from the repository root)::

    python docs/gen_pages.py                 # writes docs/generated/
    python docs/gen_pages.py --out DIR       # somewhere else (the stale check in tests/)
    python docs/gen_pages.py --no-figures    # Markdown only

The hand-written pages (``docs/*.md``) carry the prose; they include the Markdown snippets written
here with ``--8<-- "generated/NAME.md"`` (pymdownx.snippets) and show the PNG figures. Nothing on
the site is typed by hand: the snippets come from running storyeval on the embedded HANNA data.

The Markdown is deterministic (no dates, paths or timings), so ``tests/test_docs.py`` regenerates
it into a temporary folder and fails when the committed ``docs/generated/*.md`` differ (a stale
page). Figures are PNG files drawn by :func:`storyeval.report.figures.heatmap`; the test checks
that they exist but does not compare their bytes (they depend on the matplotlib version).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from gen_common import console, invoke, md, snippet_writer

DOCS = Path(__file__).resolve().parent
DEFAULT_OUT = DOCS / "generated"
FIGURES = ("kendall_overall", "kendall_system", "williams_overall", "williams_system")
#: Lines of `storyeval meta --metrics all` shown on the quickstart page.
QUICKSTART_LINES = 36
TUTORIAL_PAGE = "tutorial-own-metric.md"

# The paper's published figures: Chhun, Suchanek, Clavel (TACL 2024), Section 5 "ASE1"
# (Overall / System-level correlations, Statistical testing). Kendall, 960 stories / 10 systems,
# Eval-Prompt 1, mean over the six criteria. The user-study figures live with the code that
# reproduces them (storyeval.reproduction.user_study.USER_STUDY_CATEGORIES).
PAPER_OVERALL_MEANS = {"Beluga-13B 1": 0.25, "Llama-13B 1": 0.16, "Mistral-7B 1": 0.20,
                       "ChatGPT 1": 0.18}
PAPER_SYSTEM = {"Beluga-13B 1": 0.70, "Human (upper bound)": 0.73, "BERTScore F1": 0.57,
                "BARTScore-SH": 0.57}
PAPER_NON_LLM_RANGE = (0.13, 0.57)     # "non-LLM automatic measures ... ranging from 0.13 to 0.57"
PAPER_CHATGPT_RANGE = (0.07, 0.73)     # "ChatGPT ... correlations range from 0.07 to 0.73"
PAPER_WILLIAMS_CHATGPT_OVERALL = (0.01, 0.14)   # Williams figure, overall, Beluga vs ChatGPT
PAPER_WILLIAMS_SYSTEM_MIN = 0.11                # "p > 0.11 for all tests" (system level)
LLM_RATERS = ("Beluga-13B 1", "Llama-13B 1", "Mistral-7B 1", "ChatGPT 1")


# ---------------------------------------------------------------------------------- helpers
def fmt(value: float, digits: int = 3) -> str:
    """``value`` at ``digits`` decimals; NaN as an empty cell."""
    return "" if math.isnan(value) else f"{value:.{digits}f}"


def signed(value: float, digits: int = 3) -> str:
    """``+0.004``; a difference that rounds to zero keeps its first significant digit."""
    text = f"{value:+.{digits}f}"
    if value != 0 and float(text) == 0:
        text = f"{value:+.1e}"
    return text


def agrees(ours: float, paper: float, decimals: int = 2) -> str:
    """'yes' when storyeval's value rounded to the paper's precision is the paper's value."""
    return "yes" if round(ours, decimals) == round(paper, decimals) else "no"


def comparison(rows: Sequence[tuple[str, float, float]], *, digits: int = 3) -> str:
    """``quantity | paper | storyeval | difference | agrees at 2 decimals`` as Markdown."""
    frame = pd.DataFrame({
        "quantity": [r[0] for r in rows],
        "paper": [f"{r[1]:.2f}" for r in rows],
        "storyeval": [fmt(r[2], digits) for r in rows],
        "difference": [signed(r[2] - r[1], digits) for r in rows],
        "agrees at 2 decimals": [agrees(r[2], r[1]) for r in rows],
    })
    return md(frame)


# ------------------------------------------------------------------------------- the pages
def quickstart(write: Callable[[str, str], None]) -> None:
    """The README's main command and the beginning of its real output."""
    run = invoke(["meta", "--metrics", "all"], warning_action=None)
    code, out = run.code, run.out
    if code != 0:
        raise RuntimeError(f"storyeval meta --metrics all exited with {code}")
    lines = out.rstrip("\n").split("\n")
    shown = "\n".join(lines[:QUICKSTART_LINES])
    rest = len(lines) - QUICKSTART_LINES
    write("quickstart_meta", console("storyeval meta --metrics all", shown)
          + f"\n*({rest} more lines: the other measures, the system level and the Williams "
          f"tables; {len(lines)} lines in all.)*\n")


def correlations(write, result, figure) -> None:
    """Overall and system-level Kendall grids, the comparisons with the paper, the heatmaps."""
    from storyeval.report.meta_report import correlation_grid, level_caption

    for level in ("overall", "system"):
        grid = correlation_grid(result, level)
        write(f"kendall_{level}", f"*{level_caption(result, level)}.*\n\n"
              + md(grid.reset_index()))
        figure(f"kendall_{level}", grid, title=level_caption(result, level),
               colorbar_label="Kendall tau-b")

    overall = correlation_grid(result, "overall")["Mean"]
    rows = [(f"{r} overall mean", PAPER_OVERALL_MEANS[r], overall[r]) for r in LLM_RATERS]
    write("compare_overall", comparison(rows))

    rows, _, non_llm = system_quantities(result)
    write("compare_system", comparison(rows))

    abs_mean = non_llm.abs().mean(axis=1)
    signed = non_llm.mean(axis=1)
    table = pd.DataFrame({"metric": non_llm.index, "mean tau": signed.to_numpy(),
                          "mean abs(tau)": abs_mean.to_numpy()})
    write("system_non_llm_means", md(table))


def system_quantities(result, level: str = "system") -> tuple[list[tuple[str, float, float]],
                                                              pd.DataFrame, pd.DataFrame]:
    """The paper's system-level figures as ``(quantity, paper, storyeval)`` rows, the grid of
    ``level`` (raters x criteria) and its non-LLM rows."""
    from storyeval.report.meta_report import correlation_grid

    grid = correlation_grid(result, level, with_mean=False)
    system = grid.mean(axis=1)
    rows = [(f"{name} system-level mean", paper, system[name])
            for name, paper in PAPER_SYSTEM.items()]
    metrics = result.correlations.query(f"level == '{level}' and kind == 'metric'")
    non_llm = grid.loc[metrics["display_name"].unique()]
    abs_mean = non_llm.abs().mean(axis=1)
    rows += [("non-LLM metrics, smallest mean |tau|", PAPER_NON_LLM_RANGE[0], abs_mean.min()),
             ("non-LLM metrics, largest mean |tau|", PAPER_NON_LLM_RANGE[1], abs_mean.max())]
    chatgpt = grid.loc["ChatGPT 1"]
    rows += [("ChatGPT 1, lowest criterion", PAPER_CHATGPT_RANGE[0], chatgpt.min()),
             ("ChatGPT 1, highest criterion", PAPER_CHATGPT_RANGE[1], chatgpt.max())]
    return rows, grid, non_llm


def numpy_system_means():
    """The generated HANNA stories reduced to one row per system: each measure's mean over the
    system's 96 stories computed by ``np.mean`` on that 1-D column, in floating point, with no
    tie handling. Correlating these rows at the overall level gives system-level correlations
    whose ties between equal means are broken by rounding, as in the paper's analysis."""
    from dataclasses import replace

    from storyeval.data import HUMAN_SYSTEM, load_hanna

    hanna = load_hanna().select_systems(None, exclude=[HUMAN_SYSTEM])
    wide = hanna.wide()
    systems = sorted(set(wide.index.get_level_values("system")))
    rows = []
    for system in systems:
        block = wide.xs(system, level="system")
        rows.append([np.mean(np.ascontiguousarray(block[m].to_numpy(dtype=np.float64)))
                     for m in wide.columns])
    index = pd.MultiIndex.from_arrays([systems, [0] * len(systems)],
                                      names=["system", "prompt_id"])
    table = pd.DataFrame(rows, index=index, columns=wide.columns)
    return replace(hanna, table=table, name="hanna, np.mean system means")


def system_ties(write, result) -> None:
    """The system-level figures with system means equal in exact arithmetic kept as ties
    (storyeval's default, ``tie_rtol``), with the raw float means (``tie_rtol=0``), and with
    per-system ``np.mean`` float means whose ties are broken by rounding."""
    from storyeval.correlation.levels import TIE_RTOL
    from storyeval.meta.pipeline import meta_evaluate

    raw = meta_evaluate(measures="paper", levels="system", reference="none", tie_rtol=0.0)
    numpy_means = meta_evaluate(numpy_system_means(), measures="paper", levels="overall",
                                reference="none")
    variants = {
        "ties kept": system_quantities(result),
        "tie_rtol=0": system_quantities(raw),
        "np.mean": system_quantities(numpy_means, "overall"),
    }
    first = next(iter(variants.values()))[0]
    frame = pd.DataFrame({"quantity": [r[0] for r in first],
                          "paper": [f"{r[1]:.2f}" for r in first]})
    for label, (rows, _, _) in variants.items():
        frame[label] = [r[2] for r in rows]
    for label, (rows, _, _) in variants.items():
        frame[f"agrees ({label})"] = [agrees(r[2], r[1]) for r in rows]
    legend = (f"*ties kept: storyeval's default, system means within relative "
              f"tie_rtol={TIE_RTOL:g} are tied; tie_rtol=0: the system means as storyeval "
              "computes them, not snapped; np.mean: each system's mean of each 1-D column "
              "computed by numpy. agrees: equal to the paper at two decimals.*\n\n")
    write("compare_ties", legend + md(frame))
    # Every (measure, criterion) of the paper's system-level figure that the variants disagree on.
    grids = {label: grid for label, (_, grid, _) in variants.items()}
    base = next(iter(grids.values()))
    changed = []
    for rater in base.index:
        for criterion in base.columns:
            values = {label: grid.loc[rater, criterion] for label, grid in grids.items()}
            if len(set(values.values())) > 1:
                changed.append({"measure": rater, "criterion": criterion, **values})
    write("system_ties", f"*The {len(changed)} of the {base.size} system-level correlations of "
          "the figure that differ between the three ways of computing system means.*\n\n"
          + md(pd.DataFrame(changed)))


def williams(write, result, figure) -> None:
    from storyeval.report.meta_report import comparison_caption

    for level in ("overall", "system"):
        grid = result.comparison_grid(level)
        write(f"williams_{level}", f"*{comparison_caption(result, level)}.*\n\n"
              + md(grid.reset_index()))
        w = result.settings["comparisons"]
        title = (f"{w['adjustment'].upper()}-adjusted Williams p, {w['reference']} vs each "
                 f"measure, {level} level")  # the full caption is under the figure
        figure(f"williams_{level}", grid, title=title,
               pvalues=True, colorbar_label="adjusted p (steps; break at 0.05)")
    chatgpt = result.comparison_grid("overall").loc["ChatGPT 1"]
    system = result.comparison_grid("system")
    write("compare_williams", comparison([
        ("Beluga-13B vs ChatGPT, overall: smallest adjusted p",
         PAPER_WILLIAMS_CHATGPT_OVERALL[0], chatgpt.min()),
        ("Beluga-13B vs ChatGPT, overall: largest adjusted p",
         PAPER_WILLIAMS_CHATGPT_OVERALL[1], chatgpt.max()),
        ("system level: smallest adjusted p of all tests", PAPER_WILLIAMS_SYSTEM_MIN,
         float(np.nanmin(system.to_numpy()))),
    ]))


def user_study(write) -> None:
    from storyeval.reproduction.user_study import user_study_table

    tab = user_study_table()
    shown = tab[tab["paper_gwet_ac1"].notna()]
    ac1 = pd.DataFrame({
        "error category": shown["display_name"],
        "paper AC1": shown["paper_gwet_ac1"].map(lambda v: f"{v:.2f}"),
        "storyeval AC1": shown["gwet_ac1"],
        "difference": [signed(o - p) for o, p in zip(shown["gwet_ac1"], shown["paper_gwet_ac1"])],
        "95% CI": [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(shown["ci_low"],
                                                            shown["ci_high"])],
        "agrees at 2 decimals": [agrees(o, p) for o, p in zip(shown["gwet_ac1"],
                                                              shown["paper_gwet_ac1"])],
    })
    write("user_study_ac1", md(ac1))
    rates = pd.DataFrame({
        "error category": shown["display_name"],
        "paper": shown["paper_error_rate"].map(lambda v: f"{100 * v:.0f}%"),
        "storyeval, share of labels": shown["error_rate"].map(lambda v: f"{100 * v:.1f}%"),
        "difference": (shown["error_rate"] - shown["paper_error_rate"]).map(
            lambda v: f"{100 * v:+.1f} pt"),
        "storyeval, majority of 3 workers": shown["error_rate_majority"].map(
            lambda v: f"{100 * v:.0f}%"),
    })
    write("user_study_rates", md(rates))
    other = tab[tab["paper_gwet_ac1"].isna()]
    write("user_study_other", md(pd.DataFrame({
        "error category": other["display_name"], "label column": other["label_column"],
        "share of labels": other["error_rate"], "AC1": other["gwet_ac1"],
        "percent agreement": other["percent_agreement"]})))


def annotator_agreement(write) -> None:
    from storyeval.agreement.coefficients import annotator_icc
    from storyeval.data import load_hanna

    hanna = load_hanna()
    frames = []
    for label, exclude in (("all 1,056 stories", ()), ("960 generated stories", ("Human",))):
        icc = annotator_icc(hanna, exclude_systems=exclude)
        frames.append(pd.DataFrame({
            "stories": label, "criterion": icc["criterion"], "ICC2k": icc["icc2k"],
            "95% CI": [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(icc["ci_low"],
                                                                icc["ci_high"])],
            "ICC(2,1)": icc["icc21"], "n stories": icc["n_items"], "k": icc["k"]}))
    write("icc_annotators", md(pd.concat(frames, ignore_index=True)))


def out_of_scale(write) -> None:
    """HANNA's LLM ratings below the 1-5 scale: counts per rater, and the paper's LLM rows of
    both correlation figures with the codes kept (as released) and treated as missing."""
    from storyeval.data import load_hanna
    from storyeval.data.hanna import hanna_out_of_scale
    from storyeval.data.scales import out_of_scale_per_rater
    from storyeval.meta.pipeline import meta_evaluate

    counts = hanna_out_of_scale(load_hanna())
    per_rater = out_of_scale_per_rater(counts)
    worst = counts.sort_values("n_below", ascending=False, kind="stable").head(1).iloc[0]
    write("out_of_scale_counts", md(pd.DataFrame({
        "rater (model, Eval-Prompt)": list(per_rater),
        "values below 1 (of 7 x 1,056)": list(per_rater.values()),
    })) + f"\n*{int(counts['n_below'].sum()):,} values in all; minimum "
          f"{counts['min'].min():g}; the most affected column: {worst['measure']} "
          f"({int(worst['n_below'])} of 1,056).*")
    rows = []
    for label, policy in (("as released", "keep"), ("codes missing", "missing")):
        res = meta_evaluate(load_hanna(out_of_scale=policy), measures=",".join(LLM_RATERS),
                            levels=("overall", "system"), reference="none", nan_policy="omit")
        for level in ("overall", "system"):
            grid = res.correlation_grid(level).loc[list(LLM_RATERS)]
            for rater, row in grid.iterrows():
                rows.append({"level": level, "rater": rater, "ratings": label,
                             **row.to_dict(), "Mean": row.mean()})
    table = pd.DataFrame(rows).sort_values(["level", "rater", "ratings"], kind="stable")
    write("out_of_scale_effect", md(table))


def python_blocks(page: str) -> list[str]:
    """The ```python code blocks of ``docs/PAGE``, in order."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)


def tutorial(write) -> None:
    """Bring your own metric: run the tutorial page's own first code block (it scores the human
    stories and writes my_scores.csv), then the page's storyeval meta command on that file."""
    with tempfile.TemporaryDirectory() as tmp:
        here = Path.cwd()
        os.chdir(tmp)
        try:
            exec(compile(python_blocks(TUTORIAL_PAGE)[0], TUTORIAL_PAGE, "exec"), {})  # noqa: S102
        finally:
            os.chdir(here)
        path = Path(tmp) / "my_scores.csv"
        head = "\n".join(path.read_text(encoding="utf-8").split("\n")[:4])
        args = ["meta", "--scores", str(path), "--metrics", "type-token ratio,Beluga-13B 1",
                "--include-human-stories", "--levels", "overall"]
        run = invoke(args, warning_action=None)
        code, out = run.code, run.out
    if code != 0:
        raise RuntimeError(f"storyeval {' '.join(args)} exited with {code}")
    write("tutorial_csv", console("head -4 my_scores.csv", head))
    write("tutorial_meta", console(
        "storyeval meta --scores my_scores.csv --metrics 'type-token ratio,Beluga-13B 1' "
        "--include-human-stories --levels overall", out))


def cli_reference(write) -> None:
    """Every sub-command's options, read from the argparse tree of storyeval.cli."""
    from storyeval.cli import build_parser

    parser = build_parser()
    intro = ("Generated from `storyeval.cli.build_parser()`; every sub-command also answers "
             "`--help`.\n")
    parts = [intro, f"```text\n{_usage(parser)}\n```\n",
             f"{parser.description}\n\n{parser.epilog}\n"]
    sub_action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub_action._choices_actions}
    parts.append(md(pd.DataFrame({"command": [f"[`{n}`](#storyeval-{n})" for n in
                                              sub_action.choices],
                                  "what it does": [_expand(helps.get(n) or "") for n in
                                                   sub_action.choices]})))
    for name, sub in sub_action.choices.items():
        parts.append(f"## storyeval {name}\n\n```text\n{_usage(sub)}\n```\n")
        if sub.description:
            parts.append(f"{_markdown_text(sub.description)}\n")
        for group in sub._action_groups:
            actions = [a for a in group._group_actions if a.help is not argparse.SUPPRESS]
            if not actions:
                continue
            parts.append(f"**{group.title}**\n\n" + md(pd.DataFrame({
                "option": [_option(a) for a in actions],
                "description": [_describe(a) for a in actions]})))
        if sub.epilog:
            parts.append(f"```text\n{sub.epilog.rstrip()}\n```\n")
    write("cli", "\n".join(parts))


def _expand(text: str, action: argparse.Action | None = None) -> str:
    """A help string as argparse prints it (``%(default)s`` filled in, ``%%`` as ``%``)."""
    text = " ".join(text.split())
    if "%" in text:
        params = {**(vars(action) if action is not None else {}), "prog": "storyeval"}
        text = text % params
    return text


def _usage(parser: argparse.ArgumentParser) -> str:
    # A fixed width so that the reference does not depend on the terminal that generated it.
    formatter = argparse.HelpFormatter(parser.prog, width=88)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _option(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) or action.dest
    if action.nargs == 0:
        return f"`{names}`"
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        meta = "{" + ",".join(str(c) for c in action.choices) + "}"
    else:
        meta = action.metavar or action.dest.upper()
        if isinstance(meta, tuple):
            meta = " ".join(meta)
    return f"`{names} {meta}`" if action.option_strings else f"`{meta}`"


def _describe(action: argparse.Action) -> str:
    text = _markdown_text(_expand(action.help or "", action))
    if action.required:
        text += " (required)"
    return text


def _markdown_text(text: str) -> str:
    """Help text as Markdown prose: one paragraph; ``*``, ``_``, ``\\`` and ``<`` outside
    `code spans` escaped, so that ``'rater_*'`` is not read as emphasis (a table cell's ``|`` is
    escaped by the table formatter)."""
    pieces = re.split(r"(`[^`]*`)", " ".join(text.split()))
    return "".join(p if p.startswith("`") else re.sub(r"([*_\\])", r"\\\1", p)
                   .replace("<", "&lt;") for p in pieces)


# ---------------------------------------------------------------------------------- driver
def generate(out_dir: str | Path = DEFAULT_OUT, *, figures: bool = True) -> list[Path]:
    """Write every generated snippet (and, with ``figures``, the PNG heatmaps) to ``out_dir``.

    Returns the written paths. Markdown files are rewritten only when their text changes;
    Markdown (and, with ``figures``, PNG) files of ``out_dir`` that are no longer generated are
    removed.
    """
    from storyeval.meta.pipeline import meta_evaluate
    from storyeval.report.figures import heatmap

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)

    def figure(name: str, grid: pd.DataFrame, **options) -> None:
        if not figures:
            return
        with tempfile.TemporaryDirectory() as tmp:
            png = [p for p in heatmap(grid, Path(tmp) / name, **options) if p.suffix == ".png"]
            shutil.copyfile(png[0], out / f"{name}.png")
        written.append(out / f"{name}.png")

    result = meta_evaluate(measures="paper")
    system_ties(write, result)
    quickstart(write)
    correlations(write, result, figure)
    williams(write, result, figure)
    user_study(write)
    annotator_agreement(write)
    out_of_scale(write)
    tutorial(write)
    cli_reference(write)
    # Remove what an earlier version wrote and this one no longer does (out is ours alone).
    kinds = ("*.md", "*.png") if figures else ("*.md",)
    for stale in sorted(p for kind in kinds for p in out.glob(kind) if p not in written):
        stale.unlink()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output folder (default: {DEFAULT_OUT})")
    parser.add_argument("--no-figures", action="store_true", help="skip the PNG heatmaps")
    args = parser.parse_args(argv)
    paths = generate(args.out, figures=not args.no_figures)
    print(f"wrote {len(paths)} files to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
