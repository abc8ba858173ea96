"""A row's validity note and the disagreement mark go wherever the row goes (issue 47): with 3
systems the terminal captions, the HTML page and comparisons.csv say the test is too discrete
for a rank coefficient and point to Pearson, the header quotes the level measured with that few
systems (not the one of 5-20), every cell whose interval and adjusted p disagree at 0.05 is
marked, and no row prints a difference of exactly 0 with p < 0.5."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from storyeval.cli import main
from storyeval.compare.procedures import FEW_SYSTEMS_LEVEL


@pytest.fixture(scope="module")
def three_systems(tmp_path_factory):
    folder = tmp_path_factory.mktemp("three")
    rng = np.random.default_rng(4)
    S, P = 3, 30
    q = rng.normal(size=(S, P)) + np.array([-0.4, 0.0, 0.4])[:, None]
    rows, scores = [], []
    for s in range(S):
        for p in range(P):
            for a in range(3):
                rows.append((f"gen {s}", p, "Plot", f"w{a}",
                             float(np.clip(np.rint(3 + q[s, p] + rng.normal()), 1, 5))))
            for k in range(4):
                scores.append((f"gen {s}", p, f"m{k}", q[s, p] * (k + 1) / 4 + rng.normal()))
    pd.DataFrame(rows, columns=["system", "prompt_id", "criterion", "annotator", "value"]
                 ).to_csv(folder / "ratings.csv", index=False)
    pd.DataFrame(scores, columns=["system", "prompt_id", "measure", "value"]
                 ).to_csv(folder / "scores.csv", index=False)
    return folder


def test_few_systems_note_everywhere(three_systems, capsys):
    out = three_systems / "out"
    assert main(["meta", "--data", str(three_systems / "ratings.csv"), "--scores",
                 str(three_systems / "scores.csv"), "--metrics", "all", "--reference", "all",
                 "--levels", "system", "--no-figures", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    low, high = FEW_SYSTEMS_LEVEL["kendall_b"]
    assert f"measured type-I error was {low:.3f}-{high:.3f}" in text  # the header's level
    assert "measured type-I error 0.038" not in text  # not the level of 5-20 systems
    # captions wider than 120 columns continue on lines "  ..." (issue 53): joined
    joined = re.sub(r"\n  (?=\S)", " ", text)
    captions = [line for line in joined.splitlines() if line.startswith(("BH-adjusted",
                                                                          "difference of"))]
    assert captions and all("--coef pearson" in line for line in captions)
    page = (out / "index.html").read_text()
    assert "fewer than 5 systems" in page and "--coef pearson" in page
    rows = pd.read_csv(out / "comparisons.csv")
    system = rows[rows["level"] == "system"]
    assert system["note"].str.contains("fewer than 5 systems").all()
    zero = system["delta"].abs() <= 1e-12
    assert (system.loc[zero, "p"] >= 0.5).all()
    # delta is the oriented difference of the printed correlations
    assert np.allclose(system["delta"], system["sign_a"] * system["r_a"]
                       - system["sign_b"] * system["r_b"])


def test_disagreement_is_marked(three_systems, capsys):
    assert main(["meta", "--data", str(three_systems / "ratings.csv"), "--scores",
                 str(three_systems / "scores.csv"), "--metrics", "all", "--reference", "all",
                 "--levels", "overall"]) == 0
    text = capsys.readouterr().out
    marked = [line for line in text.splitlines() if "\u2020" in line and "[" in line]
    legend = [line for line in text.splitlines() if "\u2020: the interval" in line]
    # every marked table has the legend in its caption, and a legend only where a mark is
    assert bool(marked) == bool(legend)


def test_measures_above_the_upper_bound_are_explained():
    # HANNA at the system level: many measures correlate more with the criterion than an
    # annotator with the panel's mean; the note says what the "upper bound" bounds
    import storyeval
    from storyeval.report.meta_report import above_upper_bound_lines, baseline_lines

    result = storyeval.meta_evaluate(storyeval.load_hanna(), levels="overall,system")
    system = above_upper_bound_lines(result, "system")
    assert len(system) == 1 and "not for a measure" in system[0]
    assert system[0] in baseline_lines(result, "system")
    assert above_upper_bound_lines(result, "overall") == []
