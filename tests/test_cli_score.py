"""``storyeval score``: through ``storyeval.cli.main`` and once through a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from storyeval.cli import main

STORIES = pd.DataFrame({
    "story_id": ["A/0", "A/1", "B/0", "B/1"],
    "system": ["A", "A", "B", "B"],
    "prompt_id": [0, 1, 0, 1],
    "prompt": ["A dragon guards a library.", "The last train leaves at midnight."] * 2,
    "story": [
        "The dragon read every book twice. Then it ate the librarian.",
        "She missed the train. The station was empty and the clock stopped.",
        "A small dragon kept the library safe and tidy for a hundred years.",
        "At midnight the train left without a single passenger aboard.",
    ],
    "reference": [
        "Nobody knew the dragon could read until it started returning books.",
        "The midnight train only stops for those who have nowhere to go.",
    ] * 2,
})


@pytest.fixture()
def stories_csv(tmp_path):
    path = tmp_path / "stories.csv"
    STORIES.to_csv(path, index=False)
    return path


def test_score_writes_the_tidy_table(stories_csv, tmp_path, capsys):
    out = tmp_path / "scores.csv"
    cat = tmp_path / "catalogue.csv"
    div = tmp_path / "diversity.csv"
    code = main(["score", "--input", str(stories_csv), "--metrics", "rouge,bleu,surface",
                 "--out", str(out), "--catalogue", str(cat), "--diversity-out", str(div),
                 "--no-progress"])
    assert code == 0
    diversity = pd.read_csv(div)
    assert set(diversity["system"]) == {"A", "B"} and (diversity["n_stories"] == 2).all()
    table = pd.read_csv(out, keep_default_na=False, na_values=[""])
    assert list(table.columns) == ["story_id", "system", "prompt_id", "measure", "value", "reason"]
    assert set(table["story_id"]) == set(STORIES["story_id"])
    assert {"ROUGE-1 F1", "BLEU", "Length (tokens)", "Coverage (vs prompt)"} <= set(
        table["measure"])
    assert not table.duplicated(["story_id", "measure"]).any()
    catalogue = pd.read_csv(cat)
    assert set(catalogue["measure"]) == set(table["measure"])
    assert "4 stories" in capsys.readouterr().err
    # the same numbers as the library call
    from storyeval.metrics import score

    lib = score(STORIES, "rouge,bleu,surface", show_progress=False)
    merged = table.merge(lib, on=["story_id", "measure"])
    assert len(merged) == len(lib)
    assert (merged["value_x"] - merged["value_y"]).abs().max() < 1e-9


def test_surface_tokenizer_and_bertscore_idf_options(stories_csv, tmp_path):
    """--surface-tokenizer reaches the surface and diversity measures (the regex variant keeps
    its own names); --bertscore-idf reaches BERTScore's options."""
    from storyeval.cli import build_parser
    from storyeval.cli.score import metric_options
    from storyeval.metrics import score
    from storyeval.metrics.surface import system_diversity

    out, div = tmp_path / "scores.csv", tmp_path / "diversity.csv"
    assert main(["score", "--input", str(stories_csv), "--metrics", "surface",
                 "--surface-tokenizer", "regex", "--out", str(out), "--diversity-out", str(div),
                 "--no-progress"]) == 0
    table = pd.read_csv(out)
    assert table["measure"].str.endswith("[regex tokens]").all()
    lib = score(STORIES, "surface", options={"surface": {"tokenizer": "regex"}},
                show_progress=False)
    merged = table.merge(lib, on=["story_id", "measure"])
    assert len(merged) == len(lib) == len(table)
    assert (merged["value_x"] - merged["value_y"]).abs().max() < 1e-9
    expected = system_diversity(STORIES, tokenizer="regex")
    pd.testing.assert_frame_equal(pd.read_csv(div), expected.reset_index(drop=True),
                                  check_dtype=False)
    args = build_parser().parse_args(["score", "--dataset", "hanna", "--bertscore-idf"])
    assert metric_options(args)["bertscore"]["idf"] is True
    args = build_parser().parse_args(["score", "--dataset", "hanna"])
    assert metric_options(args)["bertscore"]["idf"] is False
    assert metric_options(args)["surface"] == {"tokenizer": "spacy"}


