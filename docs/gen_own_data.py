"""Generate the outputs shown on the "Your own data" tutorial (docs/own-data.md).

Usage (from the repository root)::

    python docs/gen_own_data.py              # writes docs/generated/own_data/
    python docs/gen_own_data.py --out DIR    # somewhere else (the stale check in tests/)

The synthetic dataset of ``docs/own_data/make_data.py`` is written to a temporary folder, and
the page's commands run in-process (``storyeval.cli.main``) with that folder as the working
directory, so the paths they print are the short ones of the page. The page's Python blocks run
there too (the code shown is the code run). Each output becomes one Markdown snippet,
``docs/generated/own_data/NAME.md``, included with ``--8<-- "generated/own_data/NAME.md"``.

A command that fails stops the generation with its error output: the page never shows a
command without its real output. The snippets hold no paths, dates or timings;
``tests/test_docs_own_data.py`` regenerates them and compares them with the committed ones.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
from gen_common import CommandFailed, invoke, remove_stale, snippet_writer, working_directory
from gen_common import shell as common_shell

DOCS = Path(__file__).resolve().parent
DEFAULT_OUT = DOCS / "generated" / "own_data"
MAKE_DATA = DOCS / "own_data" / "make_data.py"

# The page's commands (run in the data folder). Names are the snippet names.
DATA = ["--data", "ratings.csv", "--scores", "metrics.csv", "--scores", "mine.csv"]
WIDE = ["--data", "wide.csv", "--id", "system=generator,prompt_id=item",
        "--annotators", "Fluency=flu_*", "--annotators", "Plot twist=twist_*"]
COMMANDS: dict[str, list[str]] = {
    "describe": ["describe", *DATA],
    "scores_duplicate": ["describe", *DATA, "--scores", "mine-rerun.csv"],
    "describe_wide": ["describe", *WIDE],
    "meta": ["meta", *DATA],
    "meta_family": ["meta", *DATA, "--levels", "overall", "--family", "paper"],
    "meta_bootstrap": ["meta", *DATA, "--ci", "bootstrap", "--resamples", "1000",
                       "--reference", "none"],
    "agreement": ["agreement", "--data", "ratings.csv"],
    "pairwise": ["pairwise", "pointwise", *DATA],
    "pairwise_preferences": ["pairwise", "pointwise", *DATA, "--preferences", "prefs.csv"],
}
#: Commands whose failure is the point of the example (exit code 2, message on stderr).
EXPECTED_ERRORS = {"scores_duplicate"}

#: A second run of my-metric on the first 40 stories: the duplicate-measure example.
RERUN_CODE = """\
import pandas as pd

mine = pd.read_csv("mine.csv")
mine.head(40).to_csv("mine-rerun.csv", index=False)   # the same (story, measure) again
"""

#: Pairwise preferences for the --preferences example: each worker's implicit preferences
#: between stories they rated (higher mean over the two criteria wins), on disjoint random
#: pairs of the worker's stories (any prompts).
PREFERENCES_CODE = """\
import numpy as np
import pandas as pd

ratings = pd.read_csv("ratings.csv")
ratings["story_id"] = ratings["system"] + "/" + ratings["prompt_id"]
per_worker = ratings.groupby(["annotator", "story_id"])["value"].mean().reset_index()
rng = np.random.default_rng(0)
rows = []
for worker, own in per_worker.groupby("annotator"):
    order = rng.permutation(len(own))
    for a, b in zip(own.iloc[order[0::2]].itertuples(), own.iloc[order[1::2]].itertuples()):
        winner = "a" if a.value > b.value else "b" if a.value < b.value else "tie"
        rows.append((a.story_id, b.story_id, winner, worker))
pd.DataFrame(rows, columns=["story_a", "story_b", "winner", "annotator"]).to_csv(
    "prefs.csv", index=False)
"""

#: The Python section of the page.
PYTHON_CODE = """\
from storyeval.data import describe_dataset, read_dataset
from storyeval.meta import meta_evaluate

dataset = read_dataset("ratings.csv", scores=["metrics.csv", "mine.csv"])
# the wide table: read_dataset("wide.csv", id="system=generator,prompt_id=item",
#                              annotators=["Fluency=flu_*", "Plot twist=twist_*"])
summary = describe_dataset(dataset)
print(summary["criteria"])

