"""`storyeval meta` reports on data that is not HANNA's default layout: all-pairs Williams
matrices, the size of the adjustment families, headers without a reference system, and
undefined statistics shown as blanks with their reason (never as "nan")."""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from storyeval.compare.multitest import SingleTestFamilyWarning, adjust_frame, family_sizes
from storyeval.data import Dataset
from storyeval.exceptions import InputError
from storyeval.meta.pipeline import meta_evaluate
from storyeval.report.meta_files import write_report
from storyeval.report.meta_report import (
    comparison_caption,
    render,
    settings_lines,
    smallest_pairs,
    to_json,
)

CRITERIA = ["Relevance", "Coherence"]


@pytest.fixture(scope="module")
def all_pairs():
    """Three metrics of the embedded data, every pair tested (no reference rater)."""
    return meta_evaluate(measures="BLEU,chrF,METEOR", criteria=CRITERIA, levels="system",
                         reference="all")


@pytest.fixture(scope="module")
def toy():
    """A dataset of six systems x eight prompts with no reference system: two criteria and
    three metrics (one tracks the criteria, two are noise)."""
    rng = np.random.default_rng(0)
    index = pd.MultiIndex.from_product([list("ABCDEF"), range(8)],
                                       names=["system", "prompt_id"])
    quality = rng.normal(size=len(index))
    table = pd.DataFrame({
        "Relevance": quality + rng.normal(scale=0.3, size=len(index)),
        "Coherence": quality + rng.normal(scale=0.3, size=len(index)),
        "good": quality + rng.normal(scale=0.5, size=len(index)),
        "bad": rng.normal(size=len(index)),
        "worse": rng.normal(size=len(index)),
    }, index=index)
    dataset = Dataset(table, name="toy")
    # Criteria are being generalised: declared explicitly where the Dataset supports it,
    # otherwise recognised by their HANNA names.
    if hasattr(dataset, "with_criteria"):
        dataset = dataset.with_criteria(CRITERIA)
    return dataset


def _no_nan(text: str) -> None:
    assert "nan" not in text.lower().replace("nan_policy", "")


# ----- all pairs -----------------------------------------------------------------------------

def test_all_pairs_matrix_holds_the_adjusted_p_of_each_tested_pair(all_pairs):
    assert all_pairs.comparisons_all_pairs()
    labels = all_pairs.catalogue_labels()
    for criterion in CRITERIA:
        matrix = all_pairs.comparison_matrix("system", criterion)
        rows = all_pairs.comparisons.query("level == 'system' and criterion == @criterion")
        assert matrix.shape == (3, 3) and list(matrix.index) == list(matrix.columns)
        at = pd.Index(matrix.attrs["ids"])
        i, j = at.get_indexer(rows["rater_a"]), at.get_indexer(rows["rater_b"])
        np.testing.assert_array_equal(matrix.to_numpy()[i, j], rows["p_adjusted"].to_numpy())
        assert (i < j).all()  # tests as run fill the upper triangle, and only it
        assert np.isnan(matrix.to_numpy()[np.tril_indices(3)]).all()
        assert list(matrix.index) == [labels[k] for k in matrix.attrs["ids"]]


def test_williams_grid_refuses_all_pairs_with_a_pointer(all_pairs):
    with pytest.raises(InputError, match=r"comparison_matrix\(level, criterion\)"):
        all_pairs.comparison_grid("system")
    with pytest.raises(InputError, match="no comparison tests of criterion 'Empathy'"):
        all_pairs.comparison_matrix("system", "Empathy")
    with pytest.raises(InputError, match="'family' is not a numeric column"):
        all_pairs.comparison_matrix("system", "Relevance", column="family")


@pytest.mark.parametrize("fmt", ["table", "md", "latex"])
def test_all_pairs_render(all_pairs, fmt):
    text = render(all_pairs, fmt)
    for criterion in CRITERIA:
        assert f"system level, {criterion}; cell (row, column)" in text
    assert "upper triangle; lower triangle and diagonal blank" in text
    _no_nan(text)


def test_all_pairs_write_report(all_pairs, tmp_path):
    paths = write_report(all_pairs, tmp_path, figure_formats="png,pdf")
    names = {p.name for p in paths}
    assert "comparisons.csv" in names and "settings.json" in names
    for slug in ("relevance", "coherence"):
        for suffix in ("md", "tex", "csv", "png", "pdf"):
            assert (tmp_path / f"comparisons_system_{slug}.{suffix}").stat().st_size > 0
    table = pd.read_csv(tmp_path / "comparisons_system_relevance.csv")
    matrix = all_pairs.comparison_matrix("system", "Relevance")
    assert list(table["id"]) == matrix.attrs["ids"]
    np.testing.assert_allclose(table[list(matrix.columns)].to_numpy(), matrix.to_numpy())
    tidy = pd.read_csv(tmp_path / "comparisons.csv")
    assert len(tidy) == len(all_pairs.comparisons) == 2 * 3  # criteria x pairs
    assert not (tmp_path / "comparisons_system.csv").exists()


