"""Sentence-level BLEU with one score per prediction: a Hugging Face ``evaluate`` metric module.

Computed with ``sacrebleu``'s ``BLEU.sentence_score`` (effective n-gram order and the chosen
smoothing, as ``sacrebleu.sentence_bleu``); storyeval loads it from this folder.
"""

import datasets
import evaluate

_DESCRIPTION = """BLEU (Papineni et al., 2002) computed per prediction against its reference
with sacrebleu (13a tokenisation, exponential smoothing by default, effective order)."""

_CITATION = """@inproceedings{papineni-etal-2002-bleu, title = "{B}leu: a Method for Automatic
Evaluation of Machine Translation", author = "Papineni, Kishore and Roukos, Salim and Ward, Todd
and Zhu, Wei-Jing", booktitle = "Proceedings of ACL", year = "2002", pages = "311--318"}
@inproceedings{post-2018-call, title = "A Call for Clarity in Reporting {BLEU} Scores",
author = "Post, Matt", booktitle = "Proceedings of WMT", year = "2018", pages = "186--191"}"""

_KWARGS = """
Args:
    predictions: list of str. references: list of str, one per prediction.
    smooth_method: "exp" (default), "floor", "add-k" or "none".
    smooth_value: float or None. tokenize: sacrebleu tokeniser name (default "13a").
    lowercase: bool (default False).
Returns:
    dict "bleu" -> list of float (0-100), one per prediction.
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
class Bleu(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION, citation=_CITATION, inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://github.com/mjpost/sacrebleu"],
        )

    def _compute(self, predictions, references, smooth_method="exp", smooth_value=None,
                 tokenize="13a", lowercase=False):
        from sacrebleu.metrics import BLEU

        bleu = BLEU(smooth_method=smooth_method, smooth_value=smooth_value, tokenize=tokenize,
                    lowercase=lowercase, effective_order=True)
        return {"bleu": sentence_scores(bleu, predictions, references)}
