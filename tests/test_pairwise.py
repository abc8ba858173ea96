"""Pairwise verdicts: validation, win matrices, position consistency, judge accuracy, pairwise
accuracy of pointwise measures, the side-by-side template and the ``pairwise`` CLI."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.pairwise import (
    judge_accuracy,
    load_dimensions,
    parse_side_by_side,
    pointwise_pairwise_accuracy,
    position_consistency,
    read_verdicts,
    render_side_by_side,
    side_by_side_messages,
    validate_verdicts,
    verdict_records,
    win_matrix,
)


def _v(rows, judge=None):
    """Verdict frame from (prompt, story_a, story_b, dimension, verdict, order) tuples."""
    frame = pd.DataFrame(rows, columns=["prompt_id", "story_a", "story_b", "dimension", "verdict",
                                        "order"])
    if judge is not None:
        frame["judge"] = judge
    return frame


# A small hand-made table: systems X, Y, Z on two prompts, dimension Plot, judge "llm".
HAND = _v([
    (0, "X/0", "Y/0", "Plot", "A", "AB"),     # X beats Y
    (0, "X/0", "Y/0", "Plot", "A", "BA"),     # X beats Y again (consistent)
    (0, "X/0", "Z/0", "Plot", "A", "AB"),     # X beats Z (X first)
    (0, "X/0", "Z/0", "Plot", "B", "BA"),     # Z beats X (Z first): inconsistent
    (1, "Y/1", "Z/1", "Plot", "same", "AB"),  # tie
    (1, "Y/1", "Z/1", "Plot", "same", "BA"),  # tie again (consistent)
    (1, "X/1", "Z/1", "Plot", "B", "AB"),     # Z beats X, X shown first; no BA verdict
], judge="llm")


# --------------------------------------------------------------------------- validation / io

def test_validate_canonicalises_and_derives_systems():
    v = validate_verdicts(_v([(0, "X/0", "Y/0", "Plot", " tie ", "ab")]))
    assert v.loc[0, "verdict"] == "same" and v.loc[0, "order"] == "AB"
    assert v.loc[0, "judge"] == "judge"
    assert (v.loc[0, "system_a"], v.loc[0, "system_b"]) == ("X", "Y")
    assert pd.isna(v.loc[0, "winner"])


def test_position_verdicts_are_converted_to_story_verdicts():
    # "A" = the story shown first; with order BA that is story_b
    v = validate_verdicts(_v([(0, "X/0", "Y/0", "Plot", "A", "BA"),
                              (0, "X/0", "Y/0", "Plot", "A", "AB"),
                              (1, "X/1", "Y/1", "Plot", "same", "BA")]),
                          verdict_refers_to="position")
    assert v["verdict"].tolist() == ["B", "A", "same"]
    assert v["winner"].tolist()[:2] == ["Y/0", "X/0"] and pd.isna(v["winner"].iloc[2])


@pytest.mark.parametrize("mutate, message", [
    (lambda f: f.drop(columns="order"), "missing column"),
    (lambda f: f.assign(verdict="C"), "unknown verdict 'C' at row 0"),
    (lambda f: f.assign(order="first"), "unknown order"),
    (lambda f: f.assign(story_b="X/0"), "with itself"),
    (lambda f: pd.concat([f, f]), "repeats a judgment"),
    (lambda f: f.assign(prompt_id=np.nan), "missing value in column 'prompt_id' at row 0"),
    (lambda f: f.iloc[:0], "empty"),
])
def test_validation_errors_name_the_problem(mutate, message):
    with pytest.raises(InputError, match=message):
        validate_verdicts(mutate(_v([(0, "X/0", "Y/0", "Plot", "A", "AB")])))


def test_same_pair_in_both_orders_with_swapped_names_is_not_a_duplicate():
    v = _v([(0, "X/0", "Y/0", "Plot", "A", "AB"), (0, "Y/0", "X/0", "Plot", "B", "AB")])
    assert len(validate_verdicts(v)) == 2  # Y shown first in the second row


def test_read_verdicts_csv_and_jsonl(tmp_path):
    csv = tmp_path / "v.csv"
    HAND.to_csv(csv, index=False)
    jsonl = tmp_path / "v.jsonl"
    HAND.to_json(jsonl, orient="records", lines=True)
    a, b = read_verdicts(csv), read_verdicts(jsonl)
    assert a["winner"].tolist() == b["winner"].tolist()
    (tmp_path / "v.xlsx").write_text("x")
    with pytest.raises(InputError, match="unsupported"):
        read_verdicts(tmp_path / "v.xlsx")
    with pytest.raises(InputError, match="not found"):
        read_verdicts(tmp_path / "absent.csv")


# --------------------------------------------------------------------------- win matrix

def test_win_matrix_hand_counts():
    m = win_matrix(HAND, dimension="Plot")
    # hand count: X beat Y twice, X beat Z once; Z beat X twice; Y-Z tied twice
    expected_wins = pd.DataFrame([[0, 2, 1], [0, 0, 0], [2, 0, 0]], index=list("XYZ"),
                                 columns=list("XYZ"), dtype=float)
    np.testing.assert_array_equal(m.wins.to_numpy(), expected_wins.to_numpy())
    assert m.ties.loc["Y", "Z"] == m.ties.loc["Z", "Y"] == 2
    assert m.ties.to_numpy().sum() == 4
    # win rate, ties half: X 3/5, Y (0 + 1)/4, Z (2 + 1)/5
    np.testing.assert_allclose(m.win_rate().to_numpy(), [3 / 5, 1 / 4, 3 / 5])
    long = m.to_frame()
    row = long[(long["item"] == "X") & (long["opponent"] == "Z")].iloc[0]
    assert (row["wins"], row["losses"], row["ties"], row["n"]) == (1, 2, 0, 3)


def test_win_matrix_by_story_and_dimension_choice():
    m = win_matrix(HAND, by="story")
    assert m.wins.loc["X/0", "Y/0"] == 2
    two = pd.concat([HAND, HAND.assign(dimension="Creativity")])
    with pytest.raises(InputError, match="several dimensions"):
        win_matrix(two)
    with pytest.raises(InputError, match="not in the verdicts"):
        win_matrix(two, dimension="Language Use")
    with pytest.raises(InputError, match="by must be"):
        win_matrix(HAND, by="prompt")


# --------------------------------------------------------------------------- consistency

def test_position_consistency_hand_counts():
    res = position_consistency(HAND).iloc[0]
    # pairs judged in both orders: X-Y (A, A: consistent), X-Z (A then B: inconsistent),
    # Y-Z (same, same: consistent) -> 2/3; consistent and decisive: X-Y only -> 1/3
    assert res["n_pairs_both_orders"] == 3
    assert res["consistency"] == pytest.approx(2 / 3)
    assert res["consistent_decisive"] == pytest.approx(1 / 3)
    # first shown won in rows 0 (X first, X won), 2 (X first, X won), 3 (Z first, Z won);
    # row 1 has Y first and X won; row 6 X first, Z won -> 3/7; decisive verdicts: 5 -> 3/5
    assert res["first_position_win_rate"] == pytest.approx(3 / 7)
    assert res["first_position_win_rate_decisive"] == pytest.approx(3 / 5)
    assert res["tie_rate"] == pytest.approx(2 / 7)


def test_always_first_judge_has_zero_consistency():
    rows = []
    for p, (a, b) in itertools.product(range(3), [("X", "Y"), ("X", "Z"), ("Y", "Z")]):
        rows.append((p, f"{a}/{p}", f"{b}/{p}", "Plot", "A", "AB"))
        rows.append((p, f"{a}/{p}", f"{b}/{p}", "Plot", "B", "BA"))  # story_b shown first wins
    res = position_consistency(_v(rows)).iloc[0]
    assert res["consistency"] == 0.0
    assert res["first_position_win_rate_decisive"] == 1.0


# --------------------------------------------------------------------------- judge accuracy

def test_judge_accuracy_averages_both_orders():
    human = _v([(0, "X/0", "Y/0", "Plot", "A", "AB"),        # X preferred
                (0, "X/0", "Z/0", "Plot", "B", "AB"),        # Z preferred
                (1, "Y/1", "Z/1", "Plot", "same", "AB"),     # tie: left out
                (1, "X/1", "Z/1", "Plot", "A", "AB"),        # X preferred (two annotators:
                (1, "X/1", "Z/1", "Plot", "A", "BA")], judge="human")  # same story)
    res = judge_accuracy(HAND, human).iloc[0]
    # judge verdicts on human-decided pairs:
    #  X-Y: AB (X first = preferred first) right; BA (preferred second) right
    #  X-Z: AB (Z preferred, shown second) judge A=X wrong; BA (Z first) judge B=Z right
    #  X1-Z1: AB (X preferred, first) judge B=Z wrong
    # preferred first: [right (XY AB), right (XZ BA), wrong (X1Z1 AB)] = 2/3
    # preferred second: [right (XY BA), wrong (XZ AB)] = 1/2
    assert res["accuracy_preferred_first"] == pytest.approx(2 / 3)
    assert res["accuracy_preferred_second"] == pytest.approx(1 / 2)
    # accuracy is k/n (3 right of 5 verdicts); the order-balanced one is its own column
    assert res["accuracy"] == pytest.approx(3 / 5)
    assert res["balanced_accuracy"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    assert res["estimand"] == "k/n over verdicts"
    assert (res["n_pairs"], res["n_verdicts"], res["n_human_ties"]) == (3, 5, 1)
    assert res["n_unmatched"] == 0
    # JudgeBench's rule: one net verdict per pair, a tie (or inconsistent pair) wrong
    #  X-Y: X in both orders -> X, right; X-Z: X then Z -> inconsistent, a tie, wrong;
    #  X1-Z1: Z (one order) -> wrong; 1 of 3
    net = judge_accuracy(HAND, human, aggregate="net").iloc[0]
    assert net["accuracy"] == pytest.approx(1 / 3) and net["n_verdicts"] == 3
    assert np.isnan(net["balanced_accuracy"])
    assert net["estimand"].startswith("k/n over pairs, net verdict")
    with pytest.raises(InputError, match="tie_credit must be 0"):
        judge_accuracy(HAND, human, aggregate="net", tie_credit=0.5)


def test_judge_accuracy_tie_credit():
    human = _v([(0, "X/0", "Y/0", "Plot", "A", "AB")])
    judge = _v([(0, "X/0", "Y/0", "Plot", "same", "AB"), (0, "X/0", "Y/0", "Plot", "A", "BA")],
               judge="j")
    assert judge_accuracy(judge, human).loc[0, "accuracy"] == pytest.approx(0.5)
    assert judge_accuracy(judge, human, tie_credit=0.5).loc[0, "accuracy"] == \
        pytest.approx(0.75)
    with pytest.raises(InputError, match="tie_credit"):
        judge_accuracy(judge, human, tie_credit=2)


# --------------------------------------------------------------------------- pointwise -> pairs

def _loop_accuracy(wide, measure, criterion, human_ties, credit):
    """Reference: a plain loop over every pair of stories of each prompt."""
    total, n, n_mtie, n_htie = 0.0, 0, 0, 0
    for _, g in wide.groupby(level="prompt_id"):
        x, c = g[measure].to_numpy(), g[criterion].to_numpy()
        for i, j in itertools.combinations(range(len(g)), 2):
            h, m = np.sign(c[i] - c[j]), np.sign(x[i] - x[j])
            n_htie += h == 0
            if human_ties == "exclude":
                if h == 0:
                    continue
                total += 1.0 if m == h else (credit if m == 0 else 0.0)
            else:
                total += float(m == h)
            n += 1
            n_mtie += m == 0  # measure ties among the scored pairs only
    return total / n, n, n_mtie, n_htie


@pytest.mark.parametrize("human_ties, credit", [("exclude", 0.5), ("exclude", 0.0),
                                                ("include", 0.5)])
def test_pointwise_pairwise_accuracy_matches_loop(hanna_generation_wide, human_ties, credit):
    wide = hanna_generation_wide.loc[
        hanna_generation_wide.index.get_level_values("prompt_id") < 12]
    pairs = [("Beluga-13B RE 1", "Relevance"), ("BLEU Ξ§", "Coherence"),
             ("Text length ¤§", "Complexity")]
    res = pointwise_pairwise_accuracy(wide, pairs, human_ties=human_ties, tie_credit=credit)
    for k, (m, c) in enumerate(pairs):
        acc, n, n_mtie, n_htie = _loop_accuracy(wide, m, c, human_ties, credit)
        assert res.loc[k, "accuracy"] == pytest.approx(acc, abs=1e-12)
        assert res.loc[k, "n_pairs"] == n
        assert res.loc[k, "n_measure_ties"] == n_mtie
        assert res.loc[k, "n_human_ties"] == n_htie


def test_pointwise_measure_ties_counted_on_scored_pairs_only():
    # hand-worked: one prompt, 3 stories -> pairs (0,1), (0,2), (1,2)
    # human c = 1, 1, 2: h = 0, -1, -1 (pair (0,1) a human tie)
    # measure x = 5, 5, 5: m = 0, 0, 0 (every pair a measure tie)
    idx = pd.MultiIndex.from_product([["S0", "S1", "S2"], [0]], names=["system", "prompt_id"])
    wide = pd.DataFrame({"c": [1.0, 1.0, 2.0], "x": [5.0, 5.0, 5.0]}, index=idx)
    ex = pointwise_pairwise_accuracy(wide, [("x", "c")], human_ties="exclude", tie_credit=0.5)
    # 2 decided pairs, both measure ties earning 0.5: accuracy 0.5; the human-tied pair is out
    assert ex.loc[0, ["n_pairs", "n_measure_ties", "n_human_ties"]].tolist() == [2, 2, 1]
    assert ex.loc[0, "accuracy"] == 0.5
    inc = pointwise_pairwise_accuracy(wide, [("x", "c")], human_ties="include")
    # every pair scored; only the human-tied pair is matched by the measure tie
    assert inc.loc[0, ["n_pairs", "n_measure_ties", "n_human_ties"]].tolist() == [3, 3, 1]
    assert inc.loc[0, "accuracy"] == pytest.approx(1 / 3)


def test_pointwise_pairwise_accuracy_on_all_hanna_pairs(hanna_generation_wide):
    res = pointwise_pairwise_accuracy(hanna_generation_wide, [("Relevance", "Relevance")])
    # every prompt has 10 systems: 96 * 45 = 4,320 story pairs; a criterion agrees with itself
    assert res.loc[0, "n_pairs"] + res.loc[0, "n_human_ties"] == 96 * 45
    assert res.loc[0, "accuracy"] == 1.0


# --------------------------------------------------------------------------- template

def test_template_renders_paper_000_dimensions_and_round_trips():
    dims = load_dimensions()
    assert [d for d in dims if d != "__overall__"] == ["Plot", "Creativity", "Development",
                                                      "Language Use"]
    story_a = "It cost ${price} and {braces} stayed."  # placeholders in stories stay verbatim
    text = render_side_by_side("A prompt.", story_a, "Second story.")
    assert story_a in text and "[Story B]\nSecond story." in text
    assert "Overall: [A or B or Same]" in text
    answer = ("Story A is tighter...\nBased on my assessment, the better story for each "
              "dimension is:\nPlot: A\nCreativity: **B**\nDevelopment: Same\nLanguage Use: [A]\n"
              "Overall: A\n")
    parsed = parse_side_by_side(answer, ["Plot", "Creativity", "Development", "Language Use",
                                         "Overall"])
    assert parsed == {"Plot": "A", "Creativity": "B", "Development": "same",
                      "Language Use": "A", "Overall": "A"}
    assert parse_side_by_side("no verdict here", ["Plot"]) == {"Plot": None}
    sub = render_side_by_side("p", "a", "b", dimensions=["Plot"], overall=False)
    assert "Creativity" not in sub and "Overall" not in sub
    with pytest.raises(InputError, match="unknown dimension"):
        render_side_by_side("p", "a", "b", dimensions=["Pacing"])
    with pytest.raises(InputError, match="story_b"):
        render_side_by_side("p", "a", " ")


# --------------------------------------------------------------------------- CLI

def test_cli_pairwise_subcommands(tmp_path, capsys):
    path = tmp_path / "verdicts.csv"
    HAND.to_csv(path, index=False)
    assert main(["pairwise", "matrix", str(path), "--format", "csv"]) == 0
    out = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert set(out.columns) >= {"item", "opponent", "wins", "losses", "ties"}
    assert main(["pairwise", "consistency", str(path), "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)[0]
    assert rec["consistency"] == pytest.approx(2 / 3)
    assert main(["pairwise", "strengths", str(path), "--resamples", "0", "--format", "json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert sorted(r["item"] for r in rec) == ["X", "Y", "Z"]  # strongest first
    human = tmp_path / "human.csv"
    HAND.assign(judge="human").to_csv(human, index=False)
    # two prompts: too few clusters for the default cluster-bootstrap interval
    assert main(["pairwise", "accuracy", str(path), "--reference", str(human),
                 "--interval", "none", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["accuracy"] == pytest.approx(1.0)
    assert main(["pairwise", "strengths", str(tmp_path / "absent.csv")]) == 2
    assert "not found" in capsys.readouterr().err


def test_cli_pairwise_template_and_pointwise(tmp_path, capsys):
    for name, text in (("p.txt", "A prompt."), ("a.txt", "Story one."), ("b.txt", "Story two.")):
        (tmp_path / name).write_text(text)
    assert main(["pairwise", "template", "--prompt", str(tmp_path / "p.txt"), "--story-a",
                 str(tmp_path / "a.txt"), "--story-b", str(tmp_path / "b.txt")]) == 0
    assert "[Story A]\nStory one." in capsys.readouterr().out
    assert main(["pairwise", "pointwise", "--metrics", "BLEU Ξ§,Beluga-13B 1",
                 "--criteria", "RE,CH", "--format", "csv"]) == 0
    res = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    # a rater group resolves to its criterion-matched column; metrics pair with every
    # criterion; rows in catalogue order, as in `storyeval meta`; `measure` shows display
    # names, `measure_id` the identifiers (issue 53)
    assert sorted(set(res["measure"])) == ["BLEU", "Beluga-13B CH 1", "Beluga-13B RE 1"]
    got = sorted(zip(res["measure_id"], res["criterion"]))
    assert got == sorted([("BLEU Ξ§", "Relevance"), ("BLEU Ξ§", "Coherence"),
                          ("Beluga-13B RE 1", "Relevance"),
                          ("Beluga-13B CH 1", "Coherence")])
    assert (res["n_missing"] == 0).all()
    # --measures is now the data option naming a wide table's score columns (as in `meta`)
    assert main(["pairwise", "pointwise", "--measures", "BLEU*", "--criteria", "RE"]) == 2
    assert "--data" in capsys.readouterr().err
    # the same specifications as `meta --metrics`: globs, and suggestions for a typo
    assert main(["pairwise", "pointwise", "--metrics", "ROUGE-1*", "--criteria", "RE",
                 "--format", "csv"]) == 0
    res = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert len(res) >= 3 and all(m.startswith("ROUGE-1") for m in res["measure_id"])
    assert main(["pairwise", "pointwise", "--metrics", "BLEUU", "--criteria", "RE"]) == 2
    assert "BLEU" in capsys.readouterr().err


def test_cli_pairwise_subprocess(tmp_path):
    path = tmp_path / "verdicts.csv"
    HAND.to_csv(path, index=False)
    proc = subprocess.run([sys.executable, "-m", "storyeval", "pairwise", "consistency",
                           str(path), "--format", "csv"], check=False,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "consistency" in proc.stdout.splitlines()[0]
    bad = tmp_path / "bad.csv"
    HAND.assign(verdict="maybe").to_csv(bad, index=False)
    proc = subprocess.run([sys.executable, "-m", "storyeval", "pairwise", "matrix", str(bad)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "unknown verdict 'maybe'" in proc.stderr


def test_messages_and_verdict_records_build_a_verdict_table():
    msgs = side_by_side_messages("A prompt.", "first story", "second story")
    assert len(msgs) == 1 and msgs[0]["role"] == "user"
    assert "[Story A]\nfirst story" in msgs[0]["content"]
    # the judge saw Y first: its "A" names Y; two orders of the same pair make a valid table
    rows = verdict_records({"Plot": "A", "Creativity": None}, prompt_id=0, first="Y/0",
                           second="X/0", judge="llm")
    rows += verdict_records({"Plot": "B", "Creativity": "same"}, prompt_id=0, first="X/0",
                            second="Y/0", judge="llm")
    table = validate_verdicts(pd.DataFrame(rows))
    assert table["winner"].tolist()[:2] == ["Y/0", "Y/0"]
    res = position_consistency(table)
    assert set(res["dimension"]) == {"Plot", "Creativity"}
    plot = res[res["dimension"] == "Plot"].iloc[0]
    assert plot["consistency"] == 1.0 and plot["reason"] == ""
    creativity = res[res["dimension"] == "Creativity"].iloc[0]
    assert np.isnan(creativity["consistency"]) and "both orders" in creativity["reason"]


def test_one_row_one_estimand_for_a_first_position_judge(tmp_path, capsys):
    """One verdict per pair, the human-preferred story shown first in 75% of 200 pairs, a
    judge that always picks the story shown first: its accuracy is k/n = 0.75 with the
    interval and the exact binomial test of k/n, and pairwise compare reports the same
    0.75; the balanced accuracy (0.5) is a separate column with its own interval."""
    from scipy import stats

    from storyeval.cli import main

    n = 200
    first = np.arange(n) < 150          # preferred story shown first in 150 pairs
    rows_h, rows_j = [], []
    for i in range(n):
        a, b = f"X/{i}", f"Y/{i}"       # humans prefer X
        rows_h.append((i, a, b, "Plot", "A", "AB"))
        order = "AB" if first[i] else "BA"
        rows_j.append((i, a, b, "Plot", "A" if first[i] else "B", order))  # picks the first
    human, judge = _v(rows_h, judge="human"), _v(rows_j, judge="first")
    judge2 = judge.assign(judge="coin", verdict=np.where(np.arange(n) % 2, "A", "B"))
    hp, jp = tmp_path / "h.csv", tmp_path / "j.csv"
    human.to_csv(hp, index=False)
    pd.concat([judge, judge2]).to_csv(jp, index=False)
    assert main(["pairwise", "accuracy", str(jp), "--reference", str(hp), "--format",
                 "json"]) == 0
    rows = {r["judge"]: r for r in json.loads(capsys.readouterr().out)}
    row = rows["first"]
    assert row["accuracy"] == pytest.approx(150 / 200)
    assert row["balanced_accuracy"] == pytest.approx(0.5)
    assert row["ci_low"] < row["accuracy"] < row["ci_high"]
    # beside the Wilson interval, the score test it inverts: z = 50 / sqrt(200 / 4)
    assert row["pvalue"] == pytest.approx(2 * stats.norm.sf(50 / np.sqrt(50)), rel=1e-9,
                                          abs=0)
    assert row["test"] == "score test" and row["method"] == "wilson"
    # always right when first, always wrong when second: every resample gives 0.5
    assert row["balanced_ci_low"] == pytest.approx(0.5) == row["balanced_ci_high"]
    assert main(["pairwise", "compare", str(jp), "--reference", str(hp), "--format",
                 "json"]) == 0
    comp = json.loads(capsys.readouterr().out)["comparisons"][0]
    got = {comp["judge_a"]: comp["accuracy_a"], comp["judge_b"]: comp["accuracy_b"]}
    assert got["first"] == pytest.approx(row["accuracy"])
    assert got["coin"] == pytest.approx(rows["coin"]["accuracy"])


def test_partial_tie_credit_names_the_score_test():
    from storyeval.pairwise.inference import binomial_accuracy

    assert binomial_accuracy(201, 301, interval="exact").test == "exact binomial"
    assert binomial_accuracy(200.5, 301, interval="exact").test == "score test"
    assert binomial_accuracy(201, 301).test == "score test"  # Wilson inverts the score test


def test_terminal_pvalues_keep_three_significant_digits():
    # the one p-value format of every command (issue 53): "< 0.001", never an exponent
    from storyeval.report.present import p_text

    assert [p_text(p) for p in (0.0498, 0.5, 1.0, 0.00123, 6.04e-9, float("nan"))] == \
        ["0.0498", "0.500", "1.00", "0.00123", "< 0.001", ""]