def test_large_matrices_are_listed_by_smallest_p(all_pairs, monkeypatch, tmp_path):
    import storyeval.report.meta_report as report

    monkeypatch.setattr(report, "MATRIX_SHOWN_MAX", 2)
    monkeypatch.setattr(report, "MATRIX_FIGURE_MAX", 2)
    monkeypatch.setattr(report, "SMALLEST_SHOWN", 2)
    text = render(all_pairs)
    assert "Relevance: the 2 smallest adjusted p of 3 pairs of 3 measures" in text
    top = smallest_pairs(all_pairs, "system", "Relevance", n=2)
    rows = all_pairs.comparisons.query("level == 'system' and criterion == 'Relevance'")
    assert top["p_adjusted"].tolist() == sorted(rows["p_adjusted"])[:2]
    paths = write_report(all_pairs, tmp_path)
    assert not any(p.suffix == ".png" and "comparisons" in p.name for p in paths)
    note = (tmp_path / "comparisons_system_relevance.md").read_text()
    assert "no heatmap: 3 measures, more than 2" in note


# ----- family sizes and the m = 1 warning ----------------------------------------------------

def test_family_sizes_hand_checked():
    tests = pd.DataFrame({
        "level": ["overall"] * 4 + ["system"] * 2,
        "criterion": ["Relevance", "Coherence"] * 3,
        "measure_a": "ref",
        "measure_b": ["x", "x", "y", "y", "x", "x"],
        "p": [0.01, 0.02, 0.03, np.nan, 0.04, 0.05],
    })
    # paper: one family per (level, pair); the NaN test does not count in m
    assert family_sizes(adjust_frame(tests, by="paper")) == {
        "overall": {"n_families": 2, "m_min": 1, "m_max": 2},
        "system": {"n_families": 1, "m_min": 2, "m_max": 2}}
    # one family over both levels: each level reports the whole family
    assert family_sizes(adjust_frame(tests, by="all")) == {
        "overall": {"n_families": 1, "m_min": 5, "m_max": 5},
        "system": {"n_families": 1, "m_min": 5, "m_max": 5}}
    assert family_sizes(adjust_frame(tests, by="criterion"))["overall"] == {
        "n_families": 2, "m_min": 1, "m_max": 2}
    assert family_sizes(tests.iloc[:0]) == {}


def test_family_sizes_in_headers_and_json():
    res = meta_evaluate(measures="BLEU,chrF", criteria=CRITERIA, levels="system",
                        reference="Beluga-13B 1")
    williams_line = next(line for line in settings_lines(res) if line.startswith("Williams"))
    assert williams_line.endswith("BH over family 'paper': 2 families of m = 2 tests "
                                  "(system level)")
    assert "family 'paper': 2 families of m = 2 tests)" in comparison_caption(res, "system")
    doc = json.loads(to_json(res))
    assert doc["settings"]["comparisons"]["family_sizes"] == {
        "system": {"n_families": 2, "m_min": 2, "m_max": 2}}
    assert "family_sizes" not in res.settings["comparisons"]  # the result is not changed


def test_single_test_families_warn_once_and_say_so(tmp_path):
    res = meta_evaluate(measures="BLEU", criteria="Relevance", levels="system",
                        reference="Beluga-13B 1")
    with pytest.warns(SingleTestFamilyWarning, match="changes nothing"):
        text = render(res)
    assert "1 family of m = 1 test (system level); m = 1: the adjustment changes nothing; " \
           "choose --family criterion/level/all" in text
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        render(res, "md")
        write_report(res, tmp_path, figures=False)
    assert not [w for w in caught if issubclass(w.category, SingleTestFamilyWarning)]


def test_no_warning_without_adjustment():
    res = meta_evaluate(measures="BLEU", criteria="Relevance", levels="system",
                        reference="Beluga-13B 1", adjust="none")
    text = render(res)  # pytest turns a storyeval warning into an error
    assert "p-values not adjusted for multiple comparisons" in text
    assert "Williams p (not adjusted)" in text


# ----- data without a reference system ---------------------------------------------------------

