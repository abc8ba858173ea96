"""`storyeval pairwise from-scores`: per-story ratings and scores turned into a verdict file that
the other pairwise commands read; `verdicts_from_scores` with a tie margin.

Expected verdicts are counted by hand from the small files below (the story scored higher
wins); the accuracy of the written verdicts is checked against `pairwise pointwise`, which
computes the same estimand from the scores directly.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.pairwise.from_scores import verdicts_from_scores
from storyeval.pairwise.verdicts import read_verdicts

SYSTEMS = ("A", "B", "C")
PROMPTS = range(6)
#: one annotator's Overall rating per story (1-5 scale: ties happen)
RATING = {(s, p): 1 + (3 * p + 2 * i + p * i) % 5 for i, s in enumerate(SYSTEMS)
          for p in PROMPTS}
#: an automatic score per story
SCORE = {(s, p): round(0.1 * ((7 * p + 3 * i) % 10), 1) for i, s in enumerate(SYSTEMS)
         for p in PROMPTS}


def _ratings(two: bool = False) -> str:
    rows = ["system,prompt_id,criterion,annotator,value"]
    for (s, p), v in RATING.items():
        rows.append(f"{s},{p},Overall,h1,{v}")
        if two:
            rows.append(f"{s},{p},Overall,h2,{1 + (v + p) % 5}")
    return "\n".join(rows) + "\n"


def _scores() -> str:
    return "story_id,measure,value\n" + "".join(f"{s}/{p},judge,{v}\n"
                                                for (s, p), v in SCORE.items())


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {"ratings.csv": tmp_path / "ratings.csv", "scores.csv": tmp_path / "scores.csv",
           "dir": tmp_path}
    out["ratings.csv"].write_text(_ratings(), encoding="utf-8")
    out["scores.csv"].write_text(_scores(), encoding="utf-8")
    return out


def _run(files, *extra: str, out: str = "v.csv") -> int:
    return main(["pairwise", "from-scores", "--data", str(files["ratings.csv"]), "--scores",
                 str(files["scores.csv"]), "--out", str(files["dir"] / out), *extra])


def _expected(values: dict, margin: float = 0.0) -> dict[tuple[int, str, str], str]:
    """By hand: every pair of systems within a prompt, the higher score wins."""
    out = {}
    for p in PROMPTS:
        for i, a in enumerate(SYSTEMS):
            for b in SYSTEMS[i + 1:]:
                d = values[(a, p)] - values[(b, p)]
                out[(p, f"{a}/{p}", f"{b}/{p}")] = "A" if d > margin else (
                    "B" if d < -margin else "same")
    return out


def _written(path: Path) -> dict[tuple[int, str, str], str]:
    table = pd.read_csv(path)
    return {(int(p), a, b): v for p, a, b, v in
            zip(table["prompt_id"], table["story_a"], table["story_b"], table["verdict"])}


def test_metric_and_human_verdicts_are_the_hand_counted_ones(files, capsys):
    assert _run(files, "--metrics", "judge", out="judge.csv") == 0
    assert _run(files, "--humans", out="humans.csv") == 0
    err = capsys.readouterr().err
    assert "wrote 18 verdicts" in err and "tie margin 0" in err
    assert _written(files["dir"] / "judge.csv") == _expected(SCORE)
    assert _written(files["dir"] / "humans.csv") == _expected(RATING)
    judge = pd.read_csv(files["dir"] / "judge.csv")
    assert set(judge["judge"]) == {"judge"} and set(judge["dimension"]) == {"Overall"}
    assert set(judge["order"]) == {"AB"}


def test_tie_margin_turns_close_scores_into_ties(files, capsys):
    assert _run(files, "--humans", "--tie-margin", "1", out="h1.csv") == 0
    assert _written(files["dir"] / "h1.csv") == _expected(RATING, margin=1.0)
    same = sum(v == "same" for v in _expected(RATING, margin=1.0).values())
    assert same > sum(v == "same" for v in _expected(RATING).values())  # the margin mattered


def test_annotators_are_one_judge_each(files, capsys):
    files["ratings.csv"].write_text(_ratings(two=True), encoding="utf-8")
    assert _run(files, "--humans", out="h.csv") == 0
    table = pd.read_csv(files["dir"] / "h.csv")
    assert sorted(set(table["judge"])) == ["annotator h1", "annotator h2"]
    assert len(table) == 2 * 18


@pytest.mark.filterwarnings("ignore::storyeval.exceptions.FewClustersWarning")  # 6 prompts
def test_the_verdict_file_feeds_strengths_accuracy_and_compare(files, capsys):
    assert _run(files, "--metrics", "judge", out="judge.csv") == 0
    assert _run(files, "--humans", out="humans.csv") == 0
    judge, humans = files["dir"] / "judge.csv", files["dir"] / "humans.csv"
    read_verdicts(judge)  # a valid verdict file
    assert main(["pairwise", "strengths", str(judge), "--resamples", "20"]) == 0
    capsys.readouterr()
    assert main(["pairwise", "accuracy", str(judge), "--reference", str(humans),
                 "--tie-credit", "0.5", "--interval", "none", "--format", "csv"]) == 0
    accuracy = float(capsys.readouterr().out.splitlines()[1].split(",")[2])
    # the same estimand computed from the scores directly (one annotator: the criterion score)
    assert main(["pairwise", "pointwise", "--data", str(files["ratings.csv"]), "--scores",
                 str(files["scores.csv"]), "--metrics", "judge", "--format", "csv"]) == 0
    pointwise = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert accuracy == pytest.approx(float(pointwise["accuracy"].iloc[0]), abs=1e-12)
    two = pd.concat([pd.read_csv(judge), pd.read_csv(humans).assign(judge="copy")])
    two.to_csv(files["dir"] / "two.csv", index=False)
    assert main(["pairwise", "compare", str(files["dir"] / "two.csv"), "--reference",
                 str(humans)]) == 0


# ------------------------------------------------------------------------- damaged input
def _empty(text: str) -> str:
    return ""


def _header_only(text: str) -> str:
    return text.splitlines()[0] + "\n"


def _cut(text: str) -> str:
    head, last = text.rstrip("\n").rsplit("\n", 1)
    return head + "\n" + last[:last.index(",") + 1]


def _duplicate(text: str) -> str:
    lines = text.splitlines()
    return "\n".join([*lines, lines[1]]) + "\n"


def _bad_value(text: str) -> str:
    lines = text.splitlines()
    cells = lines[2].split(",")
    cells[-1] = "high"
    lines[2] = ",".join(cells)
    return "\n".join(lines) + "\n"


DAMAGED = [("ratings.csv", _empty, None), ("ratings.csv", _header_only, None),
           ("ratings.csv", _cut, "line 19"), ("ratings.csv", _duplicate, None),
           ("ratings.csv", _bad_value, "line 3"),
           ("scores.csv", _empty, None), ("scores.csv", _header_only, None),
           ("scores.csv", _cut, "line 19"), ("scores.csv", _duplicate, None),
           ("scores.csv", _bad_value, "line 3")]


@pytest.mark.parametrize("name,damage,where", DAMAGED,
                         ids=[f"{n}-{d.__name__.strip('_')}" for n, d, _ in DAMAGED])
def test_damaged_input_is_one_line_naming_the_file(files, capsys, name, damage, where):
    path = files[name]
    path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    code = _run(files, "--metrics", "judge")
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (out, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("storyeval pairwise: error: "), lines[0]
    assert name in lines[0], lines[0]
    if where is not None:
        assert where in lines[0], lines[0]
    assert not (files["dir"] / "v.csv").exists()  # nothing written


@pytest.mark.parametrize("extra,says", [
    (["--metrics", "jduge"], "judge"),                   # did you mean
    (["--metrics", "judge", "--tie-margin", "-1"], "--tie-margin"),
    (["--metrics", "judge", "--tie-margin", "nan"], "--tie-margin"),
    (["--metrics", "judge", "--criteria", "Fluency"], "Fluency"),
])
def test_bad_options_are_one_line(files, capsys, extra, says):
    code = _run(files, *extra)
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_out_must_be_a_csv_file(files, capsys):
    assert _run(files, "--metrics", "judge", out=".") == 2
    assert _run(files, "--metrics", "judge", out="v.json") == 2
    assert "*.csv" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [["--metrics", "judge", "--humans"], []])
def test_humans_and_metrics_are_exclusive(files, capsys, extra):
    with pytest.raises(SystemExit) as stop:  # a usage error of the parser
        _run(files, *extra)
    assert stop.value.code == 2
    assert "--humans" in capsys.readouterr().err


def test_an_existing_file_is_replaced_whole(files, capsys):
    target = files["dir"] / "v.csv"
    target.write_text("old\n", encoding="utf-8")
    assert _run(files, "--metrics", "judge") == 0
    assert _written(target) == _expected(SCORE)


# ------------------------------------------------------------------------- library
def _wide(values: np.ndarray) -> pd.DataFrame:
    n_sys, n_prompts = values.shape
    idx = pd.MultiIndex.from_product([[f"s{i}" for i in range(n_sys)], range(n_prompts)],
                                     names=["system", "prompt_id"])
    return pd.DataFrame({"m": values.ravel()}, index=idx)


def test_library_tie_margin_checks():
    wide = _wide(np.array([[1.0, 2.0], [1.5, 2.0]]))
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(InputError, match="tie_margin"):
            verdicts_from_scores(wide, "m", tie_margin=bad)
    out = verdicts_from_scores(wide, "m", tie_margin=0.5)
    assert list(out["verdict"]) == ["same", "same"]
    assert list(verdicts_from_scores(wide, "m", tie_margin=0.4)["verdict"]) == ["B", "same"]


scores = st.lists(st.integers(0, 4), min_size=6, max_size=6).map(
    lambda v: np.array(v, dtype=float).reshape(3, 2))


@settings(max_examples=40, deadline=None)
@given(scores, st.sampled_from([0.0, 0.5, 1.0, 2.0]))
def test_negated_scores_swap_the_winners(values, margin):
    a = verdicts_from_scores(_wide(values), "m", tie_margin=margin)
    b = verdicts_from_scores(_wide(-values), "m", tie_margin=margin)
    swap = {"A": "B", "B": "A", "same": "same"}
    assert list(b["verdict"]) == [swap[v] for v in a["verdict"]]


@settings(max_examples=40, deadline=None)
@given(scores, st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from([0.5, 1.0, 3.0]))
def test_a_larger_margin_only_adds_ties(values, margin, extra):
    a = verdicts_from_scores(_wide(values), "m", tie_margin=margin)["verdict"]
    b = verdicts_from_scores(_wide(values), "m", tie_margin=margin + extra)["verdict"]
    changed = a.to_numpy() != b.to_numpy()
    assert (b.to_numpy()[changed] == "same").all()


@settings(max_examples=30, deadline=None)
@given(scores, st.randoms(use_true_random=False))
def test_row_order_does_not_change_the_verdicts(values, rnd):
    wide = _wide(values)
    order = list(range(len(wide)))
    rnd.shuffle(order)
    a = verdicts_from_scores(wide, "m")
    b = verdicts_from_scores(wide.iloc[order], "m")
    key = ["prompt_id", "system_a", "system_b"]
    # a pair may be written (b, a) in another row order: compare as unordered outcomes
    def canon(t: pd.DataFrame) -> set:
        return {(p, *sorted([(x, v), (y, {"A": "B", "B": "A"}.get(v, v))]))
                for p, x, y, v in zip(t["prompt_id"], t["system_a"], t["system_b"],
                                      t["verdict"])}
    assert canon(a) == canon(b) and len(a) == len(b)
    del key
