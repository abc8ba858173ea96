"""Pairwise accuracy of pointwise measures on a user's own data: human preferences derived from
long ratings (any criterion names, string or integer prompt ids, ragged annotators) or given as a
preference file; checked against plain per-pair loops written here, and through the CLI."""

from __future__ import annotations

import io
import itertools
import json
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from storyeval.cli import main
from storyeval.data import read_dataset
from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.pairwise import (
    pointwise_pairwise_accuracy,
    preference_accuracy,
    read_preferences,
    story_index,
    validate_preferences,
)

SYSTEMS = ["alpha", "beta", "gamma", "delta"]
CRITERIA = ["Fun", "Clarity"]
MEASURES = ["m_good", "m_reversed", "m_coarse", "m_holes"]


def _prompts(kind: str) -> list:
    return [f"item-{k:02d}" for k in range(20)] if kind == "str" else list(range(100, 120))


def _synthetic(kind: str = "str", seed: int = 7, drop: tuple = ()):
    """Long ratings (1 to 3 annotators per story and criterion, out of 7) and long scores of
    4 systems x 20 prompts; ``drop`` lists (system, prompt) stories left out of both."""
    rng = np.random.default_rng(seed)
    ratings, scores = [], []
    for system, prompt in itertools.product(SYSTEMS, _prompts(kind)):
        if (system, prompt) in drop:
            continue
        quality = rng.normal()
        for crit in CRITERIA:
            for who in rng.choice(7, size=rng.integers(1, 4), replace=False):
                value = int(np.clip(np.round(3 + quality + rng.normal(scale=0.8)), 1, 5))
                ratings.append((system, prompt, crit, f"r{who}", value))
        story = f"{system}/{prompt}"
        holes = np.nan if rng.random() < 0.15 else quality + rng.normal(scale=0.5)
        for name, value in (("m_good", quality + rng.normal(scale=0.5)),
                            ("m_reversed", -quality + rng.normal(scale=0.5)),
                            ("m_coarse", float(np.round(quality))), ("m_holes", holes)):
            scores.append((story, name, value))
    return (pd.DataFrame(ratings, columns=["system", "prompt_id", "criterion", "annotator",
                                           "value"]),
            pd.DataFrame(scores, columns=["story_id", "measure", "value"]))


def _write(tmp_path, kind: str = "str", drop: tuple = ()):
    ratings, scores = _synthetic(kind, drop=drop)
    paths = tmp_path / "ratings.csv", tmp_path / "scores.csv"
    ratings.to_csv(paths[0], index=False)
    scores.to_csv(paths[1], index=False)
    return paths, ratings, scores


def _lookups(ratings: pd.DataFrame, scores: pd.DataFrame):
    """Plain dicts: story -> criterion -> mean rating, and (story, measure) -> score."""
    sums: dict = defaultdict(list)
    for row in ratings.itertuples(index=False):
        sums[(f"{row.system}/{row.prompt_id}", row.criterion)].append(row.value)
    human = {key: sum(v) / len(v) for key, v in sums.items()}
    score = {(row.story_id, row.measure): row.value for row in scores.itertuples(index=False)}
    return human, score


def _tally(outcomes, n_missing, human_ties, credit):
    """Accuracy and counts from (h, m) signs of the pairs with scores."""
    total, n, n_mtie, n_htie = 0.0, 0, 0, 0
    for h, m in outcomes:
        n_htie += h == 0
        if human_ties == "exclude" and h == 0:
            continue
        n += 1
        n_mtie += m == 0
        if human_ties == "exclude":
            total += 1.0 if m == h else (credit if m == 0 else 0.0)
        else:
            total += float(m == h)
    return {"accuracy": total / n, "n_pairs": n, "n_human_ties": n_htie,
            "n_measure_ties": n_mtie, "n_missing": n_missing}


def _loop_ratings(ratings, scores, measure, criterion, human_ties="exclude", credit=0.5):
    """Reference: every pair of stories of one prompt, one at a time."""
    human, score = _lookups(ratings, scores)
    outcomes, missing = [], 0
    stories = ratings[["system", "prompt_id"]].drop_duplicates()
    for prompt, group in stories.groupby("prompt_id"):
        for s1, s2 in itertools.combinations(list(group["system"]), 2):
            a, b = f"{s1}/{prompt}", f"{s2}/{prompt}"
            vals = [human[(a, criterion)], human[(b, criterion)], score[(a, measure)],
                    score[(b, measure)]]
            if any(np.isnan(v) for v in vals):
                missing += 1
                continue
            outcomes.append((np.sign(vals[0] - vals[1]), np.sign(vals[2] - vals[3])))
    return _tally(outcomes, missing, human_ties, credit)


