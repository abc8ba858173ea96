"""Sentence-level chrF / chrF++ per story (metric card: ``README.md`` here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from storyeval.exceptions import InputError
from storyeval.metrics.base import Measure, Metric, reference_rows
from storyeval.metrics.evaluate_module import load_evaluate_module

__all__ = ["MODULE_PATH", "ChrfMetric"]

MODULE_PATH = str(Path(__file__).resolve().parent)


@dataclass
class ChrfMetric(Metric):
    """Character n-gram F-score (sacrebleu ``CHRF``) of each story against its reference, 0-100.

    Parameters
    ----------
    char_order : int
        Maximum character n-gram order (default 6).
    word_order : int
        Maximum word n-gram order (default 0; 2 gives chrF++).
    beta : int
        Recall weight (default 2).

    Notes
    -----
    chrF_beta = (1 + beta^2) chrP chrR / (beta^2 chrP + chrR), with chrP / chrR the character
    n-gram precision / recall averaged over orders 1..char_order.

    References
    ----------
    1. Popović, M. (2015). chrF: character n-gram F-score for automatic MT evaluation. WMT.

    Validated against ``sacrebleu.sentence_chrf`` called directly (``tests/test_metrics_lexical.py``).

    Examples
    --------
    >>> ChrfMetric(word_order=2).measures()[0].name
    'chrF++'
    """

    char_order: int = 6
    word_order: int = 0
    beta: int = 2

    def __post_init__(self) -> None:
        self.name = "chrf"
        for arg in ("char_order", "word_order", "beta"):
            if int(getattr(self, arg)) < (1 if arg != "word_order" else 0):
                raise InputError(f"{arg}: must be a positive integer, got {getattr(self, arg)!r}")

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        name = "chrF++" if self.word_order == 2 else "chrF"
        opts = []
        if self.char_order != 6:
            opts.append(f"char_order={self.char_order}")
        if self.word_order not in (0, 2):
            opts.append(f"word_order={self.word_order}")
        if self.beta != 2:
            opts.append(f"beta={self.beta}")
        full = name + (f" ({', '.join(opts)})" if opts else "")
        return [Measure(full, name, "reference-based", "lexical", ("reference",))]

    def config(self) -> dict:
        return {"char_order": self.char_order, "word_order": self.word_order, "beta": self.beta,
                "module": "storyeval/chrf v1"}

    def score_batch(self, stories, references, prompts, measures) -> np.ndarray:
        out, rows, preds, refs = reference_rows(stories, references, len(measures))
        if rows:
            res = load_evaluate_module(MODULE_PATH).compute(
                predictions=preds, references=refs,
                char_order=self.char_order, word_order=self.word_order, beta=self.beta)
            out[rows, 0] = res["chrf"]
        return out
