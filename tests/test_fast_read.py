"""The fast path for large long score tables (storyeval.data.fast_scores, issue 40 item 2):
the same Dataset as the general reader on valid files, and on every invalid file the general
reader's own error (the fast path declines)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from storyeval.data import fast_scores, read_dataset
from storyeval.data.fast_scores import first_seen_codes, read_long_scores
from storyeval.exceptions import InputError

pytest.importorskip("pyarrow")

CRITERIA = ["Relevance", "Coherence"]


def _long(n_systems=4, n_prompts=30, n_metrics=3, seed=0, prompt=lambda p: p) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for m in [*CRITERIA, *[f"metric {k}" for k in range(n_metrics)]]:
        for s in range(n_systems):
            for p in range(n_prompts):
                value = rng.integers(1, 6) if m in CRITERIA else round(rng.normal(), 6)
                rows.append((f"sys-{s}", prompt(p), m, float(value)))
    return pd.DataFrame(rows, columns=["system", "prompt_id", "measure", "value"])


def _write(frame: pd.DataFrame, path, fmt: str) -> None:
    if fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False, sep="," if fmt == "csv" else "\t")


def _read(path, fast: bool, monkeypatch, **kw):
    monkeypatch.setattr(fast_scores, "FAST_MIN_BYTES", 0 if fast else 2**62)
    return read_dataset(path, criteria=CRITERIA, **kw)


def _same_dataset(a, b) -> None:
    pd.testing.assert_frame_equal(a.table, b.table, check_exact=True)
    pd.testing.assert_frame_equal(a.catalogue, b.catalogue, check_exact=True)
    assert (a.name, a.systems, a.criteria, a.reference_system) == \
        (b.name, b.systems, b.criteria, b.reference_system)


def _variants():
    base = _long()
    shuffled = base.sample(frac=1, random_state=3).reset_index(drop=True)
    missing = base.drop(index=[5, 77, 200]).reset_index(drop=True)  # stories lacking a measure
    blanks = base.copy()
    blanks.loc[[3, 90], "value"] = np.nan  # empty cells: missing values
    extra = base.assign(reason="", note="x")[["note", "system", "prompt_id", "reason",
                                               "measure", "value"]]
    text_ids = _long(prompt=lambda p: f"item-{p}")
    padded = _long(prompt=lambda p: f"{p:03d}")  # "007" is prompt 7, as pandas reads it
    mixed = _long(prompt=lambda p: f" {p}" if p % 2 else f"{p}x")  # text, stripped
    big_ids = _long(prompt=lambda p: 10**12 + 7919 * p)
    return {"plain": base, "shuffled": shuffled, "missing": missing, "blanks": blanks,
            "extra columns": extra, "text prompt ids": text_ids, "zero-padded ids": padded, "mixed text ids": mixed,
            "large ids": big_ids}


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet"])
@pytest.mark.parametrize("variant", sorted(_variants()))
def test_fast_path_gives_the_general_readers_dataset(tmp_path, monkeypatch, fmt, variant):
    frame = _variants()[variant]
    path = tmp_path / f"scores.{fmt}"
    _write(frame, path, fmt)
    fast, general = _read(path, True, monkeypatch), _read(path, False, monkeypatch)
    _same_dataset(fast, general)
    monkeypatch.setattr(fast_scores, "FAST_MIN_BYTES", 0)
    # the fast path read it; a CSV with other columns is left to the general reader, which
    # checks the encoding of every cell
    assert (read_long_scores(path, fmt) is not None) == (variant != "extra columns"
                                                          or fmt == "parquet")


def test_fast_path_declines_decimal_prompt_ids(tmp_path, monkeypatch):
    monkeypatch.setattr(fast_scores, "FAST_MIN_BYTES", 0)
    path = tmp_path / "s.csv"
    _long(prompt=lambda p: p + 0.5).to_csv(path, index=False)
    assert read_long_scores(path, "csv") is None  # pandas would write them back as floats
    _same_dataset(_read(path, True, monkeypatch), _read(path, False, monkeypatch))
    _long().to_csv(path, index=False)
    monkeypatch.setattr(fast_scores, "FAST_MIN_BYTES", 0)
    table, systems, prompts, measures = read_long_scores(path, "csv")
    assert systems == [f"sys-{s}" for s in range(4)] and prompts == list(range(30))
    assert measures == [*CRITERIA, "metric 0", "metric 1", "metric 2"]
    assert table.shape == (120, 5)


def _broken(kind: str) -> tuple[pd.DataFrame, str]:
    frame = _long().astype({"value": object, "system": object, "prompt_id": object})
    if kind == "duplicate":
        frame = pd.concat([frame, frame.iloc[[10]]], ignore_index=True)
    elif kind == "empty system":
        frame.loc[17, "system"] = None
    elif kind == "blank system":
        frame.loc[17, "system"] = "  "
    elif kind == "empty prompt":
        frame.loc[17, "prompt_id"] = None
    elif kind == "empty measure":
        frame.loc[17, "measure"] = None
    elif kind == "text value":
        frame.loc[17, "value"] = "high"
    elif kind == "infinite value":
        frame.loc[17, "value"] = float("inf")
    elif kind == "numeric systems":
        frame["system"] = frame["system"].str.replace("sys-", "0")  # "00", "01": pandas: 0, 1
    elif kind == "story with two prompts":
        frame.insert(0, "story_id", frame["system"] + "/" + frame["prompt_id"].astype(str))
        frame.loc[17, "story_id"] = frame.loc[18, "story_id"]
    return frame, kind


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("kind", ["duplicate", "empty system", "blank system", "empty prompt",
                                  "empty measure", "text value", "infinite value",
                                  "numeric systems", "story with two prompts"])
def test_invalid_files_get_the_general_readers_error(tmp_path, monkeypatch, fmt, kind):
    frame, _ = _broken(kind)
    if fmt == "parquet":
        if kind in ("text value",):
            pytest.skip("a Parquet column holds one type")
        frame = frame.convert_dtypes() if kind != "infinite value" else frame
        if kind == "infinite value":
            frame["value"] = frame["value"].astype(float)
    path = tmp_path / f"bad.{fmt}"
    _write(frame, path, fmt)
    monkeypatch.setattr(fast_scores, "FAST_MIN_BYTES", 0)
    if kind != "numeric systems":
        assert read_long_scores(path, fmt) is None
    messages = []
    for fast in (True, False):
        try:
            ds = _read(path, fast, monkeypatch)
            messages.append(("ok", ds.table.shape, list(ds.table.index.get_level_values(0)[:3])))
        except InputError as exc:
            messages.append(("error", str(exc)))
    assert messages[0] == messages[1]
    if kind not in ("numeric systems", "empty system", "empty prompt", "empty measure"):
        assert messages[0][0] == "error" and str(path) in messages[0][1]


def test_bom_and_other_encodings_go_to_the_general_reader(tmp_path, monkeypatch):
    monkeypatch.setattr(fast_scores, "FAST_MIN_BYTES", 0)
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + _long().to_csv(index=False).encode())
    assert read_long_scores(path, "csv") is None
    _same_dataset(_read(path, True, monkeypatch), _read(path, False, monkeypatch))
    latin = tmp_path / "latin.csv"
    latin.write_bytes(_long().replace({"sys-1": "sys-é"}).to_csv(index=False).encode("latin-1"))
    assert read_long_scores(latin, "csv") is None
    with pytest.raises(InputError, match="UTF-8"):
        _read(latin, True, monkeypatch)


@pytest.mark.parametrize("keys", [
    [0, 0, 1, 2, 1, 3],            # already in order of first appearance
    [3, 1, 3, 0, 2, 1, 0],         # any order
    [5, 5, 5],                     # a key range with gaps
    [],
])
def test_first_seen_codes_is_factorize(keys):
    keys = np.asarray(keys, dtype=np.int64)
    codes, seen = first_seen_codes(keys, int(keys.max(initial=-1)) + 1)
    want_codes, want_seen = pd.factorize(keys)
    assert codes.tolist() == want_codes.tolist() and seen.tolist() == list(want_seen)


def test_scale_page_table_is_the_benchmarks_json():
    # docs/generated/scale/read.md is what benchmarks/bench_read.py renders from its JSON
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("bench_read", root / "benchmarks" /
                                                  "bench_read.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    import json

    result = json.loads((root / "benchmarks" / "bench_read.json").read_text())
    assert (root / "docs" / "generated" / "scale" / "read.md").read_text() == bench.table(result)
    assert result["stories"] == 10**6 and result["measures"] == 16
    assert '--8<-- "generated/scale/read.md"' in (root / "docs" / "scale.md").read_text()


# --- issue 40 item 2, second round: regular layouts pivoted by reshaping, missing markers
# checked on dictionaries, several CSV blocks ----------------------------------------------

def _story_major(frame: pd.DataFrame) -> pd.DataFrame:
    order = {m: k for k, m in enumerate(pd.unique(frame["measure"]))}
    return frame.sort_values(["system", "prompt_id"], kind="stable").sort_values(
        ["system", "prompt_id", "measure"], key=lambda c: c.map(order) if c.name == "measure"
        else c, kind="stable").reset_index(drop=True)


def _layouts():
    base = _long()
    story = _story_major(base)
    reordered = base.copy()  # measure-major, but one measure lists the stories in another order
    block = reordered.index[reordered["measure"] == "metric 1"]
    reordered.loc[block] = reordered.loc[block[::-1]].to_numpy()
    one_measure = base[base["measure"] == "Relevance"].reset_index(drop=True)
    text_story = _story_major(_long(prompt=lambda p: f"item-{p}"))
    blanks = story.copy()
    blanks.loc[[4, 61], "value"] = np.nan
    return {"measure-major": base, "story-major": story, "reordered block": reordered,
            "one measure": one_measure, "story-major text ids": text_story,
            "story-major blanks": blanks}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("layout", sorted(_layouts()))
@pytest.mark.parametrize("block", [None, 2048])
def test_regular_layouts_and_blocks_give_the_general_readers_dataset(tmp_path, monkeypatch,
                                                                      fmt, layout, block):
    frame = _layouts()[layout]
    path = tmp_path / f"scores.{fmt}"
    if fmt == "parquet":
        frame.to_parquet(path, index=False, row_group_size=block or 10**6)
    else:
        _write(frame, path, fmt)
    if block:
        monkeypatch.setattr(fast_scores, "CSV_BLOCK_BYTES", block)
    criteria = ["Relevance"] if layout == "one measure" else CRITERIA
    datasets = []
    for fast in (True, False):
        monkeypatch.setattr(fast_scores, "FAST_MIN_BYTES", 0 if fast else 2**62)
        datasets.append(read_dataset(path, criteria=criteria))
    fast, general = datasets
    _same_dataset(fast, general)
    monkeypatch.setattr(fast_scores, "FAST_MIN_BYTES", 0)
    got = read_long_scores(path, fmt)
    assert got is not None and got[0].shape == (general.table.shape[0],
                                                 frame["measure"].nunique())


def test_regular_layout_is_recognised_only_when_every_block_agrees():
    from storyeval.data.fast_scores import _regular_layout

    system = np.repeat([0, 0, 1, 1], 1)
    prompt = np.array([0, 1, 0, 1])
    tiled = [np.tile(system, 3), np.tile(prompt, 3), np.repeat([0, 1, 2], 4)]
    assert _regular_layout(*tiled) == ("measure", 4)
    stories = [np.repeat(system, 3), np.repeat(prompt, 3), np.tile([2, 0, 1], 4)]
    assert _regular_layout(*stories) == ("story", 3)
    swapped = [k.copy() for k in tiled]
    swapped[1][8:10] = swapped[1][9:7:-1]  # the third block lists two stories the other way
    assert _regular_layout(*swapped) is None
    again = [k.copy() for k in tiled]
    again[2][8:] = 0  # a measure's block split in two
    assert _regular_layout(*again) is None
    uneven = [k[:-1] for k in tiled]
    assert _regular_layout(*uneven) is None


def _duplicated(layout: str) -> pd.DataFrame:
    """A file whose every block agrees (see `_regular_layout`) but which holds a story twice:
    in each measure's block, or as two blocks."""
    if layout == "story":
        story = _story_major(_long())
        return pd.concat([story, story.iloc[:5]], ignore_index=True)
    return _long(prompt=lambda p: 4 if p == 5 else p)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("kind", ["duplicate measure-major", "duplicate story-major",
                                  "NA system", "null measure", "n/a text prompt",
                                  "empty measure"])
