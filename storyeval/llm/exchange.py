"""What a backend is asked and what it answers: sampling parameters, one request, one answer,
and the callbacks through which a backend delivers them (every backend and the batch files
share these)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from storyeval.exceptions import InputError

__all__ = ["Answer", "OnAnswer", "OnFailure", "Request", "SamplingParams", "pending_requests"]

OnAnswer = Callable[["Request", "Answer"], None]
OnFailure = Callable[["Request", str], None]


@dataclass(frozen=True)
class SamplingParams:
    """Sampling parameters, recorded with every answer and part of its cache key.

    Parameters
    ----------
    temperature : float, default 0.7
    top_p : float, default 1.0
    max_tokens : int, default 256
        Maximum number of generated tokens.
    seed : int or None, default 0
        Base seed; try ``t`` uses ``seed + t`` (distinct seeds per try). Sent to servers that
        support it (OpenAI, vLLM, llama.cpp, Ollama); used to seed local generation. None sends
        no seed.
    """

    temperature: float = 0.7
    top_p: float = 1.0
    max_tokens: int = 256
    seed: int | None = 0

    def __post_init__(self) -> None:
        if not (self.temperature >= 0):
            raise InputError(f"temperature must be >= 0, got {self.temperature}")
        if not (0 < self.top_p <= 1):
            raise InputError(f"top_p must be in (0, 1], got {self.top_p}")
        if int(self.max_tokens) != self.max_tokens or self.max_tokens < 1:
            raise InputError(f"max_tokens must be a positive integer, got {self.max_tokens}")

    def for_key(self) -> dict[str, Any]:
        """The parameters that shape an answer (the seed enters the key separately)."""
        return {"temperature": float(self.temperature), "top_p": float(self.top_p),
                "max_tokens": int(self.max_tokens)}

    def try_seed(self, try_index: int) -> int | None:
        """The seed of try ``try_index``."""
        return None if self.seed is None else int(self.seed) + int(try_index)


@dataclass(frozen=True)
class Request:
    """One generation request."""

    key: str
    messages: tuple[dict[str, str], ...]
    sampling: SamplingParams
    seed: int | None
    try_index: int


def pending_requests(items: Any, messages: Sequence[Any], sampling: SamplingParams,
                     done: Collection[str]) -> list[Request]:
    """The requests still to send: one per row of ``items`` (a frame with columns ``key``,
    ``cell``, ``seed``, ``try``, one row per cache key) whose key is not in ``done``;
    ``messages[cell]`` is the conversation to send."""
    return [Request(key=k, messages=messages[c], sampling=sampling, seed=s, try_index=t)
            for k, c, s, t in zip(items["key"].tolist(), items["cell"].tolist(),
                                  items["seed"].tolist(), items["try"].tolist())
            if k not in done]


@dataclass
class Answer:
    """One generated answer with its bookkeeping."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    attempts: int = 1
    #: The server's ``id`` and ``model`` fields (OpenAI-compatible servers; checked, not stored)
    response_id: str | None = None
    served_model: str | None = None
