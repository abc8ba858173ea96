"""ROUGE-1/2/L recall, precision and F1 per story (metric card: ``README.md`` here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from storyeval.exceptions import InputError
from storyeval.metrics.base import Measure, Metric, reference_rows
from storyeval.metrics.evaluate_module import load_evaluate_module

__all__ = ["MODULE_PATH", "RougeMetric"]

#: The ``evaluate`` module folder shipped with storyeval (``evaluate.load(MODULE_PATH)``).
MODULE_PATH = str(Path(__file__).resolve().parent)
_TYPES = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rouge3": "ROUGE-3", "rouge4": "ROUGE-4",
          "rougeL": "ROUGE-L"}
_PARTS = (("recall", "Recall"), ("precision", "Precision"), ("fmeasure", "F1"))


@dataclass
class RougeMetric(Metric):
    """ROUGE (Lin, 2004) of each story against its reference, via the packaged ``evaluate`` module.

    Parameters
    ----------
    rouge_types : tuple of str
        Any of ``rouge1`` .. ``rouge4`` and ``rougeL`` (default ROUGE-1, ROUGE-2, ROUGE-L).
    use_stemmer : bool
        Porter stemming in ``rouge_score``'s tokeniser (default False; names get "(stemmed)").

    Notes
    -----
    With clipped n-gram counts c(g), ROUGE-N recall = sum_g min(c_story(g), c_ref(g)) /
    sum_g c_ref(g), precision divides by the story's n-gram count, F1 = 2PR / (P + R).
    ROUGE-L uses the longest common subsequence length in place of the overlap.

    References
    ----------
    1. Lin, C.-Y. (2004). ROUGE: A package for automatic evaluation of summaries.

    Validated against ``rouge_score.rouge_scorer.RougeScorer.score`` called directly
    (``tests/test_metrics_lexical.py``).

    Examples
    --------
    >>> m = RougeMetric(rouge_types=("rouge1",))
    >>> [x.name for x in m.measures()]
    ['ROUGE-1 Recall', 'ROUGE-1 Precision', 'ROUGE-1 F1']
    """

    rouge_types: tuple[str, ...] = ("rouge1", "rouge2", "rougeL")
    use_stemmer: bool = False

    def __post_init__(self) -> None:
        self.name = "rouge"
        self.rouge_types = tuple(self.rouge_types)
        bad = [t for t in self.rouge_types if t not in _TYPES]
        if bad or not self.rouge_types:
            raise InputError(f"rouge_types: unknown {bad}; choose from {list(_TYPES)}")

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        suffix = " (stemmed)" if self.use_stemmer else ""
        return [Measure(f"{_TYPES[t]} {label}{suffix}", f"{_TYPES[t]} {label}", "reference-based",
                        "lexical", ("reference",))
                for t in self.rouge_types for _, label in _PARTS]

    def config(self) -> dict:
        return {"rouge_types": list(self.rouge_types), "use_stemmer": self.use_stemmer,
                "module": "storyeval/rouge v1"}

    def score_batch(self, stories, references, prompts, measures) -> np.ndarray:
        out, rows, preds, refs = reference_rows(stories, references, len(measures))
        if not rows:
            return out
        res = load_evaluate_module(MODULE_PATH).compute(
            predictions=preds, references=refs,
            rouge_types=list(self.rouge_types), use_stemmer=self.use_stemmer)
        keys = [f"{t}_{k}" for t in self.rouge_types for k, _ in _PARTS]
        by_name = {m.name: k for m, k in zip(self.measures(), keys)}
        for j, m in enumerate(measures):
            out[rows, j] = res[by_name[m.name]]
        return out
