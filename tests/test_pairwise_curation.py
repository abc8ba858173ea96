"""LitBench's pair curation on synthetic stories whose kept pairs are known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storyeval.cli import main
from storyeval.exceptions import InputError
from storyeval.pairwise.curation import curate_pairs, length_debias


def _words(n):
    return " ".join(["word"] * n)


def _hand():
    # prompt p1: s1 (100 up, t=5, 60 words), s2 (50 up, t=1, 80 words), s3 (9 up: dropped),
    #            s4 (90 up, t=9, 40 words: too few words)
    # prompt p2: s5 (20 up, t=2), s6 (18 up, t=1): gap 0.1 < 0.25 -> dropped
    #            s7 (40 up, t=0): chosen over s5 (gap 0.5) but posted earlier -> dropped;
    #            chosen over s6 (gap 0.55) but posted earlier -> dropped
    return pd.DataFrame({
        "story_id": ["s1", "s2", "s3", "s4", "s5", "s6", "s7"],
        "prompt_id": ["p1", "p1", "p1", "p1", "p2", "p2", "p2"],
        "story": [_words(60), _words(80), _words(70), _words(40), _words(55), _words(56),
                  _words(57)],
        "upvotes": [100, 50, 9, 90, 20, 18, 40],
        "timestamp": [5, 1, 3, 9, 2, 1, 0]})


def test_hand_counted_steps():
    res = curate_pairs(_hand(), length_debias_bins=None)
    rep = res.report.set_index("step")
    assert rep.loc["min_upvotes", "removed"] == 1          # s3
    assert rep.loc["max_tokens", "removed"] == 0
    assert rep.loc["min_words", "removed"] == 1            # s4
    assert rep.loc["pairs", "after"] == 1 + 3              # (s1,s2) + 3 pairs of p2
    assert rep.loc["min_upvote_gap", "removed"] == 1       # (s5,s6)
    assert rep.loc["later_winner", "removed"] == 2         # s7 posted first
    assert res.pairs[["story_a", "story_b", "winner"]].values.tolist() == [["s1", "s2", "a"]]
    # s1 (60 words) chosen over s2 (80): the chosen story is shorter
    assert rep.loc["later_winner", "chosen_longer"] == 0.0


def test_filters_can_be_turned_off():
    res = curate_pairs(_hand(), min_upvotes=None, min_words=None, min_upvote_gap=None,
                       later_winner=False, length_debias_bins=None)
    n = [4, 3]  # stories per prompt
    assert len(res.pairs) == sum(k * (k - 1) // 2 for k in n)
    assert (res.report["removed"] == 0).all()


def test_max_tokens_uses_the_given_counts():
    df = _hand().assign(n_tokens=[10, 3000, 10, 10, 10, 10, 10])
    res = curate_pairs(df, length_debias_bins=None)
    assert res.report.set_index("step").loc["max_tokens", "removed"] == 1
    assert "column n_tokens" in res.report.set_index("step").loc["max_tokens", "setting"]


def _biased(n_pairs=2000, share=0.6525, seed=0):
    """Pairs (two stories per prompt, all passing the story and pair filters) whose chosen
    story is longer in ``share`` of them."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_pairs):
        longer = rng.random() < share
        a, b = rng.integers(60, 900, 2)
        lc, lr = (max(a, b), min(a, b)) if longer else (min(a, b), max(a, b))
        if lc == lr:
            lc += 1 if longer else -1
        rows += [(f"c{i}", f"p{i}", _words(int(lc)), 100, 10),
                 (f"r{i}", f"p{i}", _words(int(lr)), 20, 1)]
    return pd.DataFrame(rows, columns=["story_id", "prompt_id", "story", "upvotes",
                                       "timestamp"])


