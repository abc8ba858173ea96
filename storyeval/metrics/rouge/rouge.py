"""ROUGE-N and ROUGE-L with one score per prediction: a Hugging Face ``evaluate`` metric module.

storyeval loads this file from its own folder (``evaluate.load(<this folder>)``) because hub
names cannot be reached offline. It uses Google's ``rouge_score`` package for tokenisation
(each distinct text once) and its F-measure, counts clipped n-gram overlaps with ``Counter``, and
computes ROUGE-L's longest common subsequence with a bit-parallel algorithm (Hyyrö 2004) that
returns exactly the same LCS length as ``rouge_score``'s dynamic programme in O(n * m / w)
instead of O(n * m) Python steps. The numbers equal ``rouge_scorer.RougeScorer.score``
(checked in storyeval's tests); it is about ten times faster on 500-word stories.
"""

import datasets
import evaluate

_DESCRIPTION = """ROUGE (Lin, 2004): n-gram (ROUGE-N) and longest-common-subsequence (ROUGE-L)
overlap between a prediction and a reference, as recall, precision and F-measure, one value
per prediction (no aggregation, no bootstrap)."""

_CITATION = """@inproceedings{lin-2004-rouge,
  title = "{ROUGE}: A Package for Automatic Evaluation of Summaries",
  author = "Lin, Chin-Yew", booktitle = "Text Summarization Branches Out", year = "2004",
  pages = "74--81"}"""

_KWARGS = """
Args:
    predictions: list of str, the texts to score.
    references: list of str, one reference per prediction.
    rouge_types: list of "rouge1".."rouge9" and "rougeL" (default rouge1, rouge2, rougeL).
    use_stemmer: bool, Porter-stem tokens (default False).
Returns:
    dict "<type>_<precision|recall|fmeasure>" -> list of float, one per prediction.
"""


def lcs_length(a, b):
    """Length of the longest common subsequence of token lists ``a`` and ``b`` (bit-parallel)."""
    if not a or not b:
        return 0
    if len(a) < len(b):
        a, b = b, a  # bit vector over the longer sequence, loop over the shorter
    masks = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        u = v & masks.get(tok, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def _prf(overlap, n_pred, n_ref, scoring):
    precision = overlap / n_pred if n_pred else 0.0
    recall = overlap / n_ref if n_ref else 0.0
    return scoring.Score(precision=precision, recall=recall,
                         fmeasure=scoring.fmeasure(precision, recall))


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS)
class Rouge(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            reference_urls=["https://github.com/google-research/google-research/tree/master/rouge"],
        )

    def _compute(self, predictions, references, rouge_types=None, use_stemmer=False):
        from collections import Counter

        from rouge_score import scoring, tokenizers

        rouge_types = list(rouge_types or ["rouge1", "rouge2", "rougeL"])
        orders = {t: int(t[5:]) for t in rouge_types if t != "rougeL"}
        if any(t != "rougeL" and not t[5:].isdigit() for t in rouge_types):
            raise ValueError(f"rouge_types: unsupported {rouge_types}")
        tokenizer = tokenizers.DefaultTokenizer(use_stemmer=use_stemmer)
        cache = {}

        def toks(text):  # each distinct text is tokenised once (references repeat in HANNA)
            if text not in cache:
                cache[text] = tokenizer.tokenize(text)
            return cache[text]

        out = {f"{t}_{k}": [] for t in rouge_types for k in ("precision", "recall", "fmeasure")}
        for pred, ref in zip(predictions, references):
            p_toks, r_toks = toks(pred), toks(ref)
            for t in rouge_types:
                if t == "rougeL":
                    score = _prf(lcs_length(r_toks, p_toks), len(p_toks), len(r_toks), scoring)
                else:
                    n = orders[t]
                    pc = Counter(zip(*(p_toks[k:] for k in range(n))))
                    rc = Counter(zip(*(r_toks[k:] for k in range(n))))
                    overlap = sum(min(c, rc[g]) for g, c in pc.items() if g in rc)
                    score = _prf(overlap, sum(pc.values()), sum(rc.values()), scoring)
                out[f"{t}_precision"].append(score.precision)
                out[f"{t}_recall"].append(score.recall)
                out[f"{t}_fmeasure"].append(score.fmeasure)
        return out
