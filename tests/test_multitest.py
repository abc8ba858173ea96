"""Tests of storyeval.compare.multitest (p-value adjustment within explicit families)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from storyeval.compare.multitest import adjust_frame, adjust_pvalues
from storyeval.exceptions import InputError

# our method -> (scipy false_discovery_control method or None, statsmodels multipletests method)
REFERENCES = {
    "bh": ("bh", "fdr_bh"),
    "by": ("by", "fdr_by"),
    "bonferroni": (None, "bonferroni"),
    "holm": (None, "holm"),
}


def _random_families(rng, n_families=12):
    sizes = rng.integers(1, 40, size=n_families)
    p_parts, fam_parts = [], []
    for j, size in enumerate(sizes):
        p = rng.uniform(size=size) ** rng.uniform(0.3, 4)  # from mostly tiny to mostly large
        if size > 3:  # ties, exact 0 and 1
            p[:2] = np.round(p[:2], 1)
            p[2] = p[0]
        if j == 0:
            p[0], p[-1] = 0.0, 1.0
        p_parts.append(p)
        fam_parts.append(np.full(size, f"fam{j}", dtype=object))
    p = np.concatenate(p_parts)
    fam = np.concatenate(fam_parts)
    order = rng.permutation(p.size)  # families interleaved
    return p[order], fam[order]


@pytest.mark.parametrize("method", list(REFERENCES))
def test_matches_scipy_and_statsmodels_per_family(method):
    rng = np.random.default_rng(11)
    p, fam = _random_families(rng)
    got = adjust_pvalues(p, method=method, family=fam)
    scipy_method, sm_method = REFERENCES[method]
    for label in np.unique(fam):
        mask = fam == label
        expected_sm = multipletests(p[mask], method=sm_method)[1]
        np.testing.assert_allclose(got[mask], expected_sm, rtol=0, atol=1e-12)
        if scipy_method is not None:
            expected = stats.false_discovery_control(p[mask], method=scipy_method)
            np.testing.assert_allclose(got[mask], expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", list(REFERENCES))
def test_single_family_default_matches_references(method):
    rng = np.random.default_rng(5)
    p = rng.uniform(size=300) ** 3
    got = adjust_pvalues(p, method=method)
    np.testing.assert_allclose(
        got, multipletests(p, method=REFERENCES[method][1])[1], atol=1e-12, rtol=0
    )
    np.testing.assert_allclose(got, adjust_pvalues(p, method=method, family=np.zeros(300)), atol=0)


def test_hand_worked_bh_and_by():
    # p = 0.01, 0.04, 0.03, 0.20 (m = 4), sorted 0.01, 0.03, 0.04, 0.20:
    #   m p_(i) / i = 0.04, 0.06, 0.0533.., 0.20 -> running min from the top:
    #   0.04, 0.0533.., 0.0533.., 0.20  (in input order: 0.04, 0.0533.., 0.0533.., 0.20)
    got = adjust_pvalues([0.01, 0.04, 0.03, 0.20])
    np.testing.assert_allclose(got, [0.04, 0.16 / 3, 0.16 / 3, 0.20], rtol=1e-15)
    # BY multiplies by c(4) = 1 + 1/2 + 1/3 + 1/4 = 25/12
    got_by = adjust_pvalues([0.01, 0.04, 0.03, 0.20], method="by")
    np.testing.assert_allclose(
        got_by, np.minimum(1, np.array([0.04, 0.16 / 3, 0.16 / 3, 0.20]) * 25 / 12), rtol=1e-15
    )
    # Holm: (m - i + 1) p_(i) = 0.04, 0.09, 0.08, 0.20 -> running max 0.04, 0.09, 0.09, 0.20
    got_holm = adjust_pvalues([0.01, 0.04, 0.03, 0.20], method="holm")
    np.testing.assert_allclose(got_holm, [0.04, 0.09, 0.09, 0.20], rtol=1e-14)


@pytest.mark.parametrize("method", ["bh", "by", "bonferroni", "holm", "none"])
def test_families_are_separate_and_order_invariant(method):
    rng = np.random.default_rng(8)
    p1, p2 = rng.uniform(size=7) ** 2, rng.uniform(size=5) ** 2
    together = adjust_pvalues(np.r_[p1, p2], method=method, family=["x"] * 7 + ["y"] * 5)
    np.testing.assert_array_equal(together[:7], adjust_pvalues(p1, method=method))
    np.testing.assert_array_equal(together[7:], adjust_pvalues(p2, method=method))
    perm = rng.permutation(12)
    fam = np.array(["x"] * 7 + ["y"] * 5)
    shuffled = adjust_pvalues(np.r_[p1, p2][perm], method=method, family=fam[perm])
    np.testing.assert_array_equal(shuffled, together[perm])


@pytest.mark.parametrize("method", ["bh", "by", "bonferroni", "holm", "none"])
def test_nan_excluded_from_m_and_kept(method):
    p = np.array([0.01, np.nan, 0.04, 0.03, np.nan, 0.2])
    fam = np.array(["a", "a", "a", "b", "b", "b"])
    got = adjust_pvalues(p, method=method, family=fam)
    assert np.isnan(got[[1, 4]]).all()
    np.testing.assert_array_equal(got[[0, 2]], adjust_pvalues([0.01, 0.04], method=method))
    np.testing.assert_array_equal(got[[3, 5]], adjust_pvalues([0.03, 0.2], method=method))
    # A family with only NaN stays NaN; an all-NaN input too.
    assert np.isnan(adjust_pvalues([np.nan, np.nan], method=method)).all()


def test_none_and_empty_and_labels_of_any_type():
    p = np.array([0.2, 0.01])
    out = adjust_pvalues(p, method="none")
    np.testing.assert_array_equal(out, p)
    assert out is not p
    assert adjust_pvalues([]).shape == (0,)
    tuples = adjust_pvalues([0.01, 0.04, 0.03], family=[("a", 1), ("b", 2), ("a", 1)])
    np.testing.assert_allclose(tuples, [0.02, 0.04, 0.03], rtol=1e-15)
    series = adjust_pvalues(
        pd.Series([0.01, 0.04, 0.03], index=[5, 6, 7]),
        family=pd.Series(["a", "b", "a"], index=[9, 8, 7]),
    )
    np.testing.assert_allclose(series, [0.02, 0.04, 0.03], rtol=1e-15)


def test_large_input_is_fast_and_correct():
    # Vectorised over families: 200,000 p-values in 20,000 families.
    rng = np.random.default_rng(1)
    fam = rng.integers(0, 20_000, size=200_000)
    p = rng.uniform(size=200_000) ** 2
    got = adjust_pvalues(p, family=fam)
    for label in (0, 123, 19_999):
        mask = fam == label
        np.testing.assert_allclose(
            got[mask], stats.false_discovery_control(p[mask]), atol=1e-12, rtol=0
        )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pvalues": [0.1, 1.2]}, r"\[0, 1\].*position 1"),
        ({"pvalues": [-0.1, 0.2]}, "position 0"),
        ({"pvalues": [[0.1, 0.2]]}, "one-dimensional"),
        ({"pvalues": ["a", 0.2]}, "numeric"),
        ({"pvalues": [0.1, 0.2], "family": ["a"]}, "one label per p-value"),
        ({"pvalues": [0.1, 0.2], "family": ["a", None]}, "missing label at position 1"),
        ({"pvalues": [0.1, 0.2], "method": "fdr"}, "method"),
    ],
)
def test_adjust_pvalues_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        adjust_pvalues(**kwargs)


# --------------------------------------------------------------------------------------------
# adjust_frame
# --------------------------------------------------------------------------------------------
def _williams_like_frame(rng):
    rows = []
    for level in ("overall", "system"):
        for crit in ("Relevance", "Coherence", "Empathy", "Surprise", "Engagement", "Complexity"):
            for b in ("BLEU Ξ§", "ChatGPT 1", "BERTScore F1 Ξε"):
                rows.append(
                    {
                        "level": level,
                        "criterion": crit,
                        "measure_a": "Beluga-13B 1",
                        "measure_b": b,
                        "p": float(rng.uniform() ** 2),
                    }
                )
    frame = pd.DataFrame(rows)
    frame.index = np.arange(100, 100 + len(frame))[::-1]  # a non-default index must survive
    return frame


@pytest.mark.parametrize(
    ("by", "keys", "size"),
    [
        ("paper", ["level", "measure_a", "measure_b"], 6),
        ("level", ["level"], 18),
        ("criterion", ["level", "criterion"], 3),
        ("all", [], 36),
        (["level", "measure_b"], ["level", "measure_b"], 6),
    ],
)
@pytest.mark.parametrize("method", ["bh", "by"])
def test_adjust_frame_families_match_groupwise_scipy(by, keys, size, method):
    frame = _williams_like_frame(np.random.default_rng(2))
    out = adjust_frame(frame, by=by, method=method)
    assert out.index.equals(frame.index)
    assert list(out.columns) == [*frame.columns, "p_adjusted", "family"]
    pd.testing.assert_frame_equal(out[frame.columns], frame)  # input columns untouched
    groups = out.groupby(keys, sort=False) if keys else [((), out)]
    n_groups = 0
    for _, g in groups:
        n_groups += 1
        assert len(g) == size
        np.testing.assert_allclose(
            g["p_adjusted"],
            stats.false_discovery_control(g["p"], method=method),
            atol=1e-12,
            rtol=0,
        )
        assert g["family"].nunique() == 1
        assert g["family"].iloc[0].startswith(f"{method} over ")
        assert g["family"].iloc[0].endswith(f"(m={size})")
    assert out["family"].nunique() == n_groups == 36 // size


def test_adjust_frame_family_text():
    frame = _williams_like_frame(np.random.default_rng(3))
    paper = adjust_frame(frame, by="paper")
    row = paper[(paper["level"] == "overall") & (paper["measure_b"] == "BLEU Ξ§")].iloc[0]
    assert row["family"] == (
        "bh over criterion | level=overall, measure_a=Beluga-13B 1, measure_b=BLEU Ξ§ (m=6)"
    )
    assert adjust_frame(frame, by="level")["family"].iloc[-1] == (
        "bh over all tests of the level | level=system (m=18)"
    )
    assert adjust_frame(frame, by="level")["family"].iloc[0] == (
        "bh over all tests of the level | level=overall (m=18)"
    )
    assert adjust_frame(frame, by="criterion", method="by")["family"].iloc[0] == (
        "by over measure pairs | level=overall, criterion=Relevance (m=3)"
    )
    assert adjust_frame(frame, by="all")["family"].iloc[0] == "bh over all tests (m=36)"
    custom = adjust_frame(frame, by=["level", "measure_b"], method="holm")
    assert custom["family"].iloc[0] == (
        "holm over criterion | level=overall, measure_b=BLEU Ξ§ (m=6)"
    )
    stated = adjust_frame(frame, by=["level", "measure_b"], over="the six criteria")
    assert stated["family"].iloc[0] == (
        "bh over the six criteria | level=overall, measure_b=BLEU Ξ§ (m=6)"
    )
    everything = adjust_frame(frame, by=["level", "criterion", "measure_a", "measure_b"])
    assert everything["family"].iloc[0] == (
        "bh over rows | level=overall, criterion=Relevance, measure_a=Beluga-13B 1, "
        "measure_b=BLEU Ξ§ (m=1)"
    )


def test_adjust_frame_paper_family_uses_rater_groups():
    # Criterion-matched LLM measures ("ChatGPT RE 1", "ChatGPT CH 1", ...) differ per criterion;
    # the paper's family is the rater group's criteria, so rater_a/rater_b define it.
    crits = {"Relevance": "RE", "Coherence": "CH", "Empathy": "EM"}
    rows = [
        {
            "level": "overall",
            "criterion": crit,
            "measure_a": f"Beluga-13B {code} 1",
            "measure_b": name if name == "BLEU" else f"{name} {code} 1",
            "rater_a": "Beluga-13B 1",
            "rater_b": name if name == "BLEU" else f"{name} 1",
            "p": p,
        }
        for name, ps in (("ChatGPT", (0.01, 0.02, 0.03)), ("BLEU", (0.001, 0.2, 0.04)))
        for (crit, code), p in zip(crits.items(), ps)
    ]
    frame = pd.DataFrame(rows)
    out = adjust_frame(frame, by="paper")
    np.testing.assert_allclose(out["p_adjusted"], [0.03, 0.03, 0.03, 0.003, 0.2, 0.06], rtol=1e-14)
    assert out["family"].iloc[0] == (
        "bh over criterion | level=overall, rater_a=Beluga-13B 1, rater_b=ChatGPT 1 (m=3)"
    )
    # Without the rater columns, each criterion-matched measure would be its own family.
    alone = adjust_frame(frame.drop(columns=["rater_a", "rater_b"]), by="paper")
    assert alone["family"].str.endswith("(m=1)").all()


def test_adjust_frame_nan_rows_and_custom_columns():
    frame = pd.DataFrame({"group": [1, 1, 1, 2], "pval": [0.01, np.nan, 0.04, 0.5]})
    out = adjust_frame(frame, by=["group"], p_col="pval", out_col="q", family_col="fam")
    assert np.isnan(out["q"].iloc[1])
    # group 1 has m = 2 (the NaN is not counted): 0.01 * 2 / 1 = 0.02, 0.04 * 2 / 2 = 0.04
    np.testing.assert_allclose(out["q"].iloc[[0, 2]], [0.02, 0.04], rtol=1e-15)
    assert out["q"].iloc[3] == 0.5
    assert out["fam"].tolist() == ["bh over rows | group=1 (m=2)"] * 3 + [
        "bh over rows | group=2 (m=1)"
    ]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"by": "paper", "p_col": "pvalue"}, "'pvalue'"),
        ({"by": "sometimes"}, "named family"),
        ({"by": ["level", "nope"]}, "'nope'"),
        ({"by": "paper", "out_col": "level"}, "already exists"),
        ({"by": "paper", "method": "fdr"}, "method"),
    ],
)
def test_adjust_frame_bad_input(kwargs, match):
    frame = _williams_like_frame(np.random.default_rng(4))
    with pytest.raises(InputError, match=match):
        adjust_frame(frame, **kwargs)


def test_adjust_frame_missing_group_value_and_bad_p():
    frame = _williams_like_frame(np.random.default_rng(4))
    bad = frame.copy()
    bad.loc[bad.index[3], "measure_b"] = None
    with pytest.raises(InputError, match=f"'measure_b' has a missing value at row {bad.index[3]}"):
        adjust_frame(bad, by="paper")
    bad = frame.copy()
    bad.loc[bad.index[2], "p"] = 1.5
    with pytest.raises(InputError, match="column 'p'.*position 2"):
        adjust_frame(bad, by="paper")
    with pytest.raises(InputError, match="DataFrame"):
        adjust_frame(frame.to_dict(), by="paper")


def test_adjust_frame_numeric_keys_and_interleaved_families():
    frame = pd.DataFrame({"k": [2.0, 1.0, 2.0, 1.5, 1.0], "j": [7, 7, 7, 7, 8],
                          "p": [0.04, 0.01, 0.02, 0.5, 0.3]})
    out = adjust_frame(frame, by=["k", "j"])
    assert out["family"].tolist() == [
        "bh over rows | k=2, j=7 (m=2)", "bh over rows | k=1, j=7 (m=1)",
        "bh over rows | k=2, j=7 (m=2)", "bh over rows | k=1.5, j=7 (m=1)",
        "bh over rows | k=1, j=8 (m=1)",
    ]
    np.testing.assert_allclose(out["p_adjusted"], [0.04, 0.01, 0.04, 0.5, 0.3], rtol=0,
                               atol=1e-15)


def test_adjust_frame_formats_floats_in_object_columns():
    frame = pd.DataFrame({"k": pd.Series([1.0, "a", 2.5], dtype=object), "p": [0.1, 0.2, 0.3]})
    out = adjust_frame(frame, by=["k"])
    assert out["family"].tolist() == ["bh over rows | k=1 (m=1)", "bh over rows | k=a (m=1)",
                                      "bh over rows | k=2.5 (m=1)"]