def test_header_without_a_reference_system(toy):
    res = meta_evaluate(toy, criteria=CRITERIA, reference="all")
    first = settings_lines(res)[0]
    assert first.startswith("dataset: toy; 6 systems, 48 stories")
    for word in ("human", "Human", "references"):
        assert word not in first
    excluded = replace(res, settings={**res.settings, "reference_system": "Gold",
                                      "include_human_stories": False})
    assert settings_lines(excluded)[0].endswith(
        "; stories of 'Gold' excluded (they are the references)")
    included = replace(res, settings={**res.settings, "reference_system": "Human",
                                      "include_human_stories": True})
    assert settings_lines(included)[0].endswith("; stories of 'Human' included")
    noted = replace(res, settings={**res.settings, "dataset_notes": ["Relevance: as given"]})
    assert settings_lines(noted)[1] == "data: Relevance: as given"


@pytest.mark.parametrize("fmt", ["table", "md", "latex"])
def test_toy_all_pairs_render_has_no_nan(toy, fmt):
    res = meta_evaluate(toy, criteria=CRITERIA, reference="all")
    text = render(res, fmt)
    assert "2 families of m = 3 tests" in text  # the default family: one per criterion
    paper = render(meta_evaluate(toy, criteria=CRITERIA, reference="all", family="paper"), fmt)
    assert "3 families of m = 2 tests" in paper  # one per pair of metrics, over 2 criteria
    _no_nan(text)


def test_undefined_values_and_intervals_say_why(toy):
    res = meta_evaluate(toy, criteria=CRITERIA, levels="overall", reference="all",
                        test="williams")
    corr = res.correlations.copy()
    corr["ci_low"], corr["ci_high"] = corr["value"] - 0.1, corr["value"] + 0.1
    corr.loc[0, ["ci_low", "ci_high"]] = np.nan
    corr.loc[1, ["value", "ci_low", "ci_high"]] = np.nan
    corr.loc[1, "reason"] = "constant input"
    baseline = pd.DataFrame({
        "criterion": ["Relevance", "Relevance"], "level": "overall", "coefficient": "kendall_b",
        "variant": ["upper_bound", "leave_one_out"], "value": [0.5, np.nan], "n": 48,
        "n_groups": 1, "n_annotators": 2,
        "reason": ["", "leave-one-out needs at least three annotators"],
        "ci_low": [np.nan, np.nan], "ci_high": [np.nan, np.nan]})
    williams = res.comparisons.copy()
    williams.loc[0, ["p", "p_adjusted"]] = np.nan
    williams.loc[0, "reason"] = "n <= 3"
    settings = {**res.settings, "bootstrap": {"n_resamples": 10, "resample_by": "prompts",
                                              "ci_method": "percentile",
                                              "confidence_level": 0.95, "random_state": 0}}
    broken = replace(res, correlations=corr, baseline=baseline, comparisons=williams,
                     settings=settings)
    text = render(broken)
    _no_nan(text)
    assert "1 value(s): constant input" in text
    assert "1 interval(s) undefined: the coefficient is undefined in every resample" in text
    assert ("Human (leave-one-out): 1 value(s): leave-one-out needs at least three "
            "annotators") in text
    assert "Human (upper bound): 1 interval(s) undefined: the coefficient is undefined" in text
    assert "1 comparison test(s) undefined: n <= 3" in text
    # (good, Relevance): the value alone; (good, Coherence) and the Mean: blank
    assert corr.loc[0, "measure"] == "good" and corr.loc[0, "criterion"] == "Relevance"
    row = next(line for line in text.splitlines() if line.startswith("good "))
    assert re.split(r"\s{2,}", row.strip()) == ["good", f"{corr.loc[0, 'value']:.3f}"]


def test_old_williams_names_are_gone_in_0_4(all_pairs, tmp_path):
    # result.williams & co. and the williams*.csv files were the old names of the comparison
    # table, announced for removal in 0.4
    for name in ("williams", "williams_all_pairs", "williams_matrix", "williams_grid"):
        assert not hasattr(all_pairs, name)
    assert "williams" not in all_pairs.settings
    from storyeval.report.meta_files import write_report

    write_report(all_pairs, tmp_path / "out", figures=False)
    names = {p.name for p in (tmp_path / "out").iterdir()}
    assert "comparisons.csv" in names
    assert not any(n.startswith("williams") for n in names)
    # every row names the test that ran (calibrated default on user-like data)
    assert set(all_pairs.comparisons["test"]) <= {"paper", "permutation-random", "ustat"}