def test_length_debias_reaches_one_half_and_a_symmetric_histogram():
    res = curate_pairs(_biased(), max_tokens=None)
    rep = res.report.set_index("step")
    assert rep.loc["pairs", "chosen_longer"] == pytest.approx(0.65, abs=0.03)
    assert rep.loc["length_debias", "chosen_longer"] == 0.5
    d = (res.pairs["chosen_words"] - res.pairs["rejected_words"]).to_numpy()
    pre = curate_pairs(_biased(), max_tokens=None, length_debias_bins=None).pairs
    top = np.abs(pre["chosen_words"] - pre["rejected_words"]).max()  # the buckets' range
    k = np.minimum(np.ceil(np.abs(d) / top * 50) - 1, 49)  # bucket of |d|, 50 per side
    pos = np.bincount(k[d > 0].astype(int), minlength=50)
    neg = np.bincount(k[d < 0].astype(int), minlength=50)
    np.testing.assert_array_equal(pos, neg)  # every mirrored pair of buckets balanced
    assert rep.loc["length_debias", "after"] == len(res.pairs) > 1000


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(-50, 50), min_size=1, max_size=60), st.integers(0, 99))
def test_debias_invariants(diffs, seed):
    pairs = pd.DataFrame({"chosen_words": np.array(diffs) + 100, "rejected_words": 100})
    kept = length_debias(pairs, bins=10, seed=seed)
    d = (kept["chosen_words"] - kept["rejected_words"]).to_numpy()
    assert (d > 0).sum() == (d < 0).sum()                   # balanced
    assert (d == 0).sum() == (np.array(diffs) == 0).sum()   # equal lengths all kept
    if np.any(np.array(diffs) != 0):
        top = np.abs(np.array(diffs)[np.array(diffs) != 0]).max()
        k = np.minimum(np.ceil(np.abs(d[d != 0]) / top * 5) - 1, 4)
        for b in range(5):  # per mirrored bucket pair: as many on each side
            assert ((k == b) & (d[d != 0] > 0)).sum() == ((k == b) & (d[d != 0] < 0)).sum()
    again = length_debias(pairs, bins=10, seed=seed)
    assert again.index.equals(kept.index)                   # seeded


def test_dates_as_timestamps():
    df = _hand().assign(timestamp=pd.to_datetime(_hand()["timestamp"], unit="D")
                        .dt.strftime("%Y-%m-%d"))
    res = curate_pairs(df, length_debias_bins=None)
    assert res.pairs["story_a"].tolist() == ["s1"]


@pytest.mark.parametrize("damage,match", [
    ("empty", "empty"), ("header_only", "no rows"), ("cut", "column"),
    ("duplicate", "given twice"), ("bad_upvotes", "upvotes"), ("bad_time", "timestamp"),
])
def test_damaged_files(tmp_path, damage, match):
    df = _hand()
    path = tmp_path / "stories.csv"
    text = df.to_csv(index=False)
    lines = text.splitlines()
    if damage == "empty":
        text = ""
    elif damage == "header_only":
        text = lines[0] + "\n"
    elif damage == "cut":
        text = "\n".join(lines[:3] + [lines[3].split(",")[0]]) + "\n"
    elif damage == "duplicate":
        text = "\n".join(lines + lines[1:2]) + "\n"
    elif damage == "bad_upvotes":
        text = text.replace(",100,5", ",many,5")
    else:
        text = text.replace(",100,5", ",100,yesterday-ish")
    path.write_text(text)
    rc = main(["pairwise", "prepare", "--stories", str(path), "--out",
               str(tmp_path / "pairs.csv")])
    assert rc == 2
    assert not (tmp_path / "pairs.csv").exists()
    with pytest.raises(InputError, match=match):
        from storyeval.data.io import read_table

        frame, fmt = read_table(path)
        curate_pairs(frame, source=str(path), fmt=fmt)


def test_cli_prepare_writes_pairs_and_report(tmp_path, capsys):
    src = tmp_path / "stories.csv"
    _biased(400).to_csv(src, index=False)
    out, rep = tmp_path / "pairs.csv", tmp_path / "report.csv"
    assert main(["pairwise", "prepare", "--stories", str(src), "--out", str(out),
                 "--report", str(rep), "--max-tokens", "none"]) == 0
    text = capsys.readouterr().out
    assert "-> 50.00% kept" in text and "random seed 0" in text
    pairs, report = pd.read_csv(out), pd.read_csv(rep)
    lib = curate_pairs(_biased(400), max_tokens=None)
    assert pairs["story_a"].tolist() == lib.pairs["story_a"].tolist()
    assert report["after"].tolist() == lib.report["after"].tolist()
    # the kept pairs are a preference file and a best-of-N file at once
    from storyeval.pairwise.best_of_n import read_best_of_n
    from storyeval.pairwise.preferences import read_preferences

    assert len(read_preferences(out)) == len(pairs) == len(read_best_of_n(out))