result = meta_evaluate(dataset, levels="overall")   # Kendall tau-b, all pairs, BH
print(result.correlation_grid("overall").round(3))
print(result.baseline[["criterion", "variant", "value", "n_annotators"]].round(3))
tests = result.comparisons[["criterion", "measure_a", "measure_b", "test", "delta",
                            "ci_low", "ci_high", "p_adjusted", "hypothesis"]]
print(tests.round(3).to_string(index=False))
print(result.comparison_matrix("overall", "Plot twist").round(3))
"""

WRAP = 92  # shell lines longer than this are continued with a backslash


# ---------------------------------------------------------------------------------- helpers
def shell(argv: Sequence[str]) -> str:
    """``storyeval ARGV`` as the page shows it, continued before an option past `WRAP`."""
    return common_shell(argv, wrap=WRAP)


def run_cli(argv: Sequence[str], *, expect_error: bool = False) -> tuple[str, str]:
    """Run ``storyeval ARGV`` in-process (`gen_common.invoke`); return (stdout, stderr).

    Raises `CommandFailed` with the command's error output when it fails (or, with
    ``expect_error``, when it succeeds), including argparse errors such as an option the
    installed storyeval does not have yet.
    """
    run = invoke(argv)  # warnings as in a fresh process (each shown once)
    failed = run.code != 0
    if failed != expect_error:
        what = (f"failed with {run.code}" if failed else "succeeded but the page shows its "
                "error")
        raise CommandFailed(f"`{shell(argv)}` {what}:\n{run.err[-3000:]}")
    return run.out, run.err


def run_python(code: str, name: str) -> str:
    """Execute a page's Python block in the current folder; return what it printed."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code, name, "exec"), {"__name__": "__own_data__"})  # noqa: S102
    return buffer.getvalue()


def block(text: str, lang: str = "text") -> str:
    return f"```{lang}\n{text.rstrip()}\n```\n"


def command_snippet(argv: Sequence[str], output: str) -> str:
    return block(shell(argv), "bash") + "\n" + block(output)


def williams_excerpt(output: str) -> str:
    """The comparison-test header lines and the comparison matrices of a meta output."""
    lines = output.splitlines()
    keep, kept = [], False
    for line in lines:
        if line.startswith("#   "):  # the continuation of a wrapped header line
            if kept:
                keep.append(line)
            continue
        kept = (line.startswith(("# comparison tests", "# Williams tests", "# effect size"))
                or (line.startswith("# ") and ": test '" in line))
        if kept:
            keep.append(line)
    start = next(i for i, line in enumerate(lines)
                 if not line.startswith("#") and "-adjusted" in line and " p (" in line)
    return "\n".join([*keep, "...", *lines[start:]])


def load_make_data():
    spec = importlib.util.spec_from_file_location("storyeval_docs_make_data", MAKE_DATA)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def head(path: Path, n: int) -> str:
    with path.open(encoding="utf-8") as handle:
        return "".join(next(handle) for _ in range(n)).rstrip("\n")


# ------------------------------------------------------------------------------- snippets
def data_snippet(folder: Path) -> str:
    """The files of the dataset: how they are made, their first lines and sizes."""
    parts = [block("python docs/own_data/make_data.py data && cd data", "bash")]
    lines = {"ratings.csv": 6, "metrics.csv": 3, "mine.csv": 3, "wide.csv": 3}
    text = []
    for name, n in lines.items():
        frame = pd.read_csv(folder / name)
        text.append(f"==> {name} ({len(frame):,} rows) <==\n{head(folder / name, n)}")
    parts.append(block("\n\n".join(text)))
    return "\n".join(parts)


def baseline_modes_table(folder: Path) -> str:
    """The human baseline with annotator slots (default here) and with worker ids."""
    from storyeval.data import read_dataset
    from storyeval.meta import meta_evaluate
    from storyeval.report.tables import format_table

    labels = {"upper_bound": "Human (upper bound)", "leave_one_out": "Human (leave-one-out)"}
    frames = {}
    for mode in ("slots", "ids"):
        dataset = read_dataset(folder / "ratings.csv", scores=[folder / "mine.csv"],
                               annotator_mode=mode)
        base = meta_evaluate(dataset, reference="none").baseline
        frames[mode] = base.set_index(["level", "variant", "criterion"])
    rows = []
    slots, ids = frames["slots"], frames["ids"]
    for (level, variant, crit), row in slots.iterrows():
        other = ids.loc[(level, variant, crit)]
        rows.append({"level": level, "baseline": labels[variant], "criterion": crit,
                     f"slots ({row['n_annotators']} columns)": f"{row['value']:.3f}",
                     f"worker ids ({other['n_annotators']} columns)": f"{other['value']:.3f}"})
    table = pd.DataFrame(rows)
    return format_table(table, "md", digits=3)


