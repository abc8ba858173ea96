"""Joining score files to a dataset without their long table (storyeval.data.load
.join_score_files, issue 49 item 2): the same Dataset, errors and warnings as the long merge
(``read_score_files`` then ``Dataset.with_scores``) and as a plain pandas pivot, through the
fast reader (`storyeval.data.fast_scores`) and the general one."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storyeval.data import fast_scores, read_dataset, read_score_files
from storyeval.data.catalogue import infer_catalogue, merge_catalogues
from storyeval.data.dataset import long_to_wide, story_id_array
from storyeval.data.ids import make_story_id
from storyeval.data.load import read_human_table
from storyeval.exceptions import InputError

pytest.importorskip("pyarrow")


def _ratings(stories: list[tuple[str, object]], seed: int = 0) -> pd.DataFrame:
    """Long human ratings (two annotators, one criterion) of ``stories``."""
    rng = np.random.default_rng(seed)
    rows = [(s, p, "Quality", f"w{a}", float(rng.integers(1, 6)))
            for s, p in stories for a in range(2)]
    return pd.DataFrame(rows, columns=["system", "prompt_id", "criterion", "annotator",
                                       "value"])


def _scores(stories, measures, seed=0, keep=1.0) -> pd.DataFrame:
    """Long scores of ``stories`` x ``measures`` (a random share ``keep`` of the cells),
    values rounded so that every parser reads them back alike."""
    rng = np.random.default_rng(seed)
    rows = [(s, p, m, round(float(rng.normal()), 6)) for m in measures for s, p in stories
            if rng.random() < keep]
    return pd.DataFrame(rows, columns=["system", "prompt_id", "measure", "value"])


def _stories(n_systems=3, n_prompts=8, prompt=lambda p: p):
    return [(f"sys-{s}", prompt(p)) for s in range(n_systems) for p in range(n_prompts)]


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False, sep="\t" if path.suffix == ".tsv" else ",")
    return path


def _read(ratings: Path, scores: list[Path], fast: bool):
    """read_dataset with the fast reader on (every size) or off, and its warnings."""
    with mock.patch.object(fast_scores, "FAST_MIN_BYTES", 0 if fast else 2**62), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = read_dataset(ratings, scores=scores)
    return dataset, [str(w.message) for w in caught]


def _long_merge(ratings: Path, scores: list[Path]):
    """The long merge: every file's long table concatenated, checked and joined by
    Dataset.with_scores (the general reader only)."""
    with mock.patch.object(fast_scores, "FAST_MIN_BYTES", 2**62), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dataset = read_human_table(ratings).with_scores(
            read_score_files(scores), source=", ".join(map(str, scores)))
    return dataset, [str(w.message) for w in caught]


def _pivot_reference(ratings: Path, long: pd.DataFrame) -> pd.DataFrame:
    """The joined table by a plain pandas pivot of the known long table (inner join on the
    story ids ``SYSTEM/PROMPT``, new measures sorted after the dataset's columns)."""
    base = read_human_table(ratings)
    new = long.assign(story_id=[make_story_id(s, p) for s, p in
                                zip(long["system"], long["prompt_id"])]) \
        .pivot(index="story_id", columns="measure", values="value")
    own = pd.Index([make_story_id(s, p) for s, p in base.table.index])
    aligned = new.reindex(own).set_axis(base.table.index, axis=0)
    return pd.concat([base.table, aligned.astype(float)], axis=1).loc[np.asarray(
        own.isin(new.index))]


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.table, b.table, check_exact=False, rtol=1e-15)
    pd.testing.assert_frame_equal(a.catalogue, b.catalogue)
    assert (a.name, a.systems, a.criteria, a.measures) == (b.name, b.systems, b.criteria,
                                                           b.measures)


def _variants() -> dict[str, tuple[list, pd.DataFrame]]:
    stories = _stories()
    base = _scores(stories, ["m-b", "m-a", "Zeta", "ärger"])
    text = _stories(prompt=lambda p: f"item-{p}")
    return {
        "plain": (stories, base),
        "shuffled": (stories, base.sample(frac=1, random_state=1)),
        "missing cells": (stories, _scores(stories, ["m-b", "m-a", "ärger"], keep=0.7)),
        "empty values": (stories, base.assign(value=base["value"].where(
            np.arange(len(base)) % 7 != 3))),
        "fewer stories": (stories, base[~base["system"].eq("sys-2")]),  # a dropped system
        "text prompt ids": (text, _scores(text, ["m-b", "m-a"]).sample(frac=1,
                                                                         random_state=2)),
    }


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
@pytest.mark.parametrize("variant", sorted(_variants()))
def test_join_is_the_long_merge_and_the_pandas_pivot(tmp_path, suffix, variant):
    stories, long = _variants()[variant]
    ratings = _write(_ratings(stories), tmp_path / "ratings.csv")
    scores = _write(long, tmp_path / f"scores{suffix}")
    merged, merged_warnings = _long_merge(ratings, [scores])
    pd.testing.assert_frame_equal(merged.table, _pivot_reference(ratings, long),
                                  check_exact=False, rtol=1e-15)
    for fast in (True, False):
        got, got_warnings = _read(ratings, [scores], fast)
        _same(got, merged)
        assert got_warnings == merged_warnings  # the dropped stories, the partial measures


