"""The judge report's HTML page: the verdict table first, then the rule and the evidence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from storyeval.judge.report import JudgeReport, verdict_summary

__all__ = ["report_html", "write_report"]


def _agreement_wide(report: JudgeReport) -> pd.DataFrame:
    """Agreement as one row per criterion and rater, a "value [low, high]" cell per level."""
    from storyeval.report.present import fixed, interval_text

    a = report.agreement.copy()
    a["cell"] = [f"{fixed(v)} {interval_text(lo, hi)}".rstrip() if pd.notna(v) else ""
                 for v, lo, hi in zip(a["value"], a["ci_low"], a["ci_high"])]
    table = a.pivot_table(index=["criterion", "judge"], columns="level", values="cell",
                          aggfunc="first", sort=False)
    levels = [lev for lev in ("overall", "system", "prompt", "within") if lev in table.columns]
    return table[levels].reset_index()


def report_html(report: JudgeReport, *, files: Sequence[str] = (),
                warnings_seen: Sequence[str] = ()) -> str:
    """The page as one HTML document."""
    from storyeval.report.html_report import render_page, tables_page

    s = report.settings
    facts = [("dataset", str(s["dataset"])), ("stories", str(s["n_stories"])),
             ("systems", str(s["n_systems"])), ("criteria", ", ".join(s["criteria"])),
             ("alt-test", f"epsilon {s['epsilon']} (probability scale), Benjamini-Yekutieli "
                          f"at q = {s['q']}, scoring {s['scoring']}, pass: winning rate >= 0.5"),
             ("agreement", f"{s['coefficient']}, {s['confidence_level']:.0%} intervals: "
                           f"bootstrap over prompts ({s['n_resamples']} resamples) at every "
                           "level (at the within-system level a resampled prompt enters every "
                           "system's correlation)"),
             ("PPI", f"PPI++ with {s['ppi_labels']} random human labels, mean of "
                     f"{s['ppi_repeats']} draws"),
             ("seed", str(s["random_state"]))]
    notes = [
        "Verdict rule: " + s["rule"],
        "The rule's false-pass rate (a judge worse than the annotators by epsilon passing) and "
        "its power are measured by benchmarks/bench_judge_report.py and printed in the "
        "documentation page 'May this judge replace my raters?' (docs/judge-report.md).",
        "sentinel_winning_rate: the alt-test of the system-identity sentinel (a content-blind "
        "score: the mean human score of the same system's other stories). When it passes too, "
        "passing says little about the judge reading the stories.",
        "items_to_pass: the fewest items (of 30, 50, 100, 200, ...) at which a bootstrap of the "
        f"items passes the alt-test with probability {s['power']}; blank when the data's own "
        "number of items does not suffice. Human labels needed to certify the judge: that "
        "many items, each rated by every annotator.",
        "labels_needed (PPI): human labels that, combined with the judge's scores of every "
        "story by PPI++, give the standard error of the PPI budget of human labels alone.",
        "Sentinels compared: system identity (overall, system and prompt levels), length only "
        "(overall, system, within-system), prompt mean (the other systems' human scores of the "
        "same prompt: the content-blind sentinel of the within-system level; overall and "
        "within-system). Position bias is not here: the report reads ratings, not pairwise "
        "verdicts (storyeval pairwise bias measures it).",
    ]
    tables = {
        "Alternative-annotator test, per annotator": report.alt_test[
            ["criterion", "judge", "annotator", "n_items", "judge_advantage",
             "annotator_advantage", "statistic", "pvalue", "pvalue_by", "rejected", "epsilon"]],
        "Agreement with the human criterion (value [interval]) beside the leave-one-out human "
        "baseline and the sentinels": _agreement_wide(report),
        "Comparison with the sentinels (delta = judge - sentinel; calibrated default tests at "
        "the overall, system and within-system levels, the sentinel-aware bootstrap t at the "
        "prompt level)":
            report.sentinel_tests,
        "Biases (leniency: offset and MAE; length: residual correlation)": report.biases,
        "Human labels the judge is worth (PPI++)": report.ppi,
    }
    page = tables_page("May this judge replace the annotators?", facts, tables, notes=notes,
                       files=files, answer=verdict_summary(report),
                       answer_caption="Verdict per criterion and judge (rule below)")
    page.warnings = list(dict.fromkeys(warnings_seen))
    return render_page(page)


def write_report(report: JudgeReport, out: str | Path, *, overwrite: bool = False,
                 warnings_seen: Sequence[str] = ()) -> list[Path]:
    """Write ``judge_report.csv`` (every table, long, full precision) and ``index.html`` (the
    page, opening with the verdict table) into the folder ``out``, published together
    (`storyeval._atomic.OutputFolder`); returns the paths."""
    from storyeval._atomic import OutputFolder

    with OutputFolder(out, overwrite=overwrite, command="judge-report") as folder:
        folder.write_text("judge_report.csv", report.to_frame().to_csv(index=False))
        folder.write_text("index.html", report_html(report, files=["judge_report.csv"],
                                                    warnings_seen=warnings_seen))
    return [Path(out) / name for name in ("judge_report.csv", "index.html")]