def test_bad_regular_files_get_the_general_readers_error(tmp_path, monkeypatch, fmt, kind):
    if kind.startswith("duplicate"):
        frame = _duplicated(kind.split()[1].split("-")[0])
    else:
        if fmt == "parquet":
            pytest.skip("a Parquet text cell 'NA' is text, not a missing-value marker")
        frame = _long(prompt=lambda p: f"item-{p}" if kind == "n/a text prompt" else p)
        column = {"NA system": "system", "null measure": "measure",
                  "n/a text prompt": "prompt_id", "empty measure": "measure"}[kind]
        marker = {"NA system": "NA", "null measure": "null", "n/a text prompt": "n/a",
                  "empty measure": ""}[kind]
        frame[column] = frame[column].astype(object)
        frame.loc[33, column] = marker
    path = tmp_path / f"bad.{fmt}"
    _write(frame, path, fmt)
    monkeypatch.setattr(fast_scores, "FAST_MIN_BYTES", 0)
    assert read_long_scores(path, fmt) is None
    messages = []
    for fast in (True, False):
        with pytest.raises(InputError) as error:
            _read(path, fast, monkeypatch)
        messages.append(str(error.value))
    assert messages[0] == messages[1] and str(path) in messages[0]


def _reference_sort(table: pd.DataFrame, systems: list, prompts: list) -> pd.DataFrame:
    # sort_stories as it was: categorical codes of the level values, one per row
    if all(isinstance(p, (int, np.integer)) for p in prompts):
        prompts = sorted(prompts)
    level = table.index.get_level_values
    sys_codes = pd.Categorical(level("system"), categories=systems).codes
    prompt_codes = pd.Categorical(level("prompt_id"), categories=prompts).codes
    return table.iloc[np.lexsort((prompt_codes, sys_codes))]