def test_the_fast_reader_reads_the_file(tmp_path):
    """The property tests below compare the fast path with the general one: make sure it is
    taken (a plain long table) and declines a file it must leave to the general reader."""
    stories = _stories()
    path = _write(_scores(stories, ["a", "b"]), tmp_path / "scores.csv")
    with mock.patch.object(fast_scores, "FAST_MIN_BYTES", 0):
        assert fast_scores.read_long_scores_counted(path, "csv") is not None
        dup = _write(pd.concat([_scores(stories, ["a"])] * 2), tmp_path / "dup.csv")
        assert fast_scores.read_long_scores_counted(dup, "csv") is None


def test_counts_are_rows_per_measure_with_empty_values_counted(tmp_path):
    stories = _stories()
    long = _scores(stories, ["b", "a"], keep=0.6)
    long.loc[long.index[:3], "value"] = np.nan  # rows with an empty value still count
    path = _write(long.sample(frac=1, random_state=0), tmp_path / "scores.csv")
    with mock.patch.object(fast_scores, "FAST_MIN_BYTES", 0):
        *_, measures, counts = fast_scores.read_long_scores_counted(path, "csv")
    expected = pd.read_csv(path).groupby("measure", sort=False).size()
    assert measures == expected.index.tolist()
    assert counts.tolist() == expected.tolist()


def test_several_files_with_distinct_measures(tmp_path):
    stories = _stories(n_prompts=10)
    ratings = _write(_ratings(stories), tmp_path / "ratings.csv")
    one = _write(_scores(stories, ["b", "x"], seed=1), tmp_path / "one.csv")
    # another file covering part of the stories, in another format
    two = _write(_scores(stories[:20], ["a", "c"], seed=2), tmp_path / "two.parquet")
    merged, merged_warnings = _long_merge(ratings, [one, two])
    for fast in (True, False):
        got, got_warnings = _read(ratings, [one, two], fast)
        _same(got, merged)
        assert got_warnings == merged_warnings
    assert merged.measures[-4:] == ["a", "b", "c", "x"]  # sorted, as the pivot has them


def test_files_sharing_a_measure_are_merged_long(tmp_path):
    """A measure split over two files by stories is joined; a (story, measure) in both is the
    long merge's error naming both files."""
    stories = _stories(n_prompts=10)
    ratings = _write(_ratings(stories), tmp_path / "ratings.csv")
    long = _scores(stories, ["a", "b"])
    first = _write(long.iloc[:30], tmp_path / "first.csv")
    rest = _write(long.iloc[30:], tmp_path / "rest.csv")
    merged, _ = _long_merge(ratings, [first, rest])
    for fast in (True, False):
        _same(_read(ratings, [first, rest], fast)[0], merged)
        again = _write(long.iloc[25:], tmp_path / "again.csv")
        with pytest.raises(InputError, match="is in both .*first.csv and .*again.csv"):
            _read(ratings, [first, again], fast)