def _loop_preferences(prefs: pd.DataFrame, scores, measure, criterion, human_ties="exclude",
                      credit=0.5):
    """Reference: votes per unordered pair, then one pair at a time."""
    _, score = _lookups(pd.DataFrame(columns=["system", "prompt_id", "criterion", "value"]),
                        scores)
    votes: dict = defaultdict(int)
    for row in prefs.itertuples(index=False):
        if getattr(row, "criterion", "preference").lower() != criterion.lower():
            continue
        w = str(row.winner).lower()
        e = 1 if w in ("a", row.story_a.lower()) else -1 if w in ("b", row.story_b.lower()) else 0
        lo, hi = sorted([row.story_a, row.story_b])
        votes[(lo, hi)] += e if row.story_a == lo else -e
    outcomes, missing = [], 0
    for (lo, hi), net in votes.items():
        x, y = score[(lo, measure)], score[(hi, measure)]
        if np.isnan(x) or np.isnan(y):
            missing += 1
            continue
        outcomes.append((np.sign(net), np.sign(x - y)))
    return _tally(outcomes, missing, human_ties, credit)


def _preferences(kind: str = "str", seed: int = 3, n: int = 150) -> pd.DataFrame:
    """Random preferences: pairs within and across prompts, 1-3 annotators, both orders,
    winners as a / B / Tie / the winning story's id, criteria in any case."""
    rng = np.random.default_rng(seed)
    ratings, _ = _synthetic(kind)
    stories = [f"{s}/{p}" for s, p in ratings[["system", "prompt_id"]].drop_duplicates()
               .itertuples(index=False)]
    rows = []
    for _ in range(n):
        a, b = rng.choice(stories, size=2, replace=False)
        crit = ["Fun", "clarity", "FUN"][rng.integers(3)]
        for who in rng.choice(5, size=rng.integers(1, 4), replace=False):
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            winner = [first, "a", "B", "Tie", second][rng.integers(5)]
            rows.append((first, second, winner, crit, f"p{who}"))
    frame = pd.DataFrame(rows, columns=["story_a", "story_b", "winner", "criterion",
                                        "annotator"])
    # an annotator judges a pair once per criterion (whatever the case of its name)
    key = frame.assign(criterion=frame["criterion"].str.lower(),
                       lo=frame[["story_a", "story_b"]].min(axis=1),
                       hi=frame[["story_a", "story_b"]].max(axis=1))
    return frame[~key.duplicated(["criterion", "annotator", "lo", "hi"])].reset_index(drop=True)


def _check(res_row, expected):
    assert res_row["accuracy"] == pytest.approx(expected["accuracy"], abs=1e-12)
    for col in ("n_pairs", "n_human_ties", "n_measure_ties", "n_missing"):
        assert int(res_row[col]) == expected[col], col


# --------------------------------------------------------------------------- from ratings

@pytest.mark.parametrize("kind", ["str", "int"])
@pytest.mark.parametrize("human_ties, credit", [("exclude", 0.5), ("exclude", 0.0),
                                                ("include", 0.5)])
def test_accuracy_from_ratings_matches_loop(tmp_path, kind, human_ties, credit):
    (rpath, spath), ratings, scores = _write(tmp_path, kind)
    ds = read_dataset(rpath, scores=[spath])
    assert ds.criteria == CRITERIA
    assert all(isinstance(p, str if kind == "str" else int) for p in ds.prompts)
    pairs = [(m, c) for m in MEASURES for c in CRITERIA]
    res = pointwise_pairwise_accuracy(ds.wide(), pairs, human_ties=human_ties,
                                      tie_credit=credit)
    for k, (m, c) in enumerate(pairs):
        _check(res.iloc[k], _loop_ratings(ratings, scores, m, c, human_ties, credit))
    # 20 prompts x 6 pairs of systems; m_holes leaves pairs out, the others none
    assert (res["n_pairs"] + res["n_human_ties"] * (human_ties == "exclude")
            + res["n_missing"] == 120).all()
    assert (res.loc[res["measure"] != "m_holes", "n_missing"] == 0).all()
    good = res[res["measure"] == "m_good"]["accuracy"]
    assert (good > 0.6).all()
    assert (res[res["measure"] == "m_reversed"]["accuracy"] < 0.4).all()  # not flipped


