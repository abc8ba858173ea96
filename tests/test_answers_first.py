"""Every command answers first (issue 53, item 2): ``pairwise strengths`` (the top group in
words, a forest plot with round ticks and groups marked, its tests sorted by p), ``bias``
(significant biases per rater, long tables folded), ``agreement`` (coefficients with intervals
and their reading), ``meta`` (an interval and a best-against-next test on every row), the
pointwise answer (no single winner whose interval overlaps the runner-up's) and the notebook
view; the pages read at 400 and 1400 px in Chromium without sideways scrolling.
"""

from __future__ import annotations

import io
import math
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from test_docs import Browser, DevTools, _chromium_binary, _need

from storyeval.cli import main
from storyeval.pairwise.leaderboard import Leaderboard
from storyeval.report.leaderboard import (
    forest_plot_svg,
    leaderboard_answer,
    nice_ticks,
    pairs_by_p,
)


# ------------------------------------------------------------------ leaderboard: the answer
def _board(groups: list[int | None], n_resamples: int = 100) -> Leaderboard:
    items = [f"s{k}" for k in range(len(groups))]
    theta = np.linspace(0.5, -0.5, len(groups))
    table = pd.DataFrame({"rank": range(1, len(items) + 1), "item": items,
                          "log_strength": theta, "ci_low": theta - 0.2, "ci_high": theta + 0.2,
                          "group": pd.array(groups, dtype="Int64"), "dimension": "Overall"})
    pairs = pd.DataFrame([(a, b, 0.1, 0.01 * (i + 1), 0.02 * (i + 1))
                          for i, (a, b) in enumerate((a, b) for k, a in enumerate(items)
                                                     for b in items[k + 1:])],
                         columns=["item_a", "item_b", "difference", "pvalue", "pvalue_bh"])
    return Leaderboard(table, pairs, np.zeros((0, len(items))), items,
                       {"confidence_level": 0.95, "alpha": 0.05, "resample": "prompt",
                        "n_resamples": n_resamples})


def test_a_single_leader_is_named_the_strongest_with_the_test_that_separates_it():
    lines = leaderboard_answer(_board([1, 2, 2]))
    assert lines[0].startswith("s0 is the strongest on Overall: s0 0.500 [0.300, 0.700]")
    assert "s1 (0.000) is the first item significantly weaker than s0 (p = 0.0200" in lines[1]


def test_a_top_group_of_several_is_tied_at_the_top():
    lines = leaderboard_answer(_board([1, 1, 2, 3]))
    assert lines[0].startswith("Tied at the top on Overall (2 items, none significantly weaker "
                               "than s0): s0 0.500 [0.300, 0.700]; s1 0.167 [-0.033, 0.367]")
    assert "s2" in lines[1] and "first item significantly weaker" in lines[1]
    assert leaderboard_answer(_board([1, 1, 1]))[0].startswith("All 3 items tied at the top")


def test_without_resamples_the_leader_is_said_to_be_untested():
    line = leaderboard_answer(_board([None, None]))[0]
    assert line.startswith("Strongest on Overall by its point estimate: s0") and \
        "not tested" in line


def test_pairs_are_sorted_by_p():
    board = _board([1, 2, 3, 3])
    shuffled = board.pairs.sample(frac=1, random_state=1)
    out = pairs_by_p(shuffled)
    assert out["pvalue_bh"].is_monotonic_increasing and len(out) == len(shuffled)


