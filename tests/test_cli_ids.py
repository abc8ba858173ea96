"""Steps that read each other's output, for every id scheme the docs allow: `score` and `rate`
write score tables that `describe`, `meta` and `power` read with no edits between, with
string prompt ids and with stories given by ``story_id`` alone."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer

from storyeval.cli import main
from storyeval.data.io import read_score_table, validate_scores
from storyeval.exceptions import InputError

SYSTEMS = ("alpha", "beta", "gamma", "delta")
PROMPTS = tuple(f"item-{c}" for c in "abcdefgh")
# one criterion: each BH family holds one test, which meta rightly warns about
pytestmark = pytest.mark.filterwarnings("ignore::storyeval.compare.multitest.SingleTestFamilyWarning")
WORDS = "the a cat dog ran fast slow house tree river moon sun night day old young".split()


def _stories(sep: str = "/") -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = [{"story_id": f"{s}{sep}{p}", "story": " ".join(rng.choice(WORDS, rng.integers(15, 40))),
             "reference": " ".join(rng.choice(WORDS, 30))} for s in SYSTEMS for p in PROMPTS]
    return pd.DataFrame(rows)


def _ratings() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    return pd.DataFrame([{"story_id": f"{s}/{p}", "annotator": f"w{a}", "criterion": "Quality",
                          "value": int(rng.integers(1, 6))}
                         for s in SYSTEMS for p in PROMPTS for a in range(3)])


@pytest.fixture
def files(tmp_path):
    _stories().to_csv(tmp_path / "stories.csv", index=False)
    _ratings().to_csv(tmp_path / "ratings.csv", index=False)
    return tmp_path


def test_score_with_story_ids_only_then_meta_and_describe(files, capsys):
    scores = files / "scores.csv"
    assert main(["score", "--input", str(files / "stories.csv"), "--metrics", "rouge",
                 "--out", str(scores)]) == 0
    table = pd.read_csv(scores)
    # the story ids SYSTEM/PROMPT give the system and the (string) prompt id
    assert table.loc[0, ["system", "prompt_id"]].tolist() == ["alpha", "item-a"]
    assert table[["system", "prompt_id"]].notna().all().all()
    capsys.readouterr()
    assert main(["meta", "--data", str(files / "ratings.csv"), "--scores", str(scores),
                 "--levels", "overall,system", "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "ROUGE-1 Recall,Quality,system," in out
    assert main(["describe", "--data", str(files / "ratings.csv"), "--scores", str(scores)]) == 0
    assert "32 stories, 4 systems, 8 prompts" in capsys.readouterr().out
    assert main(["pairwise", "pointwise", "--data", str(files / "ratings.csv"), "--scores",
                 str(scores), "--format", "csv"]) == 0
    assert "ROUGE-1 Recall,Quality," in capsys.readouterr().out
    assert main(["power", "--data", str(files / "ratings.csv"), "--scores", str(scores),
                 "--measures", "ROUGE-1 Recall,ROUGE-2 Recall", "--criterion", "Quality",
                 "--replications", "10", "--permutations", "19", "--n", "20"]) == 0


def test_score_with_string_prompt_id_column_and_own_story_ids(files, capsys):
    stories = _stories(sep=":")  # an own id scheme; system and prompt_id say the story
    stories["system"] = stories["story_id"].str.split(":").str[0]
    stories["prompt_id"] = stories["story_id"].str.split(":").str[1]
    stories.to_csv(files / "own.csv", index=False)
    assert main(["score", "--input", str(files / "own.csv"), "--metrics", "chrf",
                 "--out", str(files / "scores.csv")]) == 0
    read = read_score_table(files / "scores.csv")
    assert read["story_id"].iloc[0] == "alpha/item-a"  # canonical ids join the ratings
    assert main(["meta", "--data", str(files / "ratings.csv"), "--scores",
                 str(files / "scores.csv"), "--format", "csv"]) == 0


def test_blank_system_and_prompt_columns_are_absent_not_an_error(files):
    """The rule for files written by storyeval 0.1.0 (blank system and prompt_id for stories
    given by story_id): columns empty in every row are treated as absent; a column empty in
    some rows only stays an error naming the row."""
    table = pd.DataFrame({"story_id": ["a/x", "b/x"], "system": [None, None],
                          "prompt_id": [None, None], "measure": "m", "value": [1.0, 2.0]})
    table.to_csv(files / "old.csv", index=False)
    read = validate_scores(pd.read_csv(files / "old.csv"), source="old.csv", fmt="csv")
    assert read["system"].tolist() == ["a", "b"] and read["prompt_id"].tolist() == ["x", "x"]
    table.loc[0, ["system", "prompt_id"]] = ["a", "x"]
    table.to_csv(files / "half.csv", index=False)
    from storyeval.exceptions import InputError

    with pytest.raises(InputError, match=r"half.csv, line 3: column 'prompt_id' is empty"):
        validate_scores(pd.read_csv(files / "half.csv"), source="half.csv", fmt="csv")


def test_rate_with_string_prompt_ids_writes_scores_meta_reads(files, capsys):
    stories = _stories()
    stories["system"] = stories["story_id"].str.split("/").str[0]
    stories["prompt_id"] = stories["story_id"].str.split("/").str[1]
    stories["prompt"] = "Write a story."
    stories.to_csv(files / "to_rate.csv", index=False)
    out = files / "run"
    with StubServer(Script()) as srv:
        assert main(["rate", "--backend", "openai", "--base-url", srv.base_url, "--model",
                     "stub", "--model-name", "Stub", "--stories", str(files / "to_rate.csv"),
                     "--cache", str(files / "cache.sqlite"), "--no-progress", "--no-api-key",
                     "--eval-prompts", "1", "--criteria", "RE", "--tries", "1",
                     "--out", str(out)]) == 0
    scores = read_score_table(out / "scores.csv")
    assert set(scores["prompt_id"]) == set(PROMPTS)
    capsys.readouterr()
    assert main(["describe", "--data", str(files / "ratings.csv"), "--scores",
                 str(out / "scores.csv")]) == 0
    assert "1 metric" in capsys.readouterr().out
    assert main(["meta", "--data", str(files / "ratings.csv"), "--scores",
                 str(out / "scores.csv"), "--format", "csv"]) == 0
    assert "Stub RE 1" in capsys.readouterr().out


def _comma_scores(files) -> Path:
    """A score table with a BERTScore-style measure name that holds a comma."""
    rng = np.random.default_rng(9)
    ids = [f"{s}/{p}" for s in SYSTEMS for p in PROMPTS]
    rows = [{"story_id": i, "measure": m, "value": float(rng.normal())}
            for m in ("BERTScore F1 (mini L6, chunked)", "ROUGE-2 F1") for i in ids]
    path = files / "comma.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("spec", ['"BERTScore F1 (mini L6, chunked)",ROUGE-2 F1',
                                  "BERTScore F1 (mini L6, chunked)", "BERTScore F1 (*"])
def test_measure_names_with_commas_can_be_selected(files, capsys, spec):
    scores = _comma_scores(files)
    assert main(["meta", "--data", str(files / "ratings.csv"), "--scores", str(scores),
                 "--metrics", spec, "--format", "csv"]) == 0
    table = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    assert "BERTScore F1 (mini L6, chunked)" in set(table["measure"])
    assert ("ROUGE-2 F1" in set(table["measure"])) == spec.startswith('"')


def test_power_measures_take_quotes_and_globs(files, capsys):
    scores = _comma_scores(files)
    assert main(["power", "--data", str(files / "ratings.csv"), "--scores", str(scores),
                 "--measures", '"BERTScore F1 (mini L6, chunked)",ROUGE-2*', "--criterion",
                 "Quality", "--replications", "10", "--permutations", "19", "--n",
                 "20"]) == 0
    assert "r(h,a)" in capsys.readouterr().out
    assert main(["power", "--data", str(files / "ratings.csv"), "--scores", str(scores),
                 "--measures", '"BERTScore F1 (mini L6, chunked),ROUGE-2*', "--criterion",
                 "Quality"]) == 2
    assert "unbalanced double quote" in capsys.readouterr().err


def test_split_list_quotes():
    from storyeval.data.selection import split_list

    assert split_list('"a, b", c,,"d ""e"""') == ["a, b", "c", 'd "e"']


@pytest.mark.parametrize(("ids", "want"), [
    (["7", "8", "7.0", " 9 ", "1e3"], [7, 8, 7, 9, 1000]),  # whole numbers, however written
    (["pk1", "pk2", "pk1"], ["pk1", "pk2", "pk1"]),
    (["2.5", "3"], ["2.5", "3"]),  # not all whole: text
    (["nan", "1"], ["nan", "1"]),
    ([1.0, 2.0], [1, 2]),
])
def test_prompt_ids_become_integers_only_when_all_are_whole_numbers(ids, want):
    from storyeval.data.io import prompt_column

    got = prompt_column(pd.Series(ids * 1000, name="prompt_id"), "f.csv", "csv")
    assert got.tolist() == want * 1000
    assert (got.dtype.kind == "i") == all(isinstance(w, int) for w in want)


def test_an_empty_prompt_id_names_its_line():
    from storyeval.data.io import prompt_column

    with pytest.raises(InputError, match=r"f\.csv, line 3: column 'prompt_id' is empty"):
        prompt_column(pd.Series(["1", None, "2"], name="prompt_id"), "f.csv", "csv")