def test_accuracy_from_unbalanced_ratings(tmp_path):
    drop = (("delta", "item-03"), ("beta", "item-11"))
    (rpath, spath), ratings, scores = _write(tmp_path, drop=drop)
    ds = read_dataset(rpath, scores=[spath], require_same_prompts=False)
    res = pointwise_pairwise_accuracy(ds.wide(), [("m_good", "Fun"), ("m_holes", "Clarity")])
    _check(res.iloc[0], _loop_ratings(ratings, scores, "m_good", "Fun"))
    _check(res.iloc[1], _loop_ratings(ratings, scores, "m_holes", "Clarity"))
    # a prompt with a missing story has 3 pairs, not 6; absent stories are not "missing"
    assert res.loc[0, "n_pairs"] + res.loc[0, "n_human_ties"] == 120 - 2 * 3
    assert res.loc[0, "n_missing"] == 0


# --------------------------------------------------------------------------- from preferences

@pytest.mark.parametrize("kind", ["str", "int"])
@pytest.mark.parametrize("human_ties, credit", [("exclude", 0.5), ("exclude", 1.0),
                                                ("include", 0.5)])
def test_preference_accuracy_matches_loop(tmp_path, kind, human_ties, credit):
    (rpath, spath), _, scores = _write(tmp_path, kind)
    ds = read_dataset(rpath, scores=[spath])
    prefs = _preferences(kind)
    prefs["criterion"] = prefs["criterion"].str.lower()
    res = preference_accuracy(ds.wide(), prefs, MEASURES, human_ties=human_ties,
                              tie_credit=credit)
    assert list(res.columns) == ["measure", "criterion", "accuracy", "n_pairs", "n_human_ties",
                                 "n_measure_ties", "n_missing", "human_ties", "tie_credit"]
    assert len(res) == len(MEASURES) * 2 and set(res["criterion"]) == {"fun", "clarity"}
    for row in res.to_dict("records"):
        _check(row, _loop_preferences(prefs, scores, row["measure"], row["criterion"],
                                      human_ties, credit))
    crossing = prefs["story_a"].str.split("/").str[1] != prefs["story_b"].str.split("/").str[1]
    assert crossing.any()  # pairs across prompts are allowed


def test_preference_majority_and_explicit_pairs():
    idx = pd.MultiIndex.from_product([["A", "B", "C"], ["p"]], names=["system", "prompt_id"])
    wide = pd.DataFrame({"x": [3.0, 2.0, 1.0], "y": [1.0, 1.0, 2.0]}, index=idx)
    prefs = pd.DataFrame({
        # A vs B: 2 votes for A (one listed as B-A), 1 for B -> A preferred
        "story_a": ["A/p", "B/p", "A/p", "A/p", "C/p", "B/p", "C/p"],
        "story_b": ["B/p", "A/p", "B/p", "C/p", "A/p", "C/p", "B/p"],
        "winner": ["a", "b", "B/p", "A/p", "a", "tie", "TIE"],
        "annotator": ["u1", "u2", "u3", "u1", "u2", "u1", "u2"]})
    # A vs C: one vote each -> a draw, a human tie; B vs C: two ties -> a human tie
    res = preference_accuracy(wide, prefs, ["x", ("y", "preference")])
    assert res[["measure", "criterion"]].values.tolist() == [["x", "preference"],
                                                             ["y", "preference"]]
    assert res["n_pairs"].tolist() == [1, 1] and res["n_human_ties"].tolist() == [2, 2]
    assert res["accuracy"].tolist() == [1.0, 0.5]  # y ties A and B: tie credit
    inc = preference_accuracy(wide, prefs, ["x", "y"], human_ties="include")
    # include: x orders every pair (right on A-B only); y ties A-B (wrong), orders B-C, A-C
    assert inc["accuracy"].tolist() == pytest.approx([1 / 3, 0.0])
    ties = prefs.assign(winner="tie")
    with pytest.warns(UndefinedStatisticWarning, match="undefined"):
        res = preference_accuracy(wide, ties, ["x"])
    assert np.isnan(res.loc[0, "accuracy"]) and res.loc[0, "n_human_ties"] == 3
    with pytest.raises(InputError, match="criterion 'Fun' has no preferences"):
        preference_accuracy(wide, prefs, [("x", "Fun")])
    with pytest.raises(InputError, match="not in the score table"):
        preference_accuracy(wide, prefs, ["z"])


