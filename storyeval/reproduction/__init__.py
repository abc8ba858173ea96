"""Analyses that belong to the HANNA paper itself rather than to a general tool.

Holds: the paper's user study on LLM explanations (`user_study`: error rate and Gwet's AC1 per
error category), read through ``storyeval.data.load_user_study``.

May import: ``storyeval.exceptions``, ``storyeval.data``, ``storyeval.agreement``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyeval.reproduction.user_study import (
        USER_STUDY_CATEGORIES,
        ErrorCategory,
        user_study_labels,
        user_study_table,
    )

_LAZY = {
    "USER_STUDY_CATEGORIES": "user_study",
    "ErrorCategory": "user_study",
    "user_study_labels": "user_study",
    "user_study_table": "user_study",
}

__all__ = [
    "USER_STUDY_CATEGORIES",
    "ErrorCategory",
    "user_study_labels",
    "user_study_table",
]


def __getattr__(name: str) -> Any:
    # lazy: importing one module of the package does not import the others
    if name in _LAZY:
        return getattr(importlib.import_module(f"storyeval.reproduction.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'storyeval.reproduction' has no attribute {name!r}")
