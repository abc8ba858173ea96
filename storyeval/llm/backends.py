"""Generation backends: an OpenAI-compatible HTTP client, local Hugging Face transformers, and
the vLLM offline engine.

Every backend takes a list of `Request` and calls ``on_answer(request, answer)`` as soon as
each answer is available (the runner persists it there), and ``on_failure(request, message)``
for a request that could not be answered after the retries. Heavy libraries (httpx, torch,
transformers, vllm) are imported when a backend runs, never at ``import storyeval``.
"""

from __future__ import annotations

from typing import Any

from storyeval.exceptions import InputError
from storyeval.llm._http import (  # noqa: F401 (the HTTP client; make_ssl_context re-exported)
    _ConnectionPool,
    _HttpxSender,
    _proxy_for,
    _Reply,
    _TransportFailure,
    _uses_proxy,
    make_ssl_context,
)
from storyeval.llm.backend_base import Backend, BackendError
from storyeval.llm.exchange import (  # noqa: F401 (re-exported: their home before 0.2)
    Answer,
    OnAnswer,
    OnFailure,
    Request,
    SamplingParams,
    pending_requests,
)
from storyeval.llm.local_backends import HFBackend, VLLMBackend
from storyeval.llm.openai_backend import (  # noqa: F401 (re-exported)
    OpenAIBackend,
    _retry_after_seconds,
    check_api_key_env,
    model_matches,
)
from storyeval.llm.redact import _ChainedRedactor, _clip, _query_values, _Redactor  # noqa: F401

__all__ = [
    "Answer",
    "Backend",
    "BackendError",
    "HFBackend",
    "OpenAIBackend",
    "Request",
    "SamplingParams",
    "VLLMBackend",
    "check_api_key_env",
    "make_backend",
    "make_ssl_context",
]


def make_backend(kind: str, model: str, **options: Any) -> Backend:
    """Build a backend by name: ``"openai"``, ``"hf"`` or ``"vllm"``."""
    classes = {"openai": OpenAIBackend, "hf": HFBackend, "vllm": VLLMBackend}
    if kind not in classes:
        raise InputError(f"backend must be one of {sorted(classes)}, got {kind!r}")
    return classes[kind](model, **options)