@pytest.mark.parametrize("mutate, message", [
    (lambda f: f.drop(columns="winner"), "missing column(s) ['winner']"),
    (lambda f: f.assign(winner=["a", "maybe", "b"]), "line 3: column 'winner' has 'maybe'"),
    (lambda f: f.assign(story_b=["B/p", "A/p", "C/p"]), "line 4: story_a and story_b are the "
                                                       "same story 'C/p'"),
    (lambda f: f.assign(story_a=["A/p", "Z/p", "C/p"]), "line 3: column 'story_a': story "
                                                       "'Z/p' is not in the data"),
    (lambda f: f.assign(story_b=["B/p", "B/p", None]), "line 4: column 'story_b' is empty"),
    (lambda f: f.assign(annotator="u1", story_b=["B/p", "A/p", "A/p"]),
     "line 2 and line 3: annotator 'u1' judged the pair 'A/p' / 'B/p' twice"),
    (lambda f: f.iloc[:0], "no rows"),
])
def test_preference_validation_names_file_and_line(mutate, message):
    idx = pd.MultiIndex.from_product([["A", "B", "C"], ["p"]], names=["system", "prompt_id"])
    good = pd.DataFrame({"story_a": ["A/p", "B/p", "C/p"], "story_b": ["B/p", "A/p", "A/p"],
                         "winner": ["a", "tie", "A/p"]})
    clean = validate_preferences(good, source="prefs.csv", fmt="csv",
                                 story_ids=story_index(pd.DataFrame(index=idx)))
    assert clean["winner"].tolist() == ["a", "tie", "b"]
    assert clean.equals(validate_preferences(clean))  # idempotent
    with pytest.raises(InputError) as info:
        validate_preferences(mutate(good), source="prefs.csv", fmt="csv",
                             story_ids=["A/p", "B/p", "C/p"])
    text = str(info.value)
    assert "prefs.csv" in text and message in text, text


@pytest.mark.parametrize("suffix", [".tsv", ".jsonl", ".parquet"])
def test_read_preferences_formats(tmp_path, suffix):
    prefs = pd.DataFrame({"story_a": ["A/1"], "story_b": ["B/2"], "winner": ["A"]})
    path = tmp_path / f"prefs{suffix}"
    if suffix == ".tsv":
        prefs.to_csv(path, sep="\t", index=False)
    elif suffix == ".jsonl":
        prefs.to_json(path, orient="records", lines=True)
    else:
        prefs.to_parquet(path)
    got = read_preferences(path, story_ids=["A/1", "B/2"])
    assert got.to_dict("records") == [{"story_a": "A/1", "story_b": "B/2", "winner": "a",
                                       "criterion": "preference"}]
    with pytest.raises(InputError, match=f"prefs{suffix}, (line|row) \\d+: column 'story_b'"):
        read_preferences(path, story_ids=["A/1"])


# --------------------------------------------------------------------------- CLI

def _csv(capsys) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


