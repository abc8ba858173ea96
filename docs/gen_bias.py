"""Generate the numbers and tables of the page "Judge biases" (docs/bias.md).

Usage (from the repository root)::

    python docs/gen_bias.py               # writes docs/generated/bias/
    python docs/gen_bias.py --out DIR     # somewhere else (the stale check in tests/)

Every snippet comes from running storyeval: ``storyeval bias``, ``storyeval pairwise bias`` and
``storyeval meta --sentinels`` in-process on the embedded HANNA data, the same commands on a
simulated rating run and simulated verdicts with planted biases (`storyeval.bias.simulate`,
fixed seeds), and the level and coverage of every test measured by
``benchmarks/bench_bias.py`` (read from ``benchmarks/bench_bias.json``). The Markdown holds no
dates, paths or timings; ``tests/test_docs_bias.py`` regenerates it and compares.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from gen_common import remove_stale, run_cli, shell, snippet_writer

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
DEFAULT_OUT = DOCS / "generated" / "bias"
BENCH = ROOT / "benchmarks" / "bench_bias.json"
#: The six LLMs whose stories HANNA ships (hanna_llm_stories.csv), as in the paper's tables.
LLM_SYSTEMS = ("Llama-7b", "Mistral-7b", "Beluga-13b", "OrcaPlatypus-13b", "LlamaInstruct-30b",
               "Platypus2-70b")


def markdown(argv: Sequence[str], cwd: Path | None = None) -> str:
    """The command, then its Markdown output (tables render on the page)."""
    output = run_cli(argv, cwd=cwd, warning_action="default")  # its warnings as in a shell
    return f"```text\n$ {shell(argv)}\n```\n\n{output.rstrip()}\n"


def simulated_rating_run(folder: Path) -> None:
    """Two raters' score files in the format of ``storyeval rate`` (story_id, measure, value):
    Beluga-13B and Mistral-7B rate the stories of HANNA's six LLMs on 96 prompts (Relevance,
    Eval-Prompt 1); Beluga-13B scores its own stories 0.5 higher, Mistral-7B has no
    self-preference (`storyeval.bias.simulate.simulate_ratings`, seed 38)."""
    from storyeval.bias.simulate import simulate_ratings

    names = {f"sys-{i}": s for i, s in enumerate(LLM_SYSTEMS)}
    frame = simulate_ratings(len(LLM_SYSTEMS), 96, raters={"Beluga-13B": 2, "Mistral-7B": 1},
                             self_preference={"Beluga-13B": 0.5}, seed=38)
    for model in ("Beluga-13B", "Mistral-7B"):
        scores = frame[[model]].reset_index()
        scores["story_id"] = [f"{names[s]}/{p}" for s, p in zip(scores["system"],
                                                                 scores["prompt_id"])]
        out = pd.DataFrame({"story_id": scores["story_id"], "measure": f"{model} RE 1",
                            "value": scores[model].round(6)})
        (folder / model.split("-")[0].lower()).mkdir(exist_ok=True)
        out.to_csv(folder / model.split("-")[0].lower() / "scores.csv", index=False)


def self_preference_demo() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        simulated_rating_run(folder)
        return markdown(["bias", "--raters-only", "--scores", "beluga/scores.csv", "--scores",
                         "mistral/scores.csv", "--own", "Beluga-13B=Beluga-13b", "--own",
                         "Mistral-7B=Mistral-7b", "--reference", "other", "--format", "md"],
                        cwd=folder)


def verdict_demo() -> str:
    """`storyeval pairwise bias` on simulated verdicts: position bias 0.5 (logit), length bias
    0.5 per sd of length, self-preference 0.6 of the judge for sys-4."""
    from storyeval.bias.simulate import simulate_verdicts

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        jv, hv, lengths = simulate_verdicts(8, 40, self_preference=0.6, length_bias=0.5,
                                            position_bias=0.5, seed=38)
        jv.to_csv(folder / "judge.csv", index=False)
        hv.to_csv(folder / "human.csv", index=False)
        lengths.rename("length").rename_axis("story_id").reset_index().to_csv(
            folder / "lengths.csv", index=False)
        return markdown(["pairwise", "bias", "judge.csv", "--reference", "human.csv", "--own",
                         "Judge-A=sys-4", "--lengths", "lengths.csv", "--format", "md"],
                        cwd=folder)


def hanna_length_pairs() -> str:
    """P(prefer longer) of Beluga-13B and Mistral-7B (Eval-Prompt 1) on HANNA's within-prompt
    pairs of stories, their ratings turned into verdicts, against the humans'."""
    from storyeval.bias import length_preference
    from storyeval.data import load_hanna
    from storyeval.pairwise import verdicts_from_scores
    from storyeval.report.tables import format_table

    wide = load_hanna(include_human_stories=False).wide()
    lengths = pd.Series(wide["Text length ¤§"].to_numpy(),
                        index=[f"{s}/{p}" for s, p in wide.index])
    rows = []
    for crit, code in (("Relevance", "RE"), ("Coherence", "CH"), ("Engagement", "EG")):
        human = verdicts_from_scores(wide, crit, judge="humans")
        for model in ("Beluga-13B", "Mistral-7B"):
            judge = verdicts_from_scores(wide, f"{model} {code} 1", judge=f"{model} 1",
                                         dimension=crit)
            rows.append(length_preference(judge, lengths, reference=human))
    table = pd.concat(rows, ignore_index=True)
    table = table[["judge", "dimension", "estimand", "estimate", "ci_low", "ci_high", "pvalue",
                   "n", "n_clusters"]]
    return format_table(table, "md", digits=3)


