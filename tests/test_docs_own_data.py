"""The "Your own data" tutorial (docs/own-data.md): its generated snippets are current, the page
includes all of them, and what its prose says about them holds.

``docs/gen_own_data.py`` writes the synthetic dataset of ``docs/own_data/make_data.py`` to a
temporary folder and runs the page's commands and Python blocks there. The stale check
regenerates the snippets into a temporary folder and compares them with the committed ones
(``tests/_docs_compare.py``): text and layout exactly, and numbers exactly too except that a
decimal may differ by one unit of its last printed digit (float64 arithmetic in numpy and scipy
can differ in the last bits between hosts and BLAS builds, which can move a value sitting on a
rounding edge by one printed unit; any real change of a statistic moves it by more).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _docs_compare import describe, read_markdown, stale_files
from _docs_scripts import load_docs_script

from storyeval.compare.procedures import MIDP_INTERVAL, TEST_PERMUTATIONS

pytestmark = pytest.mark.slow  # the generation runs about ten storyeval commands (5-15 s)

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGE = DOCS / "own-data.md"
OWN = DOCS / "generated" / "own_data"
SNIPPET = re.compile(r'^--8<-- "generated/own_data/([^"]+\.md)"\s*$', re.MULTILINE)


@pytest.fixture(scope="module")
def gen():
    return load_docs_script("gen_own_data")


@pytest.fixture(scope="module")
def regenerated(gen, tmp_path_factory):
    out = tmp_path_factory.mktemp("own_data")
    gen.generate(out)
    return out


# ------------------------------------------------------------------------------- helpers
def _snippet(name: str) -> str:
    return (OWN / f"{name}.md").read_text(encoding="utf-8")


def _output(name: str) -> list[str]:
    """The lines of the (last) ```text block of a snippet: the command's output."""
    blocks = re.findall(r"```text\n(.*?)\n```", _snippet(name), re.DOTALL)
    assert blocks, name
    return blocks[-1].splitlines()


def _table(lines: list[str], title: str) -> dict[str, dict[str, str]]:
    """The text table whose title (or header) line starts with ``title``: {row: {column: cell}}.
    Cells are cut at the columns of the dashes line, so blank cells stay blank."""
    def joined(i: int) -> tuple[str, int]:  # a title wrapped at 120 columns, and what follows
        text, j = lines[i], i + 1
        while j < len(lines) and lines[j].startswith("  ") and lines[j].strip("- "):
            text, j = f"{text} {lines[j].strip()}", j + 1
        return text, j

    start = next(i for i in range(len(lines)) if joined(i)[0].startswith(title))
    if not re.fullmatch(r"[- ]+", lines[start + 1]):
        start = joined(start)[1]  # a title line (or lines) above the header
    header, dashes = lines[start], lines[start + 1]
    spans = [m.span() for m in re.finditer(r"-+", dashes)]

    def cut(line: str) -> list[str]:
        # right-aligned numbers may start left of their column's dashes: cut between spans
        bounds = [0] + [b for (_, b) in spans[:-1]] + [max(len(line), len(dashes))]
        return [line[lo:hi].strip() for lo, hi in zip(bounds, bounds[1:])]

    names = cut(header)
    rows = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        cells = cut(line)
        rows[cells[0]] = dict(zip(names[1:], cells[1:]))
    return rows


# ----------------------------------------------------------------------------- stale check
def test_snippets_are_current(regenerated):
    report = stale_files(read_markdown(regenerated), read_markdown(OWN), last_digit_units=1,
                         min_decimals=1)
    assert not (report["missing"] or report["extra"] or report["changed"]), (
        "docs/generated/own_data/ is stale; run `python docs/gen_own_data.py`\n"
        + describe(report))


def test_page_includes_every_snippet_and_nothing_else():
    included = set(SNIPPET.findall(PAGE.read_text(encoding="utf-8")))
    committed = {p.name for p in OWN.glob("*.md")}
    assert included == committed


def test_snippets_hold_no_paths_dates_or_timings():
    for path in OWN.glob("*.md"):
        text = path.read_text(encoding="utf-8")
        assert "/tmp" not in text and str(ROOT) not in text, path.name
        assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), path.name
        assert not re.search(r"\d+(\.\d+)? ?(s|ms|seconds)\b", text), path.name


# ------------------------------------------------------------------------- prose vs output
def test_describe_notes_and_missing_cells_are_as_the_page_says():
    text = "\n".join(_output("describe"))
    for cell in ("Fluency [4] (84)", "Fluency [5] (159)", "Plot twist [3] (1)"):
        assert cell in text
    assert "1 empty rating(s)" in text and "annotators: slots" in text
    assert "ignored non-numeric column(s): text" in "\n".join(_output("describe_wide"))
    assert "is in both mine.csv and mine-rerun.csv" in "\n".join(_output("scores_duplicate"))


def test_meta_numbers_quoted_on_the_page():
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    lines = _output("meta")
    overall = _table(lines, "Kendall tau-b with human criteria, overall level")
    system = _table(lines, "Kendall tau-b with human criteria, system level")
    mine, length = overall["my-metric"]["Plot twist"], overall["length"]["Plot twist"]
    p_title = ("BH-adjusted U-statistic z-test p (two-sided, 2 P(Z > |z|), family 'criterion': "
               "2 families of m = 3 tests), all pairs of selected raters, overall level, ")
    d_title = ("difference of correlations with the human criterion, delta = r(h,a) - "
               "r(h,b) [95% CI, per comparison (not adjusted for multiplicity): U-statistic "
               "normal interval], all pairs of selected raters, "
               "overall level, ")
    twist_p, twist_d = _table(lines, p_title + "Plot twist"), _table(lines, d_title + "Plot twist")
    assert mine == "0.346" and length == "0.147"
    assert twist_p["length"]["my-metric"] == "< 0.001"  # as a journal prints it
    assert (f"`length` ({length}) against `my-metric` ({mine}) gives delta = "
            f"{twist_d['length']['my-metric']} and an adjusted p below 0.001") in page
    flu_p, flu_d = _table(lines, p_title + "Fluency"), _table(lines, d_title + "Fluency")
    assert (f"`my-metric` against `overlap-f1` gives delta = "
            f"{flu_d['my-metric']['overlap-f1']} and adjusted p = "
            f"{flu_p['my-metric']['overlap-f1']}") in page
    # "length and overlap-f1 order the six systems on Fluency exactly as the humans do"
    perfect = {m for m in ("length", "my-metric", "overlap-f1")
               if system[m]["Fluency"] == "1.000"}
    assert perfect == {"length", "overlap-f1"}
    # "no adjusted p is below 0.1" at the system level
    for criterion in ("Fluency", "Plot twist"):
        cells = _table(lines, "BH-adjusted paired permutation (mid-p) p "
                              "(two-sided, family 'criterion': 2 families of m = 3 tests), "
                              f"all pairs of selected raters, system level, {criterion}")
        values = [float(v) for row in cells.values() for v in row.values() if v]
        assert len(values) == 3 and min(values) >= 0.1
        interval = MIDP_INTERVAL.format(n=TEST_PERMUTATIONS, alpha=0.05, b=1000, z=1.96)
        deltas = _table(lines, "difference of correlations with the human criterion, delta = "
                               "r(h,a) - r(h,b) [95% CI, per comparison (not adjusted for "
                               f"multiplicity): {interval}], all pairs of selected raters, "
                               f"system level, {criterion}")
        for cell in (v for row in deltas.values() for v in row.values() if v):
            low, high = (float(x) for x in cell.split("[")[1].rstrip("]").split(","))
            assert low <= 0 <= high, cell  # "every interval contains 0"
    # the header lines, their 120-column wraps ("#   ...") joined
    notes = re.sub(r"\n#   ", " ", "\n".join(line for line in lines if line.startswith("#")))
    header = next(line for line in notes.splitlines() if line.startswith("# comparison tests"))
    assert "2 families of m = 3 tests (overall level), 2 families of m = 3 tests (system " \
           "level)" in header
    assert any("test 'ustat'" in line for line in lines if line.startswith("#"))
    family = re.sub(r"\n#   ", " ", "\n".join(_output("meta_family")))
    assert "family 'paper': 3 families of m = 2 tests" in family


def test_bootstrap_leaves_the_ragged_baseline_without_intervals():
    lines = _output("meta_bootstrap")
    overall = _table(lines, "Kendall tau-b with human criteria, overall level")
    for row in ("Human (upper bound)", "Human (leave-one-out)"):
        assert "[" not in overall[row]["Fluency"]
    assert "[" in overall["my-metric"]["Fluency"]
    assert any("no bootstrap interval: not every annotator rated every story" in line
               for line in lines)


def test_baseline_depends_on_the_annotator_reading_most_at_the_system_level():
    rows = [line.split("|")[1:-1] for line in _snippet("baseline_modes").splitlines()[2:]]
    diffs = {}
    for level, _, _, slots, ids in ([c.strip() for c in row] for row in rows):
        diffs.setdefault(level, []).append(abs(float(slots) - float(ids)))
    assert max(diffs["system"]) > max(diffs["overall"]) > 0


def test_agreement_and_pairwise_counts_match_the_page():
    lines = _output("agreement")  # after the answer (issue 53): the annotators table
    answer = _table(lines, "criterion")
    assert set(answer) and all(row["ICC reading"] for row in answer.values())
    agreement = _table(lines[lines.index(next(x for x in lines if "agreement of the human"
                                              in x)):], "criterion")
    assert {row["ICC omitted"] for row in agreement.values()} == {"159"}  # 81 complete stories
    assert all(row["Fleiss kappa"] == "" for row in agreement.values())
    pairwise = _table(_output("pairwise"), "measure")
    for row in pairwise.values():
        assert int(row["n_pairs"]) + int(row["n_human_ties"]) == 600  # 15 pairs x 40 prompts
    prefs = _table(_output("pairwise_preferences"), "measure")
    assert {row["criterion"] for row in prefs.values()} == {"preference"}


def test_python_output_first_williams_row_as_described():
    lines = _output("python")
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["criterion",
                                                                          "measure_a"])
    first = lines[header + 1].split()
    assert first[:4] == ["Fluency", "length", "my-metric", "ustat"]
    assert " ".join(first[-3:]) == "r(h,a) != r(h,b)"


# ------------------------------------------------------------------------ failing loudly
def test_a_failing_command_stops_the_generator_with_its_error(gen, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(gen.CommandFailed, match="unrecognized arguments: --no-such-option"):
        gen.run_cli(["describe", "--no-such-option"])
    with pytest.raises(gen.CommandFailed, match="missing.csv: no such file"):
        gen.run_cli(["describe", "--data", "missing.csv"])
    with pytest.raises(gen.CommandFailed, match="succeeded but the page shows its error"):
        gen.run_cli(["describe"], expect_error=True)


def test_shell_lines_are_quoted_and_wrapped(gen):
    line = gen.shell(["meta", "--annotators", "Plot twist=twist_*", "--scores", "a.csv"])
    assert line == "storyeval meta --annotators 'Plot twist=twist_*' --scores a.csv"
    long = gen.shell(["describe", *["--scores", "some-long-file-name.csv"] * 4])
    assert all(len(part) <= gen.WRAP + 2 for part in long.splitlines())
    assert long.count(" \\\n    --scores") >= 1
