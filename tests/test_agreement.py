"""Tests of storyeval.agreement.coefficients: Gwet's AC1, Fleiss' kappa, Krippendorff's alpha, and the
annotators' ICC(2,k) (on the HANNA data and small wide tables; a synthetic ragged dataset is in
tests/test_agreement_data.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from storyeval.agreement.coefficients import (
    AgreementResult,
    annotator_icc,
    category_counts,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
)
from storyeval.exceptions import InputError, UndefinedStatisticWarning

# Hand-worked case: 4 items x 3 raters, binary labels.
SMALL = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]]


def labelled(rng, n, raters, q, *, agree=0.6, missing=0.0):
    """Labels 0..q-1 with some agreement, NaN for missing ratings."""
    truth = rng.integers(0, q, size=n)
    y = np.where(rng.random((n, raters)) < agree, truth[:, None],
                 rng.integers(0, q, size=(n, raters))).astype(float)
    y[rng.random((n, raters)) < missing] = np.nan
    return y


# ----------------------------------------------------------------------------- Gwet's AC1
def test_ac1_hand_worked_binary():
    # pa: item terms 1, (2*1)/(3*2) = 1/3, 1, 1 -> pa = (10/3)/4 = 5/6.
    # pi_1 = (1 + 2/3 + 0 + 1)/4 = 2/3 -> pe = (2/3*1/3 + 1/3*2/3)/(2-1) = 4/9.
    # AC1 = (5/6 - 4/9)/(1 - 4/9) = (7/18)/(5/9) = 7/10.
    res = gwet_ac1(SMALL, categories=[0, 1])
    assert res.percent_agreement == pytest.approx(5 / 6, abs=1e-15)
    assert res.chance_agreement == pytest.approx(4 / 9, abs=1e-15)
    assert res.statistic == pytest.approx(0.7, abs=1e-15)
    # Variance by hand (n = n2 = 4, f = 0): AC1_i = (pa_i - 4/9)/(5/9) = 1, -1/5, 1, 1;
    # pe_i = sum_k (r_ik/r_i)(1 - pi_k): 1/3, 4/9, 2/3, 1/3; AC1*_i = AC1_i - 2*0.3*(pe_i-4/9)/(5/9)
    # = 1.12, -0.2, 0.76, 1.12; deviations from 0.7: .42, -.9, .06, .42 -> sum sq = 1.1664;
    # var = 1.1664 / (4*3) = 0.0972.
    assert res.standard_error == pytest.approx(math.sqrt(0.0972), abs=1e-12)
    t = stats.t.ppf(0.975, 3)
    low, high = res.confidence_interval()
    assert low == pytest.approx(0.7 - t * math.sqrt(0.0972), abs=1e-12)
    assert high == 1.0  # 0.7 + 3.18 * 0.31 > 1: capped at 1
    assert res.pvalue == pytest.approx(2 * stats.t.sf(0.7 / math.sqrt(0.0972), 3), abs=1e-12)
    assert (res.n_items, res.n_raters, res.n_categories, res.df) == (4, 3, 2, 3.0)


def test_ac1_declared_unobserved_category_changes_pe():
    # Same labels, q = 3 declared categories {0, 1, 2}, 2 never used:
    # pe = (2/3*1/3 + 1/3*2/3 + 0)/(3-1) = 2/9; AC1 = (5/6 - 2/9)/(7/9) = (11/18)/(7/9) = 11/14.
    res3 = gwet_ac1(SMALL, categories=[0, 1, 2])
    assert res3.chance_agreement == pytest.approx(2 / 9, abs=1e-15)
    assert res3.statistic == pytest.approx(11 / 14, abs=1e-15)
    res2 = gwet_ac1(SMALL, categories=[0, 1])
    assert res3.percent_agreement == res2.percent_agreement
    assert res3.statistic > res2.statistic
    # Counts input with the unobserved category as an all-zero column gives the same.
    counts = [[0, 3, 0], [1, 2, 0], [3, 0, 0], [0, 3, 0]]
    via_counts = gwet_ac1(counts, data_format="counts", categories=["no", "yes", "maybe"])
    assert via_counts.statistic == pytest.approx(res3.statistic, abs=1e-15)
    assert via_counts.standard_error == pytest.approx(res3.standard_error, abs=1e-15)


def test_ac1_missing_ratings_hand_worked():
    # Item 2 has one rating (excluded from pa, kept in pi); item 4 has none (excluded).
    y = [["a", "a", "b"], ["b", "b", None], ["a", np.nan, None], [None, None, None]]
    res = gwet_ac1(y, categories=["a", "b"])
    # pa over items with r_i >= 2: (2*1)/(3*2) = 1/3 and 1 -> 2/3.
    # pi_a = (2/3 + 0 + 1)/3 = 5/9 -> pe = 2 * 5/9 * 4/9 = 40/81; AC1 = (2/3-40/81)/(41/81) = 14/41.
    assert res.percent_agreement == pytest.approx(2 / 3, abs=1e-15)
    assert res.chance_agreement == pytest.approx(40 / 81, abs=1e-15)
    assert res.statistic == pytest.approx(14 / 41, abs=1e-15)
    assert res.n_items == 3 and res.n_items_excluded == 1


def test_ac1_finite_population_correction():
    base = gwet_ac1(SMALL, categories=[0, 1])
    fpc = gwet_ac1(SMALL, categories=[0, 1], population_size=8)
    assert fpc.statistic == base.statistic
    assert fpc.standard_error == pytest.approx(base.standard_error * math.sqrt(1 - 4 / 8))
    with pytest.raises(InputError, match="population_size"):
        gwet_ac1(SMALL, categories=[0, 1], population_size=2)


def test_ac1_invariant_to_label_names_and_order():
    rng = np.random.default_rng(3)
    y = labelled(rng, 40, 3, 3, missing=0.1)
    res = gwet_ac1(y, categories=[0, 1, 2])
    names = np.where(np.isnan(y), None, np.array(["x", "y", "z"], dtype=object)[
        np.nan_to_num(y).astype(int)])
    renamed = gwet_ac1(names, categories=["z", "x", "y"])
    assert renamed.statistic == pytest.approx(res.statistic, abs=1e-14)
    assert renamed.standard_error == pytest.approx(res.standard_error, abs=1e-14)
    shuffled = gwet_ac1(y[:, [2, 0, 1]][rng.permutation(40)], categories=[0, 1, 2])
    assert shuffled.statistic == pytest.approx(res.statistic, abs=1e-14)


@pytest.mark.parametrize("seed,q,missing", [(0, 2, 0.0), (1, 3, 0.15), (2, 5, 0.3)])
def test_ac1_equals_irrcac_when_installed(seed, q, missing):
    # irrCAC (Fergadis 2022, GPL, a port of Gwet's R package) is an optional test reference
    # only: storyeval does not depend on it. Installed in the dev venv with --no-deps.
    raw = pytest.importorskip("irrCAC.raw")
    y = labelled(np.random.default_rng(seed), 60, 4, q, missing=missing)
    cats = list(range(q))
    ref = raw.CAC(pd.DataFrame(y), categories=cats, digits=12).gwet()["est"]
    res = gwet_ac1(y, categories=cats)
    assert res.statistic == pytest.approx(float(ref["coefficient_value"]), abs=1e-10)
    assert res.standard_error == pytest.approx(float(ref["se"]), abs=1e-10)
    assert res.confidence_interval() == pytest.approx(tuple(map(float, ref["confidence_interval"])),
                                                      abs=1e-10)
    assert res.percent_agreement == pytest.approx(float(ref["pa"]), abs=1e-10)
    assert res.chance_agreement == pytest.approx(float(ref["pe"]), abs=1e-10)
    assert res.pvalue == pytest.approx(float(ref["p_value"]), abs=1e-10)


def test_ac1_undefined_and_bad_input():
    with pytest.warns(UndefinedStatisticWarning, match="at least 2 ratings"):
        res = gwet_ac1([[1, np.nan], [0, np.nan]], categories=[0, 1])
    assert math.isnan(res.statistic) and res.reason
    assert math.isnan(res.confidence_interval()[0])
    with pytest.raises(InputError, match="categories is required"):
        gwet_ac1(SMALL)
    with pytest.raises(InputError, match="label 2 at item 1, rater 0"):
        gwet_ac1([[0, 1], [2, 1]], categories=[0, 1])
    with pytest.raises(InputError, match="at least 2 categories"):
        gwet_ac1([[1, 1], [1, 1]], categories=[1])
    with pytest.raises(InputError, match="duplicates"):
        gwet_ac1([[1, 1], [1, 0]], categories=[0, 1, 1])
    with pytest.raises(InputError, match="item 1, column 0"):
        gwet_ac1([[1, 2], [-1, 3]], data_format="counts")
    with pytest.raises(InputError, match="categories has 3 entries but counts has 2"):
        gwet_ac1([[1, 2], [1, 2]], data_format="counts", categories=[0, 1, 2])
    with pytest.raises(InputError, match="data_format"):
        gwet_ac1(SMALL, categories=[0, 1], data_format="wide")
    with pytest.raises(InputError, match="2-D"):
        gwet_ac1([0, 1, 1], categories=[0, 1])
    with pytest.raises(InputError, match="confidence_level"):
        gwet_ac1(SMALL, categories=[0, 1], confidence_level=95)


def test_result_tuple_and_frame():
    res = gwet_ac1(SMALL, categories=[0, 1])
    assert isinstance(res, AgreementResult)
    stat, p = res
    assert (stat, p) == (res.statistic, res.pvalue)
    frame = res.to_frame()
    assert frame.loc[0, "method"] == "gwet_ac1" and frame.loc[0, "n_categories"] == 2
    assert res.confidence_interval(0.5)[1] < 1.0


def test_category_counts():
    counts, cats = category_counts([["a", "b", None], ["b", "b", "b"]])
    assert cats == ("a", "b")
    assert counts.tolist() == [[1, 1], [0, 3]]
    counts, cats = category_counts(np.array([[1.0, 2.0], [np.nan, 1.0]]), categories=[1, 2, 3])
    assert counts.tolist() == [[1, 1, 0], [1, 0, 0]]


# ----------------------------------------------------------------------------- Fleiss' kappa
@pytest.mark.parametrize("seed,q,raters", [(0, 2, 3), (1, 4, 5), (2, 3, 2)])
def test_fleiss_equals_statsmodels(seed, q, raters):
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    y = labelled(np.random.default_rng(seed), 50, raters, q)
    counts, _ = category_counts(y, categories=list(range(q)))
    res = fleiss_kappa(y, categories=list(range(q)))
    assert res.statistic == pytest.approx(sm_fleiss(counts, method="fleiss"), abs=1e-12)
    via_counts = fleiss_kappa(counts, data_format="counts")
    assert via_counts.statistic == pytest.approx(res.statistic, abs=1e-15)


def test_fleiss_hand_worked_and_null_se():
    # p = (4/12, 8/12); P_i = 1, 1/3, 1, 1 -> Pbar = 5/6; Pe = 1/9 + 4/9 = 5/9;
    # kappa = (5/6 - 5/9)/(4/9) = 5/8.
    res = fleiss_kappa(SMALL)
    assert res.statistic == pytest.approx(5 / 8, abs=1e-15)
    # Null variance (Fleiss, Nee & Landis 1979; as R irr::kappam.fleiss): sum pq = 4/9,
    # sum pq(q - p) = 2/9*(1/3) + 2/9*(-1/3) = 0 -> var = 2/(4*3*2) = 1/12.
    assert res.standard_error == pytest.approx(math.sqrt(1 / 12), abs=1e-15)
    assert res.pvalue == pytest.approx(2 * stats.norm.sf(0.625 / math.sqrt(1 / 12)), abs=1e-15)
    assert all(math.isnan(x) for x in res.confidence_interval())


def test_fleiss_bad_input():
    with pytest.raises(InputError, match="same number of ratings per item"):
        fleiss_kappa([[1, 1, np.nan], [0, 1, 1]])
    with pytest.raises(InputError, match="at least 2 ratings"):
        fleiss_kappa([[1, np.nan], [0, np.nan]])
    with pytest.warns(UndefinedStatisticWarning, match="one category"):
        res = fleiss_kappa([[1, 1], [1, 1]], categories=[0, 1])
    assert math.isnan(res.statistic)


# ----------------------------------------------------------------------------- Krippendorff
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
@pytest.mark.parametrize("seed,q,missing", [(0, 5, 0.0), (1, 5, 0.25), (2, 3, 0.4)])
def test_alpha_equals_krippendorff_package(level, seed, q, missing):
    krippendorff = pytest.importorskip("krippendorff")
    y = labelled(np.random.default_rng(seed), 40, 4, q, missing=missing) + 1  # values 1..q
    ref = krippendorff.alpha(reliability_data=y.T, level_of_measurement=level)
    res = krippendorff_alpha(y, level=level)
    assert res.statistic == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_declared_domain_matches_package_value_domain(level):
    krippendorff = pytest.importorskip("krippendorff")
    y = labelled(np.random.default_rng(9), 30, 3, 3, missing=0.2)  # values 0..2; 3, 4 unused
    domain = [0, 1, 2, 3, 4]
    ref = krippendorff.alpha(reliability_data=y.T, level_of_measurement=level,
                             value_domain=domain)
    res = krippendorff_alpha(y, level=level, categories=domain)
    assert res.statistic == pytest.approx(ref, abs=1e-12)


def test_alpha_hand_worked_nominal():
    # Coincidences of SMALL: o_00 = 3, o_01 = o_10 = 1, o_11 = 7; n_0 = 4, n_1 = 8, n = 12.
    # alpha = 1 - (n-1) * (o_01 + o_10) / (2 n_0 n_1) = 1 - 11*2/64 = 21/32.
    res = krippendorff_alpha(SMALL)
    assert res.statistic == pytest.approx(21 / 32, abs=1e-15)
    # D_o = (o_01 + o_10) / n = 2/12; D_e = 2 n_0 n_1 / (n (n-1)) = 64/132; alpha = 1 - D_o/D_e
    assert res.observed_disagreement == pytest.approx(2 / 12, abs=1e-15)
    assert res.expected_disagreement == pytest.approx(64 / 132, abs=1e-15)
    assert np.isnan(res.percent_agreement) and np.isnan(res.chance_agreement)


def test_alpha_ordinal_string_labels_follow_declared_order():
    order = ["low", "mid", "high"]
    y = np.array([["low", "low", "mid"], ["high", "high", "high"], ["mid", "high", None],
                  ["low", "mid", "low"]], dtype=object)
    codes = np.array([[0, 0, 1], [2, 2, 2], [1, 2, np.nan], [0, 1, 0]])
    by_name = krippendorff_alpha(y, level="ordinal", categories=order)
    by_code = krippendorff_alpha(codes, level="ordinal")
    assert by_name.statistic == pytest.approx(by_code.statistic, abs=1e-15)


def test_alpha_undefined_and_bad_input():
    with pytest.warns(UndefinedStatisticWarning, match="single value"):
        res = krippendorff_alpha([[1, 1], [1, 1]])
    assert math.isnan(res.statistic)
    with pytest.raises(InputError, match="level must be"):
        krippendorff_alpha(SMALL, level="ratio")
    with pytest.raises(InputError, match="numeric values"):
        krippendorff_alpha([["a", "b"], ["a", "a"]], level="interval")


# ----------------------------------------------------------------------------- HANNA annotators
@pytest.fixture(scope="module")
def hanna():
    from storyeval.data import load_hanna

    return load_hanna()


@pytest.fixture(scope="module")
def hanna_wide(hanna):
    return hanna.wide()


def test_annotator_icc_equals_pingouin_per_criterion(hanna, hanna_wide):
    pg = pytest.importorskip("pingouin")
    table = annotator_icc(hanna)
    columns = hanna.annotators()
    assert table["criterion"].tolist() == list(columns) == hanna.criteria
    assert (table["n_items"] == 1056).all() and (table["k"] == 3).all()
    assert (table["n_items_omitted"] == 0).all()
    pd.testing.assert_frame_equal(annotator_icc(hanna_wide, columns), table)
    for crit in ("Relevance", "Complexity"):
        long = hanna_wide[columns[crit]].reset_index(drop=True).rename_axis("story").reset_index(
            ).melt(id_vars="story", var_name="annotator", value_name="rating")
        ref = pg.intraclass_corr(long, targets="story", raters="annotator",
                                 ratings="rating").set_index("Type")
        row = "ICC(A,k)" if "ICC(A,k)" in ref.index else "ICC2k"
        got = table.set_index("criterion").at[crit, "icc2k"]
        assert got == pytest.approx(float(ref.at[row, "ICC"]), abs=1e-10)


def test_annotator_icc_pinned_hanna_values(hanna):
    # The numbers `storyeval agreement` has always printed (tests/test_cli_agreement.py).
    icc = annotator_icc(hanna).set_index("criterion")["icc2k"].round(3).to_dict()
    assert icc == {"Relevance": 0.325, "Coherence": -0.179, "Empathy": 0.282, "Surprise": 0.139,
                   "Engagement": 0.397, "Complexity": 0.536}


def test_annotator_icc_excluding_human_stories(hanna, hanna_wide):
    table = annotator_icc(hanna, exclude_systems=["Human"])
    assert (table["n_items"] == 960).all()
    cols = hanna.annotators()["Engagement"]
    generated = hanna_wide.drop(index="Human", level="system")[cols].to_numpy()
    from storyeval.agreement.icc import icc2k

    assert table.set_index("criterion").at["Engagement", "icc2k"] == pytest.approx(
        icc2k(generated).statistic, abs=1e-12)
    pd.testing.assert_frame_equal(
        annotator_icc(hanna_wide, hanna.annotators(), exclude_systems=["Human"]), table)


def test_annotator_icc_different_k_per_criterion():
    from storyeval.agreement.icc import icc2k

    rng = np.random.default_rng(5)
    wide = pd.DataFrame(rng.integers(1, 6, size=(30, 5)).astype(float),
                        columns=["a1", "a2", "b1", "b2", "b3"])
    table = annotator_icc(wide, {"A": ["a1", "a2"], "B": ["b1", "b2", "b3"]})
    assert table["k"].tolist() == [2, 3]
    assert table["icc2k"].tolist() == pytest.approx(
        [icc2k(wide[["a1", "a2"]]).statistic, icc2k(wide[["b1", "b2", "b3"]]).statistic],
        abs=1e-12)


def test_annotator_icc_ragged_omit_and_raise():
    from storyeval.agreement.icc import icc2k

    rng = np.random.default_rng(6)
    index = pd.MultiIndex.from_product([["s1", "s2"], range(10)], names=["system", "prompt_id"])
    wide = pd.DataFrame(rng.integers(1, 6, size=(20, 3)).astype(float), index=index,
                        columns=["x", "y", "z"])
    wide.iloc[[3, 12], 1] = np.nan
    wide.iloc[15, 2] = np.nan
    table = annotator_icc(wide, {"Fun": ["x", "y", "z"]}, nan_policy="omit")
    assert (table.at[0, "n_items"], table.at[0, "n_items_omitted"]) == (17, 3)
    assert table.at[0, "icc2k"] == pytest.approx(icc2k(wide.dropna()).statistic, abs=1e-12)
    with pytest.raises(InputError, match=r"criterion 'Fun': annotator column 'y' has no rating "
                                         r"for story 's1/3'.*3 of 20 stories"):
        annotator_icc(wide, {"Fun": ["x", "y", "z"]})


def test_annotator_icc_bad_input(hanna, hanna_wide):
    with pytest.raises(InputError, match="unknown system"):
        annotator_icc(hanna_wide, hanna.annotators(), exclude_systems=["GPT-5"])
    with pytest.raises(InputError, match="unknown system"):
        annotator_icc(hanna, exclude_systems=["GPT-5"])
    with pytest.raises(InputError, match="not in wide"):
        annotator_icc(hanna_wide, {"Relevance": ["Human 1 RE", "Human 9 RE"]})
    with pytest.raises(InputError, match="annotators is required"):
        annotator_icc(hanna_wide)
    with pytest.raises(InputError, match="at least 2 distinct annotator columns"):
        annotator_icc(hanna_wide, {"Relevance": ["Human 1 RE"]})
    with pytest.raises(InputError, match="annotators is empty"):
        annotator_icc(hanna_wide, {})
    with pytest.raises(InputError, match="nan_policy"):
        annotator_icc(hanna, nan_policy="drop")
    with pytest.raises(InputError, match="DataFrame"):
        annotator_icc(hanna_wide.to_numpy())


def test_annotator_icc_dataset_without_annotators():
    from storyeval.data import ratings_to_dataset

    ratings = pd.DataFrame({"system": ["A", "A", "B", "B"], "prompt_id": [0, 1, 0, 1],
                            "criterion": "Fun", "value": [1, 2, 4, 5]})
    with pytest.raises(InputError, match="no criterion rated by at least 2 annotators"):
        annotator_icc(ratings_to_dataset(ratings))