def test_story_id_files_and_dataframes_join_as_the_long_merge(tmp_path):
    """Scores given by ``story_id`` alone (a file) and as a DataFrame go through the general
    reader and the same wide join."""
    stories = _stories()
    ratings = _write(_ratings(stories), tmp_path / "ratings.csv")
    long = _scores(stories, ["b", "a"], keep=0.8)
    by_id = long.assign(story_id=[make_story_id(s, p) for s, p in
                                  zip(long["system"], long["prompt_id"])])
    ids_file = _write(by_id[["story_id", "measure", "value"]], tmp_path / "ids.csv")
    frame = _scores(stories, ["c"], seed=3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        expected = read_human_table(ratings).with_scores(
            read_score_files([ids_file, frame]), source=f"{ids_file}, DataFrame")
    for fast in (True, False):
        with mock.patch.object(fast_scores, "FAST_MIN_BYTES", 0 if fast else 2**62), \
                warnings.catch_warnings(record=True) as got_warnings:
            warnings.simplefilter("always")
            got = read_dataset(ratings, scores=[ids_file, frame])
        _same(got, expected)
        assert [str(w.message) for w in got_warnings] == [str(w.message) for w in caught]


def test_stories_not_in_the_dataset_are_the_same_error(tmp_path):
    stories = _stories()
    ratings = _write(_ratings(stories[:16]), tmp_path / "ratings.csv")
    scores = _write(_scores(stories, ["a"]), tmp_path / "scores.csv")
    with pytest.raises(InputError) as general:
        _long_merge(ratings, [scores])
    assert "8 story_id(s) in the new scores are not in dataset" in str(general.value)
    assert "systems ['sys-2'] have no stories" in str(general.value)
    for fast in (True, False):
        with pytest.raises(InputError) as got:
            _read(ratings, [scores], fast)
        assert str(got.value) == str(general.value)


def test_a_measure_already_in_the_dataset_is_an_error(tmp_path):
    stories = _stories()
    ratings = _write(_ratings(stories), tmp_path / "ratings.csv")
    scores = _write(_scores(stories, ["Quality", "a"]), tmp_path / "scores.csv")
    for fast in (True, False):
        with pytest.raises(InputError, match="repeat measures already in the dataset: "
                                             r"\['Quality'\]"):
            _read(ratings, [scores], fast)


def test_a_file_cut_at_a_line_is_joined_with_the_same_warnings(tmp_path):
    """Nothing silently dropped: the stories and measures the cut file lacks are named in
    the same warnings by both paths."""
    stories = _stories()
    ratings = _write(_ratings(stories), tmp_path / "ratings.csv")
    path = _write(_scores(stories, ["a", "b"]), tmp_path / "scores.csv")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[: len(lines) - 5]))
    merged, merged_warnings = _long_merge(ratings, [path])
    assert any("have scores for fewer" in w for w in merged_warnings)
    for fast in (True, False):
        got, got_warnings = _read(ratings, [path], fast)
        _same(got, merged)
        assert got_warnings == merged_warnings


@pytest.mark.parametrize("damage", ["cut", "header only", "empty", "duplicated rows",
                                    "text value", "empty measure", "missing column"])