def check_wide_equals_long(folder: Path) -> None:
    """The page says that the wide table gives the same numbers as the long files."""
    from storyeval.data import read_dataset
    from storyeval.meta import meta_evaluate

    long = meta_evaluate(read_dataset(folder / "ratings.csv",
                                      scores=[folder / "metrics.csv", folder / "mine.csv"]))
    wide = meta_evaluate(read_dataset(folder / "wide.csv", id="system=generator,prompt_id=item",
                                      annotators=["Fluency=flu_*", "Plot twist=twist_*"]))
    for what in ("correlations", "baseline", "comparisons"):
        a = getattr(long, what).drop(columns=["family"], errors="ignore")
        b = getattr(wide, what).drop(columns=["family"], errors="ignore")
        num = a.select_dtypes("number").columns
        keys = [c for c in a.columns if c not in num and c not in ("measure_a", "measure_b")]
        try:
            pd.testing.assert_frame_equal(a[list(num)].reset_index(drop=True),
                                          b[list(num)].reset_index(drop=True))
            pd.testing.assert_frame_equal(a[keys].reset_index(drop=True),
                                          b[keys].reset_index(drop=True))
        except AssertionError as exc:
            raise CommandFailed(f"the wide table's {what} differ from the long files' (the "
                                f"page says they are identical):\n{exc}") from None


# ---------------------------------------------------------------------------------- driver
def generate(out_dir: str | Path = DEFAULT_OUT) -> list[Path]:
    """Write the snippets of docs/own-data.md to ``out_dir``; return their paths.

    Files are rewritten only when their text changes; Markdown files of ``out_dir`` that are no
    longer generated are removed (the folder is this generator's alone). Raises
    :class:`CommandFailed` naming every command that failed (the snippets of the others are
    still written, and nothing is removed).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    failures: list[str] = []

    with tempfile.TemporaryDirectory() as tmp:
        def no_paths(name: str, text: str) -> None:
            if tmp in text or Path(tmp).resolve().as_posix() in text:
                raise CommandFailed(f"snippet {name} holds the temporary folder's path")

        write = snippet_writer(out, written, check=no_paths)
        folder = Path(tmp) / "data"
        load_make_data().write(folder)
        with working_directory(folder):
            write("data", data_snippet(folder))
            run_python(RERUN_CODE, "mine-rerun")
            write("rerun_code", block(RERUN_CODE, "python"))
            run_python(PREFERENCES_CODE, "preferences")
            write("preferences_code", block(PREFERENCES_CODE, "python") + "\n"
                  + block(f"==> prefs.csv <==\n{head(folder / 'prefs.csv', 4)}"))
            for name, argv in COMMANDS.items():
                try:
                    stdout, stderr = run_cli(argv, expect_error=name in EXPECTED_ERRORS)
                except CommandFailed as exc:
                    failures.append(str(exc))
                    continue
                shown = stderr.strip() if name in EXPECTED_ERRORS else (
                    stdout + (f"\n{stderr.strip()}" if stderr.strip() else ""))
                if name == "meta_family":
                    shown = williams_excerpt(stdout)
                write(name, command_snippet(argv, shown))
            try:
                check_wide_equals_long(folder)
            except CommandFailed as exc:
                failures.append(str(exc))
            write("baseline_modes", baseline_modes_table(folder))
            printed = run_python(PYTHON_CODE, "own-data.md")
            write("python", block(PYTHON_CODE, "python") + "\n" + block(printed))
    if failures:
        raise CommandFailed(f"{len(failures)} of the page's steps failed; their snippets were "
                            "not written:\n\n" + "\n\n".join(failures))
    remove_stale(out, written)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output folder of the snippets (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    os.environ.setdefault("STORYEVAL_NO_PROGRESS", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    start = time.perf_counter()
    try:
        paths = generate(args.out)
    except CommandFailed as exc:
        print(f"gen_own_data: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {len(paths)} files in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
