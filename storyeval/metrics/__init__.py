"""Metric wrappers: score stories with ROUGE, BLEU, chrF, BERTScore, BARTScore, surface measures.

Every metric implements [`Metric`][] (name, configuration, taxonomy, a batch scorer that returns
named sub-scores) and is registered under a name that ``storyeval score --metrics`` accepts
(families ``lexical``, ``embedding``, ``model-based``, ``fast``, ``all`` expand to names).
[`score`][] turns a table of stories into the tidy score table (``docs/design.md``) that
``storyeval meta`` consumes. Heavy dependencies (torch, transformers, evaluate, bert-score) are
imported only when a metric that needs them scores something.

Examples
--------
>>> from storyeval.metrics import score, hanna_stories
>>> table = score(hanna_stories(include="human").head(3), "surface",
...               show_progress=False)  # doctest: +SKIP
"""

from storyeval.metrics.base import Measure, Metric
from storyeval.metrics.cache import ScoreCache, text_key
from storyeval.metrics.registry import (
    FAMILIES,
    available_metrics,
    get_metric,
    register,
    resolve_metrics,
)
from storyeval.metrics.scoring import (
    INPUT_COLUMNS,
    SCORE_COLUMNS,
    hanna_stories,
    measure_catalogue,
    score,
    validate_stories,
)

__all__ = [
    "FAMILIES",
    "INPUT_COLUMNS",
    "SCORE_COLUMNS",
    "Measure",
    "Metric",
    "ScoreCache",
    "available_metrics",
    "get_metric",
    "hanna_stories",
    "measure_catalogue",
    "register",
    "resolve_metrics",
    "score",
    "text_key",
    "validate_stories",
]