def test_jsonl_output_and_cache(stories_csv, tmp_path):
    out = tmp_path / "scores.jsonl"
    args = ["score", "--input", str(stories_csv), "--metrics", "chrf", "--out", str(out),
            "--cache", str(tmp_path / "cache"), "--no-progress"]
    assert main(args) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and rows[0]["measure"] == "chrF"
    assert len(list((tmp_path / "cache").glob("chrf-*.sqlite"))) == 1
    assert main(args) == 0


def test_errors_name_the_problem(tmp_path, stories_csv, capsys):
    bad = tmp_path / "bad.csv"
    STORIES.drop(columns=["story"]).to_csv(bad, index=False)
    assert main(["score", "--input", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "bad.csv: missing required column(s) ['story']" in err
    assert main(["score", "--input", str(stories_csv), "--metrics", "rogue"]) == 2
    assert "unknown metric 'rogue'. Did you mean 'rouge'" in capsys.readouterr().err
    noref = tmp_path / "noref.csv"
    STORIES.drop(columns=["reference"]).to_csv(noref, index=False)
    assert main(["score", "--input", str(noref), "--metrics", "bleu"]) == 2
    assert "needs a 'reference' column" in capsys.readouterr().err
    assert main(["score", "--input", str(stories_csv), "--out", str(tmp_path / "x.xlsx"),
                 "--metrics", "surface"]) == 2
    assert "unknown suffix" in capsys.readouterr().err
    assert main(["score", "--input", str(stories_csv), "--subset", "human"]) == 2
    assert main(["score", "--input", str(stories_csv), "--metrics", "bartscore",
                 "--no-progress"]) == 2
    assert "facebook/bart-large-cnn" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # --input and --dataset are exclusive
        main(["score", "--input", str(stories_csv), "--dataset", "hanna"])
    assert exc.value.code == 2


def test_hanna_dataset_subprocess(tmp_path):
    out = tmp_path / "hanna.csv"
    env = dict(os.environ, STORYEVAL_NO_PROGRESS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "storyeval", "score", "--dataset", "hanna", "--subset", "human",
         "--metrics", "surface", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out)
    assert table["story_id"].nunique() == 96
    assert table["system"].eq("Human").all()
    assert sorted(table["prompt_id"].unique()) == list(range(96))
    assert "96 stories from hanna" in proc.stderr


def test_scores_feed_storyeval_meta(tmp_path, capsys):
    """End to end (issue part 7): surface measures of the human stories vs human ratings."""
    out = tmp_path / "human_surface.csv"
    assert main(["score", "--dataset", "hanna", "--subset", "human", "--metrics", "surface",
                 "--out", str(out), "--no-progress"]) == 0
    from storyeval.data import load_hanna, read_score_table
    from storyeval.exceptions import DroppedStoriesWarning

    # the scores cover the 96 human stories only: the join says which stories it drops
    with pytest.warns(DroppedStoriesWarning,
                      match=r"96 of the 1056 stories .* 960 stories dropped"):
        ds = load_hanna().with_scores(read_score_table(out))
    assert "Length (tokens)" in ds.measures
    wide = ds.wide(["Length (tokens)"])
    human = wide.xs("Human", level="system")["Length (tokens)"]
    assert human.notna().sum() == 96


def test_dtype_option_reaches_bertscore_and_bartscore():
    from storyeval.cli import build_parser
    from storyeval.cli.score import metric_options

    args = build_parser().parse_args(["score", "--dataset", "hanna", "--dtype", "bfloat16"])
    opts = metric_options(args)
    assert opts["bertscore"]["dtype"] == opts["bartscore"]["dtype"] == "bfloat16"
    assert "dtype" not in metric_options(build_parser().parse_args(
        ["score", "--dataset", "hanna"]))["bertscore"]
