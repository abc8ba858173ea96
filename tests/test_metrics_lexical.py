"""ROUGE, BLEU, chrF wrappers (packaged evaluate modules) against the libraries called directly."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from storyeval.exceptions import InputError
from storyeval.metrics import get_metric, hanna_stories, score
from storyeval.metrics.bleu import BleuMetric
from storyeval.metrics.chrf import ChrfMetric
from storyeval.metrics.evaluate_module import EvaluateMetric, load_evaluate_module
from storyeval.metrics.rouge import MODULE_PATH as ROUGE_PATH
from storyeval.metrics.rouge import RougeMetric

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
sacrebleu = pytest.importorskip("sacrebleu")

HYPS = [
    "The cat sat on the mat and looked at the door.",
    "A storm hit the village; nobody slept that night!",
    "He ran, he ran, he ran until the running stopped.",
    "Running cats were seen near the old mill.",
]
REFS = [
    "A cat was sitting on the mat, looking at the open door.",
    "Nobody in the village slept the night the storm came.",
    "He kept running until he could not run any more.",
    "The cat runs near the mill every morning.",
]


@pytest.fixture(scope="module")
def real_pairs():
    """24 real HANNA pairs (LLM story, human reference), 4 from each LLM system."""
    df = hanna_stories(include="llm")
    return df.groupby("system", sort=False).head(4).reset_index(drop=True)


def _rouge_direct(hyps, refs, stemmer=False):
    # source: rouge_score.rouge_scorer.RougeScorer.score(target, prediction) called directly
    sc = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stemmer)
    rows = []
    for h, r in zip(hyps, refs):
        s = sc.score(r, h)
        rows.append([getattr(s[t], k) for t in ("rouge1", "rouge2", "rougeL")
                     for k in ("recall", "precision", "fmeasure")])
    return np.array(rows)


@pytest.mark.parametrize("stemmer", [False, True])
def test_rouge_equals_rouge_score(stemmer):
    m = RougeMetric(use_stemmer=stemmer)
    got = m.score_batch(HYPS, REFS, [None] * 4, m.measures())
    np.testing.assert_allclose(got, _rouge_direct(HYPS, REFS, stemmer), rtol=0, atol=1e-12)


def test_rouge_equals_rouge_score_on_hanna_stories(real_pairs):
    m = RougeMetric()
    got = m.score_batch(real_pairs["story"].tolist(), real_pairs["reference"].tolist(),
                        [None] * len(real_pairs), m.measures())
    want = _rouge_direct(real_pairs["story"], real_pairs["reference"])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_bit_parallel_lcs_equals_dynamic_programme():
    # source: rouge_score.rouge_scorer._lcs_table (the O(n m) table), last cell = LCS length
    import importlib

    mod = load_evaluate_module(ROUGE_PATH)  # the module as evaluate loaded it
    lcs = importlib.import_module(type(mod).__module__).lcs_length
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = rng.integers(0, 5, rng.integers(0, 30)).tolist()
        b = rng.integers(0, 5, rng.integers(0, 30)).tolist()
        table = rouge_scorer._lcs_table(a, b)
        assert lcs(a, b) == table[-1][-1]


def test_rouge_names_and_taxonomy():
    names = [m.name for m in RougeMetric(rouge_types=("rouge1", "rougeL")).measures()]
    assert names == ["ROUGE-1 Recall", "ROUGE-1 Precision", "ROUGE-1 F1", "ROUGE-L Recall",
                     "ROUGE-L Precision", "ROUGE-L F1"]
    assert RougeMetric(use_stemmer=True).measures()[0].name == "ROUGE-1 Recall (stemmed)"
    m = RougeMetric().measures()[0]
    assert (m.reference, m.family, m.needs) == ("reference-based", "lexical", ("reference",))
    with pytest.raises(InputError, match="rouge_types"):
        RougeMetric(rouge_types=("rougeZ",))


def test_bleu_equals_sacrebleu(real_pairs):
    hyps = HYPS + real_pairs["story"].tolist()
    refs = REFS + real_pairs["reference"].tolist()
    m = BleuMetric()
    got = m.score_batch(hyps, refs, [None] * len(hyps), m.measures())[:, 0]
    # source: sacrebleu.sentence_bleu(hyp, [ref]).score (exp smoothing, effective order)
    want = [sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(hyps, refs)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    m2 = BleuMetric(smooth_method="floor", lowercase=True)
    got2 = m2.score_batch(HYPS, REFS, [None] * 4, m2.measures())[:, 0]
    want2 = [sacrebleu.sentence_bleu(h, [r], smooth_method="floor", lowercase=True).score
             for h, r in zip(HYPS, REFS)]
    np.testing.assert_allclose(got2, want2, rtol=0, atol=1e-12)
    assert m2.measures()[0].name == "BLEU (smooth=floor, lowercase)"


@pytest.mark.parametrize("word_order", [0, 2])
def test_chrf_equals_sacrebleu(real_pairs, word_order):
    hyps = HYPS + real_pairs["story"].tolist()[:8]
    refs = REFS + real_pairs["reference"].tolist()[:8]
    m = ChrfMetric(word_order=word_order)
    got = m.score_batch(hyps, refs, [None] * len(hyps), m.measures())[:, 0]
    # source: sacrebleu.sentence_chrf(hyp, [ref], word_order=...).score
    want = [sacrebleu.sentence_chrf(h, [r], word_order=word_order).score
            for h, r in zip(hyps, refs)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert m.measures()[0].name == ("chrF" if word_order == 0 else "chrF++")


def test_rows_without_reference_are_nan():
    m = BleuMetric()
    got = m.score_batch(HYPS[:2], [REFS[0], None], [None, None], m.measures())
    assert not math.isnan(got[0, 0]) and math.isnan(got[1, 0])


def test_any_evaluate_module_by_local_path(tmp_path):
    # the packaged rouge module through the generic wrapper: same numbers as rouge_score
    m = get_metric(f"evaluate:{ROUGE_PATH}", compute_kwargs={"rouge_types": ["rouge1"]})
    names = [x.name for x in m.measures()]
    assert names[0].startswith("rouge rouge1_precision")
    got = m.score_batch(HYPS, REFS, [None] * 4, m.measures())
    want = _rouge_direct(HYPS, REFS)[:, [1, 0, 2]]  # precision, recall, fmeasure order
    np.testing.assert_allclose(got, want, atol=1e-12)


CORPUS_MODULE = '''
import datasets
import evaluate


class Wordcount(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(description="mean word count", citation="", inputs_description="",
            features=datasets.Features({"predictions": datasets.Value("string")}))

    def _compute(self, predictions):
        return {"mean_words": sum(len(p.split()) for p in predictions) / len(predictions)}
'''


def test_corpus_level_evaluate_module_is_called_per_story(tmp_path):
    folder = tmp_path / "wordcount"
    folder.mkdir()
    (folder / "wordcount.py").write_text(CORPUS_MODULE)
    m = EvaluateMetric(str(folder), reference="reference-free")
    assert [x.name for x in m.measures()] == ["wordcount mean_words"]
    assert m.measures()[0].needs == ()
    df = pd.DataFrame({"story_id": ["a", "b"], "story": ["one two three", "four five"]})
    out = score(df, [m], show_progress=False)
    assert out["value"].tolist() == [3.0, 2.0]


def test_unloadable_evaluate_module_error_is_clear():
    with pytest.raises(InputError, match="could not load the evaluate module 'no-such-metric-x'"):
        get_metric("evaluate:no-such-metric-x").measures()
