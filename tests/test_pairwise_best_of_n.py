"""Best-of-N accuracy (RewardBench 2's one-chosen-three-rejected sets, LitBench pairs) against a
per-set Python loop; the files read as is; damaged files; invariances."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.pairwise.best_of_n import (
    best_of_n_accuracy,
    best_of_n_stories,
    is_best_of_n_table,
    read_best_of_n,
    validate_best_of_n,
)


def _sets(n=12, n_rej=3, seed=0, shared_prompts=False):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": [f"q{i}" for i in range(n)],
        "prompt": [f"prompt {i // 3 if shared_prompts else i}" for i in range(n)],
        "chosen": [[f"good story {i}"] for i in range(n)],
        "rejected": [[f"bad story {i} {k} {rng.integers(9)}" for k in range(n_rej)]
                     for i in range(n)],
        "subset": ["Focus" if i % 2 else "Factuality" for i in range(n)],
        "num_correct": 1})


def _scores(sets, seed=1, ties=False):
    rng = np.random.default_rng(seed)
    stories = best_of_n_stories(validate_best_of_n(sets))
    vals = rng.integers(0, 3, len(stories)) if ties else rng.normal(size=len(stories))
    return pd.DataFrame({"m": vals.astype(float), "n": -vals.astype(float)},
                        index=pd.Index(stories["story_id"], name="story_id"))


def _loop(sets, wide, m):
    """Per set: every chosen above every rejected (strict)."""
    hits = []
    for i, row in sets.reset_index(drop=True).iterrows():
        sid = row["id"]
        c = [wide.loc[f"chosen-{k}/{sid}", m] for k in range(len(row["chosen"]))]
        r = [wide.loc[f"rejected-{k}/{sid}", m] for k in range(len(row["rejected"]))]
        hits.append(min(c) > max(r))
    return float(np.mean(hits))


@pytest.mark.parametrize("ties", [False, True])
def test_best_of_n_equals_a_loop(ties):
    sets = _sets()
    wide = _scores(sets, ties=ties)
    res = best_of_n_accuracy(sets, wide, interval="none")
    allrows = res[res["subset"] == "all"].set_index("measure")
    for m in ("m", "n"):
        assert allrows.loc[m, "accuracy"] == pytest.approx(_loop(sets, wide, m))
        assert allrows.loc[m, "chance"] == pytest.approx(0.25)  # 1 / C(4, 1)
    sub = res[res["subset"] == "Focus"].set_index("measure")
    focus = sets[sets["subset"] == "Focus"]
    assert sub.loc["m", "accuracy"] == pytest.approx(_loop(focus, wide, "m"))


def test_pairs_are_rm_accuracy_with_chance_one_half():
    # LitBench's pair format: one chosen and one rejected text per row
    sets = pd.DataFrame({"prompt": ["p1", "p2", "p3", "p4"],
                         "chosen_story": ["a", "b", "c", "d"],
                         "rejected_story": ["e", "f", "g", "h"]})
    wide = pd.DataFrame({"rm": [2.0, 1.0, 0.0, 0.5, 1.0, 1.0, 3.0, 0.5]},
                        index=["chosen-0/0", "chosen-0/1", "chosen-0/2", "chosen-0/3",
                               "rejected-0/0", "rejected-0/1", "rejected-0/2", "rejected-0/3"])
    res = best_of_n_accuracy(sets, wide, interval="wilson")
    # r_chosen > r_rejected: 2>1 yes, 1>1 no (tie), 0>3 no, 0.5>0.5 no -> 1/4
    assert res.loc[0, "accuracy"] == 0.25 and res.loc[0, "chance"] == 0.5
    assert res.loc[0, "method"] == "wilson"


def test_interval_clusters_sets_sharing_a_prompt():
    sets = _sets(n=30, shared_prompts=True)
    res = best_of_n_accuracy(sets, _scores(sets), interval="auto")
    row = res.iloc[0]
    assert row["method"] == "cluster-t" and row["n_clusters"] == 10
    assert row["ci_low"] <= row["accuracy"] <= row["ci_high"]


def test_missing_score_leaves_the_set_out():
    sets = _sets(n=6)
    wide = _scores(sets).drop(index="rejected-2/q3")
    res = best_of_n_accuracy(sets, wide, ["m"], interval="none")
    assert res.loc[0, "n_sets"] == 5 and res.loc[0, "n_missing"] == 1


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 15))
def test_invariances(seed, n):
    sets = _sets(n=n, seed=seed)
    wide = _scores(sets, seed=seed)
    base = best_of_n_accuracy(sets, wide, ["m"], interval="none")["accuracy"].to_numpy()
    # a strictly increasing transform of the scores changes nothing
    mono = best_of_n_accuracy(sets, np.exp(wide), ["m"], interval="none")
    np.testing.assert_allclose(mono["accuracy"], base)
    # reordering the sets and renaming them changes nothing
    perm = np.random.default_rng(seed).permutation(n)
    renamed = sets.iloc[perm].assign(id=lambda d: "z" + d["id"])
    wide2 = wide.rename(index=lambda s: s.replace("/q", "/zq"))
    again = best_of_n_accuracy(renamed, wide2, ["m"], interval="none")
    np.testing.assert_allclose(again.set_index("subset").loc[["all", "Focus", "Factuality"],
                                                             "accuracy"].dropna(),
                               pd.Series(base, index=best_of_n_accuracy(
                                   sets, wide, ["m"], interval="none")["subset"])
                               .reindex(["all", "Focus", "Factuality"]).dropna())


def _write_jsonl(path, sets):
    path.write_text("".join(json.dumps(r) + "\n" for r in sets.to_dict("records")))


def test_rewardbench2_jsonl_read_as_is(tmp_path):
    sets = _sets(n=4)
    _write_jsonl(tmp_path / "rb2.jsonl", sets)
    got = read_best_of_n(tmp_path / "rb2.jsonl")
    assert got["rejected"].map(len).tolist() == [3] * 4
    assert is_best_of_n_table(sets.columns)


@pytest.mark.parametrize("damage,match", [
    ("empty", "empty"), ("header_only", "no rows"), ("cut", "line"),
    ("duplicate", "given twice"), ("empty_list", "empty list"), ("no_prompt", "prompt"),
])
def test_damaged_files(tmp_path, damage, match):
    sets = _sets(n=3)
    path = tmp_path / "rb2.jsonl"
    lines = [json.dumps(r) for r in sets.to_dict("records")]
    if damage == "empty":
        path.write_text("")
    elif damage == "header_only":
        path = tmp_path / "rb2.csv"
        path.write_text("id,prompt,chosen,rejected\n")
    elif damage == "cut":
        path.write_text("\n".join(lines)[:-15] + "\n")
    elif damage == "duplicate":
        path.write_text("\n".join(lines + lines[:1]) + "\n")
    elif damage == "empty_list":
        bad = json.loads(lines[1])
        bad["rejected"] = []
        path.write_text("\n".join([lines[0], json.dumps(bad)]) + "\n")
    else:
        bad = json.loads(lines[0])
        bad["prompt"] = ""
        path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=match):
        read_best_of_n(path)


def test_cli_score_then_pointwise(tmp_path, capsys):
    sets = _sets(n=8)
    rb2 = tmp_path / "rb2.jsonl"
    _write_jsonl(rb2, sets)
    out = tmp_path / "scores.csv"
    assert main(["score", "--input", str(rb2), "--metrics", "surface", "--surface-tokenizer",
                 "regex", "--out", str(out), "--no-progress"]) == 0
    scores = pd.read_csv(out)
    assert set(scores["story_id"]) == set(best_of_n_stories(validate_best_of_n(sets))
                                          ["story_id"])
    capsys.readouterr()
    assert main(["pairwise", "pointwise", "--preferences", str(rb2), "--scores", str(out),
                 "--format", "csv"]) == 0
    got = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    wide = scores.pivot(index="story_id", columns="measure", values="value")
    m = got["measure"].iloc[0]
    assert got["accuracy"].iloc[0] == pytest.approx(_loop(sets, wide, m))
    assert got["seed"].iloc[0] == 0 and math.isclose(got["chance"].iloc[0], 0.25)


def test_cli_best_of_n_needs_scores(tmp_path, capsys):
    rb2 = tmp_path / "rb2.jsonl"
    _write_jsonl(rb2, _sets(n=3))
    assert main(["pairwise", "pointwise", "--preferences", str(rb2)]) == 2
    assert "best-of-N file" in capsys.readouterr().err
