"""The story key used across storyeval."""

from __future__ import annotations

import numpy as np

__all__ = ["make_story_id"]


def make_story_id(system: str, prompt_id: int | str) -> str:
    """The story key used across storyeval: ``"{system}/{prompt_id}"`` (e.g. ``"GPT-2/17"``)."""
    if isinstance(prompt_id, (int, np.integer)):
        prompt_id = int(prompt_id)
    return f"{system}/{prompt_id}"
