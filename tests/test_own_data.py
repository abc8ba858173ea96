"""Any dataset, first class: readers, roles, honest errors, and statistics on user data checked
against independent scipy computations (issue 12)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.cli import main
from storyeval.data import (
    describe_dataset,
    load_hanna,
    ratings_to_dataset,
    read_dataset,
    wide_to_dataset,
)
from storyeval.exceptions import InputError, SuspiciousDataWarning
from storyeval.meta import meta_evaluate

SYSTEMS = ["alpha-gen", "beta_lm", "gamma 3", "delta", "eps"]
PROMPTS = [f"item-{i}" for i in range(12)]


def _ratings(seed: int = 3, *, ragged: bool = True, criteria=("Humour", "Clarity")) -> pd.DataFrame:
    """Long ratings: 5 systems x 12 prompts; 2-4 of 4 annotators per story when ragged."""
    rng = np.random.default_rng(seed)
    rows = []
    for s, system in enumerate(SYSTEMS):
        for prompt in PROMPTS:
            latent = s / 2 + rng.normal()
            k = int(rng.integers(2, 5)) if ragged else 4
            for ann in rng.permutation(["ann-a", "ann-b", "ann-c", "ann-d"])[:k]:
                for crit in criteria:
                    value = float(np.clip(np.rint(2 + latent + rng.normal(0, 0.8)), 1, 5))
                    rows.append((system, prompt, crit, ann, value))
    return pd.DataFrame(rows, columns=["system", "prompt_id", "criterion", "annotator", "value"])


def _scores(ratings: pd.DataFrame, seed: int = 4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    story = ratings.groupby(["system", "prompt_id"], sort=False)["value"].mean()
    ids = [f"{s}/{p}" for s, p in story.index]
    return pd.concat([
        pd.DataFrame({"story_id": ids, "measure": "good", "value": story.to_numpy()
                      + rng.normal(0, 0.3, len(ids))}),
        pd.DataFrame({"story_id": ids, "measure": "noise", "value": rng.normal(size=len(ids))}),
    ], ignore_index=True)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    ratings = _ratings()
    scores = _scores(ratings)
    paths = {"ratings": tmp_path / "ratings.csv", "good": tmp_path / "good.csv",
             "noise": tmp_path / "noise.tsv"}
    ratings.to_csv(paths["ratings"], index=False)
    scores[scores["measure"] == "good"].to_csv(paths["good"], index=False)
    scores[scores["measure"] == "noise"].to_csv(paths["noise"], index=False, sep="\t")
    return paths


# ----------------------------------------------------------------------------- readers
def test_long_ratings_roles_and_means():
    ratings = _ratings()
    ds = ratings_to_dataset(ratings)
    assert ds.criteria == ["Humour", "Clarity"]
    assert ds.systems == SYSTEMS and ds.prompts == PROMPTS
    expected = ratings.groupby(["system", "prompt_id", "criterion"])["value"].mean()
    got = ds.wide()["Clarity"]
    for (system, prompt), value in got.items():
        assert value == pytest.approx(expected[(system, prompt, "Clarity")], abs=1e-12)
    # ids: 4 annotators, one column each, NaN where an annotator did not rate the story
    assert ds.annotators()["Humour"] == [f"Humour [{a}]" for a in
                                         dict.fromkeys(ratings["annotator"])]
    assert ds.wide()[ds.annotators()["Humour"]].isna().any().any()
    assert ds.reference_system is None and ds.default_reference is None
    assert any("ragged" in note for note in ds.notes)


def test_annotator_slots_when_ids_are_people():
    ratings = _ratings(ragged=False)
    # 20 workers, each rating a few stories: more ids than ratings per story -> slots
    ratings["annotator"] = [f"worker{i % 20}" for i in range(len(ratings))]
    ratings = ratings.drop_duplicates(["system", "prompt_id", "criterion", "annotator"])
    ds = ratings_to_dataset(ratings)
    assert ds.annotators()["Humour"][0] == "Humour [1]"
    assert any("slots" in note for note in ds.notes)
    assert ratings_to_dataset(ratings, annotators="ids").annotators()["Humour"][0].startswith(
        "Humour [worker")


def test_sorted_annotators_warn():
    ratings = _ratings(ragged=False, criteria=("Humour",))
    keys = ["system", "prompt_id", "criterion"]
    ratings["value"] = ratings.groupby(keys)["value"].transform(lambda v: np.sort(v.to_numpy()))
    ratings["annotator"] = ratings.groupby(keys).cumcount().astype(str)
    with pytest.warns(SuspiciousDataWarning, match="look sorted"):
        ratings_to_dataset(ratings, annotators="ids")


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.drop(columns="criterion"), r"bad\.csv: missing column\(s\) \['criterion'\]"),
    (lambda r: r.assign(value=r["value"].astype(object).where(r.index != 4, "x")),
     r"bad\.csv, line 6: column 'value' is not a number: 'x'"),
    (lambda r: pd.concat([r, r.iloc[[0]]]), r"rated story alpha-gen/item-0 on 'Humour' twice"),
    (lambda r: r.assign(system=r["system"].where(r.index != 2, "")),
     r"bad\.csv, line 4: column 'system' is empty"),
])
def test_ratings_errors_name_file_row_and_column(tmp_path, edit, message):
    path = tmp_path / "bad.csv"
    edit(_ratings()).to_csv(path, index=False)
    with pytest.raises(InputError, match=message):
        read_dataset(path)


def test_story_ids_without_system_are_rejected():
    frame = pd.DataFrame({"story_id": ["s1", "s2"], "criterion": "Q", "value": [1, 2]})
    with pytest.raises(InputError, match="does not say its system"):
        ratings_to_dataset(frame)


def test_wide_table_with_column_mapping():
    frame = pd.DataFrame({
        "model": np.repeat(["m1", "m2", "m3"], 4), "item": np.tile([10, 11, 12, 13], 3),
        "q_1": [1, 2, 3, 4, 2, 3, 4, 5, 1, 1, 2, 3], "q_2": [2, 2, 3, 5, 3, 3, 5, 4, 1, 2, 2, np.nan],
        "metric": np.arange(12.0), "story": ["text"] * 12})
    ds = wide_to_dataset(frame, id="system=model,prompt_id=item", criteria=["Quality"],
                         annotators=["q_*"])
    assert ds.criteria == ["Quality"] and ds.annotators()["Quality"] == ["Quality [q_1]",
                                                                       "Quality [q_2]"]
    assert ds.wide()["Quality"].iloc[-1] == 3.0  # mean of the available rating
    assert ds.catalogue.set_index("measure").loc["metric", "kind"] == "metric"
    assert any("ignored non-numeric column(s): story" in n for n in ds.notes)
    with pytest.raises(InputError, match="--id system=nope: no column 'nope'"):
        wide_to_dataset(frame, id="system=nope,prompt_id=item", criteria=["Quality"],
                        annotators=["q_*"])
    with pytest.raises(InputError, match="pattern 'r_\\*' matches no column"):
        wide_to_dataset(frame, id="system=model,prompt_id=item", annotators=["Quality=r_*"])
    with pytest.raises(InputError, match="no human criteria"):
        wide_to_dataset(frame, id="system=model,prompt_id=item")
    with pytest.raises(InputError, match="say which criterion"):
        wide_to_dataset(frame, id="system=model,prompt_id=item", criteria=["A", "B"],
                        annotators=["q_*"])
    with pytest.raises(InputError, match="which columns identify a story"):
        wide_to_dataset(frame, criteria=["metric"])
    twice = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)
    with pytest.raises(InputError, match="same story"):
        wide_to_dataset(twice, id="system=model,prompt_id=item", annotators=["Q=q_*"])


def test_scores_files_are_merged_and_duplicates_name_both_files(files, tmp_path):
    ds = read_dataset(files["ratings"], scores=[files["good"], files["noise"]])
    assert {"good", "noise"} <= set(ds.measures)
    copy = tmp_path / "again.csv"
    copy.write_text(files["good"].read_text())
    with pytest.raises(InputError, match=r"'good' of story .* is in both .*good\.csv and "
                                         r".*again\.csv"):
        read_dataset(files["ratings"], scores=[files["good"], copy])


def test_own_story_ids_beside_system_and_prompt_join_on_the_story(files, tmp_path):
    """A score file with its own id scheme (gen0-item3) and system, prompt_id columns joins on
    (system, prompt_id); one story under two own ids is a duplicate, named."""
    good = pd.read_csv(files["good"])
    good[["system", "prompt_id"]] = good["story_id"].str.split("/", expand=True)
    good["story_id"] = good["system"] + "-item" + good["prompt_id"]
    path = tmp_path / "own_ids.csv"
    good.to_csv(path, index=False)
    ds = read_dataset(files["ratings"], scores=[path])
    ref = read_dataset(files["ratings"], scores=[files["good"]])
    pd.testing.assert_series_equal(ds.wide()["good"], ref.wide()["good"])
    twice = pd.concat([good, good.iloc[:1].assign(story_id="another-id")])
    twice.to_csv(path, index=False)
    with pytest.raises(InputError, match="duplicate score for story"):
        read_dataset(files["ratings"], scores=[path])


def test_long_score_table_declares_its_criteria(tmp_path):
    ratings = _ratings(ragged=False)
    story = ratings.groupby(["system", "prompt_id", "criterion"], sort=False)["value"].mean()
    long = story.reset_index().rename(columns={"criterion": "measure"})
    path = tmp_path / "long.csv"
    long.to_csv(path, index=False)
    assert read_dataset(path).criteria == []
    ds = read_dataset(path, criteria=["Clarity"])
    assert ds.criteria == ["Clarity"]
    assert ds.catalogue.set_index("measure").loc["Humour", "kind"] == "metric"


def test_describe_reports_what_was_understood(files):
    summary = describe_dataset(read_dataset(files["ratings"], scores=[files["good"]]))
    assert summary["n_systems"] == 5 and summary["n_prompts"] == 12 and summary["balanced"]
    assert summary["criteria"]["Humour"]["annotators"] == 4
    assert summary["automatic_measures"] == ["good"]
    assert summary["reference_system"] is None


# ----------------------------------------------------------------------------- statistics
def _independent_means(ratings: pd.DataFrame, criterion: str) -> pd.Series:
    own = ratings[ratings["criterion"] == criterion]
    return own.groupby(["system", "prompt_id"])["value"].mean()


def test_meta_on_user_data_equals_scipy(files):
    ratings = pd.read_csv(files["ratings"])
    scores = pd.read_csv(files["good"]).set_index("story_id")["value"]
    res = meta_evaluate(read_dataset(files["ratings"], scores=[files["good"], files["noise"]]),
                        levels=("overall", "system"))
    for crit in ("Humour", "Clarity"):
        human = _independent_means(ratings, crit)
        metric = scores.reindex([f"{s}/{p}" for s, p in human.index]).to_numpy()
        tau = stats.kendalltau(metric, human.to_numpy()).statistic
        got = res.correlations.query("measure == 'good' and criterion == @crit "
                                     "and level == 'overall'")["value"].item()
        assert got == pytest.approx(tau, abs=1e-12)
        frame = pd.DataFrame({"h": human.to_numpy(), "m": metric,
                              "s": human.index.get_level_values(0)})
        means = frame.groupby("s")[["h", "m"]].mean()
        tau_sys = stats.kendalltau(means["m"], means["h"]).statistic
        got_sys = res.correlations.query("measure == 'good' and criterion == @crit "
                                         "and level == 'system'")["value"].item()
        assert got_sys == pytest.approx(tau_sys, abs=1e-12)
    # no reference rater: all pairs, one test per criterion and level
    assert len(res.comparisons) == 2 * 2
    assert res.settings["reference_system"] is None


def test_baseline_on_complete_annotators_equals_scipy(tmp_path):
    ratings = _ratings(ragged=False, criteria=("Humour",))
    ds = ratings_to_dataset(ratings)
    res = meta_evaluate(ds.with_scores(_scores(ratings)), levels="overall")
    wide = ds.wide()
    cols = ds.annotators()["Humour"]
    upper = np.mean([stats.kendalltau(wide[c], wide["Humour"]).statistic for c in cols])
    loo = np.mean([stats.kendalltau(wide[c], wide[[o for o in cols if o != c]].mean(axis=1))
                   .statistic for c in cols])
    base = res.baseline.set_index("variant")["value"]
    assert base["upper_bound"] == pytest.approx(upper, abs=1e-12)
    assert base["leave_one_out"] == pytest.approx(loo, abs=1e-12)


def test_ragged_baseline_uses_each_annotators_stories():
    ratings = _ratings()
    ds = ratings_to_dataset(ratings)
    res = meta_evaluate(ds.with_scores(_scores(ratings)), levels="overall")
    assert res.settings["baseline_nan_policy"] == "omit"
    wide = ds.wide()
    cols = ds.annotators()["Clarity"]
    taus = []
    for c in cols:
        keep = wide[c].notna()
        taus.append(stats.kendalltau(wide.loc[keep, c], wide.loc[keep, "Clarity"]).statistic)
    got = res.baseline.query("criterion == 'Clarity' and variant == 'upper_bound'")["value"]
    assert got.item() == pytest.approx(np.mean(taus), abs=1e-12)


def test_criteria_and_keywords_say_what_the_dataset_has(files):
    ds = read_dataset(files["ratings"], scores=[files["good"]])
    with pytest.raises(InputError, match="unknown criterion 'Relevance'; dataset 'ratings' "
                                         "has: Humour, Clarity"):
        meta_evaluate(ds, criteria="Relevance")
    with pytest.raises(InputError, match="'llm' selects nothing"):
        meta_evaluate(ds, measures="llm")
    with pytest.raises(InputError, match="no automatic measures at all; add --scores"):
        meta_evaluate(read_dataset(files["ratings"]))


# ----------------------------------------------------------------------------- command line
def test_cli_on_user_files(files, capsys):
    args = ["--data", str(files["ratings"]), "--scores", str(files["good"]),
            "--scores", str(files["noise"])]
    assert main(["describe", *args]) == 0
    out = capsys.readouterr().out
    assert "criterion 'Humour': 4 annotator columns" in out and "good, noise" in out
    assert main(["meta", *args, "--format", "md"]) == 0
    out = capsys.readouterr().out
    assert "Humour" in out and "Clarity" in out and "Human (leave-one-out)" in out
    assert "human-written" not in out and "nan" not in out.lower().replace("nan_policy", "")


@pytest.mark.parametrize("extra, message", [
    (["--criteria", "Overall"], "unknown criterion 'Overall'"),
    (["--metrics", "paper"], "unknown measure 'paper'"),
    (["--id", "system=x"], "--id system=x: no column 'x'"),
])
def test_cli_errors_exit_2_with_a_message(files, capsys, extra, message):
    code = main(["meta", "--data", str(files["ratings"]), "--scores", str(files["good"]),
                 *extra])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_hanna_is_read_through_the_general_path():
    hanna = load_hanna()
    assert read_dataset().criteria == hanna.criteria
    assert hanna.reference_system == "Human" and hanna.default_reference == "Beluga-13B 1"
    assert hanna.annotators()["Surprise"] == ["Human 1 SU", "Human 2 SU", "Human 3 SU"]


def test_no_hanna_name_in_the_core():
    """HANNA's vocabulary lives in its loader (data/hanna.py, data/criteria.py) only."""
    root = Path(__file__).resolve().parents[1] / "storyeval"
    core = [*sorted((root / "meta").glob("*.py")), *sorted((root / "data").glob("*.py")),
            *sorted((root / "resample").glob("*.py")), *sorted((root / "report").glob("*.py"))]
    hanna_words = re.compile(r"Beluga|\"Human\"|'Human'|Human \{?i|Relevance|Coherence|"
                             r"CRITERION_CODES|PAPER_REFERENCE")
    allowed = {"hanna.py", "criteria.py", "__init__.py"}  # __init__ re-exports the loader
    offenders = []
    for path in core:
        if path.name in allowed:
            continue
        code = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                         if not line.lstrip().startswith(("#", ">>>", "...")))
        # docstrings may mention HANNA as an example; code may not use its names
        body = re.sub(r'"""(.|\n)*?"""', "", code)
        if hanna_words.search(body):
            offenders.append(f"{path.relative_to(root)}: {hanna_words.search(body).group()}")
    assert not offenders, offenders