@pytest.mark.parametrize("kind", ["str", "int"])
def test_cli_pointwise_on_user_ratings(tmp_path, capsys, kind):
    (rpath, spath), ratings, scores = _write(tmp_path, kind)
    argv = ["pairwise", "pointwise", "--data", str(rpath), "--scores", str(spath)]
    assert main([*argv, "--format", "csv"]) == 0
    res = _csv(capsys)
    assert sorted(zip(res["measure"], res["criterion"])) == sorted(
        itertools.product(MEASURES, CRITERIA))
    for row in res.to_dict("records"):
        _check(row, _loop_ratings(ratings, scores, row["measure"], row["criterion"]))
    assert main([*argv, "--metrics", "m_good", "--criteria", "clarity", "--human-ties",
                 "include", "--format", "json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    assert (rec["measure"], rec["criterion"], rec["human_ties"]) == ("m_good", "Clarity",
                                                                     "include")
    _check(rec, _loop_ratings(ratings, scores, "m_good", "Clarity", "include"))
    assert main([*argv, "--metrics", "m_good"]) == 0
    text = capsys.readouterr().out
    assert "ties: human ties left out; a measure tie on a human-decided pair earns 0.5" in text
    assert "lower-is-better measures are not flipped" in text


def test_cli_pointwise_with_preference_file(tmp_path, capsys):
    (rpath, spath), _, scores = _write(tmp_path)
    prefs = _preferences()
    ppath = tmp_path / "prefs.csv"
    prefs.to_csv(ppath, index=False)
    argv = ["pairwise", "pointwise", "--data", str(rpath), "--scores", str(spath),
            "--preferences", str(ppath)]
    assert main([*argv, "--format", "csv"]) == 0
    res = _csv(capsys)
    # criterion names of the file resolve to the dataset's (case-insensitively)
    assert set(res["criterion"]) == {"Fun", "Clarity"} and len(res) == 8
    for row in res.to_dict("records"):
        _check(row, _loop_preferences(prefs, scores, row["measure"], row["criterion"]))
    assert main([*argv, "--criteria", "FUN", "--metrics", "m_coarse", "--tie-credit", "0",
                 "--format", "json"]) == 0
    (rec,) = json.loads(capsys.readouterr().out)
    _check(rec, _loop_preferences(prefs, scores, "m_coarse", "Fun", credit=0.0))
    assert main([*argv, "--metrics", "m_good"]) == 0
    assert f"against: human preferences of {ppath}" in capsys.readouterr().out
    # no criterion column: one overall preference
    overall = tmp_path / "overall.jsonl"
    prefs.drop(columns=["criterion", "annotator"]).to_json(overall, orient="records",
                                                           lines=True)
    assert main([*argv[:-1], str(overall), "--metrics", "m_good", "--format", "csv"]) == 0
    res = _csv(capsys)
    assert res["criterion"].tolist() == ["preference"]
    _check(res.iloc[0], _loop_preferences(prefs.drop(columns="criterion"), scores, "m_good",
                                          "preference"))


def test_cli_preferences_and_reference_system(tmp_path, capsys):
    (rpath, spath), _, _ = _write(tmp_path)
    ppath = tmp_path / "prefs.csv"
    pd.DataFrame({"story_a": ["beta/item-01", "alpha/item-02"],
                  "story_b": ["gamma/item-01", "beta/item-02"],
                  "winner": ["a", "b"]}).to_csv(ppath, index=False)
    argv = ["pairwise", "pointwise", "--data", str(rpath), "--scores", str(spath),
            "--reference-system", "alpha", "--preferences", str(ppath), "--format", "csv"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{ppath}, line 3: column 'story_a': story 'alpha/item-02' is not in the data" in err
    assert "--include-human-stories" in err
    assert main([*argv, "--include-human-stories"]) == 0
    assert _csv(capsys)["n_pairs"].max() == 2
    # without preferences the reference system's stories are left out: 3 systems, 3 pairs each
    assert main(argv[:-4] + ["--metrics", "m_good", "--criteria", "Fun", "--format",
                             "csv"]) == 0
    row = _csv(capsys).iloc[0]
    assert row["n_pairs"] + row["n_human_ties"] == 20 * 3


@pytest.mark.parametrize("rows, message", [
    ({"story_a": ["beta/item-01"], "story_b": ["gamma/item-01"]},
     "missing column(s) ['winner']"),
    ({"story_a": ["beta/item-01", "beta/item-02"], "story_b": ["gamma/item-01", "beta/item-02"],
      "winner": ["a", "b"]}, "line 3: story_a and story_b are the same story 'beta/item-02'"),
    ({"story_a": ["beta/item-01", "beta/item-02"], "story_b": ["gamma/item-01", "gamma/x"],
      "winner": ["a", "b"]}, "line 3: column 'story_b': story 'gamma/x' is not in the data"),
    ({"story_a": ["beta/item-01"], "story_b": ["gamma/item-01"], "winner": ["first"]},
     "line 2: column 'winner' has 'first': use a, b, tie"),
    ({"story_a": ["beta/item-01"], "story_b": ["gamma/item-01"], "winner": ["a"],
      "criterion": ["Fun"]}, None),
])
def test_cli_bad_preference_files_exit_2(tmp_path, capsys, rows, message):
    (rpath, spath), _, _ = _write(tmp_path)
    ppath = tmp_path / "bad prefs.csv"
    pd.DataFrame(rows).to_csv(ppath, index=False)
    argv = ["pairwise", "pointwise", "--data", str(rpath), "--scores", str(spath),
            "--preferences", str(ppath)]
    if message is None:  # a criterion the file lacks
        assert main([*argv, "--criteria", "Clarity"]) == 2
        assert "has no preferences about 'Clarity'" in capsys.readouterr().err
        return
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(ppath) in err and message in err, err


def test_cli_pointwise_usage_errors(tmp_path, capsys):
    (rpath, spath), _, _ = _write(tmp_path)
    base = ["pairwise", "pointwise", "--data", str(rpath), "--scores", str(spath)]
    assert main([*base, "--criteria", "Pacing"]) == 2
    assert "unknown criterion 'Pacing'" in capsys.readouterr().err
    assert main([*base, "--metrics", "m_goodd"]) == 2
    assert "m_good" in capsys.readouterr().err
    assert main([*base, "--preferences", str(tmp_path / "absent.csv")]) == 2
    assert "absent.csv" in capsys.readouterr().err