@settings(max_examples=60, deadline=None)
@given(st.floats(-50, 50), st.floats(1e-3, 100))
def test_ticks_are_round_inside_the_range(lo, span):
    hi = lo + span
    ticks, decimals = nice_ticks(lo, hi)
    assert 3 <= len(ticks) <= 11
    assert all(lo - 1e-9 * span <= t <= hi + 1e-9 * span for t in ticks)
    steps = np.diff(ticks)
    assert np.allclose(steps, steps[0])
    mantissa = steps[0] / 10 ** math.floor(math.log10(steps[0]) + 1e-12)
    assert any(abs(mantissa - m) < 1e-6 for m in (1, 2, 2.5, 5, 10))
    # the decimals print every tick exactly (no two ticks print alike)
    texts = [f"{t:.{decimals}f}" for t in ticks]
    assert len(set(texts)) == len(texts)
    assert all(abs(float(x) - t) < 1e-9 * max(1, abs(t)) for x, t in zip(texts, ticks))


def test_the_forest_plot_marks_the_groups_and_ticks_round_values():
    svg = forest_plot_svg(_board([1, 1, 2, 3]).table)
    assert svg.count("font-weight='bold'>1<") == 2 and ">3<" in svg
    labels = re.findall(r"text-anchor='middle'>(-?[0-9.]+)</text>", svg)
    assert labels and all(len(x.split(".")[-1]) <= 2 for x in labels)  # 0.5, not 0.4873


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> Path:
    from storyeval.data import load_hanna
    from storyeval.pairwise.from_scores import verdicts_from_scores

    folder = tmp_path_factory.mktemp("lb")
    wide = load_hanna().select_systems(exclude=["Human"]).wide()
    table = pd.concat([verdicts_from_scores(wide, f"Human {i} RE", judge=f"a{i}",
                                            dimension="Relevance") for i in (1, 2, 3)])
    table.to_csv(folder / "v.csv", index=False)
    return folder / "v.csv"


