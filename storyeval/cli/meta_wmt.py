"""The WMT-style options of ``storyeval meta``: ``--coef acc_eq|tau23|spa``, ``--clusters``,
``--length``, ``--mteval`` (input) and ``--mteval-out`` (output); the analyses live in
`storyeval.meta.wmt`."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

import pandas as pd

WMT_COEF_CHOICES = ("acc_eq", "tau23", "spa")


def add_options(parser: argparse.ArgumentParser) -> None:
    """The option group (the coefficients join ``--coef``'s choices in `storyeval.cli.meta`)."""
    group = parser.add_argument_group(
        "WMT meta-metrics and length (docs: WMT meta-metrics)")
    group.add_argument("--clusters", action="store_true",
                       help="rank the measures into significance clusters per criterion and "
                            "level (WMT procedure) from the unadjusted p-values of this run's "
                            "comparison table (all pairs are compared; oriented by "
                            "--lower-is-better; tied correlations ranked as one block; an "
                            "undefined correlation is not ranked) and average the ranks over "
                            "criteria; with --out: clusters.csv, clusters_average.{csv,md} and "
                            "clusters_{level}.png")
    group.add_argument("--cluster-alpha", type=float, default=0.05, metavar="X",
                       help="significance level of the clusters (default: 0.05)")
    group.add_argument("--criterion-weights", metavar="MAP",
                       help="with --clusters: weights of the criteria in the average rank, "
                            "CRITERION=W,... (default: equal; criteria left out weigh 0)")
    group.add_argument("--length", metavar="MEASURE",
                       help="length diagnostics against this length measure (e.g. 'Text "
                            "length'): P(prefer longer) of humans and measures on the "
                            "within-prompt pairs, length-balanced accuracy, correlations "
                            "partialled for length (with --out: length_pairs.csv, "
                            "length_partial.csv)")
    group.add_argument("--mteval", metavar="DIR", type=_path,
                       help="read the scores from an mt-metrics-eval test-set folder "
                            "(human-scores/, metric-scores/; the seg files of --mteval-lp) "
                            "instead of --data")
    group.add_argument("--mteval-lp", metavar="LP", default="en-en",
                       help="language pair of the mt-metrics-eval files (default: en-en)")
    group.add_argument("--mteval-out", metavar="DIR", type=_path,
                       help="also write the selected criteria and measures as mt-metrics-eval "
                            "score files (seg and sys) under DIR")


def _path(text: str):
    from pathlib import Path

    return Path(text)


def uses_wmt_coef(args: argparse.Namespace) -> bool:
    return args.coef in WMT_COEF_CHOICES


def check(args: argparse.Namespace) -> None:
    """Option combinations refused before any computation."""
    from storyeval.exceptions import InputError

    if uses_wmt_coef(args) and (args.clusters or args.length):
        raise InputError(f"--clusters and --length rank or partial a correlation coefficient; "
                         f"use them with --coef kendall_b, kendall_c, pearson or spearman, not "
                         f"{args.coef}")
    if args.mteval is not None and (args.data is not None or args.scores):
        raise InputError("--mteval replaces --data and --scores; give one or the other")
    # --cluster-alpha's range is checked with every numeric option (storyeval.cli.ranges)
    if args.clusters and args.reference not in ("auto", "all"):
        raise InputError(f"--clusters ranks every pair of measures: it needs --reference all "
                         f"(or auto), not {args.reference!r}")
    if args.criterion_weights is not None:
        if not args.clusters:
            raise InputError("--criterion-weights needs --clusters")
        criterion_weights(args.criterion_weights)


def criterion_weights(text: str | None) -> dict[str, float] | None:
    """``RE=2,CH=1`` as {criterion: weight}; InputError naming a malformed entry."""
    from storyeval.exceptions import InputError

    if text is None:
        return None
    weights = {}
    for part in (t.strip() for t in text.split(",")):
        name, sep, value = part.partition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = float("nan")
        if not sep or not name.strip() or not weight >= 0:
            raise InputError(f"--criterion-weights: expected CRITERION=WEIGHT (a number >= 0), "
                             f"got {part!r}")
        weights[name.strip()] = weight
    return weights


def load_dataset(args: argparse.Namespace, default: Callable):
    """The dataset of ``--mteval``, else ``default(args, criteria=args.criteria)``."""
    if args.mteval is None:
        return default(args, criteria=args.criteria)
    from storyeval.data.mteval import read_mteval

    return read_mteval(args.mteval, args.mteval_lp)


def selection(args: argparse.Namespace, dataset):
    from storyeval.meta.wmt import select

    return select(dataset, measures=args.metrics, criteria=args.criteria,
                  include_human_stories=args.include_human_stories,
                  systems=None if args.systems is None else
                  [s.strip() for s in args.systems.split(",") if s.strip()],
                  llm_criteria=args.llm_criteria)


def _levels(args: argparse.Namespace) -> list[str]:
    return [t.strip() for t in args.levels.split(",") if t.strip()]


def run_coef(args: argparse.Namespace, dataset) -> int:
    """``--coef acc_eq|tau23|spa``: the table on standard output, files with --out."""
    from storyeval.meta.wmt import COEF_DESCRIPTIONS, wmt_table
    from storyeval.report.tables import format_table

    sel = selection(args, dataset)
    levels = ["system"] if args.coef == "spa" else _levels(args)
    table = wmt_table(sel, args.coef, levels=levels, ci=args.ci == "bootstrap",
                      n_resamples=args.resamples, confidence_level=args.confidence_level,
                      n_permutations=args.test_permutations, random_state=args.seed,
                      tie_rtol=args.tie_rtol)
    note = _coef_note(args, sel)
    if args.format in ("table", "md", "latex"):
        from storyeval.report.present import current_width, wrap_lines

        comment = {"table": "# ", "md": "> ", "latex": "% "}[args.format]
        width = current_width() if args.format == "table" else None
        sys.stdout.write("".join(f"{line}\n" for line in wrap_lines(
            [COEF_DESCRIPTIONS[args.coef], note], width, prefix=comment)))
    sys.stdout.write(format_table(_shown(table, args.format), args.format, digits=args.digits))
    if args.out is not None:
        settings = {"command": "meta", "coefficient": args.coef,
                    "description": COEF_DESCRIPTIONS[args.coef], "note": note,
                    "levels": levels, "criteria": sel.criteria,
                    "n_stories": len(sel.wide), "seed": args.seed}

        def files(folder, _formats) -> None:
            folder.write_text(f"{args.coef}.csv", format_table(table, "csv"))
            folder.write_text(f"{args.coef}.md", format_table(table, "md", digits=args.digits))
            folder.write_text("settings.json", json.dumps(settings, ensure_ascii=False,
                                                          indent=1))

        _write_folder(args, files)
    _write_mteval(args, sel)
    return 0


def _shown(table: pd.DataFrame, fmt: str) -> pd.DataFrame:
    """The table as printed: full precision for csv/json; for reading, the grouping column
    (explained in the note above the table) left out and epsilon in 3 significant digits
    (it is often far below the printed decimals)."""
    if fmt in ("csv", "json") or "epsilon" not in table.columns:
        return table
    shown = table.drop(columns=["grouping"])
    shown["epsilon"] = [f"{e:.3g}" for e in shown["epsilon"]]
    return shown


def _coef_note(args: argparse.Namespace, sel) -> str:
    if args.coef == "spa":
        text = (f"system level; p-values from {args.test_permutations} permutations of "
                f"prompts (seed {args.seed}), one-sided, humans and measure on the same swaps")
        if args.ci == "bootstrap":
            text += (f"; {args.confidence_level:g} percentile intervals from {args.resamples} "
                     "prompt resamples, the p-values recomputed in each")
        return text
    text = ("levels: overall = all story pairs pooled (WMT 'none'), prompt = pairs within a "
            "prompt averaged over prompts (WMT 'item'), system = system means; epsilon found "
            "exactly over every pair difference")
    if args.ci == "bootstrap":
        text += (f"; {args.confidence_level:g} percentile intervals from {args.resamples} "
                 f"prompt resamples (seed {args.seed}), epsilon re-optimised in each")
    return text


def _write_folder(args: argparse.Namespace, files: Callable) -> None:
    from storyeval._atomic import OutputFolder
    from storyeval.report.figures import check_figure_formats

    formats = () if args.no_figures else check_figure_formats(args.figure_format)
    with OutputFolder(args.out, overwrite=args.overwrite, command="meta") as folder:
        files(folder, formats)
    print(f"wrote {len(folder.published)} files to {args.out}", file=sys.stderr)


def _write_mteval(args: argparse.Namespace, sel) -> None:
    if args.mteval_out is None:
        return
    from storyeval.data.mteval import write_mteval

    measures = list(dict.fromkeys(sel.pairs["measure"]))
    paths = write_mteval(sel.wide, args.mteval_out, args.mteval_lp, criteria=sel.criteria,
                         measures=measures)
    print(f"wrote {len(paths)} mt-metrics-eval files to {args.mteval_out}", file=sys.stderr)


def extras(args: argparse.Namespace, dataset, result=None,
           ) -> tuple[list[tuple[str, pd.DataFrame]], Callable | None,
                      list[tuple[str, pd.DataFrame]]]:
    """The ``--clusters`` / ``--length`` / ``--mteval-out`` work beside the correlation tables:
    (titled tables for standard output, a writer of their files for ``--out``, titled tables
    for index.html: those of standard output and every measure's cluster). The clusters read
    the p-values of ``result``'s comparison table (the same run)."""
    if not (args.clusters or args.length or args.mteval_out is not None):
        return [], None, []
    from storyeval.meta.wmt import cluster_tables, length_tables

    sel = selection(args, dataset)
    _write_mteval(args, sel)
    shown: list[tuple[str, pd.DataFrame]] = []
    tables: dict[str, pd.DataFrame] = {}
    clusters = None
    if args.clusters:
        clusters, average = cluster_tables(result, alpha=args.cluster_alpha,
                                           weights=_resolved_weights(args, sel))
        tables["clusters"] = clusters
        tables["clusters_average"] = average
        shown.append((cluster_title(clusters, args.cluster_alpha,
                                    adjustment=p_values_text(result)), average))
    if args.length:
        pairs, partial = length_tables(sel, args.length, levels=_levels(args),
                                       method=args.coef, tie_rtol=args.tie_rtol)
        tables["length_pairs"] = pairs
        tables["length_partial"] = partial
        shown.append((("Length: P(prefer longer) on within-prompt pairs, raw and "
                      "length-balanced accuracy"), pairs))
        shown.append(("Length: correlations partialled for length", partial))

    def files(folder, formats) -> None:
        from storyeval.report.figures import cluster_figure
        from storyeval.report.tables import format_table

        for name, table in tables.items():
            folder.write_text(f"{name}.csv", format_table(table, "csv"))
        if "clusters_average" in tables:
            folder.write_text("clusters_average.md",
                              format_table(tables["clusters_average"], "md", digits=args.digits))
        if clusters is not None and formats:
            average = tables["clusters_average"]
            for level in average["level"].unique():
                for path in cluster_figure(average, level, folder.staging / f"clusters_{level}",
                                           formats=formats):
                    folder.file(path.name)

    page = list(shown)
    if clusters is not None:
        columns = ["display_name", "criterion", "level", "value", "oriented", "rank",
                   "cluster_size", "p_vs_cluster_top", "p_vs_next", "better_than_next",
                   "pairs_near_alpha", "reason"]
        page.insert(1, (f"Significance clusters of every measure (clusters.csv; p-values: "
                        f"column {clusters['p_column'].iloc[0]} of the comparison table, "
                        f"alpha {args.cluster_alpha:g})",
                        clusters[[c for c in columns if c in clusters]]))
    return shown, files if tables else None, page


def p_values_text(result) -> str:
    """Which p-values a run's decisions read (clusters, answer): "BH-adjusted (family
    'criterion')" or "unadjusted (--adjust none)"."""
    chosen = result.settings.get("comparisons", {})
    method = str(chosen.get("adjustment", "bh"))
    if method == "none":
        return "unadjusted (--adjust none)"
    return f"{method.upper()}-adjusted (family {chosen.get('family', '?')!r})"


def cluster_title(clusters: pd.DataFrame, alpha: float, *,
                  adjustment: str = "BH-adjusted") -> str:
    """The heading of the average-rank table: which tests' p-values made the clusters."""
    from storyeval.compare.clusters import CLUSTER_TIE_RULE

    tests = ", ".join(f"{lev}: {t}" for lev, t in
                      clusters.drop_duplicates("level").set_index("level")["test"].items())
    undefined = int(clusters["rank"].isna().sum())
    text = (f"Significance clusters: average rank over criteria (1 = top group; {adjustment} "
            f"p-values of this run's comparison table ({tests}; column "
            f"{clusters['p_column'].iloc[0]}, as the matrices and the answer of index.html) at "
            f"alpha {alpha:g}; "
            f"{CLUSTER_TIE_RULE.format(rtol=1e-12)}")
    if undefined:
        text += f"; {undefined} measure-criterion entries with an undefined correlation unranked"
    near = clusters.drop_duplicates(["level", "criterion"])["pairs_near_alpha"].sum() \
        if "pairs_near_alpha" in clusters else 0
    if near:
        text += (f"; {int(near)} comparisons within Monte Carlo error of alpha: only their "
                 "decisions may change with --seed")
    return text + ")"


def _resolved_weights(args: argparse.Namespace, sel) -> dict[str, float] | None:
    """--criterion-weights with criterion codes or names resolved to the dataset's names."""
    from storyeval.exceptions import InputError

    given = criterion_weights(args.criterion_weights)
    if given is None:
        return None
    out = {}
    for name, weight in given.items():
        try:
            resolved = sel.dataset.resolve_criterion(name)
        except InputError as exc:
            raise InputError(f"--criterion-weights: {exc}") from exc
        if resolved not in sel.criteria:
            raise InputError(f"--criterion-weights: criterion {resolved!r} is not selected "
                             "(--criteria)")
        out[resolved] = weight
    return out


def render_extras(shown: list[tuple[str, pd.DataFrame]], fmt: str, digits: int) -> str:
    """The extra tables for standard output (table/md/latex; csv and json go to --out)."""
    from storyeval.report.tables import format_table

    if fmt in ("csv", "json"):
        if shown:
            print("note: with --format csv/json, the cluster and length tables are written "
                  "with --out only", file=sys.stderr)
        return ""
    from storyeval.report.present import wrap_text

    return "".join(f"\n{wrap_text(title) if fmt == 'table' else title}\n\n"
                   f"{format_table(table, fmt, digits=digits)}" for title, table in shown)
