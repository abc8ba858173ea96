"""Hardening (issue 16): malformed inputs give one clear line and exit 2, correlations are exact
at any magnitude, outputs are never half-written, a join never drops stories silently."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from storyeval.cli import main
from storyeval.exceptions import DroppedStoriesWarning, InputError

SYSTEMS = ("A", "B", "C")
PROMPTS = range(8)


# ----------------------------------------------------------------------------- fixtures
def _ratings() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = [{"system": s, "prompt_id": p, "criterion": "Overall", "annotator": a,
             "value": int(rng.integers(1, 6))}
            for s in SYSTEMS for p in PROMPTS for a in ("r1", "r2")]
    return pd.DataFrame(rows)


def _scores() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    return pd.DataFrame({"story_id": [f"{s}/{p}" for s in SYSTEMS for p in PROMPTS],
                         "measure": "m", "value": rng.normal(size=len(SYSTEMS) * len(PROMPTS))})


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    """A valid ratings file and score file, and a folder to put broken copies in."""
    ratings, scores = tmp_path / "ratings.csv", tmp_path / "scores.csv"
    _ratings().to_csv(ratings, index=False)
    _scores().to_csv(scores, index=False)
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text("prompt_id,story_a,story_b,dimension,verdict,order\n"
                        "0,A/0,B/0,Overall,A,AB\n0,A/0,B/0,Overall,B,BA\n", encoding="utf-8")
    return {"ratings": ratings, "scores": scores, "verdicts": verdicts, "dir": tmp_path}


def _meta(data: Path, scores: Path, *extra: str) -> list[str]:
    return ["meta", "--data", str(data), "--scores", str(scores), "--metrics", "m",
            "--reference", "none", "--levels", "overall", *extra]


def _latin1(path: Path) -> Path:
    path.write_bytes("story_id,measure,value\nA/0,café,0.5\n".encode("latin-1"))
    return path


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- the corpus
def _case(name: str, build, expect: str):
    return pytest.param(build, expect, id=name)


def _c_latin1_scores(f):
    return _meta(f["ratings"], _latin1(f["dir"] / "l1.csv"))


def _c_latin1_data(f):
    path = f["dir"] / "r_latin1.csv"
    path.write_bytes(f["ratings"].read_bytes().replace(b"Overall", "Qualité".encode("latin-1")))
    return _meta(path, f["scores"])


def _c_latin1_hanna(f):
    path = f["dir"] / "hanna_latin1.csv"
    path.write_bytes('Model,Relevance\nGPT-2,"[1, 2]"\ncafé,"[2, 3]"\n'.encode("latin-1"))
    return ["meta", "--data", str(path)]


def _c_utf16_broken(f):
    path = f["dir"] / "odd16.csv"
    path.write_bytes(codecs.BOM_UTF16_LE + "story_id,measure\n".encode("utf-16-le") + b"\x00\xd8")
    return _meta(f["ratings"], path)


def _c_folder_data(f):
    return _meta(f["dir"], f["scores"])


def _c_folder_scores(f):
    return _meta(f["ratings"], f["dir"])


def _c_folder_score_input(f):
    return ["score", "--input", str(f["dir"]), "--metrics", "chrf"]


def _c_folder_verdicts(f):
    (f["dir"] / "v.csv").mkdir()
    return ["pairwise", "matrix", str(f["dir"] / "v.csv")]


def _c_folder_prompt(f):
    return ["pairwise", "template", "--prompt", str(f["dir"]), "--story-a", str(f["scores"]),
            "--story-b", str(f["scores"])]


def _c_latin1_verdicts(f):
    path = f["dir"] / "v1.csv"
    path.write_bytes("prompt_id,story_a,story_b,dimension,verdict,order\n"
                     "0,A/0,B/0,Qualité,A,AB\n".encode("latin-1"))
    return ["pairwise", "consistency", str(path)]


def _c_out_is_file(f):
    return _meta(f["ratings"], f["scores"], "--out", str(f["scores"]), "--no-figures")


def _c_agreement_out_is_file(f):
    return ["agreement", "--data", str(f["ratings"]), "--out", str(f["scores"])]


def _c_meta_out_dev_full(f):
    return _meta(f["ratings"], f["scores"], "--out", "/dev/full", "--no-figures")


def _c_score_out_is_folder(f):
    stories = _write(f["dir"] / "stories.csv", "story_id,story\nA/0,Once upon a time.\n")
    return ["score", "--input", str(stories), "--metrics", "surface", "--out", str(f["dir"])]


def _c_score_out_dev_full(f):
    stories = _write(f["dir"] / "stories.csv", "story_id,story\nA/0,Once upon a time.\n")
    return ["score", "--input", str(stories), "--metrics", "surface", "--out", "/dev/full",
            "--no-progress"]


def _c_out_not_empty(f):
    (f["dir"] / "res").mkdir()
    _write(f["dir"] / "res" / "correlations.csv", "old\n")
    return _meta(f["ratings"], f["scores"], "--out", str(f["dir"] / "res"), "--no-figures")


def _c_overwrite_without_out(f):
    return _meta(f["ratings"], f["scores"], "--overwrite")


def _c_digits_meta(f):
    return _meta(f["ratings"], f["scores"], "--digits", "-1")


def _c_digits_pairwise(f):
    return ["pairwise", "matrix", str(f["verdicts"]), "--digits", "-1"]


def _c_json_array(f):
    path = _write(f["dir"] / "arr.jsonl", json.dumps(_scores().to_dict("records")))
    return _meta(f["ratings"], path)


def _c_json_columns(f):
    path = _write(f["dir"] / "cols.jsonl", _scores().to_json())
    return _meta(f["ratings"], path)


def _c_json_pretty(f):
    path = _write(f["dir"] / "pretty.jsonl", json.dumps(_scores().iloc[0].to_dict(), indent=2))
    return _meta(f["ratings"], path)


def _c_json_bad_line(f):
    lines = _scores().to_json(orient="records", lines=True).splitlines()
    lines[3] = lines[3][:-5]
    return _meta(f["ratings"], _write(f["dir"] / "cut.jsonl", "\n".join(lines) + "\n"))


def _c_duplicate_value(f):
    text = "story_id,measure,value,value\n" + "".join(
        f"{r.story_id},m,{r.value},0\n" for r in _scores().itertuples())
    return _meta(f["ratings"], _write(f["dir"] / "dup.csv", text))


def _c_duplicate_ratings(f):
    text = f["ratings"].read_text().replace("annotator,value", "annotator,annotator", 1)
    return _meta(_write(f["dir"] / "dupr.csv", text), f["scores"])


def _c_infinite_score(f):
    frame = _scores()
    frame.loc[5, "value"] = np.inf
    frame.to_csv(f["dir"] / "inf.csv", index=False)
    return _meta(f["ratings"], f["dir"] / "inf.csv")


def _c_infinite_rating(f):
    frame = _ratings()
    frame["value"] = frame["value"].astype(object)
    frame.loc[7, "value"] = "-inf"
    frame.to_csv(f["dir"] / "rinf.csv", index=False)
    return _meta(f["dir"] / "rinf.csv", f["scores"])


def _c_infinite_wide(f):
    path = _write(f["dir"] / "wide.csv", "system,prompt_id,Overall,m\nA,0,1,0.5\nA,1,2,inf\n"
                                         "B,0,3,0.1\nB,1,4,0.2\n")
    return ["meta", "--data", str(path), "--criteria", "Overall", "--metrics", "m"]


def _c_not_a_number(f):
    frame = _scores().astype({"value": object})
    frame.loc[2, "value"] = "n/a?"
    frame.to_csv(f["dir"] / "nan.csv", index=False)
    return _meta(f["ratings"], f["dir"] / "nan.csv")


def _c_empty_file(f):
    return _meta(f["ratings"], _write(f["dir"] / "empty.csv", ""))


def _c_missing_column(f):
    _scores().drop(columns="measure").to_csv(f["dir"] / "nomeasure.csv", index=False)
    return _meta(f["ratings"], f["dir"] / "nomeasure.csv")


def _c_unknown_suffix(f):
    return _meta(f["ratings"], _write(f["dir"] / "scores.xlsx", "x"))


def _c_no_such_file(f):
    return _meta(f["ratings"], f["dir"] / "missing.csv")


def _c_pointwise_folder_preferences(f):
    return ["pairwise", "pointwise", "--data", str(f["ratings"]), "--scores", str(f["scores"]),
            "--preferences", str(f["dir"])]


def _c_ratings_no_criterion(f):
    _ratings().drop(columns="criterion").to_csv(f["dir"] / "nocrit.csv", index=False)
    return _meta(f["dir"] / "nocrit.csv", f["scores"])


def _c_ratings_twice(f):
    frame = _ratings()
    pd.concat([frame, frame.iloc[[3]]]).to_csv(f["dir"] / "twice.csv", index=False)
    return _meta(f["dir"] / "twice.csv", f["scores"])


def _c_story_id_without_system(f):
    _write(f["dir"] / "sid.csv", "story_id,criterion,value\ns1,Overall,3\ns2,Overall,4\n")
    return _meta(f["dir"] / "sid.csv", f["scores"])


def _c_scores_in_two_files(f):
    return _meta(f["ratings"], f["scores"], "--scores", str(f["scores"]))


def _c_unknown_criterion(f):
    return _meta(f["ratings"], f["scores"], "--criteria", "Plot")


def _c_unknown_id_role(f):
    return _meta(f["ratings"], f["scores"], "--id", "writer=system")


def _c_annotator_pattern_matches_nothing(f):
    path = _write(f["dir"] / "w.csv", "system,prompt_id,r1,r2,m\nA,0,1,2,0.5\nA,1,2,2,0.1\n")
    return ["meta", "--data", str(path), "--annotators", "Overall=q_*"]


def _c_wide_without_story_columns(f):
    path = _write(f["dir"] / "w2.csv", "model,item,Overall,m\nA,0,1,0.5\nA,1,2,0.1\n")
    return ["meta", "--data", str(path), "--criteria", "Overall"]


CORPUS = [
    _case("latin1-scores", _c_latin1_scores, "l1.csv, line 2: not UTF-8 text"),
    _case("latin1-data", _c_latin1_data, "r_latin1.csv, line 2: not UTF-8 text"),
    _case("latin1-hanna-wide", _c_latin1_hanna, "hanna_latin1.csv, line 3: not UTF-8 text"),
    _case("utf16-broken", _c_utf16_broken, "odd16.csv, line 2: not UTF-16 text"),
    _case("folder-as-data", _c_folder_data, "is a folder, not a file"),
    _case("folder-as-scores", _c_folder_scores, "is a folder, not a file"),
    _case("folder-as-score-input", _c_folder_score_input, "is a folder, not a file"),
    _case("folder-as-verdicts", _c_folder_verdicts, "v.csv: is a folder, not a file"),
    _case("folder-as-prompt", _c_folder_prompt, "is a folder, not a file"),
    _case("latin1-verdicts", _c_latin1_verdicts, "v1.csv, line 2: not UTF-8 text"),
    _case("meta-out-is-file", _c_out_is_file, "scores.csv: exists and is not a folder"),
    _case("agreement-out-is-file", _c_agreement_out_is_file, "exists and is not a folder"),
    _case("meta-out-dev-full", _c_meta_out_dev_full, "/dev/full: exists and is not a folder"),
    _case("score-out-is-folder", _c_score_out_is_folder, "is a folder; give a file name"),
    _case("score-out-dev-full", _c_score_out_dev_full, "--out /dev/full: unknown suffix ''"),
    _case("out-not-empty", _c_out_not_empty, "res: the folder is not empty"),
    _case("overwrite-without-out", _c_overwrite_without_out, "--overwrite needs --out"),
    _case("digits-meta", _c_digits_meta, "--digits must be a whole number >= 0, got -1"),
    _case("digits-pairwise", _c_digits_pairwise, "--digits must be a whole number >= 0"),
    _case("json-array", _c_json_array, "arr.jsonl, line 1: a JSON array, not an object; "
                                       "JSON Lines expected"),
    _case("json-columns", _c_json_columns, "cols.jsonl, line 1: an object of columns"),
    _case("json-pretty", _c_json_pretty, "pretty.jsonl, line 1: the start of a JSON document"),
    _case("json-cut-line", _c_json_bad_line, "cut.jsonl, line 4: not valid JSON"),
    _case("duplicate-value-column", _c_duplicate_value,
          "dup.csv, line 1: column 'value' appears twice in the header (columns 3 and 4)"),
    _case("duplicate-ratings-column", _c_duplicate_ratings,
          "dupr.csv, line 1: column 'annotator' appears twice"),
    _case("infinite-score", _c_infinite_score,
          "inf.csv, line 7: column 'value' is infinite: inf (story_id 'A/5'; measure 'm'; 1 row"),
    _case("infinite-rating", _c_infinite_rating,
          "rinf.csv, line 9: column 'value' is infinite: -inf (system 'A'; prompt_id 3; "
          "criterion 'Overall'; annotator 'r2'; 1 row(s) in all)"),
    _case("infinite-wide", _c_infinite_wide,
          "wide.csv, line 3: column 'm' is infinite: inf (system 'A'; prompt_id 1; 1 row"),
    _case("not-a-number", _c_not_a_number, "nan.csv, line 4: column 'value' is not a number"),
    _case("empty-file", _c_empty_file, "empty.csv: the file is empty"),
    _case("missing-column", _c_missing_column, "nomeasure.csv: missing column(s) ['measure']"),
    _case("unknown-suffix", _c_unknown_suffix, "cannot tell the format from the suffix"),
    _case("no-such-file", _c_no_such_file, "missing.csv: no such file"),
    _case("pointwise-folder-preferences", _c_pointwise_folder_preferences,
          "is a folder, not a file"),
    _case("ratings-without-criterion", _c_ratings_no_criterion,
          "nocrit.csv: missing column(s) ['criterion']"),
    _case("rating-given-twice", _c_ratings_twice, "rated story A/"),
    _case("story-id-without-system", _c_story_id_without_system,
          "sid.csv, line 2: story_id 's1' does not say its system"),
    _case("scores-in-two-files", _c_scores_in_two_files, "is in both"),
    _case("unknown-criterion", _c_unknown_criterion, "unknown criterion 'Plot'"),
    _case("unknown-id-role", _c_unknown_id_role, "--id: unknown role 'writer'"),
    _case("annotator-pattern-matches-nothing", _c_annotator_pattern_matches_nothing,
          "w.csv: --annotators pattern 'q_*' matches no column"),
    _case("wide-without-story-columns", _c_wide_without_story_columns,
          "w2.csv: which columns identify a story?"),
]


@pytest.mark.parametrize(("build", "expect"), CORPUS)
def test_malformed_input_is_one_clear_line(files, capsys, build, expect):
    argv = build(files)
    if "/dev/full" in argv and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"storyeval {argv[0]}: error: ")
    assert expect in lines[0]


def test_the_corpus_is_large_enough():
    assert len(CORPUS) >= 40


def test_debug_shows_the_traceback(files):
    with pytest.raises(InputError, match="is a folder, not a file"):
        main(["--debug", *_c_folder_scores(files)])


def test_cli_process_prints_no_traceback(files):
    argv = _c_latin1_hanna(files)
    proc = subprocess.run([sys.executable, "-m", "storyeval", *argv], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------------------- encodings
@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_utf8_bom_and_utf16_files_are_read(files, capsys, encoding):
    assert main(_meta(files["ratings"], files["scores"], "--format", "csv")) == 0
    expected = capsys.readouterr().out
    for name in ("ratings", "scores"):
        path = files["dir"] / f"{name}_{encoding}.csv"
        path.write_text(files[name].read_text(encoding="utf-8"), encoding=encoding)
        files[name] = path
    assert main(_meta(files["ratings"], files["scores"], "--format", "csv")) == 0
    assert capsys.readouterr().out == expected


def test_api_errors_name_the_file_and_the_fix(tmp_path):
    from storyeval.data import read_scores
    from storyeval.meta import meta_evaluate

    with pytest.raises(InputError, match="is a folder, not a file"):
        read_scores(tmp_path)
    # a DataFrame is read as read_dataset reads a file; a score table alone has no criteria
    with pytest.raises(InputError, match=r"no human criteria; declare them when reading"):
        meta_evaluate(_scores())
    with pytest.raises(InputError, match=r"must be a storyeval Dataset or a DataFrame, got list; wrap .*"
                                         r"storyeval\.data"):
        meta_evaluate([1, 2])


def test_infinite_values_in_a_dataset_name_measure_and_story():
    from storyeval.correlation import correlate

    index = pd.MultiIndex.from_product([["A", "B"], [0, 1]], names=["system", "prompt_id"])
    wide = pd.DataFrame({"h": [1.0, 2.0, 3.0, 4.0], "m": [0.1, np.inf, 0.3, 0.4]}, index=index)
    with pytest.raises(InputError, match=r"infinite value inf for measure 'm' at story "
                                         r"\('A', 1\)"):
        correlate(wide, "m", "h", level="system")


# ----------------------------------------------------------------------------- magnitudes
_BASE = st.lists(st.integers(-10**6, 10**6), min_size=3, max_size=25)


def _pair(draw) -> tuple[np.ndarray, np.ndarray]:
    x = draw(_BASE)
    y = draw(st.lists(st.integers(-10**6, 10**6), min_size=len(x), max_size=len(x)))
    x0, y0 = np.array(x, float) / 1000, np.array(y, float) / 1000
    assume(np.ptp(x0) > 0 and np.ptp(y0) > 0)
    return x0, y0


@st.composite
def _scaled_pairs(draw):
    x0, y0 = _pair(draw)
    ex, ey = draw(st.integers(-300, 300)), draw(st.integers(-300, 300))
    return x0, y0, x0 * 10.0 ** ex, y0 * 10.0 ** ey


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(_scaled_pairs())
def test_pearson_and_spearman_are_exact_at_any_magnitude(data):
    from storyeval.correlation.kernel import pairwise_correlations

    x0, y0, x, y = data
    r = pairwise_correlations(x, y, method="pearson").statistic[0, 0]
    assert r == pytest.approx(stats.pearsonr(x0, y0).statistic, abs=1e-9)
    rho = pairwise_correlations(x, y, method="spearman").statistic[0, 0]
    assert rho == pytest.approx(stats.spearmanr(x0, y0).statistic, abs=1e-9)
    # pairwise deletion: the masked kernels scale too
    xm = x.copy()
    xm[0] = np.nan
    assume(np.ptp(x0[1:]) > 0 and np.ptp(y0[1:]) > 0 and len(x0) > 3)
    rm = pairwise_correlations(xm, y, method="pearson", nan_policy="omit").statistic[0, 0]
    assert rm == pytest.approx(stats.pearsonr(x0[1:], y0[1:]).statistic, abs=1e-9)


def _meta_pearson(tmp_path: Path, capsys, scale: float) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    index = pd.MultiIndex.from_product([SYSTEMS, PROMPTS], names=["system", "prompt_id"])
    human = rng.normal(size=len(index))
    metric = human + rng.normal(size=len(index))
    frame = pd.DataFrame({"Overall": human, "m": metric * scale}, index=index).reset_index()
    frame.to_csv(tmp_path / "wide.csv", index=False)
    argv = ["meta", "--data", str(tmp_path / "wide.csv"), "--criteria", "Overall",
            "--metrics", "m", "--coef", "pearson", "--format", "csv", "--ci", "bootstrap",
            "--resamples", "30"]
    assert main(argv) == 0
    table = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    return table[table["measure"] == "m"].set_index("level")


@pytest.mark.filterwarnings("ignore::storyeval.exceptions.FewClustersWarning")  # 8 prompts
@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e160, 1e300])
def test_meta_pearson_at_extreme_magnitudes(tmp_path, capsys, scale):
    """Before: r = 0 beyond 1e154, NaN with an empty reason below 1e-154 (point estimates and
    bootstrap intervals)."""
    unit = _meta_pearson(tmp_path, capsys, 1.0)
    extreme = _meta_pearson(tmp_path, capsys, scale)
    for column in ("value", "ci_low", "ci_high"):
        np.testing.assert_allclose(extreme[column], unit[column], rtol=0, atol=1e-12)
    assert extreme["reason"].isna().all()


def test_system_means_near_the_largest_float_do_not_overflow():
    from storyeval.correlation import level_data

    index = pd.MultiIndex.from_product([["A", "B"], [0, 1, 2]], names=["system", "prompt_id"])
    values = np.array([1.7e308, 1.6e308, 1.5e308, -1.7e308, 1.0e308, 1.2e308])
    means = level_data(pd.DataFrame({"m": values}, index=index), level="system")["m"]
    expected = (values / 1e308).reshape(2, 3).mean(axis=1) * 1e308
    np.testing.assert_allclose(means.to_numpy(), expected, rtol=1e-15)


# ----------------------------------------------------------------------------- atomic writes
def test_atomic_write_keeps_the_previous_file_when_replace_fails(tmp_path, monkeypatch):
    from storyeval._atomic import atomic_write_text

    target = atomic_write_text(tmp_path / "a.csv", "old\n")

    def broken(src, dst):
        raise OSError(28, "No space left on device", str(src))

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="a.csv"):
        atomic_write_text(target, "new\n")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]  # no temporary file left


def test_atomic_path_keeps_the_previous_file_when_the_writer_dies(tmp_path):
    from storyeval._atomic import atomic_path

    target = tmp_path / "scores.csv"
    target.write_text("complete previous run\n")
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.write_text("half a li")
        raise KeyboardInterrupt
    assert target.read_text() == "complete previous run\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.csv"]


def test_score_out_crash_mid_write_keeps_the_previous_file(tmp_path, monkeypatch, capsys):
    stories = _write(tmp_path / "stories.csv", "story_id,story\nA/0,Once upon a time.\n")
    out = tmp_path / "scores.csv"
    argv = ["score", "--input", str(stories), "--metrics", "surface", "--out", str(out),
            "--no-progress"]
    assert main(argv) == 0
    before = out.read_bytes()
    real = pd.DataFrame.to_csv

    def dying(self, path=None, *args, **kwargs):
        real(self.head(1), path, *args, **kwargs)
        raise KeyboardInterrupt  # as a kill in the middle of the write

    monkeypatch.setattr(pd.DataFrame, "to_csv", dying)
    assert main(argv) == 130
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.csv", "stories.csv"]


def test_a_full_disk_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    stories = _write(tmp_path / "stories.csv", "story_id,story\nA/0,Once upon a time.\n")
    out = tmp_path / "scores.csv"

    def full(src, dst):
        raise OSError(28, "No space left on device", str(src))

    monkeypatch.setattr(os, "replace", full)
    assert main(["score", "--input", str(stories), "--metrics", "surface", "--out", str(out),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err == f"storyeval score: error: {out}: No space left on device\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stories.csv"]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_writing_to_dev_full_is_one_line(tmp_path, capsys):
    from storyeval._atomic import atomic_write_text

    with pytest.raises(OSError, match="/dev/full"):
        atomic_write_text("/dev/full", "x" * 100_000)  # a device is written directly
    assert Path("/dev/full").exists() and not Path("/dev/full").is_file()


def test_heatmap_save_failure_keeps_the_previous_figure(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from storyeval.report.figures import heatmap

    grid = pd.DataFrame({"c": [0.5, -0.2]}, index=["m1", "m2"])
    png, _ = heatmap(grid, tmp_path / "fig", title="t", formats=("png", "pdf"))
    before = png.read_bytes()

    def failing(self, fname, *args, **kwargs):
        Path(fname).write_bytes(b"\x89PNG cut")
        raise OSError(28, "No space left on device", str(fname))

    monkeypatch.setattr(Figure, "savefig", failing)
    with pytest.raises(OSError, match=r"fig\.png"):
        heatmap(grid, tmp_path / "fig", title="t", formats=("png", "pdf"))
    assert png.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.pdf", "fig.png"]


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_meta_out_crash_leaves_the_previous_run_intact(files, monkeypatch, capsys):
    import storyeval.report.meta_files as report

    out = files["dir"] / "res"
    argv = [*_meta(files["ratings"], files["scores"]), "--out", str(out), "--no-figures"]
    assert main(argv) == 0
    before = _tree(out)
    calls = {"n": 0}
    real = report._save_grid

    def dying(*args, **kwargs):
        calls["n"] += 1
        real(*args, **kwargs)
        raise KeyboardInterrupt  # killed after the first grid's files

    monkeypatch.setattr(report, "_save_grid", dying)
    assert main([*argv, "--overwrite", "--coef", "spearman"]) == 130
    assert calls["n"] == 1
    assert _tree(out) == before  # nothing of the interrupted run, no staging folder


def test_overwrite_replaces_the_previous_run_and_removes_its_stale_files(files, capsys):
    out = files["dir"] / "res"
    base = [*_meta(files["ratings"], files["scores"]), "--out", str(out)]  # with figures
    assert main(base) == 0
    assert (out / "kendall_overall.png").is_file()
    _write(out / "notes.txt", "mine\n")  # a file storyeval did not write
    no_figures = [*base, "--no-figures"]
    assert main(no_figures) == 2
    assert "the folder is not empty" in capsys.readouterr().err
    assert main([*no_figures, "--overwrite"]) == 0
    names = {p.name for p in out.iterdir()}
    assert "kendall_overall.png" not in names and "kendall_overall.pdf" not in names
    assert {"correlations.csv", "settings.json", "notes.txt"} <= names
    manifest = json.loads((out / ".storyeval-run.json").read_text())
    assert manifest["command"] == "meta" and "notes.txt" not in manifest["files"]
    assert not [n for n in names if n.startswith(".storyeval-tmp")]


def test_agreement_overwrite_removes_the_other_format(files, capsys):
    out = files["dir"] / "agree"
    base = ["agreement", "--data", str(files["ratings"]), "--out", str(out)]
    assert main([*base, "--format", "csv"]) == 0
    assert main([*base, "--format", "md", "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".storyeval-run.json", "annotators.md",
                                                     "index.html"]


def test_write_report_refuses_a_folder_with_files(tmp_path):
    from storyeval.meta import meta_evaluate
    from storyeval.report.meta_files import write_report

    result = meta_evaluate(measures="BLEU", criteria="Relevance", levels="overall",
                           reference="none")
    _write(tmp_path / "other.csv", "x\n")
    with pytest.raises(InputError, match="not empty"):
        write_report(result, tmp_path, figures=False)
    paths = write_report(result, tmp_path, figures=False, overwrite=True)
    assert all(p.parent == tmp_path and p.is_file() for p in paths)
    assert (tmp_path / "other.csv").read_text() == "x\n"


# ----------------------------------------------------------------------------- joins
def test_scores_cut_at_a_row_boundary_are_not_silently_accepted(files, capsys):
    cut = files["dir"] / "cut.csv"
    lines = files["scores"].read_text().splitlines(keepends=True)
    cut.write_text("".join(lines[:15]))  # header + 14 of 24 stories
    with warnings.catch_warnings():  # the command line prints it as one line
        warnings.simplefilter("always", DroppedStoriesWarning)
        assert main(_meta(files["ratings"], cut)) == 0
    err = capsys.readouterr().err
    assert err == (f"storyeval meta: warning: {cut}: 14 of the 24 stories of dataset 'ratings' "
                   "have scores; 10 stories dropped (left out of every result): systems 'B' "
                   "(2 of 8), 'C' (all 8)\n")


def test_a_measure_covering_fewer_stories_is_reported(files):
    from storyeval.data import read_dataset

    both = pd.concat([_scores(), _scores().head(20).assign(measure="short")])
    both.to_csv(files["dir"] / "two.csv", index=False)
    with pytest.warns(DroppedStoriesWarning, match=r"1 measure\(s\) have scores for fewer of "
                                                   r"the 24 stories .*'short' \(20\)"):
        dataset = read_dataset(files["ratings"], scores=[files["dir"] / "two.csv"])
    assert dataset.wide()["short"].isna().sum() == 4


def test_full_coverage_warns_nothing(files):
    from storyeval.data import read_dataset

    dataset = read_dataset(files["ratings"], scores=[files["scores"]])  # warnings are errors
    assert len(dataset.table) == 24


def test_an_explicit_inner_join_asks_for_the_subset():
    from storyeval.data import ratings_to_dataset

    dataset = ratings_to_dataset(_ratings())
    with pytest.warns(DroppedStoriesWarning, match="8 stories dropped"):
        assert len(dataset.with_scores(_scores().head(16)).table) == 16
    assert len(dataset.with_scores(_scores().head(16), how="inner").table) == 16  # no warning