@pytest.fixture(scope="module")
def pages(verdicts, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pages")
    runs = {"leaderboard": ["pairwise", "strengths", str(verdicts), "--resamples", "200"],
            "bias": ["bias", "--metrics", "BLEU,Beluga-13B 1,Mistral-7B 1", "--length",
                     "Text length", "--own", "Beluga-13B 1=GPT-2"],
            "agreement": ["agreement"]}
    for name, argv in runs.items():
        assert main([*argv, "--out", str(root / name)]) == 0, name
    return {name: root / name / "index.html" for name in runs}


def test_strengths_prints_the_answer_before_the_table(verdicts, capsys):
    assert main(["pairwise", "strengths", str(verdicts), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(("Tied at the top on Relevance", "GPT-2 is the strongest"))
    assert out.index(first) < out.index("log_strength")
    assert max(len(line) for line in out.splitlines()) <= 120


def test_leaderboard_page_opens_with_the_answer_and_the_forest(pages):
    page = pages["leaderboard"].read_text(encoding="utf-8")
    answer = page[page.index("<section class='answer'"):page.index("</section>")]
    assert "<p class='lead'>" in answer and "<svg" in answer and ">group<" in answer
    tests = pd.read_html(io.StringIO(page))[-1]
    assert tests["pvalue_bh"].astype(float).is_monotonic_increasing  # most significant first
    assert "<details>" in page  # 45 pairs: folded


# ------------------------------------------------------------------ bias
def test_bias_answer_counts_the_significant_tests_per_rater():
    from storyeval.report.bias_answer import bias_answer, bias_answer_lines

    leniency = pd.DataFrame({
        "rater": ["m RE", "m CH", "m RE", "x", "x"], "criterion": ["RE", "CH", "RE", "RE", "CH"],
        "estimand": ["offset", "offset", "MAE", "offset", "offset"],
        "estimate": [-1.0, 0.5, 1.0, 0.1, 0.2], "ci_low": [-1.2, 0.1, 0.8, -0.1, 0.0],
        "ci_high": [-0.8, 0.9, 1.2, 0.3, 0.4], "pvalue": [0.001, 0.04, np.nan, 0.3, 0.06]})
    scale = pd.DataFrame({"label": ["a"], "point": [1.0], "share": [0.5]})  # no p: left out
    answer = bias_answer({"leniency": leniency, "scale_use": scale},
                         names={"m RE": "m", "m CH": "m"}, short={"RE": "R", "CH": "C"})
    assert list(answer.columns) == ["rater", "leniency"]  # the MAE has no test
    got = answer.set_index("rater")["leniency"]
    assert got["m"] == "2 of 2 (R -1.00, C +0.50)"  # most significant first
    assert got["x"] == "none of 2"
    assert bias_answer_lines(answer)[0] == "m: leniency 2 of 2 (R -1.00, C +0.50)"


def test_bias_terminal_and_page_open_with_the_answer(pages, capsys):
    assert main(["bias", "--metrics", "BLEU,Beluga-13B 1", "--criteria", "RE,CH"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Answer: significant biases per rater\n\n")
    assert "\nBeluga-13B 1: leniency " in out  # the rater group of its criterion ratings
    assert "\nBLEU: leniency 2 of 2" in out  # display names, not HANNA's 'BLEU Ξ§'
    page = pages["bias"].read_text(encoding="utf-8")
    assert page.index("<section class='answer'") < page.index("<dl class='facts'>")
    assert page.count("<details>") >= 1  # the long tables are folded


# ------------------------------------------------------------------ agreement
def test_readings_cover_the_interval():
    from storyeval.report.agreement_answer import AC1_BANDS, ICC_BANDS, reading

    assert reading(0.536, 0.485, 0.582, ICC_BANDS) == "poor to moderate"
    assert reading(0.8, 0.76, 0.85, ICC_BANDS) == "good"
    assert reading(-0.1, -0.3, -0.05, ICC_BANDS) == "none"
    assert reading(0.5, math.nan, math.nan, AC1_BANDS) == "moderate"
    assert reading(0.1, 0.05, 0.25, AC1_BANDS) == "slight to fair"
    assert reading(math.nan, 0, 1, AC1_BANDS) == ""


def test_agreement_answers_with_the_coefficients_and_their_reading(capsys):
    assert main(["agreement", "--format", "csv"]) == 0
    table = pd.read_csv(io.StringIO(capsys.readouterr().out), nrows=6)  # the annotators
    assert main(["agreement"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Answer: how well the annotators agree\n\nAnnotators agree most on ")
    top = table.loc[table["icc2k"].idxmax()]
    assert f"most on {top['criterion']} (ICC(2,k) {top['icc2k']:.3f} " \
           f"[{top['icc2k_ci_low']:.3f}, {top['icc2k_ci_high']:.3f}]" in out.replace("\n  ", " ")
    assert out.index("ICC reading") < out.index("agreement of the human annotators")


# ------------------------------------------------------------------ meta
@pytest.fixture(scope="module")
def small_meta():
    from storyeval.meta import meta_evaluate

    return meta_evaluate(measures="SUPERT-SS,SUPERT-PS,Beluga-13B 1,BLEU", criteria="RE")


def test_every_meta_row_answers_with_an_interval_and_a_test(small_meta):
    from storyeval.meta.answer import answer_table

    answer = answer_table(small_meta)
    assert len(answer) == 2
    assert (answer["better than next?"] != "not tested").all()
    assert answer["correlation"].str.contains(r"\[").all()


def test_the_own_test_is_the_run_s_test_on_the_pair(small_meta):
    from storyeval._format import p_text
    from storyeval.meta import meta_evaluate
    from storyeval.meta.answer import answer_table

    answer = answer_table(small_meta).set_index("level")
    corr = small_meta.correlations
    for level in ("overall", "system"):
        rows = corr[corr["level"] == level].assign(a=lambda f: f["value"].abs())
        best, nxt = rows.sort_values("a", ascending=False)["measure"].iloc[:2]
        if "(own test)" not in answer.loc[level, "better than next?"]:
            continue
        # independent path: every pair tested by the run itself, unadjusted
        full = meta_evaluate(measures="SUPERT-SS,SUPERT-PS,Beluga-13B 1,BLEU", criteria="RE",
                             levels=level, reference="all", adjust="none").comparisons
        pair = full[((full["measure_a"] == best) & (full["measure_b"] == nxt))
                    | ((full["measure_a"] == nxt) & (full["measure_b"] == best))]
        assert answer.loc[level, "p vs next"] == p_text(pair["p"].iloc[0])


@pytest.mark.parametrize("symmetric", [True, False])
def test_batched_own_tests_equal_one_run_per_pair(monkeypatch, symmetric):
    """The answer's own tests of a level come from one run on all pairs (two-sided tests and
    the paper's larger-|r| direction): the same p-values and answer as one run per pair."""
    import storyeval.meta.answer_extras as extras
    from storyeval.meta import meta_evaluate
    from storyeval.meta.answer import answer_table

    def run(batch: bool):
        monkeypatch.setattr(extras, "_symmetric", lambda chosen, level: batch)
        calls = []
        result = meta_evaluate(measures="SUPERT-SS,BLEU,Beluga-13B 1,Text length ¤§",
                               criteria="RE,CH,SU", reference="BLEU",
                               test={"overall": "ustat",
                                                          "system": "permutation-midp"},
                               alternative="two-sided" if symmetric else None)
        original = type(result).compare_pair
        monkeypatch.setattr(type(result), "compare_pair",
                            lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
        return answer_table(result), result._answer_extras.tests, len(calls)

    batched, b_tests, b_calls = run(True)
    single, s_tests, s_calls = run(False)
    assert b_calls == 0 and s_calls == len(s_tests) > 2
    pd.testing.assert_frame_equal(batched, single)
    key = [(lv, c, frozenset((a, b))) for lv, c, a, b in
           zip(s_tests["level"], s_tests["criterion"], s_tests["measure_a"], s_tests["measure_b"])]
    got = {(lv, c, frozenset((a, b))): p for lv, c, a, b, p in
           zip(b_tests["level"], b_tests["criterion"], b_tests["measure_a"], b_tests["measure_b"],
               b_tests["p"])}
    np.testing.assert_array_equal([got[k] for k in key], s_tests["p"].to_numpy())


def test_the_own_interval_is_the_run_s_bootstrap(small_meta):
    from storyeval.meta.answer import answer_table
    from storyeval.meta.resampling import add_bootstrap_ci

    answer = answer_table(small_meta).set_index("level")
    full = add_bootstrap_ci(small_meta, n_resamples=1000, random_state=0).correlations
    for level in ("overall", "system"):
        rows = full[full["level"] == level].assign(a=lambda f: f["value"].abs())
        best = rows.sort_values("a", ascending=False).iloc[0]
        cell = answer.loc[level, "correlation"]
        low, high = (float(x) for x in re.search(r"\[(-?[0-9.]+), (-?[0-9.]+)\]", cell).groups())
        sign = 1 if best["value"] > 0 else -1
        want = sorted([sign * best["ci_low"], sign * best["ci_high"]])
        assert low == pytest.approx(want[0], abs=6e-4) and high == pytest.approx(want[1],
                                                                                 abs=6e-4)


def test_notebook_view_opens_with_the_answer(small_meta):
    page = small_meta._repr_html_()
    assert page.index("Answer: which measure agrees best") < page.index("<details><summary><b>")
    assert "human baseline" in page


@pytest.mark.filterwarnings("ignore::storyeval.compare.multitest.SingleTestFamilyWarning")
def test_meta_terminal_opens_with_the_answer(capsys):
    assert main(["meta", "--metrics", "SUPERT-SS,SUPERT-PS,Beluga-13B 1", "--criteria",
                 "RE"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Answer: which measure agrees best with the humans\n\noverall, "
                          "Relevance: ")
    assert "not tested" not in out.split("\n\n")[1]
    assert max(len(line) for line in out.splitlines()[:12]) <= 120


# ------------------------------------------------------------------ pointwise
def test_pointwise_answer_ties_overlapping_intervals():
    from storyeval.cli.pairwise import best_rows

    table = pd.DataFrame({"criterion": ["c"] * 3, "measure": ["a", "b", "z"],
                          "accuracy": [0.70, 0.66, 0.50], "ci_low": [0.64, 0.60, 0.45],
                          "ci_high": [0.76, 0.72, 0.55]})
    got = best_rows(table, "criterion", "accuracy", ["criterion", "measure", "accuracy"])
    assert list(got["measure"]) == ["a", "b"] and set(got["answer"]) == {"tied at the top"}
    clear = table.assign(ci_high=[0.76, 0.63, 0.55])
    got = best_rows(clear, "criterion", "accuracy", ["criterion", "measure"])
    assert list(got["measure"]) == ["a"] and list(got["answer"]) == ["best"]
    bare = table.drop(columns=["ci_low", "ci_high"])
    got = best_rows(bare, "criterion", "accuracy", ["criterion", "measure"])
    assert list(got["answer"]) == ["largest, no interval"]


# ------------------------------------------------------------------ Chromium
@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    binary = _chromium_binary()
    if binary is None:
        yield None
        return
    tools = DevTools(binary, tmp_path_factory.mktemp("chromium-answers") / "profile")
    try:
        yield Browser(tools, "file://")
    finally:
        tools.close()


PROBE = """(() => JSON.stringify({
  page: document.documentElement.scrollWidth, view: window.innerWidth,
  height: document.documentElement.scrollHeight,
  answer: (() => { const a = document.querySelector("section.answer");
                   return a ? a.getBoundingClientRect().top : -1; })(),
  svgtext: (() => { const t = [...document.querySelectorAll("figure.svg svg text")];
                    return t.length ? Math.min(...t.map(e => e.getBoundingClientRect().height))
                                    : -1; })(),
}))()"""


@pytest.mark.parametrize("width", [400, 1400])
def test_pages_read_at_phone_and_desktop_widths(pages, browser, width):
    from test_html_report import _evaluate_on

    browser = _need(browser)
    tools = browser.tools
    tools.send("Emulation.setDeviceMetricsOverride",
               {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600},
               browser.session)
    try:
        for name, path in pages.items():
            got = _evaluate_on(browser, path, PROBE)
            assert got["view"] == width and got["page"] <= width + 1, (name, got)
            assert 0 <= got["answer"] < 300, (name, got)  # the answer on the first screen
            if name == "leaderboard":
                assert got["svgtext"] >= 9.5, got  # the forest's labels read on a phone
            if name == "bias" and width == 1400:
                assert got["height"] < 6000, got  # tables folded (was 28,840 px)
    finally:
        tools.send("Emulation.setDeviceMetricsOverride",
                   {"width": 1280, "height": 1000, "deviceScaleFactor": 1, "mobile": False},
                   browser.session)



def test_a_criterion_specific_rating_may_be_the_reference():
    # before: validated against the catalogue's first criterion (Relevance), so a rating of
    # Coherence was "no rating for criterion 'Relevance'"
    from storyeval.meta import meta_evaluate

    res = meta_evaluate(measures="Beluga-13B 2,BLEU", criteria="CH", levels="overall",
                        reference="Beluga-13B CH 2")
    assert set(res.comparisons["measure_a"]) | set(res.comparisons["measure_b"]) >= {
        "Beluga-13B CH 2"}


def test_no_own_test_under_reference_none(capsys):
    from storyeval.meta import meta_evaluate
    from storyeval.meta.answer import answer_table

    res = meta_evaluate(measures="Beluga-13B 1,BLEU", criteria="RE", levels="overall",
                        reference="none")
    row = answer_table(res).iloc[0]
    assert row["better than next?"] == "not tested" and "[" in row["correlation"]