@pytest.mark.parametrize("seed", range(6))
def test_sort_stories_and_same_prompts_on_codes_match_the_value_based_versions(seed):
    from storyeval.data.io import _same_prompt_sets, sort_stories

    rng = np.random.default_rng(seed)
    systems = [f"s{k}" for k in rng.permutation(4)]
    prompts = rng.permutation(12).tolist() if seed % 2 else [f"p{k}" for k in
                                                             rng.permutation(12)]
    pairs = [(s, p) for s in systems for p in prompts]
    keep = rng.permutation(len(pairs))[: len(pairs) - (seed % 3) * 5]  # some stories lacking
    rows = [pairs[k] for k in keep]
    index = pd.MultiIndex.from_tuples(rows, names=["system", "prompt_id"])
    if seed == 4:
        index = index[:-6]  # unused level values
    table = pd.DataFrame({"x": np.arange(len(index), dtype=float)}, index=index)
    pd.testing.assert_frame_equal(sort_stories(table, systems, prompts),
                                  _reference_sort(table, systems, prompts))
    sets = pd.Series(index.get_level_values("prompt_id")).groupby(
        index.get_level_values("system"), sort=False).agg(frozenset)
    assert _same_prompt_sets(index) == (sets.nunique() == 1)
    flat = table.reset_index().set_index("system")  # no MultiIndex: decided on the values
    assert _same_prompt_sets(flat.index) is False
