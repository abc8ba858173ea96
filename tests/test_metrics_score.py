"""The metric interface, registry, score table, NaN reasons and the persistent cache."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from storyeval.exceptions import InputError, UndefinedStatisticWarning
from storyeval.metrics import (
    FAMILIES,
    Measure,
    Metric,
    ScoreCache,
    available_metrics,
    get_metric,
    hanna_stories,
    resolve_metrics,
    score,
    validate_stories,
)


@dataclass
class CountingMetric(Metric):
    """Story length in characters (+ reference length); counts the stories it scores and can
    fail after a number of batches (to simulate an interrupted run)."""

    fail_after: int | None = None

    def __post_init__(self):
        self.name = "counting"
        self.scored: list[str] = []
        self.calls = 0

    def measures(self, *, has_reference=True, has_prompt=True):
        return [Measure("chars", "chars", "reference-free", "lexical"),
                Measure("ref chars", "ref chars", "reference-based", "lexical", ("reference",))]

    def config(self):
        return {"v": 1}

    def score_batch(self, stories, references, prompts, measures):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt
        self.calls += 1
        self.scored.extend(stories)
        out = np.array([[len(s), np.nan if r is None else len(r)]
                        for s, r in zip(stories, references)], dtype=float)
        names = [m.name for m in self.measures()]
        return out[:, [names.index(m.name) for m in measures]]


def _stories(n=6):
    return pd.DataFrame({
        "story_id": [f"S/{i}" for i in range(n)],
        "system": "S",
        "prompt_id": range(n),
        "story": [f"story number {i} " + "x" * i for i in range(n)],
        "reference": [f"ref {i}" for i in range(n)],
    })


def test_registry_and_families():
    assert {"rouge", "bleu", "chrf", "surface", "bertscore", "bartscore"} <= set(
        available_metrics())
    assert resolve_metrics("rouge,embedding, rouge") == ["rouge", "bertscore"]
    assert resolve_metrics("fast") == list(FAMILIES["fast"])
    assert resolve_metrics(["model-based"]) == ["bartscore"]
    assert resolve_metrics("evaluate:/some/path") == ["evaluate:/some/path"]
    with pytest.raises(InputError, match="unknown metric 'rogue'. Did you mean 'rouge'"):
        resolve_metrics("rogue")
    with pytest.raises(InputError, match="no metric given"):
        resolve_metrics(" , ")
    with pytest.raises(InputError, match="Known metrics: bartscore, bertscore"):
        get_metric("nope")


def test_measure_validation():
    with pytest.raises(ValueError, match="reference"):
        Measure("x", "x", "reference-maybe", "lexical")
    with pytest.raises(ValueError, match="family"):
        Measure("x", "x", "reference-free", "neural")


def test_validate_stories_errors_name_columns_and_rows():
    with pytest.raises(InputError, match=r"my.csv: missing required column\(s\) \['story'\]"):
        validate_stories(pd.DataFrame({"story_id": ["a"], "text": ["t"]}), source="my.csv")
    with pytest.raises(InputError, match="duplicates .*'a' in data rows \\[0, 1\\]"):
        validate_stories(pd.DataFrame({"story_id": ["a", "a"], "story": ["t", "u"]}))
    with pytest.raises(InputError, match="column 'reference' must hold text; data row 1"):
        validate_stories(pd.DataFrame({"story_id": ["a", "b"], "story": ["t", "u"],
                                       "reference": ["r", 3]}))
    built = validate_stories(pd.DataFrame({"system": ["A"], "prompt_id": [3], "story": ["t"]}))
    assert built["story_id"].tolist() == ["A/3"]
    # text prompt ids are kept as text (as `meta` reads them), whole numbers as integers
    text = validate_stories(pd.DataFrame({"story_id": ["a"], "story": ["t"], "prompt_id": ["x"]}))
    assert text["prompt_id"].tolist() == ["x"]
    whole = validate_stories(pd.DataFrame({"story_id": ["a", "b"], "story": ["t", "u"],
                                           "prompt_id": ["7", 8.0]}))
    assert whole["prompt_id"].tolist() == [7, 8] and str(whole["prompt_id"].dtype) == "Int64"
    split = validate_stories(pd.DataFrame({"story_id": ["A/x", "B/7"], "story": ["t", "u"]}))
    assert split["system"].tolist() == ["A", "B"] and split["prompt_id"].tolist() == ["x", "7"]


def test_score_table_shape_reasons_and_catalogue():
    df = _stories(4)
    df.loc[1, "reference"] = None
    df.loc[2, "story"] = "   "
    df.loc[3, "reference"] = df.loc[3, "story"]
    out, cat = score(df, [CountingMetric()], show_progress=False, return_catalogue=True)
    assert list(out.columns) == ["story_id", "system", "prompt_id", "measure", "value", "reason"]
    assert not out.duplicated(["story_id", "measure"]).any()
    assert len(out) == 8
    v = out.set_index(["story_id", "measure"])
    assert v.loc[("S/0", "chars"), "value"] == len(df.loc[0, "story"])
    assert v.loc[("S/0", "ref chars"), "value"] == 5 and v.loc[("S/0", "ref chars"), "reason"] == ""
    assert v.loc[("S/1", "ref chars"), "reason"] == "no reference"
    assert v.loc[("S/1", "chars"), "value"] == len(df.loc[1, "story"])
    assert np.isnan(v.loc[("S/2", "chars"), "value"])
    assert v.loc[("S/2", "chars"), "reason"] == "empty story"
    assert v.loc[("S/3", "ref chars"), "reason"] == "reference is the story itself"
    kept = score(df, [CountingMetric()], self_reference="keep", show_progress=False)
    assert kept.set_index(["story_id", "measure"]).loc[("S/3", "ref chars"), "value"] > 0
    out.groupby("measure")["value"].describe()  # an ordinary DataFrame (no attrs)
    assert cat["measure"].tolist() == ["chars", "ref chars"]
    assert cat["reference"].tolist() == ["reference-free", "reference-based"]
    assert (cat["kind"] == "metric").all()
    assert str(out["prompt_id"].dtype) == "Int64"


def test_metric_needing_a_missing_column_is_an_input_error():
    df = pd.DataFrame({"story_id": ["a"], "story": ["Once upon a time."]})
    with pytest.raises(InputError, match="metric 'rouge' .*needs a 'reference' column"):
        score(df, "rouge", show_progress=False)
    with pytest.raises(InputError, match="batch_size"):
        score(df, "surface", batch_size=0)
    with pytest.raises(InputError, match="self_reference"):
        score(df, "surface", self_reference="maybe")
    with pytest.raises(InputError, match="options for metric 'bleu'"):
        score(pd.DataFrame({"story_id": ["a"], "story": ["x"], "reference": ["y"]}), "bleu",
              options={"bleu": {"no_such_option": 1}})


def test_undefined_values_warn_and_carry_a_reason():
    df = pd.DataFrame({"story_id": ["a"], "story": ["Hi."]})
    with pytest.warns(UndefinedStatisticWarning, match="undefined for their text"):
        out = score(df, "surface", show_progress=False)
    row = out.set_index("measure").loc["Distinct-3"]
    assert np.isnan(row["value"]) and row["reason"].startswith("undefined")


def test_cache_reuses_and_resumes(tmp_path):
    df = _stories(10)
    first = CountingMetric()
    a = score(df, [first], cache=tmp_path, batch_size=3, show_progress=False)
    assert len(first.scored) == 10
    again = CountingMetric()
    b = score(df, [again], cache=tmp_path, batch_size=3, show_progress=False)
    assert again.scored == []  # everything came from the cache
    pd.testing.assert_frame_equal(a, b)
    # an interrupted run keeps the batches it finished
    other = tmp_path / "other"
    broken = CountingMetric(fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        score(df, [broken], cache=other, batch_size=3, show_progress=False)
    (path,) = other.glob("counting-*.sqlite")
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 6
    resumed = CountingMetric()
    c = score(df, [resumed], cache=other, batch_size=3, show_progress=False)
    assert len(resumed.scored) == 4
    pd.testing.assert_frame_equal(a, c)


def test_cache_key_depends_on_texts_and_configuration(tmp_path):
    df = _stories(3)
    score(df, [CountingMetric()], cache=tmp_path, show_progress=False)
    changed = df.copy()
    changed.loc[0, "reference"] = "another reference"
    m = CountingMetric()
    score(changed, [m], cache=tmp_path, show_progress=False)
    assert m.scored == [df.loc[0, "story"]]  # only the pair whose reference changed
    assert CountingMetric().config_key() != get_metric("bleu").config_key()
    assert get_metric("bleu").config_key() != get_metric("bleu", lowercase=True).config_key()
    with ScoreCache(tmp_path, metric="m", config_key="k", config={}, measures=["a"]) as c:
        c.put_many([("x", [1.0]), ("y", [float("nan")])])
        got = c.get_many(["x", "y", "z"])
    assert got["x"] == [1.0] and np.isnan(got["y"][0]) and "z" not in got


def test_hanna_stories_shape():
    df = hanna_stories()
    assert len(df) == 672 and df["story_id"].is_unique
    assert df.groupby("system").size().eq(96).all()
    human = hanna_stories(include="human")
    assert human["reference"].isna().all() and human["prompt_id"].tolist() == list(range(96))
    llm = hanna_stories(include="llm")
    # every LLM story's reference is the human story of the same prompt
    ref = llm.merge(human[["prompt_id", "story"]], on="prompt_id", suffixes=("", "_human"))
    assert (ref["reference"] == ref["story_human"]).all()
    with pytest.raises(InputError, match="include"):
        hanna_stories(include="robots")


def test_score_table_is_accepted_by_the_data_layer():
    from storyeval.data import validate_scores

    out = score(hanna_stories(include="human").head(5), "surface", show_progress=False)
    clean = validate_scores(out, source="scores")
    assert len(clean) == len(out)
