"""storyeval.compare.alt_test: the alternative-annotator test equals the authors' reference
implementation; its invariants; damaged input gives one-line errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from storyeval.compare.alt_test import (
    SkippedAnnotatorWarning,
    alt_test,
    by_rejections,
)
from storyeval.compare.multitest import adjust_pvalues
from storyeval.exceptions import InputError

# Source of the fixtures below: the function ``alt_test`` of the authors' notebook
# (GitHub nitaytech/AltTest, alt_test_example.ipynb, commit 18428b1), run outside this project
# with its return extended to its internal per-annotator p-values (in the order of the
# annotators it tested). HANNA: the embedded data, 960 stories of the 10 generation systems,
# annotators "Human 1..3 <code>", judge "<model> <code> 1", scoring "neg_rmse", epsilon 0.2,
# q 0.05. Values: (winning rate, advantage probability, p-values of Human 1, 2, 3).
HANNA = {
    ('Relevance', 'Beluga-13B'): (1.0, 0.6940972222222221, (5.807451489492027e-53, 4.7082804459243646e-42, 8.90833199266696e-55)),
    ('Relevance', 'OrcaPlatypus'): (1.0, 0.7045138888888888, (3.1075908972954185e-74, 1.0910922388854817e-64, 3.5413252590913215e-71)),
    ('Relevance', 'Mistral-7B'): (1.0, 0.6847222222222222, (2.0161317560261903e-46, 1.0113060079407679e-44, 5.251067807189816e-51)),
    ('Relevance', 'Llama-13B'): (1.0, 0.6760416666666668, (1.4458549148599888e-39, 2.1456552821841087e-41, 1.0351275592999008e-41)),
    ('Relevance', 'ChatGPT'): (1.0, 0.6395833333333334, (1.3459091072102476e-13, 5.264830592886612e-06, 1.7392206024890368e-15)),
    ('Coherence', 'Beluga-13B'): (1.0, 0.6378472222222222, (2.993216276231293e-29, 8.841918193311807e-27, 1.571621036626399e-29)),
    ('Coherence', 'OrcaPlatypus'): (1.0, 0.7312500000000001, (2.536686195999403e-86, 2.1209987632478505e-84, 4.529900602163278e-75)),
    ('Coherence', 'Mistral-7B'): (1.0, 0.6770833333333334, (1.0015424431347335e-50, 7.0847267739408285e-43, 1.3004194041674324e-44)),
    ('Coherence', 'Llama-13B'): (1.0, 0.7197916666666666, (3.943491441708681e-63, 1.7842614898098075e-62, 2.20104531150898e-59)),
    ('Coherence', 'ChatGPT'): (0.0, 0.4920138888888889, (0.9775337296714085, 0.9999259810268225, 0.9041083239622795)),
    ('Empathy', 'Beluga-13B'): (1.0, 0.6930555555555555, (8.636850646914608e-43, 1.9000862743667852e-42, 8.250756106350077e-44)),
    ('Empathy', 'OrcaPlatypus'): (1.0, 0.607638888888889, (2.7600996051465305e-25, 5.077209610519111e-27, 7.692293636469793e-27)),
    ('Empathy', 'Mistral-7B'): (1.0, 0.6690972222222221, (6.845017660716986e-36, 1.1135684984464784e-40, 3.061301151768156e-39)),
    ('Empathy', 'Llama-13B'): (0.3333333333333333, 0.5354166666666668, (0.056726329591381394, 0.018249946518397047, 0.002730147443637471)),
    ('Empathy', 'ChatGPT'): (1.0, 0.6711805555555556, (3.669473603955958e-05, 5.878483547311373e-06, 9.223701385238018e-10)),
    ('Surprise', 'Beluga-13B'): (1.0, 0.7329861111111112, (3.4204511477356505e-60, 1.579133586712247e-64, 1.6488169590947043e-49)),
    ('Surprise', 'OrcaPlatypus'): (1.0, 0.6354166666666666, (3.270449433550383e-33, 5.593536349685302e-47, 2.876378789779016e-30)),
    ('Surprise', 'Mistral-7B'): (1.0, 0.6777777777777777, (4.504729610680566e-40, 1.1653772235050182e-47, 3.061301151768156e-39)),
    ('Surprise', 'Llama-13B'): (1.0, 0.5520833333333334, (0.00011615562156008267, 3.1709873406798287e-06, 0.006744933614430502)),
    ('Surprise', 'ChatGPT'): (1.0, 0.7614583333333332, (9.66414427186714e-29, 2.1475997070626292e-29, 4.462889638025206e-24)),
    ('Engagement', 'Beluga-13B'): (1.0, 0.6739583333333333, (6.525971933305472e-34, 7.709237746824188e-35, 9.34389533704309e-33)),
    ('Engagement', 'OrcaPlatypus'): (1.0, 0.6746527777777778, (2.731147844791564e-49, 1.1342465156022592e-52, 1.137254811176087e-47)),
    ('Engagement', 'Mistral-7B'): (1.0, 0.6697916666666668, (2.6441238243339352e-33, 6.172147049342832e-36, 2.1417012926004467e-38)),
    ('Engagement', 'Llama-13B'): (1.0, 0.65, (2.2456164139077267e-16, 1.75499779566464e-24, 8.308090793760505e-16)),
    ('Engagement', 'ChatGPT'): (0.0, 0.5069444444444445, (0.9999849715537844, 0.9999901826164643, 0.9999750995875113)),
    ('Complexity', 'Beluga-13B'): (1.0, 0.6552083333333333, (3.464507305692773e-24, 4.618768024483425e-28, 2.6815154757573493e-25)),
    ('Complexity', 'OrcaPlatypus'): (1.0, 0.5663194444444444, (8.599485619769616e-17, 4.2455058897188163e-17, 3.680195172352478e-13)),
    ('Complexity', 'Mistral-7B'): (1.0, 0.642361111111111, (4.3716389746058524e-27, 1.129096307173346e-25, 3.132391183366475e-28)),
    ('Complexity', 'Llama-13B'): (0.0, 0.45868055555555554, (0.999999981392389, 0.999907259594084, 0.9999991111421319)),
    ('Complexity', 'ChatGPT'): (0.0, 0.5819444444444445, (0.4188286624651546, 0.33904727003332047, 0.25446248670536525)),
}

# Same source, on the seeded data of `_synthetic` below (reference fed the dicts of the
# non-missing ratings; annotator ann4, with fewer than 30 items, is skipped by both):
# (kind, seed, epsilon) -> (winning rate, advantage probability, p-values of ann0..ann3).
SYNTHETIC = {
    ('numeric', 1, 0.0): (0.0, 0.5044437340153453, (0.3604020040077473, 0.909542392562068, 0.31554734786641636, 0.3225230189512052)),
    ('numeric', 1, 0.1): (0.0, 0.5044437340153453, (0.12021422050063316, 0.6963019127938153, 0.09655579995630115, 0.09383043485140417)),
    ('numeric', 1, 0.2): (0.0, 0.5044437340153453, (0.024218014020315523, 0.37514490187900223, 0.01770053710047965, 0.015572002386929878)),
    ('numeric', 2, 0.0): (0.0, 0.458658505673431, (0.7678047187485221, 0.5934862343054392, 0.7303581225554454, 0.8626102854546464)),
    ('numeric', 2, 0.1): (0.0, 0.458658505673431, (0.4707781386229757, 0.27736945252089373, 0.4268429708688919, 0.6103715847738514)),
    ('numeric', 2, 0.2): (0.0, 0.458658505673431, (0.1901979815072686, 0.07939381230178623, 0.16354808953160918, 0.296056590607637)),
    ('categorical', 1, 0.0): (0.0, 0.8128743803401337, (0.9551674239931656, 0.7910356041982782, 0.7910099452794357, 0.29057514400514667)),
    ('categorical', 1, 0.1): (0.0, 0.8128743803401337, (0.5390611225243189, 0.24542802787546109, 0.251849542299967, 0.03446309593002791)),
    ('categorical', 1, 0.2): (0.75, 0.8128743803401337, (0.06593330002824649, 0.015503776551072056, 0.01710271333724593, 0.0012392746074793872)),
    ('categorical', 2, 0.0): (0.0, 0.8975254303599374, (0.013379456486545201, 0.5, 0.24761956741861735, 0.1139064593445484)),
    ('categorical', 2, 0.1): (0.75, 0.8975254303599374, (0.00018325858523746973, 0.04117880961240289, 0.012681534397376668, 0.0023597153696477058)),
    ('categorical', 2, 0.2): (1.0, 0.8975254303599374, (8.405800292224911e-07, 0.0003757686327973763, 0.00011587474019663763, 8.523559285909578e-06)),
}


def _synthetic(kind: str, seed: int) -> tuple[pd.Series, pd.DataFrame]:
    """Items x annotators with gaps, one sparse annotator, and a judge."""
    rng = np.random.default_rng(seed)
    n, k = 80, 5
    if kind == "numeric":
        truth = rng.integers(1, 6, n)
        humans = np.clip(truth[:, None] + rng.integers(-1, 2, (n, k)), 1, 5).astype(float)
        judge = np.round(truth + rng.normal(0.0, 0.7, n), 2)
    else:
        truth = rng.integers(0, 4, n)
        codes = np.where(rng.random((n, k)) < 0.7, truth[:, None], rng.integers(0, 4, (n, k)))
        humans = np.array(list("abcd"), dtype=object)[codes]
        judge = np.array(list("abcd"), dtype=object)[
            np.where(rng.random(n) < 0.75, truth, rng.integers(0, 4, n))]
    frame = pd.DataFrame(humans, index=[f"item{i}" for i in range(n)],
                         columns=[f"ann{j}" for j in range(k)])
    frame = frame.mask(rng.random((n, k)) < 0.15)
    frame.iloc[20:, k - 1] = np.nan  # a sparse annotator (20 items < 30): skipped
    return pd.Series(judge, index=frame.index), frame


@pytest.fixture(scope="module")
def hanna():
    from storyeval.data import load_hanna

    data = load_hanna(include_human_stories=False)
    return data.catalogue, data.wide()


@pytest.mark.parametrize("key", list(HANNA))
def test_equals_reference_on_hanna(hanna, key):
    catalogue, wide = hanna
    criterion, model = key
    annotators = catalogue.query("kind == 'annotator' and criterion == @criterion")["measure"]
    judge = catalogue.query("rater == @model + ' 1' and criterion == @criterion")["measure"]
    res = alt_test(wide[judge.item()], wide[list(annotators)], scoring="neg_rmse", epsilon=0.2)
    winning, advantage, pvalues = HANNA[key]
    assert res.winning_rate == pytest.approx(winning, abs=1e-9)
    assert res.advantage_probability == pytest.approx(advantage, abs=1e-9)
    np.testing.assert_allclose(res.annotators["pvalue"], pvalues, rtol=1e-9, atol=1e-12)
    assert res.n_items == 960 and res.passed == (winning >= 0.5)


@pytest.mark.parametrize("key", list(SYNTHETIC))
def test_equals_reference_with_gaps_and_labels(key):
    kind, seed, epsilon = key
    judge, humans = _synthetic(kind, seed)
    scoring = "neg_rmse" if kind == "numeric" else "accuracy"
    with pytest.warns(SkippedAnnotatorWarning, match="ann4"):
        res = alt_test(judge, humans, scoring=scoring, epsilon=epsilon, nan_policy="omit")
    winning, advantage, pvalues = SYNTHETIC[key]
    assert res.winning_rate == pytest.approx(winning, abs=1e-12)
    assert res.advantage_probability == pytest.approx(advantage, abs=1e-12)
    np.testing.assert_allclose(res.annotators["pvalue"], pvalues, rtol=1e-9, atol=1e-12)
    assert res.skipped == ("ann4",) and list(res.annotators["annotator"]) == [
        "ann0", "ann1", "ann2", "ann3"]


def test_hand_counted_case_and_t_statistic():
    # 4 items x 3 annotators; leaving out "a": the others are (b, c).
    humans = pd.DataFrame({"a": [1, 5, 3, 2], "b": [1, 4, 3, 2], "c": [2, 4, 3, 3]} | {},
                          index=list("wxyz")).iloc[[0, 1, 2, 3] * 10].reset_index(drop=True)
    judge = pd.Series([1.5, 4.0, 3.0, 2.5] * 10)
    res = alt_test(judge, humans, epsilon=0.1)
    # Leaving out a: item w judge |1.5-1|,|1.5-2| -> rmse 0.5 vs a 1 -> rmse sqrt(0.5): judge
    # wins; x: judge 0 vs a 1: judge wins; y: tie (both win); z: judge 0.5 vs a sqrt(.5): judge.
    # d = W^h - W^f = (-1, -1, 0, -1) repeated: mean -0.75.
    row = res.annotators.set_index("annotator").loc["a"]
    d = np.tile([-1.0, -1.0, 0.0, -1.0], 10)
    expected = stats.ttest_1samp(d, 0.1, alternative="less")
    assert row["mean_difference"] == pytest.approx(-0.75, abs=1e-15)
    assert row["judge_advantage"] == 1.0 and row["annotator_advantage"] == 0.25
    assert row["statistic"] == pytest.approx(expected.statistic, rel=1e-13)
    assert row["pvalue"] == pytest.approx(expected.pvalue, rel=1e-12)
    assert tuple(res) == (res.winning_rate, res.advantage_probability)
    frame = res.to_frame()
    assert set(frame["epsilon"]) == {0.1} and len(frame) == 3


def test_by_rejections_agree_with_by_adjusted_pvalues():
    rng = np.random.default_rng(5)
    for _ in range(200):
        p = rng.random(rng.integers(1, 12)) ** 3
        np.testing.assert_array_equal(by_rejections(p, 0.05),
                                      adjust_pvalues(p, method="by") <= 0.05)
    assert by_rejections([np.nan, 0.0001], 0.05).tolist() == [False, True]
    assert by_rejections([], 0.05).size == 0


@st.composite
def _cases(draw):
    n = draw(st.integers(30, 45))
    k = draw(st.integers(2, 4))
    values = st.integers(1, 5)
    humans = np.array(draw(st.lists(st.lists(values, min_size=k, max_size=k), min_size=n,
                                    max_size=n)), dtype=float)
    judge = np.array(draw(st.lists(st.integers(2, 18), min_size=n, max_size=n))) / 4
    perm = draw(st.permutations(range(n)))
    return humans, judge, np.asarray(perm)


@settings(max_examples=40, deadline=None)
@given(_cases())
def test_renaming_and_reordering_leave_pvalues_unchanged(case):
    humans, judge, perm = case
    names = [f"h{j}" for j in range(humans.shape[1])]
    base = alt_test(judge, pd.DataFrame(humans, columns=names), epsilon=0.1)
    renamed = pd.DataFrame(humans[perm], columns=[f"x{j}" for j in range(humans.shape[1])],
                           index=[f"story-{i}" for i in perm])
    other = alt_test(pd.Series(judge[perm], index=renamed.index), renamed, epsilon=0.1)
    np.testing.assert_allclose(other.annotators["pvalue"], base.annotators["pvalue"],
                               rtol=1e-10, atol=1e-14)
    assert other.winning_rate == base.winning_rate
    assert other.advantage_probability == pytest.approx(base.advantage_probability, abs=1e-15)
    # Reordering the annotators permutes their rows and nothing else.
    flipped = alt_test(judge, pd.DataFrame(humans[:, ::-1], columns=names[::-1]), epsilon=0.1)
    np.testing.assert_allclose(flipped.annotators.set_index("annotator").loc[names, "pvalue"],
                               base.annotators["pvalue"], rtol=1e-10, atol=1e-14)


@settings(max_examples=40, deadline=None)
@given(_cases(), st.floats(0.0, 0.5), st.floats(0.0, 0.5))
def test_larger_epsilon_never_lowers_the_winning_rate(case, e1, e2):
    humans, judge, _ = case
    lo, hi = sorted((e1, e2))
    frame = pd.DataFrame(humans)
    a = alt_test(judge, frame, epsilon=lo, min_items_per_annotator=2)
    b = alt_test(judge, frame, epsilon=hi, min_items_per_annotator=2)
    assert b.winning_rate >= a.winning_rate
    assert a.advantage_probability == b.advantage_probability
    pa, pb = a.annotators["pvalue"].to_numpy(), b.annotators["pvalue"].to_numpy()
    ok = ~np.isnan(pa) & ~np.isnan(pb)
    assert np.all(pb[ok] <= pa[ok] + 1e-12)


def _one_line(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    return message


def test_damaged_input_gives_one_line_errors():
    judge, humans = _synthetic("numeric", 1)
    with pytest.raises(InputError) as e:
        alt_test(judge, humans[["ann0"]])
    assert "at least two" in _one_line(e)
    with pytest.raises(InputError) as e:
        alt_test(judge, humans)  # gaps under nan_policy="raise"
    assert "missing rating" in _one_line(e) and "item" in _one_line(e)
    full = humans.iloc[:, :3].fillna(3.0)
    broken = judge.copy()
    broken.iloc[4] = np.nan
    with pytest.raises(InputError) as e:
        alt_test(broken, full)
    assert "judge has 1 missing rating" in _one_line(e) and "'item4'" in _one_line(e)
    broken.iloc[4] = np.inf
    with pytest.raises(InputError) as e:
        alt_test(broken, full)
    assert "non-finite" in _one_line(e) and "'item4'" in _one_line(e)
    with pytest.raises(InputError) as e, pytest.warns(SkippedAnnotatorWarning):
        alt_test(judge, full.iloc[:10])
    assert "no annotator has 30" in _one_line(e)
    with pytest.raises(InputError) as e:
        alt_test(judge.astype(str) + "x", full)
    assert "numeric" in _one_line(e)
    for bad in ({"epsilon": np.nan}, {"q": 1.0}, {"min_annotators_per_item": 1},
                {"nan_policy": "skip"}, {"scoring": "mse"}):
        with pytest.raises(InputError) as e:
            alt_test(judge, full, **bad)
        _one_line(e)
    with pytest.raises(InputError) as e:
        alt_test(judge.to_numpy()[:5], full)
    assert "one rating per item" in _one_line(e)


def test_callable_scoring_matches_builtin_and_dict_input():
    judge, humans = _synthetic("numeric", 2)

    def neg_rmse(x, others):
        return -float(np.sqrt(np.mean((x - others.astype(float)) ** 2)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedAnnotatorWarning)
        built = alt_test(judge, humans, nan_policy="omit")
        custom = alt_test(judge, humans, scoring=neg_rmse, nan_policy="omit")
        as_dicts = alt_test(judge.to_dict(), {c: humans[c].dropna().to_dict() for c in humans},
                            nan_policy="omit")
    np.testing.assert_allclose(custom.annotators["pvalue"], built.annotators["pvalue"],
                               rtol=1e-12)
    assert custom.scoring == "neg_rmse"
    np.testing.assert_allclose(as_dicts.annotators["pvalue"], built.annotators["pvalue"],
                               rtol=1e-12)


def test_batch_kernels_equal_alt_test():
    from storyeval.compare.alt_test import paired_differences, winning_rates

    rng = np.random.default_rng(11)
    humans = rng.integers(1, 6, (6, 40, 3)).astype(float)
    noise = np.array([0.3, 0.8, 1.2, 1.5, 2.0, 3.0])[:, None]
    judge = np.round(humans.mean(axis=2) + rng.normal(0, 1, (6, 40)) * noise, 1)
    d = paired_differences(judge, humans)
    rates = winning_rates(d, epsilon=0.15)
    assert len(set(rates)) > 1  # passes and failures both checked
    for s in range(6):
        res = alt_test(judge[s], pd.DataFrame(humans[s]), epsilon=0.15)
        np.testing.assert_array_equal(np.stack(list(res.differences.values())), d[s])
        assert rates[s] == res.winning_rate
    labels = rng.integers(0, 3, (50, 4))
    guess = np.where(rng.random(50) < 0.6, labels[:, 0], 2)
    res = alt_test(guess, pd.DataFrame(labels), scoring="accuracy", epsilon=0.05)
    d = paired_differences(guess, labels, scoring="accuracy")
    assert winning_rates(d, epsilon=0.05) == res.winning_rate
    np.testing.assert_array_equal(np.stack(list(res.differences.values())), d)
    with pytest.raises(InputError):
        paired_differences(judge[0], humans[0, :, :1])
