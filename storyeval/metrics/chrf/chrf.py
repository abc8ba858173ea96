"""Sentence-level chrF / chrF++ with one score per prediction: a Hugging Face ``evaluate``
metric module computed with ``sacrebleu``'s ``CHRF.sentence_score``; storyeval loads it from
this folder."""

import datasets
import evaluate

_DESCRIPTION = """chrF (Popovic, 2015): character n-gram F-score (beta = 2 weights recall twice
as much as precision); chrF++ adds word n-grams (word_order = 2). One value per prediction."""

_CITATION = """@inproceedings{popovic-2015-chrf, title = "chr{F}: character n-gram {F}-score for
automatic {MT} evaluation", author = "Popovi{\\'c}, Maja", booktitle = "Proceedings of WMT",
year = "2015", pages = "392--395"}"""

_KWARGS = """
Args:
    predictions: list of str. references: list of str, one per prediction.
    char_order: int (default 6). word_order: int (default 0; 2 gives chrF++).
    beta: int (default 2). lowercase: bool (default False). whitespace: bool (default False).
Returns:
    dict "chrf" -> list of float (0-100), one per prediction.
"""


def sentence_scores(metric, predictions, references):
    """``metric.sentence_score(p, [r]).score`` for each pair, preparing each distinct reference
    once (sacrebleu's own statistics functions; the numbers are identical)."""
    cache, out = {}, []
    for pred, ref in zip(predictions, references):
        if ref not in cache:
            cache[ref] = metric._cache_references([[ref]])[0]
        stats = metric._compute_segment_statistics(metric._preprocess_segment(pred), cache[ref])
        out.append(metric._compute_score_from_stats(stats).score)
    return out


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Chrf(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation=_CITATION, inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://github.com/mjpost/sacrebleu"],
        )

    def _compute(self, predictions, references, char_order=6, word_order=0, beta=2,
                 lowercase=False, whitespace=False):
        from sacrebleu.metrics import CHRF

        chrf = CHRF(char_order=char_order, word_order=word_order, beta=beta,
                    lowercase=lowercase, whitespace=whitespace)
        return {"chrf": sentence_scores(chrf, predictions, references)}
