"""The data layer: embedded HANNA tables, catalogue, user-data readers and their validation."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from storyeval.data import (
    CRITERIA,
    infer_catalogue,
    load_hanna,
    load_hanna_stories,
    load_user_study,
    make_story_id,
    read_hanna_wide,
    read_score_table,
    read_scores,
    scores_to_dataset,
)
from storyeval.data.hanna import hanna_path
from storyeval.exceptions import DroppedStoriesWarning, InputError


def test_hanna_shape_and_catalogue():
    ds = load_hanna()
    # 11 systems x 96 prompts = 1,056 stories; 254 measures (SOURCE.md)
    assert len(ds.table) == 1056 and len(ds.systems) == 11 and len(ds.prompts) == 96
    assert len(ds.measures) == 254
    kinds = ds.catalogue["kind"].value_counts().to_dict()
    # 6 criteria, 72 metrics, 18 annotator and 18 leave-one-out columns, 5 LLMs x 4 EPs x 7
    assert kinds == {"human_criterion": 6, "metric": 72, "annotator": 18, "annotator_loo": 18,
                     "llm_rater": 140}
    bleu = ds.describe("BLEU Ξ§")
    assert (bleu["display_name"], bleu["reference"], bleu["family"]) == \
        ("BLEU", "reference-based", "lexical")
    blanc = ds.describe("BLANC-Tune-PS ¤Δ")
    assert (blanc["reference"], blanc["family"]) == ("reference-free", "model-based")
    beluga = ds.describe("Beluga-13B SU 3")
    assert (beluga["model"], beluga["criterion"], beluga["eval_prompt"], beluga["rater"]) == \
        ("Beluga-13B", "Surprise", 3, "Beluga-13B 3")
    ann = ds.describe("Human Avg 2 CX")
    assert (ann["kind"], ann["annotator"], ann["criterion"]) == ("annotator_loo", 2, "Complexity")


def test_hanna_values_match_raw_json_cells():
    raw = pd.read_csv(hanna_path("hanna_metric_scores_llm.csv")).set_index("Model")
    ds = load_hanna()
    for system, measure in [("GPT-2", "Relevance"), ("Human", "BARTScore-SH ΞΔ"),
                            ("TD-VAE", "ChatGPT CX 4")]:
        expected = np.array(json.loads(raw.loc[system, measure]), dtype=float)
        got = ds.table.loc[system, measure].to_numpy()
        np.testing.assert_array_equal(got, expected)


def test_human_stories_excluded_on_request():
    ds = load_hanna(include_human_stories=False)
    assert "Human" not in ds.systems and len(ds.table) == 960


def test_tidy_scores_roundtrip():
    ds = load_hanna().select_systems(["GPT-2", "HINT"])
    long = ds.scores
    assert list(long.columns) == ["story_id", "system", "prompt_id", "measure", "value"]
    assert len(long) == 2 * 96 * 254
    back = scores_to_dataset(long)
    pd.testing.assert_frame_equal(back.table, ds.table, check_names=False)


def test_stories_align_with_prompt_order():
    stories = load_hanna_stories()
    assert stories["system"].value_counts().to_dict()["Human"] == 96
    assert len(stories) == 96 + 576
    human = stories[stories["system"] == "Human"].set_index("prompt_id")
    assert human["reference"].isna().all()
    llm = stories[stories["system"] != "Human"]
    # the reference of an LLM story is the human story of the same prompt
    merged = llm.merge(human[["story"]], left_on="prompt_id", right_index=True,
                       suffixes=("", "_human"))
    assert (merged["reference"] == merged["story_human"]).all()
    # word counts of the human stories follow HANNA's released text lengths (same prompt order)
    from scipy.stats import spearmanr

    lengths = load_hanna().table.loc["Human", "Text length ¤§"].to_numpy()
    words = human.sort_index()["story"].str.split().str.len().to_numpy()
    assert spearmanr(lengths, words).statistic > 0.95


def test_user_study_structure():
    study = load_user_study()
    assert study.shape == (300, 10)
    assert study["explanation_id"].nunique() == 100
    assert set(study["worker"]) == {1, 2, 3}
    assert set(np.unique(study[["guidelines", "incoherence"]])) <= {0, 1}


def _write(tmp_path, text, name="scores.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


GOOD = ("system,prompt_id,measure,value\n"
        "A,0,m,1.0\nA,1,m,2.0\nB,0,m,3.0\nB,1,m,4.5\n")


def test_read_scores_csv_jsonl_parquet(tmp_path):
    ds = read_scores(_write(tmp_path, GOOD))
    assert ds.systems == ["A", "B"] and ds.prompts == [0, 1]
    assert ds.table.loc[("B", 1), "m"] == 4.5
    frame = pd.read_csv(tmp_path / "scores.csv")
    frame.to_json(tmp_path / "s.jsonl", orient="records", lines=True)
    frame.to_parquet(tmp_path / "s.parquet")
    for name in ("s.jsonl", "s.parquet"):
        other = read_scores(tmp_path / name)
        pd.testing.assert_frame_equal(other.table, ds.table)
    assert make_story_id("B", 1) in ds.story_ids


@pytest.mark.parametrize(("text", "message"), [
    ("system,prompt_id,value\nA,0,1\n", r"missing column\(s\) \['measure'\]"),
    ("system,prompt_id,measure,value\nA,0,m,1\nA,1,m,oops\n",
     r"line 3: column 'value' is not a number: 'oops'"),
    ("system,prompt_id,measure,value\nA,0,m,1\nA,,m,1\n",
     r"line 3: column 'prompt_id' is empty"),
    ("system,prompt_id,measure,value\nA,0,m,1\nA,0,m,2\n",
     r"duplicate score for story 'A/0' and measure 'm' at .*line 2 and line 3"),
    ("system,prompt_id,measure,value\nA,0,m,1\nA,1,m,1\nB,0,m,1\nB,2,m,1\n",
     r"different prompt sets: 'B' lacks prompts \[1\] and has extra prompts \[2\]"),
    ("system,prompt_id,measure,value\n", r"no rows"),
    ("system,prompt_id,measure,value\n,0,m,1\n", r"line 2: column 'system' is empty"),
])
def test_validation_messages_name_file_column_row(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(InputError, match=message) as info:
        read_scores(path)
    assert str(path) in str(info.value)


def test_missing_values_are_kept_not_dropped(tmp_path):
    ds = read_scores(_write(tmp_path, "system,prompt_id,measure,value\nA,0,m,\nA,1,m,2\n"))
    assert np.isnan(ds.table.loc[("A", 0), "m"]) and len(ds.table) == 2


def test_unknown_file_and_format(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_scores(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="cannot tell the format"):
        read_scores(_write(tmp_path, GOOD, "scores.xyz"))


def test_with_scores_joins_on_story_id(tmp_path):
    ds = load_hanna()
    new = pd.DataFrame({"story_id": ["Human/0", "Human/1", "GPT-2/5"], "measure": "mine",
                        "value": [0.1, 0.2, 0.3]})
    with pytest.warns(DroppedStoriesWarning, match=r"3 of the 1056 stories .* 1053 stories "
                      r"dropped .*'Human' \(94 of 96\), 'BertGeneration' \(all 96\)"):
        joined = ds.with_scores(new)
    assert len(joined.table) == 3
    assert joined.table.loc[("GPT-2", 5), "mine"] == 0.3
    assert joined.table.loc[("GPT-2", 5), "Relevance"] == ds.table.loc[("GPT-2", 5), "Relevance"]
    assert joined.describe("mine")["kind"] == "metric"
    left = ds.with_scores(new, how="left")
    assert len(left.table) == 1056 and left.table["mine"].notna().sum() == 3
    bad = new.assign(story_id=["Human/0", "Nobody/1", "GPT-2/5"])
    with pytest.raises(InputError, match=r"not in dataset 'hanna', e.g. \['Nobody/1'\]"):
        ds.with_scores(bad)
    with pytest.raises(InputError, match="repeat measures"):
        ds.with_scores(new.assign(measure="BLEU Ξ§"))


def test_read_score_table_needs_only_story_measure_value(tmp_path):
    path = _write(tmp_path, "story_id,measure,value\nHuman/0,len,12\n")
    table = read_score_table(path)
    assert table.loc[0, "value"] == 12.0


def test_read_hanna_wide_validation(tmp_path):
    path = _write(tmp_path, 'Model,m\nA,"[1, 2]"\nB,"[1, 2, 3]"\n', "wide.csv")
    with pytest.raises(InputError, match=r"line 3 \(system 'B'\): lists of different lengths"):
        read_hanna_wide(path)
    path = _write(tmp_path, 'Model,m\nA,"[1, 2"\n', "wide2.csv")
    with pytest.raises(InputError, match=r"line 2, column 'm': not a JSON list"):
        read_hanna_wide(path)
    path = _write(tmp_path, 'System,m\nA,"[1]"\n', "wide3.csv")
    with pytest.raises(InputError, match="missing column 'Model'"):
        read_hanna_wide(path)


def test_catalogue_inference_for_user_names():
    cat = infer_catalogue(["Relevance", "MyLLM CH 2", "MyLLM AVG 2", "my metric"],
                          criteria=["Relevance", "Coherence"],
                          codes={"Coherence": "CH"}).set_index("measure")
    assert cat.loc["Relevance", "kind"] == "human_criterion"
    assert (cat.loc["MyLLM CH 2", "rater"], cat.loc["MyLLM CH 2", "criterion"]) == \
        ("MyLLM 2", "Coherence")
    # without declared criteria nothing is a human criterion or a criterion-specific rating
    plain = infer_catalogue(["Relevance", "MyLLM CH 2"]).set_index("measure")
    assert set(plain["kind"]) == {"metric"}
    assert cat.loc["MyLLM AVG 2", "criterion"] == "AVG"
    assert (cat.loc["my metric", "kind"], cat.loc["my metric", "reference"]) == ("metric", "")
    assert set(CRITERIA) == set(load_hanna().catalogue.query("kind == 'human_criterion'").measure)