def sentinel_prompt_level() -> str:
    """Beluga-13B (Eval-Prompt 1) against the system-identity sentinel at the prompt level on
    HANNA (`storyeval.bias.compare_with_system_sentinel`, seed 0), and the coverage of its
    interval and of the paired t of `storyeval.compare.compare_prompt_level` on simulated
    ratings, measured by benchmarks/bench_bias.py."""
    from storyeval.bias import compare_with_system_sentinel
    from storyeval.data import load_hanna
    from storyeval.report.tables import format_table

    wide = load_hanna(include_human_stories=False).wide()
    codes = {"Coherence": "CH", "Engagement": "EG", "Surprise": "SU"}
    table = compare_with_system_sentinel(wide, list(codes),
                                         [f"Beluga-13B {c} 1" for c in codes.values()])
    table = table[["criterion", "measure", "measure_corr", "sentinel_corr", "delta", "ci_low",
                   "ci_high", "p", "n_prompts", "n_boot", "seed"]]
    bench = json.loads(BENCH.read_text(encoding="utf-8"))
    lines = []
    for method, label in (("compare_with_system_sentinel", "this interval"),
                          ("compare_prompt_level", "the paired t over prompts")):
        rows = [r for r in bench["sentinel_prompt_level"] if r["method"] == method]
        cells = ", ".join(f"{r['coverage']:.3f} at {r['systems']} systems x {r['prompts']} "
                          f"prompts" for r in rows)
        lines.append(f"{label}: {cells}")
    reps = bench["sentinel_prompt_level"][0]["reps"]
    return (format_table(table, "md", digits=3) + "\n"
            + f"Coverage of the 95% interval of a rater minus the system-identity sentinel on "
              f"simulated ratings ({reps:,} data sets per cell): " + "; ".join(lines) + ".\n")


def levels_table() -> str:
    """Level and coverage of every test, from benchmarks/bench_bias.json."""
    from storyeval.report.tables import format_table

    bench = json.loads(BENCH.read_text(encoding="utf-8"))
    frame = pd.DataFrame(bench["results"])
    frame["cell"] = frame["systems"].astype(str) + " x " + frame["prompts"].astype(str)
    level = frame.pivot_table(index=["data", "estimand"], columns="cell", values="level",
                              sort=False)
    coverage = frame.pivot_table(index=["data", "estimand"], columns="cell", values="coverage",
                                 sort=False)
    cells = [f"{s} x {p}" for s, p in bench["cells"]]
    out = []
    for (data, estimand), row in coverage.reindex(columns=cells).iterrows():
        entry = {"data": data, "estimand": estimand}
        for cell in cells:
            lv = level.reindex(columns=cells).loc[(data, estimand), cell] \
                if (data, estimand) in level.index else float("nan")
            entry[cell] = (f"{lv:.3f} / {row[cell]:.3f}" if lv == lv else f"- / {row[cell]:.3f}")
        out.append(entry)
    tested = frame[frame["level"].notna()]
    lo, hi = tested["level"].min(), tested["level"].max()
    inside = bool(((tested["level"] >= 0.035) & (tested["level"] <= 0.065)).all())
    covered = bool((frame["coverage"] >= 0.93).all())
    reps = int(bench["reps"])
    mc_level, mc_cov = (0.05 * 0.95 / reps) ** 0.5, (0.95 * 0.05 / reps) ** 0.5
    summary = (f"{reps:,} simulated data sets per cell and scenario; levels from "
               f"{lo:.3f} to {hi:.3f} ({'all' if inside else 'NOT all'} within [0.035, 0.065]); "
               f"coverage from {frame['coverage'].min():.3f} to {frame['coverage'].max():.3f} "
               f"({'all' if covered else 'NOT all'} at least 0.93). Monte Carlo standard "
               f"error of a level of 0.05: {mc_level:.3f}; of a coverage of 0.95: "
               f"{mc_cov:.3f}.")
    return ("Each cell: level (share of two-sided tests rejecting a true null at 0.05) / "
            "coverage (share of 95% intervals holding the true value with planted biases); "
            "columns: systems x prompts.\n\n"
            + format_table(pd.DataFrame(out), "md") + "\n" + summary + "\n")


def generate(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    write = snippet_writer(out, written)

    write("self_preference", self_preference_demo())
    write("ratings_hanna", markdown(["bias", "--metrics", "Beluga-13B 1,Mistral-7B 1",
                                     "--criteria", "RE,CH", "--length", "Text length",
                                     "--format", "md"]))
    write("eval_prompts_hanna", markdown(["bias", "--eval-prompts", "Beluga-13B=3,4",
                                          "--criteria", "RE,CH,SU", "--format", "md"]))
    write("length_pairs_hanna", hanna_length_pairs())
    write("verdicts_simulated", verdict_demo())
    write("sentinels_hanna", markdown(["meta", "--metrics", "Beluga-13B 1", "--criteria",
                                       "CH,EG,SU", "--levels", "overall,system,prompt",
                                       "--sentinels", "--reference", "none", "--format", "md"]))
    write("sentinel_prompt_level", sentinel_prompt_level())
    write("levels", levels_table())
    remove_stale(out, written)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    os.environ.setdefault("STORYEVAL_NO_PROGRESS", "1")
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
