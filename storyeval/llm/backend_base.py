"""The interface every generation backend implements (`Backend`) and its error.

Every backend takes a list of `Request` and calls ``on_answer(request, answer)`` as soon as
each answer is available (the runner persists it there), and ``on_failure(request, message)``
for a request that could not be answered after the retries.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any

from storyeval.exceptions import InputError, StoryevalError
from storyeval.llm.exchange import Answer, OnAnswer, OnFailure, Request

__all__ = ["Backend", "BackendError"]


class BackendError(StoryevalError):
    """A backend cannot go on (authentication refused, model missing, server unreachable)."""


class Backend(abc.ABC):
    """Base class: ``kind`` and ``model`` enter the cache key; `run` generates."""

    kind: str = "base"

    def __init__(self, model: str) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InputError("model must be a non-empty string")
        self.model = model

    def describe(self) -> dict[str, Any]:
        """Settings worth recording (never a secret)."""
        return {"backend": self.kind, "model": self.model}

    @abc.abstractmethod
    def run(self, requests: Sequence[Request], on_answer: OnAnswer, on_failure: OnFailure, *,
            show_progress: bool | None = None) -> None:
        """Generate an answer for every request, calling the callbacks as they complete."""

    @staticmethod
    def _deliver(req: Request, ans: Answer, on_answer: OnAnswer, on_failure: OnFailure) -> None:
        """Hand an answer to the runner; an empty (or blank) answer is a failure of that request,
        not an answer: it is not stored, so the next run asks again."""
        if ans.text.strip():
            on_answer(req, ans)
        else:
            on_failure(req, f"empty answer (finish_reason {ans.finish_reason!r}); not stored, "
                            "a rerun asks again")
