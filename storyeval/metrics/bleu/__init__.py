"""Sentence-level BLEU per story (metric card: ``README.md`` here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from storyeval.exceptions import InputError
from storyeval.metrics.base import Measure, Metric, reference_rows
from storyeval.metrics.evaluate_module import load_evaluate_module

__all__ = ["MODULE_PATH", "BleuMetric"]

MODULE_PATH = str(Path(__file__).resolve().parent)
_SMOOTH = ("exp", "floor", "add-k", "none")


@dataclass
class BleuMetric(Metric):
    """Sentence-level BLEU (sacrebleu) of each story against its reference, 0-100.

    Parameters
    ----------
    smooth_method : {"exp", "floor", "add-k", "none"}
        sacrebleu smoothing (default ``"exp"``, as ``sacrebleu.sentence_bleu``).
    tokenize : str
        sacrebleu tokeniser (default ``"13a"``).
    lowercase : bool
        Case-insensitive matching (default False).

    Notes
    -----
    BLEU = BP * exp(sum_{n=1}^{4} (1/4) log p_n), p_n the clipped n-gram precision,
    BP = min(1, exp(1 - r / c)) with r, c the reference and story lengths in tokens.

    References
    ----------
    1. Papineni, K., et al. (2002). BLEU: a method for automatic evaluation of machine
       translation. ACL.
    2. Post, M. (2018). A call for clarity in reporting BLEU scores. WMT.

    Validated against ``sacrebleu.sentence_bleu`` called directly (``tests/test_metrics_lexical.py``).

    Examples
    --------
    >>> BleuMetric().measures()[0].name
    'BLEU'
    """

    smooth_method: str = "exp"
    tokenize: str = "13a"
    lowercase: bool = False

    def __post_init__(self) -> None:
        self.name = "bleu"
        if self.smooth_method not in _SMOOTH:
            raise InputError(f"smooth_method: {self.smooth_method!r} not in {_SMOOTH}")

    def _suffix(self) -> str:
        opts = []
        if self.smooth_method != "exp":
            opts.append(f"smooth={self.smooth_method}")
        if self.tokenize != "13a":
            opts.append(f"tok={self.tokenize}")
        if self.lowercase:
            opts.append("lowercase")
        return f" ({', '.join(opts)})" if opts else ""

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        return [Measure("BLEU" + self._suffix(), "BLEU", "reference-based", "lexical",
                        ("reference",))]

    def config(self) -> dict:
        return {"smooth_method": self.smooth_method, "tokenize": self.tokenize,
                "lowercase": self.lowercase, "module": "storyeval/bleu v1"}

    def score_batch(self, stories, references, prompts, measures) -> np.ndarray:
        out, rows, preds, refs = reference_rows(stories, references, len(measures))
        if rows:
            res = load_evaluate_module(MODULE_PATH).compute(
                predictions=preds, references=refs,
                smooth_method=self.smooth_method, tokenize=self.tokenize, lowercase=self.lowercase)
            out[rows, 0] = res["bleu"]
        return out