def test_damaged_score_files_give_the_general_readers_error(tmp_path, damage):
    stories = _stories()
    ratings = _write(_ratings(stories), tmp_path / "ratings.csv")
    path = tmp_path / "scores.csv"
    long = _scores(stories, ["a", "b"])
    _write(long, path)
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    if damage == "cut":  # inside a row, after its system and prompt: no measure
        middle = "".join(lines[: len(lines) // 2])
        path.write_text(middle + lines[len(lines) // 2].split(",b,")[0].split(",a,")[0])
    elif damage == "header only":
        path.write_text(lines[0])
    elif damage == "empty":
        path.write_text("")
    elif damage == "duplicated rows":
        path.write_text("".join(lines + lines[5:7]))
    elif damage == "text value":
        path.write_text("".join(lines[:9] + ["sys-0,3,b,high\n"] + lines[9:]))
    elif damage == "empty measure":
        lines[4] = "sys-0,3,,0.5\n"
        path.write_text("".join(lines))
    else:
        _write(long.drop(columns="measure"), path)
    messages = []
    for fast in (True, False):
        with pytest.raises(InputError) as got:
            _read(ratings, [path], fast)
        messages.append(str(got.value))
    assert messages[0] == messages[1]
    assert "\n" not in messages[0] and str(path) in messages[0]
    if damage in ("duplicated rows", "text value", "empty measure"):
        assert "line " in messages[0]  # the row, as the file numbers it
    if damage in ("text value", "empty measure"):
        assert ("'value'" if damage == "text value" else "'measure'") in messages[0]


@pytest.mark.parametrize("prompt", [lambda p: p, lambda p: f"p{p}", lambda p: np.int64(p)])
def test_story_id_array_is_make_story_id(prompt):
    index = pd.MultiIndex.from_tuples([(f"s{s}", prompt(p)) for s in (2, 0, 1)
                                       for p in (3, 1, 2)], names=["system", "prompt_id"])
    expected = [make_story_id(s, p) for s, p in index]
    assert story_id_array(index).tolist() == expected
    assert story_id_array(index[::-2]).tolist() == expected[::-2]  # a subset of the levels
    assert story_id_array(pd.Index(list(index))).tolist() == expected  # plain tuples


def test_long_to_wide_is_the_pandas_pivot():
    rng = np.random.default_rng(4)
    long = pd.DataFrame({"story_id": [f"s/{i % 7}" for i in range(40)],
                         "measure": [f"m{i // 7}" for i in range(40)],
                         "value": rng.normal(size=40)}).sample(frac=1, random_state=5)
    pivot = long.pivot(index="story_id", columns="measure", values="value")
    wide = long_to_wide(long)
    pd.testing.assert_frame_equal(wide.loc[pivot.index], pivot, check_exact=True)
    assert set(wide.index) == set(pivot.index)


# ----- properties on random tables --------------------------------------------------------

# names of systems and measures: letters from several scripts, spaces, punctuation that a CSV
# quotes (comma, double quote), a slash; a letter first (a name of digits alone is a number to
# pandas) and no blank at either end (the readers' stripping is tested in test_fast_read)
_CHARS = st.sampled_from(list("abcXYZ019 -_.,\"/é中Жß") + ["\U0001F600"])
_NAME = st.builds(lambda first, rest: (first + rest).rstrip(),
                  st.sampled_from(list("aZéЖ中")), st.text(_CHARS, max_size=6))


@st.composite
def _tables(draw):
    systems = draw(st.lists(_NAME, min_size=1, max_size=4, unique=True))
    text_ids = draw(st.booleans())
    prompts = draw(st.lists(st.integers(0, 10**6), min_size=2, max_size=5, unique=True))
    prompts = [f"q{p}" for p in prompts] if text_ids else prompts
    measures = draw(st.lists(_NAME, min_size=1, max_size=4, unique=True))
    stories = [(s, p) for s in systems for p in prompts]
    cells = [(s, p, m) for s, p in stories for m in measures]
    kept = draw(st.lists(st.booleans(), min_size=len(cells), max_size=len(cells)))
    rows = [c for c, k in zip(cells, kept) if k] or cells[:1]
    values = draw(st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False)
                                     .map(lambda v: round(v, 4))),
                           min_size=len(rows), max_size=len(rows)))
    long = pd.DataFrame([(*r, np.nan if v is None else v) for r, v in zip(rows, values)],
                        columns=["system", "prompt_id", "measure", "value"])
    order = draw(st.permutations(range(len(long))))
    duplicate = draw(st.sampled_from([None, *range(len(long))]))
    return stories, long.iloc[list(order)].reset_index(drop=True), duplicate


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_tables(), st.sampled_from([".csv", ".tsv", ".parquet"]))
def test_random_tables_join_as_the_pandas_pivot(table, suffix):
    """Random names (several scripts, quoted characters), prompt ids (numbers or text), cells
    left out, empty values, row order; a duplicated row is the general reader's error on both
    paths (the pivot refuses it too)."""
    stories, long, duplicate = table
    if duplicate is not None:
        long = pd.concat([long, long.iloc[[duplicate]]], ignore_index=True)
    with tempfile.TemporaryDirectory() as folder:
        ratings = _write(_ratings(stories), Path(folder) / "ratings.csv")
        scores = _write(long, Path(folder) / f"scores{suffix}")
        if duplicate is not None:
            with pytest.raises(ValueError):  # the reference refuses it as well
                _pivot_reference(ratings, long)
            messages = []
            for fast in (True, False):
                with pytest.raises(InputError, match="duplicate score for story") as got:
                    _read(ratings, [scores], fast)
                messages.append(str(got.value))
            assert messages[0] == messages[1]
            return
        expected = _pivot_reference(ratings, long)
        base = read_human_table(ratings)
        catalogue = merge_catalogues(base.catalogue, infer_catalogue(
            expected.columns[len(base.measures):], criteria=base.criteria))
        results = [_read(ratings, [scores], fast) for fast in (True, False)]
    for got, _ in results:
        pd.testing.assert_frame_equal(got.table, expected, check_exact=False, rtol=1e-15)
        pd.testing.assert_frame_equal(got.catalogue, catalogue)
    assert results[0][1] == results[1][1]  # the same warnings


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a/1", "a/2", "b/1", "中/1"]),
                          st.sampled_from(["m", "n", "ü"])), min_size=1, max_size=30))
def test_duplicated_pairs_is_pandas_duplicated(pairs):
    from storyeval.data.load import _duplicated_pairs

    frame = pd.DataFrame(pairs, columns=["story_id", "measure"])
    expected = frame.duplicated(["story_id", "measure"], keep=False)
    got = _duplicated_pairs(frame["story_id"], frame["measure"])
    assert got.tolist() == expected.tolist()
