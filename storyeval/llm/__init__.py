"""LLM raters: Eval-Prompts x criteria x tries, robust rating extraction, a crash-safe cache,
OpenAI-compatible / transformers / vLLM backends (``storyeval rate``).

Heavy dependencies (httpx, torch, transformers, vllm) are imported only when a backend runs.
See ``docs/llm.md``.
"""

from __future__ import annotations

from storyeval.llm.backends import (
                                    Answer,
                                    Backend,
                                    BackendError,
                                    HFBackend,
                                    OpenAIBackend,
                                    Request,
                                    SamplingParams,
                                    VLLMBackend,
    make_backend,
)
from storyeval.llm.cache import AnswerCache, request_key
from storyeval.llm.extract import (
    PARSER_VERSION,
    PARSERS,
    ParsedRating,
    parse_many,
    parse_rating,
    parser_id,
)
from storyeval.llm.outputs import (
    failure_rates,
    judge_systems,
    llm_catalogue,
    self_consistency,
    to_scores,
)
from storyeval.llm.prompts import load_criteria, load_guidelines, load_templates, render_messages
from storyeval.llm.runner import RATING_COLUMNS, RatingPlan, RatingRun, plan, rate
from storyeval.llm.stories import load_stories

__all__ = [
    "PARSERS",
    "PARSER_VERSION",
    "RATING_COLUMNS",
    "Answer",
    "AnswerCache",
    "Backend",
    "BackendError",
    "HFBackend",
    "OpenAIBackend",
    "ParsedRating",
    "RatingPlan",
    "RatingRun",
    "Request",
    "SamplingParams",
    "VLLMBackend",
    "failure_rates",
    "judge_systems",
    "llm_catalogue",
    "load_criteria",
    "load_guidelines",
    "load_stories",
    "load_templates",
    "make_backend",
    "parse_many",
    "parse_rating",
    "parser_id",
    "plan",
    "rate",
    "render_messages",
    "request_key",
    "self_consistency",
    "to_scores",
]