def test_id_maps_the_columns_of_long_tables(tmp_path):
    ratings = _ratings().rename(columns={"system": "model", "prompt_id": "item",
                                         "annotator": "rater", "value": "score"})
    path = tmp_path / "raw.tsv"
    ratings.to_csv(path, sep="\t", index=False)
    ds = read_dataset(path, id="system=model,prompt_id=item,annotator=rater,value=score")
    assert ds.criteria == ["Humour", "Clarity"] and len(ds.annotators()["Humour"]) == 4
    with pytest.raises(InputError, match="which columns identify a story.*value="):
        read_dataset(path)
    with pytest.raises(InputError, match="--id: unknown role 'score'"):
        read_dataset(path, id="score=score")
    both = ratings.assign(system="x")
    both.to_csv(path, sep="\t", index=False)
    with pytest.raises(InputError, match="also has a column named 'system'"):
        read_dataset(path, id="system=model,prompt_id=item")


def test_cli_lower_is_better_is_declared_in_the_header(files, capsys):
    args = ["--data", str(files["ratings"]), "--scores", str(files["good"]),
            "--scores", str(files["noise"]), "--levels", "overall"]
    assert main(["meta", *args, "--lower-is-better", "noise"]) == 0
    out = capsys.readouterr().out
    assert "sign convention 'raw'" in out
    assert "declared lower-is-better, so negated: noise" in out
    assert main(["meta", *args, "--lower-is-better", "noise", "--sign-convention",
                 "paper"]) == 2
    assert "raw" in capsys.readouterr().err
